// libm's expf sixteen lanes at a time, bit for bit: llama.cpp's flash
// attention calls expf once per (head, position) for its online softmax,
// and a call per position was a fifth of decoding at depth 4096.
//
// glibc's expf (since 2.28; on a CPU with FMA its ifunc picks the FMA
// build): x / ln2 * 32 = k + r with k rounded to an integer through the
// 1.5 * 2^52 shift, 2^(k/32) from a 32-entry table of 2^(i/32) with the
// exponent added in its bits, and a cubic in r, all in double, rounded to
// float once at the end. The FMA build fuses r = z - k and the cubic's
// three multiply-adds: so written, every float in [-104, 0) gave the
// library's bits (checked once, offline; unfused, -0x1.f8cbb2p+5 differs),
// and tests/test_flash_softmax.cpp checks every 61st. Lanes at |x| >= 88
// and NaNs, where the library takes its special paths, go through expf.
//
// Another libm may compute expf differently: its user checks this one
// against the process's own expf once, before using it
// (libm_expf16_matches in flash_softmax_avx512.cpp).
// Only for files compiled with AVX-512 (see src/CMakeLists.txt).
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace smolinfer::model::avx512 {

// Local to each unit that includes this: an inline (weak) copy compiled
// with AVX-512 could be the one the linker keeps for every caller
// (scripts/check-isa-leaks).
namespace {

// 2^(i/32) as double bits, minus i << 47 (the exponent k/32 adds back).
alignas(64) constexpr uint64_t kExp2Table[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

// Eight lanes of the common path (|x| < 88), as doubles.
inline __m512d libm_expf8_core(__m512d x) {
    const __m512d inv_ln2_n = _mm512_set1_pd(0x1.71547652b82fep+0 * 32);
    const __m512d shift = _mm512_set1_pd(0x1.8p+52);
    const __m512d z = _mm512_mul_pd(inv_ln2_n, x);
    const __m512d kd_shifted = _mm512_add_pd(z, shift);
    const __m512i ki = _mm512_castpd_si512(kd_shifted);
    const __m512d kd = _mm512_sub_pd(kd_shifted, shift);
    const __m512d r = _mm512_fmsub_pd(inv_ln2_n, x, kd);
    // T[ki % 32]: two 16-entry lookups, picked by bit 4.
    const __m512i* table = reinterpret_cast<const __m512i*>(kExp2Table);
    const __m512i lo = _mm512_permutex2var_epi64(_mm512_load_si512(table), ki, _mm512_load_si512(table + 1));
    const __m512i hi = _mm512_permutex2var_epi64(_mm512_load_si512(table + 2), ki, _mm512_load_si512(table + 3));
    const __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    const __m512i t = _mm512_add_epi64(_mm512_mask_blend_epi64(upper, lo, hi), _mm512_slli_epi64(ki, 47));
    const __m512d s = _mm512_castsi512_pd(t);
    const __m512d c0 = _mm512_set1_pd(0x1.c6af84b912394p-5 / 32 / 32 / 32);
    const __m512d c1 = _mm512_set1_pd(0x1.ebfce50fac4f3p-3 / 32 / 32);
    const __m512d c2 = _mm512_set1_pd(0x1.62e42ff0c52d6p-1 / 32);
    const __m512d zc = _mm512_fmadd_pd(c0, r, c1);
    const __m512d r2 = _mm512_mul_pd(r, r);
    const __m512d y = _mm512_fmadd_pd(zc, r2, _mm512_fmadd_pd(c2, r, _mm512_set1_pd(1.0)));
    return _mm512_mul_pd(y, s);
}

inline __m512 libm_expf16(__m512 x) {
    const __m256 lo = _mm512_cvtpd_ps(libm_expf8_core(_mm512_cvtps_pd(_mm512_castps512_ps256(x))));
    const __m256 hi = _mm512_cvtpd_ps(libm_expf8_core(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)))));
    __m512 e = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
    // Not |x| < 88 (NaN compares false): the library's own special paths.
    const __mmask16 special = _mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(88.0f), _CMP_NLT_UQ);
    if (special != 0) {
        alignas(64) float xs[16], es[16];
        _mm512_store_ps(xs, x);
        _mm512_store_ps(es, e);
        for (int l = 0; l < 16; ++l) {
            if (special >> l & 1) es[l] = std::exp(xs[l]);
        }
        e = _mm512_load_ps(es);
    }
    return e;
}

}  // namespace
}  // namespace smolinfer::model::avx512
