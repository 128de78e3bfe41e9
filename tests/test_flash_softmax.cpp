// The chunk path's online softmax: the AVX-512 form (16 positions at once,
// libm's expf reproduced in 16 lanes) against the reference one position
// at a time with libm's own expf, bit for bit: the weights, the factors,
// and the final maximum, sum and last step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "model/flash_softmax.h"
#include "runtime/machine.h"
#include "support/float_bits.h"

namespace smolinfer {
namespace {

using model::OnlineSoftmax;
using test::bits;

// Steps both forms over `scores` and compares everything they write.
void expect_same_steps(const std::vector<float>& scores, float scale, const char* what) {
    const model::SoftmaxStepsFn wide = model::softmax_steps_avx512();
    ASSERT_NE(wide, nullptr);
    const int n = int(scores.size());
    std::vector<float> ref_w = scores, wide_w = scores, ref_r(scores.size(), -7.0f), wide_r(scores.size(), -7.0f);
    const OnlineSoftmax a = model::softmax_steps_ref(ref_w.data(), ref_r.data(), scale, n);
    const OnlineSoftmax b = wide(wide_w.data(), wide_r.data(), scale, n);
    for (int j = 0; j < n; ++j) {
        ASSERT_EQ(bits(ref_w[size_t(j)]), bits(wide_w[size_t(j)])) << what << ": weight " << j << " of " << n
                                                                  << " (score " << scores[size_t(j)] << ")";
        ASSERT_EQ(bits(ref_r[size_t(j)]), bits(wide_r[size_t(j)])) << what << ": factor " << j << " of " << n;
    }
    EXPECT_EQ(bits(a.max), bits(b.max)) << what;
    EXPECT_EQ(bits(a.sum), bits(b.sum)) << what;
    EXPECT_EQ(bits(a.rescale), bits(b.rescale)) << what;
    EXPECT_EQ(bits(a.weight), bits(b.weight)) << what;
}

class FlashSoftmax : public ::testing::Test {
protected:
    void SetUp() override {
        if (!runtime::cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    }
};

// On a CPU with AVX-512 and glibc's expf the fast form must be there: a
// null here would silently put libm's call per position back.
TEST_F(FlashSoftmax, TheWideFormIsThereWithGlibc) {
    EXPECT_NE(model::softmax_steps_avx512(), nullptr);
}

// A first score of 0 then -x: every later weight is expf(-x). A sweep of
// [-104, 0] (every 61st float, and the input where an unfused r = z - k
// would round differently) checks the 16-lane expf against libm's.
TEST_F(FlashSoftmax, ExponentsEqualLibmOverTheirWholeRange) {
    uint32_t last;
    const float lo = -104.0f;
    std::memcpy(&last, &lo, sizeof last);
    std::vector<float> part = {0.0f, -0x1.f8cbb2p+5f};
    for (uint32_t b = 0x80000001u; b <= last; b += 61) {
        float x;
        std::memcpy(&x, &b, sizeof x);
        part.push_back(x);
        if (part.size() == (1u << 20)) {
            expect_same_steps(part, 1.0f, "sweep");
            part.assign(1, 0.0f);
        }
    }
    // Past the underflow and near the special paths' edge, then a tail of 5.
    for (float x : {-104.5f, -150.0f, -1e30f, -88.0f, -87.99f}) part.push_back(x);
    part.resize(part.size() / 16 * 16 + 5, -1.5f);
    expect_same_steps(part, 1.0f, "sweep");
}

// Maxima that grow inside a vector, at its first and last lane, in ties,
// and over a whole run; scaled scores; every length from 0 to 70.
TEST_F(FlashSoftmax, MaximaThatGrowAnywhereAndEveryLength) {
    std::mt19937 rng(32);
    std::normal_distribution<float> typical(0.0f, 4.0f);
    for (int n = 0; n <= 70; ++n) {
        const size_t count = static_cast<size_t>(n);
        std::vector<float> rising(count), noisy(count), ties(count);
        for (int j = 0; j < n; ++j) {
            rising[size_t(j)] = float(j) * 0.37f - 3.0f;
            noisy[size_t(j)] = typical(rng) + float(j % 17 == 5 ? 9 : 0);
            ties[size_t(j)] = float((j * 7) % 5);
        }
        expect_same_steps(rising, 0.125f, "rising");
        expect_same_steps(noisy, 0.125f, "noisy");
        expect_same_steps(ties, 1.0f, "ties");
    }
    std::vector<float> long_run(4096);
    for (float& s : long_run) s = typical(rng) * 3.0f;
    expect_same_steps(long_run, 0.088388f, "4096 positions");
}

// Zeros of both signs, infinities and NaN go where the reference sends
// them (a NaN never becomes the maximum; -inf first makes a NaN weight).
TEST_F(FlashSoftmax, SpecialScores) {
    const std::vector<std::vector<float>> cases = {
        {-0.0f, 0.0f, -0.0f, 0.0f},
        {NAN, 1.0f, NAN, 3.0f, -2.0f},
        {1.0f, INFINITY, 2.0f, INFINITY, -INFINITY},
        {-INFINITY, -INFINITY, 0.5f},
        {2.0f, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 4.0f},
        {3e38f, -3e38f, 1.0f},
    };
    for (const auto& c : cases) expect_same_steps(c, 1.0f, "special");
}

}  // namespace
}  // namespace smolinfer
