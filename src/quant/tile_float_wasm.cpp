// WebAssembly SIMD tile for half-precision weight matrices (bert and
// nomic-bert files are F16) in batches: tinyBLAS's order, as
// dot_f16_f16_tinyblas (value i of a row goes to lane i % 16 of one chain,
// then hsum16), bit-identical in every flavour: a half times a half is exact
// in float, so a multiply then an add rounds as a fused multiply-add does.
//
// The 16 lanes are four groups of four, each its own chains: a block runs
// one group at a time (values 4g .. 4g + 3 of every 16) for 3 rows x 4
// tokens, 12 accumulators and 4 loaded vectors, what V8 keeps in the 16
// registers of x86. The activations are widened to floats once per matrix
// product, a block of rows once for all its tokens.
#include "quant/dot_wasm.h"

#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <vector>

#include "quant/fp16.h"
#include "quant/lanes.h"

namespace smolinfer::quant::wasm {

namespace {

constexpr int kF16Rows = 3;
constexpr int kF16Tokens = 4;

// R rows x T tokens over n values (n % 16 == 0): wf the rows' weights and
// act the tokens' activations as floats, one row of n each.
template <int R, int T>
void f16_block(size_t n, const Tile& t, const float* wf, const float* act, int r0, int t0) {
    alignas(16) float lanes[R * T][16];
    const float* a = act + size_t(t0) * n;
    for (int g = 0; g < 4; ++g) {
        v128_t acc[R][T];
        for (int r = 0; r < R; ++r) {
            for (int k = 0; k < T; ++k) acc[r][k] = wasm_f32x4_splat(0.0f);
        }
        for (size_t i = size_t(4 * g); i < n; i += 16) {
            v128_t wv[R];
            for (int r = 0; r < R; ++r) wv[r] = wasm_v128_load(wf + size_t(r) * n + i);
            for (int k = 0; k < T; ++k) {
                const v128_t av = wasm_v128_load(a + size_t(k) * n + i);
                for (int r = 0; r < R; ++r) acc[r][k] = wasm_f32x4_add(acc[r][k], wasm_f32x4_mul(wv[r], av));
            }
        }
        for (int r = 0; r < R; ++r) {
            for (int k = 0; k < T; ++k) wasm_v128_store(&lanes[r * T + k][4 * g], acc[r][k]);
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < T; ++k) t.out[size_t(t0 + k) * t.out_stride + size_t(r0 + r)] = hsum16(lanes[r * T + k]);
    }
}

using F16BlockFn = void (*)(size_t, const Tile&, const float*, const float*, int, int);

template <int R, int... T>
constexpr F16BlockFn f16_blocks_for_rows[] = {f16_block<R, T>...};

F16BlockFn f16_block_for(int rows, int tokens) {
    static constexpr const F16BlockFn* by_rows[kF16Rows] = {f16_blocks_for_rows<1, 1, 2, 3, 4>, f16_blocks_for_rows<2, 1, 2, 3, 4>,
                                                      f16_blocks_for_rows<3, 1, 2, 3, 4>};
    return by_rows[rows - 1][tokens - 1];
}

void tile_f16_tinyblas(size_t n, const Tile& t) {
    // The activations as floats, converted by each thread once per matrix
    // product: its tiles share activation_id.
    thread_local std::vector<float> act;
    thread_local uint64_t converted = 0;
    thread_local const uint8_t* converted_at = nullptr;
    thread_local size_t converted_values = 0;
    if (t.activation_id == 0 || t.activation_id != converted || t.a != converted_at ||
        converted_values < size_t(t.tokens) * n) {
        if (act.size() < size_t(t.tokens) * n) act.resize(size_t(t.tokens) * n);
        for (int k = 0; k < t.tokens; ++k) {
            fp16_to_f32_row(reinterpret_cast<const uint16_t*>(t.a + size_t(k) * t.a_stride), &act[size_t(k) * n], n);
        }
        converted = t.activation_id;
        converted_at = t.a;
        converted_values = size_t(t.tokens) * n;
    }
    thread_local std::vector<float> wf;
    if (wf.size() < size_t(kF16Rows) * n) wf.resize(size_t(kF16Rows) * n);
    for (int r0 = 0; r0 < t.rows; r0 += kF16Rows) {
        const int rows = t.rows - r0 < kF16Rows ? t.rows - r0 : kF16Rows;
        for (int r = 0; r < rows; ++r) {
            fp16_to_f32_row(reinterpret_cast<const uint16_t*>(t.w + size_t(r0 + r) * t.w_stride), &wf[size_t(r) * n], n);
        }
        for (int t0 = 0; t0 < t.tokens; t0 += kF16Tokens) {
            f16_block_for(rows, t.tokens - t0 < kF16Tokens ? t.tokens - t0 : kF16Tokens)(n, t, wf.data(), act.data(), r0, t0);
        }
    }
}

}  // namespace

TileFn f16_tile_batched() { return tile_f16_tinyblas; }

}  // namespace smolinfer::quant::wasm

#endif
