// The engine thread: it alone touches the Session and the BatchGenerator.
// HTTP handler threads submit a job and read its ticket: first whether the
// engine admitted it (or why not), then its events until the last one.
//
//   loop { admit queued jobs into free sequences; step(); hand each event to its ticket }
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "smolinfer/batch.h"

namespace smolinfer::server {

// What a job generates from: a conversation (chat template) or raw text.
struct Job {
    std::optional<std::vector<ChatMessage>> messages;
    std::vector<Tool> tools;  // described by the chat template
    std::string prompt;  // when no messages
    GenerateOptions options;
    bool max_tokens_given = true;  // false: generate until the context is full
};

// What an embeddings job asks for: each input's vector, L2-normalised.
struct EmbeddingJob {
    std::vector<std::string> texts;            // inputs given as text
    std::vector<std::vector<TokenId>> tokens;  // or as token ids (then texts is empty)
};
// Its answer: one vector per input, and the tokens read.
struct Embedded {
    std::vector<std::vector<float>> vectors;
    int prompt_tokens = 0;
};

// The engine refused the job: `client_error` for bad input (a 400), else
// the server's fault or its shutting down.
struct Rejected {
    std::string message;
    bool client_error;
};
struct Admitted {};
using TicketItem = std::variant<Admitted, Rejected, BatchEvent, Embedded>;

// One job's channel from the engine thread to its handler thread.
class Ticket {
public:
    // Blocks until the next item or until `timeout` passes (nullopt).
    std::optional<TicketItem> next(std::chrono::milliseconds timeout);
    // The handler gave up (client gone): the engine ends the sequence at its next turn.
    void cancel();
    bool cancelled() const { return cancelled_.load(); }

    // Engine side.
    void push(TicketItem item);

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<TicketItem> items_;
    std::atomic<bool> cancelled_{false};
    std::function<void()> on_cancel_;  // wakes the engine thread
    friend class Scheduler;
};

struct SchedulerCounters {
    int queued = 0;   // waiting for a free sequence
    int running = 0;  // sequences in the batch
    long long prompt_tokens = 0;     // of every request admitted
    long long generated_tokens = 0;  // every token sampled, cancelled sequences' too
    double step_seconds = 0;         // time spent in step()
};

class Scheduler {
public:
    // Starts the engine thread. `queue_limit`: jobs that may wait for a
    // free sequence; submit() refuses more.
    Scheduler(Session& session, int parallel, int queue_limit);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Null when the queue is full. After shutdown() the ticket says so (Rejected).
    std::shared_ptr<Ticket> submit(Job job);
    // Embeddings run on the engine thread between generation steps, a job
    // (all its inputs) at a time; the ticket gets Embedded or Rejected.
    std::shared_ptr<Ticket> submit(EmbeddingJob job);

    // Ends every job (queued ones rejected, running ones given a last
    // event with stop reason Stopped) and stops the engine thread.
    void shutdown();

    SchedulerCounters counters() const;
    int context() const { return context_; }

private:
    struct Waiting {
        Job job;
        std::shared_ptr<Ticket> ticket;
    };
    struct WaitingEmbedding {
        EmbeddingJob job;
        std::shared_ptr<Ticket> ticket;
    };
    void run();
    void embed(WaitingEmbedding w);
    void admit(Waiting w);
    void drop_cancelled();
    void dispatch(std::vector<BatchEvent> events);
    void end_all(const std::optional<std::string>& failure);

    Session& session_;
    const int context_;
    const int queue_limit_;
    BatchGenerator batch_;  // engine thread only
    struct Running {
        std::shared_ptr<Ticket> ticket;
        int prompt_tokens;
        int generated_tokens;  // so far: the usage of a sequence ended early
    };
    std::map<int, Running> running_;  // engine thread only, by sequence id

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Waiting> queue_;
    std::deque<WaitingEmbedding> embed_queue_;
    bool stopping_ = false;
    bool cancel_pending_ = false;
    SchedulerCounters counters_;
    std::thread thread_;
};

}  // namespace smolinfer::server
