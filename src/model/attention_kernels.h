// The two sums inside one query head's attention, in llama.cpp's orders:
// the key scores (query . key for every past position) and the value sums
// (softmax-weighted sum of every position's value, per value dimension).
// The scalar reference and the SIMD variants give bit-identical results
// (tests/test_attention_kernels.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/kv_cache.h"

namespace smolinfer::model {

// llama.cpp (f16 cache, flash attention off) multiplies with a blocked GEMM
// when a forward pass has two or more tokens and with dot products for a
// single token; the two sum in different orders, and so do we.
enum class AttentionOrder {
    Batch,   // 16 float lanes per output, one chain each (tinyBLAS)
    Single,  // 4 x 16 lanes over steps of 64, then a fixed tree (ggml_vec_dot_f16)
};

// Both sums take the n_q query heads that share one KV head at once, so
// that a kernel can convert each cached half once for all of them (GQA).
struct AttentionKernels {
    // scores[g * n + j] = key_j . q_g for j < n, g < n_q, where key_j = keys +
    // j * key_stride (head_dim halves) and q_g = q + g * head_dim holds
    // values already rounded to half.
    void (*key_scores)(const uint16_t* keys, size_t key_stride, int n, const float* q, int n_q, int head_dim,
                       AttentionOrder order, float* scores);
    // out[g * head_dim + i] = sum over j < n of value(j, dim0 + i) * w[g * n + j],
    // for i < head_dim, g < n_q. llama.cpp sums over its cache padded to 256
    // positions, so in the Single order every term takes the vector path.
    void (*value_sums)(const KvCache& cache, int layer, int dim0, int head_dim, int n, const float* w, int n_q,
                       AttentionOrder order, float* out);
    // One head's softmax as llama.cpp computes it (ggml_vec_soft_max_f32
    // with its polynomial exp): s[t] *= scale; s[t] = exp(s[t] - max),
    // summed in chunks of 16 from position 0, the chunk sums in double;
    // w[t] = the f16 value of s[t] / sum, for t < n.
    void (*softmax)(float* s, int n, float scale, float* w);
};

// Cache reads the SIMD kernels ask for ahead of use. A dimension's values
// lie in a row of the transposed value blocks and the next dimension's row
// starts 512 bytes later; one head's keys are a row of the cache apart.
// Neither stride is one the hardware prefetcher follows: without these,
// most of the attention time went to waiting for loads (AVX-512: 75% of the
// value sums, 60% of the key scores, perf).
constexpr int kPrefetchValueDims = 4;  // value rows this many dimensions ahead
constexpr int kPrefetchKeys = 8;       // keys this many positions ahead
// Flash attention's walk adds one cached value row per position, rows a
// cache row apart as the keys are (flash_attention.cpp): this many ahead.
constexpr int kPrefetchValueRows = 16;

inline void prefetch_value_row(const KvCache& cache, int layer, int dim, int n) {
    for (int j0 = 0; j0 < n; j0 += 32) __builtin_prefetch(cache.v_block(layer, j0 / KvCache::kBlock, dim) + j0 % KvCache::kBlock);
}

// n halves from p: a head's key or value row.
inline void prefetch_halves(const uint16_t* p, int n) {
    const char* b = reinterpret_cast<const char*>(p);
    for (int i = 0; i < n * 2; i += 64) __builtin_prefetch(b + i);
    __builtin_prefetch(b + n * 2 - 1);  // the last line, when the row is not line-aligned
}

const AttentionKernels& attention_kernels_reference();
// The AVX-512 / AVX2 / WebAssembly SIMD128 variants, or null when this build or CPU has none.
const AttentionKernels* attention_kernels_avx512();
const AttentionKernels* attention_kernels_avx2();
const AttentionKernels* attention_kernels_wasm();
// The fastest available.
const AttentionKernels& attention_kernels();

}  // namespace smolinfer::model
