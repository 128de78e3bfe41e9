// GELU as llama.cpp's CPU backend computes it on float rows: not the formula
// but a table of half-precision results, one per half-precision input
// (ggml_table_gelu_f16), looked up with the input rounded to half.
#pragma once

#include <cstddef>
#include <cstdint>

namespace smolinfer::model {

// GELU's tanh form as the released CPU backends compute each table entry:
// 0.5x(1 + tanh(sqrt(2/pi) x (1 + 0.044715x^2))), the compiler having fused
// the innermost multiply-add (read back from libggml-cpu's table: this form
// gives all 63,488 finite entries, the unfused source formula misses one).
float gelu_f32(float x);

// The 65,536 entries: gelu_table()[h] = half(gelu_f32(float(h))). Built on
// first use (128 KiB).
const uint16_t* gelu_table();

// gate[i] = gelu(gate[i]) * up[i], as ggml_vec_geglu_f32: 0 at or below
// -10, the identity at or above 10, the table in between.
void geglu(float* gate, const float* up, size_t n);

// x[i] = gelu(x[i]), as ggml_vec_gelu_f32 (bert's ungated feed-forward):
// the same three cases without the product.
void gelu(float* x, size_t n);

}  // namespace smolinfer::model
