// Sampling parameters, shared by the public API and the sampler.
#pragma once

#include <cstdint>

namespace smolinfer {

struct SamplingParams {
    float temperature = 0.8f;     // 0: greedy (always the most likely token)
    int top_k = 40;               // keep the k most likely tokens; 0: off
    float top_p = 0.95f;          // keep the smallest set with this much probability; 1: off
    float min_p = 0.05f;          // drop tokens below min_p x the top probability; 0: off
    float repeat_penalty = 1.0f;  // divide positive / multiply negative logits of recent tokens; 1: off
    int repeat_last_n = 64;       // how many recent tokens the penalty looks at
    uint64_t seed = 0;            // same seed, same prompt, same options: same tokens

    // Throws smolinfer::Error naming the first bad parameter.
    void validate() const;
};

}  // namespace smolinfer
