#include "model/encoder_attention.h"

#include <cmath>

#include "model/exp_approx.h"
#include "quant/exact_fma.h"
#include "quant/lanes.h"
#include "quant/reference.h"

namespace smolinfer::model {

namespace {

// ggml_soft_max_ext's row (ops.cpp, vec.cpp ggml_vec_soft_max_f32): the
// weights stay f32.
void softmax_f32(float* s, int n, float scale) {
    for (int j = 0; j < n; ++j) s[j] *= scale;
    float max = -INFINITY;
    for (int j = 0; j < n; ++j) max = std::fmax(max, s[j]);
    double sum = 0.0;
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        for (int l = 0; l < 16; ++l) s[j + l] = exp_approx(s[j + l] - max);
        sum += double(quant::hsum16(s + j));
    }
    for (; j < n; ++j) {
        s[j] = std::exp(s[j] - max);  // libm's expf, as ggml's scalar tail
        sum += double(s[j]);
    }
    const float inv = float(1.0 / sum);
    for (int k = 0; k < n; ++k) s[k] *= inv;
}

// One output value: value dimension `row` (n floats) with the weights.
float value_sum(const float* row, const float* w, int n) {
    if (n >= 2 && n % 16 == 0) return quant::ref::dot_f32_f32_tinyblas(size_t(n), row, w);
    return quant::ref::dot_f32_f32(size_t(n), row, w);
}

}  // namespace

void encoder_attend_heads(const AttentionShape& shape, int first_head, int n_q, int pos, const float* q,
                          const float* keys, size_t key_stride, const float* values_t, float* out, float* scratch) {
    const int hd = shape.head_dim;
    const int n = shape.n_kv;
    const int kv_off = first_head / (shape.n_head / shape.n_head_kv) * hd;
    const float scale = shape.kq_scale != 0.0f ? shape.kq_scale : 1.0f / std::sqrt(float(hd));
    float* w = scratch;
    for (int g = 0; g < n_q; ++g) {
        const float* qg = q + size_t(g) * size_t(hd);
        for (int j = 0; j < n; ++j) {
            // The mask is added after the scale: -inf stays -inf.
            w[j] = sees(shape, 0, pos, j) ? quant::ref::dot_f32_f32(size_t(hd), keys + size_t(j) * key_stride + size_t(kv_off), qg)
                                          : -INFINITY;
        }
        softmax_f32(w, n, scale);
        float* o = out + size_t(g) * size_t(hd);
        for (int i = 0; i < hd; ++i) o[i] = value_sum(values_t + size_t(i) * size_t(n), w, n);
    }
}

}  // namespace smolinfer::model
