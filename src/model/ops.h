// The element-wise and row-wise steps of a Llama layer, in float32, in the
// order of operations llama.cpp uses so that results round the same way.
#pragma once

#include <cstddef>

namespace smolinfer::model {

// y = x / sqrt(mean(x^2) + eps) * weight
void rms_norm(const float* x, const float* weight, float* y, size_t n, float eps);

// RoPE ("normal" mode, as llama.cpp applies it to llama GGUF files, whose
// Q/K rows were permuted to match): pair (x[2i], x[2i+1]) of a head turns by
// pos * scale * base^(-2i/rope_dim). rope_angles fills cos_sin with the
// rope_dim/2 (cos, sin) pairs of one position; rope_rotate applies them to
// the first rope_dim values of a head.
void rope_angles(int pos, int rope_dim, float base, float scale, float* cos_sin);
void rope_rotate(float* head, int rope_dim, const float* cos_sin);

// gate[i] = silu(gate[i]) * up[i]
void swiglu(float* gate, const float* up, size_t n);

// y[i] += x[i]
void add(float* y, const float* x, size_t n);

}  // namespace smolinfer::model
