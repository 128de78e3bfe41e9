// WebAssembly kernels for the 32-value formats (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0), bit-identical to the references in dot_ref.cpp in the exact
// flavours (see wasm_simd.h): every (row, token) gets the same 8 integer
// lane sums (4 consecutive products each), the same fused multiply-add per
// block and lane, and the same hsum8.
//
// Work is done in tiles of rows x tokens: a block's codes are unpacked once
// for every token, and the activations' scales (and, for formats with
// signed codes, the bias terms) once for every row of the tile.
#include "quant/dot_wasm.h"

#if defined(__wasm_simd128__)

#include <algorithm>
#include <vector>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/reference.h"
#include "quant/wasm_simd.h"

namespace smolinfer::quant::wasm {

namespace {

// The decoders' constants, made once per kernel call. Hoisted (see
// hoisted()) for the Q5 formats, whose decoding needs four of them: 1.26x
// faster there in Chromium; for the Q4 formats the register it takes costs
// more than rebuilding the one mask.
struct Masks {
    v128_t nibble, fifth_index, fifth_bit, fifth;
    template <bool kHoist>
    static Masks make() {
        auto h = [](v128_t v) { return kHoist ? hoisted(v) : v; };
        return {h(wasm_i8x16_splat(0x0F)), h(wasm_i8x16_make(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)),
                h(wasm_u8x16_make(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128)), h(wasm_i8x16_splat(0x10))};
    }
};

// 0x10 in byte j of the result where bit (j + first) of qh is set.
inline v128_t fifth_bits(uint32_t qh, int first, const Masks& m) {
    const v128_t word = wasm_i32x4_splat(int32_t(qh >> first));
#if defined(__wasm_relaxed_simd__)
    const v128_t bytes = wasm_i8x16_relaxed_swizzle(word, m.fifth_index);  // indices in range: a plain pshufb
#else
    const v128_t bytes = wasm_i8x16_swizzle(word, m.fifth_index);
#endif
    return wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(bytes, m.fifth_bit), m.fifth_bit), m.fifth);
}

inline v128_t low_nibbles(v128_t q, const Masks& m) { return wasm_v128_and(q, m.nibble); }
// A 16-bit shift and the same mask: V8 lowers an 8-bit shift to more.
inline v128_t high_nibbles(v128_t q, const Masks& m) { return wasm_v128_and(wasm_u16x8_shr(q, 4), m.nibble); }

// Each format: its blocks, its activation format, its codes as unsigned
// bytes (values 0..15 of the block in lo, 16..31 in hi) with value = code -
// kBias, or, for Q8_0, as the signed values themselves.
struct Q4_0 {
    using Block = BlockQ4_0;
    static constexpr bool kFifthBits = false;
    using Act = BlockQ8_0;
    static constexpr int kBias = 8;
    static constexpr bool kMin = false, kSigned = false;
    static void codes(const Block& b, v128_t& lo, v128_t& hi, const Masks& m) {
        const v128_t q = load16(b.qs);
        lo = low_nibbles(q, m);
        hi = high_nibbles(q, m);
    }
};

struct Q4_1 {
    using Block = BlockQ4_1;
    static constexpr bool kFifthBits = false;
    using Act = BlockQ8_1;
    static constexpr int kBias = 0;
    static constexpr bool kMin = true, kSigned = false;
    static uint16_t min(const Block& b) { return b.m; }
    static void codes(const Block& b, v128_t& lo, v128_t& hi, const Masks& m) {
        const v128_t q = load16(b.qs);
        lo = low_nibbles(q, m);
        hi = high_nibbles(q, m);
    }
};

struct Q5_0 {
    using Block = BlockQ5_0;
    static constexpr bool kFifthBits = true;
    using Act = BlockQ8_0;
    static constexpr int kBias = 16;
    static constexpr bool kMin = false, kSigned = false;
    static void codes(const Block& b, v128_t& lo, v128_t& hi, const Masks& m) {
        const v128_t q = load16(b.qs);
        const uint32_t qh = load_u32(b.qh);
        lo = wasm_v128_or(low_nibbles(q, m), fifth_bits(qh, 0, m));
        hi = wasm_v128_or(high_nibbles(q, m), fifth_bits(qh, 16, m));
    }
};

struct Q5_1 {
    using Block = BlockQ5_1;
    static constexpr bool kFifthBits = true;
    using Act = BlockQ8_1;
    static constexpr int kBias = 0;
    static constexpr bool kMin = true, kSigned = false;
    static uint16_t min(const Block& b) { return b.m; }
    static void codes(const Block& b, v128_t& lo, v128_t& hi, const Masks& m) {
        const v128_t q = load16(b.qs);
        const uint32_t qh = load_u32(b.qh);
        lo = wasm_v128_or(low_nibbles(q, m), fifth_bits(qh, 0, m));
        hi = wasm_v128_or(high_nibbles(q, m), fifth_bits(qh, 16, m));
    }
};

struct Q8_0 {
    using Block = BlockQ8_0;
    static constexpr bool kFifthBits = false;
    using Act = BlockQ8_0;
    static constexpr int kBias = 0;
    static constexpr bool kMin = false, kSigned = true;
    static void codes(const Block& b, v128_t& lo, v128_t& hi, const Masks&) {
        lo = load16(b.qs);
        hi = load16(b.qs + 16);
    }
};

inline uint16_t sum_of(const BlockQ8_1& a) { return a.s; }
inline uint16_t sum_of(const BlockQ8_0&) { return 0; }

constexpr int kChainRows = 4;  // rows whose chains share a vector (Q4_0 interleaved)

// The tokens of a tile as every row needs them, prepared once per tile:
// per (block, token) the scale d and (Q8_1) s as floats, and for biased
// formats the lane sums of the activation codes times the bias, negated.
struct Prepared {
    std::vector<float> d, s;     // [block][kMaxTokens]
    std::vector<v128_t> bias;    // [block][kMaxTokens][2]
    // [block]: some token's codes include -128 (Q8_0 weights in the relaxed
    // build: that block takes the two-dot path, see sums4_split).
    std::vector<uint8_t> wide;
    // What was prepared: the next tile of the same product (a decoding
    // step's tiles all have the same one token) finds it ready.
    uint64_t activation_id = 0;
    const uint8_t* a = nullptr;
    size_t nb = 0;
    int t0 = -1, tokens = 0;
};

template <class F>
void prepare(size_t nb, const Tile& tile, int t0, int T, Prepared& p) {
    if (tile.activation_id != 0 && p.activation_id == tile.activation_id && p.a == tile.a && p.nb == nb && p.t0 == t0 &&
        p.tokens == T) {
        return;
    }
    p.activation_id = tile.activation_id;
    p.a = tile.a;
    p.nb = nb;
    p.t0 = t0;
    p.tokens = T;
    p.d.assign(nb * kMaxTokens, 0.0f);
    p.s.assign(nb * kMaxTokens, 0.0f);
    const bool biased = kRelaxed && F::kBias != 0;
    const float* table = half_table();
    if (biased) p.bias.resize(nb * kMaxTokens * 2);
    constexpr bool kSplit = kRelaxed && F::kSigned;
    if (kSplit) p.wide.assign(nb, 0);
    for (int t = 0; t < T; ++t) {
        const auto* a = reinterpret_cast<const typename F::Act*>(tile.a + size_t(t0 + t) * tile.a_stride);
        for (size_t i = 0; i < nb; ++i) {
            const size_t at = i * kMaxTokens + size_t(t);
            p.d[at] = table[a[i].d];
            p.s[at] = table[sum_of(a[i])];
            if (biased) {
                p.bias[2 * at] = wasm_i32x4_neg(bias_sums_of(load16(a[i].qs), F::kBias));
                p.bias[2 * at + 1] = wasm_i32x4_neg(bias_sums_of(load16(a[i].qs + 16), F::kBias));
            }
            if (kSplit) {
                const v128_t min = wasm_i8x16_splat(-128);
                const v128_t eq = wasm_v128_or(wasm_i8x16_eq(load16(a[i].qs), min), wasm_i8x16_eq(load16(a[i].qs + 16), min));
                p.wide[i] |= uint8_t(wasm_v128_any_true(eq));
            }
        }
    }
}

// The 4 lane sums of one half block (16 codes) with one token's codes.
template <class F>
inline v128_t half_sums(v128_t a, v128_t codes, const v128_t* neg_bias) {
    if constexpr (F::kSigned) {
        return sums4_s8(a, codes);
    } else if constexpr (F::kBias == 0) {
        return sums4_u7(a, codes);
    } else if constexpr (kRelaxed) {
        return sums4_u7(a, codes, *neg_bias);
    } else {
        return sums4_s8(a, wasm_i8x16_sub(codes, wasm_i8x16_splat(F::kBias)));
    }
}


// One weight row times T tokens in llama.cpp's vec_dot order: per token 8
// lanes, lane += (d_w * d_a) * lane sum, a step per block; for formats with
// a minimum a second chain m_w * s_a per token. Pointers are bumped, not
// indexed, and two blocks go per iteration: V8 neither strength-reduces
// nor schedules, and its loop overhead (a stack check per iteration) counts.
template <class F, class A, int T>
void one_row(size_t nb, const typename F::Block* x, const typename F::Act* const* act, const Prepared& p,
             float* out, size_t out_stride) {
    using Act = typename F::Act;
    constexpr bool kBiased = kRelaxed && F::kBias != 0;
    const float* table = half_table();
    const Masks masks = Masks::make<F::kFifthBits>();
    v128_t acc[T][2], mins[T];
    const Act* y[T];
    for (int t = 0; t < T; ++t) {
        acc[t][0] = acc[t][1] = mins[t] = wasm_f32x4_splat(0.0f);
        y[t] = act[t];
    }
    const float* pd = p.d.data();
    const float* ps = p.s.data();
    const v128_t* pb = kBiased ? p.bias.data() : nullptr;
    const uint8_t* pw = p.wide.data();  // read for Q8_0 and one token only
    auto step = [&](const typename F::Block& b) {
        v128_t lo, hi;
        F::codes(b, lo, hi, masks);
        const v128_t dw = splat_half(table, b.d);
        // Q8_0 in the relaxed build, one token (decoding): signs moved to the
        // activations, one dot per half instead of two, unless a -128 is in
        // the way (Chromium: 1.3-1.9x faster; for 4 tokens the extra
        // registers made it 1.6x slower).
        SignSplit split_lo{}, split_hi{};
        bool split = false;
        if constexpr (kRelaxed && F::kSigned && T == 1) {
            split_lo = sign_split(lo);
            split_hi = sign_split(hi);
            const bool activations_fit = *pw++ == 0;
            split = activations_fit && fits_sign_split(split_lo, split_hi);
        }
        for (int t = 0; t < T; ++t) {
            const v128_t* bias = kBiased ? pb + 2 * t : nullptr;
            // d = d_w * d_a, rounded to float before the fused multiply-add, as llama.cpp does.
            const v128_t d = wasm_f32x4_mul(dw, wasm_v128_load32_splat(pd + t));
            v128_t s_lo, s_hi;
            if (split) {
                s_lo = sums4_split(load16(y[t]->qs), split_lo);
                s_hi = sums4_split(load16(y[t]->qs + 16), split_hi);
            } else {
                s_lo = half_sums<F>(load16(y[t]->qs), lo, bias);
                s_hi = half_sums<F>(load16(y[t]->qs + 16), hi, bias ? bias + 1 : nullptr);
            }
            acc[t][0] = A::madd(d, wasm_f32x4_convert_i32x4(s_lo), acc[t][0]);
            acc[t][1] = A::madd(d, wasm_f32x4_convert_i32x4(s_hi), acc[t][1]);
            if constexpr (F::kMin) mins[t] = A::madd(splat_half(table, F::min(b)), wasm_v128_load32_splat(ps + t), mins[t]);
            ++y[t];
        }
        pd += kMaxTokens;
        ps += kMaxTokens;
        if constexpr (kBiased) pb += 2 * kMaxTokens;
    };
    const typename F::Block* const end = x + nb;
    for (; x + 2 <= end; x += 2) {
        step(x[0]);
        step(x[1]);
    }
    if (x < end) step(*x);
    for (int t = 0; t < T; ++t) {
        float v = hsum8(acc[t][0], acc[t][1]);
        if constexpr (F::kMin) v += wasm_f32x4_extract_lane(mins[t], 0);  // (adding 0 would turn -0 into +0)
        out[size_t(t) * out_stride] = v;
    }
}

// Q4_0 matrices whose rows llama.cpp interleaves in eights: one fused
// multiply-add chain per (row, token), a step per block: acc += float(block
// sum) * (d_w * d_a). The R rows' chains share a vector (lane = row).
template <class F, class A, int R, int T>
void rows_tokens_chain(size_t nb, const typename F::Block* const* rows, const typename F::Act* const* act,
                       const Prepared& p, float* out, size_t out_stride) {
    v128_t acc[T];
    const float* table = half_table();
    const Masks masks = Masks::make<F::kFifthBits>();
    for (int t = 0; t < T; ++t) acc[t] = wasm_f32x4_splat(0.0f);
    for (size_t i = 0; i < nb; ++i) {
        float h[4] = {0, 0, 0, 0};
        for (int r = 0; r < R; ++r) h[r] = table[rows[r][i].d];
        const v128_t dw = wasm_v128_load(h);
        v128_t lo[R], hi[R];
        for (int r = 0; r < R; ++r) F::codes(rows[r][i], lo[r], hi[r], masks);
        for (int t = 0; t < T; ++t) {
            const size_t at = i * kMaxTokens + size_t(t);
            const v128_t a_lo = load16(act[t][i].qs);
            const v128_t a_hi = load16(act[t][i].qs + 16);
            const v128_t* bias = (kRelaxed && F::kBias != 0) ? &p.bias[2 * at] : nullptr;
            v128_t s[4];
            for (int r = 0; r < 4; ++r) s[r] = wasm_i32x4_splat(0);
            for (int r = 0; r < R; ++r) {
                s[r] = wasm_i32x4_add(half_sums<F>(a_lo, lo[r], bias), half_sums<F>(a_hi, hi[r], bias ? bias + 1 : nullptr));
            }
            const v128_t sums = hsum_i32x4(s[0], s[1], s[2], s[3]);
            const v128_t dd = wasm_f32x4_mul(dw, wasm_f32x4_splat(p.d[at]));
            acc[t] = A::madd(wasm_f32x4_convert_i32x4(sums), dd, acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) {
        float v[4];
        wasm_v128_store(v, acc[t]);
        for (int r = 0; r < R; ++r) out[size_t(t) * out_stride + size_t(r)] = v[r];
    }
}

template <class F, class A, bool kChain, int T>
void run(size_t nb, const uint8_t* w, size_t w_stride, int rows, const typename F::Act* const* act, const Prepared& p,
         float* out, size_t out_stride) {
    using Block = typename F::Block;
    auto row = [&](int r) { return reinterpret_cast<const Block*>(w + size_t(r) * w_stride); };
    int r0 = 0;
    if constexpr (kChain) {
        for (; r0 + kChainRows <= rows; r0 += kChainRows) {
            const Block* four[kChainRows] = {row(r0), row(r0 + 1), row(r0 + 2), row(r0 + 3)};
            rows_tokens_chain<F, A, kChainRows, T>(nb, four, act, p, out + r0, out_stride);
        }
        for (; r0 < rows; ++r0) {
            const Block* one[1] = {row(r0)};
            rows_tokens_chain<F, A, 1, T>(nb, one, act, p, out + r0, out_stride);
        }
    } else {
        for (; r0 < rows; ++r0) one_row<F, A, T>(nb, row(r0), act, p, out + r0, out_stride);
    }
}

template <class F, class A, bool kChain>
void tile(size_t n, const Tile& tile) {
    using Act = typename F::Act;
    const size_t nb = n / kQK32;
    thread_local Prepared p;
    for (int t0 = 0; t0 < tile.tokens; t0 += kMaxTokens) {
        const int T = std::min(kMaxTokens, tile.tokens - t0);
        prepare<F>(nb, tile, t0, T, p);
        const Act* act[kMaxTokens];
        for (int t = 0; t < T; ++t) act[t] = reinterpret_cast<const Act*>(tile.a + size_t(t0 + t) * tile.a_stride);
        float* out = tile.out + size_t(t0) * tile.out_stride;
        switch (T) {
            case 1: run<F, A, kChain, 1>(nb, tile.w, tile.w_stride, tile.rows, act, p, out, tile.out_stride); break;
            case 2: run<F, A, kChain, 2>(nb, tile.w, tile.w_stride, tile.rows, act, p, out, tile.out_stride); break;
            case 3: run<F, A, kChain, 3>(nb, tile.w, tile.w_stride, tile.rows, act, p, out, tile.out_stride); break;
            default: run<F, A, kChain, 4>(nb, tile.w, tile.w_stride, tile.rows, act, p, out, tile.out_stride); break;
        }
    }
}

// One row, one token.
template <class F, class A, bool kChain>
float dot(size_t n, const void* w, const void* a) {
    float out;
    tile<F, A, kChain>(n, Tile{static_cast<const uint8_t*>(w), 0, 1, static_cast<const uint8_t*>(a), 0, 1, &out, 1});
    return out;
}

template <class A>
bool select32(MatmulKernel& k, bool rows8) {
    switch (k.weight) {
        case Type::Q4_0:
            if (rows8) {
                k.dot = dot<Q4_0, A, true>;
                k.tile = tile<Q4_0, A, true>;
            } else {
                k.dot = dot<Q4_0, A, false>;
                k.tile = tile<Q4_0, A, false>;
            }
            return true;
        case Type::Q4_1: k.dot = dot<Q4_1, A, false>; k.tile = tile<Q4_1, A, false>; return true;
        case Type::Q5_0: k.dot = dot<Q5_0, A, false>; k.tile = tile<Q5_0, A, false>; return true;
        case Type::Q5_1: k.dot = dot<Q5_1, A, false>; k.tile = tile<Q5_1, A, false>; return true;
        case Type::Q8_0: k.dot = dot<Q8_0, A, false>; k.tile = tile<Q8_0, A, false>; return true;
        default: return false;
    }
}

}  // namespace

const float* half_table() {
    static const float* table = [] {
        static float t[65536];
        for (uint32_t h = 0; h < 65536; ++h) t[h] = fp16_to_f32(uint16_t(h));
        return t;
    }();
    return table;
}

void select(MatmulKernel& k, bool rows8, Isa isa) {
    bool done = false;
#if defined(__wasm_relaxed_simd__)
    if (isa == Isa::WasmRelaxed) done = select32<Relaxed>(k, rows8) || select_kquant_relaxed(k, rows8);
#else
    if (isa == Isa::WasmSimd) done = select32<Exact>(k, rows8) || select_kquant_exact(k, rows8);
    if (isa == Isa::WasmSimdFast) done = select32<Fast>(k, rows8) || select_kquant_fast(k, rows8);
#endif
    // The tiles serve one token too: rows share the activation's preparation.
    if (done) k.tile_min_tokens = 1;
    if (k.weight == Type::F16 && k.dot_batched) k.tile_batched = f16_tile_batched();
    if (k.quantize == ref::quantize_row_q8_0) k.quantize = quantize_row_q8_0;
    if (k.quantize == ref::quantize_row_q8_1) k.quantize = quantize_row_q8_1;
    if (k.quantize == ref::quantize_row_q8_K) k.quantize = quantize_row_q8_K;
}

}  // namespace smolinfer::quant::wasm

#endif
