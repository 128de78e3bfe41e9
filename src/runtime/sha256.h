// SHA-256 (FIPS 180-4), incremental. The browser build checks downloaded
// models with it without a second copy of the file in JavaScript.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace smolinfer::runtime {

class Sha256 {
public:
    Sha256();
    void update(std::span<const uint8_t> data);
    std::array<uint8_t, 32> finish();
    std::string finish_hex();

private:
    void block(const uint8_t* p);
    std::array<uint32_t, 8> h_;
    std::array<uint8_t, 64> buffer_{};
    size_t buffered_ = 0;
    uint64_t length_ = 0;
};

}  // namespace smolinfer::runtime
