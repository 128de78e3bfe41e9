// AVX2 tiles for the 32-value formats, bit-identical to dot_avx2.cpp: every
// (row, token) pair gets the same 8 integer lane sums, the same fused
// multiply-add chain over the blocks (by d_w * d_a rounded to float), the
// same minimum chain for Q4_1/Q5_1 and the same final hsum8 (for
// activation codes in -127..127, all a finite row quantizes to: at -128 the
// dot's sign trick wraps and Q5_0's one-token path does not).
//
// Why a tile is faster than a dot per pair: a dot's blocks form one chain
// of dependent multiply-adds, so it runs at the adds' latency, not the
// CPU's throughput. A tile advances several pairs' chains side by side
// (R rows x T tokens, at most 8), and unpacks each block's codes once for
// all T tokens. Decoding several sequences together (smolinfer serve) and
// prompt batches are where this pays; for one token (one_token) four rows
// side by side stream a matrix from memory faster than a dot per row.
#include "quant/tile_avx2.h"

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/simd_avx2.h"

namespace smolinfer::quant::avx2 {

namespace {

constexpr int kMaxTokens = 8;  // tokens sharing one pass over a row
constexpr int kMaxPairs = 8;   // (row, token) chains advanced together

template <class B, class A, bool Signed, bool Min>
struct Format {
    using Block = B;
    using Act = A;
    static constexpr bool kSigned = Signed;  // codes are signed: lane_isums_ss
    static constexpr bool kMin = Min;        // Q4_1/Q5_1: minimum times the activation sum
};
using Q4_0 = Format<BlockQ4_0, BlockQ8_0, true, false>;
using Q4_1 = Format<BlockQ4_1, BlockQ8_1, false, true>;
using Q5_0 = Format<BlockQ5_0, BlockQ8_0, true, false>;
using Q5_1 = Format<BlockQ5_1, BlockQ8_1, false, true>;
using Q8_0 = Format<BlockQ8_0, BlockQ8_0, true, false>;

inline uint16_t sum_of(const BlockQ8_1& a) { return a.s; }  // only Q8_1 activations carry one

// The activation scale (and, for Q8_1, the scaled sum) of every (block,
// token) as floats, [token group][block][kMaxTokens]: converted once per
// matrix product (the tiles of one product share the activations, named by
// Tile::activation_id) instead of once per row.
struct Prepared {
    uint64_t id = 0;
    const uint8_t* a = nullptr;
    int tokens = 0;
    size_t nb = 0;
    bool sums = false;  // s holds the Q8_1 sums
    std::vector<float> d, s;

    const float* group_d(int t0) const { return d.data() + size_t(t0 / kMaxTokens) * nb * kMaxTokens; }
    const float* group_s(int t0) const { return sums ? s.data() + size_t(t0 / kMaxTokens) * nb * kMaxTokens : nullptr; }
};

template <class F>
void prepare(size_t nb, const Tile& tile, Prepared& p) {
    if (tile.activation_id != 0 && p.id == tile.activation_id && p.a == tile.a && p.tokens == tile.tokens && p.nb == nb &&
        p.sums == F::kMin) {
        return;
    }
    const size_t groups = size_t(tile.tokens + kMaxTokens - 1) / kMaxTokens;
    p.d.assign(groups * nb * kMaxTokens, 0.0f);
    p.s.assign(F::kMin ? groups * nb * kMaxTokens : 0, 0.0f);
    for (int t = 0; t < tile.tokens; ++t) {
        const auto* a = reinterpret_cast<const typename F::Act*>(tile.a + size_t(t) * tile.a_stride);
        const size_t at = size_t(t / kMaxTokens) * nb * kMaxTokens + size_t(t % kMaxTokens);
        for (size_t i = 0; i < nb; ++i) {
            p.d[at + i * kMaxTokens] = fp16_to_f32(a[i].d);
            if constexpr (F::kMin) p.s[at + i * kMaxTokens] = fp16_to_f32(sum_of(a[i]));
        }
    }
    p.id = tile.activation_id;
    p.a = tile.a;
    p.tokens = tile.tokens;
    p.nb = nb;
    p.sums = F::kMin;
}

// R rows times T tokens: res[r * T + t].
template <class F, int R, int T>
void rows_by_tokens(size_t nb, const typename F::Block* const* w, const typename F::Act* const* act, const float* act_d,
                    const float* act_s, float* res) {
    static_assert(R * T <= kMaxPairs);
    __m256 acc[R][T];
    __m256 mins[R];
    for (int r = 0; r < R; ++r) {
        mins[r] = _mm256_setzero_ps();
        for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    }
    for (size_t i = 0; i < nb; ++i) {
        for (int r = 0; r < R; ++r) {
            const __m256i x = codes(w[r][i]);
            const __m256i ux = F::kSigned ? _mm256_sign_epi8(x, x) : x;
            const __m256 wd = _mm256_set1_ps(fp16_to_f32(w[r][i].d));
            for (int t = 0; t < T; ++t) {
                __m256i y = load32(act[t][i].qs);
                if constexpr (F::kSigned) y = _mm256_sign_epi8(y, x);
                const __m256 sums = _mm256_cvtepi32_ps(lane_isums_us(ux, y));
                const __m256 d = _mm256_mul_ps(wd, _mm256_broadcast_ss(&act_d[i * kMaxTokens + size_t(t)]));
                acc[r][t] = _mm256_fmadd_ps(d, sums, acc[r][t]);
            }
            if constexpr (F::kMin) {
                // Lane t: token t's chain of m_w * s_a, as the dot's scalar fma.
                const __m256 wm = _mm256_set1_ps(fp16_to_f32(w[r][i].m));
                mins[r] = _mm256_fmadd_ps(wm, _mm256_loadu_ps(&act_s[i * kMaxTokens]), mins[r]);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        alignas(32) float m[8];
        _mm256_store_ps(m, mins[r]);
        for (int t = 0; t < T; ++t) res[r * T + t] = F::kMin ? hsum8(acc[r][t]) + m[t] : hsum8(acc[r][t]);
    }
}

// The tile's rows in steps of R, then what is left one by one.
template <class F, int R, int T>
void rows_in_steps(const Tile& tile, size_t nb, int t0, const typename F::Act* const* act, const Prepared& p) {
    using Block = typename F::Block;
    const auto row = [&](int r) { return reinterpret_cast<const Block*>(tile.w + size_t(r) * tile.w_stride); };
    const auto store = [&](int r0, int n_rows, const float* res) {
        for (int r = 0; r < n_rows; ++r) {
            for (int t = 0; t < T; ++t) tile.out[size_t(t0 + t) * tile.out_stride + size_t(r0 + r)] = res[r * T + t];
        }
    };
    float res[kMaxPairs];
    int r = 0;
    for (; r + R <= tile.rows; r += R) {
        if (t0 == 0) prefetch_tile_rows(tile, r + kTilePrefetchRows, R);  // later token groups find them cached
        const Block* w[R];
        for (int k = 0; k < R; ++k) w[k] = row(r + k);
        rows_by_tokens<F, R, T>(nb, w, act, p.group_d(t0), p.group_s(t0), res);
        store(r, R, res);
    }
    for (; r < tile.rows; ++r) {
        const Block* w[1] = {row(r)};
        rows_by_tokens<F, 1, T>(nb, w, act, p.group_d(t0), p.group_s(t0), res);
        store(r, 1, res);
    }
}

// With few tokens, more rows side by side keep enough chains going.
template <class F, int T>
void token_group(const Tile& tile, size_t nb, int t0, const typename F::Act* const* act, const Prepared& p) {
    constexpr int R = T <= 4 ? 2 : 1;
    rows_in_steps<F, R, T>(tile, nb, t0, act, p);
}

// One token (decoding): four rows' chains side by side, each exactly the
// dot's (the same vector chain, the same chain of minimums), sharing the
// activation block's load and scale. A lone dot is bound by its one chain
// of multiply-adds; four rows are bound by the vector units, so the rows'
// half-precision scales (and minimums) are gathered in a general register
// and converted together, and each row's scale comes back broadcast from
// memory (a load, where picking it out of a vector costs a lane-crossing
// shuffle per row). Q5_0 takes its codes unsigned (codes_plus16). Together
// with nibbles' single load: 20% less time a block, hot, for Q4_1 and Q5_0
// on an AVX2-only Zen 3 (kernel_bench).
template <class F>
void one_token_rows4(size_t nb, const typename F::Block* const* w, const typename F::Act* act, const float* act_d,
                     float* res) {
    using Block = typename F::Block;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    __m128 mins = _mm_setzero_ps();  // lane r: row r's chain
    for (size_t i = 0; i < nb; ++i) {
        for (int r = 0; r < 4; ++r) prefetch_ahead(&w[r][i], sizeof(Block));
        const __m256i y = load32(act[i].qs);
        uint64_t d4 = 0, m4 = 0;  // row r's half in bits 16r..16r+15
        for (int r = 0; r < 4; ++r) {
            d4 |= uint64_t(w[r][i].d) << (16 * r);
            if constexpr (F::kMin) m4 |= uint64_t(w[r][i].m) << (16 * r);
        }
        alignas(16) float scale[4];
        _mm_store_ps(scale, _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128(int64_t(d4))), _mm_set1_ps(act_d[i * kMaxTokens])));
        [[maybe_unused]] const __m256i y16 = std::is_same_v<Block, BlockQ5_0> ? times16(y) : y;
        for (int r = 0; r < 4; ++r) {
            __m256 sums;
            if constexpr (std::is_same_v<Block, BlockQ5_0>) {
                sums = lane_sums_minus16(codes_plus16(w[r][i]), y, y16);
            } else {
                const __m256i x = codes(w[r][i]);
                sums = F::kSigned ? lane_sums_ss(x, y) : lane_sums_us(x, y);
            }
            acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(&scale[r]), sums, acc[r]);
        }
        if constexpr (F::kMin) {
            const __m128 m = _mm_cvtph_ps(_mm_cvtsi64_si128(int64_t(m4)));
            mins = _mm_fmadd_ps(m, _mm_set1_ps(fp16_to_f32(sum_of(act[i]))), mins);
        }
    }
    alignas(16) float m[4];
    _mm_store_ps(m, mins);
    for (int r = 0; r < 4; ++r) res[r] = F::kMin ? hsum8(acc[r]) + m[r] : hsum8(acc[r]);
}

// Four rows at a time, each block asking for the weights
// kDotPrefetchDistance bytes ahead of it, as the dot does: one burst for
// the four rows' next weights at each step decoded SmolLM2-135M Q4_1
// about 10% slower at 1 and 2 threads on an AVX2-only Zen 3 (10-16
// interleaved runs). The last rows (fewer than four) one at a time.
template <class F>
void one_token(const Tile& tile, size_t nb, const typename F::Act* act, const Prepared& p) {
    using Block = typename F::Block;
    const auto row = [&](int r) { return reinterpret_cast<const Block*>(tile.w + size_t(r) * tile.w_stride); };
    float res[4];
    int r = 0;
    for (; r + 4 <= tile.rows; r += 4) {
        const Block* w[4] = {row(r), row(r + 1), row(r + 2), row(r + 3)};
        one_token_rows4<F>(nb, w, act, p.group_d(0), res);
        for (int k = 0; k < 4; ++k) tile.out[size_t(r + k)] = res[k];
    }
    const typename F::Act* acts[1] = {act};
    for (; r < tile.rows; ++r) {
        const Block* w[1] = {row(r)};
        rows_by_tokens<F, 1, 1>(nb, w, acts, p.group_d(0), p.group_s(0), &tile.out[size_t(r)]);
    }
}

template <class F>
void tile(size_t n, const Tile& tile) {
    using Act = typename F::Act;
    const size_t nb = n / kQK32;
    thread_local Prepared p;
    prepare<F>(nb, tile, p);
    if (tile.tokens == 1) {
        const auto* act = reinterpret_cast<const Act*>(tile.a);
        one_token<F>(tile, nb, act, p);
        return;
    }
    for (int t0 = 0; t0 < tile.tokens; t0 += kMaxTokens) {
        const int T = std::min(kMaxTokens, tile.tokens - t0);
        const Act* act[kMaxTokens];
        for (int t = 0; t < T; ++t) act[t] = reinterpret_cast<const Act*>(tile.a + size_t(t0 + t) * tile.a_stride);
        switch (T) {
            case 1: token_group<F, 1>(tile, nb, t0, act, p); break;
            case 2: token_group<F, 2>(tile, nb, t0, act, p); break;
            case 3: token_group<F, 3>(tile, nb, t0, act, p); break;
            case 4: token_group<F, 4>(tile, nb, t0, act, p); break;
            case 5: token_group<F, 5>(tile, nb, t0, act, p); break;
            case 6: token_group<F, 6>(tile, nb, t0, act, p); break;
            case 7: token_group<F, 7>(tile, nb, t0, act, p); break;
            default: token_group<F, 8>(tile, nb, t0, act, p); break;
        }
    }
}

}  // namespace

TileFn tile_for(Type weight) {
    switch (weight) {
        case Type::Q4_0: return tile<Q4_0>;
        case Type::Q4_1: return tile<Q4_1>;
        case Type::Q5_0: return tile<Q5_0>;
        case Type::Q5_1: return tile<Q5_1>;
        case Type::Q8_0: return tile<Q8_0>;
        default: return nullptr;
    }
}

}  // namespace smolinfer::quant::avx2

#else

namespace smolinfer::quant::avx2 {
TileFn tile_for(Type) { return nullptr; }
}  // namespace smolinfer::quant::avx2

#endif
