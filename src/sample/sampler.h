// Picking the next token from logits: repetition penalty, then greedy, or
// top-k -> top-p -> min-p -> temperature -> a seeded draw (llama.cpp's order).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sample/rng.h"
#include "smolinfer/sampling.h"

namespace smolinfer::sample {

using smolinfer::SamplingParams;

class Sampler {
public:
    Sampler(const SamplingParams& params, int n_vocab);

    // Chooses a token; does not record it (see accept). `allowed`, when not
    // empty, is a bitset over the vocabulary (bit i of word i/64): the other
    // tokens are treated as logit -inf (a grammar's constraint); at least one
    // token must be allowed.
    int32_t sample(std::span<const float> logits, std::span<const uint64_t> allowed = {});

    // Records a token (prompt or generated) for the repetition penalty.
    void accept(int32_t token);

    const SamplingParams& params() const { return params_; }

private:
    struct Candidate {
        int32_t id;
        float logit;
        float p;
    };
    void apply_repeat_penalty();
    void normalize();  // fills p from logits over the current candidates

    SamplingParams params_;
    Rng rng_;
    std::vector<Candidate> cand_;  // capacity n_vocab, reused every call
    std::vector<int32_t> history_;  // ring of the last repeat_last_n tokens
    size_t history_next_ = 0;
    std::vector<uint8_t> seen_;  // per vocab id, scratch for the penalty
};

}  // namespace smolinfer::sample
