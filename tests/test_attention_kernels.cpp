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
#include "support/float_bits.h"

namespace smolinfer {
namespace {

using model::AttentionOrder;
using model::KvCache;

using test::kHalfNaN;
using test::same_bits;

// A random half, now and then a zero or a subnormal (the kernels convert
// those another way than normal numbers).
uint16_t random_half(std::mt19937& rng) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    switch (rng() % 64) {
        case 0: return 0;
        case 1: return 0x8000;
        case 2: return uint16_t(rng() % 0x400);           // positive subnormal
        case 3: return uint16_t(0x8000 | rng() % 0x400);  // negative subnormal
        default: return quant::f32_to_fp16(d(rng));
    }
}

// A cache whose first `filled` positions hold random halves, the rest NaN.
void fill(KvCache& cache, int n_layer, int filled, std::mt19937& rng) {
    for (int l = 0; l < n_layer; ++l) {
        for (int p = 0; p < cache.n_ctx(); ++p) {
            for (int i = 0; i < cache.kv_dim(); ++i) {
                const uint16_t k = p < filled ? random_half(rng) : kHalfNaN;
                const uint16_t v = p < filled ? random_half(rng) : kHalfNaN;
                cache.k(l, p)[i] = k;
                cache.set_v(l, p, i, v);
            }
        }
    }
}

// The SIMD kernel sets this build and CPU have (AVX-512 and AVX2 natively,
// SIMD128 in WebAssembly), by name.
std::vector<std::pair<std::string, const model::AttentionKernels*>> simd_kernels() {
    std::vector<std::pair<std::string, const model::AttentionKernels*>> sets;
    if (const model::AttentionKernels* k = model::attention_kernels_avx512()) sets.emplace_back("avx512", k);
    if (const model::AttentionKernels* k = model::attention_kernels_avx2()) sets.emplace_back("avx2", k);
    if (const model::AttentionKernels* k = model::attention_kernels_wasm()) sets.emplace_back("simd128", k);
    return sets;
}


TEST(AttentionKernels, SimdEqualsReferenceBitForBit) {
    const auto sets = simd_kernels();
    if (sets.empty()) GTEST_SKIP() << "no SIMD attention kernels on this CPU or build";
    for (const auto& [set_name, simd] : sets) {
        SCOPED_TRACE(set_name);
        const model::AttentionKernels& ref = model::attention_kernels_reference();
        std::mt19937 rng(3);
        for (const int head_dim : {64, 80, 128}) {
            const int n_ctx = 700;
            KvCache cache(2, n_ctx, 2 * head_dim);
            for (const int n : {1, 2, 15, 16, 17, 63, 64, 65, 255, 256, 257, 300, 513, 700}) {
                fill(cache, 2, n, rng);
                std::normal_distribution<float> d(0.0f, 1.0f);
                for (const int n_q : {1, 3, 5}) {
                    const size_t N = size_t(n), Q = size_t(n_q);
                    std::vector<float> q(Q * size_t(head_dim)), w(Q * N + 64);
                    for (auto& x : q) x = quant::fp16_to_f32(quant::f32_to_fp16(d(rng)));
                    for (auto& x : w) x = quant::fp16_to_f32(quant::f32_to_fp16(std::abs(d(rng)) / float(n)));
                    for (size_t j = Q * N; j < w.size(); ++j) w[j] = std::nanf("");  // never read as a weight
                    for (const AttentionOrder order : {AttentionOrder::Batch, AttentionOrder::Single}) {
                        SCOPED_TRACE("head_dim " + std::to_string(head_dim) + ", n " + std::to_string(n) + ", " +
                                     std::to_string(n_q) + " queries, " + (order == AttentionOrder::Batch ? "batch" : "single"));
                        for (const int dim0 : {0, head_dim}) {
                            std::vector<float> s_ref(Q * N), s_simd(Q * N);
                            ref.key_scores(cache.k(1, 0) + dim0, size_t(cache.kv_dim()), n, q.data(), n_q, head_dim, order,
                                           s_ref.data());
                            simd->key_scores(cache.k(1, 0) + dim0, size_t(cache.kv_dim()), n, q.data(), n_q, head_dim, order,
                                             s_simd.data());
                            EXPECT_TRUE(same_bits(s_ref, s_simd)) << "key scores";
                            std::vector<float> o_ref(Q * size_t(head_dim)), o_simd(Q * size_t(head_dim));
                            ref.value_sums(cache, 1, dim0, head_dim, n, w.data(), n_q, order, o_ref.data());
                            simd->value_sums(cache, 1, dim0, head_dim, n, w.data(), n_q, order, o_simd.data());
                            EXPECT_TRUE(same_bits(o_ref, o_simd)) << "value sums";
                            for (const float x : o_simd) ASSERT_FALSE(std::isnan(x));
                        }
                    }
                }
            }
        }
    }
}

// Scores whose every product is -0 (a zero query against negative keys,
// positive queries against keys of -0): the reference adds them to +0 and
// scores +0; a kernel that skips that first add must still give +0.
TEST(AttentionKernels, ScoresOfNegativeZeroProductsArePositiveZero) {
    const auto sets = simd_kernels();
    if (sets.empty()) GTEST_SKIP() << "no SIMD attention kernels on this CPU or build";
    const model::AttentionKernels& ref = model::attention_kernels_reference();
    for (const auto& [set_name, simd] : sets) {
        for (const int head_dim : {64, 128}) {
            for (const bool zero_query : {true, false}) {
                SCOPED_TRACE(set_name + ", head_dim " + std::to_string(head_dim) + (zero_query ? ", zero query" : ", -0 keys"));
                const int n = 37, n_q = 3;
                KvCache cache(1, n, head_dim);
                for (int p = 0; p < n; ++p) {
                    for (int i = 0; i < head_dim; ++i) cache.k(0, p)[i] = zero_query ? quant::f32_to_fp16(-0.5f - float(i % 7)) : uint16_t(0x8000);
                }
                std::vector<float> q(size_t(n_q * head_dim), zero_query ? 0.0f : 1.25f);
                for (const AttentionOrder order : {AttentionOrder::Batch, AttentionOrder::Single}) {
                    std::vector<float> s_ref(size_t(n_q * n)), s_simd(size_t(n_q * n));
                    ref.key_scores(cache.k(0, 0), size_t(head_dim), n, q.data(), n_q, head_dim, order, s_ref.data());
                    simd->key_scores(cache.k(0, 0), size_t(head_dim), n, q.data(), n_q, head_dim, order, s_simd.data());
                    EXPECT_TRUE(same_bits(s_ref, s_simd));
                    EXPECT_FALSE(std::signbit(s_ref[0])) << "the reference's score is +0";
                }
            }
        }
    }
}

// The softmax on scores spread from a few units (every weight a normal half)
// to hundreds (exponentials that underflow to subnormal floats and to zero,
// weights that are subnormal halves), and lengths around every chunk.
TEST(AttentionKernels, SoftmaxEqualsReferenceBitForBit) {
    const auto sets = simd_kernels();
    if (sets.empty()) GTEST_SKIP() << "no SIMD attention kernels on this CPU or build";
    for (const auto& [set_name, simd] : sets) {
        SCOPED_TRACE(set_name);
        const model::AttentionKernels& ref = model::attention_kernels_reference();
        std::mt19937 rng(7);
        for (const float spread : {1.0f, 10.0f, 60.0f, 300.0f}) {
            for (const int n : {1, 3, 4, 5, 15, 16, 17, 33, 100, 257}) {
                std::normal_distribution<float> d(0.0f, spread);
                std::vector<float> s(static_cast<size_t>(n));
                for (auto& x : s) x = d(rng);
                std::vector<float> s_ref = s, s_simd = s, w_ref(s.size()), w_simd(s.size());
                ref.softmax(s_ref.data(), n, 0.125f, w_ref.data());
                simd->softmax(s_simd.data(), n, 0.125f, w_simd.data());
                EXPECT_TRUE(same_bits(s_ref, s_simd)) << "exponentials, spread " << spread << ", n " << n;
                EXPECT_TRUE(same_bits(w_ref, w_simd)) << "weights, spread " << spread << ", n " << n;
            }
        }
    }
}

// Whole heads (scores, softmax, weights, value sums) with either kernel set,
// one head at a time or the three of a KV head together.
TEST(AttentionKernels, WholeHeadsAreTheSameWithEitherKernels) {
    const auto sets = simd_kernels();
    if (sets.empty()) GTEST_SKIP() << "no SIMD attention kernels on this CPU or build";
    for (const auto& [set_name, simd] : sets) {
        SCOPED_TRACE(set_name);
        std::mt19937 rng(5);
        const model::AttentionShape shape{9, 3, 64};
        KvCache cache(1, 400, 192);
        fill(cache, 1, 400, rng);
        std::normal_distribution<float> d(0.0f, 2.0f);
        std::vector<float> q(3 * 64), scratch(model::attention_scratch_floats(3, 400));
        for (auto& x : q) x = d(rng);
        for (const int pos : {0, 1, 16, 100, 399}) {
            for (const AttentionOrder order : {AttentionOrder::Batch, AttentionOrder::Single}) {
                std::vector<float> a(3 * 64), b(3 * 64), c(3 * 64);
                model::attend_heads(cache, 0, shape, 3, 3, pos, q.data(), a.data(), scratch.data(), order,
                                    model::attention_kernels_reference());
                model::attend_heads(cache, 0, shape, 3, 3, pos, q.data(), b.data(), scratch.data(), order, *simd);
                for (int h = 0; h < 3; ++h) {
                    model::attend_heads(cache, 0, shape, 3 + h, 1, pos, q.data() + 64 * h, c.data() + 64 * h, scratch.data(),
                                        order, *simd);
                }
                EXPECT_TRUE(same_bits(a, b)) << "pos " << pos;
                EXPECT_TRUE(same_bits(a, c)) << "pos " << pos << ", one head at a time";
            }
        }
    }
}

// A sliding window (Gemma): positions before it masked (-inf scores, so the
// sums group by cache cell as llama.cpp's), the same bits with either
// kernel set; a window of one position gives that position's value row.
TEST(AttentionKernels, SlidingWindowMasksWhatItHides) {
    std::vector<std::pair<std::string, const model::AttentionKernels*>> sets = simd_kernels();
    sets.emplace_back("reference", &model::attention_kernels_reference());
    for (const auto& [set_name, kernels] : sets) {
        SCOPED_TRACE(set_name);
        std::mt19937 rng(9);
        KvCache cache(1, 400, 192);
        fill(cache, 1, 400, rng);
        std::normal_distribution<float> d(0.0f, 2.0f);
        std::vector<float> q(3 * 64), scratch(model::attention_scratch_floats(3, 400));
        for (auto& x : q) x = d(rng);
        for (const int window : {1, 5, 64, 100}) {
            const model::AttentionShape shape{9, 3, 64, 0.0f, window};
            for (const int pos : {0, 3, 63, 64, 150, 399}) {
                for (const AttentionOrder order : {AttentionOrder::Batch, AttentionOrder::Single}) {
                    std::vector<float> a(3 * 64), b(3 * 64);
                    model::attend_heads(cache, 0, shape, 3, 3, pos, q.data(), a.data(), scratch.data(), order,
                                        model::attention_kernels_reference());
                    model::attend_heads(cache, 0, shape, 3, 3, pos, q.data(), b.data(), scratch.data(), order, *kernels);
                    EXPECT_TRUE(same_bits(a, b)) << "window " << window << " pos " << pos;
                    if (window == 1) {
                        for (int h = 0; h < 3; ++h) {
                            for (int i = 0; i < 64; ++i) {
                                ASSERT_EQ(b[size_t(64 * h + i)], quant::fp16_to_f32(cache.v(0, pos, 64 + i)))
                                    << "pos " << pos << " head " << h << " dim " << i;
                            }
                        }
                    }
                }
            }
        }
    }
}

// The same window over a sliding-window layer's ring of cells (KvCache):
// once past the ring's first lap the cells hold the newest lap first, as
// llama.cpp's SWA cache does, so the same terms are summed in another order.
TEST(AttentionKernels, RingOfAWindowAttendsAsTheWholeCache) {
    std::vector<std::pair<std::string, const model::AttentionKernels*>> sets = simd_kernels();
    sets.emplace_back("reference", &model::attention_kernels_reference());
    constexpr int kRing = 256, kWindow = 100, kCtx = 700;
    for (const auto& [set_name, kernels] : sets) {
        SCOPED_TRACE(set_name);
        std::mt19937 rng(21);
        KvCache all(1, kCtx, 192);
        fill(all, 1, kCtx, rng);
        std::normal_distribution<float> d(0.0f, 2.0f);
        std::vector<float> q(3 * 64), scratch(model::attention_scratch_floats(3, kCtx));
        for (auto& x : q) x = d(rng);
        const model::AttentionShape shape{9, 3, 64, 0.0f, kWindow};
        for (const int pos : {99, 255, 256, 300, 355, 600}) {
            KvCache ring(1, kCtx, 192, KvCache::ValueLayout::Transposed, kRing, {1}, kWindow);
            for (int p = 0; p <= pos; ++p) {
                std::copy(all.k(0, p), all.k(0, p) + 192, ring.k(0, ring.cell(0, p)));
                for (int i = 0; i < 192; ++i) ring.set_v(0, ring.cell(0, p), i, all.v(0, p, i));
            }
            for (const AttentionOrder order : {AttentionOrder::Batch, AttentionOrder::Single}) {
                std::vector<float> want(3 * 64), ref(3 * 64), got(3 * 64);
                model::attend_heads(all, 0, shape, 3, 3, pos, q.data(), want.data(), scratch.data(), order, *kernels);
                model::attend_heads(ring, 0, shape, 3, 3, pos, q.data(), ref.data(), scratch.data(), order,
                                    model::attention_kernels_reference());
                model::attend_heads(ring, 0, shape, 3, 3, pos, q.data(), got.data(), scratch.data(), order, *kernels);
                EXPECT_TRUE(same_bits(got, ref)) << "pos " << pos;
                if (pos < kRing) {
                    EXPECT_TRUE(same_bits(got, want)) << "pos " << pos;
                } else {
                    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-3f) << "pos " << pos;
                }
            }
        }
    }
}

}  // namespace
}  // namespace smolinfer
