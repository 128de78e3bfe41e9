// y = W x for a batch of activation rows, several matrices sharing one input
// (Q, K and V; gate and up) in a single pass of the thread pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "model/weights.h"

namespace smolinfer::runtime {
class ThreadPool;
}

namespace smolinfer::model {

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
             std::initializer_list<MatmulTarget> targets);

private:
    std::vector<uint8_t> act_;
    size_t act_row_capacity_;
};

}  // namespace smolinfer::model
