// Reads typed values from the front of a fuzz input; past the end every read
// returns zeros, so a harness never has to check lengths.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace smolinfer::fuzz {

class Input {
public:
    explicit Input(std::span<const uint8_t> data) : data_(data) {}

    size_t remaining() const { return data_.size() - pos_; }
    bool empty() const { return remaining() == 0; }

    template <typename T>
    T take() {
        T v{};
        const size_t n = std::min(sizeof(T), remaining());
        std::memcpy(&v, data_.data() + pos_, n);
        pos_ += n;
        return v;
    }

    // Up to n bytes as text.
    std::string_view take_text(size_t n) {
        n = std::min(n, remaining());
        std::string_view s(reinterpret_cast<const char*>(data_.data() + pos_), n);
        pos_ += n;
        return s;
    }

    // Text up to (not including) the next `sep` byte, which is consumed.
    std::string_view take_until(uint8_t sep) {
        size_t end = pos_;
        while (end < data_.size() && data_[end] != sep) ++end;
        std::string_view s(reinterpret_cast<const char*>(data_.data() + pos_), end - pos_);
        pos_ = end < data_.size() ? end + 1 : end;
        return s;
    }

    std::string_view rest() { return take_text(remaining()); }

private:
    std::span<const uint8_t> data_;
    size_t pos_ = 0;
};

}  // namespace smolinfer::fuzz
