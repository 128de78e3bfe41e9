// Grid scale fit for the K-quants' group seeds. The exact sweep of
// quantize_search.cpp visits every code vector of a window of inverse
// scales, but sorting its events costs microseconds per group. A seed is only
// the start of the super-block search (quantize_kquant_ref.cpp), so here the
// same window is sampled at kSteps evenly spaced inverse scales, each a
// branch-free pass over the group that the compiler vectorizes.
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "quant/quantize_impl.h"

namespace smolinfer::quant::ref::detail {

namespace {

constexpr int kSteps = 8;  // samples of the window, per sign (24: 0.25% lower rms, 40% slower Q6_K)
constexpr int kLanes = 8;  // n is a multiple of it

}  // namespace

double symmetric_grid_fit(const float* x, int n, int lo, int hi) {
    float amax = 0.0f, top = 0.0f, bottom = 0.0f;
    for (int i = 0; i < n; ++i) {
        top = x[i] > top ? x[i] : top;
        bottom = -x[i] > bottom ? -x[i] : bottom;
    }
    amax = top > bottom ? top : bottom;
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 0.0;
    double best = 0.0, best_d = 0.0;
    const float flo = float(lo), fhi = float(hi);
    for (const float sign : {1.0f, -1.0f}) {
        // For d > 0 the largest value maps to the top code, for d < 0 to the bottom one.
        const float up = sign > 0.0f ? top : bottom, down = sign > 0.0f ? bottom : top;
        const double t_lo = std::max(hi - kBelow, 0.5) / amax;
        double t_hi = 1e300;
        if (up > 0.0f) t_hi = std::min(t_hi, (hi + 0.5) / up);
        if (down > 0.0f) t_hi = std::min(t_hi, (-lo + 0.5) / down);
        if (!(t_hi > t_lo)) t_hi = t_lo;
        for (int k = 0; k < kSteps; ++k) {
            const float t = float(sign * (t_lo + (t_hi - t_lo) * k / (kSteps - 1)));
            // Sums in kLanes independent lanes: a float sum is not
            // reassociated by the compiler, lanes it can vectorize.
            float lx[kLanes] = {}, lq[kLanes] = {};
            for (int i0 = 0; i0 < n; i0 += kLanes) {
                for (int l = 0; l < kLanes; ++l) {
                    float c = x[i0 + l] * t;
                    c = c > flo ? c : flo;
                    c = c < fhi ? c : fhi;
                    c = std::nearbyint(c);
                    lx[l] += x[i0 + l] * c;
                    lq[l] += c * c;
                }
            }
            float sxq = 0.0f, sqq = 0.0f;
            for (int l = 0; l < kLanes; ++l) {
                sxq += lx[l];
                sqq += lq[l];
            }
            // Codes of t, scale 1/t: the least-squares scale is sxq / sqq,
            // and it removes sxq^2 / sqq of the squared error.
            if (sqq > 0.0f && double(sxq) * sxq > best * sqq) {
                best = double(sxq) * sxq / sqq;
                best_d = double(sxq) / sqq;
            }
        }
    }
    return best_d;
}

}  // namespace smolinfer::quant::ref::detail
