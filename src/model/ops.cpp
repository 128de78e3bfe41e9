#include "model/ops.h"

#include <cmath>

namespace smolinfer::model {

void rms_norm(const float* x, const float* weight, float* y, size_t n, float eps) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(sum / float(n) + eps);
    // Normalize, then weigh: two roundings, as llama.cpp's two graph nodes do.
    for (size_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * weight[i];
}

void rope(float* head, int rope_dim, int pos, float base, float scale) {
    // Angles by repeated multiplication in float, as llama.cpp computes them;
    // pow() per pair would round differently.
    const float theta_scale = std::pow(base, -2.0f / float(rope_dim));
    float theta = float(pos);
    for (int i = 0; i < rope_dim; i += 2) {
        const float angle = scale * theta;
        const float c = std::cos(angle);
        const float s = std::sin(angle);
        const float x0 = head[i];
        const float x1 = head[i + 1];
        head[i] = x0 * c - x1 * s;
        head[i + 1] = x0 * s + x1 * c;
        theta *= theta_scale;
    }
}

void swiglu(float* gate, const float* up, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float g = gate[i];
        gate[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}

void softmax(float* x, size_t n) {
    float max = x[0];
    for (size_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

void add(float* y, const float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace smolinfer::model
