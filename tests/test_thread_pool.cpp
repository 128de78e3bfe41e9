// The persistent thread pool (src/runtime/thread_pool.h): coverage of
// parallel_for, run()'s (index, count) contract, many back-to-back jobs, and
// waking / destroying workers that have gone to sleep.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/thread_pool.h"
#include "smolinfer/error.h"

namespace smolinfer::runtime {
namespace {

using namespace std::chrono_literals;

// Runs body on another thread; a deadlock fails the test and ends the
// process (a hung worker cannot be cancelled) instead of hanging CTest.
template <typename F>
void within(std::chrono::seconds limit, const char* what, F body) {
    auto done = std::make_shared<std::promise<void>>();
    auto fut = done->get_future();
    std::thread t([body, done]() mutable {
        body();
        done->set_value();
    });
    if (fut.wait_for(limit) != std::future_status::ready) {
        std::fprintf(stderr, "TIMEOUT: %s did not finish within %lld s (deadlock?)\n", what,
                     static_cast<long long>(limit.count()));
        std::fflush(stderr);
        std::_Exit(1);
    }
    t.join();
}

TEST(ThreadPool, SizeIsAtLeastOne) {
    EXPECT_EQ(ThreadPool(1).size(), 1);
    EXPECT_EQ(ThreadPool(3).size(), 3);
    EXPECT_EQ(ThreadPool(0).size(), 1);
    EXPECT_EQ(ThreadPool(-4).size(), 1);
    EXPECT_GE(default_thread_count(), 1);
}

// SMOLINFER_THREADS sets the default; a value that is not a count in
// 1..256 is an error that names it, not a silent fallback.
TEST(ThreadPool, DefaultCountFromTheEnvironment) {
    const char* saved = std::getenv("SMOLINFER_THREADS");
    const std::string keep = saved ? saved : "";
    ::setenv("SMOLINFER_THREADS", "3", 1);
    EXPECT_EQ(default_thread_count(), 3);
    for (const char* bad : {"0", "257", "two", "2x", "-1"}) {
        ::setenv("SMOLINFER_THREADS", bad, 1);
        try {
            default_thread_count();
            ADD_FAILURE() << "SMOLINFER_THREADS=" << bad << " was accepted";
        } catch (const smolinfer::Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("SMOLINFER_THREADS=") + bad), std::string::npos) << e.what();
        }
    }
    ::unsetenv("SMOLINFER_THREADS");
    EXPECT_GE(default_thread_count(), 1);
    if (saved) ::setenv("SMOLINFER_THREADS", keep.c_str(), 1);
}

TEST(ThreadPool, ParallelForCoversEveryIndexExactlyOnce) {
    within(30s, "parallel_for coverage", [] {
        for (int threads = 1; threads <= 4; ++threads) {
            ThreadPool pool(threads);
            for (const size_t n : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(7), size_t(1000)}) {
                std::vector<std::atomic<int>> hits(n);
                std::atomic<int> calls{0};
                std::atomic<bool> bad_range{false};
                pool.parallel_for(n, [&](size_t b, size_t e) {
                    calls++;
                    if (!(b < e && e <= n)) bad_range = true;
                    for (size_t i = b; i < e && i < n; ++i) hits[i]++;
                });
                EXPECT_FALSE(bad_range) << "threads " << threads << " n " << n;
                for (size_t i = 0; i < n; ++i) {
                    EXPECT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " index " << i;
                }
                // One contiguous range per thread at most, and none for empty work.
                EXPECT_LE(calls.load(), threads);
                if (n == 0) {
                    EXPECT_EQ(calls.load(), 0);
                }
                if (n >= size_t(threads)) {
                    EXPECT_EQ(calls.load(), threads) << "every thread gets work";
                }
            }
        }
    });
}

TEST(ThreadPool, RunCallsEveryShareOnceAndNeverOneShareTwiceAtATime) {
    within(30s, "run contract", [] {
        for (int threads = 1; threads <= 4; ++threads) {
            ThreadPool pool(threads);
            for (int rep = 0; rep < 200; ++rep) {
                std::vector<std::atomic<int>> seen(static_cast<size_t>(threads));
                std::vector<std::atomic<int>> running(static_cast<size_t>(threads));
                std::atomic<int> wrong_count{0}, out_of_range{0}, overlapping{0};
                pool.run([&](int i, int n) {
                    if (n != threads) wrong_count++;
                    if (i < 0 || i >= threads) {
                        out_of_range++;
                        return;
                    }
                    // Per-share scratch is safe: no other call holds share i now.
                    if (running[size_t(i)]++ != 0) overlapping++;
                    if (rep % 2) std::this_thread::sleep_for(std::chrono::microseconds(50));
                    seen[size_t(i)]++;
                    running[size_t(i)]--;
                });
                EXPECT_EQ(wrong_count.load(), 0);
                EXPECT_EQ(out_of_range.load(), 0);
                EXPECT_EQ(overlapping.load(), 0);
                for (int i = 0; i < threads; ++i) ASSERT_EQ(seen[size_t(i)].load(), 1) << "share " << i << ", rep " << rep;
            }
        }
    });
}

TEST(ThreadPool, RunReturnsOnlyAfterAllCallsReturned) {
    within(30s, "run completion", [] {
        ThreadPool pool(4);
        for (int rep = 0; rep < 50; ++rep) {
            std::atomic<int> finished{0};
            pool.run([&](int i, int) {
                if (i != 0) std::this_thread::sleep_for(std::chrono::microseconds(200 * i));
                finished++;
            });
            ASSERT_EQ(finished.load(), 4) << "rep " << rep;
        }
    });
}

TEST(ThreadPool, ThousandsOfBackToBackJobs) {
    within(60s, "back-to-back jobs", [] {
        // Fewer jobs for the larger pools: on a 2-core machine they are
        // oversubscribed and every job costs scheduler round trips.
        for (int threads = 2; threads <= 4; ++threads) {
            const int jobs = threads == 2 ? 1500 : 250;
            ThreadPool pool(threads);
            std::vector<long> acc(1000, 0);
            uint64_t total = 0;
            for (int job = 0; job < jobs; ++job) {
                std::atomic<uint64_t> sum{0};
                pool.parallel_for(acc.size(), [&](size_t b, size_t e) {
                    uint64_t local = 0;
                    for (size_t i = b; i < e; ++i) {
                        acc[i] += 1;  // each index owned by one thread in this job
                        local += i;
                    }
                    sum += local;
                });
                total += sum.load();
            }
            // Sum of 0..999 = 499500 per job.
            EXPECT_EQ(total, uint64_t(499500) * uint64_t(jobs));
            for (const long a : acc) ASSERT_EQ(a, jobs);
        }
    });
}

TEST(ThreadPool, JobsAfterWorkersHaveGoneToSleep) {
    within(30s, "wake after sleep", [] {
        ThreadPool pool(3);
        for (int round = 0; round < 3; ++round) {
            // Well past the spin phase (tens of microseconds): workers now wait
            // on the condition variable and must be woken.
            std::this_thread::sleep_for(120ms);
            std::vector<std::atomic<int>> hits(100);
            pool.parallel_for(hits.size(), [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i) hits[i]++;
            });
            for (auto& h : hits) ASSERT_EQ(h.load(), 1);
        }
    });
}

TEST(ThreadPool, DestroyedWhileWorkersSleep) {
    within(30s, "destruction while idle", [] {
        {
            ThreadPool pool(4);
            std::this_thread::sleep_for(120ms);  // never used; workers asleep
        }
        {
            ThreadPool pool(4);
            std::atomic<int> n{0};
            pool.run([&](int, int) { n++; });
            EXPECT_EQ(n.load(), 4);
            std::this_thread::sleep_for(120ms);  // used once, then asleep
        }
        {
            ThreadPool pool(2);
            pool.run([](int, int) {});  // destroyed right away, workers possibly still spinning
        }
    });
}

// Dynamic ranges: every index exactly once, in ranges of the chunk size
// (the last one shorter; one thread takes all at once), each on a valid
// thread, whatever thread is slow.
TEST(ThreadPool, DynamicRangesCoverEveryIndexOnce) {
    within(30s, "dynamic ranges", [] {
        for (const int threads : {1, 2, 3}) {
            ThreadPool pool(threads);
            for (const size_t n : {size_t(0), size_t(1), size_t(7), size_t(64), size_t(1001)}) {
                for (const size_t chunk : {size_t(1), size_t(5), size_t(64), size_t(2000)}) {
                    std::vector<std::atomic<int>> hits(n);
                    std::atomic<bool> bad_range{false}, bad_thread{false};
                    pool.parallel_for_dynamic(n, chunk, [&](int thread, size_t b, size_t e) {
                        if (thread < 0 || thread >= threads) bad_thread = true;
                        const size_t most = threads == 1 ? n : chunk;
                        if (e <= b || e - b > most || (e - b < most && e != n)) bad_range = true;
                        if (thread == 1) std::this_thread::sleep_for(1ms);  // a slow thread
                        for (size_t i = b; i < e; ++i) hits[i]++;
                    });
                    EXPECT_FALSE(bad_range) << "n " << n << " chunk " << chunk;
                    EXPECT_FALSE(bad_thread);
                    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "n " << n << " chunk " << chunk;
                }
            }
        }
    });
}

}  // namespace
}  // namespace smolinfer::runtime
