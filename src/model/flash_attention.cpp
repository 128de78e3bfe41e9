#include "model/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "model/exp_approx.h"
#include "model/flash_softmax.h"
#include "model/flash_tile.h"
#include "model/flash_walk.h"
#include "quant/exact_fma.h"
#include "quant/fp16.h"
#include "quant/lanes.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#elif defined(__F16C__)
#include <immintrin.h>
#endif

namespace smolinfer::model {

using quant::exact_fma;
using quant::f32_to_fp16;
using quant::fp16_to_f32;

namespace {

constexpr int kMaxHeadDim = 512;  // as the model loader allows

float kq_scale(const AttentionShape& shape) {
    return shape.kq_scale != 0.0f ? shape.kq_scale : 1.0f / std::sqrt(float(shape.head_dim));
}

// The softmax is stepped ahead of the walk because the walk is a chain of
// roundings through half per position: with exp called inside it, every
// call spilled and reloaded the accumulator registers, and the walk took
// three times as long.
OnlineSoftmax softmax_steps(float* scores, float* rescale, float scale, int n) {
    static const SoftmaxStepsFn wide = softmax_steps_avx512();
    return wide ? wide(scores, rescale, scale, n) : softmax_steps_ref(scores, rescale, scale, n);
}

// The tiled path's softmax step over one tile of kFlashTileKv scores (-inf
// where masked), as ggml's: the tile's maximum joins the running one, the
// scores become weights exp(score - max) (ggml_vec_soft_max_f32: 16 lanes
// at a time, their sums added in double) and are added to the running sum.
// Returns the factor the sums so far take (1 when the maximum held; the
// running sum has it already).
float tile_softmax(float* w, float& max, float& sum) {
    float tile_max = -INFINITY;
    for (int tk = 0; tk < kFlashTileKv; ++tk) tile_max = tile_max > w[tk] ? tile_max : w[tk];
    const float m_new = std::fmax(max, tile_max);
    float rescale = 1.0f;
    if (m_new > max) {
        rescale = std::exp(max - m_new);
        sum *= rescale;
    }
    max = m_new;
    double tile_sum = 0.0;
    for (int c = 0; c < kFlashTileKv; c += 16) {
        for (int l = 0; l < 16; ++l) w[c + l] = exp_approx(w[c + l] - m_new);
        tile_sum += double(quant::hsum16(w + c));
    }
    sum = float(double(sum) + tile_sum);
    return rescale;
}

// y[i] = fma(a[i], b, y[i]) for i < n: vectorised by the compiler natively,
// four lanes at a time with relaxed SIMD (fused where the worker found FMA).
// Not `fused` (the plain SIMD128 build's fast arithmetic): the exact
// product plus y[i] in double, rounded to float -- the fused result but for
// rare ties of that double rounding, two lanes at a time. (A plain multiply
// then add loses too much here: flash attention's half accumulator turns
// the last bits into whole rounding steps, 0.5% of perplexity.)
inline void fma_row(float* y, const float* a, float b, int n, bool fused) {
    int i = 0;
#if defined(__wasm_simd128__)
    if (!fused) {
        const v128_t bd = wasm_f64x2_splat(double(b));
        const auto fma2 = [&](v128_t a2, v128_t y2) {
            return wasm_f32x4_demote_f64x2_zero(wasm_f64x2_add(
                wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(a2), bd), wasm_f64x2_promote_low_f32x4(y2)));
        };
        for (; i + 4 <= n; i += 4) {
            const v128_t av = wasm_v128_load(a + i), yv = wasm_v128_load(y + i);
            const v128_t lo = fma2(av, yv);
            const v128_t hi = fma2(wasm_i32x4_shuffle(av, av, 2, 3, 0, 1), wasm_i32x4_shuffle(yv, yv, 2, 3, 0, 1));
            wasm_v128_store(y + i, wasm_i32x4_shuffle(lo, hi, 0, 1, 4, 5));
        }
    }
#if defined(__wasm_relaxed_simd__)
    const v128_t vb = wasm_f32x4_splat(b);
    for (; i + 4 <= n; i += 4) {
        wasm_v128_store(y + i, wasm_f32x4_relaxed_madd(wasm_v128_load(a + i), vb, wasm_v128_load(y + i)));
    }
#endif
#endif
    if (!fused) {
        for (; i < n; ++i) y[i] = float(double(a[i]) * double(b) + double(y[i]));
    }
    for (; i < n; ++i) y[i] = exact_fma(a[i], b, y[i]);
}

// ggml_vec_scale_f16: acc = half(acc * s).
void scale_half_row(uint16_t* acc, int n, float s) {
    for (int i = 0; i < n; ++i) acc[i] = f32_to_fp16(fp16_to_f32(acc[i]) * s);
}

// ggml_vec_mad_f16: acc = half(fma(v, w, acc)), fused on every CPU llama.cpp
// vectorises it for (and in its scalar tail too, which compilers contract).
void mad_half_row(uint16_t* acc, const uint16_t* v, int n, float w) {
    for (int i = 0; i < n; ++i) acc[i] = f32_to_fp16(exact_fma(fp16_to_f32(v[i]), w, fp16_to_f32(acc[i])));
}

// The cells a query at `pos` sees, in order, and how many.
struct Visible {
    CellRuns runs;
    int n = 0;
};
Visible visible(const KvCache& cache, int layer, const AttentionShape& shape, int pos) {
    Visible v;
    v.runs = visible_runs(shape, cache.ring(layer), pos);
    for (int r = 0; r < v.runs.count; ++r) v.n += v.runs.end[r] - v.runs.begin[r];
    return v;
}

// The visible cells as the walks take them (flash_walk.h).
inline CellRuns2 runs2(const Visible& v) {
    return {v.runs.begin[0], v.runs.end[0] - v.runs.begin[0], v.runs.begin[1]};
}

// The cell of the j-th visible position.
inline int cell_of(const Visible& v, int j) { return runs2(v).cell(j); }

// How many visible positions lie in cells below `cell`.
inline int visible_below(const Visible& v, int cell) {
    int n = 0;
    for (int r = 0; r < v.runs.count; ++r) n += std::clamp(cell - v.runs.begin[r], 0, v.runs.end[r] - v.runs.begin[r]);
    return n;
}

// llama.cpp's attention for one decoded token (ggml_compute_forward_flash_attn_ext_f16):
// once its cache view (the cells in use padded to 256, at least 256) has
// 512 cells, it splits the view into `splits` equal runs of cells (one per
// thread), walks each from an empty sum, then folds the runs in order
// (ggml_flash_attn_ext_reduce_partials); otherwise one walk over all.
struct WalkParts {
    int view = 0;        // cells
    int part_cells = 0;  // cells per part
    int count = 1;       // parts (1: one walk over all)
};
WalkParts walk_parts(const AttentionShape& shape, int ring, int pos, int splits) {
    WalkParts w;
    w.view = std::max(256, (scanned_cells(shape, ring, pos) + 255) / 256 * 256);
    if (splits <= 1 || w.view < 512) {
        w.part_cells = w.view;
        return w;
    }
    w.part_cells = (w.view + splits - 1) / splits;
    w.count = (w.view + w.part_cells - 1) / w.part_cells;
    return w;
}

// The visible positions [first, end) part p walks.
struct PositionRange {
    int first, end;
};
PositionRange part_positions(const Visible& vis, const WalkParts& w, int p) {
    if (w.count == 1) return {0, vis.n};
    const int begin = p * w.part_cells;
    return {visible_below(vis, begin), visible_below(vis, std::min(begin + w.part_cells, w.view))};
}

// Folds one part's walk (sums `part`, not yet divided; its maximum and sum)
// into the running ones. A part the token sees nothing of adds nothing.
void fold_part(float* acc, float& max, float& sum, const float* part, float part_max, float part_sum, int hd) {
    if (part_sum == 0.0f) return;
    // The new maximum, each side's factor, then acc * old + part * new
    // with the second product rounded first (as the zen4 build's FMAs).
    const float m = std::fmax(max, part_max);
    const float old_scale = std::exp(max - m), new_scale = std::exp(part_max - m);
    for (int i = 0; i < hd; ++i) acc[i] = exact_fma(acc[i], old_scale, part[i] * new_scale);
    sum = exact_fma(sum, old_scale, part_sum * new_scale);
    max = m;
}

// One head's attention for a decoded token, its walk split as llama.cpp
// splits it. walk(j0, j1, acc, sm): one head's walk over visible positions
// j0..j1-1 from an empty sum; acc receives the half accumulator's values
// as floats (not yet divided by the sum), sm the walk's maximum and sum.
// Writes the head's output, head_dim floats.
template <class Walk>
void attend_in_parts(const Visible& vis, const AttentionShape& shape, int ring, int pos, int splits, int hd, float* out,
                     Walk walk) {
    const WalkParts parts = walk_parts(shape, ring, pos, splits);
    if (parts.count == 1) {
        OnlineSoftmax sm;
        walk(0, vis.n, out, sm);
        const float inv = sm.inverse_sum();
        for (int i = 0; i < hd; ++i) out[i] *= inv;
        return;
    }
    float acc[kMaxHeadDim], part[kMaxHeadDim];
    for (int i = 0; i < hd; ++i) acc[i] = 0.0f;
    float max = -INFINITY, sum = 0.0f;
    for (int p = 0; p < parts.count; ++p) {
        const PositionRange r = part_positions(vis, parts, p);
        OnlineSoftmax sm;
        walk(r.first, r.end, part, sm);
        fold_part(acc, max, sum, part, sm.max, sm.sum, hd);
    }
    const float inv = sum == 0.0f ? 1.0f : 1.0f / sum;
    for (int i = 0; i < hd; ++i) out[i] = acc[i] * inv;
}

// The chunk path's scores (ggml_vec_dot_f16 of the query rounded to half
// with each key) of the visible positions first..end-1, n_q rows of
// end - first at the start of scratch. (Each score is a dot of its own: the
// cells a window hides need none; llama.cpp skips them.)
float* chunk_scores(const KvCache& cache, int layer, const AttentionShape& shape, int off, int n_q, const Visible& v,
                    PositionRange range, const float* q, float* scratch, const AttentionKernels& kernels) {
    const int hd = shape.head_dim;
    const size_t n = size_t(range.end - range.first);
    float* scores = scratch;                  // n_q x n
    float* qh = scratch + size_t(n_q) * n;    // n_q x head_dim
    float* part = qh + size_t(n_q) * size_t(hd);  // one run's scores when the range spans two
    for (size_t i = 0; i < size_t(n_q) * size_t(hd); ++i) qh[i] = fp16_to_f32(f32_to_fp16(q[i]));
    int run_first = 0;  // the visible position of run r's first cell
    for (int r = 0; r < v.runs.count; ++r) {
        const int len = v.runs.end[r] - v.runs.begin[r];
        const int a = std::max(range.first, run_first), b = std::min(range.end, run_first + len);
        const int cell = v.runs.begin[r] + (a - run_first);
        run_first += len;
        if (a >= b) continue;
        const uint16_t* keys = cache.k(layer, cell) + off;
        if (size_t(b - a) == n) {  // the whole range in this run
            kernels.key_scores(keys, size_t(cache.kv_dim()), b - a, qh, n_q, hd, AttentionOrder::Single, scores);
            return scores;
        }
        kernels.key_scores(keys, size_t(cache.kv_dim()), b - a, qh, n_q, hd, AttentionOrder::Single, part);
        for (int g = 0; g < n_q; ++g) {
            std::copy_n(part + size_t(g) * size_t(b - a), b - a, scores + size_t(g) * n + size_t(a - range.first));
        }
    }
    return scores;
}

}  // namespace

void flash_attend_heads_ref(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q, int pos,
                            const float* q, float* out, float* scratch, int splits, const AttentionKernels& kernels) {
    const int hd = shape.head_dim;
    const int off = first_head / (shape.n_head / shape.n_head_kv) * hd;
    const float scale = kq_scale(shape);
    // Hidden cells are skipped, as llama.cpp skips cells its mask hides.
    const Visible vis = visible(cache, layer, shape, pos);
    const size_t N = size_t(vis.n);
    const float* scores = chunk_scores(cache, layer, shape, off, n_q, vis, {0, vis.n}, q, scratch, kernels);

    for (int g = 0; g < n_q; ++g) {
        const float* sg = scores + size_t(g) * N;
        attend_in_parts(vis, shape, cache.ring(layer), pos, splits, hd, out + size_t(g) * size_t(hd),
                        [&](int j0, int j1, float* a, OnlineSoftmax& sm) {
                            uint16_t acc[kMaxHeadDim];
                            for (int i = 0; i < hd; ++i) acc[i] = 0;
                            for (int j = j0; j < j1; ++j) {
                                if (sm.next(sg[j] * scale)) scale_half_row(acc, hd, sm.rescale);
                                mad_half_row(acc, cache.v_row(layer, cell_of(vis, j)) + off, hd, sm.weight);
                            }
                            for (int i = 0; i < hd; ++i) a[i] = fp16_to_f32(acc[i]);
                        });
    }
}

void flash_attend_tiled_ref(const KvCache& cache, int layer, const AttentionShape& shape, int kv_head, int n_tokens,
                            const int* pos, const float* q, float* out, size_t q_stride, float* scratch) {
    const int hd = shape.head_dim;
    const int group = shape.n_head / shape.n_head_kv;
    const int off = kv_head * hd;
    const float scale = kq_scale(shape);
    float* w = scratch;             // one tile's scores, then weights
    float* acc = scratch + kFlashTileKv;  // head_dim f32 sums
    for (int t = 0; t < n_tokens; ++t) {
        const int last = pos[t];
        const int ring = cache.ring(layer);
        const int n_cells = scanned_cells(shape, ring, last);
        for (int g = 0; g < group; ++g) {
            const size_t head = size_t(kv_head * group + g) * size_t(hd);
            const float* qg = q + size_t(t) * q_stride + head;
            float m = -INFINITY;
            float sum = 0.0f;
            for (int i = 0; i < hd; ++i) acc[i] = 0.0f;
            // Cells past the token's position and cells its window hides are
            // masked; a tile with no cell the token sees is skipped.
            for (int t0 = 0; t0 < n_cells; t0 += kFlashTileKv) {
                const int valid = std::min(kFlashTileKv, n_cells - t0);  // the rest is masked
                bool any = false;
                for (int tk = 0; tk < valid; ++tk) any = any || sees(shape, ring, last, t0 + tk);
                if (!any) continue;
                for (int tk = 0; tk < kFlashTileKv; ++tk) {
                    if (tk >= valid || !sees(shape, ring, last, t0 + tk)) {
                        w[tk] = -INFINITY;
                        continue;
                    }
                    const uint16_t* k = cache.k(layer, t0 + tk) + off;
                    float d = 0.0f;
                    for (int i = 0; i < hd; ++i) d = exact_fma(qg[i], fp16_to_f32(k[i]), d);
                    w[tk] = d * scale;
                }
                const float ms = tile_softmax(w, m, sum);
                if (ms != 1.0f) {
                    for (int i = 0; i < hd; ++i) acc[i] *= ms;
                }
                for (int tk = 0; tk < valid; ++tk) {
                    if (!sees(shape, ring, last, t0 + tk)) continue;
                    const uint16_t* v = cache.v_row(layer, t0 + tk) + off;
                    for (int i = 0; i < hd; ++i) acc[i] = exact_fma(w[tk], fp16_to_f32(v[i]), acc[i]);
                }
            }
            const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
            float* o = out + size_t(t) * q_stride + head;
            for (int i = 0; i < hd; ++i) o[i] = acc[i] * inv;
        }
    }
}

// The same arithmetic as the references above, arranged for speed: halves
// converted a row at a time, the sums as row operations.

#if defined(__F16C__) && defined(__FMA__)
namespace {

// x rounded to half and back, eight lanes (ggml's store and load of VKQ16).
inline __m256 round_to_half(__m256 x) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// The chunk path's walk (ChunkWalkFn in flash_walk.h) with the half
// accumulator held as floats that are halves, B registers of 8 (head_dim
// 8 * B; flash_walk_avx512.cpp is the 16-lane form). A compile-time B keeps
// the accumulator in registers: held in an array indexed at run time it
// went through memory at every position, and each position waited for the
// store of the one before.
template <int B>
void chunk_walk_f16c(const uint16_t* values, size_t stride, CellRuns2 runs, const float* weight, const float* rescale,
                     int j0, int j1, float* out) {
    __m256 acc[B];
    for (int b = 0; b < B; ++b) acc[b] = _mm256_setzero_ps();
    for (int j = j0; j < j1; ++j) {
        if (const float r = rescale[j - j0]; r != 1.0f) {
            const __m256 vr = _mm256_set1_ps(r);
            for (int b = 0; b < B; ++b) acc[b] = round_to_half(_mm256_mul_ps(acc[b], vr));
        }
        if (j + kPrefetchValueRows < j1) prefetch_halves(values + size_t(runs.cell(j + kPrefetchValueRows)) * stride, 8 * B);
        const uint16_t* v = values + size_t(runs.cell(j)) * stride;
        const __m256 w = _mm256_broadcast_ss(weight + (j - j0));
        for (int b = 0; b < B; ++b) {
            const __m256 vb = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 8 * b)));
            acc[b] = round_to_half(_mm256_fmadd_ps(vb, w, acc[b]));
        }
    }
    for (int b = 0; b < B; ++b) _mm256_storeu_ps(out + 8 * b, acc[b]);
}

// G heads of one KV head walked together over columns col .. col + 8C - 1
// of their heads (weights and rescales `steps` floats apart, outputs
// out_stride apart). Each position's values are loaded and converted once
// for the G heads, and the G x C accumulators are independent chains, so
// the walk waits less on each round trip through half. Per lane the
// operations of chunk_walk_f16c, in its order.
template <int G, int C>
void group_walk_f16c(const uint16_t* values, size_t stride, CellRuns2 runs, const float* weight, const float* rescale,
                     size_t steps, int j0, int j1, int col, float* out, size_t out_stride) {
    __m256 acc[G][C];
    for (int g = 0; g < G; ++g) {
        for (int c = 0; c < C; ++c) acc[g][c] = _mm256_setzero_ps();
    }
    for (int j = j0; j < j1; ++j) {
        const size_t s = size_t(j - j0);
        for (int g = 0; g < G; ++g) {
            if (const float r = rescale[size_t(g) * steps + s]; r != 1.0f) {
                const __m256 vr = _mm256_set1_ps(r);
                for (int c = 0; c < C; ++c) acc[g][c] = round_to_half(_mm256_mul_ps(acc[g][c], vr));
            }
        }
        if (j + kPrefetchValueRows < j1) {
            prefetch_halves(values + size_t(runs.cell(j + kPrefetchValueRows)) * stride + col, 8 * C);
        }
        const uint16_t* v = values + size_t(runs.cell(j)) * stride + col;
        __m256 w[G];
        for (int g = 0; g < G; ++g) w[g] = _mm256_broadcast_ss(weight + size_t(g) * steps + s);
        for (int c = 0; c < C; ++c) {
            const __m256 vc = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 8 * c)));
            for (int g = 0; g < G; ++g) acc[g][c] = round_to_half(_mm256_fmadd_ps(vc, w[g], acc[g][c]));
        }
    }
    for (int g = 0; g < G; ++g) {
        for (int c = 0; c < C; ++c) _mm256_storeu_ps(out + size_t(g) * out_stride + size_t(col + 8 * c), acc[g][c]);
    }
}

// n heads' walks (arguments as group_walk_f16c's), three or two at a time
// where the head size is a multiple of 32, else one at a time by `one`.
void walk_heads_f16c(ChunkWalkFn one, const uint16_t* values, size_t stride, CellRuns2 runs, int hd, int n,
                     const float* weight, const float* rescale, size_t steps, int j0, int j1, float* out,
                     size_t out_stride) {
    int h = 0;
    while (hd % 32 == 0 && n - h >= 2) {
        const size_t at = size_t(h) * steps;
        float* o = out + size_t(h) * out_stride;
        const bool three = n - h >= 3 && n - h != 4;  // four heads go as two pairs
        for (int col = 0; col < hd; col += 32) {
            if (three) {
                group_walk_f16c<3, 4>(values, stride, runs, weight + at, rescale + at, steps, j0, j1, col, o, out_stride);
            } else {
                group_walk_f16c<2, 4>(values, stride, runs, weight + at, rescale + at, steps, j0, j1, col, o, out_stride);
            }
        }
        h += three ? 3 : 2;
    }
    for (; h < n; ++h) {
        one(values, stride, runs, weight + size_t(h) * steps, rescale + size_t(h) * steps, j0, j1,
            out + size_t(h) * out_stride);
    }
}

// The form for a head size, or null (then the generic path runs).
ChunkWalkFn chunk_walk_f16c_for(int hd) {
    switch (hd) {
        case 32: return chunk_walk_f16c<4>;
        case 40: return chunk_walk_f16c<5>;
        case 48: return chunk_walk_f16c<6>;
        case 64: return chunk_walk_f16c<8>;
        case 80: return chunk_walk_f16c<10>;
        case 96: return chunk_walk_f16c<12>;
        case 128: return chunk_walk_f16c<16>;
        case 256: return chunk_walk_f16c<32>;
        default: return nullptr;
    }
}

}  // namespace
#endif

namespace {

// The chunk path's walk of n heads of one KV head over visible positions
// j0..j1-1, each from an empty sum, their softmax stepped (softmax_steps):
// head h's weights at weight + h * steps, its rescales at rescale + h *
// steps; its output, the half accumulator's values as floats, at out + h *
// out_stride.
void walk_values(const KvCache& cache, int layer, int off, int hd, const Visible& vis, int n, const float* weight,
                 const float* rescale, size_t steps, int j0, int j1, float* out, size_t out_stride, bool fused) {
    const CellRuns2 runs = runs2(vis);
    const uint16_t* values = cache.v_row(layer, 0) + off;
    const size_t stride = size_t(cache.kv_dim());
    // 16 lanes where the CPU has them (flash_walk_avx512.cpp).
    if (const HeadsWalkFn wide = fused ? heads_walk_avx512(hd) : nullptr) {
        wide(values, stride, runs, n, weight, rescale, steps, j0, j1, out, out_stride);
        return;
    }
#if defined(__F16C__) && defined(__FMA__)
    if (const ChunkWalkFn one = fused ? chunk_walk_f16c_for(hd) : nullptr) {
        walk_heads_f16c(one, values, stride, runs, hd, n, weight, rescale, steps, j0, j1, out, out_stride);
        return;
    }
#endif
    uint16_t acc[kMaxHeadDim];
    float v32[kMaxHeadDim];
    for (int h = 0; h < n; ++h) {
        const float* wh = weight + size_t(h) * steps;
        const float* rh = rescale + size_t(h) * steps;
        float* acc32 = out + size_t(h) * out_stride;
        for (int i = 0; i < hd; ++i) acc32[i] = 0.0f;
        for (int j = j0; j < j1; ++j) {
            if (const float r = rh[j - j0]; r != 1.0f) {
                for (int i = 0; i < hd; ++i) acc32[i] *= r;
                quant::f32_to_fp16_row(acc32, acc, size_t(hd));
                quant::fp16_to_f32_row(acc, acc32, size_t(hd));
            }
            quant::fp16_to_f32_row(values + size_t(runs.cell(j)) * stride, v32, size_t(hd));
            fma_row(acc32, v32, wh[j - j0], hd, fused);
            quant::f32_to_fp16_row(acc32, acc, size_t(hd));
            quant::fp16_to_f32_row(acc, acc32, size_t(hd));
        }
    }
}

}  // namespace

void flash_attend_heads(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q, int pos,
                        const float* q, float* out, float* scratch, bool fused, int splits,
                        const AttentionKernels& kernels) {
    const int hd = shape.head_dim;
    const int off = first_head / (shape.n_head / shape.n_head_kv) * hd;
    const float scale = kq_scale(shape);
    const Visible vis = visible(cache, layer, shape, pos);
    const size_t N = size_t(vis.n);
    float* scores = chunk_scores(cache, layer, shape, off, n_q, vis, {0, vis.n}, q, scratch, kernels);
    // Past the scores: what chunk_scores needed only while scoring.
    float* rescales = scratch + size_t(n_q) * N;
    const int ring = cache.ring(layer);
    if (walk_parts(shape, ring, pos, splits).count == 1) {
        // One walk over every position: the heads' values walked together.
        float* inverse_sums = rescales + size_t(n_q) * N;
        for (int g = 0; g < n_q; ++g) {
            inverse_sums[g] = softmax_steps(scores + size_t(g) * N, rescales + size_t(g) * N, scale, vis.n).inverse_sum();
        }
        walk_values(cache, layer, off, hd, vis, n_q, scores, rescales, N, 0, vis.n, out, size_t(hd), fused);
        for (int g = 0; g < n_q; ++g) {
            for (int i = 0; i < hd; ++i) out[size_t(g) * size_t(hd) + size_t(i)] *= inverse_sums[g];
        }
        return;
    }
    for (int g = 0; g < n_q; ++g) {
        float* sg = scores + size_t(g) * N;
        float* rg = rescales + size_t(g) * N;
        attend_in_parts(vis, shape, ring, pos, splits, hd, out + size_t(g) * size_t(hd),
                        [&](int j0, int j1, float* acc32, OnlineSoftmax& sm) {
                            sm = softmax_steps(sg + j0, rg + j0, scale, j1 - j0);
                            walk_values(cache, layer, off, hd, vis, 1, sg + j0, rg + j0, 0, j0, j1, acc32, 0, fused);
                        });
    }
}

OnlineSoftmax softmax_steps_ref(float* scores, float* rescale, float scale, int n) {
    OnlineSoftmax sm;
    for (int j = 0; j < n; ++j) {
        const bool grew = sm.next(scores[j] * scale);
        scores[j] = sm.weight;
        rescale[j] = grew ? sm.rescale : 1.0f;
    }
    return sm;
}

int flash_walk_parts(const KvCache& cache, int layer, const AttentionShape& shape, int pos, int splits) {
    return walk_parts(shape, cache.ring(layer), pos, splits).count;
}

void flash_attend_part(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q, int pos,
                       const float* q, int splits, int part, float* partial, float* scratch, bool fused,
                       const AttentionKernels& kernels) {
    const int hd = shape.head_dim;
    const int off = first_head / (shape.n_head / shape.n_head_kv) * hd;
    const float scale = kq_scale(shape);
    const Visible vis = visible(cache, layer, shape, pos);
    const PositionRange range = part_positions(vis, walk_parts(shape, cache.ring(layer), pos, splits), part);
    const size_t n = size_t(range.end - range.first);
    float* scores = chunk_scores(cache, layer, shape, off, n_q, vis, range, q, scratch, kernels);
    float* rescales = scratch + size_t(n_q) * n;  // as in flash_attend_heads
    for (int g = 0; g < n_q; ++g) {
        const OnlineSoftmax sm = softmax_steps(scores + size_t(g) * n, rescales + size_t(g) * n, scale, int(n));
        float* p = partial + size_t(g) * size_t(hd + 2);
        p[hd] = sm.max;
        p[hd + 1] = sm.sum;
    }
    walk_values(cache, layer, off, hd, vis, n_q, scores, rescales, n, range.first, range.end, partial, size_t(hd + 2),
                fused);
}

void flash_fold_parts(const float* partials, size_t part_stride, int parts, int n_q, int head_dim, float* out) {
    const int hd = head_dim;
    for (int g = 0; g < n_q; ++g) {
        float acc[kMaxHeadDim];
        for (int i = 0; i < hd; ++i) acc[i] = 0.0f;
        float max = -INFINITY, sum = 0.0f;
        for (int p = 0; p < parts; ++p) {
            const float* part = partials + size_t(p) * part_stride + size_t(g) * size_t(hd + 2);
            fold_part(acc, max, sum, part, part[hd], part[hd + 1], hd);
        }
        const float inv = sum == 0.0f ? 1.0f : 1.0f / sum;
        for (int i = 0; i < hd; ++i) out[size_t(g) * size_t(hd) + size_t(i)] = acc[i] * inv;
    }
}

void flash_attend_tiled(const KvCache& cache, int layer, const AttentionShape& shape, int kv_head, int n_tokens,
                        const int* pos, const float* q, float* out, size_t q_stride, float* scratch, bool fused) {
    constexpr int T = kFlashTileKv;
    const int hd = shape.head_dim;
    const int group = shape.n_head / shape.n_head_kv;
    const int off = kv_head * hd;
    const float scale = kq_scale(shape);
    const int rows = n_tokens * group;
    // One tile's keys transposed (kt[i * T + tk]: dimension i of position
    // tk) and values (vt[tk * hd + i]), converted once for every row.
    float* kt = scratch;
    float* vt = kt + size_t(hd) * T;
    float* w = vt + size_t(hd) * T;  // a row's scores, then weights
    float* acc = w + T;              // rows x head_dim
    float* m = acc + size_t(rows) * size_t(hd);
    float* sum = m + rows;
    for (int r = 0; r < rows; ++r) {
        m[r] = -INFINITY;
        sum[r] = 0.0f;
    }
    for (size_t i = 0; i < size_t(rows) * size_t(hd); ++i) acc[i] = 0.0f;
    const int ring = cache.ring(layer);
    int n_cells = 0;
    for (int t = 0; t < n_tokens; ++t) n_cells = std::max(n_cells, scanned_cells(shape, ring, pos[t]));
    float key[kMaxHeadDim];
    // A token's heads at once, where there is a form for this CPU and shape.
    FlashTileRowsFn token_rows = fused ? flash_tile_rows_avx512(hd, group) : nullptr;
    if (fused && !token_rows) token_rows = flash_tile_rows_avx2(hd, group);
    bool seen[T];
    for (int t0 = 0; t0 < n_cells; t0 += T) {
        const int kv = std::min(T, n_cells - t0);
        // A tile no token's window shows is skipped whole.
        bool any = false;
        for (int t = 0; t < n_tokens && !any; ++t) {
            const int valid = std::min(T, scanned_cells(shape, ring, pos[t]) - t0);
            for (int tk = 0; tk < valid && !any; ++tk) any = sees(shape, ring, pos[t], t0 + tk);
        }
        if (!any) continue;
        for (int tk = 0; tk < T; ++tk) {
            if (tk < kv) {
                quant::fp16_to_f32_row(cache.k(layer, t0 + tk) + off, key, size_t(hd));
                quant::fp16_to_f32_row(cache.v_row(layer, t0 + tk) + off, vt + size_t(tk) * size_t(hd), size_t(hd));
            } else {
                for (int i = 0; i < hd; ++i) key[i] = 0.0f;  // scores of these are replaced by -inf
            }
            for (int i = 0; i < hd; ++i) kt[size_t(i) * T + size_t(tk)] = key[i];
        }
        for (int t = 0; t < n_tokens; ++t) {
            const int valid = std::min(T, scanned_cells(shape, ring, pos[t]) - t0);
            if (valid <= 0) continue;
            // Cells the token's window hides are masked; a tile it sees none
            // of is skipped, as one past its position is.
            uint64_t seen_bits = 0;
            for (int tk = 0; tk < valid; ++tk) {
                seen[tk] = sees(shape, ring, pos[t], t0 + tk);
                seen_bits |= uint64_t(seen[tk]) << tk;
            }
            if (seen_bits == 0) continue;
            if (token_rows) {
                const int r = t * group;
                token_rows(kt, vt, q + size_t(t) * q_stride + size_t(kv_head * group) * size_t(hd), scale, valid,
                           seen_bits, m + r, sum + r, acc + size_t(r) * size_t(hd));
                continue;
            }
            for (int g = 0; g < group; ++g) {
                const int r = t * group + g;
                const float* qg = q + size_t(t) * q_stride + size_t(kv_head * group + g) * size_t(hd);
                for (int tk = 0; tk < T; ++tk) w[tk] = 0.0f;
                for (int i = 0; i < hd; ++i) fma_row(w, kt + size_t(i) * T, qg[i], T, fused);
                for (int tk = 0; tk < T; ++tk) w[tk] = tk < valid && seen[tk] ? w[tk] * scale : -INFINITY;
                float* a = acc + size_t(r) * size_t(hd);
                const float ms = tile_softmax(w, m[r], sum[r]);
                if (ms != 1.0f) {
                    for (int i = 0; i < hd; ++i) a[i] *= ms;
                }
                for (int tk = 0; tk < valid; ++tk) {
                    if (seen[tk]) fma_row(a, vt + size_t(tk) * size_t(hd), w[tk], hd, fused);
                }
            }
        }
    }
    for (int t = 0; t < n_tokens; ++t) {
        for (int g = 0; g < group; ++g) {
            const int r = t * group + g;
            const float inv = sum[r] == 0.0f ? 0.0f : 1.0f / sum[r];
            float* o = out + size_t(t) * q_stride + size_t(kv_head * group + g) * size_t(hd);
            for (int i = 0; i < hd; ++i) o[i] = acc[size_t(r) * size_t(hd) + size_t(i)] * inv;
        }
    }
}

}  // namespace smolinfer::model
