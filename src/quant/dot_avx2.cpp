// AVX2 + FMA dot products for the 32-value formats. Each is bit-identical
// to its reference in dot_ref.cpp (same lanes, same fused multiply-adds,
// same hsum8 tree); tests/test_quant_kernels.cpp checks that on random blocks.
#include "quant/dot_avx2.h"

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"

namespace smolinfer::quant::avx2 {

namespace {

// Lane j: sum of products 4j..4j+3 of unsigned bytes x and signed bytes y.
inline __m256i lane_isums_us(__m256i x, __m256i y) {
    const __m256i pairs = _mm256_maddubs_epi16(x, y);  // no saturation: |x| <= 128, |y| <= 127
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// Same for signed x (moving x's sign onto y).
inline __m256i lane_isums_ss(__m256i x, __m256i y) {
    return lane_isums_us(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

inline __m256 lane_sums_us(__m256i x, __m256i y) { return _mm256_cvtepi32_ps(lane_isums_us(x, y)); }
inline __m256 lane_sums_ss(__m256i x, __m256i y) { return _mm256_cvtepi32_ps(lane_isums_ss(x, y)); }

inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

// The 32 quants of a 4-bit block: low nibbles as values 0..15, high as 16..31.
inline __m256i nibbles(const uint8_t* qs) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(lo, 4), lo);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 0xFF in byte j where bit j of the 32-bit mask is set.
inline __m256i bits_to_bytes(const uint8_t* qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    const __m256i shuffle = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), shuffle);
    bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

inline __m256i load32(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

inline float hsum8(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

template <typename W, typename A>
inline __m256 scale(const W& w, const A& a) {
    return _mm256_set1_ps(fp16_to_f32(w.d) * fp16_to_f32(a.d));
}

}  // namespace

float dot_q4_0_q8_0(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n / kQK32; ++i) {
        const __m256i qx = _mm256_sub_epi8(nibbles(x[i].qs), _mm256_set1_epi8(8));
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_ss(qx, load32(y[i].qs)), acc);
    }
    return hsum8(acc);
}

float dot_q4_0_q8_0_rows8(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float acc = 0.0f;
    for (size_t i = 0; i < n / kQK32; ++i) {
        const __m256i qx = _mm256_sub_epi8(nibbles(x[i].qs), _mm256_set1_epi8(8));
        const int sum = hsum_i32(lane_isums_ss(qx, load32(y[i].qs)));
        acc = std::fma(float(sum), fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d), acc);
    }
    return acc;
}

float dot_q4_1_q8_1(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (size_t i = 0; i < n / kQK32; ++i) {
        mins = std::fma(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), mins);
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_us(nibbles(x[i].qs), load32(y[i].qs)), acc);
    }
    return hsum8(acc) + mins;
}

float dot_q5_0_q8_0(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n / kQK32; ++i) {
        // A clear fifth bit means value - 16: set the high nibble to 0xF.
        const __m256i high = _mm256_andnot_si256(bits_to_bytes(x[i].qh), _mm256_set1_epi8(char(0xF0)));
        const __m256i qx = _mm256_or_si256(nibbles(x[i].qs), high);
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_ss(qx, load32(y[i].qs)), acc);
    }
    return hsum8(acc);
}

float dot_q5_1_q8_1(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (size_t i = 0; i < n / kQK32; ++i) {
        mins = std::fma(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), mins);
        const __m256i high = _mm256_and_si256(bits_to_bytes(x[i].qh), _mm256_set1_epi8(0x10));
        const __m256i qx = _mm256_or_si256(nibbles(x[i].qs), high);
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_us(qx, load32(y[i].qs)), acc);
    }
    return hsum8(acc) + mins;
}

float dot_q8_0_q8_0(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ8_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n / kQK32; ++i) {
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_ss(load32(x[i].qs), load32(y[i].qs)), acc);
    }
    return hsum8(acc);
}

}  // namespace smolinfer::quant::avx2

#endif
