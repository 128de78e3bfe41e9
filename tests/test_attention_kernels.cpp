// The SIMD attention sums against the scalar reference, bit for bit, for
// both of llama.cpp's orders, head sizes that do and do not fill whole
// vectors, and context lengths around every lane, chunk and block boundary.
// Cache entries past the attended positions hold NaN: they must not leak in.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "model/attention.h"
#include "quant/fp16.h"

namespace smolinfer {
namespace {

using model::AttentionOrder;
using model::KvCache;

constexpr uint16_t kNaN = 0x7E00;

// A cache whose first `filled` positions hold random halves, the rest NaN.
void fill(KvCache& cache, int n_layer, int filled, std::mt19937& rng) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (int l = 0; l < n_layer; ++l) {
        for (int p = 0; p < cache.n_ctx(); ++p) {
            for (int i = 0; i < cache.kv_dim(); ++i) {
                const uint16_t k = p < filled ? quant::f32_to_fp16(d(rng)) : kNaN;
                const uint16_t v = p < filled ? quant::f32_to_fp16(d(rng)) : kNaN;
                cache.k(l, p)[i] = k;
                cache.set_v(l, p, i, v);
            }
        }
    }
}

// The SIMD kernels this build and CPU have (AVX2 natively, SIMD128 in WebAssembly).
const model::AttentionKernels* simd_kernels() {
    if (const model::AttentionKernels* k = model::attention_kernels_avx2()) return k;
    return model::attention_kernels_wasm();
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AttentionKernels, SimdEqualsReferenceBitForBit) {
    const model::AttentionKernels* simd = simd_kernels();
    if (simd == nullptr) GTEST_SKIP() << "no SIMD attention kernels on this CPU or build";
    const model::AttentionKernels& ref = model::attention_kernels_reference();
    std::mt19937 rng(3);
    for (const int head_dim : {64, 80, 128}) {
        const int n_ctx = 700;
        KvCache cache(2, n_ctx, 2 * head_dim);
        for (const int n : {1, 2, 15, 16, 17, 63, 64, 65, 255, 256, 257, 300, 513, 700}) {
            fill(cache, 2, n, rng);
            std::normal_distribution<float> d(0.0f, 1.0f);
            std::vector<float> q(static_cast<size_t>(head_dim)), w(static_cast<size_t>(n) + 64);
            for (auto& x : q) x = quant::fp16_to_f32(quant::f32_to_fp16(d(rng)));
            for (auto& x : w) x = quant::fp16_to_f32(quant::f32_to_fp16(std::abs(d(rng)) / float(n)));
            for (size_t j = size_t(n); j < w.size(); ++j) w[j] = std::nanf("");  // never read as a weight
            for (const AttentionOrder order : {AttentionOrder::Batch, AttentionOrder::Single}) {
                SCOPED_TRACE("head_dim " + std::to_string(head_dim) + ", n " + std::to_string(n) + ", " +
                             (order == AttentionOrder::Batch ? "batch" : "single"));
                for (const int dim0 : {0, head_dim}) {
                    std::vector<float> s_ref(static_cast<size_t>(n)), s_simd(static_cast<size_t>(n));
                    ref.key_scores(cache.k(1, 0) + dim0, size_t(cache.kv_dim()), n, q.data(), head_dim, order, s_ref.data());
                    simd->key_scores(cache.k(1, 0) + dim0, size_t(cache.kv_dim()), n, q.data(), head_dim, order,
                                     s_simd.data());
                    EXPECT_TRUE(same_bits(s_ref, s_simd)) << "key scores";
                    std::vector<float> o_ref(static_cast<size_t>(head_dim)), o_simd(static_cast<size_t>(head_dim));
                    ref.value_sums(cache, 1, dim0, head_dim, n, w.data(), order, o_ref.data());
                    simd->value_sums(cache, 1, dim0, head_dim, n, w.data(), order, o_simd.data());
                    EXPECT_TRUE(same_bits(o_ref, o_simd)) << "value sums";
                    for (const float x : o_simd) ASSERT_FALSE(std::isnan(x));
                }
            }
        }
    }
}

// The whole head (scores, softmax, weights, value sums) with either kernel set.
TEST(AttentionKernels, WholeHeadIsTheSameWithEitherKernels) {
    const model::AttentionKernels* simd = simd_kernels();
    if (simd == nullptr) GTEST_SKIP() << "no SIMD attention kernels on this CPU or build";
    std::mt19937 rng(5);
    const model::AttentionShape shape{9, 3, 64};
    KvCache cache(1, 400, 192);
    fill(cache, 1, 400, rng);
    std::normal_distribution<float> d(0.0f, 2.0f);
    std::vector<float> q(64), scratch(2 * (400 + 64));
    for (auto& x : q) x = d(rng);
    for (const int pos : {0, 1, 16, 100, 399}) {
        for (const AttentionOrder order : {AttentionOrder::Batch, AttentionOrder::Single}) {
            std::vector<float> a(64), b(64);
            model::attend_head(cache, 0, shape, 4, pos, q.data(), a.data(), scratch.data(), order,
                               model::attention_kernels_reference());
            model::attend_head(cache, 0, shape, 4, pos, q.data(), b.data(), scratch.data(), order, *simd);
            EXPECT_TRUE(same_bits(a, b)) << "pos " << pos;
        }
    }
}

}  // namespace
}  // namespace smolinfer
