#include "model/attention.h"

#include <algorithm>
#include <cmath>

#include "model/exp_approx.h"
#include "quant/fp16.h"
#include "quant/lanes.h"

namespace smolinfer::model {

using quant::f32_to_fp16;
using quant::fp16_to_f32;

namespace {

// sum_i a(i) * b(i) for i < n, in the order of llama.cpp's GEMM (Batch) or
// of ggml_vec_dot_f16 (Single; see quant/lanes.h). `padded`: every term takes
// the vector path (llama.cpp's padded cache); zero terms never change an
// accumulator, so they are skipped.
//
// llama.cpp accumulates with fused multiply-adds, but both factors here are
// half-precision values (11 significant bits each), so their product is
// exact in float and a plain multiply-then-add rounds exactly like the fused
// form. That keeps this loop fast where there is no FMA (WebAssembly).
template <typename A, typename B>
float dot_in_order(int n, A a, B b, AttentionOrder order, bool padded) {
    auto madd = [&](float acc, int i) { return acc + a(i) * b(i); };
    if (order == AttentionOrder::Batch) return quant::sum_tinyblas_order(n, madd);
    const int vector_end = padded ? n : n / 64 * 64;
    return float(quant::sum_vec_dot_order<double>(n, vector_end, madd,
                                                  [&](double sum, int i) { return sum + double(a(i) * b(i)); }));
}

void key_scores_ref(const uint16_t* keys, size_t key_stride, int n, const float* q, int n_q, int head_dim,
                    AttentionOrder order, float* scores) {
    for (int g = 0; g < n_q; ++g) {
        const float* qg = q + size_t(g) * size_t(head_dim);
        for (int j = 0; j < n; ++j) {
            const uint16_t* k = keys + size_t(j) * key_stride;
            scores[size_t(g) * size_t(n) + size_t(j)] = dot_in_order(
                head_dim, [&](int i) { return fp16_to_f32(k[i]); }, [&](int i) { return qg[i]; }, order, false);
        }
    }
}

void value_sums_ref(const KvCache& cache, int layer, int dim0, int head_dim, int n, const float* w, int n_q,
                    AttentionOrder order, float* out) {
    for (int g = 0; g < n_q; ++g) {
        const float* wg = w + size_t(g) * size_t(n);
        for (int i = 0; i < head_dim; ++i) {
            out[size_t(g) * size_t(head_dim) + size_t(i)] = dot_in_order(
                n, [&](int j) { return fp16_to_f32(cache.v(layer, j, dim0 + i)); }, [&](int j) { return wg[j]; },
                order, true);
        }
    }
}

void softmax_ref(float* s, int n, float scale, float* w) {
    for (int t = 0; t < n; ++t) s[t] *= scale;
    float max = -INFINITY;
    for (int t = 0; t < n; ++t) max = std::max(max, s[t]);
    double sum = 0.0;
    for (int c = 0; c < n; c += 16) {
        float chunk[16] = {};
        for (int l = 0; l < 16 && c + l < n; ++l) chunk[l] = s[c + l] = exp_approx(s[c + l] - max);
        sum += double(quant::hsum16(chunk));
    }
    const float inv = float(1.0 / sum);
    // The weights as the f16 values llama.cpp multiplies the values with.
    for (int t = 0; t < n; ++t) w[t] = fp16_to_f32(f32_to_fp16(s[t] * inv));
}

}  // namespace

const AttentionKernels& attention_kernels_reference() {
    static const AttentionKernels k{key_scores_ref, value_sums_ref, softmax_ref};
    return k;
}

const AttentionKernels& attention_kernels() {
    static const AttentionKernels& best = [] () -> const AttentionKernels& {
        if (const AttentionKernels* k = attention_kernels_avx512()) return *k;
        if (const AttentionKernels* k = attention_kernels_avx2()) return *k;
        if (const AttentionKernels* k = attention_kernels_wasm()) return *k;
        return attention_kernels_reference();
    }();
    return best;
}

void attend_heads(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q, int pos,
                  const float* q, float* out, float* scratch, AttentionOrder order, const AttentionKernels& kernels) {
    const int hd = shape.head_dim;
    const int kv_head = first_head / (shape.n_head / shape.n_head_kv);
    const int off = kv_head * hd;
    const float scale = shape.kq_scale != 0.0f ? shape.kq_scale : 1.0f / std::sqrt(float(hd));
    const int ring = cache.ring(layer);
    const int n = scanned_cells(shape, ring, pos);
    const size_t N = size_t(n);
    // llama.cpp's GEMM needs the reduction length to be a multiple of 16;
    // otherwise it also takes the dot-product path.
    const AttentionOrder qk_order = (hd % 16 == 0) ? order : AttentionOrder::Single;

    float* scores = scratch;                 // n_q x n
    float* weights = scratch + size_t(n_q) * N;  // n_q x n
    float* qh = weights + size_t(n_q) * N;       // n_q x head_dim (head_dim <= 512, checked at load)
    for (size_t i = 0; i < size_t(n_q) * size_t(hd); ++i) qh[i] = fp16_to_f32(f32_to_fp16(q[i]));

    kernels.key_scores(cache.k(layer, 0) + off, size_t(cache.kv_dim()), n, qh, n_q, hd, qk_order, scores);
    for (int g = 0; g < n_q; ++g) {
        if (shape.window > 0) {
            for (int j = 0; j < n; ++j) {
                if (!sees(shape, ring, pos, j)) scores[size_t(g) * N + size_t(j)] = -INFINITY;
            }
        }
        kernels.softmax(scores + size_t(g) * N, n, scale, weights + size_t(g) * N);
    }
    kernels.value_sums(cache, layer, off, hd, n, weights, n_q, order, out);
}

}  // namespace smolinfer::model
