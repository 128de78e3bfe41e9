// Building blocks of the WebAssembly kernels (dot_wasm.cpp,
// dot_kquant_wasm.cpp), in the two builds the browser can get:
//
// - relaxed SIMD (-mrelaxed-simd): integer lane sums with the relaxed int8
//   dot products, and fused multiply-adds with f32x4.relaxed_madd, which
//   fuses where the CPU has FMA (every x86 since 2013-2015 and every ARM64)
//   and then gives llama.cpp's results bit for bit; the worker checks that it
//   fuses and says so (stats().exact);
// - plain SIMD128: integer lane sums by widening to 16 bits; fused
//   multiply-adds either emulated exactly in double (the Exact flavour) or
//   as a multiply, then an add (the Fast flavour: what wllama does; close,
//   not bit-identical).
//
// The relaxed int8 dot multiplies a signed byte with a 7-bit one (0..127);
// beyond that its result depends on the CPU. Every caller passes the
// activations (any int8) as the signed operand and weight codes that fit
// 7 bits as the other; Q8_0 weights, which do not, move their signs to the
// activations (sums4_split) or, where a -128 forbids that, are split in two
// (sums4_s8).
#pragma once

#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <cstdint>
#include <cstring>

#include "quant/exact_fma.h"
#include "quant/fp16.h"

namespace smolinfer::quant::wasm {

inline constexpr bool kRelaxed =
#if defined(__wasm_relaxed_simd__)
    true;
#else
    false;
#endif

inline v128_t load16(const void* p) { return wasm_v128_load(p); }

// A constant held in a variable: read once through a volatile slot, so that
// LLVM cannot turn each use back into an immediate, which V8 then builds
// anew at every use (three instructions for most) instead of keeping it in
// a register across the loop.
inline v128_t hoisted(v128_t v) {
    volatile v128_t slot = v;
    return slot;
}

inline uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// ---- integer lane sums ------------------------------------------------------

// Lane j of the result: sum of a[4j+k] * w[4j+k], k < 4; a any int8, w in
// 0..127. Plus `acc`.
inline v128_t sums4_u7(v128_t a, v128_t w, v128_t acc) {
#if defined(__wasm_relaxed_simd__)
    return wasm_i32x4_relaxed_dot_i8x16_i7x16_add(a, w, acc);
#else
    const v128_t p = wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(w), wasm_i16x8_extend_low_i8x16(a));
    const v128_t q = wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(w), wasm_i16x8_extend_high_i8x16(a));
    const v128_t s = wasm_i32x4_add(wasm_i32x4_shuffle(p, q, 0, 2, 4, 6), wasm_i32x4_shuffle(p, q, 1, 3, 5, 7));
    return wasm_i32x4_add(s, acc);
#endif
}

// The same without an addend: in the relaxed build a 16-bit pair dot and a
// pairwise widening add, which V8 emits without the zero and the constant
// it materializes for the three-operand form.
inline v128_t sums4_u7(v128_t a, v128_t w) {
#if defined(__wasm_relaxed_simd__)
    return wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_relaxed_dot_i8x16_i7x16(a, w));
#else
    return sums4_u7(a, w, wasm_i32x4_splat(0));
#endif
}

// The same for any int8 weights w.
inline v128_t sums4_s8(v128_t a, v128_t w) {
#if defined(__wasm_relaxed_simd__)
    // w = (w & 127) - 128 * (w < 0): two 7-bit products.
    const v128_t neg = sums4_u7(a, wasm_u8x16_shr(w, 7));
    return sums4_u7(a, wasm_v128_and(w, wasm_i8x16_splat(0x7F)), wasm_i32x4_neg(wasm_i32x4_shl(neg, 7)));
#else
    const v128_t p = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(w), wasm_i16x8_extend_low_i8x16(a));
    const v128_t q = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(w), wasm_i16x8_extend_high_i8x16(a));
    return wasm_i32x4_add(wasm_i32x4_shuffle(p, q, 0, 2, 4, 6), wasm_i32x4_shuffle(p, q, 1, 3, 5, 7));
#endif
}

// Q8_0 weights the fast way: a * w = (a with w's sign) * |w|, one 7-bit dot
// instead of two. Exact unless a lane of w or of a is -128 (|-128| and
// -(-128) do not fit a byte); callers check (fits_sign_split) and take
// sums4_s8 then. Split once per weight vector, used for every token.
struct SignSplit {
    v128_t magnitude, negative;  // |w|; all ones where w < 0
};
inline SignSplit sign_split(v128_t w) {
    return {wasm_i8x16_abs(w), wasm_i8x16_lt(w, wasm_i8x16_splat(0))};
}
// Whether no lane of either half is -128 (whose magnitude shows as 0x80).
inline bool fits_sign_split(const SignSplit& lo, const SignSplit& hi) {
    return wasm_i8x16_bitmask(wasm_v128_or(lo.magnitude, hi.magnitude)) == 0;
}
inline v128_t sums4_split(v128_t a, const SignSplit& w) {
    return sums4_u7(wasm_i8x16_sub(wasm_v128_xor(a, w.negative), w.negative), w.magnitude);
}

// Lane j: sum of a[4j+k] * (w[4j+k] - bias) with w in 0..127. `bias_sums`
// is bias_sums_of(a, bias): for many weight rows against one activation it
// is computed once.
inline v128_t bias_sums_of(v128_t a, int bias) {
    if (bias == 0) return wasm_i32x4_splat(0);
    return wasm_i32x4_mul(sums4_u7(a, wasm_i8x16_splat(1)), wasm_i32x4_splat(bias));
}
inline v128_t sums4_biased(v128_t a, v128_t w, v128_t bias_sums) {
    return sums4_u7(a, w, wasm_i32x4_neg(bias_sums));
}

// Pair sums a[2j] * w[2j] + a[2j+1] * w[2j+1] as 16-bit lanes (w in
// 0..127, so no pair exceeds 2 * 128 * 127), then lane j of the result:
// pair 2j * s[2j] + pair 2j+1 * s[2j+1] for 16-bit factors s: the 4-value
// sums of a 16-value slice times its K-quant scale, in two instructions.
inline v128_t pairs_u7(v128_t a, v128_t w) {
#if defined(__wasm_relaxed_simd__)
    return wasm_i16x8_relaxed_dot_i8x16_i7x16(a, w);
#else
    const v128_t lo = wasm_i16x8_extmul_low_i8x16(a, w);
    const v128_t hi = wasm_i16x8_extmul_high_i8x16(a, w);
    return wasm_i16x8_add(wasm_i16x8_shuffle(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14),
                          wasm_i16x8_shuffle(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15));
#endif
}
inline v128_t scaled_sums4(v128_t pairs, v128_t scale16) { return wasm_i32x4_dot_i16x8(pairs, scale16); }

// Sum of the four lanes.
inline int32_t hsum_i32(v128_t v) {
    v = wasm_i32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    v = wasm_i32x4_add(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
    return wasm_i32x4_extract_lane(v, 0);
}

// Lane r of the result: the sum of the lanes of v[r] (4 vectors at once).
inline v128_t hsum_i32x4(v128_t v0, v128_t v1, v128_t v2, v128_t v3) {
    const v128_t a = wasm_i32x4_add(wasm_i32x4_shuffle(v0, v1, 0, 4, 1, 5), wasm_i32x4_shuffle(v0, v1, 2, 6, 3, 7));
    const v128_t b = wasm_i32x4_add(wasm_i32x4_shuffle(v2, v3, 0, 4, 1, 5), wasm_i32x4_shuffle(v2, v3, 2, 6, 3, 7));
    // a = [x0 y0 x1 y1] with v0's sum x0 + x1, v1's y0 + y1.
    return wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 1, 4, 5), wasm_i32x4_shuffle(a, b, 2, 3, 6, 7));
}

// ---- half precision ------------------------------------------------------------

// Four halves (the low 16 bits of each 32-bit lane) to floats, exactly as
// fp16_to_f32_branchless: a float multiply rebases normal numbers, a float
// subtraction reads subnormals.
inline v128_t halves_to_f32(v128_t h) {
    const v128_t w = wasm_i32x4_shl(h, 16);
    const v128_t sign = wasm_v128_and(w, wasm_i32x4_splat(int32_t(0x80000000u)));
    const v128_t two_w = wasm_i32x4_add(w, w);
    const v128_t normal = wasm_f32x4_mul(wasm_i32x4_add(wasm_u32x4_shr(two_w, 4), wasm_i32x4_splat(0xE0 << 23)),
                                         wasm_f32x4_splat(0x1.0p-112f));
    const v128_t subnormal =
        wasm_f32x4_sub(wasm_v128_or(wasm_u32x4_shr(two_w, 17), wasm_i32x4_splat(126 << 23)), wasm_f32x4_splat(0.5f));
    const v128_t is_sub = wasm_u32x4_lt(two_w, wasm_i32x4_splat(1 << 27));
    return wasm_v128_or(sign, wasm_v128_bitselect(subnormal, normal, is_sub));
}

// Every half's float value, 256 KB: a weight block's scale becomes a
// float (splatted across a vector) in one load instead of a dozen
// instructions. Scales of one model cluster in few exponents, so the
// entries in use stay in cache. Built on first use, from fp16_to_f32.
const float* half_table();

inline v128_t splat_half(const float* table, uint16_t h) { return wasm_v128_load32_splat(table + h); }

// Eight halves at p to two vectors of four floats.
inline void load_halves8(const uint16_t* p, v128_t* lo, v128_t* hi) {
    const v128_t h = wasm_v128_load(p);
    *lo = halves_to_f32(wasm_u32x4_extend_low_u16x8(h));
    *hi = halves_to_f32(wasm_u32x4_extend_high_u16x8(h));
}

// ---- fused multiply-adds, per flavour --------------------------------------------

// a * b + c with one rounding, lane by lane: the float product is exact in
// double, the double sum is rounded once more to float. That second rounding
// errs only when the double sum is a float midpoint (or a float subnormal,
// whose midpoints lie elsewhere); those rare vectors are redone exactly.
struct Exact {
    static constexpr bool kExact = true;
    static v128_t madd(v128_t a, v128_t b, v128_t c) {
        const v128_t r0 = sum2(a, b, c);
        const v128_t r1 = sum2(wasm_i32x4_shuffle(a, a, 2, 3, 0, 1), wasm_i32x4_shuffle(b, b, 2, 3, 0, 1),
                               wasm_i32x4_shuffle(c, c, 2, 3, 0, 1));
        if (wasm_v128_any_true(wasm_v128_or(suspect(r0), suspect(r1)))) return exactly(a, b, c);
        return wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(r0), wasm_f32x4_demote_f64x2_zero(r1), 0, 1, 4, 5);
    }
    static float madd1(float a, float b, float c) { return fma_via_double(a, b, c); }

private:
    static v128_t sum2(v128_t a, v128_t b, v128_t c) {
        return wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(a), wasm_f64x2_promote_low_f32x4(b)),
                              wasm_f64x2_promote_low_f32x4(c));
    }
    // Low 29 bits 1 followed by 28 zeros: a float midpoint. Below 2^-126
    // (exponent field under 897): possibly a subnormal float's midpoint.
    static v128_t suspect(v128_t r) {
        const v128_t mid = wasm_i64x2_eq(wasm_v128_and(r, wasm_i64x2_splat(0x1FFFFFFF)), wasm_i64x2_splat(0x10000000));
        const v128_t exp = wasm_v128_and(wasm_u64x2_shr(r, 52), wasm_i64x2_splat(0x7FF));
        const v128_t tiny = wasm_i64x2_lt(exp, wasm_i64x2_splat(897));
        const v128_t zero = wasm_i64x2_eq(wasm_v128_and(r, wasm_i64x2_splat(0x7FFFFFFFFFFFFFFF)), wasm_i64x2_splat(0));
        return wasm_v128_or(mid, wasm_v128_andnot(tiny, zero));
    }
    static v128_t exactly(v128_t a, v128_t b, v128_t c) {
        float x[4], y[4], z[4];
        wasm_v128_store(x, a);
        wasm_v128_store(y, b);
        wasm_v128_store(z, c);
        for (int i = 0; i < 4; ++i) z[i] = fma_via_double(x[i], y[i], z[i]);
        return wasm_v128_load(z);
    }
};

// Multiply, then add: two roundings. Not llama.cpp's results (they differ in
// the last bits, and that moves an 8-bit activation code now and then).
struct Fast {
    static constexpr bool kExact = false;
    static v128_t madd(v128_t a, v128_t b, v128_t c) { return wasm_f32x4_add(wasm_f32x4_mul(a, b), c); }
    static float madd1(float a, float b, float c) { return a * b + c; }
};

#if defined(__wasm_relaxed_simd__)
// Fused where the CPU fuses (the worker checks); else multiply-then-add.
struct Relaxed {
    static constexpr bool kExact = true;
    static v128_t madd(v128_t a, v128_t b, v128_t c) { return wasm_f32x4_relaxed_madd(a, b, c); }
    static float madd1(float a, float b, float c) { return exact_fma(a, b, c); }
};
#endif

// hsum8 of lanes lo (0-3) and hi (4-7): ((v4+v0)+(v6+v2)) + ((v5+v1)+(v7+v3)).
inline float hsum8(v128_t lo, v128_t hi) {
    const v128_t r = wasm_f32x4_add(hi, lo);
    return (wasm_f32x4_extract_lane(r, 0) + wasm_f32x4_extract_lane(r, 2)) +
           (wasm_f32x4_extract_lane(r, 1) + wasm_f32x4_extract_lane(r, 3));
}

template <int kLane>
inline v128_t splat_lane(v128_t v) {
    return wasm_i32x4_shuffle(v, v, kLane, kLane, kLane, kLane);
}

}  // namespace smolinfer::quant::wasm

#endif
