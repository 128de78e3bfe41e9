#include "runtime/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SMOLINFER_PAUSE() _mm_pause()
#else
#define SMOLINFER_PAUSE() ((void)0)
#endif

#include "smolinfer/error.h"

namespace smolinfer::runtime {

namespace {
// About 50-100 microseconds of spinning before a worker goes to sleep.
constexpr int kSpinIterations = 20000;
}  // namespace

int default_thread_count() {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
    return 1;  // a WebAssembly build without threads cannot start one
#endif
    if (const char* env = std::getenv("SMOLINFER_THREADS"); env != nullptr && *env != '\0') {
        char* end = nullptr;
        const long n = std::strtol(env, &end, 10);
        if (*end != '\0' || n < 1 || n > 256) {
            throw Error("SMOLINFER_THREADS=" + std::string(env) + ": must be a thread count in 1..256");
        }
        return int(n);
    }
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : int(n);
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads), parts_(size_t(n_threads_)) {
    threads_.reserve(size_t(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_.store(true);
        epoch_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
}

void ThreadPool::worker() {
    uint64_t seen = 0;
    while (true) {
        uint64_t e = epoch_.load(std::memory_order_acquire);
        for (int spin = 0; e == seen && spin < kSpinIterations; ++spin) {
            if (spin % 1024 == 1023) std::this_thread::yield();  // let a busy machine's other work in
            SMOLINFER_PAUSE();
            e = epoch_.load(std::memory_order_acquire);
        }
        if (e == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            // Counted before the epoch is checked again (both sequentially
            // consistent): run() either sees this sleeper and wakes it, or
            // its new epoch is seen here.
            sleepers_.fetch_add(1);
            wake_.wait(lock, [&] { return epoch_.load() != seen; });
            sleepers_.fetch_sub(1);
            e = epoch_.load(std::memory_order_acquire);
        }
        seen = e;
        if (stop_.load()) return;
        run_shares();
    }
}

// Takes shares of the current job until none is left. A worker that comes
// late (or from an earlier job) finds the counter spent and takes none.
void ThreadPool::run_shares() {
    for (int i; (i = next_share_.fetch_add(1, std::memory_order_acq_rel)) < n_threads_;) {
        (*job_)(i, n_threads_);
        done_shares_.fetch_add(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
    if (n_threads_ == 1) {
        fn(0, 1);
        return;
    }
    // Order matters for a worker still leaving the last job: it can take a
    // share only once the counter is reset, and then sees this job.
    done_shares_.store(0, std::memory_order_relaxed);
    job_ = &fn;
    next_share_.store(0, std::memory_order_release);
    epoch_.fetch_add(1);
    // Waking costs a system call (in a browser, a futex notify): only when a
    // worker went to sleep. The lock keeps a worker from being between its
    // check of the epoch and its wait while this notifies.
    if (sleepers_.load() > 0) {
        { std::lock_guard<std::mutex> lock(mutex_); }
        wake_.notify_all();
    }
    // The caller takes shares too, its own first and then any a worker has
    // not started: on a busy machine a worker may wait long for a core, and
    // the job should not wait for it.
    std::exception_ptr failure;
    for (int i; (i = next_share_.fetch_add(1, std::memory_order_acq_rel)) < n_threads_;) {
        try {
            fn(i, n_threads_);
        } catch (...) {
            if (!failure) failure = std::current_exception();  // rethrown once every share is done
        }
        done_shares_.fetch_add(1, std::memory_order_acq_rel);
    }
    // Only shares a worker is running are left: spin briefly, then yield
    // (that worker may be waiting for this very core).
    for (int spin = 0; done_shares_.load(std::memory_order_acquire) != n_threads_; ++spin) {
        if (spin < kSpinIterations) {
            SMOLINFER_PAUSE();
        } else {
            std::this_thread::yield();
        }
    }
    if (failure) std::rethrow_exception(failure);
}

void ThreadPool::parallel_for_dynamic(size_t n, size_t chunk, const std::function<void(int, size_t, size_t)>& fn) {
    if (n_threads_ == 1 || n <= chunk) {
        if (n > 0) fn(0, 0, n);
        return;
    }
    // Parts end on whole chunks, so only the last range of all is short.
    const size_t n_chunks = (n + chunk - 1) / chunk;
    const size_t T = size_t(n_threads_);
    for (size_t i = 0; i < T; ++i) {
        parts_[i].next.store(n_chunks * i / T * chunk, std::memory_order_relaxed);
        parts_[i].end = std::min(n, n_chunks * (i + 1) / T * chunk);
    }
    // run() publishes the cursors (its epoch increment is a full barrier).
    run([&](int share, int) {
        for (size_t k = 0; k < T; ++k) {
            PartCursor& part = parts_[(size_t(share) + k) % T];
            for (size_t begin; (begin = part.next.fetch_add(chunk, std::memory_order_relaxed)) < part.end;) {
                fn(share, begin, std::min(part.end, begin + chunk));
            }
        }
    });
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn) {
    run([&](int i, int nt) {
        const size_t begin = n * size_t(i) / size_t(nt);
        const size_t end = n * size_t(i + 1) / size_t(nt);
        if (begin < end) fn(begin, end);
    });
}

}  // namespace smolinfer::runtime
