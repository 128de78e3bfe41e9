// AVX-512 VNNI tile kernels (see Tile in kernels.h), compiled for that
// instruction set alone and used only when the CPU has it.
#pragma once

#include "quant/kernels.h"

namespace smolinfer::quant::avx512 {

// Whether this build has the kernels and this CPU can run them.
bool available();

// The tile for a weight type's one-token dot (llama.cpp's vec_dot order), or
// null when there is none.
TileFn tile_for(Type weight);

// The K-quant tiles (tile_kquant_avx512.cpp), or null: Q4_K in the order of
// llama.cpp's interleaved kernels (rows8: the matrix's rows are a multiple
// of 8), for its one-token dot or, batched, its four-token one; Q6_K in its
// vec_dot order (not batched).
TileFn kquant_tile_for(Type weight, bool rows8, bool batched);
// One-token dots of the same formats and orders, or null.
DotFn kquant_dot_for(Type weight, bool rows8);

// Half-precision weights (tile_float_avx512.cpp): the one-token dot in
// ggml_vec_dot_f16's order, and the tile for batches in tinyBLAS's.
float dot_f16_f16(size_t n, const void* w, const void* a);
TileFn f16_tile_batched();

}  // namespace smolinfer::quant::avx512
