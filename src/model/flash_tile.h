// Faster forms of one step of the tiled flash-attention path
// (flash_attention.cpp), for the query heads of one token against one tile
// of kFlashTileKv positions, bit-identical to the portable form there.
#pragma once

#include <cstdint>

#include "model/flash_attention.h"

namespace smolinfer::model {

// kt: the tile's keys transposed (kt[i * kFlashTileKv + tk]), vt its values
// (vt[tk * head_dim + i]); q: the rows' queries, head_dim floats each,
// consecutive; position tk is visible if bit tk of `seen` is set (none at
// or past `valid`; a window can hide some before it). Updates each row's
// running maximum, sum and head_dim sums (acc, consecutive rows).
using FlashTileRowsFn = void (*)(const float* kt, const float* vt, const float* q, float scale, int valid,
                                 uint64_t seen, float* max, float* sum, float* acc);

// The AVX-512 form for this head size and number of rows, or null when this
// build or CPU has none.
FlashTileRowsFn flash_tile_rows_avx512(int head_dim, int n_rows);
// The AVX2 form (the native x86-64-v3 build), or null.
FlashTileRowsFn flash_tile_rows_avx2(int head_dim, int n_rows);

}  // namespace smolinfer::model
