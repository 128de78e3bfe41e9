// Random but well-formed weight blocks of every format: random quant bits,
// scales that are finite and of a realistic size.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "quant/types.h"

namespace smolinfer::test {

// Bytes for n values of `type` (n a multiple of the block size). `scale` is
// the typical magnitude of the dequantized values. The same seed gives the
// same bytes in every build (native and WebAssembly).
std::vector<uint8_t> random_blocks(quant::Type type, size_t n, std::mt19937& rng, float scale = 0.05f);

}  // namespace smolinfer::test
