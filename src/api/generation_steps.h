// What one generation does between forward passes: sample from the last
// logits (grammar mask, bias, penalties), end on end-of-generation, length,
// a stop string or a finished grammar, and turn tokens into whole UTF-8
// text. The forward passes are the caller's: Session evaluates one sequence
// token by token, BatchGenerator many sequences in one pass.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "grammar/matcher.h"
#include "sample/sampler.h"
#include "smolinfer/session.h"
#include "text/detokenizer.h"
#include "text/stop_strings.h"
#include "text/vocab.h"

namespace smolinfer {

class GenerationSteps {
public:
    // Validates `options` and the prompt for a context of n_ctx positions
    // and builds the grammar, as Session::start documents (throws
    // smolinfer::Error). The prompt's tokens are recorded for the penalties.
    GenerationSteps(Session::Impl& session, std::span<const TokenId> prompt, const GenerateOptions& options, int n_ctx);

    // The next event, from the logits of the last evaluated token. `room`:
    // whether the sequence can evaluate one more token. Afterwards
    // to_evaluate() names the token the caller must evaluate (and pass
    // the logits of) before the next call, if any.
    std::optional<TokenEvent> next(std::span<const float> logits, bool room, bool stop_requested);
    std::optional<TokenId> to_evaluate() const { return to_evaluate_; }

    bool done() const { return done_; }
    // Ends now (stop reason Stopped); held-back bytes are dropped.
    void cancel();

    GenerationStats& stats() { return stats_; }
    const GenerationStats& stats() const { return stats_; }

private:
    bool stop_string_in(std::string& text);
    std::string flush(StopReason why);
    std::optional<TokenEvent> finish(StopReason why);
    TokenId sample(std::span<const float> logits, std::span<const uint64_t> allowed);
    void advance_grammar(TokenId tok);

    const text::Vocab& vocab_;
    GenerateOptions options_;
    sample::Sampler sampler_;
    text::StreamDecoder decoder_;
    text::StopStrings stops_;
    std::unique_ptr<grammar::Matcher> grammar_;  // null: unconstrained
    // Lazy grammar: the output's pieces while no trigger has appeared yet.
    bool awaiting_trigger_ = false;
    std::string before_trigger_;
    GenerationStats stats_;
    std::string piece_;  // the text of the last event
    std::optional<TokenId> to_evaluate_;
    bool done_ = false;
};

}  // namespace smolinfer
