// AVX-512 attention sums, bit-identical to the reference in attention.cpp
// (and to the AVX2 kernels): the same 16 lanes, now one register; the same
// four accumulators and final tree. What changes is the sharing: each
// cached half (a key or a value) is converted once for all the query heads
// of its KV head, whose sums run side by side as independent chains.
// Products of two halves are exact in float, so multiply-then-add equals
// llama.cpp's fused form.
#include "model/attention_kernels.h"
#include "runtime/machine.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_ATTENTION)

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "model/vector_math_avx512.h"

namespace smolinfer::model {

namespace {

// Query heads summed together: 4 heads x 4 accumulators fill half the registers.
constexpr int kMaxHeads = 4;

inline __m512 load_half16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

using avx512::hsum16;

// ggml_vec_dot_f16's reduction of its four accumulators.
inline float reduce4(const __m512 a[4]) {
    return hsum16(_mm512_add_ps(_mm512_add_ps(a[0], a[2]), _mm512_add_ps(a[1], a[3])));
}

// Scores of C query heads against every key: in the Single order a key's
// 64-value steps go to four accumulators, in the Batch order one chain.
template <int C>
void key_scores_heads(const uint16_t* keys, size_t key_stride, int n, const float* q, int head_dim, AttentionOrder order,
                      float* scores) {
    for (int j = 0; j < std::min(kPrefetchKeys, n); ++j) prefetch_halves(keys + size_t(j) * key_stride, head_dim);
    for (int j = 0; j < n; ++j) {
        if (j + kPrefetchKeys < n) prefetch_halves(keys + size_t(j + kPrefetchKeys) * key_stride, head_dim);
        const uint16_t* k = keys + size_t(j) * key_stride;
        // Each accumulator starts as its first product, not 0 + product: the
        // two differ only where the product is -0 (0 + -0 is +0), so the
        // sums differ at most in the sign of a zero. The reference's sums
        // never meet -0; + 0 at the end turns a -0 score into its +0.
        __m512 acc[C][4];
        const int first = order == AttentionOrder::Batch ? 16 : 64;
        for (int c = 0; c < head_dim; c += 16) {
            const __m512 kv = load_half16(k + c);
            const int a = order == AttentionOrder::Batch ? 0 : (c / 16) % 4;
            for (int g = 0; g < C; ++g) {
                const __m512 product = _mm512_mul_ps(kv, _mm512_loadu_ps(q + size_t(g) * size_t(head_dim) + size_t(c)));
                acc[g][a] = c < first ? product : _mm512_add_ps(acc[g][a], product);
            }
        }
        for (int g = 0; g < C; ++g) {
            const float sum = order == AttentionOrder::Batch ? hsum16(acc[g][0]) : reduce4(acc[g]);
            scores[size_t(g) * size_t(n) + size_t(j)] = sum + 0.0f;
        }
    }
}

// Value sums of C query heads (weights w + g * n): per value dimension, the
// positions in chunks of 16; the last chunk's lanes at or past n are zero
// (the cache holds anything there).
template <int C>
void value_sums_heads(const KvCache& cache, int layer, int dim0, int head_dim, int n, const float* w, int w_stride,
                      AttentionOrder order, float* out) {
    constexpr int kB = KvCache::kBlock;
    for (int i = 0; i < std::min(kPrefetchValueDims, head_dim); ++i) prefetch_value_row(cache, layer, dim0 + i, n);
    for (int i = 0; i < head_dim; ++i) {
        if (i + kPrefetchValueDims < head_dim) prefetch_value_row(cache, layer, dim0 + i + kPrefetchValueDims, n);
        __m512 acc[C][4];
        for (int g = 0; g < C; ++g) {
            for (int a = 0; a < 4; ++a) acc[g][a] = _mm512_setzero_ps();
        }
        for (int j0 = 0; j0 < n; j0 += 16) {
            const __m512 v = load_half16(cache.v_block(layer, j0 / kB, dim0 + i) + j0 % kB);
            const __mmask16 live = n - j0 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j0)) - 1);
            const int a = order == AttentionOrder::Batch ? 0 : (j0 / 16) % 4;
            for (int g = 0; g < C; ++g) {
                const __m512 wg = _mm512_maskz_loadu_ps(live, w + size_t(g) * size_t(w_stride) + size_t(j0));
                acc[g][a] = _mm512_add_ps(acc[g][a], _mm512_maskz_mul_ps(live, v, wg));
            }
        }
        for (int g = 0; g < C; ++g) {
            out[size_t(g) * size_t(head_dim) + size_t(i)] = order == AttentionOrder::Batch ? hsum16(acc[g][0]) : reduce4(acc[g]);
        }
    }
}

void key_scores(const uint16_t* keys, size_t key_stride, int n, const float* q, int n_q, int head_dim,
                AttentionOrder order, float* scores) {
    const bool vector_only = order == AttentionOrder::Batch ? head_dim % 16 == 0 : head_dim % 64 == 0;
    if (!vector_only) {
        attention_kernels_reference().key_scores(keys, key_stride, n, q, n_q, head_dim, order, scores);
        return;
    }
    for (int g = 0; g < n_q; g += kMaxHeads) {
        const float* qg = q + size_t(g) * size_t(head_dim);
        float* sg = scores + size_t(g) * size_t(n);
        switch (std::min(kMaxHeads, n_q - g)) {
            case 1: key_scores_heads<1>(keys, key_stride, n, qg, head_dim, order, sg); break;
            case 2: key_scores_heads<2>(keys, key_stride, n, qg, head_dim, order, sg); break;
            case 3: key_scores_heads<3>(keys, key_stride, n, qg, head_dim, order, sg); break;
            default: key_scores_heads<4>(keys, key_stride, n, qg, head_dim, order, sg); break;
        }
    }
}

void value_sums(const KvCache& cache, int layer, int dim0, int head_dim, int n, const float* w, int n_q,
                AttentionOrder order, float* out) {
    for (int g = 0; g < n_q; g += kMaxHeads) {
        const float* wg = w + size_t(g) * size_t(n);
        float* og = out + size_t(g) * size_t(head_dim);
        switch (std::min(kMaxHeads, n_q - g)) {
            case 1: value_sums_heads<1>(cache, layer, dim0, head_dim, n, wg, n, order, og); break;
            case 2: value_sums_heads<2>(cache, layer, dim0, head_dim, n, wg, n, order, og); break;
            case 3: value_sums_heads<3>(cache, layer, dim0, head_dim, n, wg, n, order, og); break;
            default: value_sums_heads<4>(cache, layer, dim0, head_dim, n, wg, n, order, og); break;
        }
    }
}

// The reference softmax sixteen lanes at a time: the same exponentials, the
// same chunk sums (lanes past n are zero) added in double, the same rounding
// of the weights to half.
void softmax(float* s, int n, float scale, float* w) {
    const __m512 sc = _mm512_set1_ps(scale);
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int c = 0; c < n; c += 16) {
        const __mmask16 live = n - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - c)) - 1);
        const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(live, s + c), sc);
        _mm512_mask_storeu_ps(s + c, live, x);
        mx = _mm512_mask_max_ps(mx, live, mx, x);
    }
    const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    double sum = 0.0;
    for (int c = 0; c < n; c += 16) {
        const __mmask16 live = n - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - c)) - 1);
        const __m512 e = _mm512_maskz_mov_ps(live, avx512::exp_approx16(_mm512_sub_ps(_mm512_maskz_loadu_ps(live, s + c), max)));
        _mm512_mask_storeu_ps(s + c, live, e);
        sum += double(hsum16(e));
    }
    const __m512 inv = _mm512_set1_ps(float(1.0 / sum));
    for (int c = 0; c < n; c += 16) {
        const __mmask16 live = n - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - c)) - 1);
        const __m256i h = _mm512_cvtps_ph(_mm512_mul_ps(_mm512_maskz_loadu_ps(live, s + c), inv), _MM_FROUND_TO_NEAREST_INT);
        _mm512_mask_storeu_ps(w + c, live, _mm512_cvtph_ps(h));
    }
}

}  // namespace

const AttentionKernels* attention_kernels_avx512() {
    static const AttentionKernels k{key_scores, value_sums, softmax};
    return runtime::cpu_has_avx512() ? &k : nullptr;
}

}  // namespace smolinfer::model

#else

namespace smolinfer::model {
const AttentionKernels* attention_kernels_avx512() { return nullptr; }
}  // namespace smolinfer::model

#endif
