// The element-wise and row-wise steps of a Llama layer, in float32, in the
// order of operations llama.cpp uses so that results round the same way.
#pragma once

#include <cstddef>

namespace smolinfer::model {

// y = x / sqrt(mean(x^2) + eps) * weight
void rms_norm(const float* x, const float* weight, float* y, size_t n, float eps);

// Rotates the first rope_dim values of one head in place: pairs (x[2i], x[2i+1])
// by angle pos * scale * base^(-2i/rope_dim) ("normal" RoPE, as llama.cpp
// applies to llama GGUF files, whose Q/K rows were permuted to match).
void rope(float* head, int rope_dim, int pos, float base, float scale);

// gate[i] = silu(gate[i]) * up[i]
void swiglu(float* gate, const float* up, size_t n);

// y[i] += x[i]
void add(float* y, const float* x, size_t n);

}  // namespace smolinfer::model
