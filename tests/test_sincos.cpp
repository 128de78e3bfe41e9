// RoPE's sin/cos against the C library, where the C library is the glibc
// whose results llama.cpp uses (2.29-2.40: glibc 2.41 moved to correctly
// rounded sinf/cosf). Every float from 0 to 2^18 (RoPE angles are
// position x frequency, never negative), in one pass of about 5 seconds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

#include "model/sincos.h"

#include "support/float_bits.h"

namespace smolinfer {
namespace {

using test::bits;

TEST(SinCos, HandValues) {
    float s, c;
    model::sincos_glibc(0.0f, &s, &c);
    EXPECT_EQ(s, 0.0f);
    EXPECT_EQ(c, 1.0f);
    model::sincos_glibc(1.0f, &s, &c);
    EXPECT_NEAR(s, 0.8414709848078965, 1e-7);
    EXPECT_NEAR(c, 0.5403023058681398, 1e-7);
    model::sincos_glibc(1000.0f, &s, &c);  // the 4/pi table path
    EXPECT_NEAR(s, 0.8268795405320025, 1e-7);
    EXPECT_NEAR(c, 0.5623790762907029, 1e-7);
}

TEST(SinCos, EveryRopeAngleMatchesTheCLibrary) {
#if defined(__GLIBC__)
    int major = 0, minor = 0;
    std::sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor);
    if (major != 2 || minor < 29 || minor > 40) GTEST_SKIP() << "glibc " << gnu_get_libc_version() << " computes sinf differently";
    long mismatches = 0;
    for (uint32_t u = 0; u <= bits(262144.0f); ++u) {
        float y;
        std::memcpy(&y, &u, 4);
        float s, c;
        model::sincos_glibc(y, &s, &c);
        if (bits(s) != bits(std::sin(y)) || bits(c) != bits(std::cos(y))) {
            if (mismatches++ < 5) ADD_FAILURE() << "x = " << y << ": " << s << ", " << c;
        }
    }
    EXPECT_EQ(mismatches, 0);
#else
    GTEST_SKIP() << "not glibc";
#endif
}

}  // namespace
}  // namespace smolinfer
