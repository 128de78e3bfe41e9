// Sliding-window layers (Gemma 3) keep a ring of the window plus 512 cells,
// as llama.cpp's SWA cache does, instead of the whole context: the same
// tokens as a cache of every position (SessionOptions::swa_full, llama.cpp's
// --swa-full) far past the ring's first lap, in less memory, and a cached
// prompt is reused only where the ring still holds what its window needs.
// On the random-weight gemma3 family model (a window of 16 on four layers of
// six; tests/support/random_model.cpp), whose golden file checks the window
// itself against llama.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "smolinfer/batch.h"
#include "smolinfer/session.h"
#include "support/generate_options.h"
#include "support/paths.h"
#include "support/random_model.h"

namespace smolinfer {
namespace {

constexpr int kContext = 1536;  // the ring: 16 + 512 padded to 256 = 768 cells
constexpr int kRing = 768;

std::unique_ptr<Session> open_gemma3(bool swa_full, FlashAttention fa) {
    const auto golden = test::load_golden("families/gemma3.json");
    SessionOptions o;
    o.context = kContext;
    o.swa_full = swa_full;
    o.flash_attention = fa;
    o.threads = 1;  // a tiny model: thread hand-offs would cost more than they save
    return Session::open_file(test::random_model_file("gemma3", golden["model_sha256"]), o);
}

using test::greedy;

// Deterministic token ids of the model's vocabulary (a linear congruential
// sequence), skipping the special tokens below 3: prompts that reach far
// past the ring without generating their way there.
std::vector<TokenId> ids(size_t n, uint32_t seed) {
    std::vector<TokenId> v;
    for (size_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        v.push_back(TokenId(3 + (seed >> 8) % 31000));
    }
    return v;
}

// The largest difference of the logits of every position, the tokens read
// 64 at a time (the prompt path) by both sessions.
float largest_logit_difference(Session& a, Session& b, const std::vector<TokenId>& tokens) {
    a.reset();
    b.reset();
    float worst = 0;
    for (size_t at = 0; at < tokens.size(); at += 64) {
        const std::span<const TokenId> part(tokens.data() + at, std::min<size_t>(64, tokens.size() - at));
        const auto la = a.evaluate(part, true);
        const std::vector<float> copy(la.begin(), la.end());
        const auto lb = b.evaluate(part, true);
        for (size_t i = 0; i < copy.size(); ++i) worst = std::max(worst, std::abs(copy[i] - lb[i]));
    }
    return worst;
}

class SlidingWindow : public ::testing::TestWithParam<FlashAttention> {};

TEST_P(SlidingWindow, RingGivesTheWholeCachesResultsInLessMemory) {
    const auto ring = open_gemma3(false, GetParam());
    const auto full = open_gemma3(true, GetParam());
    // Four layers of six keep 768 cells instead of 1536.
    const size_t per_cell = 2 * 96 * 2;  // K and V of one KV head of 96, halves
    EXPECT_EQ(full->memory_bytes() - ring->memory_bytes(), 4 * size_t(kContext - kRing) * per_cell);

    // The logits of every position of a prompt that laps the ring once and a
    // half agree up to the order of the window's terms: the ring sums them
    // by cell, the whole cache by position. Flash attention's half-precision
    // accumulator turns that into whole half steps, which six random layers
    // grow to a few tenths of a logit; a wrong window is off by whole units.
    const float bar = GetParam() == FlashAttention::On ? 0.5f : 1e-3f;
    EXPECT_LT(largest_logit_difference(*ring, *full, ids(1200, 1)), bar);

    // Greedy tokens decoded past the ring's first lap.
    const std::vector<TokenId> prompt = ids(740, 2);
    EXPECT_EQ(ring->generate(prompt, greedy(80), {}).tokens, full->generate(prompt, greedy(80), {}).tokens);
}

TEST_P(SlidingWindow, ACachedPromptIsReusedWhereTheRingStillHoldsItsWindow) {
    const auto s = open_gemma3(false, GetParam());
    const auto fresh = open_gemma3(false, GetParam());
    const std::vector<TokenId> prompt = ids(100, 3);
    std::vector<TokenId> longer = prompt;
    const std::vector<TokenId> more = ids(800, 4);
    longer.insert(longer.end(), more.begin(), more.end());
    const auto first = s->generate(longer, greedy(4), {});

    // A conversation going on: the earlier prompt is kept up to its last
    // chunk (the answer's cells, decoded one at a time, are read again).
    std::vector<TokenId> next = longer;
    next.insert(next.end(), first.tokens.begin(), first.tokens.end());
    next.push_back(5);
    const auto going_on = s->generate(next, greedy(4), {});
    EXPECT_GE(size_t(going_on.reused_tokens), longer.size() - size_t(s->batch()));
    EXPECT_LE(size_t(going_on.reused_tokens), longer.size());
    EXPECT_EQ(going_on.tokens, fresh->generate(next, greedy(4), {}).tokens);

    // A prompt sharing only its start with that one: the ring has lapped
    // the start's window, so it is read again, and gives what a fresh
    // session gives.
    const auto again = s->generate(prompt, greedy(20), {});
    EXPECT_EQ(again.reused_tokens, 0);
    EXPECT_EQ(again.tokens, fresh->generate(prompt, greedy(20), {}).tokens);
}

// The server's batches keep the ring too, and give each sequence what a
// session alone gives.
TEST_P(SlidingWindow, BatchedSequencesPastTheRingEqualOneSession) {
    const auto s = open_gemma3(false, GetParam());
    const auto alone = open_gemma3(false, GetParam());
    const std::vector<TokenId> p1 = ids(760, 5), p2 = ids(700, 6);
    BatchGenerator batch(*s, 2);
    const int id1 = batch.add(p1, greedy(40));
    batch.add(p2, greedy(100));
    std::vector<TokenId> got1, got2;
    while (batch.running() > 0) {
        for (const BatchEvent& e : batch.step()) {
            if (e.token < 0) continue;
            (e.sequence == id1 ? got1 : got2).push_back(e.token);
        }
    }
    EXPECT_EQ(got1, alone->generate(p1, greedy(40), {}).tokens);
    EXPECT_EQ(got2, alone->generate(p2, greedy(100), {}).tokens);
}

INSTANTIATE_TEST_SUITE_P(Attention, SlidingWindow, ::testing::Values(FlashAttention::Off, FlashAttention::On),
                         [](const auto& info) { return info.param == FlashAttention::On ? "flash_attn" : "standard"; });

}  // namespace
}  // namespace smolinfer
