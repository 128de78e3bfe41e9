// Token-by-token generation: sample, stream the text, evaluate, repeat.
#include <algorithm>
#include <chrono>

#include "api/session_impl.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/matcher.h"
#include "grammar/vocab_tokens.h"
#include "sample/sampler.h"
#include "text/detokenizer.h"
#include "text/stop_strings.h"

namespace smolinfer {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The vocabulary as the matcher reads it, built once per session.
std::shared_ptr<const grammar::TokenTable> grammar_tokens(Session::Impl& s) {
    if (!s.grammar_tokens) s.grammar_tokens = grammar::vocab_token_table(s.vocab);
    return s.grammar_tokens;
}

}  // namespace

struct Generation::State {
    Session::Impl& s;
    GenerateOptions options;
    sample::Sampler sampler;
    text::StreamDecoder decoder;
    text::StopStrings stops;
    std::span<const float> logits;  // for the next token to sample
    GenerationStats stats;
    std::string piece;  // the text of the last event
    bool done = false;
    std::unique_ptr<grammar::Matcher> grammar;  // null: unconstrained

    State(Session::Impl& session, const GenerateOptions& o, const SamplingParams& sampling)
        : s(session), options(o), sampler(sampling, session.info.n_vocab), decoder(session.vocab), stops(o.stop) {}

    // Passes `text` through the stop strings; true when one appeared (then
    // `text` is what precedes it and the generation is over).
    bool stop_string_in(std::string& text) {
        if (stops.empty()) return false;
        auto r = stops.push(text);
        text = std::move(r.text);
        return r.stopped;
    }

    // The text still held back when the generation ends for `why`.
    std::string flush(StopReason why) {
        done = true;
        stats.stop = why;
        std::string tail = decoder.finish();
        if (stop_string_in(tail)) {
            stats.stop = StopReason::StopString;
        } else {
            tail += stops.finish();
        }
        return tail;
    }

    // Ends the generation; returns the held-back text as a last event, if any.
    std::optional<TokenEvent> finish(StopReason why) {
        piece = flush(why);
        if (piece.empty()) return std::nullopt;
        return TokenEvent{-1, piece};
    }

    TokenId sample(std::span<const uint64_t> allowed) {
        if (!options.logprobs) return sampler.sample(logits, allowed);
        stats.logprobs.emplace_back();
        return sampler.sample(logits, allowed, options.top_logprobs, stats.logprobs.back());
    }

    std::optional<TokenEvent> next() {
        if (done) return std::nullopt;
        const auto t0 = Clock::now();
        const auto timed = [&](std::optional<TokenEvent> e) {
            stats.decode_seconds += seconds_between(t0, Clock::now());
            return e;
        };
        if (s.stop_requested.load()) return timed(finish(StopReason::Stopped));
        if (stats.generated_tokens == options.max_tokens) return timed(finish(StopReason::MaxTokens));
        std::span<const uint64_t> allowed;
        if (grammar) {
            // With ignore_eos a complete grammar leaves nothing to generate.
            allowed = grammar->allowed(!options.ignore_eos);
            if (!grammar->any_allowed()) return timed(finish(StopReason::GrammarExhausted));
        }
        const TokenId tok = sample(allowed);
        if (!options.ignore_eos && s.vocab.is_end_of_generation(tok)) {
            if (options.logprobs) stats.logprobs.pop_back();  // not a generated token
            return timed(finish(StopReason::EndOfGeneration));
        }
        if (grammar) grammar->accept(tok);
        const TokenLogprobs* lp = options.logprobs ? &stats.logprobs.back() : nullptr;
        sampler.accept(tok);
        stats.tokens.push_back(tok);
        stats.generated_tokens++;
        piece = decoder.push(tok);
        if (stop_string_in(piece)) {
            done = true;
            stats.stop = StopReason::StopString;
            return timed(TokenEvent{tok, piece, lp});
        }
        // Evaluate the token now, so that the next call has its logits; the
        // last token of a generation is never evaluated.
        if (stats.generated_tokens < options.max_tokens) {
            if (s.sequence.size() == size_t(s.forward.n_ctx())) {
                // No room to evaluate it: this token is the last. Its text goes
                // out with this event, held-back text with it.
                piece += flush(StopReason::ContextFull);
                return timed(TokenEvent{tok, piece, lp});
            }
            const TokenId one[1] = {tok};
            logits = s.evaluate(one, false);
            stats.decode_evals++;
        }
        return timed(TokenEvent{tok, piece, lp});
    }
};

Generation::Generation(std::unique_ptr<State> state) : state_(std::move(state)) {}
Generation::~Generation() = default;
std::optional<TokenEvent> Generation::next() { return state_->next(); }
const GenerationStats& Generation::stats() const { return state_->stats; }

void Generation::cancel() {
    state_->done = true;
    state_->stats.stop = StopReason::Stopped;
}

std::unique_ptr<Generation> Session::start(std::span<const TokenId> prompt, const GenerateOptions& options) {
    Impl& s = *impl_;
    options.sampling.validate();
    if (options.max_tokens < 0) throw Error("bad option: max_tokens must be >= 0");
    if (options.top_logprobs < 0 || options.top_logprobs > 20) throw Error("bad option: top_logprobs must be in 0..20");
    if (prompt.empty()) throw Error("the prompt is empty");
    s.check_ids(prompt);
    if (prompt.size() > size_t(s.forward.n_ctx())) {
        throw Error("the prompt is " + std::to_string(prompt.size()) + " tokens but the context holds " +
                    std::to_string(s.forward.n_ctx()) + " (use a larger context, -c)");
    }
    // A bad grammar is reported before anything is evaluated.
    if (!options.grammar.empty() && !options.json_schema.empty()) {
        throw Error("bad option: give a grammar or a JSON schema, not both");
    }
    const std::string gbnf =
        options.json_schema.empty() ? options.grammar : grammar::json_schema_to_gbnf(options.json_schema);
    std::unique_ptr<grammar::Matcher> matcher;
    if (!gbnf.empty()) matcher = std::make_unique<grammar::Matcher>(grammar::parse_grammar(gbnf), grammar_tokens(s));
    s.stop_requested.store(false);

    // The penalty cannot look further back than the context holds.
    SamplingParams sampling = options.sampling;
    sampling.repeat_last_n = std::min(sampling.repeat_last_n, s.forward.n_ctx());
    auto state = std::make_unique<Generation::State>(s, options, sampling);
    state->grammar = std::move(matcher);
    GenerationStats& st = state->stats;
    st.prompt_tokens = int(prompt.size());
    st.stop = StopReason::MaxTokens;

    // Keep the cached prefix the prompt shares; at least one token is
    // evaluated so that there are logits to sample from.
    size_t keep = 0;
    while (keep < s.sequence.size() && keep + 1 < prompt.size() && s.sequence[keep] == prompt[keep]) ++keep;
    s.sequence.resize(keep);
    st.reused_tokens = int(keep);

    const auto t0 = Clock::now();
    state->logits = s.evaluate(prompt.subspan(keep), false);
    st.prefill_seconds = seconds_between(t0, Clock::now());
    for (const TokenId t : prompt) state->sampler.accept(t);
    if (options.max_tokens == 0) state->done = true;
    return std::unique_ptr<Generation>(new Generation(std::move(state)));
}

}  // namespace smolinfer
