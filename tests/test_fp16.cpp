// Half and bfloat16 conversions (src/quant/fp16.h): the portable versions
// agree with the hardware ones (F16C when built for x86-64-v3), round to
// nearest even, and match hand-worked values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "quant/fp16.h"

namespace smolinfer::quant {
namespace {

bool half_is_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7F80u) == 0x7F80u && (b & 0x007Fu) != 0; }

TEST(Fp16, AllHalvesWidenIdenticallyAndRoundTrip) {
    int nans = 0;
    for (uint32_t i = 0; i < 65536; ++i) {
        const auto h = uint16_t(i);
        const float soft = fp16_to_f32_soft(h);
        const float hard = fp16_to_f32(h);
        if (half_is_nan(h)) {
            ++nans;
            ASSERT_TRUE(std::isnan(soft)) << std::hex << h;
            ASSERT_TRUE(std::isnan(hard)) << std::hex << h;
            // The sign survives either way.
            ASSERT_EQ(std::signbit(soft), bool(h & 0x8000)) << std::hex << h;
            // And narrowing gives a NaN back.
            ASSERT_TRUE(half_is_nan(f32_to_fp16(hard))) << std::hex << h;
            ASSERT_TRUE(half_is_nan(f32_to_fp16_soft(soft))) << std::hex << h;
            continue;
        }
        ASSERT_EQ(f32_to_bits(soft), f32_to_bits(hard)) << std::hex << h;
        ASSERT_EQ(f32_to_fp16(hard), h) << std::hex << h;
        ASSERT_EQ(f32_to_fp16_soft(soft), h) << std::hex << h;
    }
    EXPECT_EQ(nans, 2 * 1023);
}

TEST(Fp16, WideningHandCases) {
    EXPECT_EQ(fp16_to_f32_soft(0x3C00), 1.0f);
    EXPECT_EQ(fp16_to_f32_soft(0xC000), -2.0f);
    EXPECT_EQ(fp16_to_f32_soft(0x7BFF), 65504.0f);
    EXPECT_EQ(fp16_to_f32_soft(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
    EXPECT_EQ(fp16_to_f32_soft(0x03FF), 1023.0f * std::ldexp(1.0f, -24));  // largest subnormal
    EXPECT_EQ(fp16_to_f32_soft(0x0400), std::ldexp(1.0f, -14));  // smallest normal
    EXPECT_EQ(fp16_to_f32_soft(0x3555), 0.333251953125f);  // 1.0101010101b * 2^-2
    EXPECT_EQ(fp16_to_f32_soft(0x7C00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(fp16_to_f32_soft(0xFC00), -std::numeric_limits<float>::infinity());
    EXPECT_EQ(f32_to_bits(fp16_to_f32_soft(0x8000)), 0x80000000u);  // -0
}

TEST(Fp16, NarrowingHandCases) {
    for (auto f : {f32_to_fp16_soft, f32_to_fp16}) {
        EXPECT_EQ(f(1.0f), 0x3C00);
        EXPECT_EQ(f(-2.0f), 0xC000);
        EXPECT_EQ(f(0.5f), 0x3800);
        EXPECT_EQ(f(65504.0f), 0x7BFF);
        EXPECT_EQ(f(std::ldexp(1.0f, -24)), 0x0001);
        EXPECT_EQ(f(std::ldexp(1.0f, -14)), 0x0400);
        EXPECT_EQ(f(0.0f), 0x0000);
        EXPECT_EQ(f(-0.0f), 0x8000);
        // 65520 is halfway between 65504 (0x7BFF, odd) and 65536 (not a
        // finite half): ties-to-even rounds up, to infinity.
        EXPECT_EQ(f(65520.0f), 0x7C00);
        EXPECT_EQ(f(-65520.0f), 0xFC00);
        EXPECT_EQ(f(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
        EXPECT_EQ(f(1e6f), 0x7C00);
        EXPECT_EQ(f(std::numeric_limits<float>::max()), 0x7C00);
        EXPECT_EQ(f(std::numeric_limits<float>::infinity()), 0x7C00);
        EXPECT_EQ(f(-std::numeric_limits<float>::infinity()), 0xFC00);
        EXPECT_TRUE(half_is_nan(f(std::numeric_limits<float>::quiet_NaN())));
        EXPECT_TRUE(half_is_nan(f(bits_to_f32(0x7F800001u))));  // NaN with only low mantissa bits
        // 1 + 2^-11 is halfway between 1 (0x3C00, even) and 1 + 2^-10: down.
        EXPECT_EQ(f(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
        // 1 + 3 * 2^-11 is halfway between 0x3C01 (odd) and 0x3C02: up.
        EXPECT_EQ(f(1.0f + 3.0f * std::ldexp(1.0f, -11)), 0x3C02);
        // Just above a halfway point rounds away from it.
        EXPECT_EQ(f(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
        // Subnormal halfway points: 2^-25 between 0 and 0x0001 -> 0 (even);
        // 1.5 * 2^-24 -> 0x0002; 2.5 * 2^-24 -> 0x0002.
        EXPECT_EQ(f(std::ldexp(1.0f, -25)), 0x0000);
        EXPECT_EQ(f(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
        EXPECT_EQ(f(1.5f * std::ldexp(1.0f, -24)), 0x0002);
        EXPECT_EQ(f(2.5f * std::ldexp(1.0f, -24)), 0x0002);
        EXPECT_EQ(f(std::ldexp(1.0f, -26)), 0x0000);
        EXPECT_EQ(f(1e-10f), 0x0000);
        EXPECT_EQ(f(-1e-10f), 0x8000);
        // Largest subnormal + half an ulp (1023.5 * 2^-24) is a tie between
        // 0x03FF (odd) and 0x0400 (the smallest normal): up.
        EXPECT_EQ(f(1023.5f * std::ldexp(1.0f, -24)), 0x0400);
    }
}

// Midpoints between every pair of adjacent finite halves (and just either
// side of them) — all exactly representable as floats.
TEST(Fp16, MidpointsTiesToEvenAndSoftEqualsHardware) {
    for (uint32_t sign : {0u, 0x8000u}) {
        for (uint32_t m = 0; m < 0x7C00; ++m) {
            const auto lo = uint16_t(sign | m);
            const auto hi = uint16_t(sign | (m + 1));  // 0x7BFF + 1 = infinity
            const double a = fp16_to_f32_soft(lo);
            const double b = (m + 1 == 0x7C00) ? (sign ? -65536.0 : 65536.0) : double(fp16_to_f32_soft(hi));
            const float mid = float((a + b) / 2);
            ASSERT_EQ(double(mid), (a + b) / 2) << "midpoint not exact for " << std::hex << lo;
            const uint16_t even = (lo & 1u) ? hi : lo;
            ASSERT_EQ(f32_to_fp16_soft(mid), even) << std::hex << lo;
            ASSERT_EQ(f32_to_fp16(mid), even) << std::hex << lo;
            const float below = std::nextafter(mid, float(a));
            const float above = std::nextafter(mid, float(b));
            ASSERT_EQ(f32_to_fp16_soft(below), lo) << std::hex << lo;
            ASSERT_EQ(f32_to_fp16(below), lo) << std::hex << lo;
            ASSERT_EQ(f32_to_fp16_soft(above), hi) << std::hex << lo;
            ASSERT_EQ(f32_to_fp16(above), hi) << std::hex << lo;
        }
    }
}

TEST(Fp16, SoftEqualsHardwareOnRandomFloats) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint32_t> bits;
    // Random bit patterns cover every exponent; a second set concentrates on
    // the range halves can represent (exponents 2^-26 .. 2^16).
    std::uniform_int_distribution<uint32_t> exp(101, 143);
    for (int i = 0; i < 1000000; ++i) {
        uint32_t u = bits(rng);
        if (i & 1) u = (u & 0x807FFFFFu) | (exp(rng) << 23);
        const float x = bits_to_f32(u);
        const uint16_t soft = f32_to_fp16_soft(x);
        const uint16_t hard = f32_to_fp16(x);
        if (std::isnan(x)) {
            ASSERT_TRUE(half_is_nan(soft)) << std::hex << u;
            ASSERT_TRUE(half_is_nan(hard)) << std::hex << u;
        } else {
            ASSERT_EQ(soft, hard) << std::hex << u;
        }
    }
}

TEST(Bf16, RoundTripOfEveryNonNanValue) {
    for (uint32_t i = 0; i < 65536; ++i) {
        const auto b = uint16_t(i);
        const float f = bf16_to_f32(b);
        ASSERT_EQ(f32_to_bits(f), uint32_t(b) << 16);
        if (bf16_is_nan(b)) {
            ASSERT_TRUE(bf16_is_nan(f32_to_bf16(f))) << std::hex << b;
        } else {
            ASSERT_EQ(f32_to_bf16(f), b) << std::hex << b;
        }
    }
}

TEST(Bf16, RoundingHandCases) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
    EXPECT_EQ(bf16_to_f32(0xC040), -3.0f);
    // 0x3F808000 is halfway between 0x3F80 (even) and 0x3F81: down.
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3F808000u)), 0x3F80);
    // 0x3F818000 is halfway between 0x3F81 (odd) and 0x3F82: up.
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3F818000u)), 0x3F82);
    // Either side of a halfway point.
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3F808001u)), 0x3F81);
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3F807FFFu)), 0x3F80);
    // 1/3 = 0x3EAAAAAB: the dropped half 0xAAAB > 0x8000 -> up to 0x3EAB.
    EXPECT_EQ(f32_to_bf16(1.0f / 3.0f), 0x3EAB);
    // FLT_MAX (0x7F7FFFFF) is above the halfway point to infinity: rounds to inf.
    EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
    EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
    EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
    // Subnormal floats round like any other value: 0x00008000 -> 0 (tie, even).
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0x00008000u)), 0x0000);
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0x00018000u)), 0x0002);
    // A NaN whose payload sits only in the dropped bits must stay NaN (plain
    // rounding would carry it to infinity, 0x7F80), and is made quiet.
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0x7F800001u)), 0x7FC0);
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0xFF800001u)), 0xFFC0);
    EXPECT_TRUE(bf16_is_nan(f32_to_bf16(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace smolinfer::quant

namespace smolinfer {
namespace {

TEST(Fp16Branchless, EveryHalfMatchesTheBranchyConversion) {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float a = quant::fp16_to_f32_branchless(uint16_t(h));
        const float b = quant::fp16_to_f32_soft(uint16_t(h));
        if (std::isnan(b)) {
            ASSERT_TRUE(std::isnan(a)) << h;
        } else {
            ASSERT_EQ(quant::f32_to_bits(a), quant::f32_to_bits(b)) << h;
        }
    }
}

// The row conversion (SIMD in WebAssembly) against the scalar one, on floats
// of every class: each half's value and its neighbours, the midpoints
// between halves, random bit patterns, zeros, subnormals, overflow, NaN.
TEST(Fp16Row, EqualsTheScalarConversion) {
    std::vector<float> x;
    for (uint32_t h = 0; h < 0x10000; h += 7) {
        const float f = quant::fp16_to_f32_soft(uint16_t(h));
        x.push_back(f);
        x.push_back(std::nextafter(f, INFINITY));
        x.push_back(std::nextafter(f, -INFINITY));
    }
    std::mt19937 rng(21);
    for (int i = 0; i < 200000; ++i) x.push_back(quant::bits_to_f32(uint32_t(rng())));
    for (const float f : {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 1e9f, INFINITY, -INFINITY, NAN, 0x1p-25f, 0x1.8p-25f,
                          0x1p-24f, 0x1.fffffep-15f, 0x1p-14f}) {
        x.push_back(f);
    }
    std::vector<uint16_t> got(x.size());
    quant::f32_to_fp16_row(x.data(), got.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(got[i], quant::f32_to_fp16_soft(x[i])) << "at " << i << ": " << x[i];
    }
}

}  // namespace
}  // namespace smolinfer
