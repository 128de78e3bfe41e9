// WebAssembly SIMD128 attention sums, bit-identical to the reference in
// attention.cpp: the same 16 lanes (four 4-float vectors), the same
// combination of four accumulators, the same final tree. Products of two
// halves are exact in float, so multiply-then-add equals llama.cpp's fused
// form in every build, relaxed or not.
#include "model/attention_kernels.h"

#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include "quant/wasm_simd.h"

namespace smolinfer::model {

namespace {

using quant::wasm::halves_to_f32;
using quant::wasm::hsum8;

// 16 lanes: v[k] holds lanes 4k..4k+3.
struct V16 {
    v128_t v[4];
};

inline V16 zero16() {
    const v128_t z = wasm_f32x4_splat(0.0f);
    return {{z, z, z, z}};
}
inline V16 load_half16(const uint16_t* p) {
    const v128_t a = wasm_v128_load(p), b = wasm_v128_load(p + 8);
    return {{halves_to_f32(wasm_u32x4_extend_low_u16x8(a)), halves_to_f32(wasm_u32x4_extend_high_u16x8(a)),
             halves_to_f32(wasm_u32x4_extend_low_u16x8(b)), halves_to_f32(wasm_u32x4_extend_high_u16x8(b))}};
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

void key_scores(const uint16_t* keys, size_t key_stride, int n, const float* q, int head_dim, AttentionOrder order,
                float* scores) {
    const bool vector_only = order == AttentionOrder::Batch ? head_dim % 16 == 0 : head_dim % 64 == 0;
    if (!vector_only) {
        attention_kernels_reference().key_scores(keys, key_stride, n, q, head_dim, order, scores);
        return;
    }
    for (int j = 0; j < n; ++j) {
        const uint16_t* k = keys + size_t(j) * key_stride;
        if (order == AttentionOrder::Batch) {
            V16 acc = zero16();
            for (int c = 0; c < head_dim; c += 16) acc = add(acc, mul(load_half16(k + c), load16(q + c)));
            scores[j] = hsum16(acc);
        } else {
            V16 acc[4] = {zero16(), zero16(), zero16(), zero16()};
            for (int c = 0; c < head_dim; c += 64) {
                for (int a = 0; a < 4; ++a) acc[a] = add(acc[a], mul(load_half16(k + c + 16 * a), load16(q + c + 16 * a)));
            }
            scores[j] = reduce4(acc);
        }
    }
}

void value_sums(const KvCache& cache, int layer, int dim0, int head_dim, int n, const float* w, AttentionOrder order,
                float* out) {
    constexpr int kB = KvCache::kBlock;
    const int full = n / 16 * 16;
    // Positions past n may hold anything (NaN included): their products are masked.
    V16 tail_mask;
    for (int k = 0; k < 4; ++k) {
        tail_mask.v[k] = wasm_i32x4_lt(wasm_i32x4_make(4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3), wasm_i32x4_splat(n - full));
    }
    float w_tail[16] = {};
    for (int j = full; j < n; ++j) w_tail[j - full] = w[j];
    for (int i = 0; i < head_dim; ++i) {
        V16 acc[4] = {zero16(), zero16(), zero16(), zero16()};
        for (int j0 = 0; j0 < n; j0 += 16) {
            const uint16_t* v = cache.v_block(layer, j0 / kB, dim0 + i) + j0 % kB;
            V16 p = mul(load_half16(v), j0 < full ? load16(w + j0) : load16(w_tail));
            if (j0 >= full) {
                for (int k = 0; k < 4; ++k) p.v[k] = wasm_v128_and(p.v[k], tail_mask.v[k]);
            }
            V16& a = acc[order == AttentionOrder::Batch ? 0 : (j0 / 16) % 4];
            a = add(a, p);
        }
        out[i] = order == AttentionOrder::Batch ? hsum16(acc[0]) : reduce4(acc);
    }
}

}  // namespace

const AttentionKernels* attention_kernels_wasm() {
    static const AttentionKernels k{key_scores, value_sums};
    return &k;
}

}  // namespace smolinfer::model

#else

namespace smolinfer::model {
const AttentionKernels* attention_kernels_wasm() { return nullptr; }
}  // namespace smolinfer::model

#endif
