// The chunk path's online softmax (softmax_steps_ref in flash_attention.cpp)
// sixteen positions at a time, bit-identical to it. Each position's
// exponent depends only on the running maximum before it: a prefix maximum
// over the lanes gives all sixteen, and libm's expf on sixteen lanes
// (libm_expf_avx512.h) computes them together. Only the running sum stays a
// chain, in the reference's order and roundings.
#include "model/flash_softmax.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_ATTENTION)

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "model/libm_expf_avx512.h"
#include "runtime/machine.h"

namespace smolinfer::model {

namespace {

// Lane l takes lane l - k (the first k lanes: fill).
template <int K>
inline __m512 lanes_up(__m512 v, __m512 fill) {
    return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(v), _mm512_castps_si512(fill), 16 - K));
}

OnlineSoftmax softmax_steps_wide(float* scores, float* rescale, float scale, int n) {
    OnlineSoftmax sm;
    const __m512 sc = _mm512_set1_ps(scale), none = _mm512_set1_ps(-INFINITY), one = _mm512_set1_ps(1.0f);
    alignas(64) float weights[16], factors[16];
    for (int c = 0; c < n; c += 16) {
        const int count = n - c < 16 ? n - c : 16;
        const __mmask16 live = __mmask16((1u << count) - 1);
        const __m512 s = _mm512_mul_ps(_mm512_maskz_loadu_ps(live, scores + c), sc);
        // The maximum after each position: a NaN never becomes one (s > M
        // is false), nor does a lane past n.
        const __mmask16 counted = live & _mm512_cmp_ps_mask(s, s, _CMP_ORD_Q);
        __m512 after = _mm512_mask_blend_ps(counted, none, s);
        after = _mm512_max_ps(after, lanes_up<1>(after, none));
        after = _mm512_max_ps(after, lanes_up<2>(after, none));
        after = _mm512_max_ps(after, lanes_up<4>(after, none));
        after = _mm512_max_ps(after, lanes_up<8>(after, none));
        const __m512 running = _mm512_set1_ps(sm.max);
        after = _mm512_max_ps(after, running);
        const __m512 before = lanes_up<1>(after, running);
        // A new maximum: its factor exp(M_before - s), its weight 1; else
        // factor 1 and weight exp(s - M_before).
        const __mmask16 grew = live & _mm512_cmp_ps_mask(s, before, _CMP_GT_OQ);
        const __m512 arg = _mm512_maskz_mov_ps(
            live, _mm512_mask_blend_ps(grew, _mm512_sub_ps(s, before), _mm512_sub_ps(before, s)));
        const __m512 e = avx512::libm_expf16(arg);
        const __m512 weight = _mm512_mask_blend_ps(grew, e, one);
        const __m512 factor = _mm512_mask_blend_ps(grew, one, e);
        _mm512_mask_storeu_ps(scores + c, live, weight);
        _mm512_mask_storeu_ps(rescale + c, live, factor);
        _mm512_store_ps(weights, weight);
        _mm512_store_ps(factors, factor);
        for (int l = 0; l < count; ++l) {
            // S * 1 is S: only a new maximum needs the product.
            if (factors[l] == 1.0f) {
                sm.sum += weights[l];
            } else {
                sm.add(factors[l], weights[l]);
            }
        }
        alignas(64) float maxima[16];
        _mm512_store_ps(maxima, after);
        sm.max = maxima[count - 1];
        sm.rescale = factors[count - 1];
        sm.weight = weights[count - 1];
    }
    return sm;
}

// Whether libm_expf16 gives this process's expf, bit for bit: a sweep of
// [-104, 0] (the exponents the softmax takes), the input where an unfused
// r = z - k differs, and the special values.
bool libm_expf16_matches() {
    alignas(64) float x[16], e[16];
    const auto same = [&]() {
        _mm512_store_ps(e, avx512::libm_expf16(_mm512_load_ps(x)));
        for (int l = 0; l < 16; ++l) {
            const float want = std::exp(x[l]);
            if (std::memcmp(&want, &e[l], sizeof want) != 0) return false;
        }
        return true;
    };
    for (int i = 0; i < 65536; i += 16) {
        for (int l = 0; l < 16; ++l) x[l] = -104.0f * float(i + l) / 65536.0f - float(l) * 0x1p-20f;
        if (!same()) return false;
    }
    const float specials[16] = {-0x1.f8cbb2p+5f, 0.0f, -0.0f, -INFINITY, NAN, -88.0f, -87.99999f, -103.97f,
                                -103.98f, -150.0f, 88.0f, 1.0f, -0x1p-149f, -1e-30f, -0.5f, -20.123f};
    std::memcpy(x, specials, sizeof x);
    return same();
}

}  // namespace

SoftmaxStepsFn softmax_steps_avx512() {
    if (!runtime::cpu_has_avx512()) return nullptr;
    static const bool matches = libm_expf16_matches();
    return matches ? softmax_steps_wide : nullptr;
}

}  // namespace smolinfer::model

#else

namespace smolinfer::model {
SoftmaxStepsFn softmax_steps_avx512() { return nullptr; }
}  // namespace smolinfer::model

#endif
