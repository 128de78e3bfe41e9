// sin and cos of a float exactly as glibc 2.29-2.40 computes them (its
// x86-64 FMA variant): llama.cpp takes RoPE's rotation angles from the C
// library, and a last-bit difference there changes the logits. Computing
// them ourselves makes every build (native, WebAssembly) agree with
// llama.cpp on Linux regardless of the C library it links.
#pragma once

namespace smolinfer::model {

void sincos_glibc(float x, float* sin_out, float* cos_out);

}  // namespace smolinfer::model
