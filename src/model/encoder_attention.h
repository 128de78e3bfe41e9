// An encoder's attention with flash attention off: one whole sequence in one
// pass, every step in f32, as llama.cpp computes it for a model without a KV
// cache (build_attn_mha with f32 keys and values; the flash-attention path
// instead stores them as halves in a KvCache and takes flash_attention.h).
//
// For a query at position t (one head):
// - score j = ggml_vec_dot_f32(head_dim, key_j, q): the query is not
//   rounded to half;
// - ggml_soft_max_ext: scores times the scale, -inf where the window hides
//   a position, exp(score - max) with ggml_v_expf sixteen at a time from
//   position 0 and libm's expf for the last n % 16, the sum in double, each
//   weight times float(1 / sum); the weights stay f32;
// - output value i = the dot of value dimension i over positions with the
//   weights: tinyBLAS's 16 lanes when the pass has two or more tokens and a
//   multiple of 16, else ggml_vec_dot_f32.
#pragma once

#include <cstddef>

#include "model/attention.h"

namespace smolinfer::model {

// Query heads first_head .. first_head + n_q - 1 (one KV head) of the token
// at position `pos` of a pass of shape.n_kv tokens. `q`: the n_q heads,
// head_dim values each; `keys`: token j's key heads at keys + j * key_stride;
// `values_t`: this KV head's values transposed, head_dim rows of n_kv
// (dimension i of token j at i * n_kv + j). `out` receives n_q heads.
// scratch: encoder_attention_scratch_floats(n_kv) floats.
void encoder_attend_heads(const AttentionShape& shape, int first_head, int n_q, int pos, const float* q,
                          const float* keys, size_t key_stride, const float* values_t, float* out, float* scratch);

inline size_t encoder_attention_scratch_floats(int n_kv) { return size_t(n_kv) + 16; }

}  // namespace smolinfer::model
