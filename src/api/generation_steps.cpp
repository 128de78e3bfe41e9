#include "api/generation_steps.h"

#include <algorithm>

#include "api/session_impl.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/vocab_tokens.h"

namespace smolinfer {

namespace {

// The vocabulary as the matcher reads it, built once per session.
std::shared_ptr<const grammar::TokenTable> grammar_tokens(Session::Impl& s) {
    if (!s.grammar_tokens) s.grammar_tokens = grammar::vocab_token_table(s.vocab);
    return s.grammar_tokens;
}

// Options checked before anything is evaluated; the sampling parameters
// with the penalty window cut to what the context can hold.
SamplingParams checked_sampling(Session::Impl& s, std::span<const TokenId> prompt, const GenerateOptions& options,
                                int n_ctx) {
    options.sampling.validate();
    if (options.max_tokens < 0) throw Error("bad option: max_tokens must be >= 0");
    if (options.top_logprobs < 0 || options.top_logprobs > 20) throw Error("bad option: top_logprobs must be in 0..20");
    if (prompt.empty()) throw Error("the prompt is empty");
    s.check_ids(prompt);
    if (prompt.size() > size_t(n_ctx)) {
        throw Error("the prompt is " + std::to_string(prompt.size()) + " tokens but the context holds " +
                    std::to_string(n_ctx) + " (use a larger context, -c)");
    }
    if (!options.grammar.empty() && !options.json_schema.empty()) {
        throw Error("bad option: give a grammar or a JSON schema, not both");
    }
    SamplingParams sampling = options.sampling;
    sampling.repeat_last_n = std::min(sampling.repeat_last_n, n_ctx);
    return sampling;
}

}  // namespace

GenerationSteps::GenerationSteps(Session::Impl& s, std::span<const TokenId> prompt, const GenerateOptions& options,
                                 int n_ctx)
    : vocab_(s.vocab),
      options_(options),
      sampler_(checked_sampling(s, prompt, options, n_ctx), s.info.n_vocab),
      decoder_(s.vocab),
      stops_(options.stop) {
    // A bad grammar is reported before anything is evaluated.
    const std::string gbnf =
        options.json_schema.empty() ? options.grammar : grammar::json_schema_to_gbnf(options.json_schema);
    if (!gbnf.empty()) grammar_ = std::make_unique<grammar::Matcher>(grammar::parse_grammar(gbnf), grammar_tokens(s));
    if (!options.grammar_triggers.empty()) {
        if (!grammar_) throw Error("bad option: grammar triggers need a grammar");
        for (const std::string& t : options.grammar_triggers) {
            if (t.empty()) throw Error("bad option: a grammar trigger is empty");
        }
        awaiting_trigger_ = true;
    }
    stats_.prompt_tokens = int(prompt.size());
    stats_.stop = StopReason::MaxTokens;
    for (const TokenId t : prompt) sampler_.accept(t);
    if (options.max_tokens == 0) done_ = true;
}

bool GenerationSteps::stop_string_in(std::string& text) {
    if (stops_.empty()) return false;
    auto r = stops_.push(text);
    text = std::move(r.text);
    return r.stopped;
}

std::string GenerationSteps::flush(StopReason why) {
    done_ = true;
    stats_.stop = why;
    std::string tail = decoder_.finish();
    if (stop_string_in(tail)) {
        stats_.stop = StopReason::StopString;
    } else {
        tail += stops_.finish();
    }
    return tail;
}

std::optional<TokenEvent> GenerationSteps::finish(StopReason why) {
    piece_ = flush(why);
    if (piece_.empty()) return std::nullopt;
    return TokenEvent{-1, piece_};
}

TokenId GenerationSteps::sample(std::span<const float> logits, std::span<const uint64_t> allowed) {
    if (!options_.logprobs) return sampler_.sample(logits, allowed);
    stats_.logprobs.emplace_back();
    return sampler_.sample(logits, allowed, options_.top_logprobs, stats_.logprobs.back());
}

void GenerationSteps::cancel() {
    done_ = true;
    to_evaluate_.reset();
    stats_.stop = StopReason::Stopped;
}

// As llama.cpp's lazy grammar: the pieces are collected until a trigger
// occurs in them; the grammar then takes the text from the trigger's start
// (the token that straddles it contributes its tail only).
void GenerationSteps::advance_grammar(TokenId tok) {
    if (!awaiting_trigger_) {
        grammar_->accept(tok);
        return;
    }
    before_trigger_ += grammar_->tokens().pieces[size_t(tok)];
    size_t first = std::string::npos;
    for (const std::string& t : options_.grammar_triggers) first = std::min(first, before_trigger_.find(t));
    if (first == std::string::npos) return;
    awaiting_trigger_ = false;
    try {
        grammar_->accept_text(std::string_view(before_trigger_).substr(first));
    } catch (const Error&) {
        // The trigger's token ran past what the grammar allows: nothing
        // can follow under it, so the output is left free.
        grammar_.reset();
    }
    before_trigger_.clear();
}

std::optional<TokenEvent> GenerationSteps::next(std::span<const float> logits, bool room, bool stop_requested) {
    to_evaluate_.reset();
    if (done_) return std::nullopt;
    if (stop_requested) return finish(StopReason::Stopped);
    if (stats_.generated_tokens == options_.max_tokens) return finish(StopReason::MaxTokens);
    std::span<const uint64_t> allowed;
    if (grammar_ && !awaiting_trigger_) {
        // With ignore_eos a complete grammar leaves nothing to generate.
        allowed = grammar_->allowed(!options_.ignore_eos);
        if (!grammar_->any_allowed()) return finish(StopReason::GrammarExhausted);
    }
    const TokenId tok = sample(logits, allowed);
    if (!options_.ignore_eos && vocab_.is_end_of_generation(tok)) {
        if (options_.logprobs) stats_.logprobs.pop_back();  // not a generated token
        return finish(StopReason::EndOfGeneration);
    }
    if (grammar_) advance_grammar(tok);
    const TokenLogprobs* lp = options_.logprobs ? &stats_.logprobs.back() : nullptr;
    sampler_.accept(tok);
    stats_.tokens.push_back(tok);
    stats_.generated_tokens++;
    piece_ = decoder_.push(tok);
    if (stop_string_in(piece_)) {
        done_ = true;
        stats_.stop = StopReason::StopString;
        return TokenEvent{tok, piece_, lp};
    }
    // The token is evaluated before the next call, so that it has logits;
    // the last token of a generation never is.
    if (stats_.generated_tokens < options_.max_tokens) {
        if (!room) {
            // This token is the last: its text goes out with this event,
            // held-back text with it.
            piece_ += flush(StopReason::ContextFull);
            return TokenEvent{tok, piece_, lp};
        }
        to_evaluate_ = tok;
    }
    return TokenEvent{tok, piece_, lp};
}

}  // namespace smolinfer
