// Weight quantizers: float rows -> block formats, for `smolinfer quantize`.
// Each searches its block scales (and minimums) to keep the squared error at
// least as low as llama.cpp's reference quantizer does on the same data.
// (The activation quantizers, which must round exactly as llama.cpp's, are
// in reference.h.)
#pragma once

#include <cstddef>

#include "quant/types.h"

namespace smolinfer::quant::ref {

// Whether quantize_row supports `type` as a weight format.
bool can_quantize(Type type);

// Quantizes one row of n values (a multiple of the block size) into
// `type`'s blocks at dst. Deterministic: same input, same bytes.
void quantize_row(Type type, const float* x, void* dst, size_t n);

}  // namespace smolinfer::quant::ref
