// Session's internals, shared by session.cpp and generation.cpp.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "model/llama.h"
#include "runtime/thread_pool.h"
#include "smolinfer/session.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace smolinfer {

// What generating, chatting or batching with an encoder says: it has no
// language-model head, so no request for text can be answered.
[[noreturn]] inline void refuse_encoder(const model::LlamaConfig& c) {
    throw Error("the model is an embedding model (" + c.architecture + "): it makes embeddings, not text");
}

struct Session::Impl {
    std::shared_ptr<const model::LlamaModel> model;
    std::vector<std::string> warnings;  // before vocab: the vocabulary's loading adds to it
    ModelInfo info;                     // before vocab: its loading time goes in
    text::Vocab vocab;
    std::unique_ptr<text::Tokenizer> tokenizer;
    text::ChatTemplate chat;
    std::string chat_warning;
    // The conversation rendered by the chat template (BOS text dropped where
    // the tokenizer adds BOS); throws for a base model.
    std::vector<text::PromptPiece> chat_pieces(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                               const std::vector<Tool>& tools) const;
    runtime::ThreadPool pool;
    model::Forward forward;
    model::KvCache cache;
    std::vector<TokenId> sequence;  // tokens whose keys and values are in the cache
    std::atomic<bool> stop_requested{false};
    // The vocabulary as grammars see it, built by the first generation with a grammar.
    std::shared_ptr<const grammar::TokenTable> grammar_tokens;

    Impl(std::shared_ptr<const model::LlamaModel> m, const SessionOptions& o, int n_ctx);

    void check_ids(std::span<const TokenId> ids) const {
        for (size_t i = 0; i < ids.size(); ++i) {
            if (!vocab.valid(ids[i])) {
                throw Error("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                            " is outside the vocabulary (0.." + std::to_string(vocab.size() - 1) + ")");
            }
        }
    }

    // An encoder's whole sequence in one pass: its final hidden states.
    std::span<const float> encode(std::span<const TokenId> tokens);
    std::vector<float> embed(std::span<const TokenId> tokens, bool normalize);

    std::span<const float> evaluate(std::span<const TokenId> tokens, bool all_logits,
                                    model::PassOutput output = model::PassOutput::Logits) {
        check_ids(tokens);
        if (tokens.empty()) throw Error("evaluate: no tokens");
        if (model->config().encoder) refuse_encoder(model->config());
        const size_t room = size_t(cache.n_ctx()) - sequence.size();
        if (tokens.size() > room) {
            throw Error("the context holds " + std::to_string(cache.n_ctx()) + " tokens: " +
                        std::to_string(sequence.size()) + " are in use and " + std::to_string(tokens.size()) +
                        " more do not fit (use a larger context, -c)");
        }
        const size_t batch = size_t(forward.max_batch());
        if (all_logits && tokens.size() > batch) {
            throw Error("evaluate: with all logits, at most " + std::to_string(batch) + " tokens per call");
        }
        // The tokens are one request to llama.cpp: chunks never cross its
        // micro-batches, whose sizes pick its flash-attention path.
        std::span<const float> logits;
        for (size_t at = 0; at < tokens.size();) {
            const model::RequestPass pass = model::request_pass(at, tokens.size(), batch);
            const auto chunk = tokens.subspan(at, pass.end - at);
            logits = forward.run(pool, cache, chunk, int(sequence.size()), all_logits,
                                 model::flash_path_for(at, tokens.size()), output);
            sequence.insert(sequence.end(), chunk.begin(), chunk.end());
            at = pass.end;
        }
        return logits;
    }
};

}  // namespace smolinfer
