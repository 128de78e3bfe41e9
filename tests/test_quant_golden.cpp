// Block formats against the PyPI gguf package's numpy dequantization
// (tests/golden/quant/*.json, written by scripts/gen-quant-golden.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "quant/reference.h"
#include "support/paths.h"
#include "support/float_bits.h"

namespace smolinfer {
namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
    std::vector<uint8_t> out(hex.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    return out;
}

using test::bits;

class QuantGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantGolden, DequantizationIsBitIdenticalToGguf) {
    const auto g = test::load_golden("quant/" + GetParam() + ".json");
    const auto traits = quant::type_traits(g["type_id"].get<uint32_t>());
    ASSERT_TRUE(traits.has_value());
    EXPECT_EQ(traits->name, g["type"].get<std::string>());
    EXPECT_EQ(traits->block_elems, g["block_elems"].get<size_t>());
    EXPECT_EQ(traits->block_bytes, g["block_bytes"].get<size_t>());

    const auto data = from_hex(g["hex"]);
    const auto want = g["values"].get<std::vector<float>>();
    ASSERT_EQ(data.size(), g["n_blocks"].get<size_t>() * traits->block_bytes);
    std::vector<float> got(want.size());
    quant::ref::dequantize_row(traits->type, data.data(), got.data(), got.size());
    int mismatches = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        // Bitwise, so -0.0 and +0.0 count as different; NaN would too.
        if (bits(got[i]) != bits(want[i]) && mismatches++ < 5) {
            ADD_FAILURE() << GetParam() << " value " << i << ": ours " << got[i] << ", gguf " << want[i];
        }
    }
    EXPECT_EQ(mismatches, 0);
}

// The cross-check number in each golden file is an exact float64 dot of the
// golden values with golden activations; ours must agree to float precision.
TEST_P(QuantGolden, DotOfDequantizedValuesMatchesFloat64Reference) {
    const auto g = test::load_golden("quant/" + GetParam() + ".json");
    const auto traits = quant::type_traits(g["type_id"].get<uint32_t>());
    const auto data = from_hex(g["hex"]);
    const auto x = g["dot_x"].get<std::vector<float>>();
    std::vector<float> w(x.size());
    quant::ref::dequantize_row(traits->type, data.data(), w.data(), w.size());
    double dot = 0, mag = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        dot += double(w[i]) * double(x[i]);
        mag += std::abs(double(w[i]) * double(x[i]));
    }
    EXPECT_NEAR(dot, g["dot_ref"].get<double>(), 1e-12 * mag + 1e-12);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantGolden,
                         ::testing::Values("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K",
                                           "Q4_K", "Q5_K", "Q6_K"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace smolinfer
