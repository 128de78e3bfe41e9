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

}  // namespace

float dot_q4_0_q8_0(size_t n, const void* w, const void* a) {
    return dot_blocks32(n, static_cast<const BlockQ4_0*>(w), static_cast<const BlockQ8_0*>(a));
}

// llama.cpp interleaves the rows of a Q4_0 matrix in groups of 8 when their
// count allows, and its kernels for that layout keep one fused multiply-add
// chain per output, one step per block.
float dot_q4_0_q8_0_rows8(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float acc = 0.0f;
    for (size_t i = 0; i < n / kQK32; ++i) {
        int sum = 0;
        for (size_t k = 0; k < kQK32; ++k) sum += codes::code(x[i], k) * y[i].qs[k];
        acc = exact_fma(float(sum), fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d), acc);
    }
    return acc;
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

// Half weights times half activations: both factors have 11 significant
// bits, so every product is exact and multiply-then-add equals the fused form.
float dot_f16_f16(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const uint16_t*>(a);
    const int len = int(n);
    auto term = [&](int i) { return fp16_to_f32(x[i]) * fp16_to_f32(y[i]); };
    return float(sum_vec_dot_order<double>(
        len, len / 64 * 64, [&](float acc, int i) { return acc + term(i); },
        [&](double sum, int i) { return sum + double(term(i)); }));
}

float dot_f16_f16_tinyblas(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const uint16_t*>(a);
    return sum_tinyblas_order(int(n), [&](float acc, int i) { return acc + fp16_to_f32(x[i]) * fp16_to_f32(y[i]); });
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
    const int len = int(n);
    const int vector_end = len / 64 * 64;
    // The tail loop (sumf += x[i]*y[i]), as the zen4 library's compiler
    // vectorised it (objdump of libggml-cpu-zen4.so): blocks of 16, then one
    // of 8, whose products are rounded and added one at a time; the last
    // values, fewer than 8, each a fused multiply-add.
    const int fused_from = vector_end + (len - vector_end) / 8 * 8;
    return sum_vec_dot_order<float>(
        len, vector_end, [&](float acc, int i) { return exact_fma(x[i], y[i], acc); },
        [&](float sum, int i) { return i < fused_from ? sum + x[i] * y[i] : exact_fma(x[i], y[i], sum); });
}

float dot_f32_f32_tinyblas(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const float*>(w);
    const auto* y = static_cast<const float*>(a);
    return sum_tinyblas_order(int(n), [&](float acc, int i) { return exact_fma(x[i], y[i], acc); });
}

}  // namespace smolinfer::quant::ref
