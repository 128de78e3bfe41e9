#include "gguf/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "smolinfer/error.h"

namespace smolinfer::gguf {

static_assert(std::endian::native == std::endian::little, "GGUF is little-endian; so is every target we build");

namespace {

constexpr uint64_t kMaxStringBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxNameBytes = 1024;
// Counts from the file are checked against the bytes left, but reserving
// room for all of them before reading any would still take several times
// the file's size when they are false; reserve at most this many up front.
constexpr uint64_t kMaxReserve = uint64_t(1) << 16;

std::string hex_offset(uint64_t off) { return std::to_string(off); }

// Bounds-checked little-endian reader. Every failure names what was being
// read and where.
class Cursor {
public:
    explicit Cursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return bytes_.size() - pos_; }
    uint64_t size() const { return bytes_.size(); }

    void need(uint64_t n, const std::string& what) const {
        if (n > remaining()) {
            throw Error("truncated GGUF file: " + what + " needs " + std::to_string(n) + " bytes at offset " +
                        hex_offset(pos_) + " but the file ends at " + std::to_string(bytes_.size()));
        }
    }

    template <typename T>
    T read(const std::string& what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::span<const uint8_t> take(uint64_t n) {
        const auto out = bytes_.subspan(pos_, n);
        pos_ += n;
        return out;
    }

    std::string_view read_string(const std::string& what, uint64_t max_len = kMaxStringBytes) {
        const uint64_t at = pos_;
        const uint64_t len = read<uint64_t>(what + " length");
        if (len > max_len) {
            throw Error("bad GGUF file: " + what + " at offset " + hex_offset(at) + " claims " + std::to_string(len) +
                        " bytes (limit " + std::to_string(max_len) + ")");
        }
        need(len, what);
        std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
        pos_ += len;
        return s;
    }

private:
    std::span<const uint8_t> bytes_;
    uint64_t pos_ = 0;
};

// Smallest number of bytes one value of `t` takes, to reject absurd counts
// before allocating anything: a string is at least its length, an array its
// element type and count.
uint64_t min_value_bytes(ValueType t) {
    if (t == ValueType::String) return 8;
    if (t == ValueType::Array) return 12;
    return fixed_value_bytes(t);
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

Scalar read_scalar(Cursor& c, ValueType t, const std::string& what) {
    switch (t) {
        case ValueType::U8: return uint64_t(c.read<uint8_t>(what));
        case ValueType::I8: return int64_t(c.read<int8_t>(what));
        case ValueType::U16: return uint64_t(c.read<uint16_t>(what));
        case ValueType::I16: return int64_t(c.read<int16_t>(what));
        case ValueType::U32: return uint64_t(c.read<uint32_t>(what));
        case ValueType::I32: return int64_t(c.read<int32_t>(what));
        case ValueType::F32: return double(c.read<float>(what));
        case ValueType::Bool: {
            const uint64_t at = c.pos();
            const uint8_t b = c.read<uint8_t>(what);
            if (b > 1) {
                throw Error("bad GGUF file: " + what + " at offset " + hex_offset(at) + " is a bool with value " +
                            std::to_string(b));
            }
            return b == 1;
        }
        case ValueType::String: return c.read_string(what);
        case ValueType::U64: return c.read<uint64_t>(what);
        case ValueType::I64: return c.read<int64_t>(what);
        case ValueType::F64: return c.read<double>(what);
        case ValueType::Array: break;
    }
    throw Error("bad GGUF file: " + what + " has no scalar type");
}

Value read_value(Cursor& c, const std::string& key) {
    const std::string what = "value of " + quoted(key);
    const uint64_t type_at = c.pos();
    const uint32_t raw_type = c.read<uint32_t>("type of " + quoted(key));
    if (!valid_value_type(raw_type)) {
        throw Error("bad GGUF file: metadata " + quoted(key) + " has unknown value type " + std::to_string(raw_type) +
                    " at offset " + hex_offset(type_at));
    }
    Value v;
    v.type = static_cast<ValueType>(raw_type);
    if (v.type != ValueType::Array) {
        v.scalar = read_scalar(c, v.type, what);
        return v;
    }
    const uint64_t elem_at = c.pos();
    const uint32_t raw_elem = c.read<uint32_t>("element type of " + quoted(key));
    if (!valid_value_type(raw_elem)) {
        throw Error("bad GGUF file: array " + quoted(key) + " has unknown element type " + std::to_string(raw_elem) +
                    " at offset " + hex_offset(elem_at));
    }
    v.elem_type = static_cast<ValueType>(raw_elem);
    if (v.elem_type == ValueType::Array) {
        throw Error("unsupported GGUF file: array " + quoted(key) + " at offset " + hex_offset(elem_at) +
                    " holds arrays (nested arrays are not supported)");
    }
    const uint64_t count_at = c.pos();
    const uint64_t count = c.read<uint64_t>("element count of " + quoted(key));
    if (count > c.remaining() / min_value_bytes(v.elem_type)) {
        throw Error("bad GGUF file: array " + quoted(key) + " at offset " + hex_offset(count_at) + " claims " +
                    std::to_string(count) + " elements but only " + std::to_string(c.remaining()) +
                    " bytes follow");
    }
    v.count = count;
    if (v.elem_type == ValueType::String) {
        v.strings.reserve(std::min<uint64_t>(count, kMaxReserve));  // a claim: grow with what is read
        for (uint64_t i = 0; i < count; ++i) {
            v.strings.push_back(c.read_string("element " + std::to_string(i) + " of " + quoted(key)));
        }
    } else {
        const uint64_t bytes = count * min_value_bytes(v.elem_type);
        c.need(bytes, "array " + quoted(key));
        v.raw = c.take(bytes);
        if (v.elem_type == ValueType::Bool) {
            for (uint64_t i = 0; i < count; ++i) {
                if (v.raw[i] > 1) {
                    throw Error("bad GGUF file: element " + std::to_string(i) + " of " + quoted(key) +
                                " is a bool with value " + std::to_string(v.raw[i]));
                }
            }
        }
    }
    return v;
}

std::string type_mismatch(const std::string& key, const Value& v, const char* wanted) {
    std::string got(value_type_name(v.type));
    if (v.type == ValueType::Array) got += " of " + std::string(value_type_name(v.elem_type));
    return "bad GGUF metadata: " + quoted(key) + " is " + got + ", expected " + wanted;
}

bool is_integer(ValueType t) {
    switch (t) {
        case ValueType::U8:
        case ValueType::I8:
        case ValueType::U16:
        case ValueType::I16:
        case ValueType::U32:
        case ValueType::I32:
        case ValueType::U64:
        case ValueType::I64: return true;
        default: return false;
    }
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

std::string quoted(std::string_view s) {
    constexpr size_t kMax = 80;
    std::string out = "'";
    for (size_t i = 0; i < s.size() && i < kMax; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
            out += char(c);
        } else {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    if (s.size() > kMax) out += "...";
    return out + "'";
}

Scalar Value::item(uint64_t i) const {
    if (elem_type == ValueType::String) return strings[i];
    const uint8_t* p = raw.data() + i * min_value_bytes(elem_type);
    auto get = [p](auto v) {
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (elem_type) {
        case ValueType::U8: return uint64_t(get(uint8_t{}));
        case ValueType::I8: return int64_t(get(int8_t{}));
        case ValueType::U16: return uint64_t(get(uint16_t{}));
        case ValueType::I16: return int64_t(get(int16_t{}));
        case ValueType::U32: return uint64_t(get(uint32_t{}));
        case ValueType::I32: return int64_t(get(int32_t{}));
        case ValueType::F32: return double(get(float{}));
        case ValueType::Bool: return get(uint8_t{}) == 1;
        case ValueType::U64: return get(uint64_t{});
        case ValueType::I64: return get(int64_t{});
        case ValueType::F64: return get(double{});
        case ValueType::String:
        case ValueType::Array: break;
    }
    return uint64_t(0);
}

size_t fixed_value_bytes(ValueType t) {
    switch (t) {
        case ValueType::U8:
        case ValueType::I8:
        case ValueType::Bool: return 1;
        case ValueType::U16:
        case ValueType::I16: return 2;
        case ValueType::U32:
        case ValueType::I32:
        case ValueType::F32: return 4;
        case ValueType::U64:
        case ValueType::I64:
        case ValueType::F64: return 8;
        case ValueType::String:
        case ValueType::Array: break;
    }
    return 0;
}

std::string_view value_type_name(ValueType t) {
    switch (t) {
        case ValueType::U8: return "uint8";
        case ValueType::I8: return "int8";
        case ValueType::U16: return "uint16";
        case ValueType::I16: return "int16";
        case ValueType::U32: return "uint32";
        case ValueType::I32: return "int32";
        case ValueType::F32: return "float32";
        case ValueType::Bool: return "bool";
        case ValueType::String: return "string";
        case ValueType::Array: return "array";
        case ValueType::U64: return "uint64";
        case ValueType::I64: return "int64";
        case ValueType::F64: return "float64";
    }
    return "unknown";
}

const Value* Metadata::find(const std::string& key) const {
    auto it = values_.find(key);
    return it == values_.end() ? nullptr : &it->second;
}

bool Metadata::insert(std::string key, Value value) {
    if (values_.count(key) != 0) return false;
    order_.push_back(key);
    values_.emplace(std::move(key), std::move(value));
    return true;
}

std::optional<int64_t> Metadata::get_int(const std::string& key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!is_integer(v->type)) throw Error(type_mismatch(key, *v, "an integer"));
    if (const auto* u = std::get_if<uint64_t>(&v->scalar)) {
        if (*u > uint64_t(std::numeric_limits<int64_t>::max())) {
            throw Error("bad GGUF metadata: " + quoted(key) + " = " + std::to_string(*u) + " is out of range");
        }
        return int64_t(*u);
    }
    return std::get<int64_t>(v->scalar);
}

std::optional<uint64_t> Metadata::get_uint(const std::string& key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!is_integer(v->type)) throw Error(type_mismatch(key, *v, "an integer"));
    if (const auto* i = std::get_if<int64_t>(&v->scalar)) {
        if (*i < 0) throw Error("bad GGUF metadata: " + quoted(key) + " = " + std::to_string(*i) + " is negative");
        return uint64_t(*i);
    }
    return std::get<uint64_t>(v->scalar);
}

std::optional<uint32_t> Metadata::get_u32(const std::string& key) const {
    auto u = get_uint(key);
    if (!u) return std::nullopt;
    if (*u > std::numeric_limits<uint32_t>::max()) {
        throw Error("bad GGUF metadata: " + quoted(key) + " = " + std::to_string(*u) + " is out of range");
    }
    return uint32_t(*u);
}

std::optional<float> Metadata::get_f32(const std::string& key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type == ValueType::F32 || v->type == ValueType::F64) return float(std::get<double>(v->scalar));
    if (is_integer(v->type)) return float(*get_int(key));
    throw Error(type_mismatch(key, *v, "a number"));
}

std::optional<bool> Metadata::get_bool(const std::string& key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::Bool) throw Error(type_mismatch(key, *v, "a bool"));
    return std::get<bool>(v->scalar);
}

std::optional<std::string_view> Metadata::get_string(const std::string& key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::String) throw Error(type_mismatch(key, *v, "a string"));
    return std::get<std::string_view>(v->scalar);
}

std::optional<std::vector<std::string_view>> Metadata::get_string_array(const std::string& key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::Array || v->elem_type != ValueType::String) {
        throw Error(type_mismatch(key, *v, "an array of strings"));
    }
    return v->strings;
}

std::optional<std::vector<int64_t>> Metadata::get_int_array(const std::string& key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::Array || !is_integer(v->elem_type)) {
        throw Error(type_mismatch(key, *v, "an array of integers"));
    }
    std::vector<int64_t> out;
    out.reserve(v->count);
    for (uint64_t i = 0; i < v->count; ++i) {
        const Scalar s = v->item(i);
        if (const auto* u = std::get_if<uint64_t>(&s)) {
            if (*u > uint64_t(std::numeric_limits<int64_t>::max())) {
                throw Error("bad GGUF metadata: an element of " + quoted(key) + " is out of range");
            }
            out.push_back(int64_t(*u));
        } else {
            out.push_back(std::get<int64_t>(s));
        }
    }
    return out;
}

std::string TensorInfo::shape_string() const {
    std::string s = "[";
    for (int i = 0; i < n_dims; ++i) {
        if (i) s += ", ";
        s += std::to_string(ne[i]);
    }
    return s + "]";
}

const TensorInfo* File::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

File File::parse_part(std::span<const uint8_t> bytes) {
    File f;
    f.bytes_ = bytes;
    f.total_bytes_ = bytes.size();
    Cursor c(bytes);

    if (bytes.size() < 4) {
        throw Error("not a GGUF file: only " + std::to_string(bytes.size()) + " bytes");
    }
    const uint32_t magic = c.read<uint32_t>("magic");
    if (magic != kMagic) {
        throw Error("not a GGUF file: bad magic at offset 0 (expected 'GGUF')");
    }
    f.version_ = c.read<uint32_t>("version");
    if (f.version_ != 2 && f.version_ != 3) {
        throw Error("unsupported GGUF version " + std::to_string(f.version_) + " at offset 4 (supported: 2, 3)");
    }
    const uint64_t n_tensors = c.read<uint64_t>("tensor count");
    const uint64_t n_kv = c.read<uint64_t>("metadata count");

    // Each metadata entry takes at least a key length, a type and 1 byte;
    // each tensor info at least a name length, n_dims, one dim, type, offset.
    if (n_kv > c.remaining() / 13) {
        throw Error("bad GGUF file: header at offset 16 claims " + std::to_string(n_kv) +
                    " metadata entries but only " + std::to_string(c.remaining()) + " bytes follow");
    }
    if (n_tensors > c.remaining() / 32) {
        throw Error("bad GGUF file: header at offset 8 claims " + std::to_string(n_tensors) +
                    " tensors but only " + std::to_string(c.remaining()) + " bytes follow");
    }

    for (uint64_t i = 0; i < n_kv; ++i) {
        const uint64_t key_at = c.pos();
        std::string key(c.read_string("key of metadata entry " + std::to_string(i), kMaxNameBytes));
        Value v = read_value(c, key);
        if (!f.metadata_.insert(key, std::move(v))) {
            throw Error("bad GGUF file: duplicate metadata key " + quoted(key) + " at offset " + hex_offset(key_at));
        }
    }

    if (const Value* a = f.metadata_.find("general.alignment")) {
        if (a->type != ValueType::U32) {
            throw Error(type_mismatch("general.alignment", *a, "uint32"));
        }
        const uint64_t align = std::get<uint64_t>(a->scalar);
        if (align == 0 || (align & (align - 1)) != 0) {
            throw Error("bad GGUF metadata: general.alignment = " + std::to_string(align) + " is not a power of two");
        }
        f.alignment_ = align;
    }

    f.tensors_.reserve(std::min<uint64_t>(n_tensors, kMaxReserve));  // a claim: grow with what is read
    for (uint64_t i = 0; i < n_tensors; ++i) {
        const uint64_t info_at = c.pos();
        TensorInfo t;
        t.name = std::string(c.read_string("name of tensor " + std::to_string(i), kMaxNameBytes));
        const std::string label = "tensor " + quoted(t.name);
        const uint32_t n_dims = c.read<uint32_t>("dimension count of " + label);
        if (n_dims == 0 || n_dims > kMaxDims) {
            throw Error("bad GGUF file: " + label + " at offset " + hex_offset(info_at) + " has " +
                        std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
        }
        t.n_dims = int(n_dims);
        uint64_t n = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t ne = c.read<uint64_t>("dimension " + std::to_string(d) + " of " + label);
            if (ne == 0 || ne > (uint64_t(1) << 40) || n > (uint64_t(1) << 50) / ne) {
                throw Error("bad GGUF file: " + label + " at offset " + hex_offset(info_at) + " has dimension " +
                            std::to_string(d) + " = " + std::to_string(ne));
            }
            t.ne[d] = ne;
            n *= ne;
        }
        t.n_elements = n;
        t.type_id = c.read<uint32_t>("type of " + label);
        const auto traits = quant::type_traits(t.type_id);
        if (!traits || traits->type == quant::Type::Q8_1 || traits->type == quant::Type::Q8_K) {
            throw Error("unsupported tensor type " + quant::type_name(t.type_id) + " for " + label +
                        " (tensor info at offset " + hex_offset(info_at) + ")");
        }
        t.traits = *traits;
        if (t.ne[0] % traits->block_elems != 0) {
            throw Error("bad GGUF file: " + label + " has rows of " + std::to_string(t.ne[0]) +
                        " values, not a multiple of the " + std::string(traits->name) + " block size " +
                        std::to_string(traits->block_elems));
        }
        t.n_bytes = n / traits->block_elems * traits->block_bytes;
        const uint64_t rel = c.read<uint64_t>("data offset of " + label);
        if (rel % f.alignment_ != 0) {
            throw Error("bad GGUF file: " + label + " data offset " + std::to_string(rel) + " is not a multiple of " +
                        "the alignment " + std::to_string(f.alignment_));
        }
        t.file_offset = rel;  // made absolute below, once the data section start is known
        if (!f.tensor_index_.emplace(t.name, f.tensors_.size()).second) {
            throw Error("bad GGUF file: duplicate " + label + " at offset " + hex_offset(info_at));
        }
        f.tensors_.push_back(std::move(t));
    }

    f.data_offset_ = align_up(c.pos(), f.alignment_);
    if (n_tensors > 0 && f.data_offset_ > bytes.size()) {
        throw Error("truncated GGUF file: tensor data should start at offset " + std::to_string(f.data_offset_) +
                    " but the file ends at " + std::to_string(bytes.size()));
    }
    for (auto& t : f.tensors_) {
        const uint64_t rel = t.file_offset;
        const uint64_t avail = bytes.size() - std::min<uint64_t>(bytes.size(), f.data_offset_);
        if (rel > avail || t.n_bytes > avail - rel) {
            throw Error("truncated GGUF file: tensor " + quoted(t.name) + " needs bytes " +
                        std::to_string(f.data_offset_ + rel) + ".." + std::to_string(f.data_offset_ + rel + t.n_bytes) +
                        " but the file ends at " + std::to_string(bytes.size()));
        }
        t.file_offset = f.data_offset_ + rel;
        t.data = bytes.data() + t.file_offset;
    }
    return f;
}

}  // namespace smolinfer::gguf
