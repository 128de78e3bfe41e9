// GGUF v2/v3 parsed from a byte span: typed metadata and tensor views.
// Nothing read from the file is trusted: every count, length, offset and
// shape is checked against the bytes that are actually there, and a failure
// is a smolinfer::Error that names the key or tensor and the byte offset.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "quant/types.h"

namespace smolinfer::gguf {

enum class ValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

std::string_view value_type_name(ValueType t);

// Bytes of one value of a fixed-size type (numbers, bool); 0 for String and Array.
size_t fixed_value_bytes(ValueType t);

// One scalar as read: integers keep their signedness, floats widen to double
// (exact), strings point into the file bytes.
using Scalar = std::variant<uint64_t, int64_t, double, bool, std::string_view>;

// Arrays are kept compact: numbers point at their bytes in the file (a
// crafted file cannot make the parser allocate more than it reads), strings
// are views. No nested arrays.
struct Value {
    ValueType type = ValueType::U8;
    ValueType elem_type = ValueType::U8;     // arrays only
    Scalar scalar;                           // non-arrays
    uint64_t count = 0;                      // arrays: number of elements
    std::span<const uint8_t> raw;            // arrays of numbers or bools: the elements as stored
    std::vector<std::string_view> strings;   // arrays of strings

    // Element i of an array, decoded.
    Scalar item(uint64_t i) const;
};

// A string from the file as it may appear in a one-line message: quoted,
// control and non-ASCII bytes escaped, long ones cut.
std::string quoted(std::string_view s);

// Metadata with typed getters. A getter returns nullopt for a missing key and
// throws smolinfer::Error when the key holds the wrong type or an
// out-of-range number.
class Metadata {
public:
    bool has(const std::string& key) const { return values_.count(key) != 0; }
    const Value* find(const std::string& key) const;

    std::optional<uint64_t> get_uint(const std::string& key) const;
    std::optional<uint32_t> get_u32(const std::string& key) const;
    std::optional<int64_t> get_int(const std::string& key) const;
    std::optional<float> get_f32(const std::string& key) const;
    std::optional<bool> get_bool(const std::string& key) const;
    std::optional<std::string_view> get_string(const std::string& key) const;
    std::optional<std::vector<std::string_view>> get_string_array(const std::string& key) const;
    std::optional<std::vector<int64_t>> get_int_array(const std::string& key) const;

    const std::vector<std::string>& keys() const { return order_; }

    // Used by the parser.
    bool insert(std::string key, Value value);

private:
    std::unordered_map<std::string, Value> values_;
    std::vector<std::string> order_;
};

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr int kMaxDims = 4;
inline constexpr uint64_t kDefaultAlignment = 32;

struct TensorInfo {
    std::string name;
    uint32_t type_id = 0;
    quant::TypeTraits traits{};
    int n_dims = 0;
    std::array<uint64_t, kMaxDims> ne{1, 1, 1, 1};  // ne[0] is the row length (innermost)
    uint64_t n_elements = 0;
    uint64_t n_bytes = 0;
    uint64_t file_offset = 0;  // absolute offset of the data in its file (its part of a split model)
    uint32_t part = 0;         // which file of a split model holds the data (0 for a single file)
    const uint8_t* data = nullptr;

    quant::Type type() const { return traits.type; }
    uint64_t rows() const { return n_elements / ne[0]; }
    uint64_t row_bytes() const { return n_bytes / rows(); }
    std::string shape_string() const;
};

class File {
public:
    // Parses and validates the whole header and every tensor's placement.
    // One part of a split model (split.count > 1) is refused: see parse_parts.
    // (parse and parse_parts live in split.cpp, with the split rules.)
    static File parse(std::span<const uint8_t> bytes);

    // The same for one file that may be a part of a split model (llama.cpp's
    // gguf-split layout, see split.h); its split keys are not checked.
    static File parse_part(std::span<const uint8_t> bytes);

    // A model in one file (one span: as parse) or split into parts, given in
    // order: the first part's metadata, every part's tensors (each viewing
    // its own part's bytes). Each part's split.no must be its index, the
    // first part's split.count the number of parts, and the tensors of all
    // parts together split.tensors.count, with no name twice; an Error names
    // the part ("part 2 of 3") that breaks a rule.
    // `names` (optional, one per part) go into the messages.
    static File parse_parts(std::span<const std::span<const uint8_t>> parts, std::span<const std::string> names = {});

    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }
    const Metadata& metadata() const { return metadata_; }
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(const std::string& name) const;
    // The first part's bytes (the whole file unless split).
    std::span<const uint8_t> bytes() const { return bytes_; }
    size_t part_count() const { return part_count_; }
    // Bytes of all parts together.
    uint64_t total_bytes() const { return total_bytes_; }

private:
    std::span<const uint8_t> bytes_;
    size_t part_count_ = 1;
    uint64_t total_bytes_ = 0;
    uint32_t version_ = 0;
    uint64_t alignment_ = kDefaultAlignment;
    uint64_t data_offset_ = 0;
    Metadata metadata_;
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace smolinfer::gguf
