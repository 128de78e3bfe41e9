// AVX-512 kernels for half-precision weight matrices (bert and nomic-bert
// files are F16), bit-identical to their references in dot_ref.cpp:
//
// - batches (tinyBLAS's order, dot_f16_f16_tinyblas): value i of a row goes
//   to lane i % 16 of one fused chain, then _mm512_reduce_add_ps's tree. The
//   product's activations are converted to floats once; a tile runs 4 rows x
//   6 tokens of chains at once;
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

// R rows x T tokens of tinyBLAS chains over n values (n % 16 == 0); the
// tokens' activations already as floats (act: one row of n per token).
template <int R, int T>
void block_tinyblas(size_t n, const Tile& t, const float* act, int r0, int t0) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) acc[r][k] = _mm512_setzero_ps();
    }
    const uint16_t* w[R];
    for (int r = 0; r < R; ++r) w[r] = reinterpret_cast<const uint16_t*>(t.w + size_t(r0 + r) * t.w_stride);
    const float* a = act + size_t(t0) * n;
    for (size_t i = 0; i < n; i += 16) {
        __m512 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = halves16(w[r] + i);
        for (int k = 0; k < T; ++k) {
            const __m512 av = _mm512_loadu_ps(a + size_t(k) * n + i);
            for (int r = 0; r < R; ++r) acc[r][k] = _mm512_fmadd_ps(wv[r], av, acc[r][k]);
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) t.out[size_t(t0 + k) * t.out_stride + size_t(r0 + r)] = reduce(acc[r][k]);
    }
}

// 4 rows x 6 tokens: 24 accumulators, 4 weight vectors and one activation
// vector in the 32 registers; each converted weight vector serves 6 tokens,
// and the matmul's tiles of 16 rows split into whole blocks.
constexpr int kRows = 4;
constexpr int kTokens = 6;

using BlockFn = void (*)(size_t, const Tile&, const float*, int, int);

template <int R, int... T>
constexpr BlockFn blocks_for_rows[] = {block_tinyblas<R, T>...};

BlockFn block_for(int rows, int tokens) {
    static constexpr const BlockFn* by_rows[kRows] = {
        blocks_for_rows<1, 1, 2, 3, 4, 5, 6>, blocks_for_rows<2, 1, 2, 3, 4, 5, 6>, blocks_for_rows<3, 1, 2, 3, 4, 5, 6>,
        blocks_for_rows<4, 1, 2, 3, 4, 5, 6>};
    return by_rows[rows - 1][tokens - 1];
}

void tile_f16_tinyblas(size_t n, const Tile& t) {
    // The activations as floats (a half is exact as a float), converted by
    // each thread once per matrix product: its tiles share activation_id.
    thread_local std::vector<float> act;
    thread_local uint64_t converted = 0;
    thread_local const uint8_t* converted_at = nullptr;
    thread_local size_t converted_values = 0;
    if (t.activation_id == 0 || t.activation_id != converted || t.a != converted_at ||
        converted_values < size_t(t.tokens) * n) {
        if (act.size() < size_t(t.tokens) * n) act.resize(size_t(t.tokens) * n);
        for (int k = 0; k < t.tokens; ++k) {
            const auto* a = reinterpret_cast<const uint16_t*>(t.a + size_t(k) * t.a_stride);
            for (size_t i = 0; i < n; i += 16) _mm512_storeu_ps(&act[size_t(k) * n + i], halves16(a + i));
        }
        converted = t.activation_id;
        converted_at = t.a;
        converted_values = size_t(t.tokens) * n;
    }
    prefetch_tile_rows(t, t.rows, kTilePrefetchRows);
    for (int r0 = 0; r0 < t.rows; r0 += kRows) {
        const int rows = t.rows - r0 < kRows ? t.rows - r0 : kRows;
        for (int t0 = 0; t0 < t.tokens; t0 += kTokens) {
            block_for(rows, t.tokens - t0 < kTokens ? t.tokens - t0 : kTokens)(n, t, act.data(), r0, t0);
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
