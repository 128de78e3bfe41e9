// Matmul kernel speed, one weight format at a time, on SmolLM2's matrix
// shapes: nanoseconds per weight block for one token (decoding), four
// (prefill) and eight (eight sequences decoding together, as smolinfer
// serve batches them), the best of KERNEL_BENCH_REPS samples of >= 20 ms
// (the least disturbed run of a noisy machine). Where the matmul would use
// a tile, the same product as one dot per (row, token) is timed too, and
// the tile's speedup printed. Compiled natively and to WebAssembly (one per
// engine flavour, see web/wasm/CMakeLists.txt); bench/kernels.mjs runs the
// WebAssembly ones in headless Chromium and Node.
//
// Prints one JSON object per line: {"kernels", "type", "rows", "cols",
// "tokens", "ns_per_block"[, "dot_ns_per_block", "tile_speedup"]}.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "quant/kernels.h"
#include "support/random_blocks.h"

namespace {

using namespace smolinfer;
using Clock = std::chrono::steady_clock;

struct Shape {
    quant::Type type;
    int rows, cols;
};

double ns_per_block(const quant::MatmulKernel& k, const Shape& s, int tokens, int reps, bool allow_tile = true) {
    std::mt19937 rng(1);
    const auto w = test::random_blocks(s.type, size_t(s.rows) * size_t(s.cols), rng);
    const size_t w_row = quant::row_bytes(quant::traits(s.type), size_t(s.cols));
    const size_t a_row = size_t(s.cols) * 4;  // room for any activation format
    std::vector<uint8_t> act(a_row * size_t(tokens));
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x(size_t(s.cols));
    for (int t = 0; t < tokens; ++t) {
        for (auto& v : x) v = d(rng);
        k.quantize(x.data(), act.data() + size_t(t) * a_row, size_t(s.cols));
    }
    std::vector<float> out(size_t(s.rows) * size_t(tokens));
    const quant::Tile tile{w.data(), w_row, s.rows, act.data(), a_row, tokens, out.data(), size_t(s.rows)};
    // The matmul's choice for a batch of `tokens` (a multiple of the batch group here).
    const bool batched = k.dot_batched && tokens >= 2;
    const quant::TileFn tile_fn = batched ? k.tile_batched : k.tile;
    const quant::DotFn dot_fn = batched ? k.dot_batched : k.dot;
    const bool use_tile = allow_tile && tile_fn && tokens >= k.tile_min_tokens;
    auto once = [&] {
        if (use_tile) {
            tile_fn(size_t(s.cols), tile);
            return;
        }
        for (int t = 0; t < tokens; ++t) {
            for (int row = 0; row < s.rows; ++row) {
                out[size_t(t) * size_t(s.rows) + size_t(row)] =
                    dot_fn(size_t(s.cols), w.data() + size_t(row) * w_row, act.data() + size_t(t) * a_row);
            }
        }
    };
    // Untimed first: WebAssembly engines start with a baseline compiler and
    // swap in optimized code only for later calls.
    for (const auto w0 = Clock::now(); std::chrono::duration<double>(Clock::now() - w0).count() < 0.1;) once();
    // Each sample repeats the product for at least 20 ms: browsers' clocks
    // are coarse (100 us unless the page is cross-origin isolated).
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        double elapsed = 0;
        int calls = 0;
        do {
            once();
            ++calls;
            elapsed = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        } while (elapsed < 20e6);
        best = std::min(best, elapsed / calls);
    }
    const double blocks = double(s.rows) * double(s.cols) / double(quant::traits(s.type).block_elems) * tokens;
    return best / blocks;
}

}  // namespace

int main() {
    const char* reps_env = std::getenv("KERNEL_BENCH_REPS");
    const int reps = reps_env ? std::atoi(reps_env) : 10;
    const quant::Isa isas[] = {quant::best_isa(), quant::Isa::WasmSimdFast};
    // SmolLM2-135M: ffn_gate/up (1536 x 576), the output matrix slice, ffn_down (576 x 1536).
    const Shape shapes[] = {{quant::Type::Q4_1, 1536, 576}, {quant::Type::Q8_0, 1536, 576}, {quant::Type::Q5_0, 1536, 576},
                            {quant::Type::Q4_0, 1536, 576}, {quant::Type::Q4_K, 576, 1536}, {quant::Type::Q6_K, 576, 1536},
                            {quant::Type::Q5_K, 576, 1536}};
    for (const quant::Isa isa : isas) {
        if (!quant::isa_available(isa) || (isa != quant::best_isa() && isa != quant::Isa::WasmSimdFast)) continue;
        for (const Shape& s : shapes) {
            const auto k = quant::matmul_kernel(s.type, s.rows, s.cols, isa);
            for (const int tokens : {1, 4, 8}) {
                const double ns = ns_per_block(*k, s, tokens, reps);
                std::string dot;
                const bool batched = k->dot_batched && tokens >= 2;
                if ((batched ? k->tile_batched : k->tile) && tokens >= k->tile_min_tokens) {
                    const double dot_ns = ns_per_block(*k, s, tokens, reps, false);
                    char buf[96];
                    std::snprintf(buf, sizeof buf, ",\"dot_ns_per_block\":%.3f,\"tile_speedup\":%.2f", dot_ns, dot_ns / ns);
                    dot = buf;
                }
                std::printf("{\"kernels\":\"%s\",\"type\":\"%s\",\"rows\":%d,\"cols\":%d,\"tokens\":%d,\"ns_per_block\":%.3f%s}\n",
                            std::string(quant::isa_name(isa)).c_str(), std::string(quant::traits(s.type).name).c_str(),
                            s.rows, s.cols, tokens, ns, dot.c_str());
            }
        }
    }
    return 0;
}
