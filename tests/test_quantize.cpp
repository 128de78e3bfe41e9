// Weight quantizers (src/quant/quantize_ref.h):
//  1. round trips stay within one step of the format's grid on many kinds of
//     rows, every code is the nearest one to its value, zero rows stay zero,
//     the bytes are deterministic, and the float formats convert exactly;
//  2. the error of every row is no larger than that of llama.cpp's reference
//     quantizer on the same rows (tests/golden/quantize/llama_rms.json, made by
//     scripts/gen-quantize-golden);
//  3. requantizing a dequantized row gives it back: exactly for the 32-value
//     formats, within a small fraction of the first error for the K-quants.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "quant/block_codes.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quantize_ref.h"
#include "quant/reference.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

using quant::Type;

constexpr Type kQuantTypes[] = {Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0,
                                Type::Q4_K, Type::Q5_K, Type::Q6_K};

std::vector<uint8_t> quantize(Type type, const std::vector<float>& x) {
    std::vector<uint8_t> q(quant::row_bytes(quant::traits(type), x.size()));
    quant::ref::quantize_row(type, x.data(), q.data(), x.size());
    return q;
}

std::vector<float> dequantize(Type type, const std::vector<uint8_t>& q, size_t n) {
    std::vector<float> y(n);
    quant::ref::dequantize_row(type, q.data(), y.data(), n);
    return y;
}

double sum_sq_diff(const float* x, const float* y, size_t n) {
    double s = 0.0;
    for (size_t j = 0; j < n; ++j) {
        const double e = double(x[j]) - double(y[j]);
        s += e * e;
    }
    return s;
}

std::string name(Type t) { return std::string(quant::traits(t).name); }

// ------------------------------------------------------------- 1. round trips

// Rows of 1024 values of many shapes (of scale ~1, so the scales are normal halves).
std::vector<std::pair<std::string, std::vector<float>>> shaped_rows() {
    constexpr size_t n = 1024;
    std::mt19937 rng(1234);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<std::pair<std::string, std::vector<float>>> rows;
    auto add = [&](const std::string& label, auto f) {
        std::vector<float> x(n);
        for (size_t j = 0; j < n; ++j) x[j] = f(j);
        rows.emplace_back(label, std::move(x));
    };
    for (int r = 0; r < 4; ++r) {
        add("gaussian", [&](size_t) { return normal(rng); });
        add("uniform", [&](size_t) { return uniform(rng); });
        add("outliers", [&](size_t) { return normal(rng) * (rng() % 100 == 0 ? 10.0f : 1.0f); });
        add("laplace", [&](size_t) { return normal(rng) * normal(rng); });
        add("positive", [&](size_t) { return std::fabs(normal(rng)) + 0.5f; });
        add("negative", [&](size_t) { return -std::fabs(normal(rng)) - 0.5f; });
        add("mixed scales", [&](size_t j) { return normal(rng) * std::pow(10.0f, float(int(j / 32 % 5) - 2)); });
        add("alternating signs", [&](size_t j) { return (j % 2 ? -1.0f : 1.0f) * (1.0f + std::fabs(normal(rng))); });
        add("one spike per block", [&](size_t j) { return j % 32 == 7 ? 50.0f : 0.01f * normal(rng); });
        add("sparse", [&](size_t) { return rng() % 8 == 0 ? normal(rng) : 0.0f; });
    }
    return rows;
}

// One step of the reference's grid for a block: amax over the number of
// levels on the wide side (formats without a minimum), or the range over
// the number of steps (formats with one; K-quant minimums cover the origin).
double grid_step(Type type, const float* x, size_t n) {
    float lo = x[0], hi = x[0], amax = 0.0f;
    for (size_t j = 0; j < n; ++j) {
        lo = std::min(lo, x[j]);
        hi = std::max(hi, x[j]);
        amax = std::max(amax, std::fabs(x[j]));
    }
    switch (type) {
        case Type::Q8_0: return amax / 127.0;
        case Type::Q4_0: return amax / 8.0;
        case Type::Q5_0: return amax / 16.0;
        case Type::Q6_K: return amax / 32.0;
        case Type::Q4_1: return (double(hi) - lo) / 15.0;
        case Type::Q5_1: return (double(hi) - lo) / 31.0;
        case Type::Q4_K: return (std::max(double(hi), 0.0) - std::min(double(lo), 0.0)) / 15.0;
        case Type::Q5_K: return (std::max(double(hi), 0.0) - std::min(double(lo), 0.0)) / 31.0;
        default: return 0.0;
    }
}

// Largest error allowed, in reference grid steps. Q8_0: half a step, plus
// the rounding of d to a half (2^-11 relative, times up to 128 codes). The
// others: one step, plus the same rounding (for Q4_0/Q5_0 that is the
// reference's own worst case, whose scale leaves the short side of the codes
// a step short; our search never clips a value by more than half of its own
// step, but its step may be a little wider). Measured worst: 0.52 (Q8_0),
// 0.98 (Q4_0), 0.55-0.85 (others). And every block's rms stays under half
// a step (measured worst 0.36), as a uniform grid's does.
double max_steps(Type type) { return type == Type::Q8_0 ? 0.5 + 1.0 / 16 : 1.0 + 1.0 / 16; }

TEST(QuantizeRoundTrip, WithinOneGridStepAndDeterministic) {
    for (const auto& [label, x] : shaped_rows()) {
        for (const Type type : kQuantTypes) {
            const size_t block = quant::traits(type).block_elems;
            const auto q = quantize(type, x);
            ASSERT_EQ(q, quantize(type, x)) << name(type) << " " << label << ": not deterministic";
            const auto y = dequantize(type, q, x.size());
            for (size_t b = 0; b < x.size(); b += block) {
                const double step = grid_step(type, &x[b], block);
                double max_err = 0.0;
                for (size_t j = b; j < b + block; ++j) max_err = std::max(max_err, std::fabs(double(x[j]) - y[j]));
                const double rms = std::sqrt(sum_sq_diff(&x[b], &y[b], block) / block);
                ASSERT_LE(max_err, max_steps(type) * step) << name(type) << " " << label << " block " << b / block;
                ASSERT_LE(rms, 0.5 * step) << name(type) << " " << label << " block " << b / block;
            }
        }
    }
}

// Decoded value (in *v) of block element j if its code were c, scales
// unchanged; false when c is outside the format's code range.
bool alternative(Type type, const uint8_t* block, size_t j, int c, double* v) {
    using namespace quant;
    switch (type) {
        case Type::Q4_0:
        case Type::Q5_0:
        case Type::Q8_0: {
            const int lo = type == Type::Q4_0 ? -8 : type == Type::Q5_0 ? -16 : -128;
            if (c < lo || c > -lo - 1) return false;
            *v = float(c) * fp16_to_f32(reinterpret_cast<const BlockQ4_0*>(block)->d);  // d leads every layout
            return true;
        }
        case Type::Q4_1:
        case Type::Q5_1: {
            if (c < 0 || c > (type == Type::Q4_1 ? 15 : 31)) return false;
            const auto* b = reinterpret_cast<const BlockQ4_1*>(block);  // d, m lead both layouts
            *v = float(c) * fp16_to_f32(b->d) + fp16_to_f32(b->m);
            return true;
        }
        case Type::Q4_K:
        case Type::Q5_K: {
            if (c < 0 || c > (type == Type::Q4_K ? 15 : 31)) return false;
            const auto* b = reinterpret_cast<const BlockQ4_K*>(block);  // d, dmin, scales lead both layouts
            const float dl = fp16_to_f32(b->d) * float(codes::scale_k(*b, j / 32));
            const float ml = fp16_to_f32(b->dmin) * float(codes::min_k(*b, j / 32));
            *v = dl * float(c) - ml;
            return true;
        }
        case Type::Q6_K: {
            if (c < -32 || c > 31) return false;
            const auto* b = reinterpret_cast<const BlockQ6_K*>(block);
            *v = fp16_to_f32(b->d) * float(codes::scale(*b, j / 16)) * float(c);
            return true;
        }
        default: return false;
    }
}

TEST(QuantizeRoundTrip, EveryCodeIsTheNearest) {
    for (const auto& [label, x] : shaped_rows()) {
        for (const Type type : kQuantTypes) {
            const auto& t = quant::traits(type);
            const auto q = quantize(type, x);
            const auto y = dequantize(type, q, x.size());
            for (size_t j = 0; j < x.size(); ++j) {
                const uint8_t* block = q.data() + j / t.block_elems * t.block_bytes;
                const double err = std::fabs(double(x[j]) - y[j]);
                double v;
                for (int c = -128; c <= 127; ++c) {
                    if (!alternative(type, block, j % t.block_elems, c, &v)) continue;
                    // Codes are rounded from a float quotient: allow a last-bit tie.
                    ASSERT_GE(std::fabs(double(x[j]) - v) * (1 + 1e-6), err)
                        << name(type) << " " << label << " value " << j << ": code " << c << " decodes closer";
                }
            }
        }
    }
}

TEST(QuantizeRoundTrip, SpecialRows) {
    constexpr size_t n = 512;
    std::mt19937 rng(99);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const Type type : kQuantTypes) {
        const std::vector<float> zero(n, 0.0f);
        for (const float v : dequantize(type, quantize(type, zero), n)) ASSERT_EQ(v, 0.0f) << name(type);
        const std::vector<float> neg_zero(n, -0.0f);
        for (const float v : dequantize(type, quantize(type, neg_zero), n)) ASSERT_EQ(v, 0.0f) << name(type);

        // Constant rows: exact up to the halves' rounding.
        for (const float c : {0.37f, -1.5f, 3e4f, -0.7f}) {
            const std::vector<float> x(n, c);
            const auto y = dequantize(type, quantize(type, x), n);
            for (size_t j = 0; j < n; ++j) ASSERT_NEAR(y[j], c, std::fabs(c) / 512) << name(type) << " constant " << c;
        }

        // Values too small for a half scale (1e-30) or too large (1e30): the
        // output is finite and never further from x than zero is.
        for (const float scale : {1e-30f, 1e30f}) {
            std::vector<float> x(n);
            for (auto& v : x) v = scale * normal(rng);
            const auto y = dequantize(type, quantize(type, x), n);
            double sx = 0.0;
            for (size_t j = 0; j < n; ++j) {
                ASSERT_TRUE(std::isfinite(y[j])) << name(type) << " scale " << scale;
                sx += double(x[j]) * x[j];
            }
            ASSERT_LE(sum_sq_diff(x.data(), y.data(), n), sx) << name(type) << " scale " << scale;
        }
    }
}

TEST(QuantizeRoundTrip, FloatFormatsConvertExactly) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(4096);
    for (size_t j = 0; j < x.size(); ++j) x[j] = normal(rng) * std::pow(10.0f, float(int(j % 13) - 6));
    x[0] = 1e30f;  // beyond the half range: inf in F16, as f32_to_fp16 says
    x[1] = 1e-30f;
    x[2] = -0.0f;
    std::vector<uint16_t> h(x.size());
    std::vector<float> f(x.size());
    quant::ref::quantize_row(Type::F32, x.data(), f.data(), x.size());
    ASSERT_EQ(0, std::memcmp(f.data(), x.data(), x.size() * 4));
    quant::ref::quantize_row(Type::F16, x.data(), h.data(), x.size());
    for (size_t j = 0; j < x.size(); ++j) ASSERT_EQ(h[j], quant::f32_to_fp16(x[j])) << j;
    quant::ref::quantize_row(Type::BF16, x.data(), h.data(), x.size());
    for (size_t j = 0; j < x.size(); ++j) ASSERT_EQ(h[j], quant::f32_to_bf16(x[j])) << j;
}

TEST(QuantizeRoundTrip, SupportedTypes) {
    for (const Type t : {Type::F32, Type::F16, Type::BF16, Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0,
                         Type::Q4_K, Type::Q5_K, Type::Q6_K}) {
        EXPECT_TRUE(quant::ref::can_quantize(t)) << name(t);
    }
    for (const Type t : {Type::Q2_K, Type::Q3_K, Type::Q8_1, Type::Q8_K}) EXPECT_FALSE(quant::ref::can_quantize(t)) << name(t);
}

// ---------------------------------------------- 2. against llama.cpp's error

constexpr size_t kRows = 16, kN = 4096;
const char* const kDistributions[] = {"gaussian", "gaussian_outliers", "uniform", "laplace_like"};

// The test rows of scripts/gen-quantize-golden, rebuilt bit for bit: keep
// the two generators identical (splitmix64, Irwin-Hall normals, no libm).
struct SplitMix64 {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform01() { return double(next() >> 11) * 0x1.0p-53; }
    double normal() {
        double s = 0.0;
        for (int k = 0; k < 12; ++k) s += uniform01();
        return s - 6.0;
    }
};

std::vector<float> make_rows(int dist) {
    SplitMix64 g{0x5EED0000ull + uint64_t(dist)};
    std::vector<float> x(kRows * kN);
    for (auto& out : x) {
        double v;
        if (dist == 0) {
            v = 0.02 * g.normal();
        } else if (dist == 1) {
            v = 0.02 * g.normal();
            if (g.next() % 100 == 0) v *= 10.0;
        } else if (dist == 2) {
            v = 0.05 * (2.0 * g.uniform01() - 1.0);
        } else {
            const double a = g.normal();
            const double b = g.normal();
            v = 0.02 * a * b;
        }
        out = float(v);
    }
    return x;
}

// FNV-1a over the float bits, as the generator computes it.
std::string fnv1a(const std::vector<float>& x) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const float v : x) {
        const uint32_t u = quant::f32_to_bits(v);
        for (int k = 0; k < 4; ++k) {
            h ^= (u >> (8 * k)) & 0xFF;
            h *= 0x100000001b3ull;
        }
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

TEST(QuantizeVsLlamaCpp, NoRowHasALargerError) {
    const auto golden = test::load_golden("quantize/llama_rms.json");
    ASSERT_EQ(golden["rows_per_distribution"].get<size_t>(), kRows);
    ASSERT_EQ(golden["n_per_row"].get<size_t>(), kN);
    std::printf("%-18s %-5s %14s %14s %9s\n", "distribution", "type", "ours rms", "llama.cpp rms", "ratio");
    for (int dist = 0; dist < 4; ++dist) {
        const auto x = make_rows(dist);
        const auto& per_type = golden["rms"][kDistributions[dist]];
        ASSERT_EQ(fnv1a(x), per_type["data_fnv1a"].get<std::string>())
            << kDistributions[dist] << ": the rows differ from the generator's (keep make_rows in step)";
        for (const Type type : {Type::F16, Type::BF16, Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0,
                                Type::Q4_K, Type::Q5_K, Type::Q6_K}) {
            const auto& want = per_type.at(name(type));
            double total = 0.0;
            for (size_t r = 0; r < kRows; ++r) {
                const std::vector<float> row(x.begin() + r * kN, x.begin() + (r + 1) * kN);
                const auto y = dequantize(type, quantize(type, row), kN);
                const double sq = sum_sq_diff(row.data(), y.data(), kN);
                total += sq;
                const double ours = std::sqrt(sq / kN), theirs = want["rows"][r].get<double>();
                EXPECT_LE(ours, theirs * (1 + 1e-6)) << kDistributions[dist] << " " << name(type) << " row " << r;
            }
            const double ours = std::sqrt(total / (kRows * kN)), theirs = want["rms"].get<double>();
            std::printf("%-18s %-5s %14.6e %14.6e %9.5f\n", kDistributions[dist], name(type).c_str(), ours, theirs,
                        ours / theirs);
            EXPECT_LE(ours, theirs * (1 + 1e-6)) << kDistributions[dist] << " " << name(type);
        }
    }
}

// ------------------------------------------------------------ 3. idempotence

// A dequantized row y is exactly representable (its own bytes encode it).
// Requantizing it must not lose it again. For the 32-value formats the
// search meets y's own grid (the window of inverse scales reaches down to
// where y's largest value sits a few codes under the top one), so y comes
// back exactly. For the K-quants y's encoding need not be found again: the
// super-block scale is re-derived from the largest group scale (which the
// first search's refit may have moved off 63 or -128), and a group whose
// codes do not reach 0 can be fitted with a different minimum. So for them
// we assert that the requantization error is small next to the first
// quantization's error (a quarter of its rms: requantizing adds at most 3%).
// With EveryCodeIsTheNearest this also shows that the bytes mean what the
// quantizer computed: a misplaced code or scale could not come back.
TEST(QuantizeIdempotence, RequantizingADequantizedRowGivesItBack) {
    for (int dist = 0; dist < 4; ++dist) {
        const auto x = make_rows(dist);
        for (const Type type : kQuantTypes) {
            const size_t block = quant::traits(type).block_elems;
            const std::vector<float> row(x.begin(), x.begin() + 4 * kN);
            const auto y = dequantize(type, quantize(type, row), row.size());
            const auto y2 = dequantize(type, quantize(type, y), row.size());
            size_t exact = 0, blocks = 0;
            for (size_t b = 0; b < y.size(); b += block, ++blocks) {
                exact += std::equal(&y[b], &y[b] + block, &y2[b]);  // by value: -0 == 0
            }
            const double first = std::sqrt(sum_sq_diff(row.data(), y.data(), row.size()) / row.size());
            const double again = std::sqrt(sum_sq_diff(y.data(), y2.data(), row.size()) / row.size());
            std::printf("%-18s %-5s requantized: %4zu/%4zu blocks exact, rms %.3g of the first rms\n",
                        kDistributions[dist], name(type).c_str(), exact, blocks, again / first);
            const bool k_quant = block == quant::kQK256;
            if (!k_quant) {
                EXPECT_EQ(exact, blocks) << kDistributions[dist] << " " << name(type);
            } else {
                EXPECT_LE(again, 0.25 * first) << kDistributions[dist] << " " << name(type);
            }
        }
    }
}

}  // namespace
}  // namespace smolinfer
