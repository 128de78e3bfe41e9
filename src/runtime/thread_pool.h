// A persistent pool for data-parallel loops. A job is n_threads shares; the
// calling thread and the workers take them as they come free, so a worker
// the OS has not scheduled yet does not hold the job up (the caller runs its
// share). Between jobs, workers spin briefly (jobs come back to back during
// a forward pass) and then sleep, so an idle engine burns no CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace smolinfer::runtime {

class ThreadPool {
public:
    // n_threads >= 1, including the caller.
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Calls fn(share, n_threads) once for every share 0 <= share < n_threads
    // and returns when all calls have returned. No two calls with the same
    // share overlap, and calls that overlap have different shares, so a
    // share may index per-thread scratch; but which thread runs a share, and
    // how many shares one thread runs, is not fixed. Not reentrant. An
    // exception from a share the caller ran is rethrown after every share is
    // done; fn must not throw on the other threads.
    void run(const std::function<void(int, int)>& fn);

    // Splits [0, n) into one contiguous range per thread: fn(begin, end).
    void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn);

    // [0, n) in ranges of `chunk`: fn(thread_index, begin, end) (one
    // thread: one range). Each thread walks its own contiguous part first,
    // then takes what is left of the others' parts. For work whose threads
    // do not finish together (a thread woken late, a slower core, unequal
    // items). Owning a part keeps each thread's reads one forward stream
    // (with interleaved ranges two-thread decode took about 30% longer: the
    // hardware prefetchers lose the stream at every switch, and every range
    // taken from one shared counter moves its cache line between the cores).
    void parallel_for_dynamic(size_t n, size_t chunk, const std::function<void(int, size_t, size_t)>& fn);

private:
    void worker();
    void run_shares();

    int n_threads_;
    std::vector<std::thread> threads_;
    const std::function<void(int, int)>* job_ = nullptr;
    std::atomic<uint64_t> epoch_{0};
    std::atomic<int> next_share_{0};   // shares of the job taken so far (may run past n_threads)
    std::atomic<int> done_shares_{0};
    std::atomic<int> sleepers_{0};  // workers waiting on wake_
    std::atomic<bool> stop_{false};
    // parallel_for_dynamic's part of each share: the next range to take and
    // the part's end. A line each, so that the owner's takes stay in its core.
    struct alignas(64) PartCursor {
        std::atomic<size_t> next{0};
        size_t end = 0;
    };
    std::vector<PartCursor> parts_;
    std::mutex mutex_;
    std::condition_variable wake_;
};

// Number of threads to use when the caller does not say: $SMOLINFER_THREADS
// when set (1..256; anything else throws smolinfer::Error), else the
// hardware's. make test sets it to 1 for suites that run tests side by side,
// so that their thread pools do not spin against each other.
int default_thread_count();

}  // namespace smolinfer::runtime
