#include "smolinfer/perplexity.h"

#include <algorithm>
#include <cmath>

namespace smolinfer {

namespace {

// -log softmax(logits)[target]
double nll(std::span<const float> logits, TokenId target) {
    float max = logits[0];
    for (const float l : logits) max = std::max(max, l);
    double sum = 0;
    for (const float l : logits) sum += std::exp(double(l - max));
    return std::log(sum) - double(logits[size_t(target)] - max);
}

}  // namespace

PerplexityResult perplexity(Session& session, std::span<const TokenId> tokens, int n_ctx,
                            const std::function<void(const PerplexityResult&)>& on_chunk) {
    if (n_ctx < 4) throw Error("perplexity: context must be at least 4 tokens");
    if (n_ctx > session.context()) {
        throw Error("perplexity: context " + std::to_string(n_ctx) + " exceeds the session's " +
                    std::to_string(session.context()));
    }
    if (tokens.size() < 2 * size_t(n_ctx)) {
        throw Error("perplexity: the text has " + std::to_string(tokens.size()) + " tokens; at least " +
                    std::to_string(2 * n_ctx) + " are needed for a context of " + std::to_string(n_ctx));
    }
    const int n_vocab = session.info().n_vocab;
    const size_t n_chunks = tokens.size() / size_t(n_ctx);
    const int first = n_ctx / 2;

    // What the model prepends to any text: its BOS, if it asks for one.
    const std::vector<TokenId> bos = session.tokenize("", true, false);
    const size_t batch = size_t(session.batch());
    PerplexityResult r;
    double total = 0, total_sq = 0;
    int count = 0;
    for (size_t c = 0; c < n_chunks; ++c) {
        std::vector<TokenId> chunk(tokens.begin() + ptrdiff_t(c * size_t(n_ctx)),
                                   tokens.begin() + ptrdiff_t((c + 1) * size_t(n_ctx)));
        if (!bos.empty()) chunk[0] = bos[0];  // as llama.cpp does when the model wants a BOS
        session.reset();
        PerplexityChunk pc;
        size_t at = 0;
        while (at < chunk.size()) {
            const size_t n = std::min(chunk.size() - at, batch);
            // Batches wholly before the scored half need no logits: their
            // rows would go through the output matrix (a fifth of SmolLM2's
            // weights, most of Gemma 3's) for nothing. The keys and values
            // they leave in the cache are the same either way.
            const bool scored = at + n > size_t(first);
            auto logits = session.evaluate(std::span<const TokenId>(chunk).subspan(at, n), scored);
            if (!scored) {
                at += n;
                continue;
            }
            for (size_t i = 0; i < n; ++i) {
                const size_t j = at + i;  // logits of position j predict token j + 1
                if (int(j) < first || j + 1 >= chunk.size()) continue;
                const double v = nll(logits.subspan(i * size_t(n_vocab), size_t(n_vocab)), chunk[j + 1]);
                pc.nll_sum += v;
                pc.count++;
                total += v;
                total_sq += v * v;
                count++;
            }
            at += n;
        }
        r.chunks.push_back(pc);
        const double mean = total / count;
        r.ppl = std::exp(mean);
        const double var = std::max(0.0, total_sq / count - mean * mean);
        r.stderr_ppl = count > 1 ? r.ppl * std::sqrt(var / (count - 1)) : 0;
        if (on_chunk) on_chunk(r);
    }
    return r;
}

}  // namespace smolinfer
