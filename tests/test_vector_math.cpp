// The element-wise steps whose SIMD builds work several lanes at a time
// (WebAssembly: model/vector_math_wasm.h, four lanes; AVX-512 CPUs:
// model/vector_math_avx512.h, sixteen; AVX2: model/vector_math_avx2.h,
// eight) against their scalar forms, bit for bit, over values that reach
// every branch: the polynomial's range, results that are subnormal,
// overflow or vanish, zeros, infinities and NaN. model::swiglu takes the
// widest this CPU has; the AVX2 forms are also tested directly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "model/exp_approx.h"
#include "model/ops.h"
#include "model/vector_math_avx2.h"

#include "support/float_bits.h"

namespace smolinfer {
namespace {

using test::bits;

std::vector<float> edge_values() {
    std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 87.0f, -87.0f, 88.7f, -88.7f, 89.0f, -89.0f, 103.0f, -103.0f,
                            104.0f, -104.0f, 133.0f, -133.0f, 134.0f, -134.0f, 1e10f, -1e10f, INFINITY, -INFINITY, NAN,
                            1e-40f, -1e-40f};
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> wide(-140.0f, 140.0f);
    std::normal_distribution<float> typical(0.0f, 3.0f);
    for (int i = 0; i < 4000; ++i) v.push_back(i % 2 ? wide(rng) : typical(rng));
    while (v.size() % 4 != 3) v.push_back(0.5f);  // a tail past the last full vector
    return v;
}

// exp_approx scales its polynomial by 2^n with two multiplies instead of
// ldexp: the same float wherever ldexp rounds (results below the normal
// range: every float of x in [-104, -87]) and on a sweep of the rest.
TEST(VectorMath, ExpScalesByPowersOfTwoAsLdexpDoes) {
    const auto with_ldexp = [](float x) {
        const float r = 0x1.8p23f;
        const float z = quant::exact_fma(x, 0x1.715476p+0f, r);
        const float n = z - r;
        if (!(std::fabs(n) <= 192.0f)) return model::exp_approx(x);
        const float b = quant::exact_fma(-n, 0x1.7f7d1cp-20f, quant::exact_fma(-n, 0x1.62e4p-1f, x));
        const float u = b * b;
        const float j = quant::exact_fma(quant::exact_fma(quant::exact_fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                                          quant::exact_fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                                         u, quant::exact_fma(0x1.ffffecp-1f, b, 1.0f));
        return std::ldexp(j, int(n));
    };
    long checked = 0;
    for (float x = -104.0f; x <= -87.0f; x = std::nextafter(x, 0.0f), ++checked) {
        ASSERT_EQ(bits(model::exp_approx(x)), bits(with_ldexp(x))) << x;
    }
    for (float x = -140.0f; x <= 140.0f; x += 0.000731f, ++checked) {
        ASSERT_EQ(bits(model::exp_approx(x)), bits(with_ldexp(x))) << x;
    }
    for (const float x : edge_values()) ASSERT_EQ(bits(model::exp_approx(x)), bits(with_ldexp(x))) << x;
    EXPECT_GT(checked, 1000000);
}

TEST(VectorMath, SwigluEqualsScalarSiluTimesUp) {
    const auto x = edge_values();
    std::vector<float> gate = x, up(x.size());
    std::mt19937 rng(4);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& u : up) u = d(rng);
    model::swiglu(gate.data(), up.data(), gate.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const float want = model::silu_approx(x[i]) * up[i];
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(gate[i])) << "x = " << x[i] << ", up = " << up[i] << ", got " << gate[i];
        } else {
            EXPECT_EQ(bits(gate[i]), bits(want)) << "x = " << x[i] << ": " << gate[i] << " vs " << want;
        }
    }
}

#if defined(__AVX2__) && defined(__FMA__)
TEST(VectorMath, Avx2ExpAndSiluEqualTheScalarForms) {
    std::vector<float> x = edge_values();
    for (float v = -104.0f; v <= -87.0f; v += 0.0001f) x.push_back(v);  // results below the normal range
    while (x.size() % 8 != 0) x.push_back(0.25f);
    for (size_t i = 0; i < x.size(); i += 8) {
        alignas(32) float e[8], s[8];
        _mm256_store_ps(e, model::avx2::exp_approx8(_mm256_loadu_ps(&x[i])));
        _mm256_store_ps(s, model::avx2::silu_approx8(_mm256_loadu_ps(&x[i])));
        for (size_t l = 0; l < 8; ++l) {
            const float want_e = model::exp_approx(x[i + l]), want_s = model::silu_approx(x[i + l]);
            if (std::isnan(want_e)) {
                EXPECT_TRUE(std::isnan(e[l])) << x[i + l];
            } else {
                ASSERT_EQ(bits(e[l]), bits(want_e)) << "exp(" << x[i + l] << ")";
            }
            if (std::isnan(want_s)) {
                EXPECT_TRUE(std::isnan(s[l])) << x[i + l];
            } else {
                ASSERT_EQ(bits(s[l]), bits(want_s)) << "silu(" << x[i + l] << ")";
            }
        }
    }
}
#endif

}  // namespace
}  // namespace smolinfer
