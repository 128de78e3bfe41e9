// WebAssembly SIMD128 activation quantizers, bit-identical to
// quantize_act_ref.cpp: every step is element-wise (absolute maximum,
// multiply, round half to even, saturate) or an exact integer sum. The
// reference's special cases are kept: NaN is skipped by the maximum (pmax
// returns its first operand when the second is NaN, as std::fmax skips
// NaN), and a product that is NaN or beyond int32 becomes -128 (Q8_0/Q8_1,
// x86's "integer indefinite") or saturates by sign (Q8_K).
#include "quant/dot_wasm.h"

#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"

namespace smolinfer::quant::wasm {

namespace {

// Largest |x| of n floats (a multiple of 4), NaN skipped.
inline float abs_max(const float* x, size_t n) {
    v128_t m = wasm_f32x4_splat(0.0f);
    for (size_t j = 0; j < n; j += 4) m = wasm_f32x4_pmax(m, wasm_f32x4_abs(wasm_v128_load(x + j)));
    m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 2, 3, 0, 1));
    m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
    return wasm_f32x4_extract_lane(m, 0);
}

// 16 floats times `scale`, rounded half to even, as int8 codes. Products that
// are NaN or outside int32 become `invalid` (Q8_0: -128, like x86's convert
// and pack), unless `by_sign`: then NaN gives -128 and out-of-range values
// saturate (Q8_K's reference rounding).
template <bool kBySign>
inline v128_t codes16(const float* x, v128_t scale) {
    v128_t q[4];
    for (int k = 0; k < 4; ++k) {
        const v128_t v = wasm_f32x4_mul(wasm_v128_load(x + 4 * k), scale);
        const v128_t r = wasm_f32x4_nearest(v);
        v128_t i = wasm_i32x4_trunc_sat_f32x4(r);  // saturates; NaN gives 0
        if constexpr (kBySign) {
            // Only NaN needs fixing: saturation already gives the sign's limit.
            i = wasm_v128_bitselect(i, wasm_i32x4_splat(-128), wasm_f32x4_eq(v, v));
        } else {
            const v128_t in_range =
                wasm_v128_and(wasm_f32x4_ge(v, wasm_f32x4_splat(-2147483648.0f)), wasm_f32x4_lt(v, wasm_f32x4_splat(2147483648.0f)));
            i = wasm_v128_bitselect(i, wasm_i32x4_splat(-128), in_range);
        }
        q[k] = i;
    }
    return wasm_i8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(q[0], q[1]), wasm_i16x8_narrow_i32x4(q[2], q[3]));
}

inline int sum_codes(v128_t q) {
    const v128_t s = wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_extadd_pairwise_i8x16(q));
    const v128_t t = wasm_i32x4_add(s, wasm_i32x4_shuffle(s, s, 2, 3, 0, 1));
    return wasm_i32x4_extract_lane(wasm_i32x4_add(t, wasm_i32x4_shuffle(t, t, 1, 0, 3, 2)), 0);
}

// One block of 32 with d = amax / 127 (returned); *sum gets the codes' sum.
inline float quantize_block32(const float* x, int8_t* qs, int* sum) {
    const float amax = abs_max(x, kQK32);
    const v128_t id = wasm_f32x4_splat(amax != 0.0f ? 127.0f / amax : 0.0f);
    const v128_t lo = codes16<false>(x, id), hi = codes16<false>(x + 16, id);
    wasm_v128_store(qs, lo);
    wasm_v128_store(qs + 16, hi);
    if (sum) *sum = sum_codes(lo) + sum_codes(hi);
    return amax / 127.0f;
}

}  // namespace

void quantize_row_q8_0(const float* x, void* dst, size_t n) {
    auto* y = static_cast<BlockQ8_0*>(dst);
    for (size_t i = 0; i < n / kQK32; ++i, x += kQK32) y[i].d = f32_to_fp16(quantize_block32(x, y[i].qs, nullptr));
}

void quantize_row_q8_1(const float* x, void* dst, size_t n) {
    auto* y = static_cast<BlockQ8_1*>(dst);
    for (size_t i = 0; i < n / kQK32; ++i, x += kQK32) {
        int sum = 0;
        const float d = quantize_block32(x, y[i].qs, &sum);
        y[i].d = f32_to_fp16(d);
        y[i].s = f32_to_fp16(d * float(sum));
    }
}

void quantize_row_q8_K(const float* x, void* dst, size_t n) {
    auto* y = static_cast<BlockQ8_K*>(dst);
    for (size_t i = 0; i < n / kQK256; ++i, x += kQK256) {
        const float amax = abs_max(x, kQK256);
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        // The signed value of the first element of largest magnitude.
        float max = 0.0f;
        for (size_t j = 0; j < kQK256; ++j) {
            if (std::fabs(x[j]) == amax) {
                max = x[j];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const v128_t scale = wasm_f32x4_splat(iscale);
        for (size_t g = 0; g < kQK256 / 16; ++g) {
            const v128_t q = codes16<true>(x + 16 * g, scale);
            wasm_v128_store(y[i].qs + 16 * g, q);
            y[i].bsums[g] = int16_t(sum_codes(q));
        }
        y[i].d = 1.0f / iscale;
    }
}

}  // namespace smolinfer::quant::wasm

#endif
