// Multi-head attention with grouped KV heads, over the f16 KV cache: causal
// (decoders), or bidirectional over one sequence (encoders with flash
// attention).
#pragma once

#include "model/attention_kernels.h"
#include "model/kv_cache.h"

namespace smolinfer::model {

struct AttentionShape {
    int n_head;
    int n_head_kv;
    int head_dim;
    float kq_scale = 0.0f;  // the scores' multiplier; 0: 1/sqrt(head_dim)
    // Sliding-window attention: a query at position p sees positions
    // p - window + 1 .. p (as llama.cpp's mask: p - p0 >= window is hidden);
    // 0: every position up to p.
    int window = 0;
    // > 0: bidirectional over the n_kv positions of one sequence in cells
    // 0..n_kv-1 (an encoder's pass; llama.cpp's no-cache mask); a window is
    // then symmetric, |p - p0| <= window / 2 (LLAMA_SWA_TYPE_SYMMETRIC).
    int n_kv = 0;
};

// Which cache cells a query at position `pos` reads. A layer with one cell
// per position has positions 0..pos in cells 0..pos; a ring of `ring` cells
// (KvCache), once past its first lap, holds the newest positions in cells
// 0..pos % ring and the lap before above them, all of which are read in
// cell order, as llama.cpp reads its SWA cache. (Cells of later positions of
// the same batch hold nothing the window shows: the ring has room for the
// window and a whole micro-batch.)
inline int scanned_cells(const AttentionShape& shape, int ring, int pos) {
    if (shape.n_kv > 0) return shape.n_kv;
    return ring > 0 && pos >= ring ? ring : pos + 1;
}

// Whether the query at `pos` sees the position in `cell`: no more than
// window - 1 positions back (bidirectional: window / 2 either way).
inline bool sees(const AttentionShape& shape, int ring, int pos, int cell) {
    if (shape.window == 0) return true;
    if (shape.n_kv > 0) return (pos > cell ? pos - cell : cell - pos) <= shape.window / 2;
    const int back = ring > 0 ? (pos - cell % ring + ring) % ring : pos - cell;
    return back < shape.window;
}

// The cells a query sees, as at most two runs in cell order.
struct CellRuns {
    int count = 0;
    int begin[2] = {0, 0};
    int end[2] = {0, 0};
};
inline CellRuns visible_runs(const AttentionShape& shape, int ring, int pos) {
    CellRuns r;
    const int w = shape.window;
    if (shape.n_kv > 0) {
        r.begin[0] = w > 0 && pos - w / 2 > 0 ? pos - w / 2 : 0;
        r.end[0] = w > 0 && pos + w / 2 + 1 < shape.n_kv ? pos + w / 2 + 1 : shape.n_kv;
        r.count = 1;
        return r;
    }
    if (ring > 0 && pos >= ring && w > 0) {
        const int c = pos % ring;  // the newest position's cell
        r.begin[0] = c - w + 1 > 0 ? c - w + 1 : 0;
        r.end[0] = c + 1;
        r.count = 1;
        if (w - 1 > c) {  // the window reaches back into the lap before
            r.begin[1] = ring - (w - 1 - c);
            r.end[1] = ring;
            r.count = 2;
        }
        return r;
    }
    const int n = scanned_cells(shape, ring, pos);
    r.begin[0] = w > 0 && pos - w + 1 > 0 ? pos - w + 1 : 0;
    r.end[0] = n;
    r.count = 1;
    return r;
}

// Query heads first_head .. first_head + n_q - 1 of the token at position
// `pos`, which must share one KV head, attend to cached positions 0..pos
// (with a window, the ones it hides are masked, their scores -inf, so that
// the sums group by cell as llama.cpp's do).
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
