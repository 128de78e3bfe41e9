// Internals of the weight quantizers (quantize_ref.cpp, quantize_kquant_ref.cpp,
// quantize_search.cpp, quantize_llama_seed.cpp): scale searches, half-precision
// helpers and the K-quant row functions. Not part of any public interface.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace smolinfer::quant::ref::detail {

// Half bits of v, clamped to the finite range so a scale never decodes to
// inf; NaN gives +0.
uint16_t half_of(double v);

// The adjacent finite half above (dir > 0) or below (dir < 0) h; stays at h
// past the largest finite value.
uint16_t half_next(uint16_t h, int dir);

// v rounded to the nearest integer (ties to even), clamped into [lo, hi];
// NaN gives lo. Never converts an out-of-range value to int.
inline int nearest_in(double v, int lo, int hi) {
    if (!(v > lo)) return lo;
    if (!(v < hi)) return hi;
    return int(std::nearbyint(v));
}

// The window of inverse scales the searches sweep starts where the largest
// value's code sits kBelow steps under the top code (low enough to meet the
// grid of a row that is already quantized, whose top code may sit a step or
// two under the limit).
inline constexpr double kBelow = 4.0;

// Scale search for x ~ d * q with integer codes q in [lo, hi] (lo < 0 < hi),
// for a group of at most 32 values. Visits every code vector
// q(t) = round(t * x) (clamped) met while the inverse scale t sweeps a window
// (from the largest value a few codes under the top to where some value
// would be clipped by more than half a step), for each sign of d, and
// returns the least-squares d of the best vector of each sign with its
// squared error (error +inf and d 0 when x is all zero).
struct ScaleFit {
    double d;
    double err;
};
struct SignedFits {
    ScaleFit positive, negative;
    const ScaleFit& best() const { return negative.err < positive.err ? negative : positive; }
};
SignedFits symmetric_fits(const float* x, size_t n, int lo, int hi);

// Scale and offset search for x ~ scale * q + offset, q in [0, nmax], for a
// group of at most 32 values: the same exact sweep of the inverse scale
// (codes counted from the smallest value, or from 0 if that is smaller),
// then a few rounds of re-rounding and least-squares refitting. With
// offset_le_zero the offset is kept <= 0 (the K-quant minimums).
struct AffineFit {
    double scale;
    double offset;
    double err;
};
AffineFit affine_fit(const float* x, size_t n, int nmax, bool offset_le_zero);

// The same search for x ~ d * q, q in [lo, hi], at evenly spaced inverse
// scales of the window rather than every code vector: the least-squares d of
// the best vector met, of either sign (0 for an all-zero x). Much cheaper;
// good for the seeds of a search that refines them (quantize_grid.cpp).
// n is a multiple of 8, at most 32.
double symmetric_grid_fit(const float* x, int n, int lo, int hi);

// llama.cpp's reference choice of group scales (make_qkx2_quants for Q4_K/Q5_K,
// make_qx_quants with rmse_type 1 for Q6_K), re-implemented. The K-quant
// search starts from them (Q6_K also from its own grid fits), so the result is
// never worse than the reference quantizer's on the same data.
void llama_affine_group(const float* x, int nmax, float rmin, float rdelta, int nstep, float* scale, float* min);
float llama_symmetric_group(const float* x, int n, int nmax);

void quantize_row_q4_K(const float* x, void* dst, size_t n);
void quantize_row_q5_K(const float* x, void* dst, size_t n);
void quantize_row_q6_K(const float* x, void* dst, size_t n);

}  // namespace smolinfer::quant::ref::detail
