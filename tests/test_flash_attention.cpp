// Flash attention (model/flash_attention.h): the fast forms of both of
// llama.cpp's paths bit for bit against the scalar references, over random
// caches, head groups, token runs and positions around every tile boundary;
// and the references against cases worked out by hand. Cache entries past
// the attended positions hold NaN: they must not leak in. (The references
// against llama.cpp itself: the flash-attn golden files.)
#include <gtest/gtest.h>

#include <algorithm>
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
const Shape kShapes[] = {{9, 3, 64}, {4, 4, 32}, {8, 2, 40}, {2, 1, 128}, {3, 1, 256}, {4, 1, 256}};

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

// A token decoded alone, split as llama.cpp splits it between its threads
// once its cache view (cells in use, padded to 256) reaches 512 cells: the
// fast form equals the reference part for part, with and without a window
// and in a ring that has wrapped.
TEST(FlashAttention, SplitDecodeEqualsTheReference) {
    std::mt19937 rng(23);
    const Shape shapes[] = {{9, 3, 64}, {4, 1, 256}, {2, 1, 40}};
    constexpr int kCtx = 800;
    for (const Shape& s : shapes) {
        const int kv_dim = s.n_head_kv * s.head_dim;
        const int group = s.n_head / s.n_head_kv;
        std::vector<float> scratch(model::attention_scratch_floats(group, kCtx));
        const KvCache cache = random_cache(kCtx, kv_dim, 720, rng);
        for (const int window : {0, 100, 512}) {
            const AttentionShape shape{s.n_head, s.n_head_kv, s.head_dim, 0.0f, window};
            for (const int pos : {256, 300, 511, 512, 700}) {
                const std::vector<float> q = random_floats(size_t(group * s.head_dim), rng);
                for (const int splits : {2, 3, 4}) {
                    const size_t m = size_t(group * s.head_dim);
                    std::vector<float> fast(m), ref(m);
                    model::flash_attend_heads(cache, 0, shape, 0, group, pos, q.data(), fast.data(), scratch.data(), true,
                                              splits);
                    model::flash_attend_heads_ref(cache, 0, shape, 0, group, pos, q.data(), ref.data(), scratch.data(),
                                                  splits);
                    ASSERT_TRUE(same_bits(fast, ref)) << "head_dim " << s.head_dim << " window " << window << " pos "
                                                      << pos << " splits " << splits;
                }
            }
        }
    }
}

// The same split with its parts computed apart (as threads do, each part
// of every head of a KV head) and folded after: the reference's bits, also
// in a ring that has wrapped (a window's positions in two runs of cells).
TEST(FlashAttention, SplitDecodeInPartsEqualsTheReference) {
    std::mt19937 rng(31);
    const Shape shapes[] = {{9, 3, 64}, {4, 1, 256}, {2, 1, 40}};
    constexpr int kCtx = 800, kRing = 640;
    for (const Shape& s : shapes) {
        const int kv_dim = s.n_head_kv * s.head_dim;
        const int group = s.n_head / s.n_head_kv;
        std::vector<float> scratch(model::attention_scratch_floats(group, kCtx));
        const KvCache whole = random_cache(kCtx, kv_dim, 720, rng);
        KvCache ring(1, kCtx, kv_dim, KvCache::ValueLayout::Rows, kRing, {1}, 600);
        for (int c = 0; c < kRing; ++c) {
            std::copy_n(whole.k(0, c), kv_dim, ring.k(0, c));
            std::copy_n(whole.v_row(0, c), kv_dim, ring.v_row(0, c));
        }
        struct Case {
            const KvCache* cache;
            int window;
            std::vector<int> positions;
        };
        const Case cases[] = {{&whole, 0, {255, 256, 300, 511, 512, 700}},
                              {&whole, 100, {300, 700}},
                              {&ring, 600, {300, 639, 640, 700, 799}}};
        for (const Case& c : cases) {
            const AttentionShape shape{s.n_head, s.n_head_kv, s.head_dim, 0.0f, c.window};
            for (const int pos : c.positions) {
                const std::vector<float> q = random_floats(size_t(s.n_head * s.head_dim), rng);
                for (const int splits : {2, 3, 4}) {
                    const int parts = model::flash_walk_parts(*c.cache, 0, shape, pos, splits);
                    ASSERT_EQ(parts > 1, pos >= 256) << "pos " << pos;
                    const size_t stride = size_t(group) * size_t(s.head_dim + 2);
                    for (int kv = 0; kv < s.n_head_kv; ++kv) {
                        const float* qk = q.data() + size_t(kv * group * s.head_dim);
                        std::vector<float> partials(size_t(parts) * stride, NAN);
                        for (int p = parts - 1; p >= 0; --p) {
                            model::flash_attend_part(*c.cache, 0, shape, kv * group, group, pos, qk, splits, p,
                                                     &partials[size_t(p) * stride], scratch.data());
                        }
                        const size_t m = size_t(group * s.head_dim);
                        std::vector<float> folded(m), ref(m);
                        model::flash_fold_parts(partials.data(), stride, parts, group, s.head_dim, folded.data());
                        model::flash_attend_heads_ref(*c.cache, 0, shape, kv * group, group, pos, qk, ref.data(),
                                                      scratch.data(), splits);
                        ASSERT_TRUE(same_bits(folded, ref)) << "head_dim " << s.head_dim << " window " << c.window
                                                            << " ring " << c.cache->ring(0) << " pos " << pos
                                                            << " splits " << splits << " kv head " << kv;
                    }
                }
            }
        }
    }
}

// The split changes only the last bits (each part's own half accumulator),
// never which positions count: within a few half steps of one walk. Below
// a 512-cell view (positions up to 255) llama.cpp does not split at all.
TEST(FlashAttention, SplitDecodeStaysNearOneWalkAndStartsAt256Positions) {
    std::mt19937 rng(29);
    const AttentionShape shape{4, 1, 64};
    std::vector<float> scratch(model::attention_scratch_floats(4, 600));
    const KvCache cache = random_cache(600, 64, 600, rng);
    const std::vector<float> q = random_floats(4 * 64, rng);
    std::vector<float> one(4 * 64), split(4 * 64);
    model::flash_attend_heads_ref(cache, 0, shape, 0, 4, 255, q.data(), one.data(), scratch.data(), 1);
    model::flash_attend_heads_ref(cache, 0, shape, 0, 4, 255, q.data(), split.data(), scratch.data(), 4);
    EXPECT_TRUE(same_bits(one, split));
    bool differs = false;
    for (const int pos : {256, 400, 599}) {
        model::flash_attend_heads_ref(cache, 0, shape, 0, 4, pos, q.data(), one.data(), scratch.data(), 1);
        model::flash_attend_heads_ref(cache, 0, shape, 0, 4, pos, q.data(), split.data(), scratch.data(), 2);
        for (size_t i = 0; i < one.size(); ++i) {
            ASSERT_NEAR(split[i], one[i], 4e-3f * (1.0f + std::abs(one[i]))) << "pos " << pos << " value " << i;
        }
        differs = differs || !same_bits(one, split);
    }
    EXPECT_TRUE(differs) << "two parts gave one walk's bits at every position: the split did not happen";
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

// A sliding window (Gemma): the chunk path walks only the positions it
// shows, so its result is the one of a cache holding just those positions
// (moved to the front); the tiled path masks whole tiles and the start of
// the first one it shows, and its fast form stays equal to the reference.
TEST(FlashAttention, SlidingWindowSeesOnlyItsPositions) {
    std::mt19937 rng(13);
    const Shape shapes[] = {{9, 3, 64}, {4, 1, 256}};
    for (const Shape& s : shapes) {
        const int kv_dim = s.n_head_kv * s.head_dim;
        const int group = s.n_head / s.n_head_kv;
        const int n_ctx = 360;
        const KvCache cache = random_cache(n_ctx, kv_dim, 330, rng);
        const size_t q_stride = size_t(s.n_head * s.head_dim);
        std::vector<float> scratch(model::attention_scratch_floats(group, n_ctx) +
                                   model::flash_tiled_scratch_floats(s.head_dim, group));
        for (const int window : {1, 7, 64, 100}) {
            const AttentionShape shape{s.n_head, s.n_head_kv, s.head_dim, 0.0f, window};
            const AttentionShape all{s.n_head, s.n_head_kv, s.head_dim};
            for (const int pos : {0, 6, 64, 130, 263, 326}) {
                const int lo = model::visible_runs(shape, 0, pos).begin[0];
                KvCache moved(1, n_ctx, kv_dim, KvCache::ValueLayout::Rows);
                for (int p = lo; p <= pos; ++p) {
                    std::copy(cache.k(0, p), cache.k(0, p) + kv_dim, moved.k(0, p - lo));
                    std::copy(cache.v_row(0, p), cache.v_row(0, p) + kv_dim, moved.v_row(0, p - lo));
                }
                const std::vector<float> q = random_floats(q_stride, rng);
                const size_t m = size_t(group * s.head_dim);
                std::vector<float> ref(m), fast(m), want(m);
                model::flash_attend_heads_ref(cache, 0, shape, 0, group, pos, q.data(), ref.data(), scratch.data());
                model::flash_attend_heads(cache, 0, shape, 0, group, pos, q.data(), fast.data(), scratch.data());
                model::flash_attend_heads_ref(moved, 0, all, 0, group, pos - lo, q.data(), want.data(), scratch.data());
                ASSERT_TRUE(same_bits(ref, want)) << "chunk, window " << window << " pos " << pos;
                ASSERT_TRUE(same_bits(fast, ref)) << "chunk, window " << window << " pos " << pos;

                std::vector<float> tiled(q_stride), tiled_ref(q_stride), tiled_moved(q_stride);
                model::flash_attend_tiled(cache, 0, shape, 0, 1, &pos, q.data(), tiled.data(), q_stride, scratch.data());
                model::flash_attend_tiled_ref(cache, 0, shape, 0, 1, &pos, q.data(), tiled_ref.data(), q_stride,
                                              scratch.data());
                const int moved_pos = pos - lo;
                model::flash_attend_tiled_ref(moved, 0, all, 0, 1, &moved_pos, q.data(), tiled_moved.data(), q_stride,
                                              scratch.data());
                ASSERT_TRUE(same_bits(tiled, tiled_ref)) << "tiled, window " << window << " pos " << pos;
                for (size_t i = 0; i < m; ++i) {
                    // The tiles group the same positions another way: the last bits may differ.
                    ASSERT_NEAR(tiled_ref[i], tiled_moved[i], 1e-5f + 1e-5f * std::abs(tiled_moved[i]))
                        << "tiled, window " << window << " pos " << pos << " value " << i;
                }
            }
        }
        // A run of tokens whose windows start in different tiles.
        const AttentionShape shape{s.n_head, s.n_head_kv, s.head_dim, 0.0f, 100};
        const int n_tokens = model::kFlashTokensPerCall;
        std::vector<int> pos(static_cast<size_t>(n_tokens));
        for (int t = 0; t < n_tokens; ++t) pos[size_t(t)] = 200 + t;
        const std::vector<float> q = random_floats(size_t(n_tokens) * q_stride, rng);
        std::vector<float> fast(q.size()), ref(q.size());
        for (int kv = 0; kv < s.n_head_kv; ++kv) {
            model::flash_attend_tiled(cache, 0, shape, kv, n_tokens, pos.data(), q.data(), fast.data(), q_stride, scratch.data());
            model::flash_attend_tiled_ref(cache, 0, shape, kv, n_tokens, pos.data(), q.data(), ref.data(), q_stride,
                                          scratch.data());
        }
        ASSERT_TRUE(same_bits(fast, ref)) << "a run of tokens, head_dim " << s.head_dim;
    }
}

// A sliding-window layer's ring (KvCache): position p in cell p % ring. Up
// to its first lap the cells are the positions and every path gives the
// same bits as a cache of all positions; past it the cells hold the newest
// lap first, in llama.cpp's order, so sums of the same terms group another
// way (the chunk path's half accumulator rounds them to half steps). The
// fast forms stay bit-identical to the references.
TEST(FlashAttention, RingOfAWindowAttendsAsTheWholeCache) {
    std::mt19937 rng(17);
    const Shape shapes[] = {{9, 3, 64}, {4, 1, 256}};
    constexpr int kRing = 64, kWindow = 40, kCtx = 200;
    for (const Shape& s : shapes) {
        const int kv_dim = s.n_head_kv * s.head_dim;
        const int group = s.n_head / s.n_head_kv;
        const size_t q_stride = size_t(s.n_head * s.head_dim);
        const AttentionShape shape{s.n_head, s.n_head_kv, s.head_dim, 0.0f, kWindow};
        std::vector<float> scratch(model::attention_scratch_floats(group, kCtx) +
                                   model::flash_tiled_scratch_floats(s.head_dim, group));
        const KvCache all = random_cache(kCtx, kv_dim, kCtx, rng);
        for (const int pos : {30, 63, 64, 100, 127, 150, 199}) {
            // The ring as it is once positions 0..pos have been written.
            KvCache ring(1, kCtx, kv_dim, KvCache::ValueLayout::Rows, kRing, {1}, kWindow);
            for (int p = 0; p <= pos; ++p) {
                std::copy(all.k(0, p), all.k(0, p) + kv_dim, ring.k(0, ring.cell(0, p)));
                std::copy(all.v_row(0, p), all.v_row(0, p) + kv_dim, ring.v_row(0, ring.cell(0, p)));
            }
            const std::vector<float> q = random_floats(q_stride, rng);
            const size_t m = size_t(group * s.head_dim);
            std::vector<float> want(m), ref(m), fast(m);
            model::flash_attend_heads_ref(all, 0, shape, 0, group, pos, q.data(), want.data(), scratch.data());
            model::flash_attend_heads_ref(ring, 0, shape, 0, group, pos, q.data(), ref.data(), scratch.data());
            model::flash_attend_heads(ring, 0, shape, 0, group, pos, q.data(), fast.data(), scratch.data());
            ASSERT_TRUE(same_bits(fast, ref)) << "chunk, pos " << pos;
            if (pos < kRing) {
                ASSERT_TRUE(same_bits(ref, want)) << "chunk, pos " << pos;
            } else {
                // A few steps of the half accumulator (2^-10 of the value) apart at most.
                for (size_t i = 0; i < m; ++i) {
                    ASSERT_NEAR(ref[i], want[i], 4e-3f * (1.0f + std::abs(want[i]))) << "chunk, pos " << pos << " value " << i;
                }
            }
            std::vector<float> t_want(q_stride), t_ref(q_stride), t_fast(q_stride);
            model::flash_attend_tiled_ref(all, 0, shape, 0, 1, &pos, q.data(), t_want.data(), q_stride, scratch.data());
            model::flash_attend_tiled_ref(ring, 0, shape, 0, 1, &pos, q.data(), t_ref.data(), q_stride, scratch.data());
            model::flash_attend_tiled(ring, 0, shape, 0, 1, &pos, q.data(), t_fast.data(), q_stride, scratch.data());
            ASSERT_TRUE(same_bits(t_fast, t_ref)) << "tiled, pos " << pos;
            for (size_t i = 0; i < m; ++i) {
                ASSERT_NEAR(t_ref[i], t_want[i], 1e-5f + 1e-5f * std::abs(t_want[i])) << "tiled, pos " << pos << " value " << i;
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
