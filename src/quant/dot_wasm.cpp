// WebAssembly SIMD128 dot products for the 32-value formats, bit-identical
// to the references in dot_ref.cpp: the same 8 lanes of 4-product integer
// sums, the same fused multiply-add per block and lane, the same hsum8.
//
// WebAssembly has no fused multiply-add. dd * sum is exact in double (22 +
// 13 significant bits), so the sum with the lane is formed in double and
// rounded to float. That double rounding is wrong only when the double sum
// lands exactly halfway between two floats; a cheap test finds those (rare)
// blocks and redoes them with the exact scalar emulation.
#include "quant/dot_wasm.h"

#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <cstring>

#include "quant/blocks.h"
#include "quant/exact_fma.h"
#include "quant/fp16.h"

namespace smolinfer::quant::wasm {

namespace {

// Lane sums s[j] = sum of products 4j..4j+3 over 16 codes each: weights w
// (signed or unsigned bytes, widened accordingly) and activations a (signed).
template <bool kUnsignedWeights>
inline v128_t lane_sums16(v128_t w, v128_t a) {
    const v128_t wl = kUnsignedWeights ? wasm_u16x8_extend_low_u8x16(w) : wasm_i16x8_extend_low_i8x16(w);
    const v128_t wh = kUnsignedWeights ? wasm_u16x8_extend_high_u8x16(w) : wasm_i16x8_extend_high_i8x16(w);
    const v128_t p = wasm_i32x4_dot_i16x8(wl, wasm_i16x8_extend_low_i8x16(a));   // pairs of 0..7
    const v128_t q = wasm_i32x4_dot_i16x8(wh, wasm_i16x8_extend_high_i8x16(a));  // pairs of 8..15
    return wasm_i32x4_add(wasm_i32x4_shuffle(p, q, 0, 2, 4, 6), wasm_i32x4_shuffle(p, q, 1, 3, 5, 7));
}

// 0xFF in byte j of the result where bit (j + first) of qh is set.
inline v128_t bits_to_bytes(uint32_t qh, int first) {
    const v128_t bytes = wasm_i8x16_swizzle(wasm_i32x4_splat(int32_t(qh >> first)),
                                            wasm_i8x16_make(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    const v128_t bit = wasm_u8x16_make(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
    return wasm_i8x16_ne(wasm_v128_and(bytes, bit), wasm_i8x16_splat(0));
}

// The 8 lanes, 4 in each of lo and hi.
struct Lanes {
    v128_t lo = wasm_f32x4_splat(0.0f);
    v128_t hi = wasm_f32x4_splat(0.0f);

    // lanes = fma(dd, sums, lanes), exactly.
    __attribute__((always_inline)) void fma_block(float dd, v128_t sums_lo, v128_t sums_hi) {
        const v128_t s_lo = wasm_f32x4_convert_i32x4(sums_lo);
        const v128_t s_hi = wasm_f32x4_convert_i32x4(sums_hi);
        const v128_t d = wasm_f64x2_splat(double(dd));
        const v128_t r0 = sum2(d, s_lo, lo);
        const v128_t r1 = sum2(d, wasm_i32x4_shuffle(s_lo, s_lo, 2, 3, 0, 1), wasm_i32x4_shuffle(lo, lo, 2, 3, 0, 1));
        const v128_t r2 = sum2(d, s_hi, hi);
        const v128_t r3 = sum2(d, wasm_i32x4_shuffle(s_hi, s_hi, 2, 3, 0, 1), wasm_i32x4_shuffle(hi, hi, 2, 3, 0, 1));
        // A double sum whose low 29 bits are 1 followed by 28 zeros is a
        // float midpoint: the one case where double rounding can mislead.
        const v128_t low29 = wasm_i64x2_splat(0x1FFFFFFF), half = wasm_i64x2_splat(0x10000000);
        const v128_t tie = wasm_v128_or(
            wasm_v128_or(wasm_i64x2_eq(wasm_v128_and(r0, low29), half), wasm_i64x2_eq(wasm_v128_and(r1, low29), half)),
            wasm_v128_or(wasm_i64x2_eq(wasm_v128_and(r2, low29), half), wasm_i64x2_eq(wasm_v128_and(r3, low29), half)));
        if (wasm_v128_any_true(tie)) {
            exact_block(dd, s_lo, s_hi);
            return;
        }
        lo = wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(r0), wasm_f32x4_demote_f64x2_zero(r1), 0, 1, 4, 5);
        hi = wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(r2), wasm_f32x4_demote_f64x2_zero(r3), 0, 1, 4, 5);
    }

    // dd * s + c for lanes 0 and 1 of s and c, in double (the product is exact).
    static v128_t sum2(v128_t d, v128_t s, v128_t c) {
        return wasm_f64x2_add(wasm_f64x2_mul(d, wasm_f64x2_promote_low_f32x4(s)), wasm_f64x2_promote_low_f32x4(c));
    }

    void exact_block(float dd, v128_t s_lo, v128_t s_hi) {
        float s[8], l[8];
        wasm_v128_store(s, s_lo);
        wasm_v128_store(s + 4, s_hi);
        wasm_v128_store(l, lo);
        wasm_v128_store(l + 4, hi);
        for (int j = 0; j < 8; ++j) l[j] = fma_via_double(dd, s[j], l[j]);
        lo = wasm_v128_load(l);
        hi = wasm_v128_load(l + 4);
    }

    // hsum8: ((v4+v0)+(v6+v2)) + ((v5+v1)+(v7+v3))
    float sum() const {
        float r[4];
        wasm_v128_store(r, wasm_f32x4_add(hi, lo));
        return (r[0] + r[2]) + (r[1] + r[3]);
    }
};

inline v128_t low_nibbles(v128_t qs) { return wasm_v128_and(qs, wasm_i8x16_splat(0x0F)); }
inline v128_t high_nibbles(v128_t qs) { return wasm_u8x16_shr(qs, 4); }

template <typename W, typename A>
inline float scale(const W& w, const A& a) {
    return fp16_to_f32(w.d) * fp16_to_f32(a.d);
}

uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

}  // namespace

float dot_q4_0_q8_0(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    Lanes acc;
    const v128_t eight = wasm_i8x16_splat(8);
    for (size_t i = 0; i < n / kQK32; ++i) {
        const v128_t qs = wasm_v128_load(x[i].qs);
        const v128_t w0 = wasm_i8x16_sub(low_nibbles(qs), eight);
        const v128_t w1 = wasm_i8x16_sub(high_nibbles(qs), eight);
        acc.fma_block(scale(x[i], y[i]), lane_sums16<false>(w0, wasm_v128_load(y[i].qs)),
                      lane_sums16<false>(w1, wasm_v128_load(y[i].qs + 16)));
    }
    return acc.sum();
}

float dot_q4_1_q8_1(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    Lanes acc;
    float mins = 0.0f;
    for (size_t i = 0; i < n / kQK32; ++i) {
        mins = fma_via_double(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), mins);
        const v128_t qs = wasm_v128_load(x[i].qs);
        acc.fma_block(scale(x[i], y[i]), lane_sums16<true>(low_nibbles(qs), wasm_v128_load(y[i].qs)),
                      lane_sums16<true>(high_nibbles(qs), wasm_v128_load(y[i].qs + 16)));
    }
    return acc.sum() + mins;
}

float dot_q5_0_q8_0(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    Lanes acc;
    const v128_t sixteen = wasm_i8x16_splat(16), bit4 = wasm_i8x16_splat(0x10);
    for (size_t i = 0; i < n / kQK32; ++i) {
        const uint32_t qh = load_u32(x[i].qh);
        const v128_t qs = wasm_v128_load(x[i].qs);
        const v128_t w0 = wasm_i8x16_sub(wasm_v128_or(low_nibbles(qs), wasm_v128_and(bits_to_bytes(qh, 0), bit4)), sixteen);
        const v128_t w1 = wasm_i8x16_sub(wasm_v128_or(high_nibbles(qs), wasm_v128_and(bits_to_bytes(qh, 16), bit4)), sixteen);
        acc.fma_block(scale(x[i], y[i]), lane_sums16<false>(w0, wasm_v128_load(y[i].qs)),
                      lane_sums16<false>(w1, wasm_v128_load(y[i].qs + 16)));
    }
    return acc.sum();
}

float dot_q5_1_q8_1(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    Lanes acc;
    float mins = 0.0f;
    const v128_t bit4 = wasm_i8x16_splat(0x10);
    for (size_t i = 0; i < n / kQK32; ++i) {
        mins = fma_via_double(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), mins);
        const uint32_t qh = load_u32(x[i].qh);
        const v128_t qs = wasm_v128_load(x[i].qs);
        const v128_t w0 = wasm_v128_or(low_nibbles(qs), wasm_v128_and(bits_to_bytes(qh, 0), bit4));
        const v128_t w1 = wasm_v128_or(high_nibbles(qs), wasm_v128_and(bits_to_bytes(qh, 16), bit4));
        acc.fma_block(scale(x[i], y[i]), lane_sums16<true>(w0, wasm_v128_load(y[i].qs)),
                      lane_sums16<true>(w1, wasm_v128_load(y[i].qs + 16)));
    }
    return acc.sum() + mins;
}

float dot_q8_0_q8_0(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ8_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    Lanes acc;
    for (size_t i = 0; i < n / kQK32; ++i) {
        acc.fma_block(scale(x[i], y[i]), lane_sums16<false>(wasm_v128_load(x[i].qs), wasm_v128_load(y[i].qs)),
                      lane_sums16<false>(wasm_v128_load(x[i].qs + 16), wasm_v128_load(y[i].qs + 16)));
    }
    return acc.sum();
}

}  // namespace smolinfer::quant::wasm

#endif
