// AVX-512 VNNI tiles for the 32-value formats, bit-identical to their dots
// (dot_ref.cpp): every (row, token) gets the same 8 integer lane sums (4
// consecutive products each), the same fused multiply-add chain over the
// blocks and the same final tree. What changes is how the work is shared:
//
// - two weight rows ride in the two halves of one 512-bit register, so one
//   VPDPBUSD gives both rows' lane sums for a block, and a block's codes are
//   unpacked once for up to 8 tokens of the tile;
// - the activation scales of every (token, block) are converted to float
//   once per matrix product.
//
// VPDPBUSD multiplies unsigned weight bytes with signed activation bytes.
// Formats with signed codes store them biased (Q4_0 as nibble - 8, Q5_0 as
// value - 16, Q8_0 as byte) so the kernel uses the unsigned code c + bias
// and subtracts bias * (lane sum of the activations): the same integer.
#include "quant/tile_avx512.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_TILES)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "runtime/machine.h"

namespace smolinfer::quant::avx512 {

namespace {

constexpr int kMaxTokens = 8;  // tokens sharing one pass over a row pair

// Two rows' codes for one block each, as unsigned bytes: row 0's 32 values in
// the low 256 bits, row 1's in the high. `bias` makes them the format's
// values (value = code - bias).
inline __m512i nibbles2(const uint8_t* qs0, const uint8_t* qs1) {
    // [qs0 | qs1] -> [lo(qs0) hi(qs0) | lo(qs1) hi(qs1)], 16 bytes each.
    const __m256i q = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)), 1);
    const __m512i both = _mm512_permutex2var_epi64(_mm512_castsi256_si512(q), _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11),
                                                   _mm512_castsi256_si512(_mm256_srli_epi16(q, 4)));
    return _mm512_and_si512(both, _mm512_set1_epi8(0x0F));
}

// Two Q5 blocks' codes: the nibbles with 0x10 set in the bytes whose fifth
// bit (qh) is set, by one masked add (a nibble is below 0x10, so adding
// 0x10 sets that bit).
inline __m512i with_fifth_bits2(__m512i nibbles, const uint8_t* qh0, const uint8_t* qh1) {
    uint32_t b0, b1;
    std::memcpy(&b0, qh0, 4);
    std::memcpy(&b1, qh1, 4);
    return _mm512_mask_add_epi8(nibbles, __mmask64(b0) | (__mmask64(b1) << 32), nibbles, _mm512_set1_epi8(0x10));
}

// One block's codes as 32 unsigned bytes.
inline __m256i nibbles1(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1),
                            _mm256_set1_epi8(0x0F));
}

inline __m256i fifth_bits1(const uint8_t* qh) {
    uint32_t b;
    std::memcpy(&b, qh, 4);
    return _mm256_maskz_mov_epi8(__mmask32(b), _mm256_set1_epi8(0x10));
}

struct Q4_0 {
    using Block = BlockQ4_0;
    using Act = BlockQ8_0;
    static constexpr int kBias = 8;
    static constexpr bool kMin = false;
    static __m512i codes(const Block& b0, const Block& b1) { return nibbles2(b0.qs, b1.qs); }
    static __m256i codes(const Block& b) { return nibbles1(b.qs); }
};

struct Q4_1 {
    using Block = BlockQ4_1;
    using Act = BlockQ8_1;
    static constexpr int kBias = 0;
    static constexpr bool kMin = true;
    static __m512i codes(const Block& b0, const Block& b1) { return nibbles2(b0.qs, b1.qs); }
    static __m256i codes(const Block& b) { return nibbles1(b.qs); }
};

struct Q5_0 {
    using Block = BlockQ5_0;
    using Act = BlockQ8_0;
    static constexpr int kBias = 16;
    static constexpr bool kMin = false;
    static __m512i codes(const Block& b0, const Block& b1) {
        return with_fifth_bits2(nibbles2(b0.qs, b1.qs), b0.qh, b1.qh);
    }
    static __m256i codes(const Block& b) { return _mm256_or_si256(nibbles1(b.qs), fifth_bits1(b.qh)); }
};

struct Q5_1 {
    using Block = BlockQ5_1;
    using Act = BlockQ8_1;
    static constexpr int kBias = 0;
    static constexpr bool kMin = true;
    static __m512i codes(const Block& b0, const Block& b1) {
        return with_fifth_bits2(nibbles2(b0.qs, b1.qs), b0.qh, b1.qh);
    }
    static __m256i codes(const Block& b) { return _mm256_or_si256(nibbles1(b.qs), fifth_bits1(b.qh)); }
};

struct Q8_0 {
    using Block = BlockQ8_0;
    using Act = BlockQ8_0;
    static constexpr int kBias = 128;
    static constexpr bool kMin = false;
    static __m512i codes(const Block& b0, const Block& b1) {
        const __m512i q = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0.qs))),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1.qs)), 1);
        return _mm512_xor_si512(q, _mm512_set1_epi8(char(0x80)));
    }
    static __m256i codes(const Block& b) {
        return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)), _mm256_set1_epi8(char(0x80)));
    }
};

inline uint16_t sum_of(const BlockQ8_1& a) { return a.s; }
inline uint16_t sum_of(const BlockQ8_0&) { return 0; }

inline float half(uint16_t h) { return _cvtsh_ss(h); }

// _mm256 hsum as ggml's hsum_float_8.
inline float hsum8(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

inline __m256 low_half(__m512 v) { return _mm512_castps512_ps256(v); }
inline __m256 high_half(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

// The half-precision scale d (and minimum m, the next half) of `count` <= 8
// consecutive blocks of one row, as floats: [d0 m0 d1 m1 ... d7 m7]. Every
// 32-value block starts with d; the half after it is m for Q4_1/Q5_1 and
// data of the block otherwise (ignored).
template <class F>
inline __m512 scales8(const typename F::Block* blocks, int count) {
    const __m256i offsets = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                               _mm256_set1_epi32(int(sizeof(typename F::Block))));
    const __mmask8 mask = __mmask8((1u << count) - 1);
    const __m256i dm = _mm256_mmask_i32gather_epi32(_mm256_setzero_si256(), mask, offsets, blocks, 1);
    return _mm512_cvtph_ps(dm);
}

// What every row pair needs of the tokens, prepared once per matrix product
// (the tiles of one product share the activations, named by
// Tile::activation_id) instead of once per tile: per (block, token) the
// activation scale and minimum term as floats, [token group][block][kMaxTokens],
// and for biased formats -bias * (the 8 lane sums of the activation codes),
// [token][block], in both halves of a register: a row pair's lane sums
// start from it (the same integers as subtracting bias * sums afterwards,
// two instructions fewer per row pair, block and token).
struct alignas(64) LaneSums {
    int32_t v[16];
};

struct Prepared {
    uint64_t id = 0;
    const uint8_t* a = nullptr;
    int tokens = 0;
    size_t nb = 0;
    int format = -1;  // what d, s and bias hold: format_key<F>()
    std::vector<float> d, s;
    std::vector<LaneSums> bias;

    const float* group_d(int t0) const { return d.data() + size_t(t0 / kMaxTokens) * nb * kMaxTokens; }
    const float* group_s(int t0) const { return s.data() + size_t(t0 / kMaxTokens) * nb * kMaxTokens; }
    const LaneSums* token_bias(int t) const { return bias.data() + size_t(t) * nb; }
    template <bool kBiased>
    __m512i lane_start(int t, size_t i) const {
        if constexpr (!kBiased) return _mm512_setzero_si512();
        return _mm512_load_si512(token_bias(t)[i].v);
    }
};

template <class F>
constexpr int format_key() {
    return F::kBias * 2 + (F::kMin ? 1 : 0);
}

template <class F>
void prepare(size_t nb, const Tile& tile, Prepared& p) {
    if (tile.activation_id != 0 && p.id == tile.activation_id && p.a == tile.a && p.tokens == tile.tokens && p.nb == nb &&
        p.format == format_key<F>()) {
        return;
    }
    const size_t groups = size_t(tile.tokens + kMaxTokens - 1) / kMaxTokens;
    p.d.assign(groups * nb * kMaxTokens, 0.0f);
    p.s.assign(groups * nb * kMaxTokens, 0.0f);
    if constexpr (F::kBias != 0) p.bias.resize(size_t(tile.tokens) * nb);
    for (int t = 0; t < tile.tokens; ++t) {
        const auto* a = reinterpret_cast<const typename F::Act*>(tile.a + size_t(t) * tile.a_stride);
        const size_t at = size_t(t / kMaxTokens) * nb * kMaxTokens + size_t(t % kMaxTokens);
        for (size_t i = 0; i < nb; ++i) {
            p.d[at + i * kMaxTokens] = half(a[i].d);
            p.s[at + i * kMaxTokens] = half(sum_of(a[i]));
            if constexpr (F::kBias != 0) {
                const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs));
                const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), q);
                const __m256i neg = _mm256_mullo_epi32(sums, _mm256_set1_epi32(-F::kBias));
                _mm512_store_si512(p.bias[size_t(t) * nb + i].v, _mm512_broadcast_i64x4(neg));
            }
        }
    }
    p.id = tile.activation_id;
    p.a = tile.a;
    p.tokens = tile.tokens;
    p.nb = nb;
    p.format = format_key<F>();
}

// One pair of weight rows (w1 == w0 when the tile has an odd row left)
// times T tokens: res0[t], res1[t].
//
// Per (row, token): 8 float lanes, one fused multiply-add per block by
// d_w * d_a; for formats with a minimum, a second chain of m_w * s_a. Both
// rows' lanes share a register; the minimum chains of all (row, token)
// pairs share one, lane 8 * row + token.
template <class F, int T>
void row_pair(size_t nb, const typename F::Block* w0, const typename F::Block* w1, const typename F::Act* const* act,
              const Prepared& p, int t0, float* res0, float* res1) {
    const float* act_d = p.group_d(t0);
    const float* act_s = p.group_s(t0);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    __m512 mins = _mm512_setzero_ps();
    // Lane indices: even lanes of scales8 are d, odd are m; row 1's come after row 0's 16.
    const __m512i pick_d = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 16, 16, 16, 16, 16, 16, 16, 16);
    const __m512i pick_m = _mm512_add_epi32(pick_d, _mm512_set1_epi32(1));
    for (size_t i0 = 0; i0 < nb; i0 += 8) {
        const int count = int(std::min<size_t>(8, nb - i0));
        const __m512 s0 = scales8<F>(w0 + i0, count);
        const __m512 s1 = scales8<F>(w1 + i0, count);
        for (int j = 0; j < count; ++j) {
            const size_t i = i0 + size_t(j);
            const __m512i codes = F::codes(w0[i], w1[i]);
            const __m512i step = _mm512_set1_epi32(2 * j);
            const __m512 wd = _mm512_permutex2var_ps(s0, _mm512_add_epi32(pick_d, step), s1);
            for (int t = 0; t < T; ++t) {
                const __m512i a = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[t][i].qs)));
                const __m512i sums = _mm512_dpbusd_epi32(p.lane_start<F::kBias != 0>(t0 + t, i), codes, a);
                // d = d_w * d_a, rounded to float before the fused multiply-add, as llama.cpp does.
                const __m512 dd = _mm512_mul_ps(wd, _mm512_set1_ps(act_d[i * kMaxTokens + size_t(t)]));
                acc[t] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(sums), acc[t]);
            }
            if constexpr (F::kMin) {
                const __m512 wm = _mm512_permutex2var_ps(s0, _mm512_add_epi32(pick_m, step), s1);
                const __m512 as = _mm512_broadcast_f32x8(_mm256_loadu_ps(&act_s[i * kMaxTokens]));
                mins = _mm512_fmadd_ps(wm, as, mins);
            }
        }
    }
    alignas(64) float m[16];
    _mm512_store_ps(m, mins);
    for (int t = 0; t < T; ++t) {
        res0[t] = hsum8(low_half(acc[t])) + m[t];
        res1[t] = hsum8(high_half(acc[t])) + m[8 + t];
    }
}

// One token against P row pairs at once: the same per-row chains as
// row_pair<F, 1>, but P of them in flight. A single chain is bound by the
// fused multiply-add's latency (one block per ~4 cycles); with several
// independent rows the core overlaps them, and the token's codes, bias
// and scale are loaded once for all of them.
template <class F, int P>
void row_pairs_one_token(size_t nb, const typename F::Block* const* w, const typename F::Act* act, const Prepared& p,
                         float* res) {
    constexpr size_t kBlocksPerPrefetch = std::max<size_t>(1, 64 / sizeof(typename F::Block));
    const float* act_d = p.group_d(0);
    const float* act_s = p.group_s(0);
    __m512 acc[P], mins[P];
    for (int q = 0; q < P; ++q) acc[q] = mins[q] = _mm512_setzero_ps();
    // [d0 m0 d1 m1] (m: data of the block for formats without a minimum) ->
    // d (or m) of row 2q in the low 8 lanes, of row 2q + 1 in the high 8.
    const __m512i pick_d = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i pick_m = _mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
    for (size_t i = 0; i < nb; ++i) {
        // One prefetch per row for each cache line it moves through, not per block.
        if (i % kBlocksPerPrefetch == 0) {
            for (int r = 0; r < 2 * P; ++r) prefetch_ahead(w[r] + i, sizeof(w[r][i]));
        }
        const __m512i a = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[i].qs)));
        const __m512 ad = _mm512_set1_ps(act_d[i * kMaxTokens]);
        const __m512 as = _mm512_set1_ps(act_s[i * kMaxTokens]);
        const __m512i start = p.lane_start<F::kBias != 0>(0, i);
        for (int q = 0; q < P; ++q) {
            const auto& b0 = w[2 * q][i];
            const auto& b1 = w[2 * q + 1][i];
            const __m512i sums = _mm512_dpbusd_epi32(start, F::codes(b0, b1), a);
            // Every 32-value block starts with its half-precision d (and m).
            uint32_t dm0, dm1;
            std::memcpy(&dm0, &b0, 4);
            std::memcpy(&dm1, &b1, 4);
            const __m512 dm = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_insert_epi32(_mm_cvtsi32_si128(int(dm0)), int(dm1), 1)));
            // d = d_w * d_a, rounded to float before the fused multiply-add, as llama.cpp does.
            const __m512 dd = _mm512_mul_ps(_mm512_permutexvar_ps(pick_d, dm), ad);
            acc[q] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(sums), acc[q]);
            if constexpr (F::kMin) {
                mins[q] = _mm512_fmadd_ps(_mm512_permutexvar_ps(pick_m, dm), as, mins[q]);
            }
        }
    }
    for (int q = 0; q < P; ++q) {
        alignas(64) float m[16];
        _mm512_store_ps(m, mins[q]);
        res[2 * q] = hsum8(low_half(acc[q])) + m[0];
        res[2 * q + 1] = hsum8(high_half(acc[q])) + m[8];
    }
}

// Rows of one token, kOneTokenPairs pairs at a time, then pairs, then an
// odd row (paired with itself).
constexpr int kOneTokenPairs = 2;

template <class F>
void one_token(size_t nb, const Tile& tile, const Prepared& p) {
    using Block = typename F::Block;
    const auto* act = reinterpret_cast<const typename F::Act*>(tile.a);
    const auto row = [&](int r) { return reinterpret_cast<const Block*>(tile.w + size_t(std::min(r, tile.rows - 1)) * tile.w_stride); };
    int r = 0;
    for (; r + 2 * kOneTokenPairs <= tile.rows; r += 2 * kOneTokenPairs) {
        const Block* w[2 * kOneTokenPairs];
        for (int k = 0; k < 2 * kOneTokenPairs; ++k) w[k] = row(r + k);
        row_pairs_one_token<F, kOneTokenPairs>(nb, w, act, p, tile.out + r);
    }
    for (; r < tile.rows; r += 2) {
        const Block* w[2] = {row(r), row(r + 1)};
        float res[2];
        row_pairs_one_token<F, 1>(nb, w, act, p, res);
        tile.out[r] = res[0];
        if (r + 1 < tile.rows) tile.out[r + 1] = res[1];
    }
}

template <class F>
void tile(size_t n, const Tile& tile) {
    using Block = typename F::Block;
    using Act = typename F::Act;
    const size_t nb = n / kQK32;
    thread_local Prepared p;
    prepare<F>(nb, tile, p);
    if (tile.tokens == 1) return one_token<F>(nb, tile, p);
    for (int t0 = 0; t0 < tile.tokens; t0 += kMaxTokens) {
        const int T = std::min(kMaxTokens, tile.tokens - t0);
        const Act* act[kMaxTokens];
        for (int t = 0; t < T; ++t) act[t] = reinterpret_cast<const Act*>(tile.a + size_t(t0 + t) * tile.a_stride);
        for (int r = 0; r < tile.rows; r += 2) {
            if (t0 == 0) prefetch_tile_rows(tile, r + kTilePrefetchRows, 2);  // later token groups find them cached
            const bool pair = r + 1 < tile.rows;
            const auto* w0 = reinterpret_cast<const Block*>(tile.w + size_t(r) * tile.w_stride);
            const auto* w1 = pair ? reinterpret_cast<const Block*>(tile.w + size_t(r + 1) * tile.w_stride) : w0;
            float res0[kMaxTokens], res1[kMaxTokens];
            switch (T) {
                case 1: row_pair<F, 1>(nb, w0, w1, act, p, t0, res0, res1); break;
                case 2: row_pair<F, 2>(nb, w0, w1, act, p, t0, res0, res1); break;
                case 3: row_pair<F, 3>(nb, w0, w1, act, p, t0, res0, res1); break;
                case 4: row_pair<F, 4>(nb, w0, w1, act, p, t0, res0, res1); break;
                case 5: row_pair<F, 5>(nb, w0, w1, act, p, t0, res0, res1); break;
                case 6: row_pair<F, 6>(nb, w0, w1, act, p, t0, res0, res1); break;
                case 7: row_pair<F, 7>(nb, w0, w1, act, p, t0, res0, res1); break;
                default: row_pair<F, 8>(nb, w0, w1, act, p, t0, res0, res1); break;
            }
            for (int t = 0; t < T; ++t) {
                float* out = tile.out + size_t(t0 + t) * tile.out_stride + size_t(r);
                out[0] = res0[t];
                if (pair) out[1] = res1[t];
            }
        }
    }
}

}  // namespace

bool available() { return runtime::cpu_has_avx512(); }

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

}  // namespace smolinfer::quant::avx512

#else

namespace smolinfer::quant::avx512 {
bool available() { return false; }
TileFn tile_for(Type) { return nullptr; }
}  // namespace smolinfer::quant::avx512

#endif
