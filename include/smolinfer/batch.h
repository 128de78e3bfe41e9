// Many generations on one model at once: every step evaluates one prompt
// chunk of each newly added sequence and decodes one token of every other
// sequence, all of them in a single forward pass (continuous batching).
//
//   smolinfer::BatchGenerator batch(*session, 8);
//   int a = batch.add(session->tokenize_chat(...), options);
//   while (batch.running() > 0) {
//       for (const smolinfer::BatchEvent& e : batch.step()) { ... }
//   }
//
// Batch invariance: a sequence's tokens (greedy, or sampled with a seed) and
// their log-probabilities are bit for bit what it would get alone, whatever
// else is in the batch and whenever it joined: each token of the batch is
// computed in the arithmetic of a single-token pass, prompts are evaluated
// in chunks that end where a fresh run's chunks end, and cached cells are
// reused only where they were computed in the arithmetic a fresh run would
// use. Alone
// means a fresh Session's generate() (or alone in a fresh BatchGenerator).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "smolinfer/session.h"

namespace smolinfer {

struct BatchEvent {
    int sequence;        // the id add() returned
    TokenId token;       // -1 for held-back text released at the end
    std::string text;    // as TokenEvent::text (may be empty)
    std::optional<TokenLogprobs> logprobs;  // when GenerateOptions::logprobs and token >= 0
    // Set on a sequence's last event: why and how it ended. The id is free
    // for reuse after this event.
    std::optional<GenerationStats> finished;
};

class BatchGenerator {
public:
    // Uses the session's model, vocabulary and threads; each of the
    // `max_sequences` sequences has its own KV cache of session.context()
    // positions. The session must outlive the generator and must not
    // generate while the generator is in use. Throws smolinfer::Error when
    // max_sequences is out of 1..256 or the caches cannot be allocated.
    BatchGenerator(Session& session, int max_sequences);
    ~BatchGenerator();
    BatchGenerator(const BatchGenerator&) = delete;
    BatchGenerator& operator=(const BatchGenerator&) = delete;

    int capacity() const;
    int running() const;  // sequences added and not yet finished or cancelled
    bool full() const { return running() == capacity(); }
    size_t memory_bytes() const;  // the KV caches and scratch

    // Starts a sequence. Validates prompt and options as Session::start
    // does (throws smolinfer::Error; also when full()). The prompt is
    // evaluated by the next step() calls, one chunk per step. The sequence
    // reuses the KV cells of a recent sequence whose tokens began with the
    // same ones (the longest shared prefix that a fresh run would compute
    // the same way: see batch invariance).
    int add(std::span<const TokenId> prompt, const GenerateOptions& options);

    // One step for every running sequence. The last event of a sequence
    // carries `finished`. May return no events (a step that only evaluated
    // prompt chunks).
    std::vector<BatchEvent> step();

    // Ends a sequence now (client gone); no further events for it. Unknown
    // or finished ids are ignored.
    void cancel(int sequence);

    // Prompt tokens served from cached cells, over all add() calls so far.
    long long reused_tokens() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace smolinfer
