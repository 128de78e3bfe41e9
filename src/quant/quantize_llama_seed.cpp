// llama.cpp's reference choice of group scales, re-implemented from its
// description (ggml-quants.c, make_qkx2_quants and make_qx_quants) in float32
// with the same operation order, so that seeding our K-quant search with it
// reproduces the reference quantizer's blocks. They are only seeds: the search
// keeps whatever candidate has the lowest squared error.
#include <cmath>

#include "quant/quantize_impl.h"

namespace smolinfer::quant::ref::detail {

namespace {

// Round to nearest, ties to even (llama.cpp's nearest_int, which is meant
// for |v| < 2^22); larger values, inf and nan saturate instead of overflowing.
int round_even(float v) {
    constexpr float kLimit = 4194304.0f;
    if (!(std::fabs(v) < kLimit)) return v > 0.0f ? int(kLimit) : -int(kLimit);
    return int(std::nearbyint(v));
}

int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace

// One group of 32 for x ~ scale * q - min, q in [0, nmax], min >= 0: the
// weights w = rms(x) + |x| favour large values; the inverse scale is tried at
// (nmax + rmin + rdelta * k) / (max - min) for k = 0..nstep, each with a
// weighted least-squares scale and min (min clamped to the origin), keeping the
// lowest weighted error.
void llama_affine_group(const float* x, int nmax, float rmin, float rdelta, int nstep, float* scale_out,
                        float* min_out) {
    constexpr int n = 32;
    float sum_x2 = 0.0f;
    for (int i = 0; i < n; ++i) sum_x2 += x[i] * x[i];
    const float av_x = std::sqrt(sum_x2 / n);
    float w[n];
    for (int i = 0; i < n; ++i) w[i] = av_x + std::fabs(x[i]);

    float lo = x[0], hi = x[0], sum_w = w[0], sum_x = w[0] * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (lo > 0.0f) lo = 0.0f;
    if (hi == lo) {
        *scale_out = 0.0f;
        *min_out = -lo;
        return;
    }
    float inv = float(nmax) / (hi - lo);
    float scale = 1.0f / inv;
    float best_err = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int q = clamp_int(round_even(inv * (x[i] - lo)), 0, nmax);
        const float diff = scale * float(q) + lo - x[i];
        best_err += w[i] * (diff * diff);
    }
    int q[n];
    for (int step = 0; step <= nstep; ++step) {
        inv = (rmin + rdelta * float(step) + float(nmax)) / (hi - lo);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; ++i) {
            q[i] = clamp_int(round_even(inv * (x[i] - lo)), 0, nmax);
            const float l = float(q[i]);
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0.0f)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (this_min > 0.0f) {
            this_min = 0.0f;
            this_scale = sum_xl / sum_l2;
        }
        float err = 0.0f;
        for (int i = 0; i < n; ++i) {
            const float diff = this_scale * float(q[i]) + this_min - x[i];
            err += w[i] * (diff * diff);
        }
        if (err < best_err) {
            best_err = err;
            scale = this_scale;
            lo = this_min;
        }
    }
    *scale_out = scale;
    *min_out = -lo;
}

// One group for x ~ scale * q, q in [-nmax, nmax - 1]: starts from the
// inverse scale that sends the largest magnitude to -nmax, then tries
// -(nmax + k/10) / max for k = -9..9, each with the least-squares scale
// weighted by x^2, keeping the best weighted fit. Returns the signed scale.
float llama_symmetric_group(const float* x, int n, int nmax) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        if (a > amax) {
            amax = a;
            max = x[i];
        }
    }
    if (amax < 1e-15f) return 0.0f;
    auto sums = [&](float inv, float* sumlx, float* suml2) {
        *sumlx = *suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_int(round_even(inv * x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            *sumlx += w * x[i] * float(l);
            *suml2 += w * float(l) * float(l);
        }
    };
    float sumlx, suml2;
    sums(-float(nmax) / max, &sumlx, &suml2);
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int k = -9; k <= 9; ++k) {
        if (k == 0) continue;
        sums(-(float(nmax) + 0.1f * float(k)) / max, &sumlx, &suml2);
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

}  // namespace smolinfer::quant::ref::detail
