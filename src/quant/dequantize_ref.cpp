// Reference dequantization: block bytes -> float32 values. The arithmetic
// (and its order) is ggml's, so results are bit-identical to gguf/llama.cpp.
#include <cstdlib>
#include <cstring>

#include "quant/block_codes.h"
#include "quant/fp16.h"
#include "quant/reference.h"

namespace smolinfer::quant::ref {

namespace {

template <typename B>
void without_min(const B* x, float* y, size_t nb, size_t per_block) {
    for (size_t i = 0; i < nb; ++i, y += per_block) {
        const float d = fp16_to_f32(x[i].d);
        for (size_t j = 0; j < per_block; ++j) y[j] = float(codes::code(x[i], j)) * d;
    }
}

// value = code * d + m
template <typename B>
void with_min(const B* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK32) {
        const float d = fp16_to_f32(x[i].d);
        const float m = fp16_to_f32(x[i].m);
        for (size_t j = 0; j < kQK32; ++j) y[j] = float(codes::code(x[i], j)) * d + m;
    }
}

// K-quants with a minimum per group: value = (d * scale) * code - dmin * min
template <typename B>
void k_with_min(const B* x, float* y, size_t nb, size_t group) {
    for (size_t i = 0; i < nb; ++i, y += kQK256) {
        const float d = fp16_to_f32(x[i].d);
        const float dmin = fp16_to_f32(x[i].dmin);
        for (size_t g = 0; g < kQK256 / group; ++g) {
            const float dl = d * float(codes::scale(x[i], g));
            const float ml = dmin * float(codes::min(x[i], g));
            for (size_t l = 0; l < group; ++l) y[g * group + l] = dl * float(codes::code(x[i], g * group + l)) - ml;
        }
    }
}

// Q3_K and Q6_K: a signed scale per group of 16: value = (d * scale) * code
template <typename B>
void k_without_min(const B* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK256) {
        const float d = fp16_to_f32(x[i].d);
        for (size_t j = 0; j < kQK256; ++j) y[j] = d * float(codes::scale(x[i], j / 16)) * float(codes::code(x[i], j));
    }
}

void dequant_q8_1(const BlockQ8_1* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK32) {
        const float d = fp16_to_f32(x[i].d);
        for (size_t j = 0; j < kQK32; ++j) y[j] = float(x[i].qs[j]) * d;
    }
}

void dequant_q8_K(const BlockQ8_K* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK256) {
        for (size_t j = 0; j < kQK256; ++j) y[j] = x[i].d * float(x[i].qs[j]);
    }
}

}  // namespace

void dequantize_row(Type type, const void* src, float* dst, size_t n) {
    const size_t nb = n / traits(type).block_elems;
    switch (type) {
        case Type::F32:
            std::memcpy(dst, src, n * sizeof(float));
            return;
        case Type::F16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(s[i]);
            return;
        }
        case Type::BF16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
            return;
        }
        case Type::Q4_0: return without_min(static_cast<const BlockQ4_0*>(src), dst, nb, kQK32);
        case Type::Q4_1: return with_min(static_cast<const BlockQ4_1*>(src), dst, nb);
        case Type::Q5_0: return without_min(static_cast<const BlockQ5_0*>(src), dst, nb, kQK32);
        case Type::Q5_1: return with_min(static_cast<const BlockQ5_1*>(src), dst, nb);
        case Type::Q8_0: return without_min(static_cast<const BlockQ8_0*>(src), dst, nb, kQK32);
        case Type::Q8_1: return dequant_q8_1(static_cast<const BlockQ8_1*>(src), dst, nb);
        case Type::Q2_K: return k_with_min(static_cast<const BlockQ2_K*>(src), dst, nb, 16);
        case Type::Q3_K: return k_without_min(static_cast<const BlockQ3_K*>(src), dst, nb);
        case Type::Q4_K: return k_with_min(static_cast<const BlockQ4_K*>(src), dst, nb, 32);
        case Type::Q5_K: return k_with_min(static_cast<const BlockQ5_K*>(src), dst, nb, 32);
        case Type::Q6_K: return k_without_min(static_cast<const BlockQ6_K*>(src), dst, nb);
        case Type::Q8_K: return dequant_q8_K(static_cast<const BlockQ8_K*>(src), dst, nb);
    }
    std::abort();
}

}  // namespace smolinfer::quant::ref
