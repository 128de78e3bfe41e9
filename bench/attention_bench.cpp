// Attention speed for one decoded token at depth, one KV head's query heads
// at a time, on the head shapes of the models we serve: nanoseconds per
// (query head, cached position), for flash attention's chunk path (what a
// token decoded alone takes) and the path without flash attention. The best
// of ATTENTION_BENCH_REPS samples of >= 20 ms (the least disturbed run of a
// noisy machine). The cache is larger than the last-level cache at the
// larger depths, as a real model's layers are together.
//
// ATTENTION_BENCH_MODEL=SmolLM2-1.7B (a name below) times that shape alone.
//
// Prints one JSON object per line: {"kernels", "path", "n_head", "n_head_kv",
// "head_dim", "depth", "ns_per_head_position"}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "model/attention.h"
#include "model/flash_attention.h"
#include "quant/fp16.h"
#include "quant/kernels.h"

namespace {

using namespace smolinfer;
using Clock = std::chrono::steady_clock;

struct Shape {
    const char* model;
    int n_head, n_head_kv, head_dim;
};

// Layers enough that one token's walk over all of them does not fit in cache.
constexpr int kLayers = 8;

double ns_per_head_position(const Shape& s, int depth, bool flash, int reps) {
    const int kv_dim = s.n_head_kv * s.head_dim;
    model::KvCache cache(kLayers, depth, kv_dim, model::KvCache::ValueLayout::Rows);
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 1.0f);
    // Rows cut from one pool of random halves at random offsets: drawing
    // every value took longer than the timing.
    std::vector<uint16_t> pool(size_t(1) << 16);
    for (uint16_t& h : pool) h = quant::f32_to_fp16(d(rng));
    std::uniform_int_distribution<size_t> at(0, pool.size() - size_t(kv_dim));
    for (int l = 0; l < kLayers; ++l) {
        for (int p = 0; p < depth; ++p) {
            std::copy_n(pool.data() + at(rng), kv_dim, cache.k(l, p));
            std::copy_n(pool.data() + at(rng), kv_dim, cache.v_row(l, p));
        }
    }
    const int group = s.n_head / s.n_head_kv;
    const model::AttentionShape shape{s.n_head, s.n_head_kv, s.head_dim};
    std::vector<float> q(size_t(s.n_head) * size_t(s.head_dim)), out(q.size());
    for (float& x : q) x = d(rng);
    std::vector<float> scratch(model::attention_scratch_floats(group, depth));
    const int pos = depth - 1;
    auto once = [&] {
        for (int l = 0; l < kLayers; ++l) {
            for (int kv = 0; kv < s.n_head_kv; ++kv) {
                const size_t off = size_t(kv * group) * size_t(s.head_dim);
                if (flash) {
                    model::flash_attend_heads(cache, l, shape, kv * group, group, pos, q.data() + off, out.data() + off,
                                              scratch.data());
                } else {
                    model::attend_heads(cache, l, shape, kv * group, group, pos, q.data() + off, out.data() + off,
                                        scratch.data(), model::AttentionOrder::Single);
                }
            }
        }
    };
    once();
    double best = 1e30;
    const double per_call = double(kLayers) * double(s.n_head) * double(depth);
    for (int r = 0; r < reps; ++r) {
        int calls = 0;
        const auto t0 = Clock::now();
        double ns = 0.0;
        do {
            once();
            ++calls;
            ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        } while (ns < 20e6);
        best = std::min(best, ns / calls / per_call);
    }
    return best;
}

}  // namespace

int main() {
    const char* env = std::getenv("ATTENTION_BENCH_REPS");
    const int reps = env ? std::max(1, std::atoi(env)) : 5;
    const Shape shapes[] = {
        {"SmolLM2-135M", 9, 3, 64},
        {"SmolLM2-1.7B", 32, 32, 64},
        {"Gemma-3-270M", 4, 1, 256},
    };
    const char* only = std::getenv("ATTENTION_BENCH_MODEL");  // a model's name: that one alone
    const std::string kernels(quant::isa_name(quant::best_isa()));
    for (const Shape& s : shapes) {
        if (only && std::string(only) != s.model) continue;
        for (const int depth : {512, 4096}) {
            for (const bool flash : {true, false}) {
                std::printf(
                    "{\"kernels\": \"%s\", \"model\": \"%s\", \"path\": \"%s\", \"n_head\": %d, \"n_head_kv\": %d, "
                    "\"head_dim\": %d, \"depth\": %d, \"ns_per_head_position\": %.3f}\n",
                    kernels.c_str(), s.model, flash ? "flash" : "plain", s.n_head, s.n_head_kv, s.head_dim, depth,
                    ns_per_head_position(s, depth, flash, reps));
                std::fflush(stdout);
            }
        }
    }
}
