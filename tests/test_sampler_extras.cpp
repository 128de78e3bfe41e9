// The sampler's OpenAI-style extras (src/sample/sampler.h): logit bias,
// frequency and presence penalties (llama.cpp's penalties sampler: after
// the bias, together with the repetition penalty, over the last
// repeat_last_n tokens) and log-probabilities, on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sample/sampler.h"
#include "smolinfer/error.h"
#include "support/logits.h"

namespace smolinfer::sample {
namespace {

using test::logs;

SamplingParams greedy() {
    SamplingParams p;
    p.temperature = 0.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    return p;
}

int32_t pick(const SamplingParams& p, const std::vector<int32_t>& history, const std::vector<float>& logits) {
    Sampler s(p, int(logits.size()));
    for (const int32_t t : history) s.accept(t);
    return s.sample(logits);
}

// ---------------------------------------------------------------- logit bias

TEST(SamplerLogitBias, AddsToTheLogit) {
    SamplingParams p = greedy();
    const std::vector<float> l = {1.0f, 2.0f, 3.0f};
    EXPECT_EQ(pick(p, {}, l), 2);
    p.logit_bias = {{0, 2.5f}};  // 3.5 > 3
    EXPECT_EQ(pick(p, {}, l), 0);
    p.logit_bias = {{0, 1.5f}};  // 2.5 < 3
    EXPECT_EQ(pick(p, {}, l), 2);
    p.logit_bias = {{2, -1.5f}};  // 1.5 < 2
    EXPECT_EQ(pick(p, {}, l), 1);
    // Listed twice: both apply (-0.6 twice: 1.8 < 2; once would be 2.4).
    p.logit_bias = {{2, -0.6f}, {2, -0.6f}};
    EXPECT_EQ(pick(p, {}, l), 1);
}

TEST(SamplerLogitBias, MinusInfinityBansEvenWhenSampling) {
    SamplingParams p = greedy();
    p.temperature = 1.0f;
    p.seed = 3;
    p.logit_bias = {{1, -INFINITY}};
    Sampler s(p, 3);
    for (int i = 0; i < 2000; ++i) EXPECT_NE(s.sample(std::vector<float>{0.0f, 5.0f, 0.0f}), 1);
}

TEST(SamplerLogitBias, AppliesBeforeThePenalties) {
    // Token 0: 1.0 + bias -2 = -1.0, then the repetition penalty 2 multiplies:
    // -2.0 < -1.8, so token 1 wins. Penalty first would give 0.5 - 2 = -1.5 > -1.8.
    SamplingParams p = greedy();
    p.repeat_penalty = 2.0f;
    p.logit_bias = {{0, -2.0f}};
    EXPECT_EQ(pick(p, {0}, {1.0f, -1.8f}), 1);
}

TEST(SamplerLogitBias, BadBiasesThrowNamingTheToken) {
    SamplingParams p = greedy();
    p.logit_bias = {{3, 1.0f}};
    try {
        Sampler s(p, 3);
        FAIL() << "accepted token 3 of a 3-token vocabulary";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("logit bias token id 3"), std::string::npos) << e.what();
    }
    p.logit_bias = {{-1, 1.0f}};
    EXPECT_THROW(Sampler(p, 3), Error);
    p.logit_bias = {{1, NAN}};
    EXPECT_THROW(p.validate(), Error);
    p.logit_bias = {{1, INFINITY}};
    EXPECT_THROW(p.validate(), Error);
    p.logit_bias = {{1, -INFINITY}};
    EXPECT_NO_THROW(p.validate());
}

// ---------------------------------------------------------------- frequency / presence

TEST(SamplerFrequencyPenalty, SubtractsPerOccurrence) {
    SamplingParams p = greedy();
    const std::vector<float> l = {2.0f, 1.5f, 1.0f};
    p.frequency_penalty = 0.2f;  // three times: 2.0 - 0.6 = 1.4 < 1.5
    EXPECT_EQ(pick(p, {0, 0, 0}, l), 1);
    EXPECT_EQ(pick(p, {0}, l), 0);  // once: 1.8
    p.frequency_penalty = 0.1f;  // 1.7 > 1.5
    EXPECT_EQ(pick(p, {0, 0, 0}, l), 0);
    // Negative: a bonus. 1.5 + 3 x 0.2 = 2.1 > 2.0.
    p.frequency_penalty = -0.2f;
    EXPECT_EQ(pick(p, {1, 1, 1}, l), 1);
}

TEST(SamplerFrequencyPenalty, CountsOnlyTheWindow) {
    // Five 0s in the history but a window of 3: 2.0 - 3 x 0.2 = 1.4 > 1.35
    // (all five would give 1.0).
    SamplingParams p = greedy();
    p.frequency_penalty = 0.2f;
    p.repeat_last_n = 3;
    EXPECT_EQ(pick(p, {0, 0, 0, 0, 0}, {2.0f, 1.35f}), 0);
    p.repeat_last_n = 5;
    EXPECT_EQ(pick(p, {0, 0, 0, 0, 0}, {2.0f, 1.35f}), 1);
    // After the ring wraps: window {1, 0, 1}: 2.0 - 0.2 = 1.8 > 1.7 - 0.4.
    // Counting the whole history would give 2.0 - 0.8 = 1.2 < 1.3.
    p.repeat_last_n = 3;
    EXPECT_EQ(pick(p, {0, 0, 0, 1, 0, 1}, {2.0f, 1.7f}), 0);
    p.repeat_last_n = 6;
    EXPECT_EQ(pick(p, {0, 0, 0, 1, 0, 1}, {2.0f, 1.7f}), 1);
}

TEST(SamplerPresencePenalty, SubtractsOnceWhateverTheCount) {
    SamplingParams p = greedy();
    p.presence_penalty = 0.6f;  // 1.4 < 1.5
    EXPECT_EQ(pick(p, {0}, {2.0f, 1.5f}), 1);
    EXPECT_EQ(pick(p, {0, 0, 0, 0}, {2.0f, 1.3f}), 0);  // still 1.4, not 2.0 - 2.4
    p.presence_penalty = 0.4f;  // 1.6 > 1.5
    EXPECT_EQ(pick(p, {0}, {2.0f, 1.5f}), 0);
}

TEST(SamplerPenalties, RepeatThenFrequencyAndPresence) {
    // llama.cpp: l = l > 0 ? l / r : l * r; then l -= count x f + p.
    // 2.0 / 2 - 0.1 = 0.9 < 0.93; the other order, (2.0 - 0.1) / 2 = 0.95, would keep 0.
    SamplingParams p = greedy();
    p.repeat_penalty = 2.0f;
    p.presence_penalty = 0.1f;
    EXPECT_EQ(pick(p, {0}, {2.0f, 0.93f}), 1);
    // Two occurrences, frequency 0.05 and presence 0.1: 1.0 - 0.1 - 0.1 = 0.8 vs 0.85 / 0.75.
    p.frequency_penalty = 0.05f;
    EXPECT_EQ(pick(p, {0, 0}, {2.0f, 0.85f}), 1);
    EXPECT_EQ(pick(p, {0, 0}, {2.0f, 0.75f}), 0);
}

TEST(SamplerPenalties, NonFiniteFrequencyOrPresenceIsRejected) {
    SamplingParams p = greedy();
    p.frequency_penalty = NAN;
    EXPECT_THROW(p.validate(), Error);
    p.frequency_penalty = 0.0f;
    p.presence_penalty = INFINITY;
    EXPECT_THROW(Sampler(p, 4), Error);
}

// ---------------------------------------------------------------- log-probabilities


TEST(SamplerLogprobs, GreedyIsTheFullSoftmax) {
    // Probabilities 0.2, 0.5, 0.3 given as logits shifted by +7 (softmax ignores the shift).
    Sampler s(greedy(), 3);
    TokenLogprobs lp;
    EXPECT_EQ(s.sample(logs({0.2, 0.5, 0.3}, 7.0), {}, 2, lp), 1);
    EXPECT_EQ(lp.token, 1);
    EXPECT_NEAR(lp.logprob, std::log(0.5), 1e-5);
    ASSERT_EQ(lp.top.size(), 2u);
    EXPECT_EQ(lp.top[0].token, 1);
    EXPECT_NEAR(lp.top[0].logprob, std::log(0.5), 1e-5);
    EXPECT_EQ(lp.top[1].token, 2);
    EXPECT_NEAR(lp.top[1].logprob, std::log(0.3), 1e-5);
    // More alternatives asked for than there are tokens: all of them.
    EXPECT_EQ(s.sample(logs({0.2, 0.5, 0.3}), {}, 20, lp), 1);
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top[2].token, 0);
    EXPECT_NEAR(lp.top[2].logprob, std::log(0.2), 1e-5);
    // None asked for.
    s.sample(logs({0.2, 0.5, 0.3}), {}, 0, lp);
    EXPECT_TRUE(lp.top.empty());
    EXPECT_NEAR(lp.logprob, std::log(0.5), 1e-5);
}

TEST(SamplerLogprobs, GreedySeesTheBiasAndPenalties) {
    // Logits {0, ln 3}: bias +ln 3 on token 0 makes them equal: 0.5 each, ties to id 0.
    SamplingParams p = greedy();
    p.logit_bias = {{0, float(std::log(3.0))}, {2, -INFINITY}};
    Sampler s(p, 3);
    TokenLogprobs lp;
    EXPECT_EQ(s.sample(std::vector<float>{0.0f, float(std::log(3.0)), 1.0f}, {}, 3, lp), 0);
    EXPECT_NEAR(lp.logprob, std::log(0.5), 1e-5);
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top[0].token, 0);
    EXPECT_EQ(lp.top[1].token, 1);
    EXPECT_NEAR(lp.top[1].logprob, std::log(0.5), 1e-5);
    EXPECT_EQ(lp.top[2].token, 2);
    EXPECT_EQ(lp.top[2].logprob, -INFINITY);  // banned
}

TEST(SamplerLogprobs, SampledIsTheFilteredTemperedDistribution) {
    // Probabilities 0.5, 0.3, 0.2; top-k 2 keeps {0, 1}; at temperature 0.5
    // their weights are 0.5^2 and 0.3^2: 0.25 / 0.34 = 0.7353, 0.09 / 0.34 = 0.2647.
    SamplingParams p = greedy();
    p.temperature = 0.5f;
    p.top_k = 2;
    p.seed = 11;
    Sampler s(p, 3);
    int seen[2] = {0, 0};
    for (int i = 0; i < 200; ++i) {
        TokenLogprobs lp;
        const int32_t id = s.sample(logs({0.5, 0.3, 0.2}), {}, 5, lp);
        ASSERT_TRUE(id == 0 || id == 1);
        seen[id]++;
        EXPECT_EQ(lp.token, id);
        EXPECT_NEAR(lp.logprob, std::log(id == 0 ? 0.25 / 0.34 : 0.09 / 0.34), 1e-5);
        ASSERT_EQ(lp.top.size(), 2u);  // token 2 was filtered out: not an alternative
        EXPECT_EQ(lp.top[0].token, 0);
        EXPECT_NEAR(lp.top[0].logprob, std::log(0.25 / 0.34), 1e-5);
        EXPECT_EQ(lp.top[1].token, 1);
        EXPECT_NEAR(lp.top[1].logprob, std::log(0.09 / 0.34), 1e-5);
    }
    EXPECT_GT(seen[1], 20);  // ~53 expected
}

TEST(SamplerLogprobs, AskingDoesNotChangeTheDraw) {
    SamplingParams p = greedy();
    p.temperature = 1.3f;
    p.top_k = 5;
    p.top_p = 0.9f;
    p.seed = 77;
    Sampler a(p, 8), b(p, 8);
    const std::vector<float> l = {0.1f, 1.0f, -0.5f, 0.7f, 0.7f, 2.0f, -3.0f, 0.0f};
    for (int i = 0; i < 300; ++i) {
        TokenLogprobs lp;
        ASSERT_EQ(a.sample(l), b.sample(l, {}, 3, lp));
    }
}

}  // namespace
}  // namespace smolinfer::sample
