// One step of the tiled flash-attention path (flash_attention.cpp) for the
// query heads of one token, with AVX-512: bit-identical to the row-at-a-time
// form there. Each score is the same f32 fused multiply-add chain over the
// head dimension and each output dimension the same chain over the tile's
// positions; what changes is that a row's 64 scores and its head_dim sums
// stay in registers for the whole tile, and the heads of the token share
// every load of the tile's keys and values.
#include "model/flash_tile.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_ATTENTION)

#include <immintrin.h>

#include <cmath>

#include "model/vector_math_avx512.h"
#include "runtime/machine.h"

namespace smolinfer::model {

namespace {

constexpr int T = kFlashTileKv;  // positions of a tile: 4 registers
static_assert(T == 64);

// R query heads (rows), head_dim 16 * H.
template <int R, int H>
void tile_rows(const float* kt, const float* vt, const float* q, float scale, int valid, uint64_t seen, float* max,
               float* sum, float* acc) {
    constexpr int hd = 16 * H;
    // Scores: s[r][c] holds positions 16c .. 16c + 15, one chain over i each.
    __m512 s[R][4];
    for (int r = 0; r < R; ++r) {
        for (int c = 0; c < 4; ++c) s[r][c] = _mm512_setzero_ps();
    }
    for (int i = 0; i < hd; ++i) {
        const float* k = kt + size_t(i) * T;
        const __m512 k0 = _mm512_loadu_ps(k), k1 = _mm512_loadu_ps(k + 16), k2 = _mm512_loadu_ps(k + 32),
                     k3 = _mm512_loadu_ps(k + 48);
        for (int r = 0; r < R; ++r) {
            const __m512 qi = _mm512_set1_ps(q[r * hd + i]);
            s[r][0] = _mm512_fmadd_ps(k0, qi, s[r][0]);
            s[r][1] = _mm512_fmadd_ps(k1, qi, s[r][1]);
            s[r][2] = _mm512_fmadd_ps(k2, qi, s[r][2]);
            s[r][3] = _mm512_fmadd_ps(k3, qi, s[r][3]);
        }
    }
    // The softmax step (tile_softmax): masked positions -inf, the tile's
    // maximum joins the running one, weights exp(score - max), their sum in
    // double 16 lanes at a time.
    alignas(64) float w[R][T];
    float rescale[R];
    const __m512 sc = _mm512_set1_ps(scale);
    const __m512 minus_inf = _mm512_set1_ps(-INFINITY);
    for (int r = 0; r < R; ++r) {
        __m512 x[4];
        __m512 tile_max = minus_inf;
        for (int c = 0; c < 4; ++c) {
            const __mmask16 m = __mmask16(seen >> (16 * c));
            x[c] = _mm512_mask_mul_ps(minus_inf, m, s[r][c], sc);
            tile_max = _mm512_max_ps(tile_max, x[c]);
        }
        const float m_new = std::fmax(max[r], _mm512_reduce_max_ps(tile_max));
        rescale[r] = 1.0f;
        if (m_new > max[r]) {
            rescale[r] = std::exp(max[r] - m_new);
            sum[r] *= rescale[r];
        }
        max[r] = m_new;
        const __m512 mv = _mm512_set1_ps(m_new);
        double tile_sum = 0.0;
        for (int c = 0; c < 4; ++c) {
            const __m512 e = avx512::exp_approx16(_mm512_sub_ps(x[c], mv));
            _mm512_store_ps(&w[r][16 * c], e);
            tile_sum += double(avx512::hsum16(e));
        }
        sum[r] = float(double(sum[r]) + tile_sum);
    }
    // Values: a[r][h] holds dimensions 16(h0 + h) .. + 15, one chain over the
    // visible positions each; at most 8 registers a row at a time (a head of
    // 256 is done in two passes: each chain is still one chain).
    constexpr int HC = H < 8 ? H : 8;
    static_assert(H % HC == 0);
    for (int h0 = 0; h0 < H; h0 += HC) {
        __m512 a[R][HC];
        for (int r = 0; r < R; ++r) {
            for (int h = 0; h < HC; ++h) {
                a[r][h] = _mm512_loadu_ps(acc + r * hd + 16 * (h0 + h));
                if (rescale[r] != 1.0f) a[r][h] = _mm512_mul_ps(a[r][h], _mm512_set1_ps(rescale[r]));
            }
        }
        for (int tk = 0; tk < valid; ++tk) {
            if (!(seen >> tk & 1)) continue;
            const float* v = vt + size_t(tk) * hd + 16 * h0;
            for (int h = 0; h < HC; ++h) {
                const __m512 vh = _mm512_loadu_ps(v + 16 * h);
                for (int r = 0; r < R; ++r) a[r][h] = _mm512_fmadd_ps(vh, _mm512_set1_ps(w[r][tk]), a[r][h]);
            }
        }
        for (int r = 0; r < R; ++r) {
            for (int h = 0; h < HC; ++h) _mm512_storeu_ps(acc + r * hd + 16 * (h0 + h), a[r][h]);
        }
    }
}

template <int H>
FlashTileRowsFn for_rows(int n_rows) {
    switch (n_rows) {
        case 1: return tile_rows<1, H>;
        case 2: return tile_rows<2, H>;
        case 3: return tile_rows<3, H>;
        case 4: return tile_rows<4, H>;
        default: return nullptr;
    }
}

}  // namespace

FlashTileRowsFn flash_tile_rows_avx512(int head_dim, int n_rows) {
    if (!runtime::cpu_has_avx512()) return nullptr;
    switch (head_dim) {
        case 32: return for_rows<2>(n_rows);
        case 64: return for_rows<4>(n_rows);
        case 128: return for_rows<8>(n_rows);
        case 256: return for_rows<16>(n_rows);
        default: return nullptr;
    }
}

}  // namespace smolinfer::model

#else

namespace smolinfer::model {
FlashTileRowsFn flash_tile_rows_avx512(int, int) { return nullptr; }
}  // namespace smolinfer::model

#endif
