// Cuts a GGUF model into the parts of llama.cpp's gguf-split layout
// (gguf/split.h), as llama-gguf-split --split does: the same choice of
// which tensors go together, the same metadata in the same order, so the
// parts are byte for byte the ones llama.cpp's tool writes. Browsers and
// CDNs prefer files under 2 GB; a split model loads from its first part.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace smolinfer::convert {

struct SplitOptions {
    // Exactly one of the two limits: tensors per part (llama.cpp's
    // --split-max-tensors) or bytes of tensor data per part (--split-max-size).
    uint64_t max_tensors = 0;
    uint64_t max_bytes = 0;
    // The first part holds only the metadata (--no-tensor-first-split).
    bool no_tensor_first_split = false;
};

// Indices of the tensors of each part, in file order.
std::vector<std::vector<size_t>> plan_split(const gguf::File& in, const SplitOptions& opt);

// Writes "<out_prefix>-0000i-of-0000N.gguf" for every part and returns their
// paths. Nothing is left under those names unless every part is complete.
std::vector<std::string> split_file(const std::string& in_path, const std::string& out_prefix, const SplitOptions& opt);

}  // namespace smolinfer::convert
