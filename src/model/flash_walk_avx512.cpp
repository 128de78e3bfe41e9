// The chunk path's walk of flash attention (flash_attention.cpp: a token
// against the cached values one position at a time, the sums in a half
// accumulator) with AVX-512: 16 lanes per register, so a head of 64 is 4
// registers where the F16C form holds 8. Per lane the same operations in
// the same order -- the rescale where the softmax's maximum grew, one fused
// multiply-add and the round trip through half per position -- so the
// result is bit-identical; what changes is that each conversion to and from
// half, the walk's bottleneck, covers twice the lanes, and that the query
// heads of a KV head walk together, converting each position's values once.
#include "model/flash_walk.h"

#include "model/attention_kernels.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_ATTENTION)

#include <immintrin.h>

#include "runtime/machine.h"

namespace smolinfer::model {

namespace {

// x rounded to half and back (ggml's store and load of VKQ16).
inline __m512 round_to_half(__m512 x) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Head dim 16 * B.
template <int B>
void walk(const uint16_t* values, size_t stride, CellRuns2 runs, const float* weight, const float* rescale, int j0,
          int j1, float* out) {
    __m512 acc[B];
    for (int b = 0; b < B; ++b) acc[b] = _mm512_setzero_ps();
    for (int j = j0; j < j1; ++j) {
        if (const float r = rescale[j - j0]; r != 1.0f) {
            const __m512 vr = _mm512_set1_ps(r);
            for (int b = 0; b < B; ++b) acc[b] = round_to_half(_mm512_mul_ps(acc[b], vr));
        }
        if (j + kPrefetchValueRows < j1) prefetch_halves(values + size_t(runs.cell(j + kPrefetchValueRows)) * stride, 16 * B);
        const uint16_t* v = values + size_t(runs.cell(j)) * stride;
        const __m512 w = _mm512_set1_ps(weight[j - j0]);
        for (int b = 0; b < B; ++b) {
            const __m512 vb = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 16 * b)));
            acc[b] = round_to_half(_mm512_fmadd_ps(vb, w, acc[b]));
        }
    }
    for (int b = 0; b < B; ++b) _mm512_storeu_ps(out + 16 * b, acc[b]);
}

// G heads over columns col .. col + 16C - 1 (arguments as HeadsWalkFn's).
// Per lane the operations of walk<B>, in its order. On Zen 4 the walk is
// bound by its conversions (a 16-lane conversion from half takes a 512-bit
// pipe two cycles); converting the values once for G heads saves G - 1 of
// every G of those.
template <int G, int C>
void group_walk(const uint16_t* values, size_t stride, CellRuns2 runs, const float* weight, const float* rescale,
                size_t steps, int j0, int j1, int col, float* out, size_t out_stride) {
    __m512 acc[G][C];
    for (int g = 0; g < G; ++g) {
        for (int c = 0; c < C; ++c) acc[g][c] = _mm512_setzero_ps();
    }
    for (int j = j0; j < j1; ++j) {
        const size_t s = size_t(j - j0);
        for (int g = 0; g < G; ++g) {
            if (const float r = rescale[size_t(g) * steps + s]; r != 1.0f) {
                const __m512 vr = _mm512_set1_ps(r);
                for (int c = 0; c < C; ++c) acc[g][c] = round_to_half(_mm512_mul_ps(acc[g][c], vr));
            }
        }
        if (j + kPrefetchValueRows < j1) {
            prefetch_halves(values + size_t(runs.cell(j + kPrefetchValueRows)) * stride + col, 16 * C);
        }
        const uint16_t* v = values + size_t(runs.cell(j)) * stride + col;
        __m512 w[G];
        for (int g = 0; g < G; ++g) w[g] = _mm512_set1_ps(weight[size_t(g) * steps + s]);
        for (int c = 0; c < C; ++c) {
            const __m512 vc = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 16 * c)));
            for (int g = 0; g < G; ++g) acc[g][c] = round_to_half(_mm512_fmadd_ps(vc, w[g], acc[g][c]));
        }
    }
    for (int g = 0; g < G; ++g) {
        for (int c = 0; c < C; ++c) _mm512_storeu_ps(out + size_t(g) * out_stride + size_t(col + 16 * c), acc[g][c]);
    }
}

// Three heads at a time (two when two or four are left), 64 columns at a
// time (32 for a head of 32); a last head alone.
template <int B>
void heads_walk(const uint16_t* values, size_t stride, CellRuns2 runs, int n, const float* weight, const float* rescale,
                size_t steps, int j0, int j1, float* out, size_t out_stride) {
    constexpr int C = B < 4 ? B : 4;
    int h = 0;
    while (n - h >= 2) {
        const size_t at = size_t(h) * steps;
        float* o = out + size_t(h) * out_stride;
        const bool three = n - h >= 3 && n - h != 4;
        for (int col = 0; col < 16 * B; col += 16 * C) {
            if (three) {
                group_walk<3, C>(values, stride, runs, weight + at, rescale + at, steps, j0, j1, col, o, out_stride);
            } else {
                group_walk<2, C>(values, stride, runs, weight + at, rescale + at, steps, j0, j1, col, o, out_stride);
            }
        }
        h += three ? 3 : 2;
    }
    if (h < n) {
        walk<B>(values, stride, runs, weight + size_t(h) * steps, rescale + size_t(h) * steps, j0, j1,
                out + size_t(h) * out_stride);
    }
}

}  // namespace

HeadsWalkFn heads_walk_avx512(int head_dim) {
    if (!runtime::cpu_has_avx512()) return nullptr;
    switch (head_dim) {
        case 32: return heads_walk<2>;
        case 64: return heads_walk<4>;
        case 128: return heads_walk<8>;
        case 256: return heads_walk<16>;
        default: return nullptr;
    }
}

}  // namespace smolinfer::model

#else

namespace smolinfer::model {
HeadsWalkFn heads_walk_avx512(int) { return nullptr; }
}  // namespace smolinfer::model

#endif
