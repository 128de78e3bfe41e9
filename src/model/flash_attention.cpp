#include "model/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "model/exp_approx.h"
#include "model/flash_tile.h"
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

// ggml's online softmax over positions, one score at a time: the largest
// score so far (M), the sum of exp(score - M) so far (S), and per step the
// factor for what is summed so far (ms) and the new position's weight (vs).
struct OnlineSoftmax {
    float max = -INFINITY;
    float sum = 0.0f;
    float rescale = 1.0f;
    float weight = 1.0f;

    // Returns whether s is a new maximum (the sums so far then need
    // `rescale`, and `weight` is 1).
    bool next(float s) {
        rescale = 1.0f;
        weight = 1.0f;
        const bool grew = s > max;
        if (grew) {
            const float old = max;
            max = s;
            rescale = std::exp(old - max);
        } else {
            weight = std::exp(s - max);
        }
        // S = S*ms + vs with two roundings, as llama.cpp's released CPU
        // backends compute it (the compiler multiplies in the new-maximum
        // branch and adds after the join; objdump of libggml-cpu-zen4.so).
        sum = sum * rescale + weight;
        return grew;
    }
    float inverse_sum() const { return sum == 0.0f ? 0.0f : 1.0f / sum; }
};

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

// The chunk path's scores (ggml_vec_dot_f16 of the query rounded to half
// with each key), n_q rows of n at the start of scratch.
const float* chunk_scores(const KvCache& cache, int layer, const AttentionShape& shape, int off, int n_q, int n,
                          const float* q, float* scratch, const AttentionKernels& kernels) {
    const int hd = shape.head_dim;
    float* scores = scratch;                         // n_q x n
    float* qh = scratch + size_t(n_q) * size_t(n);  // n_q x head_dim
    for (size_t i = 0; i < size_t(n_q) * size_t(hd); ++i) qh[i] = fp16_to_f32(f32_to_fp16(q[i]));
    kernels.key_scores(cache.k(layer, 0) + off, size_t(cache.kv_dim()), n, qh, n_q, hd, AttentionOrder::Single, scores);
    return scores;
}

}  // namespace

void flash_attend_heads_ref(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q, int pos,
                            const float* q, float* out, float* scratch, const AttentionKernels& kernels) {
    const int hd = shape.head_dim;
    const int off = first_head / (shape.n_head / shape.n_head_kv) * hd;
    const float scale = kq_scale(shape);
    const int n = pos + 1;
    const size_t N = size_t(n);
    const float* scores = chunk_scores(cache, layer, shape, off, n_q, n, q, scratch, kernels);

    uint16_t acc[kMaxHeadDim];
    for (int g = 0; g < n_q; ++g) {
        const float* sg = scores + size_t(g) * N;
        OnlineSoftmax sm;
        for (int i = 0; i < hd; ++i) acc[i] = 0;
        for (int j = 0; j < n; ++j) {
            if (sm.next(sg[j] * scale)) scale_half_row(acc, hd, sm.rescale);
            mad_half_row(acc, cache.v_row(layer, j) + off, hd, sm.weight);
        }
        const float inv = sm.inverse_sum();
        for (int i = 0; i < hd; ++i) out[size_t(g) * size_t(hd) + size_t(i)] = fp16_to_f32(acc[i]) * inv;
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
        for (int g = 0; g < group; ++g) {
            const size_t head = size_t(kv_head * group + g) * size_t(hd);
            const float* qg = q + size_t(t) * q_stride + head;
            float m = -INFINITY;
            float sum = 0.0f;
            for (int i = 0; i < hd; ++i) acc[i] = 0.0f;
            for (int t0 = 0; t0 <= last; t0 += kFlashTileKv) {
                const int valid = std::min(kFlashTileKv, last + 1 - t0);  // the rest is masked
                for (int tk = 0; tk < kFlashTileKv; ++tk) {
                    if (tk >= valid) {
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

// The chunk path's walk over positions for each of n_q heads, the half
// accumulator held as floats that are halves, B registers of 8 (head_dim
// 8 * B). A compile-time B keeps the accumulator in registers: held in an
// array indexed at run time it went through memory at every position, and
// each position waited for the store of the one before.
template <int B>
void chunk_rows_f16c(const KvCache& cache, int layer, int off, int n, const float* scores, float scale, int n_q,
                     float* out) {
    constexpr int hd = 8 * B;
    for (int g = 0; g < n_q; ++g) {
        const float* sg = scores + size_t(g) * size_t(n);
        OnlineSoftmax sm;
        __m256 acc[B];
        for (int b = 0; b < B; ++b) acc[b] = _mm256_setzero_ps();
        for (int j = 0; j < n; ++j) {
            if (sm.next(sg[j] * scale)) {
                const __m256 vms = _mm256_set1_ps(sm.rescale);
                for (int b = 0; b < B; ++b) acc[b] = round_to_half(_mm256_mul_ps(acc[b], vms));
            }
            const uint16_t* v = cache.v_row(layer, j) + off;
            const __m256 vvs = _mm256_set1_ps(sm.weight);
            for (int b = 0; b < B; ++b) {
                const __m256 vb = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 8 * b)));
                acc[b] = round_to_half(_mm256_fmadd_ps(vb, vvs, acc[b]));
            }
        }
        const __m256 inv = _mm256_set1_ps(sm.inverse_sum());
        for (int b = 0; b < B; ++b) _mm256_storeu_ps(out + size_t(g) * hd + size_t(8 * b), _mm256_mul_ps(acc[b], inv));
    }
}

// The form for a head size, or null (then the generic path runs).
using ChunkRowsFn = void (*)(const KvCache&, int, int, int, const float*, float, int, float*);
ChunkRowsFn chunk_rows_f16c_for(int hd) {
    switch (hd) {
        case 32: return chunk_rows_f16c<4>;
        case 40: return chunk_rows_f16c<5>;
        case 48: return chunk_rows_f16c<6>;
        case 64: return chunk_rows_f16c<8>;
        case 80: return chunk_rows_f16c<10>;
        case 96: return chunk_rows_f16c<12>;
        case 128: return chunk_rows_f16c<16>;
        default: return nullptr;
    }
}

}  // namespace
#endif

void flash_attend_heads(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q, int pos,
                        const float* q, float* out, float* scratch, bool fused, const AttentionKernels& kernels) {
    const int hd = shape.head_dim;
    const int off = first_head / (shape.n_head / shape.n_head_kv) * hd;
    const float scale = kq_scale(shape);
    const int n = pos + 1;
    const size_t N = size_t(n);
    const float* scores = chunk_scores(cache, layer, shape, off, n_q, n, q, scratch, kernels);

#if defined(__F16C__) && defined(__FMA__)
    if (const ChunkRowsFn rows = chunk_rows_f16c_for(hd); rows && fused) {
        rows(cache, layer, off, n, scores, scale, n_q, out);
        return;
    }
#endif
    uint16_t acc[kMaxHeadDim];
    float acc32[kMaxHeadDim], v32[kMaxHeadDim];
    for (int g = 0; g < n_q; ++g) {
        const float* sg = scores + size_t(g) * N;
        OnlineSoftmax sm;
        for (int i = 0; i < hd; ++i) acc32[i] = 0.0f;
        for (int j = 0; j < n; ++j) {
            if (sm.next(sg[j] * scale)) {
                for (int i = 0; i < hd; ++i) acc32[i] *= sm.rescale;
                quant::f32_to_fp16_row(acc32, acc, size_t(hd));
                quant::fp16_to_f32_row(acc, acc32, size_t(hd));
            }
            quant::fp16_to_f32_row(cache.v_row(layer, j) + off, v32, size_t(hd));
            fma_row(acc32, v32, sm.weight, hd, fused);
            quant::f32_to_fp16_row(acc32, acc, size_t(hd));
            quant::fp16_to_f32_row(acc, acc32, size_t(hd));
        }
        const float inv = sm.inverse_sum();
        for (int i = 0; i < hd; ++i) out[size_t(g) * size_t(hd) + size_t(i)] = acc32[i] * inv;
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
    int last = 0;
    for (int t = 0; t < n_tokens; ++t) last = std::max(last, pos[t]);
    float key[kMaxHeadDim];
    // A token's heads at once, where there is a form for this CPU and shape.
    const FlashTileRowsFn token_rows = fused ? flash_tile_rows_avx512(hd, group) : nullptr;
    for (int t0 = 0; t0 <= last; t0 += T) {
        const int kv = std::min(T, last + 1 - t0);
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
            if (pos[t] < t0) continue;
            const int valid = std::min(T, pos[t] + 1 - t0);
            if (token_rows) {
                const int r = t * group;
                token_rows(kt, vt, q + size_t(t) * q_stride + size_t(kv_head * group) * size_t(hd), scale, valid, m + r,
                           sum + r, acc + size_t(r) * size_t(hd));
                continue;
            }
            for (int g = 0; g < group; ++g) {
                const int r = t * group + g;
                const float* qg = q + size_t(t) * q_stride + size_t(kv_head * group + g) * size_t(hd);
                for (int tk = 0; tk < T; ++tk) w[tk] = 0.0f;
                for (int i = 0; i < hd; ++i) fma_row(w, kt + size_t(i) * T, qg[i], T, fused);
                for (int tk = 0; tk < T; ++tk) w[tk] = tk < valid ? w[tk] * scale : -INFINITY;
                float* a = acc + size_t(r) * size_t(hd);
                const float ms = tile_softmax(w, m[r], sum[r]);
                if (ms != 1.0f) {
                    for (int i = 0; i < hd; ++i) a[i] *= ms;
                }
                for (int tk = 0; tk < valid; ++tk) fma_row(a, vt + size_t(tk) * size_t(hd), w[tk], hd, fused);
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
