// Weight quantizers: the float formats and the 32-value block formats (the
// K-quants are in quantize_kquant_ref.cpp).
//
// A 32-value block has one scale (and one minimum for Q4_1/Q5_1). For a given
// half-precision scale (and minimum) the nearest code of every value is the
// best choice, so a block is judged by its scales alone. The candidates are
// the scale (and minimum) llama.cpp's reference quantizer picks -- max/-8,
// max/-16, amax/127, (max-min)/nmax with min -- and those of the exact
// search in quantize_search.cpp: for each sign, its least-squares scale
// rounded to a half, the two neighbouring halves, and the smallest scale that
// clips nothing. Searched candidates that would clip a value by more than
// half a step are passed over. The one whose nearest codes decode closest is
// written, so no block is worse than the reference quantizer's (whose codes,
// rounded against the unrounded scale, are at best the nearest ones).
#include "quant/quantize_ref.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quantize_impl.h"
#include "quant/reference.h"

namespace smolinfer::quant::ref {

namespace {

using detail::half_next;
using detail::half_of;
using detail::nearest_in;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------- Q4_0, Q5_0, Q8_0: q*d

// Nearest codes in [lo, hi]; squared error of the decoded values, or +inf
// when clipping is not allowed and some value lies more than half a step
// outside the codes.
double encode_symmetric(const float* x, uint16_t dh, int lo, int hi, bool may_clip, int* q) {
    constexpr size_t kLanes = 8;
    const float d = fp16_to_f32(dh);
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    const float flo = float(lo), fhi = float(hi);
    // Branch-free over the block with the sums in independent lanes, so that
    // it vectorizes; clipping is judged after. A multiply by the reciprocal,
    // not a divide: at worst a code that is a last-bit tie goes the other
    // way. NaN quotients go to lo, as nearest_in sends them.
    float r_lo[kLanes] = {}, r_hi[kLanes] = {};
    double acc[kLanes] = {};
    for (size_t j0 = 0; j0 < kQK32; j0 += kLanes) {
        for (size_t l = 0; l < kLanes; ++l) {
            const float r = x[j0 + l] * inv;
            r_lo[l] = r < r_lo[l] ? r : r_lo[l];
            r_hi[l] = r > r_hi[l] ? r : r_hi[l];
            float c = r > flo ? r : flo;
            c = c < fhi ? c : fhi;
            c = std::nearbyint(c);
            q[j0 + l] = int(c);
            const double e = double(x[j0 + l]) - double(c * d);
            acc[l] += e * e;
        }
    }
    float lo_all = 0.0f, hi_all = 0.0f;
    double err = 0.0;
    for (size_t l = 0; l < kLanes; ++l) {
        lo_all = r_lo[l] < lo_all ? r_lo[l] : lo_all;
        hi_all = r_hi[l] > hi_all ? r_hi[l] : hi_all;
        err += acc[l];
    }
    if (!may_clip && !(lo_all >= flo - 0.5f && hi_all <= fhi + 0.5f)) return kInf;
    return err;
}

// Least-squares scale for the codes q of x (0 when every code is 0).
double least_squares_scale(const float* x, const int* q) {
    constexpr size_t kLanes = 8;  // independent sums, so that it vectorizes
    double lx[kLanes] = {}, lq[kLanes] = {};
    for (size_t j0 = 0; j0 < kQK32; j0 += kLanes) {
        for (size_t l = 0; l < kLanes; ++l) {
            lx[l] += double(x[j0 + l]) * q[j0 + l];
            lq[l] += double(q[j0 + l]) * q[j0 + l];
        }
    }
    double sxq = 0.0, sqq = 0.0;
    for (size_t l = 0; l < kLanes; ++l) {
        sxq += lx[l];
        sqq += lq[l];
    }
    return sqq > 0.0 ? sxq / sqq : 0.0;
}

// Q8_0's choice: the reference's scale, or the least-squares scale of the
// reference's codes as a half or one of its neighbours. The exact search of
// quantize_symmetric lowers the rms further (0.91 of llama.cpp's instead of
// 0.98, gaussian rows with outliers) but costs 20 times as much, and with 255
// codes that error is already far below the K-quants' that sit beside Q8_0.
// A dequantized row comes back exactly: its codes under the reference's
// scale are its own, and their least-squares scale is its own scale.
uint16_t quantize_symmetric_refit(const float* x, int lo, int hi, float ref_d, int* q) {
    uint16_t best = half_of(ref_d);
    double best_err = encode_symmetric(x, best, lo, hi, true, q);
    const uint16_t h = half_of(least_squares_scale(x, q));
    int trial[kQK32];
    for (const uint16_t c : {h, half_next(h, -1), half_next(h, +1)}) {
        if (c == best) continue;
        const double e = encode_symmetric(x, c, lo, hi, false, trial);
        if (e < best_err) {
            best_err = e;
            best = c;
            std::copy(trial, trial + kQK32, q);
        }
    }
    return best;
}

// The best scale (its codes in q) among the reference's and the searched
// ones. Searched scales never clip a value by more than half a step: for
// each sign, the least-squares scale as a half and its two neighbours, and
// the smallest scale that clips nothing.
uint16_t quantize_symmetric(const float* x, int lo, int hi, float ref_d, int* q) {
    float top = 0.0f, bottom = 0.0f;  // largest value and largest negated value
    for (size_t j = 0; j < kQK32; ++j) {
        top = std::fmax(top, x[j]);
        bottom = std::fmax(bottom, -x[j]);
    }
    uint16_t best = half_of(ref_d);
    double best_err = encode_symmetric(x, best, lo, hi, true, q);
    auto consider = [&](uint16_t h) {
        const double e = encode_symmetric(x, h, lo, hi, false, q);
        if (e < best_err) {
            best_err = e;
            best = h;
        }
    };
    const detail::SignedFits fits = detail::symmetric_fits(x, kQK32, lo, hi);
    for (const int sign : {+1, -1}) {
        const detail::ScaleFit& f = sign > 0 ? fits.positive : fits.negative;
        if (!(f.err < kInf)) continue;
        const uint16_t h = half_of(f.d);
        consider(h);
        consider(half_next(h, -1));
        consider(half_next(h, +1));
        // For d > 0 top maps to the high codes; for d < 0 to the low ones.
        const double up = sign > 0 ? top : bottom, down = sign > 0 ? bottom : top;
        const double unclipped = std::max(up / (hi + 0.5), down / (-lo + 0.5));
        if (std::fabs(f.d) < unclipped) {
            const uint16_t u = half_of(sign * unclipped);
            consider(u);
            consider(half_next(u, sign));
        }
    }
    encode_symmetric(x, best, lo, hi, true, q);
    return best;
}

// The value of largest magnitude, with its sign (the first one on ties).
float signed_max(const float* x) {
    float amax = 0.0f, max = 0.0f;
    for (size_t j = 0; j < kQK32; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

// ------------------------------------------------------ Q4_1, Q5_1: q*d + m

double encode_affine(const float* x, uint16_t dh, uint16_t mh, int nmax, bool may_clip, int* q) {
    const float d = fp16_to_f32(dh), m = fp16_to_f32(mh);
    double err = 0.0;
    for (size_t j = 0; j < kQK32; ++j) {
        const float r = d != 0.0f ? (x[j] - m) / d : 0.0f;
        if (!may_clip && !(r >= -0.5f && r <= float(nmax) + 0.5f)) return kInf;
        q[j] = nearest_in(r, 0, nmax);
        const double e = double(x[j]) - double(float(q[j]) * d + m);
        err += e * e;
    }
    return err;
}

// The best (scale, minimum) pair, codes in q: the reference's, or the
// searched fit as halves with their neighbours if they clip nothing.
void quantize_affine(const float* x, int nmax, uint16_t* dh, uint16_t* mh, int* q) {
    float lo = x[0], hi = x[0];
    for (size_t j = 1; j < kQK32; ++j) {
        lo = std::fmin(lo, x[j]);
        hi = std::fmax(hi, x[j]);
    }
    *dh = half_of((hi - lo) / float(nmax));  // the reference's choice
    *mh = half_of(lo);
    double best_err = encode_affine(x, *dh, *mh, nmax, true, q);
    auto around = [&](double scale, double offset) {
        const uint16_t d0 = half_of(scale), m0 = half_of(offset);
        for (const uint16_t d : {half_next(d0, -1), d0, half_next(d0, +1)}) {
            for (const uint16_t m : {half_next(m0, -1), m0, half_next(m0, +1)}) {
                const double e = encode_affine(x, d, m, nmax, false, q);
                if (e < best_err) {
                    best_err = e;
                    *dh = d;
                    *mh = m;
                }
            }
        }
    };
    const detail::AffineFit f = detail::affine_fit(x, kQK32, nmax, false);
    around(f.scale, f.offset);
    // The fit widened and shifted just enough to clip nothing.
    const double scale = std::max(f.scale, (double(hi) - lo) / (nmax + 1));
    around(scale, std::min(std::max(f.offset, hi - (nmax + 0.5) * scale), lo + 0.5 * scale));
    encode_affine(x, *dh, *mh, nmax, true, q);
}

// --------------------------------------------------------------------- packing

// Value j < 16 in the low nibble of qs[j], value j >= 16 in the high nibble of qs[j - 16].
void pack_nibbles(const int* u, uint8_t* qs) {
    for (size_t j = 0; j < kQK32 / 2; ++j) qs[j] = uint8_t((u[j] & 0xF) | (u[j + 16] & 0xF) << 4);
}

// Fifth bit of value j at bit j of the little-endian 32-bit qh.
void pack_fifth_bits(const int* u, uint8_t* qh) {
    uint32_t bits = 0;
    for (size_t j = 0; j < kQK32; ++j) bits |= uint32_t((u[j] >> 4) & 1) << j;
    for (size_t k = 0; k < 4; ++k) qh[k] = uint8_t(bits >> (8 * k));
}

void quantize_q4_0(const float* x, BlockQ4_0* y, size_t nb) {
    int q[kQK32];
    for (size_t i = 0; i < nb; ++i, x += kQK32) {
        y[i].d = quantize_symmetric(x, -8, 7, signed_max(x) / -8.0f, q);
        for (int& v : q) v += 8;
        pack_nibbles(q, y[i].qs);
    }
}

void quantize_q5_0(const float* x, BlockQ5_0* y, size_t nb) {
    int q[kQK32];
    for (size_t i = 0; i < nb; ++i, x += kQK32) {
        y[i].d = quantize_symmetric(x, -16, 15, signed_max(x) / -16.0f, q);
        for (int& v : q) v += 16;
        pack_nibbles(q, y[i].qs);
        pack_fifth_bits(q, y[i].qh);
    }
}

void quantize_q8_0(const float* x, BlockQ8_0* y, size_t nb) {
    int q[kQK32];
    for (size_t i = 0; i < nb; ++i, x += kQK32) {
        y[i].d = quantize_symmetric_refit(x, -128, 127, std::fabs(signed_max(x)) / 127.0f, q);
        for (size_t j = 0; j < kQK32; ++j) y[i].qs[j] = int8_t(q[j]);
    }
}

void quantize_q4_1(const float* x, BlockQ4_1* y, size_t nb) {
    int q[kQK32];
    for (size_t i = 0; i < nb; ++i, x += kQK32) {
        quantize_affine(x, 15, &y[i].d, &y[i].m, q);
        pack_nibbles(q, y[i].qs);
    }
}

void quantize_q5_1(const float* x, BlockQ5_1* y, size_t nb) {
    int q[kQK32];
    for (size_t i = 0; i < nb; ++i, x += kQK32) {
        quantize_affine(x, 31, &y[i].d, &y[i].m, q);
        pack_nibbles(q, y[i].qs);
        pack_fifth_bits(q, y[i].qh);
    }
}

}  // namespace

bool can_quantize(Type type) {
    switch (type) {
        case Type::F32:
        case Type::F16:
        case Type::BF16:
        case Type::Q4_0:
        case Type::Q4_1:
        case Type::Q5_0:
        case Type::Q5_1:
        case Type::Q8_0:
        case Type::Q4_K:
        case Type::Q5_K:
        case Type::Q6_K:
            return true;
        case Type::Q8_1:  // activation formats
        case Type::Q8_K:
        case Type::Q2_K:  // not (yet) searched
        case Type::Q3_K:
            return false;
    }
    return false;
}

void quantize_row(Type type, const float* x, void* dst, size_t n) {
    const size_t nb = n / traits(type).block_elems;
    switch (type) {
        case Type::F32: return quantize_row_f32(x, dst, n);
        case Type::F16: return quantize_row_f16(x, dst, n);
        case Type::BF16: return quantize_row_bf16(x, dst, n);
        case Type::Q4_0: return quantize_q4_0(x, static_cast<BlockQ4_0*>(dst), nb);
        case Type::Q4_1: return quantize_q4_1(x, static_cast<BlockQ4_1*>(dst), nb);
        case Type::Q5_0: return quantize_q5_0(x, static_cast<BlockQ5_0*>(dst), nb);
        case Type::Q5_1: return quantize_q5_1(x, static_cast<BlockQ5_1*>(dst), nb);
        case Type::Q8_0: return quantize_q8_0(x, static_cast<BlockQ8_0*>(dst), nb);
        case Type::Q4_K: return detail::quantize_row_q4_K(x, dst, n);
        case Type::Q5_K: return detail::quantize_row_q5_K(x, dst, n);
        case Type::Q6_K: return detail::quantize_row_q6_K(x, dst, n);
        default: break;
    }
    std::abort();  // not a weight format: callers check can_quantize
}

}  // namespace smolinfer::quant::ref
