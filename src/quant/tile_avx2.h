// AVX2 tile kernels (see Tile in kernels.h) for the 32-value formats, each
// bit-identical to its AVX2 dot (llama.cpp's vec_dot order).
#pragma once

#include "quant/kernels.h"

namespace smolinfer::quant::avx2 {

// The tile for a weight type's one-token dot, or null when there is none
// (or the build does not target AVX2).
TileFn tile_for(Type weight);

}  // namespace smolinfer::quant::avx2
