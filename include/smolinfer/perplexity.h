// Perplexity as llama.cpp's llama-perplexity computes it: the text is cut
// into chunks of n_ctx tokens, each evaluated from an empty cache, and only
// the second half of each chunk is scored (every scored token sees at least
// n_ctx/2 tokens of context).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "smolinfer/session.h"

namespace smolinfer {

struct PerplexityChunk {
    double nll_sum = 0;  // sum of -log p(token) over the scored tokens
    int count = 0;
};

struct PerplexityResult {
    std::vector<PerplexityChunk> chunks;
    double ppl = 0;     // exp(total nll / total count)
    double stderr_ppl = 0;  // standard error of ppl from the per-token spread
};

// tokens: the whole text. The session's context must hold n_ctx tokens and
// its batch must divide into n_ctx. on_chunk (optional) sees the running
// result after each chunk. Throws smolinfer::Error when the text has fewer
// than 2 * n_ctx tokens.
PerplexityResult perplexity(Session& session, std::span<const TokenId> tokens, int n_ctx,
                            const std::function<void(const PerplexityResult&)>& on_chunk = {});

}  // namespace smolinfer
