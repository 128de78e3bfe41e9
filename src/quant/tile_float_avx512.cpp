// AVX-512 kernels for half-precision weight matrices (bert and nomic-bert
// files are F16), bit-identical to their references in dot_ref.cpp:
//
// - batches (tinyBLAS's order, dot_f16_f16_tinyblas): value i of a row goes
//   to lane i % 16 of one fused chain, then _mm512_reduce_add_ps's tree. The
//   product's activations are widened to floats once, a block of 4 weight
//   rows once for all tokens, both into cache-line-aligned rows; a block
//   runs 4 rows x 6 tokens of chains with loads and FMAs only (the widening
//   in the loop, unaligned rows and one-at-a-time sums cost 1.35x, this host);
// - one token (ggml_vec_dot_f16's order, dot_f16_f16): four 16-lane
//   accumulators over steps of 64, combined (a0 + a2) + (a1 + a3), then the
//   tree; the values past the last step added one at a time in double.
//
// A half times a half is exact in float, so a fused multiply-add rounds as
// the reference's add of the product does.
#include "quant/tile_avx512.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_TILES)

#include <immintrin.h>

#include <vector>

#include "quant/fp16.h"
#include "quant/lanes.h"

namespace smolinfer::quant::avx512 {

namespace {

inline __m512 halves16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// _mm512_reduce_add_ps in lanes.h's order (the compiler's own reduce may
// pair the lanes differently).
inline float reduce(__m512 v) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, v);
    return hsum16(lanes);
}

// hsum16 of 16 vectors at once, each of its pairings done for all of them
// by one add of two shuffles: lane 4b + j of the result is v[4j + b]'s sum.
// (One sum at a time through memory took a quarter of a 768-value block.)
inline __m512 reduce16(const __m512 v[16]) {
    __m512 halves[8], quarters[4], pairs[2];
    for (int i = 0; i < 8; ++i) {  // lane l + 8 onto lane l: v[2i] in lanes 0-7, v[2i+1] in 8-15
        const __m512 x = v[2 * i], y = v[2 * i + 1];
        halves[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x44), _mm512_shuffle_f32x4(x, y, 0xEE));
    }
    for (int i = 0; i < 4; ++i) {  // lane l + 4 onto lane l: 128-bit block b holds v[4i + b]
        const __m512 x = halves[2 * i], y = halves[2 * i + 1];
        quarters[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88), _mm512_shuffle_f32x4(x, y, 0xDD));
    }
    for (int i = 0; i < 2; ++i) {  // (u0 + u2), (u1 + u3)
        const __m512 x = quarters[2 * i], y = quarters[2 * i + 1];
        pairs[i] = _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x44), _mm512_shuffle_ps(x, y, 0xEE));
    }
    return _mm512_add_ps(_mm512_shuffle_ps(pairs[0], pairs[1], 0x88), _mm512_shuffle_ps(pairs[0], pairs[1], 0xDD));
}

// R rows x T tokens of tinyBLAS chains over n values (n % 16 == 0); the
// tokens' activations already as floats (act: one row of n per token). The
// rows' weights: `w` with rows `w_stride` bytes apart, halves (Halves) or
// floats.
template <int R, int T, bool Halves>
void block_tinyblas(size_t n, const Tile& t, const uint8_t* w, size_t w_stride, const float* act, int r0, int t0) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) acc[r][k] = _mm512_setzero_ps();
    }
    const float* a = act + size_t(t0) * n;
    for (size_t i = 0; i < n; i += 16) {
        __m512 wv[R];
        for (int r = 0; r < R; ++r) {
            const uint8_t* row = w + size_t(r) * w_stride;
            wv[r] = Halves ? halves16(reinterpret_cast<const uint16_t*>(row) + i)
                           : _mm512_load_ps(reinterpret_cast<const float*>(row) + i);
        }
        for (int k = 0; k < T; ++k) {
            const __m512 av = _mm512_loadu_ps(a + size_t(k) * n + i);
            for (int r = 0; r < R; ++r) acc[r][k] = _mm512_fmadd_ps(wv[r], av, acc[r][k]);
        }
    }
    // The chains' sums, 16 at a time (zero chains fill the last group).
    constexpr int kChains = R * T;
    for (int c0 = 0; c0 < kChains; c0 += 16) {
        __m512 group[16];
        for (int c = 0; c < 16; ++c) group[c] = c0 + c < kChains ? acc[(c0 + c) / T][(c0 + c) % T] : _mm512_setzero_ps();
        alignas(64) float sums[16];
        _mm512_store_ps(sums, reduce16(group));
        for (int c = 0; c < 16 && c0 + c < kChains; ++c) {
            const int r = (c0 + c) / T, k = (c0 + c) % T;
            t.out[size_t(t0 + k) * t.out_stride + size_t(r0 + r)] = sums[(c % 4) * 4 + c / 4];
        }
    }
}

// 4 rows x 6 tokens: 24 accumulators, 4 weight vectors and one activation
// vector in the 32 registers; each converted weight vector serves 6 tokens,
// and the matmul's tiles of 16 rows split into whole blocks.
constexpr int kRows = 4;
constexpr int kTokens = 6;

using BlockFn = void (*)(size_t, const Tile&, const uint8_t*, size_t, const float*, int, int);

template <bool Halves, int R, int... T>
constexpr BlockFn blocks_for_rows[] = {block_tinyblas<R, T, Halves>...};

template <bool Halves>
BlockFn block_for(int rows, int tokens) {
    static constexpr const BlockFn* by_rows[kRows] = {
        blocks_for_rows<Halves, 1, 1, 2, 3, 4, 5, 6>, blocks_for_rows<Halves, 2, 1, 2, 3, 4, 5, 6>,
        blocks_for_rows<Halves, 3, 1, 2, 3, 4, 5, 6>, blocks_for_rows<Halves, 4, 1, 2, 3, 4, 5, 6>};
    return by_rows[rows - 1][tokens - 1];
}

// `count` floats of `buffer` from a cache line on (grown as needed): with
// n % 16 == 0 every row of n then starts on a line too, and no vector load
// is split across two.
float* aligned_floats(std::vector<float>& buffer, size_t count) {
    if (buffer.size() < count + 16) buffer.resize(count + 16);
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buffer.data()) + 63) & ~uintptr_t(63));
}

void tile_f16_tinyblas(size_t n, const Tile& t) {
    // The activations as floats (a half is exact as a float), converted by
    // each thread once per matrix product: its tiles share activation_id.
    thread_local std::vector<float> act_buffer;
    thread_local float* act = nullptr;
    thread_local uint64_t converted = 0;
    thread_local const uint8_t* converted_at = nullptr;
    thread_local size_t converted_values = 0;
    if (t.activation_id == 0 || t.activation_id != converted || t.a != converted_at ||
        converted_values < size_t(t.tokens) * n) {
        act = aligned_floats(act_buffer, size_t(t.tokens) * n);
        for (int k = 0; k < t.tokens; ++k) {
            const auto* a = reinterpret_cast<const uint16_t*>(t.a + size_t(k) * t.a_stride);
            for (size_t i = 0; i < n; i += 16) _mm512_store_ps(act + size_t(k) * n + i, halves16(a + i));
        }
        converted = t.activation_id;
        converted_at = t.a;
        converted_values = size_t(t.tokens) * n;
    }
    prefetch_tile_rows(t, t.rows, kTilePrefetchRows);
    // Up to one block of tokens, each weight vector serves once: widened in
    // the loop. Past that, a block of rows is widened once for all blocks of
    // tokens (at 8 tokens already 1.15x, at 122 1.4x, this host).
    if (t.tokens <= kTokens) {
        for (int r0 = 0; r0 < t.rows; r0 += kRows) {
            const int rows = t.rows - r0 < kRows ? t.rows - r0 : kRows;
            block_for<true>(rows, t.tokens)(n, t, t.w + size_t(r0) * t.w_stride, t.w_stride, act, r0, 0);
        }
        return;
    }
    thread_local std::vector<float> wf_buffer;
    float* wf = aligned_floats(wf_buffer, size_t(kRows) * n);
    const auto* wf_bytes = reinterpret_cast<const uint8_t*>(wf);
    for (int r0 = 0; r0 < t.rows; r0 += kRows) {
        const int rows = t.rows - r0 < kRows ? t.rows - r0 : kRows;
        for (int r = 0; r < rows; ++r) {
            const auto* w = reinterpret_cast<const uint16_t*>(t.w + size_t(r0 + r) * t.w_stride);
            for (size_t i = 0; i < n; i += 16) _mm512_store_ps(wf + size_t(r) * n + i, halves16(w + i));
        }
        for (int t0 = 0; t0 < t.tokens; t0 += kTokens) {
            const int tokens = t.tokens - t0 < kTokens ? t.tokens - t0 : kTokens;
            block_for<false>(rows, tokens)(n, t, wf_bytes, n * sizeof(float), act, r0, t0);
        }
    }
}

}  // namespace

float dot_f16_f16(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const uint16_t*>(a);
    const size_t vector_end = n / 64 * 64;
    double sum = 0.0;
    if (vector_end > 0) {
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        for (size_t i = 0; i < vector_end; i += 64) {
            prefetch_ahead(x + i, 128);
            for (int j = 0; j < 4; ++j) acc[j] = _mm512_fmadd_ps(halves16(x + i + 16 * j), halves16(y + i + 16 * j), acc[j]);
        }
        sum = reduce(_mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[1], acc[3])));
    }
    for (size_t i = vector_end; i < n; ++i) sum += double(fp16_to_f32(x[i]) * fp16_to_f32(y[i]));
    return float(sum);
}

TileFn f16_tile_batched() { return tile_f16_tinyblas; }

}  // namespace smolinfer::quant::avx512

#else

namespace smolinfer::quant::avx512 {
float dot_f16_f16(size_t, const void*, const void*) { return 0.0f; }
TileFn f16_tile_batched() { return nullptr; }
}  // namespace smolinfer::quant::avx512

#endif
