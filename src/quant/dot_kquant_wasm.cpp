// WebAssembly kernels for the K-quants (Q4_K, Q5_K, Q6_K with Q8_K
// activations), bit-identical to dot_kquant_ref.cpp in the exact flavours
// (see wasm_simd.h): the same integer lane sums (value e of a 32-value
// slice in lane e / 4), the same fused multiply-adds per block, the same
// final trees. A group's 16-value halves are multiplied into 16-bit pair
// sums and scaled into 32-bit 4-value sums in one step (pairs_u7,
// scaled_sums4), as llama.cpp's AVX2 kernels do.
//
// Tiles of rows x tokens: a block's codes and scales are unpacked once for
// every token.
#include "quant/dot_wasm.h"

#if defined(__wasm_simd128__)

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/wasm_simd.h"

namespace smolinfer::quant::wasm {

namespace {

constexpr int kRows = 1;

// Q4_K/Q5_K's 12 bytes of 6-bit scales and minimums as 8 + 8 bytes:
// sc[0..7] the scales, sc[8..15] the minimums (llama.cpp's unpacking).
inline void unpack_scales(const uint8_t* q, uint8_t sc[16]) {
    constexpr uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
    uint32_t u[4];
    std::memcpy(u, q, 12);
    u[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4);
    const uint32_t uaux = u[1] & kmask1;
    u[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);
    u[2] = uaux;
    u[0] &= kmask1;
    std::memcpy(sc, u, 16);
}

// Per 32-value group g: min(g) * (sum of the group's activation codes), for
// g = 0..3 in lo and 4..7 in hi.
inline void min_products(const uint8_t sc[16], const BlockQ8_K& a, v128_t* lo, v128_t* hi) {
    const v128_t gs_lo = wasm_i32x4_extadd_pairwise_i16x8(wasm_v128_load(a.bsums));
    const v128_t gs_hi = wasm_i32x4_extadd_pairwise_i16x8(wasm_v128_load(a.bsums + 8));
    const v128_t m = wasm_u16x8_extend_low_u8x16(wasm_v128_load64_zero(sc + 8));
    *lo = wasm_i32x4_mul(gs_lo, wasm_u32x4_extend_low_u16x8(m));
    *hi = wasm_i32x4_mul(gs_hi, wasm_u32x4_extend_high_u16x8(m));
}

// Bits of every byte moved by a constant: a 16-bit shift, then a mask.
// (V8 has no 8-bit shifts on x86; its own lowering of one, and of any shift
// by a variable amount, costs several instructions.) K < 0 shifts right.
template <int K>
inline v128_t move_bits(v128_t v, uint8_t mask) {
    if constexpr (K > 0) v = wasm_i16x8_shl(v, K);
    if constexpr (K < 0) v = wasm_u16x8_shr(v, -K);
    return wasm_v128_and(v, wasm_i8x16_splat(int8_t(mask)));
}

// Calls f(std::integral_constant<int, i>) for i = 0 .. N-1: group and slice
// indices known at compile time, so every shift is a constant.
template <int N, class Fn>
inline void unroll(Fn&& f) {
    [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }(
        std::make_integer_sequence<int, N>{});
}

// The codes of a block as unsigned bytes, a 32-value group (or Q6_K
// slice) G at a time: lo = values 0..15 of it, hi = 16..31.
struct Q4K {
    using Block = BlockQ4_K;
    template <int G>
    static void codes(const Block& b, v128_t& lo, v128_t& hi) {
        const uint8_t* q = b.qs + 32 * (G / 2);
        lo = move_bits<-4 * (G % 2)>(load16(q), 0x0F);
        hi = move_bits<-4 * (G % 2)>(load16(q + 16), 0x0F);
    }
};

// Q5_K: bit G of qh[l] is the fifth bit of value l of group G.
struct Q5K {
    using Block = BlockQ5_K;
    template <int G>
    static void codes(const Block& b, v128_t& lo, v128_t& hi) {
        const uint8_t* q = b.qs + 32 * (G / 2);
        lo = wasm_v128_or(move_bits<-4 * (G % 2)>(load16(q), 0x0F), move_bits<4 - G>(load16(b.qh), 0x10));
        hi = wasm_v128_or(move_bits<-4 * (G % 2)>(load16(q + 16), 0x0F), move_bits<4 - G>(load16(b.qh + 16), 0x10));
    }
};

// Q6_K slice S (0..7): the 6-bit codes + 32 (0..63): low 4 bits from ql
// (nibble K / 2 of the bytes at 32 * (K % 2)), high 2 bits from qh bits 2K.
template <int S>
inline void q6_codes(const BlockQ6_K& b, v128_t& lo, v128_t& hi) {
    constexpr int H = S / 4, K = S % 4;
    const uint8_t* ql = b.ql + 64 * H + 32 * (K % 2);
    const uint8_t* qh = b.qh + 32 * H;
    lo = wasm_v128_or(move_bits<-4 * (K / 2)>(load16(ql), 0x0F), move_bits<4 - 2 * K>(load16(qh), 0x30));
    hi = wasm_v128_or(move_bits<-4 * (K / 2)>(load16(ql + 16), 0x0F), move_bits<4 - 2 * K>(load16(qh + 16), 0x30));
}

struct Rows {
    const uint8_t* w;
    size_t stride;
    template <class B>
    const B& block(int r, size_t i) const {
        return reinterpret_cast<const B*>(w + size_t(r) * stride)[i];
    }
};

struct Acts {
    const uint8_t* a;
    size_t stride;
    const BlockQ8_K& block(int t, size_t i) const { return reinterpret_cast<const BlockQ8_K*>(a + size_t(t) * stride)[i]; }
};

// Q4_K and Q5_K in llama.cpp's vec_dot order: per (row, token) 8 lanes of
// d * (scaled lane sums), and the minimum terms in 4 lanes (Q4_K: groups
// 2m and 2m+1 in lane m) or one chain (Q5_K).
template <class F, class A, bool kMinLanes4, int R, int T>
void q45_rows_tokens(size_t nb, const Rows& rows, const Acts& acts, float* out, size_t out_stride) {
    using B = typename F::Block;
    v128_t acc[R][T][2], acc_min[R][T];
    for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) acc[r][t][0] = acc[r][t][1] = acc_min[r][t] = wasm_f32x4_splat(0.0f);
    }
    for (size_t i = 0; i < nb; ++i) {
        uint8_t sc[R][16];
        v128_t lanes[R][T][2];
        for (int r = 0; r < R; ++r) {
            unpack_scales(rows.block<B>(r, i).scales, sc[r]);
            for (int t = 0; t < T; ++t) lanes[r][t][0] = lanes[r][t][1] = wasm_i32x4_splat(0);
        }
        unroll<8>([&](auto group) {
            constexpr int g = group;
            for (int r = 0; r < R; ++r) {
                v128_t lo, hi;
                F::template codes<g>(rows.block<B>(r, i), lo, hi);
                const v128_t scale = wasm_i16x8_splat(int16_t(sc[r][g]));
                for (int t = 0; t < T; ++t) {
                    const int8_t* a = acts.block(t, i).qs + 32 * g;
                    lanes[r][t][0] = wasm_i32x4_add(lanes[r][t][0], scaled_sums4(pairs_u7(load16(a), lo), scale));
                    lanes[r][t][1] = wasm_i32x4_add(lanes[r][t][1], scaled_sums4(pairs_u7(load16(a + 16), hi), scale));
                }
            }
        });
        for (int r = 0; r < R; ++r) {
            const B& x = rows.block<B>(r, i);
            const float xd = fp16_to_f32(x.d), xmin = fp16_to_f32(x.dmin);
            for (int t = 0; t < T; ++t) {
                const BlockQ8_K& y = acts.block(t, i);
                const v128_t d = wasm_f32x4_splat(y.d * xd);
                const v128_t dmin = wasm_f32x4_splat(-y.d * xmin);
                v128_t plo, phi;
                min_products(sc[r], y, &plo, &phi);
                if constexpr (kMinLanes4) {
                    const v128_t m4 = wasm_i32x4_add(wasm_i32x4_shuffle(plo, phi, 0, 2, 4, 6), wasm_i32x4_shuffle(plo, phi, 1, 3, 5, 7));
                    acc_min[r][t] = A::madd(dmin, wasm_f32x4_convert_i32x4(m4), acc_min[r][t]);
                } else {
                    const float m = float(hsum_i32(wasm_i32x4_add(plo, phi)));
                    acc_min[r][t] = wasm_f32x4_replace_lane(
                        acc_min[r][t], 0, A::madd1(wasm_f32x4_extract_lane(dmin, 0), m, wasm_f32x4_extract_lane(acc_min[r][t], 0)));
                }
                acc[r][t][0] = A::madd(d, wasm_f32x4_convert_i32x4(lanes[r][t][0]), acc[r][t][0]);
                acc[r][t][1] = A::madd(d, wasm_f32x4_convert_i32x4(lanes[r][t][1]), acc[r][t][1]);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) {
            float m[4];
            wasm_v128_store(m, acc_min[r][t]);
            const float mins = kMinLanes4 ? (m[0] + m[2]) + (m[1] + m[3]) : m[0];
            out[size_t(t) * out_stride + size_t(r)] = hsum8(acc[r][t][0], acc[r][t][1]) + mins;
        }
    }
}

// Q6_K in llama.cpp's vec_dot order: 8 lanes, slice s's 16-value halves
// scaled by scales 2s and 2s+1; lane m then loses 32 * (slice m's scaled
// activation sum) -- the kernel's bias of 32 taken off per slice, not per
// lane.
template <class A, int R, int T>
void q6_rows_tokens(size_t nb, const Rows& rows, const Acts& acts, float* out, size_t out_stride) {
    v128_t acc[R][T][2];
    for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) acc[r][t][0] = acc[r][t][1] = wasm_f32x4_splat(0.0f);
    }
    for (size_t i = 0; i < nb; ++i) {
        v128_t lanes[R][T][2];
        for (int r = 0; r < R; ++r) {
            for (int t = 0; t < T; ++t) lanes[r][t][0] = lanes[r][t][1] = wasm_i32x4_splat(0);
        }
        unroll<8>([&](auto slice) {
            constexpr int s = slice;
            for (int r = 0; r < R; ++r) {
                const BlockQ6_K& x = rows.block<BlockQ6_K>(r, i);
                v128_t lo, hi;
                q6_codes<s>(x, lo, hi);
                const v128_t s_lo = wasm_i16x8_splat(x.scales[2 * s]), s_hi = wasm_i16x8_splat(x.scales[2 * s + 1]);
                for (int t = 0; t < T; ++t) {
                    const int8_t* a = acts.block(t, i).qs + 32 * s;
                    lanes[r][t][0] = wasm_i32x4_add(lanes[r][t][0], scaled_sums4(pairs_u7(load16(a), lo), s_lo));
                    lanes[r][t][1] = wasm_i32x4_add(lanes[r][t][1], scaled_sums4(pairs_u7(load16(a + 16), hi), s_hi));
                }
            }
        });
        for (int r = 0; r < R; ++r) {
            const BlockQ6_K& x = rows.block<BlockQ6_K>(r, i);
            const v128_t sc = wasm_v128_load(x.scales);
            const v128_t sc_lo = wasm_i16x8_extend_low_i8x16(sc), sc_hi = wasm_i16x8_extend_high_i8x16(sc);
            const float xd = fp16_to_f32(x.d);
            for (int t = 0; t < T; ++t) {
                const BlockQ8_K& y = acts.block(t, i);
                const v128_t bias_lo = wasm_i32x4_shl(wasm_i32x4_dot_i16x8(wasm_v128_load(y.bsums), sc_lo), 5);
                const v128_t bias_hi = wasm_i32x4_shl(wasm_i32x4_dot_i16x8(wasm_v128_load(y.bsums + 8), sc_hi), 5);
                const v128_t d = wasm_f32x4_splat(y.d * xd);
                acc[r][t][0] = A::madd(d, wasm_f32x4_convert_i32x4(wasm_i32x4_sub(lanes[r][t][0], bias_lo)), acc[r][t][0]);
                acc[r][t][1] = A::madd(d, wasm_f32x4_convert_i32x4(wasm_i32x4_sub(lanes[r][t][1], bias_hi)), acc[r][t][1]);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) out[size_t(t) * out_stride + size_t(r)] = hsum8(acc[r][t][0], acc[r][t][1]);
    }
}

// Q4_K matrices llama.cpp interleaves in eights: per (row, token) one chain
// of (scaled block sum) * (d_w * d_a) and one of (minimum terms) * (dmin_w *
// d_a), a step per block, or with kPer64 a step per 64 values (tokens taken
// four at a time); the result is their difference. R rows' chains share a
// vector (lane = row).
template <class A, bool kPer64, int R, int T>
void q4k_chain_rows_tokens(size_t nb, const Rows& rows, const Acts& acts, float* out, size_t out_stride) {
    static_assert(R <= 4);
    v128_t acc[T], acc_min[T];
    for (int t = 0; t < T; ++t) acc[t] = acc_min[t] = wasm_f32x4_splat(0.0f);
    for (size_t i = 0; i < nb; ++i) {
        uint8_t sc[R][16];
        uint32_t hd[4] = {0, 0, 0, 0}, hm[4] = {0, 0, 0, 0};
        for (int r = 0; r < R; ++r) {
            const BlockQ4_K& x = rows.block<BlockQ4_K>(r, i);
            unpack_scales(x.scales, sc[r]);
            hd[r] = x.d;
            hm[r] = x.dmin;
        }
        const v128_t xd = halves_to_f32(wasm_u32x4_make(hd[0], hd[1], hd[2], hd[3]));
        const v128_t xmin = halves_to_f32(wasm_u32x4_make(hm[0], hm[1], hm[2], hm[3]));
        for (int t = 0; t < T; ++t) {
            const BlockQ8_K& y = acts.block(t, i);
            const v128_t d = wasm_f32x4_mul(xd, wasm_f32x4_splat(y.d));
            const v128_t dmin = wasm_f32x4_mul(xmin, wasm_f32x4_splat(y.d));
            v128_t plo[4], phi[4];
            for (int r = 0; r < 4; ++r) plo[r] = phi[r] = wasm_i32x4_splat(0);
            for (int r = 0; r < R; ++r) min_products(sc[r], y, &plo[r], &phi[r]);
            const int steps = kPer64 ? 4 : 1;
            for (int step = 0; step < steps; ++step) {
                const int g0 = kPer64 ? 2 * step : 0, g1 = kPer64 ? g0 + 2 : 8;
                v128_t scaled[4], mins[4];
                for (int r = 0; r < 4; ++r) scaled[r] = mins[r] = wasm_i32x4_splat(0);
                for (int r = 0; r < R; ++r) {
                    const BlockQ4_K& x = rows.block<BlockQ4_K>(r, i);
                    unroll<8>([&](auto group) {
                        constexpr int g = group;
                        if (g < g0 || g >= g1) return;
                        v128_t lo, hi;
                        Q4K::codes<g>(x, lo, hi);
                        const v128_t scale = wasm_i16x8_splat(int16_t(sc[r][g]));
                        const int8_t* a = y.qs + 32 * g;
                        scaled[r] = wasm_i32x4_add(scaled[r], scaled_sums4(pairs_u7(load16(a), lo), scale));
                        scaled[r] = wasm_i32x4_add(scaled[r], scaled_sums4(pairs_u7(load16(a + 16), hi), scale));
                    });
                    // Groups g0..g1-1 of the minimum products: g0..g0+1 lie in plo or phi.
                    if (kPer64) {
                        const v128_t p = g0 < 4 ? plo[r] : phi[r];
                        mins[r] = (g0 % 4 == 0) ? wasm_i32x4_shuffle(p, p, 0, 1, 4, 4) : wasm_i32x4_shuffle(p, p, 2, 3, 4, 4);
                        mins[r] = wasm_v128_and(mins[r], wasm_i32x4_make(-1, -1, 0, 0));
                    } else {
                        mins[r] = wasm_i32x4_add(plo[r], phi[r]);
                    }
                }
                const v128_t total = hsum_i32x4(scaled[0], scaled[1], scaled[2], scaled[3]);
                const v128_t total_min = hsum_i32x4(mins[0], mins[1], mins[2], mins[3]);
                acc[t] = A::madd(wasm_f32x4_convert_i32x4(total), d, acc[t]);
                acc_min[t] = A::madd(wasm_f32x4_convert_i32x4(total_min), dmin, acc_min[t]);
            }
        }
    }
    for (int t = 0; t < T; ++t) {
        float v[4];
        wasm_v128_store(v, wasm_f32x4_sub(acc[t], acc_min[t]));
        for (int r = 0; r < R; ++r) out[size_t(t) * out_stride + size_t(r)] = v[r];
    }
}

enum class Kind { Q4K, Q5K, Q6K, Q4KChain, Q4KChain64 };

template <class A, Kind K, int R, int T>
void run(size_t nb, const Rows& rows, const Acts& acts, float* out, size_t out_stride) {
    if constexpr (K == Kind::Q4K) q45_rows_tokens<Q4K, A, true, R, T>(nb, rows, acts, out, out_stride);
    if constexpr (K == Kind::Q5K) q45_rows_tokens<Q5K, A, false, R, T>(nb, rows, acts, out, out_stride);
    if constexpr (K == Kind::Q6K) q6_rows_tokens<A, R, T>(nb, rows, acts, out, out_stride);
    if constexpr (K == Kind::Q4KChain) q4k_chain_rows_tokens<A, false, R, T>(nb, rows, acts, out, out_stride);
    if constexpr (K == Kind::Q4KChain64) q4k_chain_rows_tokens<A, true, R, T>(nb, rows, acts, out, out_stride);
}

template <class A, Kind K, int R>
void run_rows(size_t nb, const Rows& rows, const Acts& acts, int T, float* out, size_t out_stride) {
    switch (T) {
        case 1: run<A, K, R, 1>(nb, rows, acts, out, out_stride); break;
        case 2: run<A, K, R, 2>(nb, rows, acts, out, out_stride); break;
        case 3: run<A, K, R, 3>(nb, rows, acts, out, out_stride); break;
        default: run<A, K, R, 4>(nb, rows, acts, out, out_stride); break;
    }
}

template <class A, Kind K>
void tile(size_t n, const Tile& tile) {
    const size_t nb = n / kQK256;
    constexpr int kR = (K == Kind::Q4KChain || K == Kind::Q4KChain64) ? 4 : kRows;
    for (int t0 = 0; t0 < tile.tokens; t0 += kMaxTokens) {
        const int T = std::min(kMaxTokens, tile.tokens - t0);
        const Acts acts{tile.a + size_t(t0) * tile.a_stride, tile.a_stride};
        float* out0 = tile.out + size_t(t0) * tile.out_stride;
        int r0 = 0;
        for (; r0 + kR <= tile.rows; r0 += kR) {
            run_rows<A, K, kR>(nb, Rows{tile.w + size_t(r0) * tile.w_stride, tile.w_stride}, acts, T, out0 + r0, tile.out_stride);
        }
        for (; r0 < tile.rows; ++r0) {
            run_rows<A, K, 1>(nb, Rows{tile.w + size_t(r0) * tile.w_stride, tile.w_stride}, acts, T, out0 + r0, tile.out_stride);
        }
    }
}

template <class A, Kind K>
float dot(size_t n, const void* w, const void* a) {
    float out;
    tile<A, K>(n, Tile{static_cast<const uint8_t*>(w), 0, 1, static_cast<const uint8_t*>(a), 0, 1, &out, 1});
    return out;
}

template <class A>
bool select(MatmulKernel& k, bool rows8) {
    switch (k.weight) {
        case Type::Q4_K:
            if (rows8) {
                k.dot = dot<A, Kind::Q4KChain>;
                k.tile = tile<A, Kind::Q4KChain>;
                k.dot_batched = dot<A, Kind::Q4KChain64>;
                k.tile_batched = tile<A, Kind::Q4KChain64>;
            } else {
                k.dot = dot<A, Kind::Q4K>;
                k.tile = tile<A, Kind::Q4K>;
            }
            return true;
        case Type::Q5_K: k.dot = dot<A, Kind::Q5K>; k.tile = tile<A, Kind::Q5K>; return true;
        case Type::Q6_K: k.dot = dot<A, Kind::Q6K>; k.tile = tile<A, Kind::Q6K>; return true;
        default: return false;
    }
}

}  // namespace

#if defined(__wasm_relaxed_simd__)
bool select_kquant_relaxed(MatmulKernel& k, bool rows8) { return select<Relaxed>(k, rows8); }
#else
bool select_kquant_exact(MatmulKernel& k, bool rows8) { return select<Exact>(k, rows8); }
bool select_kquant_fast(MatmulKernel& k, bool rows8) { return select<Fast>(k, rows8); }
#endif

}  // namespace smolinfer::quant::wasm

#endif
