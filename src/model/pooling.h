// One vector from an embedding model's token vectors, as llama.cpp's
// build_pooling computes it, and the L2 normalisation its programs apply
// (common_embd_normalize with embd_norm 2; OpenAI returns unit vectors).
#pragma once

#include <vector>

#include "model/config.h"

namespace smolinfer::model {

// The pooled vector of one sequence's n token rows (`rows`: n rows of
// `width` floats). Mean: each dimension is ggml_vec_dot_f32 of its n values
// with n copies of float(1/n) (llama.cpp multiplies by an averaging matrix:
// the reciprocal inside the sum, not a division after it). Cls: the first
// row; Last and None: the last row (what llama.cpp's programs return for a
// model without pooling). Rank is not run: the caller refuses it.
std::vector<float> pool_rows(Pooling pooling, const float* rows, int n, int width);

// v / |v|: the squares in float summed in double, the reciprocal of the
// root rounded to float, then one multiply each; a zero vector stays zero.
void normalize_l2(std::vector<float>& v);

}  // namespace smolinfer::model
