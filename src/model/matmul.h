// y = W x for a batch of activation rows, several matrices sharing one input
// (Q, K and V; gate and up) in a single pass of the thread pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "model/weights.h"

namespace smolinfer::runtime {
class ThreadPool;
}

namespace smolinfer::model {

// Which of llama.cpp's summation orders the rows of one call take: a
// batch's (two or more tokens of one pass: some formats use other kernels
// for them), or each token's own as if it were alone in its pass (tokens of
// several sequences decoding together).
enum class RowOrder { Batch, PerToken };

struct MatmulTarget {
    const Matrix* w;
    float* y;  // n_tokens rows of w->rows values
};

class Matmul {
public:
    // Scratch for quantized activations: up to max_tokens rows of max_cols values.
    Matmul(int max_tokens, int max_cols);

    // For each target: y[t][r] = dot(w.row(r), x[t]) for t < n_tokens.
    // Every target's matrix has `cols` columns; x holds n_tokens rows of cols.
    void run(runtime::ThreadPool& pool, const float* x, int n_tokens, int cols,
             std::initializer_list<MatmulTarget> targets, RowOrder order = RowOrder::Batch);

    // The same, for targets with equal row counts, then rows_done(r0, r1) on
    // the thread that computed rows [r0, r1) of every target for every token:
    // an element-wise step (SwiGLU of gate and up) joins the product's pass
    // instead of costing the pool another one.
    using RowsDone = std::function<void(int r0, int r1)>;
    void run(runtime::ThreadPool& pool, const float* x, int n_tokens, int cols,
             std::initializer_list<MatmulTarget> targets, RowOrder order, const RowsDone& rows_done);

private:
    struct Input {
        const uint8_t* act;
        size_t act_row;
        uint64_t id;
    };
    // x quantized to the kernel's activation format, into act_.
    Input quantize_input(runtime::ThreadPool& pool, const float* x, int n_tokens, int cols,
                         const quant::MatmulKernel& kernel);

    std::vector<uint8_t> act_;
    size_t act_row_capacity_;
};

}  // namespace smolinfer::model
