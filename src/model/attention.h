// Causal multi-head attention with grouped KV heads, over the KV cache.
#pragma once

#include "model/kv_cache.h"

namespace smolinfer::model {

struct AttentionShape {
    int n_head;
    int n_head_kv;
    int head_dim;
};

// One query head of the token at position `pos` attends to cached positions
// 0..pos of its KV head. `q` is one head (head_dim values); `out` receives
// head_dim values; `scores` is scratch of at least pos + 1 floats.
//
// Rounding follows llama.cpp's F16 cache: the query is rounded to half before
// the dot with the keys, and the softmax weights before the sum over values.
void attend_head(const KvCache& cache, int layer, const AttentionShape& shape, int head, int pos, const float* q,
                 float* out, float* scores);

}  // namespace smolinfer::model
