#include "scheduler.h"

namespace smolinfer::server {

using Clock = std::chrono::steady_clock;

std::optional<TicketItem> Ticket::next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !items_.empty(); })) return std::nullopt;
    TicketItem item = std::move(items_.front());
    items_.pop_front();
    return item;
}

void Ticket::cancel() {
    if (cancelled_.exchange(true)) return;
    if (on_cancel_) on_cancel_();
}

void Ticket::push(TicketItem item) {
    {
        std::lock_guard lock(mutex_);
        items_.push_back(std::move(item));
    }
    ready_.notify_one();
}

Scheduler::Scheduler(Session& session, int parallel, int queue_limit)
    : session_(session), context_(session.context()), queue_limit_(queue_limit), batch_(session, parallel) {
    thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() { shutdown(); }

std::shared_ptr<Ticket> Scheduler::submit(EmbeddingJob job) {
    auto ticket = std::make_shared<Ticket>();
    {
        std::lock_guard lock(mutex_);
        if (stopping_) {
            ticket->push(Rejected{"the server is shutting down", false});
            return ticket;
        }
        if (int(embed_queue_.size()) >= queue_limit_) return nullptr;
        embed_queue_.push_back({std::move(job), ticket});
    }
    wake_.notify_one();
    return ticket;
}

void Scheduler::embed(WaitingEmbedding w) {
    if (w.ticket->cancelled()) return;
    Embedded out;
    try {
        const size_t n = w.job.texts.empty() ? w.job.tokens.size() : w.job.texts.size();
        for (size_t i = 0; i < n; ++i) {
            const std::vector<TokenId> ids =
                w.job.texts.empty() ? w.job.tokens[i] : session_.tokenize(w.job.texts[i], true, false);
            try {
                out.vectors.push_back(session_.embed_tokens(ids, true));
            } catch (const Error& e) {
                throw Error(n > 1 ? "input[" + std::to_string(i) + "]: " + e.what() : std::string(e.what()));
            }
            out.prompt_tokens += int(ids.size());
        }
        {
            std::lock_guard lock(mutex_);
            counters_.prompt_tokens += out.prompt_tokens;
        }
        w.ticket->push(std::move(out));
    } catch (const Error& e) {
        w.ticket->push(Rejected{e.what(), true});
    } catch (const std::exception& e) {
        w.ticket->push(Rejected{e.what(), false});
    }
}

std::shared_ptr<Ticket> Scheduler::submit(Job job) {
    auto ticket = std::make_shared<Ticket>();
    ticket->on_cancel_ = [this] {
        {
            std::lock_guard lock(mutex_);
            cancel_pending_ = true;
        }
        wake_.notify_one();
    };
    {
        std::lock_guard lock(mutex_);
        if (stopping_) {
            ticket->push(Rejected{"the server is shutting down", false});
            return ticket;
        }
        if (int(queue_.size()) >= queue_limit_) return nullptr;
        queue_.push_back({std::move(job), ticket});
        counters_.queued = int(queue_.size());
    }
    wake_.notify_one();
    return ticket;
}

void Scheduler::shutdown() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
}

SchedulerCounters Scheduler::counters() const {
    std::lock_guard lock(mutex_);
    return counters_;
}

void Scheduler::run() {
    for (;;) {
        std::vector<Waiting> admits;
        std::optional<WaitingEmbedding> embedding;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] {
                return stopping_ || cancel_pending_ || batch_.running() > 0 || !embed_queue_.empty() ||
                       (!queue_.empty() && !batch_.full());
            });
            if (stopping_) break;
            cancel_pending_ = false;
            if (!embed_queue_.empty()) {
                embedding = std::move(embed_queue_.front());
                embed_queue_.pop_front();
            }
            while (!queue_.empty() && batch_.running() + int(admits.size()) < batch_.capacity()) {
                admits.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
            counters_.queued = int(queue_.size());
        }
        if (embedding) embed(std::move(*embedding));
        for (Waiting& w : admits) admit(std::move(w));
        drop_cancelled();
        if (batch_.running() > 0) {
            const auto t0 = Clock::now();
            std::vector<BatchEvent> events;
            try {
                events = batch_.step();
            } catch (const std::exception& e) {
                end_all(std::string("the engine failed: ") + e.what());
                continue;
            }
            const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
            long long tokens = 0;
            for (const BatchEvent& e : events) tokens += e.token >= 0;
            {
                std::lock_guard lock(mutex_);
                counters_.step_seconds += seconds;
                counters_.generated_tokens += tokens;
            }
            dispatch(std::move(events));
        }
        std::lock_guard lock(mutex_);
        counters_.running = batch_.running();
    }
    end_all(std::nullopt);
    std::lock_guard lock(mutex_);
    for (Waiting& w : queue_) w.ticket->push(Rejected{"the server is shutting down", false});
    queue_.clear();
    for (WaitingEmbedding& w : embed_queue_) w.ticket->push(Rejected{"the server is shutting down", false});
    embed_queue_.clear();
    counters_.queued = 0;
    counters_.running = 0;
}

void Scheduler::admit(Waiting w) {
    if (w.ticket->cancelled()) return;
    try {
        const std::vector<TokenId> prompt =
            w.job.messages ? session_.tokenize_chat(*w.job.messages, true, w.job.tools) : session_.tokenize(w.job.prompt);
        GenerateOptions options = w.job.options;
        // Until the context is full: the generation stops there by itself.
        if (!w.job.max_tokens_given) options.max_tokens = context_;
        const int id = batch_.add(prompt, options);
        running_[id] = {w.ticket, int(prompt.size()), 0};
        {
            std::lock_guard lock(mutex_);
            counters_.prompt_tokens += int(prompt.size());
        }
        w.ticket->push(Admitted{});
    } catch (const Error& e) {
        w.ticket->push(Rejected{e.what(), true});
    } catch (const std::exception& e) {
        w.ticket->push(Rejected{e.what(), false});
    }
}

void Scheduler::drop_cancelled() {
    for (auto it = running_.begin(); it != running_.end();) {
        if (it->second.ticket->cancelled()) {
            batch_.cancel(it->first);
            it = running_.erase(it);
        } else {
            ++it;
        }
    }
}

void Scheduler::dispatch(std::vector<BatchEvent> events) {
    for (BatchEvent& e : events) {
        auto it = running_.find(e.sequence);
        if (it == running_.end()) continue;  // cancelled during the step
        Running& r = it->second;
        if (e.token >= 0) r.generated_tokens++;
        const bool last = e.finished.has_value();
        r.ticket->push(std::move(e));
        if (last) running_.erase(it);
    }
}

// Every running sequence ends now: on shutdown with stop reason Stopped and
// the usage so far (a clean end of its stream), on an engine failure with it.
void Scheduler::end_all(const std::optional<std::string>& failure) {
    for (auto& [id, r] : running_) {
        batch_.cancel(id);
        if (failure) {
            r.ticket->push(Rejected{*failure, false});
            continue;
        }
        GenerationStats stats;
        stats.prompt_tokens = r.prompt_tokens;
        stats.generated_tokens = r.generated_tokens;
        stats.stop = StopReason::Stopped;
        r.ticket->push(BatchEvent{id, -1, "", std::nullopt, std::move(stats)});
    }
    running_.clear();
}

}  // namespace smolinfer::server
