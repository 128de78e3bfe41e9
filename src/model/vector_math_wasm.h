// Four lanes at a time, bit-identical to the scalar forms in exp_approx.h
// and quant/fp16.h, for the WebAssembly builds: exp_approx (softmax, SiLU)
// and the rounding of a float to half precision and back (attention's
// weights). Fused multiply-adds go through the build's exact flavour:
// relaxed_madd in the relaxed-SIMD build (exact where it fuses, as the
// worker checks), the double-precision emulation in the plain build -- both
// of its modes keep these steps exact; only its matmuls have a fast mode.
#pragma once

#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include "quant/wasm_simd.h"

namespace smolinfer::model::wasm {

#if defined(__wasm_relaxed_simd__)
using ExactMadd = quant::wasm::Relaxed;
#else
using ExactMadd = quant::wasm::Exact;
#endif

inline v128_t madd(v128_t a, v128_t b, v128_t c) { return ExactMadd::madd(a, b, c); }
inline v128_t splat(float x) { return wasm_f32x4_splat(x); }

// 2^k for integral k in [-126, 127], as float bits.
inline v128_t pow2(v128_t k_int) { return wasm_i32x4_shl(wasm_i32x4_add(k_int, wasm_i32x4_splat(127)), 23); }

// exp_approx of four lanes. ldexp(j, n) with |n| <= 192 as two scalings, the
// first exact (j * 2^n2 stays a normal float), the second rounding once like
// ldexp: n = n1 + n2 with n1 = clamp(n, -126, 127).
inline v128_t exp_approx4(v128_t x) {
    const v128_t r = splat(0x1.8p23f);
    const v128_t z = madd(x, splat(0x1.715476p+0f), r);
    const v128_t n = wasm_f32x4_sub(z, r);  // round(x / ln 2)
    const v128_t neg_n = wasm_f32x4_neg(n);
    const v128_t b = madd(neg_n, splat(0x1.7f7d1cp-20f), madd(neg_n, splat(0x1.62e4p-1f), x));
    const v128_t u = wasm_f32x4_mul(b, b);
    const v128_t j = madd(madd(madd(splat(0x1.0e4020p-7f), b, splat(0x1.573e2ep-5f)), u,
                               madd(splat(0x1.555e66p-3f), b, splat(0x1.fffdb6p-2f))),
                          u, madd(splat(0x1.ffffecp-1f), b, splat(1.0f)));
    // |n| <= 192 here (the lanes outside are replaced below); n is integral.
    const v128_t in_range = wasm_f32x4_le(wasm_f32x4_abs(n), splat(192.0f));
    const v128_t ni = wasm_i32x4_trunc_sat_f32x4(wasm_v128_and(n, in_range));
    const v128_t n1 = wasm_i32x4_min(wasm_i32x4_max(ni, wasm_i32x4_splat(-126)), wasm_i32x4_splat(127));
    const v128_t n2 = wasm_i32x4_sub(ni, n1);
    const v128_t scaled = wasm_f32x4_mul(wasm_f32x4_mul(j, pow2(n2)), pow2(n1));
    // Out of range, or NaN: NaN stays n, n <= 0 gives 0, else infinity.
    const v128_t special = wasm_v128_bitselect(
        wasm_v128_bitselect(wasm_f32x4_splat(0.0f), splat(__builtin_inff()), wasm_f32x4_le(n, splat(0.0f))), n,
        wasm_f32x4_eq(n, n));
    return wasm_v128_bitselect(scaled, special, in_range);
}

// silu_approx of four lanes: x / (1 + exp_approx(0 - x)).
inline v128_t silu_approx4(v128_t x) {
    return wasm_f32x4_div(x, wasm_f32x4_add(splat(1.0f), exp_approx4(wasm_f32x4_sub(splat(0.0f), x))));
}

// fp16_to_f32(f32_to_fp16(x)) for finite x below half's largest value (all
// attention weights are in [0, 1]): subnormal halves are multiples of
// 2^-24, rounded by adding and subtracting 2^-1 (whose ulp is 2^-24);
// normal halves keep 10 mantissa bits, rounded to nearest even on the
// float's bits. Ties go to even in both, as the conversion does.
inline v128_t round_to_half4(v128_t x) {
    const v128_t ax = wasm_f32x4_abs(x);
    const v128_t sign = wasm_v128_xor(x, ax);
    const v128_t tiny = wasm_f32x4_sub(wasm_f32x4_add(ax, splat(0.5f)), splat(0.5f));
    const v128_t lsb = wasm_v128_and(wasm_u32x4_shr(ax, 13), wasm_i32x4_splat(1));
    const v128_t rounded = wasm_v128_and(wasm_i32x4_add(ax, wasm_i32x4_add(wasm_i32x4_splat(0x0FFF), lsb)),
                                         wasm_i32x4_splat(int32_t(0xFFFFE000u)));
    const v128_t normal = wasm_f32x4_ge(ax, splat(0x1p-14f));
    return wasm_v128_or(sign, wasm_v128_bitselect(rounded, tiny, normal));
}

}  // namespace smolinfer::model::wasm

#endif
