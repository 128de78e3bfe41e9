// GGUF metadata as a file stores it, built key by key: each value is encoded
// once when added (type tag, then the value, little-endian), in insertion
// order. The one encoder behind both writers (gguf::Writer, in memory, and
// gguf::StreamWriter, for converters), so a key written by either is the
// same bytes; header_encoder.h lays the header out around it.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"

namespace smolinfer::gguf {

class MetadataEncoder {
public:
    // ---- scalars
    void add_u8(const std::string& key, uint8_t v);
    void add_i8(const std::string& key, int8_t v);
    void add_u16(const std::string& key, uint16_t v);
    void add_i16(const std::string& key, int16_t v);
    void add_u32(const std::string& key, uint32_t v);
    void add_i32(const std::string& key, int32_t v);
    void add_u64(const std::string& key, uint64_t v);
    void add_i64(const std::string& key, int64_t v);
    void add_f32(const std::string& key, float v);
    void add_f64(const std::string& key, double v);
    void add_bool(const std::string& key, bool v);
    void add_string(const std::string& key, std::string_view v);
    // ---- arrays
    void add_string_array(const std::string& key, const std::vector<std::string>& v);
    void add_i32_array(const std::string& key, const std::vector<int32_t>& v);
    void add_u32_array(const std::string& key, const std::vector<uint32_t>& v);
    void add_f32_array(const std::string& key, const std::vector<float>& v);
    void add_bool_array(const std::string& key, const std::vector<bool>& v);
    // A value as parsed from another file, re-encoded bit for bit.
    void add_value(const std::string& key, const Value& v);

    // Adding a key twice is an error; set_* replaces by removing the old
    // entry and appending the new one (as llama.cpp's gguf_set_val_* do).
    void set_u32(const std::string& key, uint32_t v);
    void set_u16(const std::string& key, uint16_t v);
    void set_i32(const std::string& key, int32_t v);
    bool remove(const std::string& key);
    bool has(const std::string& key) const;

    // "general.alignment" when present (a uint32 power of two, else an Error).
    std::optional<uint64_t> alignment() const;

    size_t count() const { return kvs_.size(); }
    // Bytes the entries take in a header (keys with their lengths, values).
    uint64_t encoded_bytes() const;
    // Appends every entry (key, type tag, value) in order.
    void append_to(std::vector<uint8_t>& out) const;

    // After freeze() (the header is out), adding or removing is an Error
    // saying so, naming the key.
    void freeze() { frozen_ = true; }

private:
    struct Kv {
        std::string key;
        std::vector<uint8_t> encoded;  // type tag and value
    };
    void add_encoded(const std::string& key, std::vector<uint8_t> encoded);
    void check_open(const std::string& key) const;

    std::vector<Kv> kvs_;
    bool frozen_ = false;
};

// Little-endian appenders shared by the encoders.
namespace encode {
template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
}
inline void put_string(std::vector<uint8_t>& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}
inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
}  // namespace encode

}  // namespace smolinfer::gguf
