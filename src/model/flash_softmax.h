// The chunk path's online softmax (flash_attention.cpp), shared with its
// AVX-512 form (flash_softmax_avx512.cpp).
#pragma once

#include <cmath>

namespace smolinfer::model {

// ggml's online softmax over positions, one score at a time: the largest
// score so far (M), the sum of exp(score - M) so far (S), and per step the
// factor for what is summed so far (ms) and the new position's weight (vs).
struct OnlineSoftmax {
    float max = -INFINITY;
    float sum = 0.0f;
    float rescale = 1.0f;
    float weight = 1.0f;

    // Returns whether s is a new maximum (the sums so far then need
    // `rescale`, and `weight` is 1).
    bool next(float s) {
        rescale = 1.0f;
        weight = 1.0f;
        const bool grew = s > max;
        if (grew) {
            const float old = max;
            max = s;
            rescale = std::exp(old - max);
        } else {
            weight = std::exp(s - max);
        }
        add(rescale, weight);
        return grew;
    }
    // S = S*ms + vs with two roundings, as llama.cpp's released CPU
    // backends compute it (the compiler multiplies in the new-maximum
    // branch and adds after the join; objdump of libggml-cpu-zen4.so).
    void add(float ms, float vs) { sum = sum * ms + vs; }
    float inverse_sum() const { return sum == 0.0f ? 0.0f : 1.0f / sum; }
};

// One head's online softmax over n scores, stepped ahead of its walk: the
// scores (times scale) become the positions' weights, and rescale[j]
// receives the factor the sums so far take before position j (1 where the
// maximum held). Returns the state after the last step.
using SoftmaxStepsFn = OnlineSoftmax (*)(float* scores, float* rescale, float scale, int n);

// The reference: one position at a time, libm's expf.
OnlineSoftmax softmax_steps_ref(float* scores, float* rescale, float scale, int n);

// The AVX-512 form (16 positions' exponentials at once, libm's expf bit for
// bit), or null when this build or CPU has none, or when this process's
// expf is not the one it reproduces.
SoftmaxStepsFn softmax_steps_avx512();

}  // namespace smolinfer::model
