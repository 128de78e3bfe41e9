// exp_approx and silu_approx (model/exp_approx.h) eight lanes at a time
// with AVX2 and FMA, bit for bit the scalar forms: the same fused
// multiply-adds, and 2^n applied as scale_by_pow2 does (two multiplies, the
// second rounding once as ldexp) (tests/test_vector_math.cpp). For the
// native x86-64-v3 build; AVX-512 CPUs take vector_math_avx512.h instead.
#pragma once

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cmath>

namespace smolinfer::model::avx2 {

inline __m256 exp_approx8(__m256 x) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);  // round(x / ln 2)
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
    // scale_by_pow2(j, n): n1 = clamp(n, -126, 127), then j * 2^(n - n1) * 2^n1.
    const __m256i ni = _mm256_cvttps_epi32(n);  // exact where it is used: |n| <= 192
    const __m256i n1 = _mm256_min_epi32(_mm256_max_epi32(ni, _mm256_set1_epi32(-126)), _mm256_set1_epi32(127));
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 p_rest = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, n1), bias), 23));
    const __m256 p_n1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, p_rest), p_n1);
    const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
    const __m256 in_range = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192.0f), _CMP_LE_OQ);  // false for NaN
    if (_mm256_movemask_ps(in_range) == 0xFF) return res;
    // Out of range: 0 below, infinity above; NaN stays NaN (n).
    const __m256 zero = _mm256_setzero_ps();
    __m256 alt = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), zero, _mm256_cmp_ps(n, zero, _CMP_LE_OQ));
    alt = _mm256_blendv_ps(alt, n, _mm256_cmp_ps(n, n, _CMP_UNORD_Q));
    return _mm256_blendv_ps(alt, res, in_range);
}

inline __m256 silu_approx8(__m256 x) {
    const __m256 e = exp_approx8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

}  // namespace smolinfer::model::avx2

#endif
