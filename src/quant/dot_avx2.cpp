// AVX2 + FMA dot products for the 32-value formats. Each is bit-identical
// to its reference in dot_ref.cpp (same lanes, same fused multiply-adds,
// same hsum8 tree); tests/test_quant_kernels.cpp checks that on random blocks.
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
        prefetch_ahead(x + i, sizeof(x[i]));
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_ss(codes(x[i]), load32(y[i].qs)), acc);
    }
    return hsum8(acc);
}

float dot_q4_0_q8_0_rows8(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float acc = 0.0f;
    for (size_t i = 0; i < n / kQK32; ++i) {
        prefetch_ahead(x + i, sizeof(x[i]));
        const int sum = hsum_i32(lane_isums_ss(codes(x[i]), load32(y[i].qs)));
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
        prefetch_ahead(x + i, sizeof(x[i]));
        mins = std::fma(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), mins);
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_us(codes(x[i]), load32(y[i].qs)), acc);
    }
    return hsum8(acc) + mins;
}

float dot_q5_0_q8_0(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n / kQK32; ++i) {
        prefetch_ahead(x + i, sizeof(x[i]));
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_ss(codes(x[i]), load32(y[i].qs)), acc);
    }
    return hsum8(acc);
}

float dot_q5_1_q8_1(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (size_t i = 0; i < n / kQK32; ++i) {
        prefetch_ahead(x + i, sizeof(x[i]));
        mins = std::fma(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), mins);
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_us(codes(x[i]), load32(y[i].qs)), acc);
    }
    return hsum8(acc) + mins;
}

float dot_q8_0_q8_0(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ8_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n / kQK32; ++i) {
        prefetch_ahead(x + i, sizeof(x[i]));
        acc = _mm256_fmadd_ps(scale(x[i], y[i]), lane_sums_ss(codes(x[i]), load32(y[i].qs)), acc);
    }
    return hsum8(acc);
}

}  // namespace smolinfer::quant::avx2

#endif
