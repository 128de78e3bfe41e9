// exp(x) and silu(x) exactly as llama.cpp's AVX-512 kernels compute them
// (ggml_v_expf: a degree-5 polynomial after range reduction, error < 1.5
// ulp). The softmax and SwiGLU results feed 8-bit quantizers, so matching
// these last bits keeps the logits identical to llama.cpp's.
#pragma once

#include <cmath>
#include <cstdint>

#include "quant/exact_fma.h"
#include "quant/fp16.h"

namespace smolinfer::model {

// 2^k for integral k in [-126, 127].
inline float pow2(int k) { return quant::bits_to_f32(uint32_t(k + 127) << 23); }

// ldexp(j, n) for j near 1 and |n| <= 192, without the library call (it
// showed up in profiles of the softmax and SwiGLU): n = n1 + n2 with n1 =
// clamp(n, -126, 127), j * 2^n2 exact (it stays a normal float), and the
// multiply by 2^n1 rounding once, as ldexp does.
inline float scale_by_pow2(float j, int n) {
    const int n1 = n < -126 ? -126 : n > 127 ? 127 : n;
    return j * pow2(n - n1) * pow2(n1);
}

inline float exp_approx(float x) {
    const float r = 0x1.8p23f;
    const float z = quant::exact_fma(x, 0x1.715476p+0f, r);
    const float n = z - r;  // round(x / ln 2)
    const float b = quant::exact_fma(-n, 0x1.7f7d1cp-20f, quant::exact_fma(-n, 0x1.62e4p-1f, x));
    if (!(std::fabs(n) <= 192.0f)) {  // out of range, or NaN (int(n) below must not see either)
        return std::isnan(n) ? n : n <= 0.0f ? 0.0f : INFINITY;
    }
    const float u = b * b;
    const float j = quant::exact_fma(quant::exact_fma(quant::exact_fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                      quant::exact_fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                             u, quant::exact_fma(0x1.ffffecp-1f, b, 1.0f));
    return scale_by_pow2(j, int(n));
}

inline float silu_approx(float x) { return x / (1.0f + exp_approx(0.0f - x)); }

}  // namespace smolinfer::model
