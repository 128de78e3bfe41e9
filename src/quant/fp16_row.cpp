// Rows of floats to IEEE halves (the KV cache's stores).
#include "quant/fp16.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#include "quant/wasm_simd.h"
#elif defined(__F16C__)
#include <immintrin.h>
#endif

namespace smolinfer::quant {

#if defined(__wasm_simd128__)
namespace {

// f32_to_fp16_soft for four lanes, each half in the low 16 bits of a lane:
// the same cases (NaN keeping its payload, infinity and overflow, normal
// numbers rounded on the float's bits, subnormals and zero) chosen by
// masks. Subnormal halves are multiples of 2^-24: |x| + 0.5 - 0.5 rounds
// to one (ties to even: 0.5's ulp is 2^-24), times 2^24 is the code.
inline v128_t halves_of(v128_t x) {
    const v128_t ax = wasm_v128_and(x, wasm_i32x4_splat(0x7fffffff));
    const v128_t sign = wasm_v128_and(wasm_u32x4_shr(x, 16), wasm_i32x4_splat(0x8000));
    const v128_t lsb = wasm_v128_and(wasm_u32x4_shr(ax, 13), wasm_i32x4_splat(1));
    const v128_t normal = wasm_i32x4_sub(wasm_u32x4_shr(wasm_i32x4_add(ax, wasm_i32x4_add(wasm_i32x4_splat(0x0fff), lsb)), 13),
                                         wasm_i32x4_splat(112 << 10));
    const v128_t tiny_f = wasm_f32x4_sub(wasm_f32x4_add(ax, wasm_f32x4_splat(0.5f)), wasm_f32x4_splat(0.5f));
    const v128_t tiny = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_mul(tiny_f, wasm_f32x4_splat(0x1p24f)));
    const v128_t nan = wasm_v128_or(wasm_i32x4_splat(0x7e00), wasm_v128_and(wasm_u32x4_shr(ax, 13), wasm_i32x4_splat(0x3ff)));
    v128_t h = wasm_v128_bitselect(normal, tiny, wasm_i32x4_ge(ax, wasm_i32x4_splat(0x38800000)));
    h = wasm_v128_bitselect(wasm_i32x4_splat(0x7c00), h, wasm_i32x4_ge(ax, wasm_i32x4_splat(0x477ff000)));
    h = wasm_v128_bitselect(nan, h, wasm_i32x4_gt(ax, wasm_i32x4_splat(0x7f800000)));
    return wasm_v128_or(h, sign);
}

}  // namespace
#endif

void f32_to_fp16_row(const float* x, uint16_t* y, size_t n) {
    size_t i = 0;
#if defined(__wasm_simd128__)
    for (; i + 8 <= n; i += 8) {
        const v128_t lo = halves_of(wasm_v128_load(x + i)), hi = halves_of(wasm_v128_load(x + i + 4));
        wasm_v128_store(y + i, wasm_u16x8_narrow_i32x4(lo, hi));
    }
#endif
    for (; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}

void fp16_to_f32_row(const uint16_t* x, float* y, size_t n) {
    size_t i = 0;
#if defined(__wasm_simd128__)
    for (; i + 8 <= n; i += 8) {
        const v128_t h = wasm_v128_load(x + i);
        wasm_v128_store(y + i, wasm::halves_to_f32(wasm_u32x4_extend_low_u16x8(h)));
        wasm_v128_store(y + i + 4, wasm::halves_to_f32(wasm_u32x4_extend_high_u16x8(h)));
    }
#elif defined(__F16C__)
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
    }
#endif
    for (; i < n; ++i) y[i] = fp16_to_f32(x[i]);
}

}  // namespace smolinfer::quant
