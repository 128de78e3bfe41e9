// Session's internals, shared by session.cpp and generation.cpp.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "api/cached_cells.h"
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
    CachedCells cells;  // what `cache` holds
    CellArithmetic rule{forward, size_t(forward.max_batch())};  // which cells a new prompt keeps
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

    // Appends tokens to the sequence as one llama.cpp request (one
    // llama_decode call) and returns their logits (Session::evaluate).
    std::span<const float> evaluate(std::span<const TokenId> tokens, bool all_logits,
                                    model::PassOutput output = model::PassOutput::Logits) {
        return read(tokens, 0, all_logits, output);
    }
    // Reads request[from..] as a fresh run of the whole request reads it:
    // the same passes, flash attention's paths and arithmetic. The cache
    // must hold the request's first `from` tokens as that run computes them
    // (CellArithmetic::reusable decides which cells do).
    std::span<const float> read(std::span<const TokenId> request, size_t from, bool all_logits,
                                model::PassOutput output = model::PassOutput::Logits);
};

}  // namespace smolinfer
