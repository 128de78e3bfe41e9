// Causal multi-head attention with grouped KV heads, over the f16 KV cache.
#pragma once

#include "model/attention_kernels.h"
#include "model/kv_cache.h"

namespace smolinfer::model {

struct AttentionShape {
    int n_head;
    int n_head_kv;
    int head_dim;
    float kq_scale = 0.0f;  // the scores' multiplier; 0: 1/sqrt(head_dim)
};

// Query heads first_head .. first_head + n_q - 1 of the token at position
// `pos`, which must share one KV head, attend to cached positions 0..pos.
// `q` holds the n_q heads (head_dim values each, consecutive), `out`
// receives as many; `scratch` holds at least attention_scratch_floats(n_q, pos) floats.
//
// As llama.cpp does: the query is rounded to half before the dot with the
// keys, and the softmax weights before the sum over values.
void attend_heads(const KvCache& cache, int layer, const AttentionShape& shape, int first_head, int n_q, int pos,
                  const float* q, float* out, float* scratch, AttentionOrder order,
                  const AttentionKernels& kernels = attention_kernels());

inline size_t attention_scratch_floats(int n_q, int pos) { return size_t(n_q) * (2 * size_t(pos + 64) + 512); }

}  // namespace smolinfer::model
