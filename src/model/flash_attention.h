// Attention as llama.cpp's CPU flash-attention kernel computes it
// (ggml_compute_forward_flash_attn_ext_f16), which llama.cpp uses by default
// (-fa auto turns it on for the CPU). Its results differ from the standard
// path's in the last bits, enough to change a greedy continuation now and
// then, so reproducing llama.cpp's default output needs its exact order:
//
// - Chunk: fewer than 64 query tokens in llama.cpp's micro-batch (decode,
//   short prompts). The query rounded to half, scores by ggml_vec_dot_f16,
//   then one position at a time: an online softmax with libm's expf and a
//   half-precision accumulator (ggml_vec_scale_f16 / ggml_vec_mad_f16).
// - Tiled: 64 or more. The query stays f32; positions go in tiles of 64:
//   scores as fused multiply-add chains over the head dimension, the tile's
//   softmax with ggml_v_expf, the values summed in f32 chains.
//
// Both need the value cache in rows (KvCache::ValueLayout::Rows).
// llama.cpp splits a single token's keys across its threads once its cache
// view reaches 512 cells (more than 256 positions in use), so its result
// depends on its thread count: the chunk path takes that count (`splits`)
// and reproduces the split.
#pragma once

#include <algorithm>
#include <cstddef>

#include "model/attention.h"
#include "model/kv_cache.h"

namespace smolinfer::model {

enum class FlashPath { Chunk, Tiled };

// llama.cpp's tile sizes: query rows per tile and cache positions per tile;
// a micro-batch of at least kFlashTileQ tokens takes the tiled path.
constexpr int kFlashTileQ = 64;
constexpr int kFlashTileKv = 64;

// llama.cpp evaluates one request (a llama_decode call: a prompt, or one
// generated token) in micro-batches of this many tokens (n_ubatch's default).
constexpr size_t kLlamaMicroBatch = 512;

// The forward pass holding token t when a request of n tokens is evaluated
// in passes of at most `batch` tokens that never cross one of llama.cpp's
// micro-batches: tokens [begin, end).
struct RequestPass {
    size_t begin, end;
};
inline RequestPass request_pass(size_t t, size_t n, size_t batch) {
    const size_t base = t - t % kLlamaMicroBatch;
    const size_t begin = base + (t - base) / batch * batch;
    return {begin, std::min({begin + batch, base + kLlamaMicroBatch, n})};
}

// The path llama.cpp takes for token t of a request of n tokens.
inline FlashPath flash_path_for(size_t t, size_t n) {
    const size_t start = t - t % kLlamaMicroBatch;
    return n - start >= size_t(kFlashTileQ) ? FlashPath::Tiled : FlashPath::Chunk;
}

// The Chunk path for query heads first_head .. first_head + n_q - 1 of the
// token at `pos` (one KV head), over positions 0..pos; arguments as
// attend_heads. scratch: attention_scratch_floats(n_q, pos) floats.
// `fused`: llama.cpp's fused multiply-adds; false for the plain SIMD128
// build's fast arithmetic (the sums in double, not bit-exact).
// `splits`: for a token llama.cpp decodes alone, its thread count; else 1.
void flash_attend_heads(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q, int pos,
                        const float* q, float* out, float* scratch, bool fused = true, int splits = 1,
                        const AttentionKernels& kernels = attention_kernels());

// The same walk with its parts spread over threads: a token decoded alone
// at `pos` whose walk llama.cpp splits into flash_walk_parts(...) > 1 parts
// (`splits` as above). flash_attend_part computes part `part` for query
// heads first_head .. first_head + n_q - 1 (one KV head) into `partial`:
// per head head_dim + 2 floats (its sums, not yet divided, then its
// maximum and sum); scratch as flash_attend_heads'. flash_fold_parts folds
// parts 0 .. parts - 1 (part_stride floats apart) in order into out, n_q x
// head_dim: the result flash_attend_heads gives, bit for bit.
int flash_walk_parts(const KvCache& cache, int layer, const AttentionShape& shape, int pos, int splits);
void flash_attend_part(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q, int pos,
                       const float* q, int splits, int part, float* partial, float* scratch, bool fused = true,
                       const AttentionKernels& kernels = attention_kernels());
void flash_fold_parts(const float* partials, size_t part_stride, int parts, int n_q, int head_dim, float* out);

// The Tiled path for every query head of KV head `kv_head`, for n_tokens
// tokens (at most kFlashTokensPerCall) at positions pos[0..n_tokens): token
// t's query heads start at q + t * q_stride, its output at out + t * q_stride.
// Each tile of cached keys and values is converted once for all of them.
// scratch: flash_tiled_scratch_floats(head_dim, heads per KV head) floats.
void flash_attend_tiled(const KvCache& cache, int layer, const AttentionShape& shape, int kv_head, int n_tokens,
                        const int* pos, const float* q, float* out, size_t q_stride, float* scratch, bool fused = true);

constexpr int kFlashTokensPerCall = 64;

inline size_t flash_tiled_scratch_floats(int head_dim, int group) {
    const size_t rows = size_t(kFlashTokensPerCall) * size_t(group);
    return 2 * size_t(kFlashTileKv) * size_t(head_dim) + size_t(kFlashTileKv) + rows * (size_t(head_dim) + 2);
}

// The scalar references both are tested against (tests/test_flash_attention.cpp),
// one position and one dimension at a time, as ggml's code reads.
void flash_attend_heads_ref(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q,
                            int pos, const float* q, float* out, float* scratch, int splits = 1,
                            const AttentionKernels& kernels = attention_kernels());
void flash_attend_tiled_ref(const KvCache& cache, int layer, const AttentionShape& shape, int kv_head, int n_tokens,
                            const int* pos, const float* q, float* out, size_t q_stride, float* scratch);

}  // namespace smolinfer::model
