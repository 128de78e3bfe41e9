// Sampling parameters, shared by the public API and the sampler.
#pragma once

#include <cstdint>
#include <vector>

namespace smolinfer {

struct LogitBias {
    int32_t token;
    float bias;  // added to the token's logit; -infinity bans the token
};

struct SamplingParams {
    float temperature = 0.8f;     // 0: greedy (always the most likely token)
    int top_k = 40;               // keep the k most likely tokens; 0: off
    float top_p = 0.95f;          // keep the smallest set with this much probability; 1: off
    float min_p = 0.05f;          // drop tokens below min_p x the top probability; 0: off
    float repeat_penalty = 1.0f;  // divide positive / multiply negative logits of recent tokens; 1: off
    // Subtracted from the logit of each token among the last repeat_last_n:
    // frequency_penalty x its count there, plus presence_penalty once (OpenAI's
    // and llama.cpp's semantics). 0: off.
    float frequency_penalty = 0.0f;
    float presence_penalty = 0.0f;
    int repeat_last_n = 64;       // how many recent tokens the penalties look at
    uint64_t seed = 0;            // same seed, same prompt, same options: same tokens
    // Added to the raw logits before anything else (a token listed twice gets
    // both). Ids are checked against the vocabulary when sampling starts.
    std::vector<LogitBias> logit_bias;

    // Throws smolinfer::Error naming the first bad parameter.
    void validate() const;
};

// The log-probability of one token under the distribution it was drawn
// from (see TokenLogprobs).
struct TokenChoice {
    int32_t token;
    float logprob;  // natural log; -infinity for a token that could not be drawn
};

// Log-probabilities for one sampled token. The distribution is the one the
// token was drawn from:
// - greedy (temperature 0): the softmax over the whole vocabulary of the
//   logits after logit bias and the penalties (at temperature 1);
// - otherwise: the renormalized distribution over the candidates that
//   top-k / top-p / min-p kept, after dividing by the temperature; tokens
//   the filters dropped have probability 0 and never appear in `top`.
struct TokenLogprobs {
    int32_t token;
    float logprob;
    std::vector<TokenChoice> top;  // the most likely alternatives, most likely first (ties: lower id first)
};

}  // namespace smolinfer
