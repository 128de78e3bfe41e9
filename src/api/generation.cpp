// Token-by-token generation: sample, stream the text, evaluate, repeat.
#include <algorithm>
#include <chrono>

#include "api/session_impl.h"
#include "sample/sampler.h"
#include "text/detokenizer.h"

namespace smolinfer {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

struct Generation::State {
    Session::Impl& s;
    GenerateOptions options;
    sample::Sampler sampler;
    text::StreamDecoder decoder;
    std::span<const float> logits;  // for the next token to sample
    GenerationStats stats;
    std::string piece;  // the text of the last event
    bool done = false;

    State(Session::Impl& session, const GenerateOptions& o, const SamplingParams& sampling)
        : s(session), options(o), sampler(sampling, session.info.n_vocab), decoder(session.vocab) {}

    // Ends the generation; returns the held-back bytes as a last event, if any.
    std::optional<TokenEvent> finish(StopReason why) {
        done = true;
        stats.stop = why;
        piece = decoder.finish();
        if (piece.empty()) return std::nullopt;
        return TokenEvent{-1, piece};
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
        const TokenId tok = sampler.sample(logits);
        if (!options.ignore_eos && s.vocab.is_end_of_generation(tok)) return timed(finish(StopReason::EndOfGeneration));
        sampler.accept(tok);
        stats.tokens.push_back(tok);
        stats.generated_tokens++;
        piece = decoder.push(tok);
        // Evaluate the token now, so that the next call has its logits; the
        // last token of a generation is never evaluated.
        if (stats.generated_tokens < options.max_tokens) {
            if (s.sequence.size() == size_t(s.forward.n_ctx())) {
                // No room to evaluate it: this token is the last. Its text goes
                // out with this event; held-back bytes follow as a final one.
                done = true;
                stats.stop = StopReason::ContextFull;
                piece += decoder.finish();
                return timed(TokenEvent{tok, piece});
            }
            const TokenId one[1] = {tok};
            logits = s.evaluate(one, false);
            stats.decode_evals++;
        }
        return timed(TokenEvent{tok, piece});
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
    if (prompt.empty()) throw Error("the prompt is empty");
    s.check_ids(prompt);
    if (prompt.size() > size_t(s.forward.n_ctx())) {
        throw Error("the prompt is " + std::to_string(prompt.size()) + " tokens but the context holds " +
                    std::to_string(s.forward.n_ctx()) + " (use a larger context, -c)");
    }
    s.stop_requested.store(false);

    // The penalty cannot look further back than the context holds.
    SamplingParams sampling = options.sampling;
    sampling.repeat_last_n = std::min(sampling.repeat_last_n, s.forward.n_ctx());
    auto state = std::make_unique<Generation::State>(s, options, sampling);
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
