// Reference dot products of the 256-value K-quant formats with Q8_K
// activations, in the order llama.cpp's x86 kernels sum (see lanes.h for why
// the order matters). Integer sums are exact; what is reproduced is where
// they turn into floats and how those floats are added.
//
// The AVX2 kernels (ggml_vec_dot_qN_K_q8_K) work on 32-value slices: value e
// lands in 32-bit lane (e % 32) / 4, each lane's integer total of a block is
// converted to float and added to the lane's running sum with one fused
// multiply-add by d; the lanes are reduced by hsum8 at the end.
#include <cstdint>

#include "quant/block_codes.h"
#include "quant/exact_fma.h"
#include "quant/fp16.h"
#include "quant/lanes.h"
#include "quant/reference.h"

namespace smolinfer::quant::ref {

namespace {

constexpr int lane_of(size_t e) { return int(e % 32) / 4; }

// Sum of the activation codes of 32-value group g.
int group_sum32(const BlockQ8_K& a, size_t g) { return a.bsums[2 * g] + a.bsums[2 * g + 1]; }

// Lane totals of scale(group) * code * activation over one block.
template <typename B>
void scaled_lanes(const B& x, const BlockQ8_K& y, size_t group, int32_t lanes[8]) {
    for (int l = 0; l < 8; ++l) lanes[l] = 0;
    for (size_t e = 0; e < kQK256; ++e) lanes[lane_of(e)] += codes::scale(x, e / group) * codes::code(x, e) * y.qs[e];
}

// Integer sum over 32-value groups [g0, g1) of scale * code * activation,
// and of min * (sum of the group's activations).
template <typename B>
void group_sums(const B& x, const BlockQ8_K& y, size_t g0, size_t g1, int32_t* scaled, int32_t* mins) {
    *scaled = 0;
    *mins = 0;
    for (size_t g = g0; g < g1; ++g) {
        int32_t s = 0;
        for (size_t e = 32 * g; e < 32 * g + 32; ++e) s += codes::code(x, e) * y.qs[e];
        *scaled += codes::scale(x, g) * s;
        *mins += codes::min(x, g) * group_sum32(y, g);
    }
}

// Q2_K and Q3_K: exact integer sums, float steps in plain order (no file
// smolinfer writes uses them; llama.cpp sums them differently).
template <typename B, bool kHasMin>
float dot_k_plain(size_t n, const B* x, const BlockQ8_K* y) {
    float sum = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        int isum = 0;
        int msum = 0;
        for (size_t g = 0; g < kQK256 / 16; ++g) {
            int gsum = 0;
            for (size_t l = 0; l < 16; ++l) gsum += codes::code(x[i], g * 16 + l) * y[i].qs[g * 16 + l];
            isum += codes::scale(x[i], g) * gsum;
            if constexpr (kHasMin) msum += codes::min(x[i], g) * (y[i].bsums[g]);
        }
        sum += y[i].d * fp16_to_f32(x[i].d) * float(isum);
        if constexpr (kHasMin) sum -= y[i].d * fp16_to_f32(x[i].dmin) * float(msum);
    }
    return sum;
}

}  // namespace

float dot_q2_K_q8_K(size_t n, const void* w, const void* a) {
    return dot_k_plain<BlockQ2_K, true>(n, static_cast<const BlockQ2_K*>(w), static_cast<const BlockQ8_K*>(a));
}

float dot_q3_K_q8_K(size_t n, const void* w, const void* a) {
    return dot_k_plain<BlockQ3_K, false>(n, static_cast<const BlockQ3_K*>(w), static_cast<const BlockQ8_K*>(a));
}

// Minimums: four lanes, lane m holding groups 2m and 2m+1, reduced as
// (m0 + m2) + (m1 + m3).
float dot_q4_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc[8] = {};
    float acc_min[4] = {};
    for (size_t i = 0; i < n / kQK256; ++i) {
        const float d = y[i].d * fp16_to_f32(x[i].d);
        const float dmin = -y[i].d * fp16_to_f32(x[i].dmin);
        for (size_t m = 0; m < 4; ++m) {
            const int32_t mins = codes::min(x[i], 2 * m) * group_sum32(y[i], 2 * m) +
                                 codes::min(x[i], 2 * m + 1) * group_sum32(y[i], 2 * m + 1);
            acc_min[m] = exact_fma(dmin, float(mins), acc_min[m]);
        }
        int32_t lanes[8];
        scaled_lanes(x[i], y[i], 32, lanes);
        for (int l = 0; l < 8; ++l) acc[l] = exact_fma(d, float(lanes[l]), acc[l]);
    }
    return hsum8(acc) + ((acc_min[0] + acc_min[2]) + (acc_min[1] + acc_min[3]));
}

// Minimums: one scalar fused multiply-add chain.
float dot_q5_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc[8] = {};
    float acc_min = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        const float d = y[i].d * fp16_to_f32(x[i].d);
        const float dmin = -y[i].d * fp16_to_f32(x[i].dmin);
        int32_t mins = 0;
        for (size_t g = 0; g < 8; ++g) mins += codes::min(x[i], g) * group_sum32(y[i], g);
        acc_min = exact_fma(dmin, float(mins), acc_min);
        int32_t lanes[8];
        scaled_lanes(x[i], y[i], 32, lanes);
        for (int l = 0; l < 8; ++l) acc[l] = exact_fma(d, float(lanes[l]), acc[l]);
    }
    return hsum8(acc) + acc_min;
}

// Q6_K's kernel multiplies the unsigned codes (0..63) and takes the bias of
// 32 off each lane afterwards, by 32-value slices of the block rather than by
// lane: lane m loses 32 * (scaled activation sum of values 32m..32m+31).
float dot_q6_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc[8] = {};
    for (size_t i = 0; i < n / kQK256; ++i) {
        const float d = y[i].d * fp16_to_f32(x[i].d);
        int32_t lanes[8] = {};
        for (size_t e = 0; e < kQK256; ++e) {
            lanes[lane_of(e)] += codes::scale(x[i], e / 16) * (codes::code(x[i], e) + 32) * y[i].qs[e];
        }
        for (int m = 0; m < 8; ++m) {
            lanes[m] -= 32 * (y[i].bsums[2 * m] * codes::scale(x[i], 2 * m) +
                              y[i].bsums[2 * m + 1] * codes::scale(x[i], 2 * m + 1));
        }
        for (int l = 0; l < 8; ++l) acc[l] = exact_fma(d, float(lanes[l]), acc[l]);
    }
    return hsum8(acc);
}

// Q4_K matrices whose rows llama.cpp interleaves in groups of 8: one chain
// for the scaled sums and one for the minimums, a step per block, subtracted
// at the end...
float dot_q4_K_q8_K_rows8(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0.0f;
    float acc_min = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        int32_t scaled, mins;
        group_sums(x[i], y[i], 0, 8, &scaled, &mins);
        acc = exact_fma(float(scaled), fp16_to_f32(x[i].d) * y[i].d, acc);
        acc_min = exact_fma(float(mins), fp16_to_f32(x[i].dmin) * y[i].d, acc_min);
    }
    return acc - acc_min;
}

// ...and when four tokens go through together, a step per 64 values.
float dot_q4_K_q8_K_rows8_tokens4(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0.0f;
    float acc_min = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        const float d = fp16_to_f32(x[i].d) * y[i].d;
        const float dmin = fp16_to_f32(x[i].dmin) * y[i].d;
        for (size_t g = 0; g < 8; g += 2) {
            int32_t scaled, mins;
            group_sums(x[i], y[i], g, g + 2, &scaled, &mins);
            acc = exact_fma(float(scaled), d, acc);
            acc_min = exact_fma(float(mins), dmin, acc_min);
        }
    }
    return acc - acc_min;
}

}  // namespace smolinfer::quant::ref
