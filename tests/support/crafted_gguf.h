// Byte-exact GGUF crafting for the malformed-input tests: every metadata
// value type, any magic/version/count, per-tensor offset overrides, and an
// editable copy of an existing file (drop a key, change a tensor's type...).
// Header-only; used by test_gguf_reader, test_model_errors, test_cli_errors.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "support/tiny_model.h"

namespace smolinfer::test::crafted {

using Bytes = std::vector<uint8_t>;

template <typename T>
inline void put(Bytes& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
}

inline void put_str(Bytes& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

// Overwrites sizeof(T) bytes at `at`.
template <typename T>
inline void patch(Bytes& b, size_t at, T v) {
    if (at + sizeof(T) > b.size()) throw std::logic_error("patch past the end");
    std::memcpy(b.data() + at, &v, sizeof(T));
}

// ---- Encoded metadata values: type tag followed by the value. ----

inline Bytes tag(gguf::ValueType t) {
    Bytes b;
    put<uint32_t>(b, uint32_t(t));
    return b;
}

template <typename T>
inline Bytes enc_scalar(gguf::ValueType t, T v) {
    Bytes b = tag(t);
    put<T>(b, v);
    return b;
}

inline Bytes enc_u8(uint8_t v) { return enc_scalar(gguf::ValueType::U8, v); }
inline Bytes enc_i8(int8_t v) { return enc_scalar(gguf::ValueType::I8, v); }
inline Bytes enc_u16(uint16_t v) { return enc_scalar(gguf::ValueType::U16, v); }
inline Bytes enc_i16(int16_t v) { return enc_scalar(gguf::ValueType::I16, v); }
inline Bytes enc_u32(uint32_t v) { return enc_scalar(gguf::ValueType::U32, v); }
inline Bytes enc_i32(int32_t v) { return enc_scalar(gguf::ValueType::I32, v); }
inline Bytes enc_f32(float v) { return enc_scalar(gguf::ValueType::F32, v); }
inline Bytes enc_bool(bool v) { return enc_scalar(gguf::ValueType::Bool, uint8_t(v ? 1 : 0)); }
inline Bytes enc_u64(uint64_t v) { return enc_scalar(gguf::ValueType::U64, v); }
inline Bytes enc_i64(int64_t v) { return enc_scalar(gguf::ValueType::I64, v); }
inline Bytes enc_f64(double v) { return enc_scalar(gguf::ValueType::F64, v); }

inline Bytes enc_string(const std::string& s) {
    Bytes b = tag(gguf::ValueType::String);
    put_str(b, s);
    return b;
}

// An array header with any element type and count, followed by `payload`.
inline Bytes enc_array_raw(gguf::ValueType elem, uint64_t count, const Bytes& payload = {}) {
    Bytes b = tag(gguf::ValueType::Array);
    put<uint32_t>(b, uint32_t(elem));
    put<uint64_t>(b, count);
    // Not b.insert(b.end(), ...): GCC 12 at -O3 reports that as a memcpy out
    // of bounds (-Warray-bounds, a false positive) once enough is inlined.
    const size_t at = b.size();
    b.resize(at + payload.size());
    if (!payload.empty()) std::memcpy(b.data() + at, payload.data(), payload.size());
    return b;
}

inline Bytes enc_string_array(const std::vector<std::string>& v) {
    Bytes payload;
    for (const auto& s : v) put_str(payload, s);
    return enc_array_raw(gguf::ValueType::String, v.size(), payload);
}

template <typename T>
inline Bytes enc_array(gguf::ValueType elem, const std::vector<T>& v) {
    Bytes payload;
    for (const T& x : v) put<T>(payload, x);
    return enc_array_raw(elem, v.size(), payload);
}

// ---- A whole file. ----

struct Kv {
    std::string key;
    Bytes encoded;  // type tag and value
};

struct Tensor {
    std::string name;
    uint32_t type_id = 0;
    std::vector<uint64_t> dims;
    Bytes data;
    std::optional<uint64_t> offset;  // data offset written in the info; default: where the data really is
};

struct Gguf {
    uint32_t magic = 0x46554747;  // "GGUF"
    uint32_t version = 3;
    uint64_t alignment = gguf::kDefaultAlignment;
    std::optional<uint64_t> n_tensors_override;
    std::optional<uint64_t> n_kv_override;
    std::vector<Kv> kvs;
    std::vector<Tensor> tensors;

    Gguf& kv(const std::string& key, Bytes encoded) {
        for (auto& e : kvs) {
            if (e.key == key) {
                e.encoded = std::move(encoded);
                return *this;
            }
        }
        kvs.push_back({key, std::move(encoded)});
        return *this;
    }
    // Appends even when the key exists (for duplicate-key tests).
    Gguf& append_kv(const std::string& key, Bytes encoded) {
        kvs.push_back({key, std::move(encoded)});
        return *this;
    }
    Gguf& remove_kv(const std::string& key) {
        const size_t before = kvs.size();
        std::erase_if(kvs, [&](const Kv& e) { return e.key == key; });
        if (kvs.size() == before) throw std::logic_error("no key " + key + " to remove");
        return *this;
    }
    Gguf& set_alignment(uint32_t a) {
        alignment = a;
        return kv("general.alignment", enc_u32(a));
    }
    Gguf& tensor(const std::string& name, uint32_t type_id, std::vector<uint64_t> dims, Bytes data) {
        tensors.push_back({name, type_id, std::move(dims), std::move(data), std::nullopt});
        return *this;
    }
    Tensor& find_tensor(const std::string& name) {
        for (auto& t : tensors) {
            if (t.name == name) return t;
        }
        throw std::logic_error("no tensor " + name);
    }
    Gguf& remove_tensor(const std::string& name) {
        const size_t before = tensors.size();
        std::erase_if(tensors, [&](const Tensor& t) { return t.name == name; });
        if (tensors.size() == before) throw std::logic_error("no tensor " + name + " to remove");
        return *this;
    }

    static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

    // Magic, counts, metadata and tensor infos, without the padding that
    // follows them.
    Bytes header() const {
        Bytes h;
        put<uint32_t>(h, magic);
        put<uint32_t>(h, version);
        put<uint64_t>(h, n_tensors_override.value_or(tensors.size()));
        put<uint64_t>(h, n_kv_override.value_or(kvs.size()));
        for (const Kv& e : kvs) {
            put_str(h, e.key);
            h.insert(h.end(), e.encoded.begin(), e.encoded.end());
        }
        uint64_t off = 0;
        for (const Tensor& t : tensors) {
            put_str(h, t.name);
            put<uint32_t>(h, uint32_t(t.dims.size()));
            for (const uint64_t d : t.dims) put<uint64_t>(h, d);
            put<uint32_t>(h, t.type_id);
            put<uint64_t>(h, t.offset.value_or(off));
            off = align_up(off + t.data.size(), alignment);
        }
        return h;
    }

    // The file; the last tensor's data is not padded, so the file ends
    // exactly where the last tensor does.
    Bytes bytes() const {
        Bytes out = header();
        if (tensors.empty()) return out;
        out.resize(align_up(out.size(), alignment), 0);
        for (size_t i = 0; i < tensors.size(); ++i) {
            const Tensor& t = tensors[i];
            out.insert(out.end(), t.data.begin(), t.data.end());
            if (i + 1 < tensors.size()) out.resize(out.size() + (align_up(t.data.size(), alignment) - t.data.size()), 0);
        }
        return out;
    }

    // An editable copy of a parsed file (every value type re-encoded).
    static Gguf from_file(const gguf::File& f) {
        Gguf g;
        g.version = f.version();
        g.alignment = f.alignment();
        const gguf::Metadata& md = f.metadata();
        for (const std::string& key : md.keys()) g.kvs.push_back({key, encode(*md.find(key))});
        for (const gguf::TensorInfo& t : f.tensors()) {
            std::vector<uint64_t> dims(t.ne.begin(), t.ne.begin() + t.n_dims);
            g.tensors.push_back({t.name, t.type_id, dims, Bytes(t.data, t.data + t.n_bytes), std::nullopt});
        }
        return g;
    }
    static Gguf from_bytes(const Bytes& b) { return from_file(gguf::File::parse(b)); }

    static void put_scalar(Bytes& out, gguf::ValueType t, const gguf::Scalar& s) {
        using VT = gguf::ValueType;
        auto u = [&] { return std::get<uint64_t>(s); };
        auto i = [&] { return std::get<int64_t>(s); };
        switch (t) {
            case VT::U8: put<uint8_t>(out, uint8_t(u())); break;
            case VT::I8: put<int8_t>(out, int8_t(i())); break;
            case VT::U16: put<uint16_t>(out, uint16_t(u())); break;
            case VT::I16: put<int16_t>(out, int16_t(i())); break;
            case VT::U32: put<uint32_t>(out, uint32_t(u())); break;
            case VT::I32: put<int32_t>(out, int32_t(i())); break;
            case VT::U64: put<uint64_t>(out, u()); break;
            case VT::I64: put<int64_t>(out, i()); break;
            case VT::F32: put<float>(out, float(std::get<double>(s))); break;
            case VT::F64: put<double>(out, std::get<double>(s)); break;
            case VT::Bool: put<uint8_t>(out, std::get<bool>(s) ? 1 : 0); break;
            case VT::String: put_str(out, std::string(std::get<std::string_view>(s))); break;
            case VT::Array: throw std::logic_error("nested array");
        }
    }

    static Bytes encode(const gguf::Value& v) {
        Bytes b = tag(v.type);
        if (v.type != gguf::ValueType::Array) {
            put_scalar(b, v.type, v.scalar);
            return b;
        }
        put<uint32_t>(b, uint32_t(v.elem_type));
        put<uint64_t>(b, v.count);
        for (uint64_t i = 0; i < v.count; ++i) put_scalar(b, v.elem_type, v.item(i));
        return b;
    }
};

// The tiny model (tiny_model.h) as an editable file.
inline Gguf tiny() {
    static const Bytes bytes = tiny_llama();
    return Gguf::from_bytes(bytes);
}

}  // namespace smolinfer::test::crafted
