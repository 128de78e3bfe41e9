// AVX2 + F16C attention sums, bit-identical to the reference in
// attention.cpp: the same 16 lanes (two 8-float registers), the same
// combination of four accumulators and the same final tree. Products of two
// halves are exact in float, so multiply-then-add equals llama.cpp's fused
// form.
#include "model/attention_kernels.h"
#include "model/vector_math_avx2.h"
#include "runtime/machine.h"

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>

namespace smolinfer::model {

namespace {

// 16 lanes as two registers: lo = lanes 0-7, hi = lanes 8-15.
struct V16 {
    __m256 lo, hi;
};

inline V16 zero16() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline V16 load_half16(const uint16_t* p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
inline V16 load16(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline V16 add(V16 a, V16 b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline V16 mul(V16 a, V16 b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }

// quant::hsum16: lanes i and i+8 first, then hsum8's tree.
inline float hsum16(V16 v) {
    const __m256 t = _mm256_add_ps(v.hi, v.lo);
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(t, 1), _mm256_castps256_ps128(t));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// ggml_vec_dot_f16's reduction of its four accumulators.
inline float reduce4(const V16 a[4]) { return hsum16(add(add(a[0], a[2]), add(a[1], a[3]))); }

// `prefetch`: ask for the keys ahead (the first query head of a KV head
// does; the others find them cached).
void key_scores_one(const uint16_t* keys, size_t key_stride, int n, const float* q, int head_dim, AttentionOrder order,
                    bool prefetch, float* scores) {
    for (int j = 0; prefetch && j < std::min(kPrefetchKeys, n); ++j) prefetch_halves(keys + size_t(j) * key_stride, head_dim);
    for (int j = 0; j < n; ++j) {
        if (prefetch && j + kPrefetchKeys < n) prefetch_halves(keys + size_t(j + kPrefetchKeys) * key_stride, head_dim);
        const uint16_t* k = keys + size_t(j) * key_stride;
        // Each accumulator starts as its first product instead of 0 +
        // product, and the score gets + 0: the same bits (see
        // key_scores_heads in attention_avx512.cpp).
        if (order == AttentionOrder::Batch) {
            V16 acc = mul(load_half16(k), load16(q));
            for (int c = 16; c < head_dim; c += 16) acc = add(acc, mul(load_half16(k + c), load16(q + c)));
            scores[j] = hsum16(acc) + 0.0f;
        } else {
            V16 acc[4];
            for (int a = 0; a < 4; ++a) acc[a] = mul(load_half16(k + 16 * a), load16(q + 16 * a));
            for (int c = 64; c < head_dim; c += 64) {
                for (int a = 0; a < 4; ++a) acc[a] = add(acc[a], mul(load_half16(k + c + 16 * a), load16(q + c + 16 * a)));
            }
            scores[j] = reduce4(acc) + 0.0f;
        }
    }
}

// Lanes of a 16-position chunk starting at j0 that lie before n.
inline V16 lanes_before(int j0, int n) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i limit = _mm256_set1_epi32(n - j0);
    return {_mm256_castsi256_ps(_mm256_cmpgt_epi32(limit, idx)),
            _mm256_castsi256_ps(_mm256_cmpgt_epi32(limit, _mm256_add_epi32(idx, _mm256_set1_epi32(8))))};
}

// `prefetch` as for key_scores_one, for the value rows.
void value_sums_one(const KvCache& cache, int layer, int dim0, int head_dim, int n, const float* w,
                    AttentionOrder order, bool prefetch, float* out) {
    constexpr int kB = KvCache::kBlock;
    const int full = n / 16 * 16;
    const V16 tail_mask = lanes_before(full, n);
    float w_tail[16] = {};
    for (int j = full; j < n; ++j) w_tail[j - full] = w[j];
    for (int i = 0; prefetch && i < std::min(kPrefetchValueDims, head_dim); ++i) prefetch_value_row(cache, layer, dim0 + i, n);
    for (int i = 0; i < head_dim; ++i) {
        if (prefetch && i + kPrefetchValueDims < head_dim) prefetch_value_row(cache, layer, dim0 + i + kPrefetchValueDims, n);
        V16 acc[4] = {zero16(), zero16(), zero16(), zero16()};
        for (int j0 = 0; j0 < n; j0 += 16) {
            const uint16_t* v = cache.v_block(layer, j0 / kB, dim0 + i) + j0 % kB;
            V16 p = mul(load_half16(v), j0 < full ? load16(w + j0) : load16(w_tail));
            if (j0 >= full) p = {_mm256_and_ps(p.lo, tail_mask.lo), _mm256_and_ps(p.hi, tail_mask.hi)};
            V16& a = acc[order == AttentionOrder::Batch ? 0 : (j0 / 16) % 4];
            a = add(a, p);
        }
        out[i] = order == AttentionOrder::Batch ? hsum16(acc[0]) : reduce4(acc);
    }
}

// F16C converts halves in one instruction: nothing to share between the
// query heads of a group.
void key_scores(const uint16_t* keys, size_t key_stride, int n, const float* q, int n_q, int head_dim,
                AttentionOrder order, float* scores) {
    const bool vector_only = order == AttentionOrder::Batch ? head_dim % 16 == 0 : head_dim % 64 == 0;
    if (!vector_only) {
        attention_kernels_reference().key_scores(keys, key_stride, n, q, n_q, head_dim, order, scores);
        return;
    }
    for (int g = 0; g < n_q; ++g) {
        key_scores_one(keys, key_stride, n, q + size_t(g) * size_t(head_dim), head_dim, order, g == 0,
                       scores + size_t(g) * size_t(n));
    }
}

void value_sums(const KvCache& cache, int layer, int dim0, int head_dim, int n, const float* w, int n_q,
                AttentionOrder order, float* out) {
    for (int g = 0; g < n_q; ++g) {
        value_sums_one(cache, layer, dim0, head_dim, n, w + size_t(g) * size_t(n), order, g == 0,
                       out + size_t(g) * size_t(head_dim));
    }
}

// The reference softmax eight lanes at a time (two registers per 16-position
// chunk): the same exponentials, the same chunk sums (lanes past n are zero)
// added in double, the same rounding of the weights to half.
void softmax(float* s, int n, float scale, float* w) {
    const __m256 sc = _mm256_set1_ps(scale);
    __m256 mx8 = _mm256_set1_ps(-INFINITY);
    for (int j = 0; j < n; j += 8) {
        // The first 8 of the 16 lanes from j that lie before n.
        const __m256 m = lanes_before(j, n).lo;
        const __m256 x = _mm256_mul_ps(_mm256_maskload_ps(s + j, _mm256_castps_si256(m)), sc);
        _mm256_maskstore_ps(s + j, _mm256_castps_si256(m), x);
        mx8 = _mm256_max_ps(mx8, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, m));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx8), _mm256_extractf128_ps(mx8, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const __m256 mx = _mm256_set1_ps(_mm_cvtss_f32(m4));
    double sum = 0.0;
    for (int c = 0; c < n; c += 16) {
        const V16 m = lanes_before(c, n);
        V16 e;
        e.lo = _mm256_and_ps(m.lo, avx2::exp_approx8(_mm256_sub_ps(_mm256_maskload_ps(s + c, _mm256_castps_si256(m.lo)), mx)));
        e.hi = _mm256_and_ps(m.hi, avx2::exp_approx8(_mm256_sub_ps(_mm256_maskload_ps(s + c + 8, _mm256_castps_si256(m.hi)), mx)));
        _mm256_maskstore_ps(s + c, _mm256_castps_si256(m.lo), e.lo);
        _mm256_maskstore_ps(s + c + 8, _mm256_castps_si256(m.hi), e.hi);
        sum += double(hsum16(e));
    }
    const __m256 inv = _mm256_set1_ps(float(1.0 / sum));
    for (int j = 0; j < n; j += 8) {
        const __m256i m = _mm256_castps_si256(lanes_before(j, n).lo);
        const __m128i h = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_maskload_ps(s + j, m), inv), _MM_FROUND_TO_NEAREST_INT);
        _mm256_maskstore_ps(w + j, m, _mm256_cvtph_ps(h));
    }
}

}  // namespace

const AttentionKernels* attention_kernels_avx2() {
    static const AttentionKernels k{key_scores, value_sums, softmax};
    static const bool ok = __builtin_cpu_supports("avx2") && runtime::cpu_has_f16c() &&
                           runtime::isa_limit() != runtime::IsaLimit::Scalar;
    return ok ? &k : nullptr;
}

}  // namespace smolinfer::model

#else

namespace smolinfer::model {
const AttentionKernels* attention_kernels_avx2() { return nullptr; }
}  // namespace smolinfer::model

#endif
