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

    // Rows first .. first + count - 1 as a matrix of their own: the parts of
    // a fused matrix (phi3's attn_qkv and gate/up ffn_up). Each output row is
    // its own dot product, so the parts compute exactly what the whole does.
    Matrix rows_view(int first, int count, std::string part) const;
};

struct LayerWeights {
    std::vector<float> attn_norm;
    Matrix wq, wk, wv, wo;
    std::vector<float> bq, bk, bv;          // qwen2: biases of the Q/K/V products; empty when absent
    std::vector<float> q_norm, k_norm;      // qwen3, gemma3: per-head RMSNorm weights (head_dim); empty when absent
    std::vector<float> post_attn_norm;      // gemma3: RMSNorm of the attention output; empty when absent
    std::vector<float> ffn_norm;
    Matrix w_gate, w_up, w_down;
    std::vector<float> post_ffn_norm;       // gemma3: RMSNorm of the feed-forward output; empty when absent
};

struct LlamaWeights {
    Matrix token_embd;  // n_vocab rows of n_embd
    std::vector<float> output_norm;
    Matrix output;  // the token embedding itself when the file ties them
    std::vector<float> output_bias;  // empty when absent
    bool tied_output = false;
    // Per-pair RoPE frequency divisors (rope_dim/2 each): Llama 3.x's
    // rope_freqs, or phi3's LongRoPE factors for short and long contexts.
    // Empty when the file has none.
    std::vector<float> rope_freqs, rope_short, rope_long;
    std::vector<LayerWeights> layers;

    // The frequency factors for a context of n_ctx positions (nullptr: none).
    const float* rope_factors(const LlamaConfig& config, int n_ctx) const;

    // Checks every tensor's presence, shape and type. Throws smolinfer::Error
    // naming the tensor.
    static LlamaWeights bind(const gguf::File& file, const LlamaConfig& config, quant::Isa isa = quant::best_isa());
};

}  // namespace smolinfer::model
