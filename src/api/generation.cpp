// Token-by-token generation on the session's one sequence: the steps of
// GenerationSteps, each followed by a single-token forward pass.
#include <algorithm>
#include <chrono>

#include "api/generation_steps.h"
#include "api/session_impl.h"

namespace smolinfer {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

struct Generation::State {
    Session::Impl& s;
    GenerationSteps steps;
    std::span<const float> logits;  // for the next token to sample

    State(Session::Impl& session, std::span<const TokenId> prompt, const GenerateOptions& o)
        : s(session), steps(session, prompt, o, session.cache.n_ctx()) {}

    std::optional<TokenEvent> next() {
        if (steps.done()) return std::nullopt;
        const auto t0 = Clock::now();
        GenerationStats& stats = steps.stats();
        const bool room = s.cells.size() < size_t(s.cache.n_ctx());
        std::optional<TokenEvent> e = steps.next(logits, room, s.stop_requested.load());
        if (const auto tok = steps.to_evaluate()) {
            const TokenId one[1] = {*tok};
            logits = s.evaluate(one, false);
            stats.decode_evals++;
        }
        stats.decode_seconds += seconds_between(t0, Clock::now());
        return e;
    }
};

Generation::Generation(std::unique_ptr<State> state) : state_(std::move(state)) {}
Generation::~Generation() = default;
std::optional<TokenEvent> Generation::next() { return state_->next(); }
const GenerationStats& Generation::stats() const { return state_->steps.stats(); }
void Generation::cancel() { state_->steps.cancel(); }

std::unique_ptr<Generation> Session::start(std::span<const TokenId> prompt, const GenerateOptions& options) {
    Impl& s = *impl_;
    // Options, prompt and grammar are checked before anything is evaluated.
    auto state = std::make_unique<Generation::State>(s, prompt, options);
    s.stop_requested.store(false);
    GenerationStats& st = state->steps.stats();

    // Keep the cached cells a fresh run of the prompt would compute the
    // same way (api/cached_cells.h), and read the rest as that run would.
    const size_t keep = s.cache.reusable(s.rule.reusable(s.cells, prompt));
    s.cells.resize(keep);
    if (keep == 0) s.cache.clear();
    st.reused_tokens = int(keep);

    const auto t0 = Clock::now();
    state->logits = s.read(prompt, keep, false);
    st.prefill_seconds = seconds_between(t0, Clock::now());
    return std::unique_ptr<Generation>(new Generation(std::move(state)));
}

}  // namespace smolinfer
