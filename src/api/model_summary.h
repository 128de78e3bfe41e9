// What a user wants to know about a model file at a glance: how many
// parameters, how it is quantized.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace smolinfer {

struct ModelSummary {
    uint64_t parameters = 0;    // elements of every tensor (as llama.cpp's llama_model_n_params)
    std::string file_type;      // general.file_type as llama.cpp names it ("Q4_K_M"); "" when absent or unknown
    std::string dominant_type;  // the tensor type holding the most bytes ("Q4_K")
    std::string weight_types;   // every type with its tensor count, most used first ("Q4_1 x210, F32 x61")
};

// Problems that do not stop the model (a malformed general.file_type) go to `warnings`.
ModelSummary summarize(const gguf::File& file, std::vector<std::string>* warnings);

}  // namespace smolinfer
