// Continuous batching: sequences join and leave between steps; each step
// evaluates one prompt chunk of every sequence that is still reading its
// prompt, then decodes one token of every other sequence in a single pass.
//
// Batch invariance: decoded tokens go through Forward::run_tokens, in the
// arithmetic of a single-token pass, as Session decodes; prompts are read
// on their own, in the chunks a fresh Session reads them in; and a new
// prompt keeps cached cells by Session's rule (api/cached_cells.h).
#include "smolinfer/batch.h"

#include <algorithm>
#include <chrono>
#include <new>

#include "api/cached_cells.h"
#include "api/generation_steps.h"
#include "api/session_impl.h"

namespace smolinfer {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

struct BatchGenerator::Impl {
    struct Sequence {
        model::KvCache cache;
        CachedCells cells;  // what `cache` holds
        std::unique_ptr<GenerationSteps> steps;  // null: free
        std::vector<TokenId> prompt;             // while reading it: the prompt, else empty
        uint64_t last_used = 0;                  // add() order, for picking which cache to overwrite

        // As the session's own cache: the same layout and sliding-window ring.
        explicit Sequence(const model::LlamaConfig& c, const model::KvCache& like)
            : cache(c.n_layer, like.n_ctx(), c.kv_dim(), like.layout(), like.ring(), c.swa_layers, c.n_swa) {}
        bool reading_prompt() const { return steps && cells.size() < prompt.size(); }
    };

    Session::Impl& s;
    int chunk;  // prompt tokens per pass, and the alignment of chunks
    model::Forward forward;
    CellArithmetic rule;
    std::vector<Sequence> seqs;
    uint64_t adds = 0;
    long long reused = 0;

    Impl(Session::Impl& session, int max_sequences)
        : s(session),
          chunk(session.forward.max_batch()),
          forward(session.model, session.cache.n_ctx(), std::max(chunk, max_sequences)),
          rule(forward, size_t(chunk)) {
        forward.set_reference_threads(session.forward.reference_threads());
        seqs.reserve(size_t(max_sequences));
        for (int i = 0; i < max_sequences; ++i) seqs.emplace_back(s.model->config(), s.cache);
    }

    int n_ctx() const { return s.cache.n_ctx(); }

    // Which cells a prompt keeps: at most what the rule allows, less where
    // a sliding window's ring has lapped them.
    size_t reusable(const Sequence& q, std::span<const TokenId> prompt) const {
        return q.cache.reusable(rule.reusable(q.cells, prompt));
    }

    // Evaluates the next chunk of q's prompt; at the end of the prompt,
    // samples the first token.
    void read_prompt_chunk(int id, Sequence& q, std::vector<BatchEvent>& events) {
        const auto t0 = Clock::now();
        const size_t at = q.cells.size();
        // Passes end where a fresh run's do, and flash attention takes each
        // token's path as a fresh run of the whole prompt would.
        const size_t n = model::request_pass(at, q.prompt.size(), size_t(chunk)).end - at;
        const auto part = std::span<const TokenId>(q.prompt).subspan(at, n);
        const model::FlashPath path = model::flash_path_for(at, q.prompt.size());
        const std::span<const float> logits = forward.run(s.pool, q.cache, part, int(at), false, path);
        for (size_t j = 0; j < n; ++j) q.cells.push(part[j], rule.of(int(j), int(n), path));
        GenerationStats& st = q.steps->stats();
        st.prefill_seconds += seconds_since(t0);
        if (q.cells.size() == q.prompt.size()) {
            q.prompt.clear();
            q.prompt.shrink_to_fit();
            emit(id, q, logits, events);
        }
    }

    // The next event of q from the logits of its last evaluated token; and
    // when that was the last token (nothing to evaluate), the end at once.
    void emit(int id, Sequence& q, std::span<const float> logits, std::vector<BatchEvent>& events) {
        const bool room = q.cells.size() < size_t(n_ctx());
        push(id, q, q.steps->next(logits, room, false), events);
        if (q.steps && !q.steps->to_evaluate()) push(id, q, q.steps->next({}, room, false), events);
    }

    void push(int id, Sequence& q, const std::optional<TokenEvent>& e, std::vector<BatchEvent>& events) {
        BatchEvent out{id, -1, {}, std::nullopt, std::nullopt};
        if (e) {
            out.token = e->token;
            out.text = std::string(e->text);
            if (e->logprobs) out.logprobs = *e->logprobs;
        }
        if (q.steps->done()) {
            out.finished = std::move(q.steps->stats());
            q.steps.reset();
        } else if (!e) {
            return;
        }
        events.push_back(std::move(out));
    }
};

BatchGenerator::BatchGenerator(Session& session, int max_sequences) {
    if (max_sequences < 1 || max_sequences > 256) {
        throw Error("bad option: sequences must be in 1..256 (got " + std::to_string(max_sequences) + ")");
    }
    Session::Impl& s = *session.impl_;
    try {
        impl_ = std::make_unique<Impl>(s, max_sequences);
    } catch (const std::bad_alloc&) {
        const model::LlamaConfig& c = s.model->config();
        const uint64_t each = model::KvCache::bytes_for(c.n_layer, s.cache.n_ctx(), c.kv_dim(), s.cache.layout(),
                                                        s.cache.ring(), c.swa_layers);
        throw Error("cannot allocate " + std::to_string(max_sequences) + " KV caches of " +
                    std::to_string(s.cache.n_ctx()) + " tokens (" + std::to_string(each >> 20) +
                    " MiB each): not enough memory (fewer sequences or a smaller context)");
    }
}

BatchGenerator::~BatchGenerator() = default;

int BatchGenerator::capacity() const { return int(impl_->seqs.size()); }

int BatchGenerator::running() const {
    return int(std::count_if(impl_->seqs.begin(), impl_->seqs.end(), [](const Impl::Sequence& q) { return bool(q.steps); }));
}

size_t BatchGenerator::memory_bytes() const {
    size_t bytes = impl_->forward.memory_bytes();
    for (const Impl::Sequence& q : impl_->seqs) bytes += size_t(q.cache.bytes());
    return bytes;
}

long long BatchGenerator::reused_tokens() const { return impl_->reused; }

int BatchGenerator::add(std::span<const TokenId> prompt, const GenerateOptions& options) {
    Impl& b = *impl_;
    const model::LlamaConfig& c = b.s.model->config();
    if (c.encoder) refuse_encoder(c);
    // Checks everything before taking a sequence.
    auto steps = std::make_unique<GenerationSteps>(b.s, prompt, options, b.n_ctx());
    int best = -1;
    size_t best_keep = 0;
    for (int i = 0; i < int(b.seqs.size()); ++i) {
        const Impl::Sequence& q = b.seqs[size_t(i)];
        if (q.steps) continue;
        const size_t keep = b.reusable(q, prompt);
        if (best < 0 || keep > best_keep || (keep == best_keep && q.last_used < b.seqs[size_t(best)].last_used)) {
            best = i;
            best_keep = keep;
        }
    }
    if (best < 0) throw Error("all " + std::to_string(b.seqs.size()) + " sequences are running");
    Impl::Sequence& q = b.seqs[size_t(best)];
    q.cells.resize(best_keep);
    if (best_keep == 0) q.cache.clear();
    q.prompt.assign(prompt.begin(), prompt.end());
    q.last_used = ++b.adds;
    steps->stats().reused_tokens = int(best_keep);
    b.reused += (long long)best_keep;
    q.steps = std::move(steps);
    return best;
}

void BatchGenerator::cancel(int sequence) {
    if (sequence < 0 || sequence >= capacity()) return;
    Impl::Sequence& q = impl_->seqs[size_t(sequence)];
    if (!q.steps) return;
    // The cells computed so far stay, each with its arithmetic, for reuse.
    q.steps.reset();
    q.prompt.clear();
}

std::vector<BatchEvent> BatchGenerator::step() {
    Impl& b = *impl_;
    std::vector<BatchEvent> events;

    // One token of every decoding sequence, in one pass.
    std::vector<model::SequenceToken> rows;
    std::vector<int> row_seq;
    for (int i = 0; i < int(b.seqs.size()); ++i) {
        Impl::Sequence& q = b.seqs[size_t(i)];
        if (!q.steps || q.reading_prompt()) continue;
        if (const auto tok = q.steps->to_evaluate()) {
            rows.push_back({*tok, &q.cache, int(q.cells.size())});
            row_seq.push_back(i);
        }
    }
    if (!rows.empty()) {
        const auto t0 = Clock::now();
        const std::span<const float> logits = b.forward.run_tokens(b.s.pool, rows);
        const double pass = seconds_since(t0);
        const size_t n_vocab = size_t(b.s.info.n_vocab);
        for (size_t r = 0; r < rows.size(); ++r) {
            Impl::Sequence& q = b.seqs[size_t(row_seq[r])];
            q.cells.push(rows[r].token, b.rule.decoded());
            GenerationStats& st = q.steps->stats();
            st.decode_seconds += pass;
            st.decode_evals++;
            b.emit(row_seq[r], q, logits.subspan(r * n_vocab, n_vocab), events);
        }
    }

    // One prompt chunk of every sequence still reading its prompt (a
    // sequence with nothing to generate ends without reading it).
    for (int i = 0; i < int(b.seqs.size()); ++i) {
        Impl::Sequence& q = b.seqs[size_t(i)];
        if (!q.steps || !q.reading_prompt()) continue;
        if (q.steps->done()) {
            events.push_back({i, -1, {}, std::nullopt, std::move(q.steps->stats())});
            q.steps.reset();
            q.prompt.clear();
            continue;
        }
        b.read_prompt_chunk(i, q, events);
    }
    return events;
}

}  // namespace smolinfer
