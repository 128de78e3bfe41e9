// The fused multiply-add emulation used where there is no FMA instruction
// (plain WebAssembly), against hand-computed results and the hardware
// instruction; and exact_fma itself, in whichever form the build uses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "quant/exact_fma.h"

#include "support/float_bits.h"

namespace smolinfer {
namespace {

using test::bits;
using test::from_bits;


// a * b = 1 + 2^-11 + 2^-24 lies exactly halfway between two floats. A tiny
// c decides the rounding; summing in double and then rounding to float
// would lose it (the double sum rounds back to the midpoint, which then
// rounds to even).
TEST(ExactFma, MidpointProductsWithATinyAddend) {
    const float a = 1.0f + 0x1p-12f;
    // By hand: a positive c rounds up, a negative one down. (Not against
    // std::fma here: compiled to WebAssembly it is a software routine, and
    // Emscripten's gets the negative cases wrong.)
    for (const float c : {0x1p-80f, 0x1p-60f}) EXPECT_EQ(quant::fma_via_double(a, a, c), 1.0f + 0x1p-11f + 0x1p-23f) << c;
    for (const float c : {-0x1p-80f, -0x1p-60f}) EXPECT_EQ(quant::fma_via_double(a, a, c), 1.0f + 0x1p-11f) << c;
}

// Infinities and NaN come out as the instruction gives them (the error
// term of the emulation would be NaN).
TEST(ExactFma, InfinitiesAndNan) {
    EXPECT_EQ(quant::fma_via_double(-INFINITY, 1.5f, 3.0f), -INFINITY);
    EXPECT_EQ(quant::fma_via_double(2.0f, 3.0f, INFINITY), INFINITY);
    EXPECT_EQ(quant::fma_via_double(3.0e38f, 10.0f, 0.0f), INFINITY);  // overflow
    EXPECT_TRUE(std::isnan(quant::fma_via_double(INFINITY, 0.0f, 1.0f)));
    EXPECT_TRUE(std::isnan(quant::fma_via_double(INFINITY, 1.0f, -INFINITY)));
    EXPECT_TRUE(std::isnan(quant::fma_via_double(NAN, 1.0f, 1.0f)));
}

// The form this build uses: the instruction, the emulation, or relaxed SIMD's
// madd, which is exact only where the CPU fuses it (true on every machine the
// tests run on; the browser worker checks the same before it says "exact").
TEST(ExactFma, ExactFmaIsFused) {
    const float one_up = 1.0f + 0x1p-23f, one_down = 1.0f - 0x1p-23f;
    EXPECT_EQ(quant::exact_fma(one_up, one_down, -1.0f), -0x1p-46f);
    const float a = 1.0f + 0x1p-12f;
    EXPECT_EQ(quant::exact_fma(a, a, -0x1p-60f), 1.0f + 0x1p-11f);
}

TEST(ExactFma, RandomOperandsMatchTheInstruction) {
    std::mt19937_64 rng(1);
    std::uniform_int_distribution<uint32_t> d;
    long mismatches = 0;
    for (int i = 0; i < 5000000; ++i) {
        // Exponents kept away from overflow; signs, mantissas and cancellation free.
        const uint32_t ea = 100 + d(rng) % 56, eb = 100 + d(rng) % 56, ec = 80 + d(rng) % 96;
        const float a = from_bits((d(rng) & 0x807fffffu) | ea << 23);
        const float b = from_bits((d(rng) & 0x807fffffu) | eb << 23);
        const float c = from_bits((d(rng) & 0x807fffffu) | ec << 23);
        if (bits(quant::fma_via_double(a, b, c)) != bits(std::fma(a, b, c)) && mismatches++ < 5) {
            ADD_FAILURE() << a << " * " << b << " + " << c;
        }
    }
    EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace smolinfer
