// The matmul kernel for a weight type: which format the activation row is
// quantized to, the quantizer, and the weight-row x activation-row dot.
// Every instruction-set variant computes bit-identical results to the
// scalar reference (same lanes, same fused multiply-adds, same sum order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "quant/types.h"

namespace smolinfer::quant {

using QuantizeRowFn = void (*)(const float* x, void* dst, size_t n);
using DotFn = float (*)(size_t n, const void* w, const void* a);

// A block of a matrix product, rows of a weight matrix times rows of
// quantized activations (n values each):
//   out[t * out_stride + r] = dot(w + r * w_stride, a + t * a_stride)
// for r < rows, t < tokens.
struct Tile {
    const uint8_t* w;
    size_t w_stride;  // bytes from one weight row to the next
    int rows;
    const uint8_t* a;
    size_t a_stride;  // bytes from one activation row to the next
    int tokens;
    float* out;
    size_t out_stride;  // floats from one token's outputs to the next
    // Names the activation rows' contents (0: unnamed). Tiles of one matrix
    // product share it, so a kernel may keep what it derived from the
    // activations (scales as floats, ...) for the next tile.
    uint64_t activation_id = 0;
};

// Asks for rows [r, r + count) of a tile's weights to be brought into the
// cache. Tiles call it a few rows ahead of the rows they compute: in a
// forward pass the weights come from memory, and the first load of each row
// otherwise waits for it (AVX-512: 40% of a tile's time with 8 tokens, perf).
// Rows past the tile's last are the next tile's, which the same thread
// usually takes; a prefetch never faults, so past the matrix it is harmless
// (the address is computed as an integer for that reason).
inline void prefetch_tile_rows(const Tile& tile, int r, int count) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(tile.w) + size_t(r) * tile.w_stride;
    const size_t bytes = size_t(count) * tile.w_stride;
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(reinterpret_cast<const void*>(first + off));
}
// Rows ahead of the ones being computed that tiles prefetch.
constexpr int kTilePrefetchRows = 4;

// One-token dots read each weight block once, in order; the hardware
// prefetcher alone left them waiting for memory (perf: decoding a
// 1.7B-shaped Q4_K_M model at 1 thread went from 0.94x to 1.06-1.15x
// llama.cpp's with this). A dot calls it for each block it starts, asking
// for `bytes` (a block's size, rounded up to lines) kDotPrefetchDistance
// bytes ahead: several blocks of the row or the next rows (4 KiB decoded
// the 1.7B shape 3-25% faster than 2 KiB, like 8 KiB, in interleaved runs;
// the AVX-512 one-token tiles, which stream four rows at once, decoded
// SmolLM2-135M 10-20% faster with 8 KiB than with 4).
// Prefetches never fault, so past the matrix's end they are harmless
// (integer address).
constexpr size_t kDotPrefetchDistance = 8192;
// Into L2 (prefetcht1), not L1: on Zen 4 streaming the weights with
// prefetcht0 kept SmolLM2-135M's decode at 95 tok/s on one thread, with
// prefetcht1 161 (interleaved runs; the 1.7B shape 15.6 -> 19.5). A line
// prefetched into L1 holds one of its few miss buffers until it arrives and
// evicts the activations; L2 tracks many more misses.
constexpr int kPrefetchLocality = 2;
inline void prefetch_ahead(const void* block, size_t bytes) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(block) + kDotPrefetchDistance;
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(reinterpret_cast<const void*>(at + off), 0, kPrefetchLocality);
}

// The one-token tiles that walk 8 rows' blocks side by side (block i of
// rows r..r+7, then block i + 1) read 8 rows at once, so a prefetch a fixed
// distance ahead of a row lands inside rows being read. They prefetch the
// next 8 rows instead, in address order: at block i, the slice of them that
// is 8 blocks long and starts 8 i blocks in. Walking 8 rows of the 1.7B
// shape with prefetcht0 8 KiB ahead decoded 20% slower than one row at a
// time; with this, it is as fast, and 20% faster with the L2 hint.
inline void prefetch_next_rows8(const void* first_row, size_t row_stride, size_t i, int r, size_t block_bytes) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(first_row) + 8 * row_stride + (8 * i + size_t(r)) * block_bytes;
    for (size_t off = 0; off < block_bytes; off += 64) __builtin_prefetch(reinterpret_cast<const void*>(at + off), 0, kPrefetchLocality);
}

// A fresh, never reused, nonzero Tile::activation_id.
uint64_t new_activation_id();
// Computes a whole tile, bit-identical to calling the kernel's dot for each
// (row, token), but sharing loads and conversions between them.
using TileFn = void (*)(size_t n, const Tile& tile);

struct MatmulKernel {
    Type weight;
    Type activation;         // block format the activation row is quantized to
    QuantizeRowFn quantize;  // float row -> activation format
    DotFn dot;               // weight row . quantized activation row
    // For batches, llama.cpp sums some formats in another order: F16/F32
    // (its GEMM, every token of a batch of two or more) and interleaved Q4_K
    // (tokens taken four at a time). Tokens [0, n - n % batch_group) of a
    // batch of n >= 2 use dot_batched; null when `dot` serves every token.
    DotFn dot_batched = nullptr;
    int batch_group = 1;
    // Faster whole-tile versions of dot / dot_batched for tile_min_tokens or
    // more tokens (the matmul uses the dot for fewer); null: loop over the dot.
    TileFn tile = nullptr;
    TileFn tile_batched = nullptr;
    // Fewest tokens for which the matmul uses the tile rather than the dot.
    int tile_min_tokens = 2;
};

enum class Isa {
    Reference,  // portable scalar code
    Avx2,       // x86-64 AVX2 + FMA
    Avx512Vnni, // AVX2 plus AVX-512 (F, BW, VL) with VNNI, for tiles
    WasmSimd,      // WebAssembly SIMD128, fused multiply-adds emulated exactly
    WasmSimdFast,  // WebAssembly SIMD128, multiply then add: faster, not bit-exact
    WasmRelaxed,   // WebAssembly relaxed SIMD: exact where relaxed_madd fuses
};

// The fastest variant this build and this CPU support.
Isa best_isa();
// Whether this build and CPU can run `isa`.
bool isa_available(Isa isa);
std::string_view isa_name(Isa isa);

// Kernel for a matrix of `rows` rows of `cols` values of `weight` type (the
// shape decides which of llama.cpp's kernels would run, and so its summation
// order); nullopt if weights of that type cannot be multiplied (Q8_1 and Q8_K
// exist only as activation formats).
std::optional<MatmulKernel> matmul_kernel(Type weight, int rows, int cols, Isa isa = best_isa());

}  // namespace smolinfer::quant
