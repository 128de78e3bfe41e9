#include "gguf/metadata_encoder.h"

#include <algorithm>
#include <variant>

#include "smolinfer/error.h"

namespace smolinfer::gguf {

using encode::put;
using encode::put_string;

namespace {

std::vector<uint8_t> tagged(ValueType t) {
    std::vector<uint8_t> v;
    put<uint32_t>(v, uint32_t(t));
    return v;
}

std::vector<uint8_t> array_head(ValueType elem, uint64_t count) {
    auto e = tagged(ValueType::Array);
    put<uint32_t>(e, uint32_t(elem));
    put<uint64_t>(e, count);
    return e;
}

void put_scalar(std::vector<uint8_t>& e, ValueType t, const Scalar& s, const std::string& key) {
    try {
        switch (t) {
            case ValueType::U8: put<uint8_t>(e, uint8_t(std::get<uint64_t>(s))); return;
            case ValueType::I8: put<int8_t>(e, int8_t(std::get<int64_t>(s))); return;
            case ValueType::U16: put<uint16_t>(e, uint16_t(std::get<uint64_t>(s))); return;
            case ValueType::I16: put<int16_t>(e, int16_t(std::get<int64_t>(s))); return;
            case ValueType::U32: put<uint32_t>(e, uint32_t(std::get<uint64_t>(s))); return;
            case ValueType::I32: put<int32_t>(e, int32_t(std::get<int64_t>(s))); return;
            case ValueType::U64: put<uint64_t>(e, std::get<uint64_t>(s)); return;
            case ValueType::I64: put<int64_t>(e, std::get<int64_t>(s)); return;
            case ValueType::F32: put<float>(e, float(std::get<double>(s))); return;  // widened exactly when read
            case ValueType::F64: put<double>(e, std::get<double>(s)); return;
            case ValueType::Bool: put<uint8_t>(e, std::get<bool>(s) ? 1 : 0); return;
            case ValueType::String: put_string(e, std::get<std::string_view>(s)); return;
            case ValueType::Array: break;
        }
    } catch (const std::bad_variant_access&) {
    }
    throw Error("GGUF writer: metadata " + quoted(key) + " holds a value that does not match its type " +
                std::string(value_type_name(t)));
}

template <typename T>
std::vector<uint8_t> scalar(ValueType t, T v) {
    auto e = tagged(t);
    put<T>(e, v);
    return e;
}

template <typename T>
std::vector<uint8_t> numbers(ValueType elem, const std::vector<T>& v) {
    auto e = array_head(elem, v.size());
    for (const T x : v) put<T>(e, x);
    return e;
}

}  // namespace

void MetadataEncoder::check_open(const std::string& key) const {
    if (frozen_) throw Error("GGUF writer: metadata " + quoted(key) + " changed after the header was written");
}

void MetadataEncoder::add_encoded(const std::string& key, std::vector<uint8_t> encoded) {
    check_open(key);
    if (has(key)) throw Error("GGUF writer: duplicate metadata key " + quoted(key));
    kvs_.push_back({key, std::move(encoded)});
}

bool MetadataEncoder::has(const std::string& key) const {
    return std::any_of(kvs_.begin(), kvs_.end(), [&](const Kv& kv) { return kv.key == key; });
}

bool MetadataEncoder::remove(const std::string& key) {
    check_open(key);
    const auto it = std::find_if(kvs_.begin(), kvs_.end(), [&](const Kv& kv) { return kv.key == key; });
    if (it == kvs_.end()) return false;
    kvs_.erase(it);
    return true;
}

void MetadataEncoder::add_u8(const std::string& key, uint8_t v) { add_encoded(key, scalar(ValueType::U8, v)); }
void MetadataEncoder::add_i8(const std::string& key, int8_t v) { add_encoded(key, scalar(ValueType::I8, v)); }
void MetadataEncoder::add_u16(const std::string& key, uint16_t v) { add_encoded(key, scalar(ValueType::U16, v)); }
void MetadataEncoder::add_i16(const std::string& key, int16_t v) { add_encoded(key, scalar(ValueType::I16, v)); }
void MetadataEncoder::add_u32(const std::string& key, uint32_t v) { add_encoded(key, scalar(ValueType::U32, v)); }
void MetadataEncoder::add_i32(const std::string& key, int32_t v) { add_encoded(key, scalar(ValueType::I32, v)); }
void MetadataEncoder::add_u64(const std::string& key, uint64_t v) { add_encoded(key, scalar(ValueType::U64, v)); }
void MetadataEncoder::add_i64(const std::string& key, int64_t v) { add_encoded(key, scalar(ValueType::I64, v)); }
void MetadataEncoder::add_f32(const std::string& key, float v) { add_encoded(key, scalar(ValueType::F32, v)); }
void MetadataEncoder::add_f64(const std::string& key, double v) { add_encoded(key, scalar(ValueType::F64, v)); }
void MetadataEncoder::add_bool(const std::string& key, bool v) {
    add_encoded(key, scalar<uint8_t>(ValueType::Bool, v ? 1 : 0));
}

void MetadataEncoder::add_string(const std::string& key, std::string_view v) {
    auto e = tagged(ValueType::String);
    put_string(e, v);
    add_encoded(key, std::move(e));
}

void MetadataEncoder::add_string_array(const std::string& key, const std::vector<std::string>& v) {
    auto e = array_head(ValueType::String, v.size());
    for (const auto& s : v) put_string(e, s);
    add_encoded(key, std::move(e));
}

void MetadataEncoder::add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    add_encoded(key, numbers(ValueType::I32, v));
}
void MetadataEncoder::add_u32_array(const std::string& key, const std::vector<uint32_t>& v) {
    add_encoded(key, numbers(ValueType::U32, v));
}
void MetadataEncoder::add_f32_array(const std::string& key, const std::vector<float>& v) {
    add_encoded(key, numbers(ValueType::F32, v));
}
void MetadataEncoder::add_bool_array(const std::string& key, const std::vector<bool>& v) {
    auto e = array_head(ValueType::Bool, v.size());
    for (const bool b : v) put<uint8_t>(e, b ? 1 : 0);
    add_encoded(key, std::move(e));
}

void MetadataEncoder::add_value(const std::string& key, const Value& v) {
    if (v.type != ValueType::Array) {
        auto e = tagged(v.type);
        put_scalar(e, v.type, v.scalar, key);
        add_encoded(key, std::move(e));
        return;
    }
    auto e = array_head(v.elem_type, v.count);
    if (v.elem_type == ValueType::String) {
        if (v.strings.size() != v.count) {
            throw Error("GGUF writer: array " + quoted(key) + " has " + std::to_string(v.strings.size()) +
                        " strings but claims " + std::to_string(v.count));
        }
        for (const std::string_view s : v.strings) put_string(e, s);
    } else {
        const size_t eb = fixed_value_bytes(v.elem_type);
        if (eb == 0 || v.raw.size() != v.count * eb) {
            throw Error("GGUF writer: array " + quoted(key) + " of " + std::string(value_type_name(v.elem_type)) +
                        " cannot be written (" + std::to_string(v.raw.size()) + " bytes for " +
                        std::to_string(v.count) + " elements)");
        }
        e.insert(e.end(), v.raw.begin(), v.raw.end());
    }
    add_encoded(key, std::move(e));
}

void MetadataEncoder::set_u32(const std::string& key, uint32_t v) {
    remove(key);
    add_u32(key, v);
}
void MetadataEncoder::set_u16(const std::string& key, uint16_t v) {
    remove(key);
    add_u16(key, v);
}
void MetadataEncoder::set_i32(const std::string& key, int32_t v) {
    remove(key);
    add_i32(key, v);
}

std::optional<uint64_t> MetadataEncoder::alignment() const {
    for (const Kv& kv : kvs_) {
        if (kv.key != "general.alignment") continue;
        uint32_t tag = 0, a = 0;
        if (kv.encoded.size() == 8) {
            std::memcpy(&tag, kv.encoded.data(), 4);
            std::memcpy(&a, kv.encoded.data() + 4, 4);
        }
        if (tag != uint32_t(ValueType::U32) || a == 0 || (a & (a - 1)) != 0) {
            throw Error("GGUF writer: general.alignment must be a uint32 power of two");
        }
        return a;
    }
    return std::nullopt;
}

uint64_t MetadataEncoder::encoded_bytes() const {
    uint64_t n = 0;
    for (const Kv& kv : kvs_) n += 8 + kv.key.size() + kv.encoded.size();
    return n;
}

void MetadataEncoder::append_to(std::vector<uint8_t>& out) const {
    for (const Kv& kv : kvs_) {
        put_string(out, kv.key);
        out.insert(out.end(), kv.encoded.begin(), kv.encoded.end());
    }
}

}  // namespace smolinfer::gguf
