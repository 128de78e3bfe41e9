// Picking the next token from logits: logit bias, then the penalties
// (repetition, frequency, presence), then greedy, or top-k -> top-p ->
// min-p -> temperature -> a seeded draw (llama.cpp's order).
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
    // Throws smolinfer::Error for bad parameters or a logit-bias id outside 0..n_vocab-1.
    Sampler(const SamplingParams& params, int n_vocab);

    // Chooses a token; does not record it (see accept). `allowed`, when not
    // empty, is a bitset over the vocabulary (bit i of word i/64): the other
    // tokens are treated as logit -inf (a grammar's constraint); at least one
    // token must be allowed.
    int32_t sample(std::span<const float> logits, std::span<const uint64_t> allowed = {});

    // The same choice, and the log-probabilities of the distribution it was
    // drawn from (see TokenLogprobs): the chosen token's and the `top_n`
    // most likely (fewer when fewer tokens remain).
    int32_t sample(std::span<const float> logits, std::span<const uint64_t> allowed, int top_n, TokenLogprobs& out);

    // Records a token (prompt or generated) for the penalties.
    void accept(int32_t token);

    const SamplingParams& params() const { return params_; }

private:
    struct Candidate {
        int32_t id;
        float logit;
        float p;
    };
    int32_t choose(std::span<const float> logits, std::span<const uint64_t> allowed, int top_n, TokenLogprobs* out);
    void apply_logit_bias();
    void apply_penalties();
    void normalize();  // fills p from logits over the current candidates
    int32_t draw();    // one seeded draw from the normalized candidates
    // Fills `out` from the logits of cand_[0..n), sorted by logit when `sorted`.
    void log_softmax(int32_t chosen, int top_n, bool sorted, TokenLogprobs& out);

    SamplingParams params_;
    Rng rng_;
    std::vector<Candidate> cand_;  // capacity n_vocab, reused every call
    std::vector<int32_t> history_;  // ring of the last repeat_last_n tokens
    size_t history_next_ = 0;
    std::vector<uint32_t> counts_;  // per vocab id, scratch for the penalties (all 0 between calls)
};

}  // namespace smolinfer::sample
