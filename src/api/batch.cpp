// Continuous batching: sequences join and leave between steps; each step
// evaluates one prompt chunk of every sequence that is still reading its
// prompt, then decodes one token of every other sequence in a single pass.
//
// Batch invariance: a token's keys, values and logits depend only on its
// position, its id, the cells before it and the arithmetic its forward pass
// gives it (Forward::arithmetic: single-token orders in a pass of one token,
// batch orders in a longer one, and which tokens the grouped kernels take;
// with flash attention also its path, which the prompt's length decides).
// Decoded tokens go through Forward::run_tokens, in the arithmetic of a
// single-token pass, as Session decodes. Prompts are evaluated on their own,
// in chunks that end where Session's chunks of a fresh prompt end
// (model::request_pass: multiples of the chunk size within llama.cpp's
// micro-batches, and the prompt's end). A new prompt keeps a
// cached cell only when it is its token and was computed in the arithmetic
// a fresh run of the new prompt gives it; and it keeps a prefix only if the
// first chunk it then reads gives every token the fresh arithmetic too (for
// grouped kernels, the kept prefix is a multiple of the group; and that
// chunk is not a single token where the fresh one is longer). By induction
// over positions, every cell and every logit equals a fresh run's.
#include "smolinfer/batch.h"

#include <algorithm>
#include <chrono>
#include <new>

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
        std::vector<TokenId> cells;  // the tokens whose keys and values are in `cache`
        std::vector<int> arithmetic;  // per cell, Forward::arithmetic of the pass that computed it
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
    std::vector<Sequence> seqs;
    uint64_t adds = 0;
    long long reused = 0;

    Impl(Session::Impl& session, int max_sequences)
        : s(session),
          chunk(session.forward.max_batch()),
          forward(session.model, session.cache.n_ctx(), std::max(chunk, max_sequences)) {
        forward.set_reference_threads(session.forward.reference_threads());
        seqs.reserve(size_t(max_sequences));
        for (int i = 0; i < max_sequences; ++i) seqs.emplace_back(s.model->config(), s.cache);
    }

    int n_ctx() const { return s.cache.n_ctx(); }

    // Token j of a pass of n tokens, token t of a prompt of n_prompt: the
    // matrices' arithmetic (Forward::arithmetic) and flash attention's path.
    int arithmetic(int j, int n, size_t t, size_t n_prompt) const {
        return 2 * forward.arithmetic(j, n) + (model::flash_path_for(t, n_prompt) == model::FlashPath::Tiled);
    }

    // The arithmetic a fresh Session gives token t of a prompt of n tokens:
    // it reads the prompt in chunks [0, chunk), [chunk, 2 chunk), ...
    int fresh_arithmetic(size_t t, size_t n) const {
        const model::RequestPass p = model::request_pass(t, n, size_t(chunk));
        return arithmetic(int(t - p.begin), int(p.end - p.begin), t, n);
    }

    // A decoded token's: one token in a pass and a request of its own.
    int decoded_arithmetic() const { return arithmetic(0, 1, 0, 1); }

    // Whether reading `prompt` from `keep` (first up to the fresh run's next
    // chunk end, then chunk by chunk) gives each token its fresh arithmetic.
    bool reads_as_fresh(size_t keep, std::span<const TokenId> prompt) const {
        const size_t end = model::request_pass(keep, prompt.size(), size_t(chunk)).end;
        for (size_t t = end; t-- > keep;) {
            if (arithmetic(int(t - keep), int(end - keep), t, prompt.size()) != fresh_arithmetic(t, prompt.size())) {
                return false;
            }
        }
        return true;
    }

    // Cells of `q` a new prompt can keep: the longest prefix of them that a
    // fresh run of the prompt would compute alike (same tokens, same
    // arithmetic), cut until the rest of the prompt reads as fresh, leaving
    // at least one prompt token to evaluate (for the logits).
    size_t reusable(const Sequence& q, std::span<const TokenId> prompt) const {
        size_t keep = 0;
        const size_t limit = std::min(q.cells.size(), prompt.size() - 1);
        while (keep < limit && q.cells[keep] == prompt[keep] &&
               q.arithmetic[keep] == fresh_arithmetic(keep, prompt.size())) {
            ++keep;
        }
        while (keep > 0 && !reads_as_fresh(keep, prompt)) --keep;
        return q.cache.reusable(keep);  // a sliding window's ring may have lapped it
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
        const std::span<const float> logits =
            forward.run(s.pool, q.cache, part, int(at), false, model::flash_path_for(at, q.prompt.size()));
        q.cells.insert(q.cells.end(), part.begin(), part.end());
        for (size_t j = 0; j < n; ++j) q.arithmetic.push_back(arithmetic(int(j), int(n), at + j, q.prompt.size()));
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
    q.arithmetic.resize(best_keep);
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
            q.cells.push_back(rows[r].token);
            q.arithmetic.push_back(b.decoded_arithmetic());
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
