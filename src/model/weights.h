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

// A LayerNorm's weight and bias (bert).
struct LayerNormWeights {
    std::vector<float> weight, bias;
    bool empty() const { return weight.empty(); }
};

struct LayerWeights {
    std::vector<float> attn_norm;           // empty in bert, which norms after the residual adds
    Matrix wq, wk, wv, wo;
    std::vector<float> bq, bk, bv;          // qwen2, bert: biases of the Q/K/V products; empty when absent
    std::vector<float> bo, b_up, b_down;    // bert: biases of the attention output and feed-forward products
    std::vector<float> q_norm, k_norm;      // qwen3, gemma3: per-head RMSNorm weights (head_dim); empty when absent
    std::vector<float> post_attn_norm;      // gemma3: RMSNorm of the attention output; empty when absent
    std::vector<float> ffn_norm;
    Matrix w_gate, w_up, w_down;
    std::vector<float> post_ffn_norm;       // gemma3: RMSNorm of the feed-forward output; empty when absent
    LayerNormWeights attn_out_norm, layer_out_norm;  // bert: after the attention and the feed-forward residual adds
};

struct LlamaWeights {
    Matrix token_embd;  // n_vocab rows of n_embd
    // bert: learned position embeddings (n_ctx_train rows, read a row at a
    // time), token type 0's embedding (llama.cpp adds type 0 to every
    // token), and the LayerNorm after adding them.
    Matrix position_embd;
    std::vector<float> token_type0;
    LayerNormWeights embd_norm;
    std::vector<float> output_norm;  // empty in bert (its last layer ends with a norm)
    Matrix output;  // the token embedding itself when the file ties them
    std::vector<float> output_bias;  // empty when absent
    bool tied_output = false;
    // Per-pair RoPE frequency divisors (rope_dim/2 each): Llama 3.x's
    // rope_freqs, or phi3's LongRoPE factors for short and long contexts.
    // Empty when the file has none.
    std::vector<float> rope_freqs, rope_short, rope_long;
    std::vector<LayerWeights> layers;
    Matrix dense_2, dense_3;  // gemma-embedding: the projections after pooling (data null when absent)

    // The frequency factors for a context of n_ctx positions (nullptr: none).
    const float* rope_factors(const LlamaConfig& config, int n_ctx) const;

    // Checks every tensor's presence, shape and type. Throws smolinfer::Error
    // naming the tensor.
    static LlamaWeights bind(const gguf::File& file, const LlamaConfig& config, quant::Isa isa = quant::best_isa());
};

}  // namespace smolinfer::model
