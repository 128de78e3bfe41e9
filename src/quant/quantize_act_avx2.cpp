// AVX2 activation quantizers, bit-identical to quantize_act_ref.cpp: every
// step is element-wise (absolute maximum, multiply by 127 / amax, round half
// to even, saturate) or an exact integer sum, so lane order cannot change a
// result. NaN inputs are skipped by the maximum as std::fmax skips them, and
// convert-and-pack turns a NaN product into -128 as the reference does.
#include "quant/dot_avx2.h"

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "quant/blocks.h"
#include "quant/fp16.h"

namespace smolinfer::quant::avx2 {

namespace {

inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

// One block of 32: int8 codes to qs, returns d = amax / 127; *sum (if given)
// receives the sum of the codes.
inline float quantize_block(const float* x, int8_t* qs, int* sum) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        // max(|x|, amax): when |x| is NaN MAXPS returns its second operand, amax.
        amax = _mm256_max_ps(_mm256_andnot_ps(sign, v[k]), amax);
    }
    const float m = hmax8(amax);
    const __m256 id = _mm256_set1_ps(m != 0.0f ? 127.0f / m : 0.0f);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
        q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    // Saturating packs interleave 128-bit lanes; the permute restores order.
    const __m256i q16a = _mm256_packs_epi32(q[0], q[1]);
    const __m256i q16b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16a, q16b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), q8);
    if (sum != nullptr) {
        const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q8);
        const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
        *sum = _mm_cvtsi128_si32(s);
    }
    return m / 127.0f;
}

}  // namespace

void quantize_row_q8_0(const float* x, void* dst, size_t n) {
    auto* y = static_cast<BlockQ8_0*>(dst);
    for (size_t i = 0; i < n / kQK32; ++i, x += kQK32) y[i].d = f32_to_fp16(quantize_block(x, y[i].qs, nullptr));
}

void quantize_row_q8_1(const float* x, void* dst, size_t n) {
    auto* y = static_cast<BlockQ8_1*>(dst);
    for (size_t i = 0; i < n / kQK32; ++i, x += kQK32) {
        int sum = 0;
        const float d = quantize_block(x, y[i].qs, &sum);
        y[i].d = f32_to_fp16(d);
        y[i].s = f32_to_fp16(d * float(sum));
    }
}

}  // namespace smolinfer::quant::avx2

#endif
