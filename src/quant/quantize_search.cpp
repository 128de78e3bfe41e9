// Scale searches for the weight quantizers. The code vector of a group,
// as a function of the inverse scale t, only changes where some value crosses
// a rounding boundary (t * |x| = k + 1/2). Sorting those events and updating
// running sums visits every distinct code vector in a window of t exactly
// once, each judged by the error of its least-squares scale: an exact search
// of the window rather than a grid.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "quant/fp16.h"
#include "quant/quantize_impl.h"

namespace smolinfer::quant::ref::detail {

namespace {

constexpr size_t kMaxGroup = 32;  // values per group, at most
// A value's code changes at most once per unit of t * |x|; the windows below
// span at most 5.5 such units, so each value has at most 7 events.
constexpr size_t kMaxEvents = kMaxGroup * 8;
constexpr int kRefits = 4;  // rounds of re-rounding and refitting after a sweep
constexpr double kInf = std::numeric_limits<double>::infinity();

// The window of inverse scales: from kBelow (quantize_impl.h) up to where
// some value would be clipped by more than half a step. Clipping an outlier
// could lower the squared error a little further, but outliers matter in a
// network's weights, and the gain measured was under 0.3% rms.

// Value i's code grows by one step (away from zero) at inverse scale t > 0,
// as one integer: the bits of t (which order like t) with the value index in
// the lowest 5 bits of its mantissa. Sorting integers is several times faster
// than sorting pairs; events whose t differ only in those bits (2^-47
// relative) count as simultaneous, and ties go in index order, so every sort
// implementation applies them alike and the sums round alike everywhere.
using Event = uint64_t;
constexpr uint64_t kIndexBits = 5;
constexpr uint64_t kIndexMask = (uint64_t(1) << kIndexBits) - 1;
static_assert(kMaxGroup <= (size_t(1) << kIndexBits));

Event make_event(double t, uint32_t i) {
    uint64_t bits;
    std::memcpy(&bits, &t, sizeof bits);
    return (bits & ~kIndexMask) | i;
}
uint32_t event_index(Event e) { return uint32_t(e & kIndexMask); }
uint64_t event_time(Event e) { return e >> kIndexBits; }

// Appends the events of a value of magnitude a whose code magnitude is k at
// t_lo, up to `limit` and t_hi.
void add_events(Event* ev, size_t* ne, double a, int k, int limit, double t_hi, uint32_t i) {
    if (!(a > 0.0)) return;
    const double inv = 1.0 / a;
    for (; k < limit && *ne < kMaxEvents; ++k) {
        const double t = (k + 0.5) * inv;
        if (t > t_hi) break;
        ev[(*ne)++] = make_event(t, i);
    }
}

void sort_events(Event* ev, size_t ne) { std::sort(ev, ev + ne); }

// Best d >= 0 for y = sign * x ~ d * q, q in [lo, hi]; sxx = sum of y^2.
ScaleFit sweep_symmetric(const float* x, size_t n, double sign, int lo, int hi, double amax, double sxx) {
    double top = 0.0, bottom = 0.0;  // largest y and largest -y
    for (size_t i = 0; i < n; ++i) {
        const double y = sign * double(x[i]);
        if (!std::isfinite(y)) continue;
        top = std::max(top, y);
        bottom = std::max(bottom, -y);
    }
    const double t_lo = std::max(hi - kBelow, 0.5) / amax;
    double t_hi = std::numeric_limits<double>::max();
    if (top > 0.0) t_hi = std::min(t_hi, (hi + 0.5) / top);
    if (bottom > 0.0) t_hi = std::min(t_hi, (-lo + 0.5) / bottom);
    Event ev[kMaxEvents];
    size_t ne = 0;
    double mag[kMaxGroup];
    int code[kMaxGroup];  // code magnitudes, at t_lo to start with
    double sxq = 0.0, sqq = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double y = sign * double(x[i]);
        mag[i] = std::fabs(y);
        code[i] = 0;
        if (!(mag[i] > 0.0) || !std::isfinite(mag[i])) continue;  // code 0 throughout
        const int limit = y > 0.0 ? hi : -lo;
        code[i] = std::min(int(std::floor(mag[i] * t_lo + 0.5)), limit);
        sxq += mag[i] * code[i];
        sqq += double(code[i]) * code[i];
        add_events(ev, &ne, mag[i], code[i], limit, t_hi, uint32_t(i));
    }
    sort_events(ev, ne);
    double best = sqq > 0.0 ? sxq * sxq / sqq : 0.0;
    double best_d = sqq > 0.0 ? sxq / sqq : 0.0;
    for (size_t j = 0; j < ne;) {
        const uint64_t t = event_time(ev[j]);
        for (; j < ne && event_time(ev[j]) == t; ++j) {
            const uint32_t i = event_index(ev[j]);
            sxq += mag[i];
            sqq += 2.0 * code[i] + 1.0;
            ++code[i];
        }
        if (sxq * sxq > best * sqq) {
            best = sxq * sxq / sqq;
            best_d = sxq / sqq;
        }
    }
    if (!(best > 0.0)) return {0.0, kInf};
    return {sign * best_d, std::max(sxx - best, 0.0)};
}

struct Sums {
    double n, sx, sxx, sq, sqq, sxq;
};

// Least-squares scale and offset for the codes summed in s.
AffineFit fit_affine(const Sums& s, bool offset_le_zero) {
    auto error = [&](double a, double b) {
        const double e = s.sxx - 2.0 * a * s.sxq - 2.0 * b * s.sx + a * a * s.sqq + 2.0 * a * b * s.sq + s.n * b * b;
        return std::max(e, 0.0);
    };
    const double det = s.n * s.sqq - s.sq * s.sq;
    if (det > 0.0) {
        const double a = (s.n * s.sxq - s.sq * s.sx) / det;
        const double b = (s.sqq * s.sx - s.sq * s.sxq) / det;
        if (!(offset_le_zero && b > 0.0)) return {a, b, error(a, b)};
    }
    // All codes equal, or the offset wants to be positive: the better of a
    // pure scale and a pure offset.
    AffineFit best{0.0, s.sx / s.n, 0.0};
    if (offset_le_zero) best.offset = std::min(best.offset, 0.0);
    best.err = error(best.scale, best.offset);
    if (s.sqq > 0.0) {
        const double a = s.sxq / s.sqq;
        if (error(a, 0.0) < best.err) best = {a, 0.0, error(a, 0.0)};
    }
    return best;
}

}  // namespace

uint16_t half_of(double v) {
    if (std::isnan(v)) return 0;
    constexpr double kMaxHalf = 65504.0;
    return f32_to_fp16(float(std::clamp(v, -kMaxHalf, kMaxHalf)));
}

uint16_t half_next(uint16_t h, int dir) {
    const bool negative = (h & 0x8000u) != 0;
    const uint16_t mag = h & 0x7fffu;
    if (mag == 0) return dir > 0 ? uint16_t(0x0001) : uint16_t(0x8001);
    // Away from zero grows the magnitude, towards zero shrinks it.
    const bool grow = (dir > 0) != negative;
    if (grow) return mag >= 0x7bffu ? h : uint16_t(h + 1);
    return uint16_t(h - 1);
}

SignedFits symmetric_fits(const float* x, size_t n, int lo, int hi) {
    double amax = 0.0, sxx = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double a = std::fabs(double(x[i]));
        if (std::isfinite(a)) {
            amax = std::max(amax, a);
            sxx += a * a;
        }
    }
    if (!(amax > 0.0)) return {{0.0, kInf}, {0.0, kInf}};
    return {sweep_symmetric(x, n, 1.0, lo, hi, amax, sxx), sweep_symmetric(x, n, -1.0, lo, hi, amax, sxx)};
}

AffineFit affine_fit(const float* x, size_t n, int nmax, bool offset_le_zero) {
    double lo = kInf, hi = -kInf;
    Sums s{double(n), 0.0, 0.0, 0.0, 0.0, 0.0};
    for (size_t i = 0; i < n; ++i) {
        const double v = x[i];
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        s.sx += v;
        s.sxx += v * v;
    }
    const double base = offset_le_zero ? std::min(lo, 0.0) : lo;
    const double range = hi - base;
    if (!(range > 0.0) || !std::isfinite(range)) return {0.0, base, 0.0};

    // Sweep t with codes round((x - base) * t), clamped to nmax.
    const double t_lo = std::max(nmax - kBelow, 0.5) / range;
    const double t_hi = (nmax + 0.5) / range;
    Event ev[kMaxEvents];
    size_t ne = 0;
    int code[kMaxGroup];
    for (size_t i = 0; i < n; ++i) {
        const double z = double(x[i]) - base;
        code[i] = nearest_in(std::floor(z * t_lo + 0.5), 0, nmax);  // 0 for nan
        s.sq += code[i];
        s.sqq += double(code[i]) * code[i];
        s.sxq += double(x[i]) * code[i];
        add_events(ev, &ne, z, code[i], nmax, t_hi, uint32_t(i));
    }
    sort_events(ev, ne);
    AffineFit best = fit_affine(s, offset_le_zero);
    for (size_t j = 0; j < ne;) {
        const uint64_t t = event_time(ev[j]);
        for (; j < ne && event_time(ev[j]) == t; ++j) {
            const uint32_t i = event_index(ev[j]);
            s.sq += 1.0;
            s.sqq += 2.0 * code[i] + 1.0;
            s.sxq += x[i];
            ++code[i];
        }
        const AffineFit f = fit_affine(s, offset_le_zero);
        if (f.err < best.err) best = f;
    }

    // Re-round every value to the fitted grid and refit, while that helps.
    for (int round = 0; round < kRefits && best.scale > 0.0; ++round) {
        s.sq = s.sqq = s.sxq = 0.0;
        for (size_t i = 0; i < n; ++i) {
            const int q = nearest_in((double(x[i]) - best.offset) / best.scale, 0, nmax);
            s.sq += q;
            s.sqq += double(q) * q;
            s.sxq += double(x[i]) * q;
        }
        const AffineFit f = fit_affine(s, offset_le_zero);
        if (!(f.err < best.err)) break;
        best = f;
    }
    return best;
}

}  // namespace smolinfer::quant::ref::detail
