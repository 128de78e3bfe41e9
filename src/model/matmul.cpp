#include "model/matmul.h"

#include <algorithm>

#include "quant/types.h"
#include "runtime/thread_pool.h"

namespace smolinfer::model {

namespace {
// Output rows handed out together: their weights stay in cache while every
// token of the batch is multiplied with them.
constexpr int kRowTile = 16;
// Rows [r0, r1) of w times tokens [t0, t1): with the kernel's tile when it
// has one and there are at least tile_min_tokens tokens, else a dot per
// (row, token). A tile unpacks a block's codes once for several tokens; for
// one token the tiles that serve it (AVX-512's and WebAssembly's 32-value
// formats) run several rows' chains at once instead.
void multiply(const Matrix& w, int r0, int r1, const uint8_t* act, size_t act_row, uint64_t act_id, int t0, int t1,
              quant::DotFn dot, quant::TileFn tile, int cols, float* y) {
    if (t0 >= t1) return;
    if (tile && t1 - t0 >= w.kernel.tile_min_tokens) {
        const quant::Tile t{w.row(r0), w.row_bytes, r1 - r0, act + size_t(t0) * act_row, act_row, t1 - t0,
                            y + size_t(t0) * size_t(w.rows) + size_t(r0), size_t(w.rows), act_id};
        tile(size_t(cols), t);
        return;
    }
    for (int tok = t0; tok < t1; ++tok) {
        const uint8_t* a = act + size_t(tok) * act_row;
        float* out = y + size_t(tok) * size_t(w.rows);
        for (int r = r0; r < r1; ++r) out[r] = dot(size_t(cols), w.row(r), a);
    }
}

}  // namespace

Matmul::Matmul(int max_tokens, int max_cols) {
    // The widest activation format is F32: 4 bytes a value.
    act_row_capacity_ = size_t(max_cols) * sizeof(float);
    act_.resize(size_t(max_tokens) * act_row_capacity_);
}

namespace {
// Rows [r0, r1) of one target for every token: the batched kernel for the
// tokens it takes in groups, the plain one for the rest.
void multiply_rows(const MatmulTarget& target, int r0, int r1, const uint8_t* act, size_t act_row, uint64_t act_id,
                   int n_tokens, int cols, RowOrder order) {
    const Matrix& w = *target.w;
    const bool batch = order == RowOrder::Batch && w.kernel.dot_batched && n_tokens >= 2;
    const int batched = batch ? n_tokens - n_tokens % w.kernel.batch_group : 0;
    multiply(w, r0, r1, act, act_row, act_id, 0, batched, w.kernel.dot_batched, w.kernel.tile_batched, cols, target.y);
    multiply(w, r0, r1, act, act_row, act_id, batched, n_tokens, w.kernel.dot, w.kernel.tile, cols, target.y);
}

// Ranges of tiles: each thread runs its own part of the rows, then takes
// ranges of the parts not done yet, since threads do not finish together
// (in browsers a worker is woken late now and then); a result does not
// depend on which thread computes it.
size_t tile_chunk(int n_tiles, const runtime::ThreadPool& pool) {
    return std::max<size_t>(1, size_t(n_tiles) / (8 * size_t(pool.size())));
}
}  // namespace

Matmul::Input Matmul::quantize_input(runtime::ThreadPool& pool, const float* x, int n_tokens, int cols,
                                     const quant::MatmulKernel& kernel) {
    const size_t act_row = quant::row_bytes(quant::traits(kernel.activation), size_t(cols));
    uint8_t* act = act_.data();
    if (n_tokens == 1) {
        kernel.quantize(x, act, size_t(cols));
    } else {
        pool.parallel_for(size_t(n_tokens), [&](size_t b, size_t e) {
            for (size_t t = b; t < e; ++t) kernel.quantize(x + t * size_t(cols), act + t * act_row, size_t(cols));
        });
    }
    return {act, act_row, quant::new_activation_id()};
}

void Matmul::run(runtime::ThreadPool& pool, const float* x, int n_tokens, int cols,
                 std::initializer_list<MatmulTarget> targets, RowOrder order) {
    // All targets read the same input; quantize it once per activation format.
    // (Matrices sharing an input share a type in practice; if not, the
    // cheaper path is still correct: each format gets its own pass.)
    const quant::MatmulKernel& k0 = targets.begin()->w->kernel;
    for (const MatmulTarget& t : targets) {
        if (t.w->kernel.activation != k0.activation) {
            for (const MatmulTarget& one : targets) run(pool, x, n_tokens, cols, {one}, order);
            return;
        }
    }
    const Input in = quantize_input(pool, x, n_tokens, cols, k0);

    // Row tiles of all targets, numbered consecutively, split among threads.
    int n_tiles = 0;
    for (const MatmulTarget& t : targets) n_tiles += (t.w->rows + kRowTile - 1) / kRowTile;
    pool.parallel_for_dynamic(size_t(n_tiles), tile_chunk(n_tiles, pool), [&](int, size_t tile_begin, size_t tile_end) {
        size_t tile = 0;
        for (const MatmulTarget& target : targets) {
            const int rows = target.w->rows;
            const size_t tiles_here = size_t((rows + kRowTile - 1) / kRowTile);
            const size_t lo = std::max(tile_begin, tile);
            const size_t hi = std::min(tile_end, tile + tiles_here);
            for (size_t i = lo; i < hi; ++i) {
                const int r0 = int(i - tile) * kRowTile;
                multiply_rows(target, r0, std::min(rows, r0 + kRowTile), in.act, in.act_row, in.id, n_tokens, cols, order);
            }
            tile += tiles_here;
        }
    });
}

void Matmul::run(runtime::ThreadPool& pool, const float* x, int n_tokens, int cols,
                 std::initializer_list<MatmulTarget> targets, RowOrder order, const RowsDone& rows_done) {
    const quant::MatmulKernel& k0 = targets.begin()->w->kernel;
    const int rows = targets.begin()->w->rows;
    for (const MatmulTarget& t : targets) {
        if (t.w->kernel.activation != k0.activation || t.w->rows != rows) {
            // Unlike formats or shapes: one pass per target, then the step.
            for (const MatmulTarget& one : targets) run(pool, x, n_tokens, cols, {one}, order);
            rows_done(0, rows);
            return;
        }
    }
    const Input in = quantize_input(pool, x, n_tokens, cols, k0);

    // Tile i is rows [16 i, 16 i + 16) of every target.
    const int n_tiles = (rows + kRowTile - 1) / kRowTile;
    pool.parallel_for_dynamic(size_t(n_tiles), tile_chunk(n_tiles, pool), [&](int, size_t tile_begin, size_t tile_end) {
        for (size_t i = tile_begin; i < tile_end; ++i) {
            const int r0 = int(i) * kRowTile;
            const int r1 = std::min(rows, r0 + kRowTile);
            for (const MatmulTarget& target : targets) {
                multiply_rows(target, r0, r1, in.act, in.act_row, in.id, n_tokens, cols, order);
            }
            rows_done(r0, r1);
        }
    });
}

}  // namespace smolinfer::model
