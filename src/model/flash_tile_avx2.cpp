// One step of the tiled flash-attention path (flash_attention.cpp) for the
// query heads of one token, with AVX2: bit-identical to the row-at-a-time
// form there, as flash_tile_avx512.cpp is. A row's 64 scores stay in eight
// registers over the head dimension, the softmax runs eight lanes at a time
// (exp_approx8; the 16-value sums stay quant::hsum16), and the heads of the
// token share each load of the tile's values. On an AVX2-only host this step
// was most of prefill at depth (flash_attend_tiled 56% and tile_softmax 17%
// of a 4096-deep pp128, SmolLM2 Q4_K_M). Its shape repeats the AVX-512
// file's on purpose: a template shared by the two would be a weak symbol that
// the AVX-512 translation unit may emit with AVX-512 instructions
// (scripts/check-isa-leaks says why that breaks AVX2-only CPUs).
#include "model/flash_tile.h"

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cmath>

#include "model/vector_math_avx2.h"
#include "quant/lanes.h"
#include "runtime/machine.h"

namespace smolinfer::model {

namespace {

constexpr int T = kFlashTileKv;  // positions of a tile: 8 registers
static_assert(T == 64);

// Lanes of positions 8c .. 8c + 7 that `seen` shows, as an all-ones mask.
inline __m256 seen_lanes(uint64_t seen, int c) {
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i bits = _mm256_and_si256(_mm256_set1_epi32(int((seen >> (8 * c)) & 0xFF)), bit);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(bits, bit));
}

// R query heads (rows), head_dim 8 * H.
template <int R, int H>
void tile_rows(const float* kt, const float* vt, const float* q, float scale, int valid, uint64_t seen, float* max,
               float* sum, float* acc) {
    constexpr int hd = 8 * H;
    alignas(32) float w[R][T];
    float rescale[R];
    const __m256 sc = _mm256_set1_ps(scale);
    const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
    for (int r = 0; r < R; ++r) {
        // Scores: s[c] holds positions 8c .. 8c + 7, one chain over i each.
        __m256 s[8];
        for (int c = 0; c < 8; ++c) s[c] = _mm256_setzero_ps();
        for (int i = 0; i < hd; ++i) {
            const float* k = kt + size_t(i) * T;
            const __m256 qi = _mm256_set1_ps(q[r * hd + i]);
            for (int c = 0; c < 8; ++c) s[c] = _mm256_fmadd_ps(_mm256_loadu_ps(k + 8 * c), qi, s[c]);
        }
        // The softmax step (tile_softmax): masked positions -inf, the tile's
        // maximum joins the running one, weights exp(score - max), their sum
        // in double 16 lanes at a time.
        __m256 x[8];
        __m256 tile_max = minus_inf;
        for (int c = 0; c < 8; ++c) {
            x[c] = _mm256_blendv_ps(minus_inf, _mm256_mul_ps(s[c], sc), seen_lanes(seen, c));
            tile_max = _mm256_max_ps(tile_max, x[c]);
        }
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, tile_max);
        float tmax = lanes[0];
        for (int l = 1; l < 8; ++l) tmax = tmax > lanes[l] ? tmax : lanes[l];
        const float m_new = std::fmax(max[r], tmax);
        rescale[r] = 1.0f;
        if (m_new > max[r]) {
            rescale[r] = std::exp(max[r] - m_new);
            sum[r] *= rescale[r];
        }
        max[r] = m_new;
        const __m256 mv = _mm256_set1_ps(m_new);
        for (int c = 0; c < 8; ++c) _mm256_store_ps(&w[r][8 * c], avx2::exp_approx8(_mm256_sub_ps(x[c], mv)));
        double tile_sum = 0.0;
        for (int c = 0; c < T; c += 16) tile_sum += double(quant::hsum16(&w[r][c]));
        sum[r] = float(double(sum[r]) + tile_sum);
    }
    // Values: a[r][h] holds dimensions 8(h0 + h) .. + 7, one chain over the
    // visible positions each; at most 12 registers of sums at a time.
    constexpr int HC = R <= 3 ? 4 : 2;
    static_assert(H % HC == 0);
    for (int h0 = 0; h0 < H; h0 += HC) {
        __m256 a[R][HC];
        for (int r = 0; r < R; ++r) {
            for (int h = 0; h < HC; ++h) {
                a[r][h] = _mm256_loadu_ps(acc + r * hd + 8 * (h0 + h));
                if (rescale[r] != 1.0f) a[r][h] = _mm256_mul_ps(a[r][h], _mm256_set1_ps(rescale[r]));
            }
        }
        for (int tk = 0; tk < valid; ++tk) {
            if (!(seen >> tk & 1)) continue;
            const float* v = vt + size_t(tk) * hd + 8 * h0;
            for (int h = 0; h < HC; ++h) {
                const __m256 vh = _mm256_loadu_ps(v + 8 * h);
                for (int r = 0; r < R; ++r) a[r][h] = _mm256_fmadd_ps(vh, _mm256_set1_ps(w[r][tk]), a[r][h]);
            }
        }
        for (int r = 0; r < R; ++r) {
            for (int h = 0; h < HC; ++h) _mm256_storeu_ps(acc + r * hd + 8 * (h0 + h), a[r][h]);
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

FlashTileRowsFn flash_tile_rows_avx2(int head_dim, int n_rows) {
    if (runtime::isa_limit() == runtime::IsaLimit::Scalar) return nullptr;
    switch (head_dim) {
        case 32: return for_rows<4>(n_rows);
        case 64: return for_rows<8>(n_rows);
        case 128: return for_rows<16>(n_rows);
        case 256: return for_rows<32>(n_rows);
        default: return nullptr;
    }
}

}  // namespace smolinfer::model

#else

namespace smolinfer::model {
FlashTileRowsFn flash_tile_rows_avx2(int, int) { return nullptr; }
}  // namespace smolinfer::model

#endif
