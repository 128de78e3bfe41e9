// The sampler (src/sample/sampler.h): greedy choice, seeding, the top-k /
// top-p / min-p filters, the repetition penalty, parameter validation, and
// the distribution of plain temperature-1 sampling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "sample/sampler.h"
#include "smolinfer/error.h"
#include "support/logits.h"

namespace smolinfer::sample {
namespace {

using test::logs;

// Plain sampling: every filter off.
SamplingParams plain(float temperature = 1.0f, uint64_t seed = 1) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.seed = seed;
    return p;
}


// Counts how often each id is drawn in n samples.
std::vector<int> histogram(Sampler& s, const std::vector<float>& logits, int n) {
    std::vector<int> h(logits.size(), 0);
    for (int i = 0; i < n; ++i) {
        const int32_t id = s.sample(logits);
        EXPECT_GE(id, 0);
        EXPECT_LT(size_t(id), logits.size());
        if (id >= 0 && size_t(id) < logits.size()) h[size_t(id)]++;
    }
    return h;
}

// ---------------------------------------------------------------- greedy

TEST(SamplerGreedy, PicksTheArgmax) {
    Sampler s(plain(0.0f), 5);
    EXPECT_EQ(s.sample(std::vector<float>{0.1f, -3.0f, 2.5f, 2.4f, 0.0f}), 2);
    EXPECT_EQ(s.sample(std::vector<float>{-5.0f, -1.0f, -2.0f, -9.0f, -1.5f}), 1);
    EXPECT_EQ(s.sample(std::vector<float>{7.0f, 1.0f, 1.0f, 1.0f, 1.0f}), 0);
    EXPECT_EQ(s.sample(std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f, 7.0f}), 4);
}

TEST(SamplerGreedy, TiesGoToTheLowestId) {
    Sampler s(plain(0.0f), 5);
    EXPECT_EQ(s.sample(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f, 3.0f}), 1);
    EXPECT_EQ(s.sample(std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f, 0.0f}), 0);
}

TEST(SamplerGreedy, IgnoresTheFiltersAndTheSeed) {
    // Greedy is the argmax whatever top-k/top-p/min-p/seed say.
    SamplingParams p;  // defaults: top_k 40, top_p 0.95, min_p 0.05
    p.temperature = 0.0f;
    for (uint64_t seed : {0ull, 1ull, 99ull}) {
        p.seed = seed;
        Sampler s(p, 4);
        for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(std::vector<float>{0.0f, 0.1f, 0.3f, 0.2f}), 2);
    }
}

// ---------------------------------------------------------------- seeding

std::vector<int32_t> draws(uint64_t seed, int n) {
    Sampler s(plain(1.0f, seed), 16);
    const std::vector<float> flat(16, 0.0f);  // uniform over 16 ids
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) out.push_back(s.sample(flat));
    return out;
}

TEST(SamplerSeed, SameSeedSameSequence) {
    EXPECT_EQ(draws(42, 2000), draws(42, 2000));
    EXPECT_EQ(draws(0, 500), draws(0, 500));
}

TEST(SamplerSeed, DifferentSeedsDiffer) {
    // 200 draws from 16 equally likely ids: equal by chance with probability 16^-200.
    EXPECT_NE(draws(1, 200), draws(2, 200));
    EXPECT_NE(draws(0, 200), draws(1, 200));
    // And a seed's draws are not constant.
    const auto d = draws(7, 200);
    EXPECT_GT(std::set<int32_t>(d.begin(), d.end()).size(), 8u);
}

// ---------------------------------------------------------------- top-k

TEST(SamplerTopK, NeverOutsideTheKLargest) {
    std::mt19937 rng(123);
    std::normal_distribution<float> normal(0.0f, 1.5f);
    for (uint64_t seed = 0; seed < 150; ++seed) {
        const int n = 5 + int(seed % 60);
        std::vector<float> logits(static_cast<size_t>(n));
        for (float& x : logits) x = normal(rng);
        const int k = 1 + int(seed % 7);
        // The k largest (logits from a continuous distribution: no ties).
        std::vector<int> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
        const std::set<int> allowed(order.begin(), order.begin() + std::min(k, n));

        SamplingParams p = plain(1.0f, seed);
        p.top_k = k;
        Sampler s(p, n);
        std::set<int> seen;
        for (int i = 0; i < 60; ++i) {
            const int32_t id = s.sample(logits);
            ASSERT_TRUE(allowed.count(id)) << "seed " << seed << " k " << k << " drew " << id;
            seen.insert(id);
        }
        if (k == 1) {
            EXPECT_EQ(seen.size(), 1u);
        }
    }
}

TEST(SamplerTopK, KLargerThanTheVocabularyKeepsEverything) {
    SamplingParams p = plain(1.0f, 5);
    p.top_k = 100;
    Sampler s(p, 3);
    const auto h = histogram(s, std::vector<float>{0.0f, 0.0f, 0.0f}, 3000);
    for (const int c : h) EXPECT_GT(c, 800);  // each ~1000
}

// ---------------------------------------------------------------- top-p

TEST(SamplerTopP, KeepsTheSmallestPrefixReachingP) {
    // Probabilities 0.5, 0.3, 0.2. With p = 0.6: 0.5 < 0.6, 0.5 + 0.3 >= 0.6,
    // so {0, 1} remain, renormalized to 0.625 / 0.375.
    const auto logits = logs({0.5, 0.3, 0.2});
    SamplingParams p = plain(1.0f, 11);
    p.top_p = 0.6f;
    Sampler s(p, 3);
    const int n = 20000;
    const auto h = histogram(s, logits, n);
    EXPECT_EQ(h[2], 0);
    EXPECT_NEAR(double(h[0]) / n, 0.625, 0.02);
    EXPECT_NEAR(double(h[1]) / n, 0.375, 0.02);
}

TEST(SamplerTopP, SmallPKeepsOnlyTheTopAndLargePKeepsAll) {
    const auto logits = logs({0.2, 0.5, 0.3});  // order does not matter
    {
        SamplingParams p = plain(1.0f, 3);
        p.top_p = 0.4f;  // 0.5 alone reaches 0.4
        Sampler s(p, 3);
        const auto h = histogram(s, logits, 2000);
        EXPECT_EQ(h[1], 2000);
    }
    {
        SamplingParams p = plain(1.0f, 3);
        p.top_p = 0.9f;  // 0.5 + 0.3 = 0.8 < 0.9: all three needed
        Sampler s(p, 3);
        const auto h = histogram(s, logits, 20000);
        EXPECT_NEAR(h[0] / 20000.0, 0.2, 0.02);
        EXPECT_NEAR(h[1] / 20000.0, 0.5, 0.02);
        EXPECT_NEAR(h[2] / 20000.0, 0.3, 0.02);
    }
}

// ---------------------------------------------------------------- min-p

TEST(SamplerMinP, DropsTokensBelowMinPTimesTheTop) {
    // Probabilities 0.5, 0.3, 0.15, 0.05; min_p 0.35 -> threshold 0.175:
    // {0, 1} remain (0.625 / 0.375 after renormalizing).
    const auto logits = logs({0.5, 0.3, 0.15, 0.05});
    SamplingParams p = plain(1.0f, 17);
    p.min_p = 0.35f;
    Sampler s(p, 4);
    const int n = 20000;
    const auto h = histogram(s, logits, n);
    EXPECT_EQ(h[2], 0);
    EXPECT_EQ(h[3], 0);
    EXPECT_NEAR(double(h[0]) / n, 0.625, 0.02);

    // min_p 0.25 -> threshold 0.125: 0.15 survives, 0.05 does not.
    p.min_p = 0.25f;
    Sampler s2(p, 4);
    const auto h2 = histogram(s2, logits, n);
    EXPECT_GT(h2[2], 0);
    EXPECT_EQ(h2[3], 0);
    EXPECT_NEAR(double(h2[2]) / n, 0.15 / 0.95, 0.02);
}

// ---------------------------------------------------------------- repeat penalty

int greedy_after(const SamplingParams& base, const std::vector<int32_t>& history, const std::vector<float>& logits) {
    SamplingParams p = base;
    p.temperature = 0.0f;
    Sampler s(p, int(logits.size()));
    for (const int32_t t : history) s.accept(t);
    return s.sample(logits);
}

TEST(SamplerRepeatPenalty, DividesPositiveLogitsOnce) {
    SamplingParams p = plain(0.0f);
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 64;
    // 2.0 / 2 = 1.0 < 1.5: the choice flips from 0 to 1.
    EXPECT_EQ(greedy_after(p, {}, {2.0f, 1.5f, -1.0f}), 0);
    EXPECT_EQ(greedy_after(p, {0}, {2.0f, 1.5f, -1.0f}), 1);
    // Once, however often the token repeats: 2.0 / 2 = 1.0 > 0.9, while
    // twice (0.5) or three times (0.25) would fall below 0.9.
    EXPECT_EQ(greedy_after(p, {0, 0, 0}, {2.0f, 0.9f, -1.0f}), 0);
    EXPECT_EQ(greedy_after(p, {0, 2, 0, 2, 0}, {2.0f, 0.9f, -1.0f}), 0);
}

TEST(SamplerRepeatPenalty, MultipliesNegativeLogitsOnce) {
    SamplingParams p = plain(0.0f);
    p.repeat_penalty = 2.0f;
    // -1.0 * 2 = -2.0 < -1.5: flips from 0 to 1.
    EXPECT_EQ(greedy_after(p, {}, {-1.0f, -1.5f}), 0);
    EXPECT_EQ(greedy_after(p, {0}, {-1.0f, -1.5f}), 1);
    // Once: -2.0 > -2.5, twice would be -4.0.
    EXPECT_EQ(greedy_after(p, {0, 0}, {-1.0f, -2.5f}), 0);
    // Dividing a negative logit would raise it: -1.2 / 2 = -0.6 > -1.0 would
    // pick 1; multiplying gives -2.4 and keeps 0.
    EXPECT_EQ(greedy_after(p, {1}, {-1.0f, -1.2f}), 0);
}

TEST(SamplerRepeatPenalty, PenaltyBelowOneFavoursRepeats) {
    SamplingParams p = plain(0.0f);
    p.repeat_penalty = 0.5f;  // 1.5 / 0.5 = 3.0 > 2.0
    EXPECT_EQ(greedy_after(p, {1}, {2.0f, 1.5f}), 1);
}

TEST(SamplerRepeatPenalty, OnlyTheLastNTokensCount) {
    SamplingParams p = plain(0.0f);
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 2;
    const std::vector<float> l = {2.0f, 1.5f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    EXPECT_EQ(greedy_after(p, {0, 7}, l), 1);     // 0 is within the last 2
    EXPECT_EQ(greedy_after(p, {0, 7, 8}, l), 0);  // 0 has left the window
    // Across several wraps of the ring: window {6, 0} at the end.
    EXPECT_EQ(greedy_after(p, {0, 1, 2, 3, 4, 5, 6, 0}, l), 1);
    EXPECT_EQ(greedy_after(p, {0, 1, 2, 3, 4, 5, 0, 6, 7}, l), 0);

    // Window of 3 after wrapping: {2, 3, 4} penalized, 0 and 1 not.
    p.repeat_last_n = 3;
    const std::vector<int32_t> h = {0, 1, 2, 3, 4};
    EXPECT_EQ(greedy_after(p, h, {1.0f, 0.0f, 1.9f, 0.0f, 0.0f}), 0);  // 2: 1.9 -> 0.95 < 1.0
    EXPECT_EQ(greedy_after(p, h, {1.0f, 0.0f, 0.0f, 0.0f, 1.9f}), 0);  // 4: 0.95
    EXPECT_EQ(greedy_after(p, h, {0.9f, 1.0f, 0.0f, 0.0f, 0.0f}), 1);  // 1 not penalized (else 0.5 < 0.9)
    EXPECT_EQ(greedy_after(p, h, {1.0f, 0.9f, 0.0f, 0.0f, 0.0f}), 0);  // 0 not penalized (else 0.5 < 0.9)

    p.repeat_last_n = 0;  // off
    EXPECT_EQ(greedy_after(p, {0}, {2.0f, 1.5f}), 0);
}

TEST(SamplerRepeatPenalty, AppliesBeforeTheFilters) {
    // With top_k = 1 at temperature > 0 the draw is deterministic: the single
    // survivor must already reflect the penalty.
    SamplingParams p = plain(1.0f, 9);
    p.top_k = 1;
    p.repeat_penalty = 2.0f;
    Sampler s(p, 3);
    s.accept(0);
    for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.5f, -1.0f}), 1);
}

// ---------------------------------------------------------------- validation

TEST(SamplingParamsValidate, AcceptsTheDefaultsAndBoundaries) {
    EXPECT_NO_THROW(SamplingParams{}.validate());
    SamplingParams p = plain(0.0f);
    p.top_p = 1.0f;
    p.min_p = 1.0f;
    p.repeat_last_n = 0;
    EXPECT_NO_THROW(p.validate());
}

TEST(SamplingParamsValidate, RejectsEachBadParameter) {
    auto with = [](auto change) {
        SamplingParams p;
        change(p);
        return p;
    };
    EXPECT_THROW(with([](SamplingParams& p) { p.temperature = -0.1f; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.temperature = NAN; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.top_p = 0.0f; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.top_p = 1.01f; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.top_p = -0.5f; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.min_p = 1.5f; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.min_p = -0.1f; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.repeat_penalty = 0.0f; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.repeat_penalty = -1.0f; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.top_k = -1; }).validate(), Error);
    EXPECT_THROW(with([](SamplingParams& p) { p.repeat_last_n = -1; }).validate(), Error);
    // The sampler validates too.
    EXPECT_THROW(Sampler(with([](SamplingParams& p) { p.top_p = 0.0f; }), 4), Error);
}

// ---------------------------------------------------------------- distribution

TEST(SamplerDistribution, TemperatureOneMatchesSoftmax) {
    const std::vector<float> logits = {1.0f, 0.0f, -1.0f, 2.0f, 0.5f, -0.5f};
    double z = 0;
    for (const float l : logits) z += std::exp(double(l));
    const int n = 120000;
    Sampler s(plain(1.0f, 2024), int(logits.size()));
    const auto h = histogram(s, logits, n);
    // Pearson's chi-square with 5 degrees of freedom; 20.5 is its 99.9% point.
    double chi2 = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        const double expected = n * std::exp(double(logits[i])) / z;
        chi2 += (h[i] - expected) * (h[i] - expected) / expected;
    }
    EXPECT_LT(chi2, 20.5) << ::testing::PrintToString(h);
}

TEST(SamplerDistribution, TemperatureSharpensAndFlattens) {
    // At temperature T the probabilities are softmax(l / T). For l = {1, 0}:
    // T = 0.5 -> e^2 / (e^2 + 1) = 0.8808; T = 2 -> e^0.5 / (e^0.5 + 1) = 0.6225.
    const std::vector<float> logits = {1.0f, 0.0f};
    const int n = 40000;
    Sampler cold(plain(0.5f, 5), 2);
    Sampler hot(plain(2.0f, 5), 2);
    EXPECT_NEAR(histogram(cold, logits, n)[0] / double(n), 0.8808, 0.01);
    EXPECT_NEAR(histogram(hot, logits, n)[0] / double(n), 0.6225, 0.01);
}

}  // namespace
}  // namespace smolinfer::sample
