// Flash attention (model/flash_attention.h): the fast forms of both of
// llama.cpp's paths bit for bit against the scalar references, over random
// caches, head groups, token runs and positions around every tile boundary;
// and the references against cases worked out by hand. Cache entries past
// the attended positions hold NaN: they must not leak in. (The references
// against llama.cpp itself: the flash-attn golden files.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "model/flash_attention.h"
#include "quant/fp16.h"
#include "support/float_bits.h"

namespace smolinfer {
namespace {

using model::AttentionShape;
using model::KvCache;

using test::kHalfNaN;
using test::same_bits;

KvCache random_cache(int n_ctx, int kv_dim, int filled, std::mt19937& rng) {
    KvCache cache(1, n_ctx, kv_dim, KvCache::ValueLayout::Rows);
    std::normal_distribution<float> d(0.0f, 1.5f);
    for (int p = 0; p < n_ctx; ++p) {
        for (int i = 0; i < kv_dim; ++i) {
            cache.k(0, p)[i] = p < filled ? quant::f32_to_fp16(d(rng)) : kHalfNaN;
            cache.v_row(0, p)[i] = p < filled ? quant::f32_to_fp16(d(rng)) : kHalfNaN;
        }
    }
    return cache;
}

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
    std::normal_distribution<float> d(0.0f, 2.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}


struct Shape {
    int n_head, n_head_kv, head_dim;
};
const Shape kShapes[] = {{9, 3, 64}, {4, 4, 32}, {8, 2, 40}, {2, 1, 128}};

TEST(FlashAttention, ChunkPathEqualsTheReference) {
    std::mt19937 rng(7);
    for (const Shape& s : kShapes) {
        const AttentionShape shape{s.n_head, s.n_head_kv, s.head_dim};
        const int n_ctx = 300;
        const KvCache cache = random_cache(n_ctx, s.n_head_kv * s.head_dim, 260, rng);
        const int group = s.n_head / s.n_head_kv;
        std::vector<float> scratch(model::attention_scratch_floats(group, n_ctx));
        for (const int pos : {0, 1, 15, 16, 63, 64, 65, 200, 259}) {
            const std::vector<float> q = random_floats(size_t(group * s.head_dim), rng);
            for (int kv = 0; kv < s.n_head_kv; ++kv) {
                // All of the group's heads, and fewer (threads split a group).
                for (int count = 1; count <= group; ++count) {
                    const size_t m = size_t(count * s.head_dim);
                    std::vector<float> fast(m), ref(m);
                    model::flash_attend_heads(cache, 0, shape, kv * group, count, pos, q.data(), fast.data(), scratch.data());
                    model::flash_attend_heads_ref(cache, 0, shape, kv * group, count, pos, q.data(), ref.data(), scratch.data());
                    ASSERT_TRUE(same_bits(fast, ref))
                        << "head_dim " << s.head_dim << " pos " << pos << " kv head " << kv << " heads " << count;
                }
            }
        }
    }
}

TEST(FlashAttention, TiledPathEqualsTheReference) {
    std::mt19937 rng(11);
    for (const Shape& s : kShapes) {
        const AttentionShape shape{s.n_head, s.n_head_kv, s.head_dim};
        // The last run reaches position 263 + 63 = 326; cells from 330 on hold NaN.
        const int n_ctx = 360;
        const KvCache cache = random_cache(n_ctx, s.n_head_kv * s.head_dim, 330, rng);
        const int group = s.n_head / s.n_head_kv;
        const size_t q_stride = size_t(s.n_head * s.head_dim);
        std::vector<float> scratch(model::flash_tiled_scratch_floats(s.head_dim, group));
        // Runs of consecutive tokens (as a prompt's) starting around tile edges.
        for (const int first : {0, 5, 63, 64, 100, 127, 200, 263}) {
            for (const int n_tokens : {1, 3, model::kFlashTokensPerCall}) {
                std::vector<int> pos(static_cast<size_t>(n_tokens));
                for (int t = 0; t < n_tokens; ++t) pos[size_t(t)] = first + t;
                const std::vector<float> q = random_floats(size_t(n_tokens) * q_stride, rng);
                for (int kv = 0; kv < s.n_head_kv; ++kv) {
                    std::vector<float> fast(q.size(), 0.0f), ref(q.size(), 0.0f);
                    model::flash_attend_tiled(cache, 0, shape, kv, n_tokens, pos.data(), q.data(), fast.data(), q_stride,
                                              scratch.data());
                    model::flash_attend_tiled_ref(cache, 0, shape, kv, n_tokens, pos.data(), q.data(), ref.data(),
                                                  q_stride, scratch.data());
                    ASSERT_TRUE(same_bits(fast, ref))
                        << "head_dim " << s.head_dim << " first " << first << " tokens " << n_tokens << " kv " << kv;
                }
            }
        }
    }
}

// The plain SIMD128 build's fast arithmetic multiplies, then adds: not the
// same bits, but within the half accumulator's rounding of the reference.
TEST(FlashAttention, UnfusedArithmeticStaysNearTheReference) {
    std::mt19937 rng(5);
    const AttentionShape shape{9, 3, 64};
    const KvCache cache = random_cache(200, 192, 200, rng);
    const size_t q_stride = 9 * 64;
    std::vector<float> scratch(model::flash_tiled_scratch_floats(64, 3) + model::attention_scratch_floats(3, 200));
    const std::vector<float> q = random_floats(4 * q_stride, rng);
    const int pos[4] = {100, 101, 102, 199};
    std::vector<float> tiled(q.size()), tiled_ref(q.size()), chunk(192), chunk_ref(192);
    for (int kv = 0; kv < 3; ++kv) {
        model::flash_attend_tiled(cache, 0, shape, kv, 4, pos, q.data(), tiled.data(), q_stride, scratch.data(), false);
        model::flash_attend_tiled_ref(cache, 0, shape, kv, 4, pos, q.data(), tiled_ref.data(), q_stride, scratch.data());
    }
    model::flash_attend_heads(cache, 0, shape, 0, 3, 150, q.data(), chunk.data(), scratch.data(), false);
    model::flash_attend_heads_ref(cache, 0, shape, 0, 3, 150, q.data(), chunk_ref.data(), scratch.data());
    for (size_t i = 0; i < tiled.size(); ++i) EXPECT_NEAR(tiled[i], tiled_ref[i], 1e-4f) << i;
    for (size_t i = 0; i < chunk.size(); ++i) EXPECT_NEAR(chunk[i], chunk_ref[i], 2e-3f) << i;
}

// One position: its weight is exactly 1, so both paths return its value
// row (the chunk path's half accumulator holds halves exactly).
TEST(FlashAttention, OnePositionGivesItsValue) {
    std::mt19937 rng(3);
    const AttentionShape shape{2, 1, 64};
    const KvCache cache = random_cache(64, 64, 1, rng);
    const std::vector<float> q = random_floats(128, rng);
    std::vector<float> want(64);
    for (int i = 0; i < 64; ++i) want[size_t(i)] = quant::fp16_to_f32(cache.v_row(0, 0)[i]);
    std::vector<float> chunk(128), tiled(128), scratch(model::flash_tiled_scratch_floats(64, 2) + 4096);
    model::flash_attend_heads_ref(cache, 0, shape, 0, 2, 0, q.data(), chunk.data(), scratch.data());
    const int pos = 0;
    model::flash_attend_tiled_ref(cache, 0, shape, 0, 1, &pos, q.data(), tiled.data(), 128, scratch.data());
    for (int h = 0; h < 2; ++h) {
        for (int i = 0; i < 64; ++i) {
            EXPECT_EQ(chunk[size_t(h * 64 + i)], want[size_t(i)]) << h << " " << i;
            EXPECT_EQ(tiled[size_t(h * 64 + i)], want[size_t(i)]) << h << " " << i;
        }
    }
}

// Two positions whose keys are equal get weight 1/2 each: the output is
// the mean of their values. In the chunk path the second arrives with
// exp(0) = 1 on a half accumulator: half(v0 + v1), then / 2.
TEST(FlashAttention, EqualScoresAverageTheValues) {
    const AttentionShape shape{1, 1, 4};
    KvCache cache(1, 2, 4, KvCache::ValueLayout::Rows);
    const float v0[4] = {1.0f, -2.0f, 0.5f, 3.0f}, v1[4] = {3.0f, 2.0f, 0.25f, -1.0f};
    for (int i = 0; i < 4; ++i) {
        cache.k(0, 0)[i] = cache.k(0, 1)[i] = quant::f32_to_fp16(0.5f);
        cache.v_row(0, 0)[i] = quant::f32_to_fp16(v0[i]);
        cache.v_row(0, 1)[i] = quant::f32_to_fp16(v1[i]);
    }
    const float q[4] = {1.0f, 2.0f, -1.0f, 0.25f};
    std::vector<float> chunk(4), tiled(4), scratch(4096);
    model::flash_attend_heads_ref(cache, 0, shape, 0, 1, 1, q, chunk.data(), scratch.data());
    const int pos = 1;
    model::flash_attend_tiled_ref(cache, 0, shape, 0, 1, &pos, q, tiled.data(), 4, scratch.data());
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(chunk[size_t(i)], (v0[i] + v1[i]) / 2) << i;
        EXPECT_EQ(tiled[size_t(i)], (v0[i] + v1[i]) / 2) << i;
    }
}

// A key far ahead of the others takes (almost) all the weight, on both paths.
TEST(FlashAttention, ADominantKeyTakesTheWeight) {
    const AttentionShape shape{1, 1, 4};
    KvCache cache(1, 3, 4, KvCache::ValueLayout::Rows);
    for (int p = 0; p < 3; ++p) {
        for (int i = 0; i < 4; ++i) {
            cache.k(0, p)[i] = quant::f32_to_fp16(p == 1 ? 8.0f : 0.0f);
            cache.v_row(0, p)[i] = quant::f32_to_fp16(float(p * 10 + i));
        }
    }
    const float q[4] = {8.0f, 8.0f, 8.0f, 8.0f};  // scores 0, 256, 0; scaled by 1/2: 0, 128, 0
    std::vector<float> chunk(4), tiled(4), scratch(4096);
    model::flash_attend_heads_ref(cache, 0, shape, 0, 1, 2, q, chunk.data(), scratch.data());
    const int pos = 2;
    model::flash_attend_tiled_ref(cache, 0, shape, 0, 1, &pos, q, tiled.data(), 4, scratch.data());
    for (int i = 0; i < 4; ++i) {
        EXPECT_NEAR(chunk[size_t(i)], float(10 + i), 1e-6f) << i;
        EXPECT_NEAR(tiled[size_t(i)], float(10 + i), 1e-6f) << i;
    }
}

}  // namespace
}  // namespace smolinfer
