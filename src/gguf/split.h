// Split models in llama.cpp's gguf-split layout: a model cut into N files
// named "<prefix>-00001-of-0000N.gguf" .. "-0000N-of-0000N.gguf", each a
// complete GGUF file holding some of the tensors. Every part carries
// split.no (its index from 0), split.count (N) and split.tensors.count (the
// tensors of all parts); only the first carries the model's metadata.
// gguf::File::parse_parts joins the parts (defined in split.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gguf/gguf.h"

namespace smolinfer::gguf {

inline constexpr const char* kSplitNo = "split.no";
inline constexpr const char* kSplitCount = "split.count";
inline constexpr const char* kSplitTensorsCount = "split.tensors.count";
inline constexpr uint32_t kMaxSplitParts = 99999;  // five digits in the names

struct SplitKeys {
    uint32_t index = 0;  // split.no
    uint32_t count = 1;  // split.count
    std::optional<uint64_t> tensors;  // split.tensors.count
};

// The split keys of one file; nullopt when it has no split.count (a file of
// its own). A split.count without split.no, or an index out of range, is an Error.
std::optional<SplitKeys> split_keys(const Metadata& metadata);

// "<prefix>-00002-of-00003.gguf" for index 1 (from 0) of 3.
std::string split_part_path(std::string_view prefix, uint32_t index, uint32_t count);

// The prefix of `path` when it is named as part `index` of `count`, else nullopt.
std::optional<std::string> split_prefix(std::string_view path, uint32_t index, uint32_t count);

}  // namespace smolinfer::gguf
