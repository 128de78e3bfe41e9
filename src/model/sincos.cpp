// The algorithm is the one glibc adopted from Arm's optimized-routines
// (MIT): reduce the argument modulo pi/2 (with a double multiply-subtract
// below 120, with a 192-bit 4/pi table above), then evaluate short sine and
// cosine polynomials in double. The constants are those published with it;
// the fused multiply-adds are where the FMA build of glibc has them.
// tests/test_sincos.cpp checks every float in [0, 2^18] against the C
// library when it is glibc.
#include "model/sincos.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace smolinfer::model {

namespace {

struct Poly {
    double sign[4];  // of the sine in quadrants 0..3
    double c0, c1, c2, c3, c4;  // cosine (negated in the second table)
    double s1, s2, s3;          // sine
};

constexpr double kHalfPiInv = 0x1.45F306DC9C883p+23;  // 2/pi, scaled by 2^24
constexpr double kHalfPi = 0x1.921FB54442D18p0;
constexpr double kPi63 = 0x1.921FB54442D18p-62;  // 2pi * 2^-64

constexpr Poly kPoly[2] = {
    {{1.0, -1.0, -1.0, 1.0}, 0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10,
     0x1.99343027bf8c3p-16, -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
    {{1.0, -1.0, -1.0, 1.0}, -0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10,
     -0x1.99343027bf8c3p-16, -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
};

// 4/pi to 192 bits; entry i holds 8 more bits than entry i-1.
constexpr uint32_t kInvPio4[24] = {
    0xa2,       0xa2f9,     0xa2f983,   0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
    0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
    0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
};

uint32_t bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
}

// Exponent and top 3 mantissa bits, sign dropped: the thresholds compare these.
uint32_t top12(float x) { return (bits(x) >> 20) & 0x7ff; }

void poly(double x, double x2, const Poly& p, int quadrant, float* sin_out, float* cos_out) {
    const double x3 = x2 * x, x4 = x2 * x2;
    const double c2 = std::fma(x2, p.c4, p.c3);
    const double s1 = std::fma(x2, p.s3, p.s2);
    const double c1 = std::fma(x2, p.c1, p.c0);
    const double x5 = x3 * x2, x6 = x4 * x2;
    const double s = std::fma(x3, p.s1, x);
    const double c = std::fma(x4, p.c2, c1);
    const float sine = float(std::fma(x5, s1, s));
    const float cosine = float(std::fma(x6, c2, c));
    // In odd quadrants the two polynomials trade places.
    *sin_out = (quadrant & 1) ? cosine : sine;
    *cos_out = (quadrant & 1) ? sine : cosine;
}

// |x| >= 120: x (as float bits) times 4/pi in fixed point, exactly.
double reduce_large(uint32_t xi, int* quadrant) {
    const uint32_t* table = &kInvPio4[(xi >> 26) & 15];
    const int shift = int((xi >> 23) & 7);
    xi = ((xi & 0xffffff) | 0x800000) << shift;
    uint64_t r0 = uint64_t(uint32_t(xi * table[0]));
    const uint64_t r1 = uint64_t(xi) * table[4];
    const uint64_t r2 = uint64_t(xi) * table[8];
    r0 = (r2 >> 32) | (r0 << 32);
    r0 += r1;
    const uint64_t n = (r0 + (uint64_t(1) << 61)) >> 62;
    r0 -= n << 62;
    *quadrant = int(n);
    return double(int64_t(r0)) * kPi63;
}

}  // namespace

void sincos_glibc(float y, float* sin_out, float* cos_out) {
    double x = y;
    if (top12(y) < top12(0x1.921FB6p-1f)) {  // |y| < pi/4
        if (top12(y) < top12(0x1p-12f)) {
            *sin_out = y;
            *cos_out = 1.0f;
            return;
        }
        poly(x, x * x, kPoly[0], 0, sin_out, cos_out);
    } else if (top12(y) < top12(120.0f)) {
        const int n = (int32_t(x * kHalfPiInv) + 0x800000) >> 24;
        x = std::fma(-double(n), kHalfPi, x);
        const double s = kPoly[0].sign[n & 3];
        poly(x * s, x * x, kPoly[(n & 2) ? 1 : 0], n, sin_out, cos_out);
    } else if (top12(y) < top12(INFINITY)) {
        const uint32_t xi = bits(y);
        const int sign = int(xi >> 31);
        int n;
        x = reduce_large(xi, &n);
        const double s = kPoly[0].sign[(n + sign) & 3];
        poly(x * s, x * x, kPoly[((n + sign) & 2) ? 1 : 0], n, sin_out, cos_out);
    } else {
        *sin_out = *cos_out = y - y;  // inf or nan: nan
    }
}

}  // namespace smolinfer::model
