// Scalar reference kernels: dequantization of every block format, quantization
// of activations to the int8 formats, and weight-row x activation-row dot
// products. They are the oracle for the SIMD kernels and stay in the tree.
//
// Dot products follow ggml's pairing of weight and activation formats
// ("vec_dot_type"): Q4_0/Q5_0/Q8_0 with Q8_0, Q4_1/Q5_1 with Q8_1, K-quants
// with Q8_K, F16 with F16, BF16 with BF16, F32 with F32. Sums inside a block
// are exact integers; only the per-block scaling is float32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace smolinfer::quant::ref {

// n values from a row of `type`; n is a multiple of the block size.
void dequantize_row(Type type, const void* src, float* dst, size_t n);

// Activation quantizers, rounding as llama.cpp does on x86 (ties to even).
void quantize_row_q8_0(const float* x, void* dst, size_t n);
void quantize_row_q8_1(const float* x, void* dst, size_t n);
void quantize_row_q8_K(const float* x, void* dst, size_t n);
void quantize_row_f16(const float* x, void* dst, size_t n);
void quantize_row_bf16(const float* x, void* dst, size_t n);
void quantize_row_f32(const float* x, void* dst, size_t n);

// Dot product of n values: weight row `w` (type named first) with an
// activation row `a` already quantized to the paired format, summed in the
// order of llama.cpp's x86 kernel for the pair.
float dot_q4_0_q8_0(size_t n, const void* w, const void* a);
float dot_q4_1_q8_1(size_t n, const void* w, const void* a);
float dot_q5_0_q8_0(size_t n, const void* w, const void* a);
float dot_q5_1_q8_1(size_t n, const void* w, const void* a);
float dot_q8_0_q8_0(size_t n, const void* w, const void* a);
float dot_q2_K_q8_K(size_t n, const void* w, const void* a);
float dot_q3_K_q8_K(size_t n, const void* w, const void* a);
float dot_q4_K_q8_K(size_t n, const void* w, const void* a);
float dot_q5_K_q8_K(size_t n, const void* w, const void* a);
float dot_q6_K_q8_K(size_t n, const void* w, const void* a);
// The orders llama.cpp uses for Q4_0 and Q4_K matrices whose rows it
// interleaves in groups of 8 (row count a multiple of 8): one fused
// multiply-add chain per output; for Q4_K a step per block for a token on its
// own and a step per 64 values for tokens taken four at a time.
float dot_q4_0_q8_0_rows8(size_t n, const void* w, const void* a);
float dot_q4_K_q8_K_rows8(size_t n, const void* w, const void* a);
float dot_q4_K_q8_K_rows8_tokens4(size_t n, const void* w, const void* a);
// F16 and F32 follow llama.cpp's AVX-512 build: ggml_vec_dot_* for one
// token, tinyBLAS (its GEMM; row length a multiple of 16) for batches.
float dot_f16_f16(size_t n, const void* w, const void* a);
float dot_f16_f16_tinyblas(size_t n, const void* w, const void* a);
float dot_bf16_bf16(size_t n, const void* w, const void* a);
float dot_f32_f32(size_t n, const void* w, const void* a);
float dot_f32_f32_tinyblas(size_t n, const void* w, const void* a);

}  // namespace smolinfer::quant::ref
