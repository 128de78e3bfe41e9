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

}  // namespace smolinfer::quant::avx512
