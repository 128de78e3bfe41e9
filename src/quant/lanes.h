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

// The two orders of llama.cpp's AVX-512 build for float and half dot
// products. `madd(acc, i)` returns acc + a[i] * b[i] rounded as llama.cpp
// does (fused for floats; for halves the product is exact, so either way).
//
// tinyBLAS, its GEMM for batches of two or more tokens: lane i % 16, one
// chain per lane, then hsum16.
template <typename Madd>
float sum_tinyblas_order(int n, Madd madd) {
    float lanes[16] = {};
    for (int i = 0; i < n; ++i) lanes[i % 16] = madd(lanes[i % 16], i);
    return hsum16(lanes);
}

// ggml_vec_dot_f16/_f32, for one token: four 16-lane accumulators over steps
// of 64 values up to `vector_end`, combined as (a0 + a2) + (a1 + a3) and by
// hsum16; the values past vector_end added one at a time by `tail(sum, i)`
// (ggml sums that tail in double for halves, in float for floats).
template <typename Tail, typename Madd, typename TailAdd>
Tail sum_vec_dot_order(int n, int vector_end, Madd madd, TailAdd tail) {
    Tail sum = 0;
    if (vector_end > 0) {
        float acc[4][16] = {};
        for (int i = 0; i < vector_end; ++i) {
            float& a = acc[(i / 16) % 4][i % 16];
            a = madd(a, i);
        }
        float r[16];
        for (int l = 0; l < 16; ++l) r[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
        sum = hsum16(r);
    }
    for (int i = vector_end; i < n; ++i) sum = tail(sum, i);
    return sum;
}

}  // namespace smolinfer::quant
