// The matmul kernel for a weight type: which format the activation row is
// quantized to, the quantizer, and the weight-row x activation-row dot.
// Every instruction-set variant computes bit-identical results to the
// scalar reference (same lanes, same fused multiply-adds, same sum order).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "quant/types.h"

namespace smolinfer::quant {

using QuantizeRowFn = void (*)(const float* x, void* dst, size_t n);
using DotFn = float (*)(size_t n, const void* w, const void* a);

struct MatmulKernel {
    Type weight;
    Type activation;         // block format the activation row is quantized to
    QuantizeRowFn quantize;  // float row -> activation format
    DotFn dot;               // weight row . quantized activation row
    // For batches, llama.cpp sums some formats in another order: F16/F32
    // (its GEMM, every token of a batch of two or more) and interleaved Q4_K
    // (tokens taken four at a time). Tokens [0, n - n % batch_group) of a
    // batch of n >= 2 use dot_batched; null when `dot` serves every token.
    DotFn dot_batched = nullptr;
    int batch_group = 1;
};

enum class Isa {
    Reference,  // portable scalar code
    Avx2,       // x86-64 AVX2 + FMA
    WasmSimd,   // WebAssembly SIMD128
};

// The fastest variant this build and this CPU support.
Isa best_isa();
std::string_view isa_name(Isa isa);

// Kernel for a matrix of `rows` rows of `cols` values of `weight` type (the
// shape decides which of llama.cpp's kernels would run, and so its summation
// order); nullopt if weights of that type cannot be multiplied (Q8_1 and Q8_K
// exist only as activation formats).
std::optional<MatmulKernel> matmul_kernel(Type weight, int rows, int cols, Isa isa = best_isa());

}  // namespace smolinfer::quant
