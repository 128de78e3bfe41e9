// AVX-512 kernels for half-precision weight matrices (bert and nomic-bert
// files are F16), bit-identical to their references in dot_ref.cpp:
//
// - batches (tinyBLAS's order, dot_f16_f16_tinyblas): value i of a row goes
//   to lane i % 16 of one fused chain, then _mm512_reduce_add_ps's tree. A
//   tile runs 4 rows x 4 tokens of chains at once, so each converted half
//   of a row serves four tokens and each of a token serves four rows;
// - one token (ggml_vec_dot_f16's order, dot_f16_f16): four 16-lane
//   accumulators over steps of 64, combined (a0 + a2) + (a1 + a3), then the
//   tree; the values past the last step added one at a time in double.
//
// A half times a half is exact in float, so a fused multiply-add rounds as
// the reference's add of the product does.
#include "quant/tile_avx512.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_TILES)

#include <immintrin.h>

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

// R rows x T tokens of tinyBLAS chains over n values (n % 16 == 0).
template <int R, int T>
void block_tinyblas(size_t n, const Tile& t, int r0, int t0) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) acc[r][k] = _mm512_setzero_ps();
    }
    const uint16_t* w[R];
    const uint16_t* a[T];
    for (int r = 0; r < R; ++r) w[r] = reinterpret_cast<const uint16_t*>(t.w + size_t(r0 + r) * t.w_stride);
    for (int k = 0; k < T; ++k) a[k] = reinterpret_cast<const uint16_t*>(t.a + size_t(t0 + k) * t.a_stride);
    for (size_t i = 0; i < n; i += 16) {
        __m512 wv[R], av[T];
        for (int r = 0; r < R; ++r) wv[r] = halves16(w[r] + i);
        for (int k = 0; k < T; ++k) av[k] = halves16(a[k] + i);
        for (int r = 0; r < R; ++r) {
            for (int k = 0; k < T; ++k) acc[r][k] = _mm512_fmadd_ps(wv[r], av[k], acc[r][k]);
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) t.out[size_t(t0 + k) * t.out_stride + size_t(r0 + r)] = reduce(acc[r][k]);
    }
}

using BlockFn = void (*)(size_t, const Tile&, int, int);

template <int R>
BlockFn block_for_tokens(int tokens) {
    switch (tokens) {
        case 1: return block_tinyblas<R, 1>;
        case 2: return block_tinyblas<R, 2>;
        case 3: return block_tinyblas<R, 3>;
        default: return block_tinyblas<R, 4>;
    }
}

BlockFn block_for(int rows, int tokens) {
    switch (rows) {
        case 1: return block_for_tokens<1>(tokens);
        case 2: return block_for_tokens<2>(tokens);
        case 3: return block_for_tokens<3>(tokens);
        default: return block_for_tokens<4>(tokens);
    }
}

void tile_f16_tinyblas(size_t n, const Tile& t) {
    for (int t0 = 0; t0 < t.tokens; t0 += 4) {
        const int tokens = t.tokens - t0 < 4 ? t.tokens - t0 : 4;
        for (int r0 = 0; r0 < t.rows; r0 += 4) {
            const int rows = t.rows - r0 < 4 ? t.rows - r0 : 4;
            prefetch_tile_rows(t, r0 + kTilePrefetchRows, rows);
            block_for(rows, tokens)(n, t, r0, t0);
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
