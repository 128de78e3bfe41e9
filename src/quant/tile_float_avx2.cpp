// AVX2 kernels for half-precision weight matrices (bert and nomic-bert files
// are F16), bit-identical to their references in dot_ref.cpp and so to the
// AVX-512 forms (tile_float_avx512.cpp), whose 16-lane orders they keep:
//
// - batches (tinyBLAS's order, dot_f16_f16_tinyblas): value i of a row goes
//   to lane i % 16 of one fused chain, here two 8-lane halves, then
//   hsum16's tree, which is hsum8 of the halves' sum. The activations are
//   widened to floats once per matrix product. Up to 3 tokens the weights
//   are widened as they are used (widening the tile's rows first halved the
//   speed at 2 tokens: 35 against 17.5 GFLOPS, 768 x 768, Zen 3); past that
//   the tile's rows are widened
//   once, and rows and activations are stored half by half (values 16j..16j
//   + 7 of a row, then 16j + 8..16j + 15): the chains' low halves run as
//   one pass and their high halves as another, each a plain 8-lane product
//   with 3 rows x 4 tokens of accumulators in registers, over blocks of
//   tokens that stay in the L2 cache;
// - one token (ggml_vec_dot_f16's order, dot_f16_f16): four 16-lane
//   accumulators over steps of 64, combined (a0 + a2) + (a1 + a3), then the
//   tree; the values past the last step added one at a time in double.
//
// Without them an AVX2-only CPU ran the scalar references: embedding with a
// bge-small-shaped F16 file was 20x slower than llama.cpp (Zen 3).
//
// A half times a half is exact in float, so a fused multiply-add rounds as
// the reference's add of the product does.
#include "quant/tile_avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "quant/fp16.h"
#include "quant/simd_avx2.h"

namespace smolinfer::quant::avx2 {

namespace {

inline __m256 halves8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// lanes.h's hsum16 of the 16 lanes lo (0-7) and hi (8-15).
inline float hsum16(__m256 lo, __m256 hi) { return hsum8(_mm256_add_ps(hi, lo)); }

// R rows x T tokens of tinyBLAS chains over n values (n % 16 == 0), each
// chain's lanes 0-7 and 8-15 in acc[.][.][0] and [1]; the tokens'
// activations already as floats (act: one row of n per token). The rows'
// weights: `w` with rows `w_stride` bytes apart, halves (Halves) or floats.
template <int R, int T, bool Halves>
void block_tinyblas(size_t n, const Tile& t, const uint8_t* w, size_t w_stride, const float* act, int r0, int t0) {
    __m256 acc[R][T][2];
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) acc[r][k][0] = acc[r][k][1] = _mm256_setzero_ps();
    }
    const float* a = act + size_t(t0) * n;
    for (size_t i = 0; i < n; i += 16) {
        __m256 wv[R][2];
        for (int r = 0; r < R; ++r) {
            const uint8_t* row = w + size_t(r) * w_stride;
            for (int h = 0; h < 2; ++h) {
                wv[r][h] = Halves ? halves8(reinterpret_cast<const uint16_t*>(row) + i + 8 * h)
                                  : _mm256_load_ps(reinterpret_cast<const float*>(row) + i + 8 * h);
            }
        }
        for (int k = 0; k < T; ++k) {
            for (int h = 0; h < 2; ++h) {
                const __m256 av = _mm256_loadu_ps(a + size_t(k) * n + i + 8 * h);
                for (int r = 0; r < R; ++r) acc[r][k][h] = _mm256_fmadd_ps(wv[r][h], av, acc[r][k][h]);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) t.out[size_t(t0 + k) * t.out_stride + size_t(r0 + r)] = hsum16(acc[r][k][0], acc[r][k][1]);
    }
}

// 2 rows x 3 tokens: 12 accumulators and 4 weight vectors in the 16
// registers (the activations are the multiply-adds' memory operands).
constexpr int kRows = 2;
constexpr int kTokens = 3;

using BlockFn = void (*)(size_t, const Tile&, const uint8_t*, size_t, const float*, int, int);

template <bool Halves>
BlockFn block_for(int rows, int tokens) {
    static constexpr BlockFn by_shape[kRows][kTokens] = {
        {block_tinyblas<1, 1, Halves>, block_tinyblas<1, 2, Halves>, block_tinyblas<1, 3, Halves>},
        {block_tinyblas<2, 1, Halves>, block_tinyblas<2, 2, Halves>, block_tinyblas<2, 3, Halves>}};
    return by_shape[rows - 1][tokens - 1];
}

// `count` floats of `buffer` from a 32-byte boundary on (grown as needed):
// with n % 16 == 0 every row of n then starts on one too.
float* aligned_floats(std::vector<float>& buffer, size_t count) {
    if (buffer.size() < count + 8) buffer.resize(count + 8);
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buffer.data()) + 31) & ~uintptr_t(31));
}

// A row of n halves as floats, half by half: value 16j + 8h + l at
// h * n / 2 + 8j + l.
void widen_split(const uint16_t* src, size_t n, float* dst) {
    const size_t half = n / 2;
    for (size_t j = 0; j < n / 16; ++j) {
        _mm256_store_ps(dst + 8 * j, halves8(src + 16 * j));
        _mm256_store_ps(dst + half + 8 * j, halves8(src + 16 * j + 8));
    }
}

// One half of R rows x T tokens of chains: `len` values of each (split)
// row and activation row from w[r] and a[t] on.
template <int R, int T>
void half_chains(size_t len, const float* const* w, const float* const* a, __m256 (&out)[R][T]) {
    // Local accumulators: written through `out` in the loop, they went to
    // memory on every step (the compiler cannot tell out from the rows).
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) acc[r][k] = _mm256_setzero_ps();
    }
    for (size_t i = 0; i < len; i += 8) {
        __m256 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = _mm256_load_ps(w[r] + i);
        for (int k = 0; k < T; ++k) {
            const __m256 av = _mm256_load_ps(a[k] + i);
            for (int r = 0; r < R; ++r) acc[r][k] = _mm256_fmadd_ps(wv[r], av, acc[r][k]);
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) out[r][k] = acc[r][k];
    }
}

// R rows x T tokens from split rows: wf (the tile's rows, n floats each)
// from row r0 on, af (the product's tokens) from token t0 on.
template <int R, int T>
void block_split(size_t n, const Tile& t, const float* wf, const float* af, int r0, int t0) {
    const size_t half = n / 2;
    const float* w[R];
    const float* a[T];
    for (int r = 0; r < R; ++r) w[r] = wf + size_t(r0 + r) * n;
    for (int k = 0; k < T; ++k) a[k] = af + size_t(t0 + k) * n;
    __m256 lo[R][T], hi[R][T];
    half_chains<R, T>(half, w, a, lo);
    for (int r = 0; r < R; ++r) w[r] += half;
    for (int k = 0; k < T; ++k) a[k] += half;
    half_chains<R, T>(half, w, a, hi);
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) t.out[size_t(t0 + k) * t.out_stride + size_t(r0 + r)] = hsum16(lo[r][k], hi[r][k]);
    }
}

constexpr int kSplitRows = 3;
constexpr int kSplitTokens = 4;
// Bytes of activations a block of tokens keeps in the L2 cache next to the
// tile's widened rows.
constexpr size_t kTokenBlockBytes = 192 << 10;

using SplitFn = void (*)(size_t, const Tile&, const float*, const float*, int, int);

SplitFn split_for(int rows, int tokens) {
    static constexpr SplitFn by_shape[kSplitRows][kSplitTokens] = {
        {block_split<1, 1>, block_split<1, 2>, block_split<1, 3>, block_split<1, 4>},
        {block_split<2, 1>, block_split<2, 2>, block_split<2, 3>, block_split<2, 4>},
        {block_split<3, 1>, block_split<3, 2>, block_split<3, 3>, block_split<3, 4>}};
    return by_shape[rows - 1][tokens - 1];
}

void tile_f16_tinyblas(size_t n, const Tile& t) {
    // The activations as floats (a half is exact as a float), converted by
    // each thread once per matrix product: its tiles share activation_id.
    // Split half by half when the tile takes the split path (and so will
    // every tile of the product: they have the same tokens).
    const bool split = t.tokens > kTokens;
    thread_local std::vector<float> act_buffer;
    thread_local float* act = nullptr;
    thread_local uint64_t converted = 0;
    thread_local const uint8_t* converted_at = nullptr;
    thread_local size_t converted_values = 0;
    thread_local bool converted_split = false;
    if (t.activation_id == 0 || t.activation_id != converted || t.a != converted_at ||
        converted_values < size_t(t.tokens) * n || converted_split != split) {
        act = aligned_floats(act_buffer, size_t(t.tokens) * n);
        for (int k = 0; k < t.tokens; ++k) {
            const auto* a = reinterpret_cast<const uint16_t*>(t.a + size_t(k) * t.a_stride);
            if (split) {
                widen_split(a, n, act + size_t(k) * n);
            } else {
                for (size_t i = 0; i < n; i += 8) _mm256_store_ps(act + size_t(k) * n + i, halves8(a + i));
            }
        }
        converted = t.activation_id;
        converted_at = t.a;
        converted_values = size_t(t.tokens) * n;
        converted_split = split;
    }
    prefetch_tile_rows(t, t.rows, kTilePrefetchRows);
    if (!split) {
        for (int r0 = 0; r0 < t.rows; r0 += kRows) {
            const int rows = t.rows - r0 < kRows ? t.rows - r0 : kRows;
            block_for<true>(rows, t.tokens)(n, t, t.w + size_t(r0) * t.w_stride, t.w_stride, act, r0, 0);
        }
        return;
    }
    thread_local std::vector<float> wf_buffer;
    float* wf = aligned_floats(wf_buffer, size_t(t.rows) * n);
    for (int r = 0; r < t.rows; ++r) widen_split(reinterpret_cast<const uint16_t*>(t.w + size_t(r) * t.w_stride), n, wf + size_t(r) * n);
    const int block = std::max(kSplitTokens, int(kTokenBlockBytes / (n * sizeof(float))) / kSplitTokens * kSplitTokens);
    // Rows in groups of 3, the last four as 2 + 2 (a group of one row does
    // 4 multiply-adds for 5 loads).
    const auto group = [&](int r0) { return t.rows - r0 == 4 ? 2 : std::min(kSplitRows, t.rows - r0); };
    for (int b0 = 0; b0 < t.tokens; b0 += block) {
        const int b1 = std::min(t.tokens, b0 + block);
        for (int r0 = 0; r0 < t.rows; r0 += group(r0)) {
            for (int t0 = b0; t0 < b1; t0 += kSplitTokens) split_for(group(r0), std::min(kSplitTokens, b1 - t0))(n, t, wf, act, r0, t0);
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
        __m256 acc[4][2] = {};
        for (size_t i = 0; i < vector_end; i += 64) {
            prefetch_ahead(x + i, 128);
            for (int j = 0; j < 4; ++j) {
                for (int h = 0; h < 2; ++h) {
                    const size_t at = i + 16 * size_t(j) + 8 * size_t(h);
                    acc[j][h] = _mm256_fmadd_ps(halves8(x + at), halves8(y + at), acc[j][h]);
                }
            }
        }
        __m256 r[2];
        for (int h = 0; h < 2; ++h) r[h] = _mm256_add_ps(_mm256_add_ps(acc[0][h], acc[2][h]), _mm256_add_ps(acc[1][h], acc[3][h]));
        sum = hsum16(r[0], r[1]);
    }
    for (size_t i = vector_end; i < n; ++i) sum += double(fp16_to_f32(x[i]) * fp16_to_f32(y[i]));
    return float(sum);
}

TileFn f16_tile_batched() { return tile_f16_tinyblas; }

}  // namespace smolinfer::quant::avx2

#else

// Never selected without F16C (kernels.cpp checks the same macros).
namespace smolinfer::quant::avx2 {
float dot_f16_f16(size_t, const void*, const void*) { return 0.0f; }
TileFn f16_tile_batched() { return nullptr; }
}  // namespace smolinfer::quant::avx2

#endif
