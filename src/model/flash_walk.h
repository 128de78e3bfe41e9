// Faster forms of the chunk path's walk (flash_attention.cpp) for CPUs with
// AVX-512, bit-identical to the portable and F16C forms there.
#pragma once

#include <cstddef>
#include <cstdint>

namespace smolinfer::model {

// The visible cells in at most two runs: visible position j is cell
// begin0 + j below n0, else begin1 + (j - n0).
struct CellRuns2 {
    int begin0, n0, begin1;
    int cell(int j) const { return j < n0 ? begin0 + j : begin1 + (j - n0); }
};

// One head's walk over visible positions j0..j1-1 from an empty sum, its
// online softmax already stepped (softmax_steps in flash_attention.cpp):
// weight[j - j0] is position j's weight and rescale[j - j0] the factor the
// sums so far take before it (1: none). values + cell * stride holds the
// head's cached value row. Writes the half accumulator's head_dim values as
// floats to out (not yet divided by the sum).
using ChunkWalkFn = void (*)(const uint16_t* values, size_t stride, CellRuns2 runs, const float* weight,
                             const float* rescale, int j0, int j1, float* out);

// n heads of one KV head walked as ChunkWalkFn walks one: head h's weights
// at weight + h * steps, its rescales at rescale + h * steps, its output at
// out + h * out_stride. Each position's values are converted once for the
// heads walked together, and their accumulators are independent chains.
using HeadsWalkFn = void (*)(const uint16_t* values, size_t stride, CellRuns2 runs, int n, const float* weight,
                             const float* rescale, size_t steps, int j0, int j1, float* out, size_t out_stride);

// The AVX-512 form for this head size, or null when this build or CPU has none.
HeadsWalkFn heads_walk_avx512(int head_dim);

}  // namespace smolinfer::model
