// The matmul kernel for a weight type: which format the activation row is
// quantized to, the quantizer, and the weight-row x activation-row dot.
// Today these are the scalar references; SIMD kernels slot in here, each
// tested against the reference it replaces.
#pragma once

#include <cstddef>
#include <optional>

#include "quant/types.h"

namespace smolinfer::quant {

using QuantizeRowFn = void (*)(const float* x, void* dst, size_t n);
using DotFn = float (*)(size_t n, const void* w, const void* a);

struct MatmulKernel {
    Type weight;
    Type activation;           // block format the activation row is quantized to
    QuantizeRowFn quantize;    // float row -> activation format
    DotFn dot;                 // weight row . quantized activation row
};

// Kernel for weights of `weight` type; nullopt if weights of that type cannot
// be multiplied (Q8_1 and Q8_K exist only as activation formats).
std::optional<MatmulKernel> matmul_kernel(Type weight);

}  // namespace smolinfer::quant
