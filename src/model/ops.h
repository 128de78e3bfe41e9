// The element-wise and row-wise steps of a Llama layer, in float32, in the
// order of operations llama.cpp uses so that results round the same way.
#pragma once

#include <cstddef>

#include "model/config.h"

namespace smolinfer::model {

// y = x / sqrt(mean(x^2) + eps) * weight
void rms_norm(const float* x, const float* weight, float* y, size_t n, float eps);

// y = (x - mean) / sqrt(variance + eps) * weight + bias, as ggml_norm then
// ggml_mul then ggml_add (bert's LayerNorm). y may be x.
void layer_norm(const float* x, const float* weight, const float* bias, float* y, size_t n, float eps);

// RoPE, as llama.cpp computes it: pair i of a head turns by
// pos * scale * base^(-2i/rope_dim) / factors[i] (factors: Llama 3's
// rope_freqs or phi3's LongRoPE factors; nullptr for none), cos and sin
// multiplied by attn_factor. rope_angles fills cos_sin with the rope_dim/2
// (cos, sin) pairs of one position; rope_rotate applies them to the first
// rope_dim values of a head, pairing (2i, 2i+1) (Adjacent: llama GGUF files,
// whose Q/K rows were permuted to match) or (i, i + rope_dim/2) (Halves:
// llama.cpp's NEOX mode, qwen2/qwen3/phi3).
void rope_angles(int pos, int rope_dim, float base, float scale, const float* factors, float attn_factor, float* cos_sin);
void rope_rotate(float* head, int rope_dim, const float* cos_sin, RopeStyle style);

// gate[i] = silu(gate[i]) * up[i]
void swiglu(float* gate, const float* up, size_t n);

// y[i] += x[i]
void add(float* y, const float* x, size_t n);

}  // namespace smolinfer::model
