// Reference dot products of a quantized weight row with a quantized
// activation row. Within a block everything is an exact integer sum; the
// float arithmetic around it follows llama.cpp's x86 kernels (see lanes.h).
#include <cmath>

#include "quant/block_codes.h"
#include "quant/exact_fma.h"
#include "quant/fp16.h"
#include "quant/lanes.h"
#include "quant/reference.h"

namespace smolinfer::quant::ref {

namespace {

// The 32-value formats all have llama.cpp's x86 kernel shape: lane j (of 8)
// takes the exact integer sum of products 4j..4j+3 of each block and
// accumulates it times d_w * d_a with a fused multiply-add; the lanes are
// summed with hsum8 at the end.
template <typename WBlock, typename ABlock>
float dot_blocks32(size_t n, const WBlock* x, const ABlock* y) {
    float lanes[8] = {};
    for (size_t i = 0; i < n / kQK32; ++i) {
        const float dd = fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d);
        for (int j = 0; j < 8; ++j) {
            int sum = 0;
            for (int k = 4 * j; k < 4 * j + 4; ++k) sum += codes::code(x[i], size_t(k)) * y[i].qs[k];
            lanes[j] = exact_fma(dd, float(sum), lanes[j]);
        }
    }
    return hsum8(lanes);
}

// With a minimum m: sum((q*d + m) * a) = d*da*sum(q*qa) + m*(da*sum(qa)) =
// ... + m*s; the m*s terms form their own fused multiply-add chain.
template <typename WBlock, typename ABlock>
float min_terms(size_t n, const WBlock* x, const ABlock* y) {
    float sum = 0.0f;
    for (size_t i = 0; i < n / kQK32; ++i) sum = exact_fma(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), sum);
    return sum;
}

// Sum of the activation codes of group g of `size` values (from bsums, 16 each).
int act_sum(const BlockQ8_K& a, size_t g, size_t size) {
    int s = 0;
    for (size_t k = g * size / 16; k < (g + 1) * size / 16; ++k) s += a.bsums[k];
    return s;
}

// K-quants: per group, the integer dot times the group's integer scale; a
// minimum's share (dmin * min * sum of activation codes) uses the bsums.
// TODO(K-quant parity): these sums are exact but the float steps do not yet
// follow llama.cpp's AVX2 K-quant kernels.
template <typename B, bool kHasMin>
float dot_k(size_t n, const B* x, const BlockQ8_K* y, size_t group) {
    float sum = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        int isum = 0;
        int msum = 0;
        for (size_t g = 0; g < kQK256 / group; ++g) {
            int gsum = 0;
            for (size_t l = 0; l < group; ++l) gsum += codes::code(x[i], g * group + l) * y[i].qs[g * group + l];
            isum += codes::scale(x[i], g) * gsum;
            if constexpr (kHasMin) msum += codes::min(x[i], g) * act_sum(y[i], g, group);
        }
        sum += y[i].d * fp16_to_f32(x[i].d) * float(isum);
        if constexpr (kHasMin) sum -= y[i].d * fp16_to_f32(x[i].dmin) * float(msum);
    }
    return sum;
}

}  // namespace

float dot_q4_0_q8_0(size_t n, const void* w, const void* a) {
    return dot_blocks32(n, static_cast<const BlockQ4_0*>(w), static_cast<const BlockQ8_0*>(a));
}

float dot_q4_1_q8_1(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    return dot_blocks32(n, x, y) + min_terms(n, x, y);
}

float dot_q5_0_q8_0(size_t n, const void* w, const void* a) {
    return dot_blocks32(n, static_cast<const BlockQ5_0*>(w), static_cast<const BlockQ8_0*>(a));
}

float dot_q5_1_q8_1(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    return dot_blocks32(n, x, y) + min_terms(n, x, y);
}

float dot_q8_0_q8_0(size_t n, const void* w, const void* a) {
    return dot_blocks32(n, static_cast<const BlockQ8_0*>(w), static_cast<const BlockQ8_0*>(a));
}

float dot_q2_K_q8_K(size_t n, const void* w, const void* a) {
    return dot_k<BlockQ2_K, true>(n, static_cast<const BlockQ2_K*>(w), static_cast<const BlockQ8_K*>(a), 16);
}

float dot_q3_K_q8_K(size_t n, const void* w, const void* a) {
    return dot_k<BlockQ3_K, false>(n, static_cast<const BlockQ3_K*>(w), static_cast<const BlockQ8_K*>(a), 16);
}

float dot_q4_K_q8_K(size_t n, const void* w, const void* a) {
    return dot_k<BlockQ4_K, true>(n, static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(a), 32);
}

float dot_q5_K_q8_K(size_t n, const void* w, const void* a) {
    return dot_k<BlockQ5_K, true>(n, static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(a), 32);
}

float dot_q6_K_q8_K(size_t n, const void* w, const void* a) {
    return dot_k<BlockQ6_K, false>(n, static_cast<const BlockQ6_K*>(w), static_cast<const BlockQ8_K*>(a), 16);
}

float dot_f16_f16(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const uint16_t*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += fp16_to_f32(x[i]) * fp16_to_f32(y[i]);
    return sum;
}

float dot_bf16_bf16(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const uint16_t*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    return sum;
}

float dot_f32_f32(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const float*>(w);
    const auto* y = static_cast<const float*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

}  // namespace smolinfer::quant::ref
