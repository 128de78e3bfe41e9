#include "model/ops.h"

#include <cmath>

#include "model/exp_approx.h"
#include "model/ops_avx512.h"
#include "model/vector_math_avx2.h"
#include "model/vector_math_wasm.h"
#include "quant/exact_fma.h"
#include "model/sincos.h"
#include "quant/lanes.h"

namespace smolinfer::model {

void rms_norm(const float* x, const float* weight, float* y, size_t n, float eps) {
    // Squares in float, summed in double, mean back in float: llama.cpp's
    // rounding. Any other rounding here flips 8-bit activation codes in the
    // next matmul and the logits drift measurably.
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);
    const float mean = float(sum / double(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    // Normalize, then weigh: two roundings, as llama.cpp's two graph nodes do.
    for (size_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * weight[i];
}

void layer_norm(const float* x, const float* weight, const float* bias, float* y, size_t n, float eps) {
    // ggml_vec_sum_f32: the mean from a sum in double, rounded to float.
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) total += double(x[i]);
    const float mean = float(total) / float(n);
    // ggml_vec_cvar_f32 in its AVX-512 form: 16 differences at a time, their
    // squares (unfused) reduced by _mm512_reduce_add_ps into a double sum,
    // the rest one at a time; the variance rounded to float.
    double var = 0.0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        float sq[16];
        for (int l = 0; l < 16; ++l) {
            y[i + size_t(l)] = x[i + size_t(l)] - mean;
            sq[l] = y[i + size_t(l)] * y[i + size_t(l)];
        }
        var += double(quant::hsum16(sq));
    }
    for (; i < n; ++i) {
        y[i] = x[i] - mean;
        var += double(y[i] * y[i]);
    }
    const float variance = float(var / double(n));
    const float scale = 1.0f / std::sqrt(variance + eps);
    // Three graph nodes, three roundings.
    for (size_t j = 0; j < n; ++j) y[j] = (y[j] * scale) * weight[j] + bias[j];
}

void rope_angles(int pos, int rope_dim, float base, float scale, const float* factors, float attn_factor, float* cos_sin) {
    // Angles by repeated multiplication in float, as llama.cpp computes them;
    // pow() per pair would round differently.
    const float theta_scale = std::pow(base, -2.0f / float(rope_dim));
    float theta = float(pos);
    for (int i = 0; i < rope_dim; i += 2) {
        const float extrapolated = factors ? theta / factors[i / 2] : theta;
        float s, c;
        sincos_glibc(scale * extrapolated, &s, &c);
        cos_sin[i] = c * attn_factor;
        cos_sin[i + 1] = s * attn_factor;
        theta *= theta_scale;
    }
}

void rope_rotate(float* head, int rope_dim, const float* cos_sin, RopeStyle style) {
    // The partner of value j: the next one, or the one half the rotated span on.
    const int step = style == RopeStyle::Adjacent ? 2 : 1;
    const int offset = style == RopeStyle::Adjacent ? 1 : rope_dim / 2;
    for (int i = 0; i < rope_dim; i += 2) {
        const float c = cos_sin[i], s = cos_sin[i + 1];
        float* x = head + i / 2 * step;
        const float x0 = x[0];
        const float x1 = x[offset];
        // The fused forms of llama.cpp's rotation.
        x[0] = quant::exact_fma(c, x0, -(s * x1));
        x[offset] = quant::exact_fma(s, x0, c * x1);
    }
}

void swiglu(float* gate, const float* up, size_t n) {
    static const avx512::SwigluFn fast = avx512::swiglu_kernel();
    if (fast) return fast(gate, up, n);
    size_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(gate + i, _mm256_mul_ps(avx2::silu_approx8(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
    }
#elif defined(__wasm_simd128__)
    for (; i + 4 <= n; i += 4) {
        wasm_v128_store(gate + i, wasm_f32x4_mul(wasm::silu_approx4(wasm_v128_load(gate + i)), wasm_v128_load(up + i)));
    }
#endif
    for (; i < n; ++i) gate[i] = silu_approx(gate[i]) * up[i];
}

void add(float* y, const float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace smolinfer::model
