// AVX2 + FMA dot products of the K-quant formats with Q8_K activations,
// bit-identical to dot_kquant_ref.cpp (and so to llama.cpp): 32 values per
// register, value e in 32-bit lane (e % 32) / 4, integer lane totals turned
// into floats where llama.cpp does.
#include "quant/dot_avx2.h"

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cmath>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/simd_avx2.h"

namespace smolinfer::quant::avx2 {

namespace {

// 32 unsigned codes (< 64) times 32 activations, times one 16-bit scale per
// 16 values, in 8 lanes of 4 consecutive values.
inline __m256i scaled_products(__m256i codes, __m256i act, __m256i scales16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(codes, act), scales16);
}

inline __m256i broadcast16(int s) { return _mm256_set1_epi16(int16_t(s)); }

struct ScalesMins {
    uint8_t scale[8];
    uint8_t min[8];
};

inline ScalesMins unpack(const uint8_t* q) {
    ScalesMins sm;
    for (int j = 0; j < 8; ++j) k_scale_min(j, q, &sm.scale[j], &sm.min[j]);
    return sm;
}

inline int group_sum32(const BlockQ8_K& a, int g) { return a.bsums[2 * g] + a.bsums[2 * g + 1]; }

// Q4_K: values 64j..64j+63 as the low and high nibbles of qs[32j..32j+31],
// groups 2j and 2j+1, scaled; 8 lanes.
inline __m256i q4_K_pair(const BlockQ4_K& x, const BlockQ8_K& y, const ScalesMins& sm, int j) {
    const __m256i q = load32(x.qs + 32 * j);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(q, m4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    return _mm256_add_epi32(scaled_products(lo, load32(y.qs + 64 * j), broadcast16(sm.scale[2 * j])),
                            scaled_products(hi, load32(y.qs + 64 * j + 32), broadcast16(sm.scale[2 * j + 1])));
}

inline __m256i q4_K_block(const BlockQ4_K& x, const BlockQ8_K& y, const ScalesMins& sm) {
    __m256i sum = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) sum = _mm256_add_epi32(sum, q4_K_pair(x, y, sm, j));
    return sum;
}

}  // namespace

float dot_q4_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    for (size_t i = 0; i < n / kQK256; ++i) {
        const ScalesMins sm = unpack(x[i].scales);
        const float d = y[i].d * fp16_to_f32(x[i].d);
        const float dmin = -y[i].d * fp16_to_f32(x[i].dmin);
        int mins[4];
        for (int m = 0; m < 4; ++m) {
            mins[m] = sm.min[2 * m] * group_sum32(y[i], 2 * m) + sm.min[2 * m + 1] * group_sum32(y[i], 2 * m + 1);
        }
        const __m128 mins_f = _mm_cvtepi32_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mins)));
        acc_min = _mm_fmadd_ps(_mm_set1_ps(dmin), mins_f, acc_min);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(q4_K_block(x[i], y[i], sm)), acc);
    }
    acc_min = _mm_add_ps(acc_min, _mm_movehl_ps(acc_min, acc_min));
    acc_min = _mm_add_ss(acc_min, _mm_movehdup_ps(acc_min));
    return hsum8(acc) + _mm_cvtss_f32(acc_min);
}

// Per block one integer total of scale * code * activation and one of
// min * (group sum of the activations), out of one shared reduction; the
// block is asked for kDotPrefetchDistance ahead (decoding streams the
// weights from memory).
float dot_q4_K_q8_K_rows8(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0.0f, acc_min = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        prefetch_ahead(x + i, sizeof(BlockQ4_K));
        uint64_t sc, mn;
        k_scales_mins8(x[i].scales, &sc, &mn);
        const __m256i scaled = q4_K_scaled_lanes(x[i], y[i], sc);
        const __m256i mins = k_mins_lanes(mn, y[i]);
        // [s01 s23 m01 m23 | s45 s67 m45 m67] -> [s0123 m0123 0 0 | s4567 m4567 0 0]
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(scaled, mins), _mm256_setzero_si256());
        const __m128i t = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        const float yd = y[i].d;
        acc = std::fma(float(_mm_cvtsi128_si32(t)), fp16_to_f32(x[i].d) * yd, acc);
        acc_min = std::fma(float(_mm_extract_epi32(t, 1)), fp16_to_f32(x[i].dmin) * yd, acc_min);
    }
    return acc - acc_min;
}

float dot_q4_K_q8_K_rows8_tokens4(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0.0f;
    float acc_min = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        const ScalesMins sm = unpack(x[i].scales);
        const float d = fp16_to_f32(x[i].d) * y[i].d;
        const float dmin = fp16_to_f32(x[i].dmin) * y[i].d;
        for (int j = 0; j < 4; ++j) {
            const int mins = sm.min[2 * j] * group_sum32(y[i], 2 * j) + sm.min[2 * j + 1] * group_sum32(y[i], 2 * j + 1);
            acc = std::fma(float(hsum_i32(q4_K_pair(x[i], y[i], sm, j))), d, acc);
            acc_min = std::fma(float(mins), dmin, acc_min);
        }
    }
    return acc - acc_min;
}

float dot_q5_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    __m256 acc = _mm256_setzero_ps();
    float acc_min = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        prefetch_ahead(x + i, sizeof(BlockQ5_K));
        uint64_t sc, mn;
        k_scales_mins8(x[i].scales, &sc, &mn);
        const float d = y[i].d * fp16_to_f32(x[i].d);
        const float dmin = -y[i].d * fp16_to_f32(x[i].dmin);
        acc_min = std::fma(dmin, float(hsum_i32(k_mins_lanes(mn, y[i]))), acc_min);
        __m256i codes[8];
        q5_K_codes(x[i], codes);
        __m256i sum = _mm256_setzero_si256();
        for (int c = 0; c < 8; ++c) {
            sum = _mm256_add_epi32(sum, scaled_products(codes[c], load32(y[i].qs + 32 * c), broadcast_scale(sc, c)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sum), acc);
    }
    return hsum8(acc) + acc_min;
}

// Codes are taken unsigned (0..63); the bias of 32 comes off per 32-value
// slice through the activation sums, as llama.cpp does it.
float dot_q6_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n / kQK256; ++i) {
        prefetch_ahead(x + i, sizeof(BlockQ6_K));
        __m256i codes[8], scales[8];
        q6_K_codes(x[i], codes);
        q6_K_slice_scales(x[i], scales);
        const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales)));
        const float d = y[i].d * fp16_to_f32(x[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(q6_K_lanes(codes, scales, scales16, y[i])), acc);
    }
    return hsum8(acc);
}

}  // namespace smolinfer::quant::avx2

#endif
