// Logits from probabilities, for the sampler tests.
#pragma once

#include <cmath>
#include <initializer_list>
#include <vector>

namespace smolinfer::test {

// log(p) + shift for each probability (softmax ignores the shift).
inline std::vector<float> logs(std::initializer_list<double> probs, double shift = 0.0) {
    std::vector<float> l;
    for (const double p : probs) l.push_back(float(std::log(p) + shift));
    return l;
}

}  // namespace smolinfer::test
