// Causal multi-head attention with grouped KV heads, over the f16 KV cache.
#pragma once

#include "model/attention_kernels.h"
#include "model/kv_cache.h"

namespace smolinfer::model {

struct AttentionShape {
    int n_head;
    int n_head_kv;
    int head_dim;
};

// One query head of the token at position `pos` attends to cached positions
// 0..pos of its KV head. `q` is one head (head_dim values), `out` receives
// head_dim values, `scratch` holds at least 2 * (pos + 64) floats.
//
// As llama.cpp does: the query is rounded to half before the dot with the
// keys, and the softmax weights before the sum over values.
void attend_head(const KvCache& cache, int layer, const AttentionShape& shape, int head, int pos, const float* q,
                 float* out, float* scratch, AttentionOrder order,
                 const AttentionKernels& kernels = attention_kernels());

}  // namespace smolinfer::model
