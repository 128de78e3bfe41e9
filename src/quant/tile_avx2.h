// AVX2 tile kernels (see Tile in kernels.h), each bit-identical to its AVX2
// dot (llama.cpp's order for that format and shape).
#pragma once

#include "quant/kernels.h"

namespace smolinfer::quant::avx2 {

// The tile for a weight type's one-token dot, or null when there is none
// (or the build does not target AVX2).
TileFn tile_for(Type weight);

// The K-quant tiles (tile_kquant_avx2.cpp), or null: Q4_K in the order of
// llama.cpp's interleaved kernels (rows8: the matrix's rows are a multiple
// of 8), for its one-token dot or, batched, its four-token one; Q5_K and
// Q6_K in their vec_dot order (not batched).
TileFn kquant_tile_for(Type weight, bool rows8, bool batched);

// Half-precision weights (tile_float_avx2.cpp): the one-token dot in
// ggml_vec_dot_f16's order, and the tile for batches in tinyBLAS's, both in
// the 16 lanes of llama.cpp's AVX-512 build (the goldens' order).
float dot_f16_f16(size_t n, const void* w, const void* a);
TileFn f16_tile_batched();

}  // namespace smolinfer::quant::avx2
