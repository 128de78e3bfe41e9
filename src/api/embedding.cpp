// Session::embed: an embedding model's vector for a text, as llama.cpp's
// encode/decode with embeddings on computes it, pooled, projected and
// normalised (model/pooling.h).
#include "api/session_impl.h"
#include "model/pooling.h"

namespace smolinfer {

std::vector<float> normalized(std::vector<float> v) {
    model::normalize_l2(v);
    return v;
}

std::span<const float> Session::Impl::encode(std::span<const TokenId> tokens) {
    // llama.cpp runs an encoder's sequence as one micro-batch, from an empty cache.
    cache.clear();
    return forward.run(pool, cache, tokens, 0, true, model::FlashPath::Chunk, model::PassOutput::Hidden);
}

std::vector<float> Session::Impl::embed(std::span<const TokenId> tokens, bool normalize) {
    const model::LlamaConfig& c = model->config();
    check_ids(tokens);
    if (tokens.empty()) throw Error("an empty input has no embedding");
    if (tokens.size() > size_t(cache.n_ctx())) {
        throw Error("the input has " + std::to_string(tokens.size()) + " tokens; the context holds " +
                    std::to_string(cache.n_ctx()) + (c.encoder ? " (an embedding model reads a text at once: split it)"
                                                               : " (use a larger context, -c)"));
    }
    if (c.pooling == model::Pooling::Rank) {
        throw Error("the model pools by rank (" + c.architecture + ".pooling_type 4): it is a reranker, which gives scores, not embeddings");
    }
    const int E = c.n_embd;
    std::vector<float> pooled;
    if (c.encoder) {
        const std::span<const float> rows = encode(tokens);
        pooled = model::pool_rows(c.pooling, rows.data(), int(tokens.size()), E);
    } else {
        // A decoder reads the text as a prompt; llama.cpp pools per micro-batch,
        // which only the last token's row (last, or none) survives whole.
        if (c.pooling == model::Pooling::Mean || c.pooling == model::Pooling::Cls) {
            throw Error(std::string("pooling '") + model::pooling_name(c.pooling) + "' on a decoder (" + c.architecture +
                        ") is not supported: only last-token pooling, or none");
        }
        cells.clear();
        cache.clear();
        const std::span<const float> last = evaluate(tokens, false, model::PassOutput::Hidden);
        pooled.assign(last.begin(), last.end());
    }
    std::vector<float> out = forward.project(pool, std::move(pooled));
    if (normalize) model::normalize_l2(out);
    return out;
}

std::vector<float> Session::embed(std::string_view text, bool normalize) {
    // As node-llama-cpp's embedding context: special tokens added, the
    // text's own never parsed as special.
    return impl_->embed(impl_->tokenizer->encode(text, true, false), normalize);
}

std::vector<float> Session::embed_tokens(std::span<const TokenId> tokens, bool normalize) {
    return impl_->embed(tokens, normalize);
}

}  // namespace smolinfer
