// AVX2 + FMA versions of the reference dot products and activation
// quantizers (see reference.h),
// available when the build targets x86-64-v3.
#pragma once

#include <cstddef>

namespace smolinfer::quant::avx2 {

#if defined(__AVX2__) && defined(__FMA__)
inline constexpr bool kAvailable = true;
float dot_q4_0_q8_0(size_t n, const void* w, const void* a);
float dot_q4_0_q8_0_rows8(size_t n, const void* w, const void* a);
float dot_q4_1_q8_1(size_t n, const void* w, const void* a);
float dot_q5_0_q8_0(size_t n, const void* w, const void* a);
float dot_q5_1_q8_1(size_t n, const void* w, const void* a);
float dot_q8_0_q8_0(size_t n, const void* w, const void* a);
// K-quants (dot_kquant_avx2.cpp).
float dot_q4_K_q8_K(size_t n, const void* w, const void* a);
float dot_q4_K_q8_K_rows8(size_t n, const void* w, const void* a);
float dot_q4_K_q8_K_rows8_tokens4(size_t n, const void* w, const void* a);
float dot_q5_K_q8_K(size_t n, const void* w, const void* a);
float dot_q6_K_q8_K(size_t n, const void* w, const void* a);
// Activation quantizers (quantize_act_avx2.cpp), bit-identical to ref::'s.
void quantize_row_q8_0(const float* x, void* dst, size_t n);
void quantize_row_q8_1(const float* x, void* dst, size_t n);
#else
inline constexpr bool kAvailable = false;
#endif

}  // namespace smolinfer::quant::avx2
