// WebAssembly SIMD kernels (builds with -msimd128; with -mrelaxed-simd the
// relaxed-SIMD ones): dots and tiles for every quantized weight format
// SmolLM2 files use, 32-value formats in dot_wasm.cpp, K-quants in
// dot_kquant_wasm.cpp. See wasm_simd.h for the flavours.
#pragma once

#include "quant/kernels.h"

namespace smolinfer::quant::wasm {

#if defined(__wasm_simd128__)
// Tokens whose dots share one pass over a weight row in the tiles.
inline constexpr int kMaxTokens = 4;

// Replaces k's dot and tile with this build's kernels for `isa` (WasmSimd,
// WasmSimdFast or WasmRelaxed), where it has them; `rows8`: llama.cpp
// interleaves the matrix's rows in eights (Q4_0, Q4_K).
void select(MatmulKernel& k, bool rows8, Isa isa);
// The tile for half-precision weights in batches (tinyBLAS's order; exact in
// every flavour), tile_float_wasm.cpp.
TileFn f16_tile_batched();
// Activation quantizers (quantize_act_wasm.cpp), bit-identical to ref::'s.
void quantize_row_q8_0(const float* x, void* dst, size_t n);
void quantize_row_q8_1(const float* x, void* dst, size_t n);
void quantize_row_q8_K(const float* x, void* dst, size_t n);
#if defined(__wasm_relaxed_simd__)
bool select_kquant_relaxed(MatmulKernel& k, bool rows8);
#else
bool select_kquant_exact(MatmulKernel& k, bool rows8);
bool select_kquant_fast(MatmulKernel& k, bool rows8);
#endif
#endif

}  // namespace smolinfer::quant::wasm
