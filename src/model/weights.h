// The Llama weights of a GGUF file, bound in place: matrices point into the
// file bytes (never copied); only the small norm vectors are expanded to f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "quant/kernels.h"

namespace smolinfer::gguf {
class File;
}

namespace smolinfer::model {

struct LlamaConfig;

// A weight matrix stored row-major by output: `rows` rows of `cols` values.
struct Matrix {
    std::string name;
    quant::MatmulKernel kernel{};
    const uint8_t* data = nullptr;
    int rows = 0;
    int cols = 0;
    size_t row_bytes = 0;

    const uint8_t* row(int r) const { return data + size_t(r) * row_bytes; }
    quant::Type type() const { return kernel.weight; }
};

struct LayerWeights {
    std::vector<float> attn_norm;
    Matrix wq, wk, wv, wo;
    std::vector<float> ffn_norm;
    Matrix w_gate, w_up, w_down;
};

struct LlamaWeights {
    Matrix token_embd;  // n_vocab rows of n_embd
    std::vector<float> output_norm;
    Matrix output;  // the token embedding itself when the file ties them
    bool tied_output = false;
    std::vector<LayerWeights> layers;

    // Checks every tensor's presence, shape and type. Throws smolinfer::Error
    // naming the tensor.
    static LlamaWeights bind(const gguf::File& file, const LlamaConfig& config, quant::Isa isa = quant::best_isa());
};

}  // namespace smolinfer::model
