// The lane layouts and horizontal-sum trees of llama.cpp's x86 kernels.
//
// Floating-point sums depend on their order, and 8-bit activation codes
// amplify any last-bit difference into a visibly different next layer, so
// smolinfer reproduces llama.cpp's order exactly: every kernel (scalar
// reference, AVX2, wasm SIMD) accumulates into the same lanes with fused
// multiply-adds and reduces them with these trees.
#pragma once

#include <cmath>

namespace smolinfer::quant {

// _mm256 hsum as ggml's hsum_float_8: ((v4+v0)+(v6+v2)) + ((v5+v1)+(v7+v3)).
inline float hsum8(const float v[8]) {
    const float r0 = v[4] + v[0], r1 = v[5] + v[1], r2 = v[6] + v[2], r3 = v[7] + v[3];
    return (r0 + r2) + (r1 + r3);
}

// _mm512_reduce_add_ps: halves added pairwise down to one value.
inline float hsum16(const float v[16]) {
    float t[8];
    for (int i = 0; i < 8; ++i) t[i] = v[i + 8] + v[i];
    const float u0 = t[4] + t[0], u1 = t[5] + t[1], u2 = t[6] + t[2], u3 = t[7] + t[3];
    return (u0 + u2) + (u1 + u3);
}

}  // namespace smolinfer::quant
