// Read bandwidth of this machine, for the decode roofline of `make bench`:
// T threads stream over one large buffer (each its own contiguous share),
// summing 64-bit integers with the widest SIMD the compiler targets
// (built with -march=native), several independent accumulators so that
// the loads, not the adds, set the pace. Best of R runs, in GB/s (1e9).
//
//   bandwidth [--mb 1024] [--threads 1,2] [--reps 7]
//
// Prints one JSON object:
//   {"bytes":..,"results":[{"threads":1,"best_gbps":..,"runs_gbps":[..]},..],"checksum":..}
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace {

using v4 = long long __attribute__((vector_size(32)));

// Sums n bytes (a multiple of 256) at p.
__attribute__((noinline)) long long sum_bytes(const char* p, size_t n) {
    v4 a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {}, a6 = {}, a7 = {};
    const v4* v = reinterpret_cast<const v4*>(p);
    const size_t count = n / sizeof(v4);
    for (size_t i = 0; i < count; i += 8) {
        a0 += v[i + 0];
        a1 += v[i + 1];
        a2 += v[i + 2];
        a3 += v[i + 3];
        a4 += v[i + 4];
        a5 += v[i + 5];
        a6 += v[i + 6];
        a7 += v[i + 7];
    }
    const v4 s = (a0 + a1) + (a2 + a3) + (a4 + a5) + (a6 + a7);
    return s[0] + s[1] + s[2] + s[3];
}

std::vector<int> parse_list(const char* s) {
    std::vector<int> out;
    std::string str(s);
    size_t pos = 0;
    while (pos <= str.size()) {
        const size_t comma = str.find(',', pos);
        const std::string item = str.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (!item.empty()) out.push_back(std::atoi(item.c_str()));
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    size_t mb = 1024;
    std::vector<int> thread_counts = {1, 2};
    int reps = 7;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--mb" && next) mb = size_t(std::atoll(argv[++i]));
        else if (a == "--threads" && next) thread_counts = parse_list(argv[++i]);
        else if (a == "--reps" && next) reps = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: %s [--mb 1024] [--threads 1,2] [--reps 7]\n", argv[0]);
            return 1;
        }
    }
    if (mb < 1 || reps < 1 || thread_counts.empty()) {
        std::fprintf(stderr, "bandwidth: bad arguments\n");
        return 1;
    }
    const size_t bytes = mb << 20;
    char* buf = static_cast<char*>(std::aligned_alloc(4096, bytes));
    if (!buf) {
        std::fprintf(stderr, "bandwidth: cannot allocate %zu MB\n", mb);
        return 1;
    }
#if defined(MADV_HUGEPAGE)
    // Huge pages where the kernel allows them: the TLB should not be what is measured.
    madvise(buf, bytes, MADV_HUGEPAGE);
#endif
    // Touch every page (non-zero bytes, so that nothing could be elided).
    for (size_t i = 0; i < bytes; i += 4096) std::memset(buf + i, int(1 + (i >> 12) % 251), 4096);

    long long checksum = 0;
    std::string json = "{\"bytes\":" + std::to_string(bytes) + ",\"results\":[";
    for (size_t k = 0; k < thread_counts.size(); ++k) {
        const int t = std::max(1, thread_counts[k]);
        // Each thread's share is a multiple of 256 bytes; the last takes the rest.
        const size_t share = (bytes / size_t(t)) & ~size_t(255);
        std::vector<double> runs;
        for (int r = 0; r < reps + 1; ++r) {  // the first run is a warm-up
            std::atomic<int> ready{0};
            std::atomic<bool> go{false};
            std::vector<long long> sums(size_t(t), 0);
            std::vector<std::thread> workers;
            for (int i = 1; i < t; ++i) {
                workers.emplace_back([&, i] {
                    const size_t begin = share * size_t(i);
                    const size_t n = i == t - 1 ? ((bytes - begin) & ~size_t(255)) : share;
                    ready.fetch_add(1);
                    while (!go.load(std::memory_order_acquire)) {
                    }
                    sums[size_t(i)] = sum_bytes(buf + begin, n);
                });
            }
            while (ready.load() != t - 1) {
            }
            const auto t0 = std::chrono::steady_clock::now();
            go.store(true, std::memory_order_release);
            sums[0] = sum_bytes(buf, t == 1 ? (bytes & ~size_t(255)) : share);
            for (auto& w : workers) w.join();
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            for (const long long x : sums) checksum += x;
            if (r > 0) runs.push_back(double(bytes) / s / 1e9);
        }
        const double best = *std::max_element(runs.begin(), runs.end());
        json += std::string(k ? "," : "") + "{\"threads\":" + std::to_string(t) + ",\"best_gbps\":" + std::to_string(best) +
                ",\"runs_gbps\":[";
        for (size_t i = 0; i < runs.size(); ++i) json += (i ? "," : "") + std::to_string(runs[i]);
        json += "]}";
    }
    json += "],\"checksum\":" + std::to_string(checksum) + "}";
    std::printf("%s\n", json.c_str());
    std::free(buf);
    return 0;
}
