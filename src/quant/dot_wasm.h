// WebAssembly SIMD128 versions of the reference dot products (see
// reference.h), in builds with -msimd128.
#pragma once

#include <cstddef>

namespace smolinfer::quant::wasm {

#if defined(__wasm_simd128__)
inline constexpr bool kAvailable = true;
float dot_q4_0_q8_0(size_t n, const void* w, const void* a);
float dot_q4_1_q8_1(size_t n, const void* w, const void* a);
float dot_q5_0_q8_0(size_t n, const void* w, const void* a);
float dot_q5_1_q8_1(size_t n, const void* w, const void* a);
float dot_q8_0_q8_0(size_t n, const void* w, const void* a);
#else
inline constexpr bool kAvailable = false;
#endif

}  // namespace smolinfer::quant::wasm
