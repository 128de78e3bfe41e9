// Tensor element types as numbered in GGUF (ggml's type ids) and their block geometry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace smolinfer::quant {

enum class Type : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    BF16 = 30,
};

struct TypeTraits {
    Type type;
    std::string_view name;
    size_t block_elems;  // values per block
    size_t block_bytes;  // bytes per block
};

// Traits of a type id read from a file; nullopt for ids smolinfer cannot decode.
std::optional<TypeTraits> type_traits(uint32_t type_id);

// Traits of a known type.
const TypeTraits& traits(Type type);

// Name of any type id, including unsupported ones ("id 19" when unknown).
std::string type_name(uint32_t type_id);

// Bytes taken by one row of n values; n must be a multiple of the block size.
inline size_t row_bytes(const TypeTraits& t, size_t n) { return n / t.block_elems * t.block_bytes; }

}  // namespace smolinfer::quant
