#include "model/matmul.h"

#include <algorithm>

#include "quant/types.h"
#include "runtime/thread_pool.h"

namespace smolinfer::model {

namespace {
// Output rows handed out together: their weights stay in cache while every
// token of the batch is multiplied with them.
constexpr int kRowTile = 16;
}  // namespace

Matmul::Matmul(int max_tokens, int max_cols) {
    // The widest activation format is F32: 4 bytes a value.
    act_row_capacity_ = size_t(max_cols) * sizeof(float);
    act_.resize(size_t(max_tokens) * act_row_capacity_);
}

void Matmul::run(runtime::ThreadPool& pool, const float* x, int n_tokens, int cols,
                 std::initializer_list<MatmulTarget> targets) {
    // All targets read the same input; quantize it once per activation format.
    // (Matrices sharing an input share a type in practice; if not, the
    // cheaper path is still correct: each format gets its own pass.)
    const quant::MatmulKernel& k0 = targets.begin()->w->kernel;
    for (const MatmulTarget& t : targets) {
        if (t.w->kernel.activation != k0.activation) {
            for (const MatmulTarget& one : targets) run(pool, x, n_tokens, cols, {one});
            return;
        }
    }
    const size_t act_row = quant::row_bytes(quant::traits(k0.activation), size_t(cols));
    uint8_t* act = act_.data();
    if (n_tokens == 1) {
        k0.quantize(x, act, size_t(cols));
    } else {
        pool.parallel_for(size_t(n_tokens), [&](size_t b, size_t e) {
            for (size_t t = b; t < e; ++t) k0.quantize(x + t * size_t(cols), act + t * act_row, size_t(cols));
        });
    }

    // Row tiles of all targets, numbered consecutively, split among threads.
    int n_tiles = 0;
    for (const MatmulTarget& t : targets) n_tiles += (t.w->rows + kRowTile - 1) / kRowTile;
    pool.parallel_for(size_t(n_tiles), [&](size_t tile_begin, size_t tile_end) {
        size_t tile = 0;
        for (const MatmulTarget& target : targets) {
            const Matrix& w = *target.w;
            const size_t tiles_here = size_t((w.rows + kRowTile - 1) / kRowTile);
            const size_t lo = std::max(tile_begin, tile);
            const size_t hi = std::min(tile_end, tile + tiles_here);
            for (size_t i = lo; i < hi; ++i) {
                const int r0 = int(i - tile) * kRowTile;
                const int r1 = std::min(w.rows, r0 + kRowTile);
                const int batched = (w.kernel.dot_batched && n_tokens >= 2)
                                        ? n_tokens - n_tokens % w.kernel.batch_group : 0;
                for (int tok = 0; tok < n_tokens; ++tok) {
                    const quant::DotFn dot = tok < batched ? w.kernel.dot_batched : w.kernel.dot;
                    const uint8_t* a = act + size_t(tok) * act_row;
                    float* y = target.y + size_t(tok) * size_t(w.rows);
                    for (int r = r0; r < r1; ++r) y[r] = dot(size_t(cols), w.row(r), a);
                }
            }
            tile += tiles_here;
        }
    });
}

}  // namespace smolinfer::model
