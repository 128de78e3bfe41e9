#include "model/attention.h"

#include <cmath>

#include "model/ops.h"
#include "quant/fp16.h"

namespace smolinfer::model {

using quant::f32_to_fp16;
using quant::fp16_to_f32;

void attend_head(const KvCache& cache, int layer, const AttentionShape& shape, int head, int pos, const float* q,
                 float* out, float* scores) {
    const int hd = shape.head_dim;
    const int kv_head = head / (shape.n_head / shape.n_head_kv);
    const int off = kv_head * hd;
    const float scale = 1.0f / std::sqrt(float(hd));

    float qh[512];  // head_dim is checked to be <= 512 when the model loads
    for (int i = 0; i < hd; ++i) qh[i] = fp16_to_f32(f32_to_fp16(q[i]));

    for (int t = 0; t <= pos; ++t) {
        const uint16_t* k = cache.k(layer, t) + off;
        float dot = 0.0f;
        for (int i = 0; i < hd; ++i) dot += qh[i] * fp16_to_f32(k[i]);
        scores[t] = dot * scale;
    }
    softmax(scores, size_t(pos) + 1);

    for (int i = 0; i < hd; ++i) out[i] = 0.0f;
    for (int t = 0; t <= pos; ++t) {
        const float w = fp16_to_f32(f32_to_fp16(scores[t]));
        const uint16_t* v = cache.v(layer, t) + off;
        for (int i = 0; i < hd; ++i) out[i] += w * fp16_to_f32(v[i]);
    }
}

}  // namespace smolinfer::model
