// fma(a, b, c) = a * b + c with a single rounding, fast on every target.
// x86-64-v3 has the instruction. Plain WebAssembly has none; there the
// product is formed exactly in double (24 + 24 bits fit in 53), the sum
// rounded to odd in double, and that rounded to float: two roundings that
// give the correctly rounded result, because double has more than 24 + 2
// bits. The relaxed-SIMD build uses f32x4.relaxed_madd, fused wherever the
// CPU has FMA (the browser worker checks before it calls the result exact).
#pragma once

#if defined(__wasm_relaxed_simd__)
#include <wasm_simd128.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstring>

namespace smolinfer::quant {

inline float fma_via_double(float a, float b, float c) {
    const double p = double(a) * double(b);
    const double s = p + double(c);
    // Infinite or NaN: already what fma gives (the error term below would be NaN).
    if (!std::isfinite(s)) return float(s);
    // s + e == p + c exactly (Knuth's two-sum).
    const double bp = s - p;
    const double e = (p - (s - bp)) + (double(c) - bp);
    uint64_t bits;
    std::memcpy(&bits, &s, 8);
    if (e != 0.0 && (bits & 1) == 0) {
        // Inexact and even: step one ulp toward the exact value (the odd neighbour).
        bits += (std::signbit(e) == std::signbit(s)) ? uint64_t(1) : ~uint64_t(0);
        double odd;
        std::memcpy(&odd, &bits, 8);
        return float(odd);
    }
    return float(s);
}

inline float exact_fma(float a, float b, float c) {
#if defined(__wasm_relaxed_simd__)
    return wasm_f32x4_extract_lane(
        wasm_f32x4_relaxed_madd(wasm_f32x4_splat(a), wasm_f32x4_splat(b), wasm_f32x4_splat(c)), 0);
#elif defined(__wasm__)
    return fma_via_double(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}

}  // namespace smolinfer::quant
