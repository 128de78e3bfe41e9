// WebAssembly SIMD128 attention sums, bit-identical to the reference in
// attention.cpp: the same 16 lanes (four 4-float vectors), the same
// combination of four accumulators, the same final tree. Products of two
// halves are exact in float, so multiply-then-add equals llama.cpp's fused
// form in every build, relaxed or not.
//
// Converting the cached halves is most of the work, so each key and each
// value row is converted once for all the query heads that share its KV
// head, and by moving bits rather than by the general conversion wherever
// the halves are normal numbers.
#include "model/attention_kernels.h"

#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <algorithm>
#include <vector>

#include "model/vector_math_wasm.h"
#include "quant/wasm_simd.h"

namespace smolinfer::model {

namespace {

using quant::wasm::halves_to_f32;
using quant::wasm::hsum8;

// Eight halves to floats at out. Normal halves need no arithmetic: the
// sign-extended half shifted left by 13 has the sign in bits 28-31, the
// exponent and mantissa in place; clear bits 28-30, rebias the exponent by
// 127 - 15. Zeros, subnormals, infinities and NaN (an exponent of 0 or 31
// anywhere in the eight) take the general conversion.
inline void halves8(const uint16_t* p, float* out) {
    const v128_t h = wasm_v128_load(p);
    const v128_t e = wasm_v128_and(h, wasm_i16x8_splat(0x7C00));
    if (wasm_v128_any_true(wasm_v128_or(wasm_i16x8_eq(e, wasm_i16x8_splat(0)), wasm_i16x8_eq(e, wasm_i16x8_splat(0x7C00))))) {
        wasm_v128_store(out, halves_to_f32(wasm_u32x4_extend_low_u16x8(h)));
        wasm_v128_store(out + 4, halves_to_f32(wasm_u32x4_extend_high_u16x8(h)));
        return;
    }
    const v128_t keep = wasm_i32x4_splat(int32_t(0x8FFFFFFFu)), bias = wasm_i32x4_splat(112 << 23);
    wasm_v128_store(out, wasm_i32x4_add(wasm_v128_and(wasm_i32x4_shl(wasm_i32x4_extend_low_i16x8(h), 13), keep), bias));
    wasm_v128_store(out + 4, wasm_i32x4_add(wasm_v128_and(wasm_i32x4_shl(wasm_i32x4_extend_high_i16x8(h), 13), keep), bias));
}

// 16 lanes: v[k] holds lanes 4k..4k+3.
struct V16 {
    v128_t v[4];
};

inline V16 zero16() {
    const v128_t z = wasm_f32x4_splat(0.0f);
    return {{z, z, z, z}};
}
inline V16 load16(const float* p) {
    return {{wasm_v128_load(p), wasm_v128_load(p + 4), wasm_v128_load(p + 8), wasm_v128_load(p + 12)}};
}
inline V16 add(const V16& a, const V16& b) {
    V16 r;
    for (int k = 0; k < 4; ++k) r.v[k] = wasm_f32x4_add(a.v[k], b.v[k]);
    return r;
}
inline V16 mul(const V16& a, const V16& b) {
    V16 r;
    for (int k = 0; k < 4; ++k) r.v[k] = wasm_f32x4_mul(a.v[k], b.v[k]);
    return r;
}

// quant::hsum16: lanes i and i+8 first, then hsum8's tree.
inline float hsum16(const V16& a) { return hsum8(wasm_f32x4_add(a.v[2], a.v[0]), wasm_f32x4_add(a.v[3], a.v[1])); }

// ggml_vec_dot_f16's reduction of its four accumulators.
inline float reduce4(const V16 a[4]) { return hsum16(add(add(a[0], a[2]), add(a[1], a[3]))); }

// Floats converted from halves, per thread, grown as needed.
float* scratch(size_t floats) {
    thread_local std::vector<float> buffer;
    if (buffer.size() < floats) buffer.resize(floats);
    return buffer.data();
}

void key_scores(const uint16_t* keys, size_t key_stride, int n, const float* q, int n_q, int head_dim,
                AttentionOrder order, float* scores) {
    const bool vector_only = order == AttentionOrder::Batch ? head_dim % 16 == 0 : head_dim % 64 == 0;
    if (!vector_only) {
        attention_kernels_reference().key_scores(keys, key_stride, n, q, n_q, head_dim, order, scores);
        return;
    }
    float* k = scratch(size_t(head_dim));
    for (int j = 0; j < n; ++j) {
        const uint16_t* key = keys + size_t(j) * key_stride;
        for (int c = 0; c < head_dim; c += 8) halves8(key + c, k + c);
        for (int g = 0; g < n_q; ++g) {
            const float* qg = q + size_t(g) * size_t(head_dim);
            float& score = scores[size_t(g) * size_t(n) + size_t(j)];
            if (order == AttentionOrder::Batch) {
                V16 acc = zero16();
                for (int c = 0; c < head_dim; c += 16) acc = add(acc, mul(load16(k + c), load16(qg + c)));
                score = hsum16(acc);
            } else {
                V16 acc[4] = {zero16(), zero16(), zero16(), zero16()};
                for (int c = 0; c < head_dim; c += 64) {
                    for (int a = 0; a < 4; ++a) acc[a] = add(acc[a], mul(load16(k + c + 16 * a), load16(qg + c + 16 * a)));
                }
                score = reduce4(acc);
            }
        }
    }
}

void value_sums(const KvCache& cache, int layer, int dim0, int head_dim, int n, const float* w, int n_q,
                AttentionOrder order, float* out) {
    constexpr int kB = KvCache::kBlock;
    const int full = n / 16 * 16;
    const int padded = (n + 15) / 16 * 16;
    // Positions past n may hold anything (NaN included): their products are masked.
    V16 tail_mask;
    for (int k = 0; k < 4; ++k) {
        tail_mask.v[k] = wasm_i32x4_lt(wasm_i32x4_make(4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3), wasm_i32x4_splat(n - full));
    }
    float* v = scratch(size_t(padded) + size_t(n_q) * 16);
    float* w_tail = v + padded;  // each query's last partial chunk, zero-padded
    for (int g = 0; g < n_q; ++g) {
        std::fill(w_tail + 16 * g, w_tail + 16 * g + 16, 0.0f);
        std::copy(w + size_t(g) * size_t(n) + full, w + size_t(g) * size_t(n) + n, w_tail + 16 * g);
    }
    for (int i = 0; i < head_dim; ++i) {
        // This dimension's values at every position, converted once.
        for (int j0 = 0; j0 < padded; j0 += 16) {
            const uint16_t* src = cache.v_block(layer, j0 / kB, dim0 + i) + j0 % kB;
            halves8(src, v + j0);
            halves8(src + 8, v + j0 + 8);
        }
        for (int g = 0; g < n_q; ++g) {
            const float* wg = w + size_t(g) * size_t(n);
            V16 acc[4] = {zero16(), zero16(), zero16(), zero16()};
            for (int j0 = 0; j0 < n; j0 += 16) {
                V16 p = mul(load16(v + j0), j0 < full ? load16(wg + j0) : load16(w_tail + 16 * g));
                if (j0 >= full) {
                    for (int k = 0; k < 4; ++k) p.v[k] = wasm_v128_and(p.v[k], tail_mask.v[k]);
                }
                V16& a = acc[order == AttentionOrder::Batch ? 0 : (j0 / 16) % 4];
                a = add(a, p);
            }
            out[size_t(g) * size_t(head_dim) + size_t(i)] = order == AttentionOrder::Batch ? hsum16(acc[0]) : reduce4(acc);
        }
    }
}

// The reference's softmax four lanes at a time: the same exponentials (an
// exact vector form of exp_approx), the same chunk sums (hsum16 of each 16,
// in double), the same f16 weights.
void softmax(float* s, int n, float scale, float* w) {
    const int full = n / 4 * 4;
    const v128_t sc = wasm_f32x4_splat(scale);
    v128_t m = wasm_f32x4_splat(-__builtin_inff());
    for (int t = 0; t < full; t += 4) {
        const v128_t v = wasm_f32x4_mul(wasm_v128_load(s + t), sc);
        wasm_v128_store(s + t, v);
        m = wasm_f32x4_pmax(m, v);  // as std::max(max, s): NaN is skipped
    }
    alignas(16) float lanes[4];
    wasm_v128_store(lanes, m);
    float max = lanes[0];
    for (int l = 1; l < 4; ++l) max = std::max(max, lanes[l]);
    for (int t = full; t < n; ++t) max = std::max(max, s[t] *= scale);
    const v128_t mx = wasm_f32x4_splat(max);
    double sum = 0.0;
    for (int c = 0; c < n; c += 16) {
        alignas(16) float chunk[16] = {};
        const int len = std::min(16, n - c);
        std::copy(s + c, s + c + len, chunk);
        V16 e;
        for (int k = 0; k < 4; ++k) e.v[k] = wasm::exp_approx4(wasm_f32x4_sub(wasm_v128_load(chunk + 4 * k), mx));
        // Lanes past n count as 0 in the chunk's sum, as in the reference.
        for (int k = 0; k < 4; ++k) {
            if (4 * k >= len) e.v[k] = wasm_f32x4_splat(0.0f);
            wasm_v128_store(chunk + 4 * k, e.v[k]);
        }
        for (int l = len; l < 16; ++l) chunk[l] = 0.0f;
        std::copy(chunk, chunk + len, s + c);
        sum += double(hsum16(load16(chunk)));
    }
    const v128_t inv = wasm_f32x4_splat(float(1.0 / sum));
    for (int t = 0; t < full; t += 4) wasm_v128_store(w + t, wasm::round_to_half4(wasm_f32x4_mul(wasm_v128_load(s + t), inv)));
    for (int t = full; t < n; ++t) {
        alignas(16) float one[4] = {s[t], 0, 0, 0};
        w[t] = wasm_f32x4_extract_lane(wasm::round_to_half4(wasm_f32x4_mul(wasm_v128_load(one), inv)), 0);
    }
}

}  // namespace

const AttentionKernels* attention_kernels_wasm() {
    static const AttentionKernels k{key_scores, value_sums, softmax};
    return &k;
}

}  // namespace smolinfer::model

#else

namespace smolinfer::model {
const AttentionKernels* attention_kernels_wasm() { return nullptr; }
}  // namespace smolinfer::model

#endif
