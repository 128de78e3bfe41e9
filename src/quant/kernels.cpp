#include "quant/kernels.h"

#include <atomic>

#include "quant/dot_avx2.h"
#include "quant/dot_wasm.h"
#include "quant/reference.h"
#include "quant/tile_avx2.h"
#include "quant/tile_avx512.h"
#include "runtime/machine.h"

namespace smolinfer::quant {

uint64_t new_activation_id() {
    static std::atomic<uint64_t> next{0};
    return ++next;
}

Isa best_isa() {
#if defined(__x86_64__) || defined(__i386__)
    if constexpr (avx2::kAvailable) {
        static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                               runtime::isa_limit() != runtime::IsaLimit::Scalar;
        if (ok) return avx512::available() ? Isa::Avx512Vnni : Isa::Avx2;
    }
#endif
#if defined(__wasm_relaxed_simd__)
    return Isa::WasmRelaxed;
#elif defined(__wasm_simd128__)
    return Isa::WasmSimd;
#else
    return Isa::Reference;
#endif
}

bool isa_available(Isa isa) {
    const Isa best = best_isa();
    switch (isa) {
        case Isa::Reference: return true;
        case Isa::Avx2: return best == Isa::Avx2 || best == Isa::Avx512Vnni;
        case Isa::Avx512Vnni: return best == Isa::Avx512Vnni;
        case Isa::WasmSimd:
        case Isa::WasmSimdFast: return best == Isa::WasmSimd;
        case Isa::WasmRelaxed: return best == Isa::WasmRelaxed;
    }
    return false;
}

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::Reference: return "reference";
        case Isa::Avx2: return "avx2";
        case Isa::Avx512Vnni: return "avx512-vnni";
        case Isa::WasmSimd: return "wasm-simd128";
        case Isa::WasmSimdFast: return "wasm-simd128-fast";
        case Isa::WasmRelaxed: return "wasm-relaxed-simd";
    }
    return "unknown";
}

namespace {

MatmulKernel reference_kernel(Type weight, Type act, QuantizeRowFn q, DotFn dot) { return {weight, act, q, dot}; }

}  // namespace

std::optional<MatmulKernel> matmul_kernel(Type weight, int rows, int cols, Isa isa) {
    std::optional<MatmulKernel> k;
    switch (weight) {
        case Type::F32: k = reference_kernel(weight, Type::F32, ref::quantize_row_f32, ref::dot_f32_f32); break;
        case Type::F16: k = reference_kernel(weight, Type::F16, ref::quantize_row_f16, ref::dot_f16_f16); break;
        case Type::BF16: k = reference_kernel(weight, Type::BF16, ref::quantize_row_bf16, ref::dot_bf16_bf16); break;
        case Type::Q4_0: k = reference_kernel(weight, Type::Q8_0, ref::quantize_row_q8_0, ref::dot_q4_0_q8_0); break;
        case Type::Q4_1: k = reference_kernel(weight, Type::Q8_1, ref::quantize_row_q8_1, ref::dot_q4_1_q8_1); break;
        case Type::Q5_0: k = reference_kernel(weight, Type::Q8_0, ref::quantize_row_q8_0, ref::dot_q5_0_q8_0); break;
        case Type::Q5_1: k = reference_kernel(weight, Type::Q8_1, ref::quantize_row_q8_1, ref::dot_q5_1_q8_1); break;
        case Type::Q8_0: k = reference_kernel(weight, Type::Q8_0, ref::quantize_row_q8_0, ref::dot_q8_0_q8_0); break;
        case Type::Q2_K: k = reference_kernel(weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q2_K_q8_K); break;
        case Type::Q3_K: k = reference_kernel(weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q3_K_q8_K); break;
        case Type::Q4_K: k = reference_kernel(weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q4_K_q8_K); break;
        case Type::Q5_K: k = reference_kernel(weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q5_K_q8_K); break;
        case Type::Q6_K: k = reference_kernel(weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q6_K_q8_K); break;
        case Type::Q8_1:
        case Type::Q8_K: return std::nullopt;
    }
    // llama.cpp's x86 build interleaves these formats' rows in groups of 8.
    const bool rows8 = rows % 8 == 0;
    if (rows8 && weight == Type::Q4_0) k->dot = ref::dot_q4_0_q8_0_rows8;
    if (rows8 && weight == Type::Q4_K) {
        k->dot = ref::dot_q4_K_q8_K_rows8;
        k->dot_batched = ref::dot_q4_K_q8_K_rows8_tokens4;
        k->batch_group = 4;
    }
    // llama.cpp's GEMM takes float and half batches when the row length is a
    // multiple of its 16 lanes.
    if (cols % 16 == 0 && weight == Type::F16) k->dot_batched = ref::dot_f16_f16_tinyblas;
    if (cols % 16 == 0 && weight == Type::F32) k->dot_batched = ref::dot_f32_f32_tinyblas;
#if defined(__AVX2__) && defined(__FMA__)
    if (isa == Isa::Avx2 || isa == Isa::Avx512Vnni) {
        switch (weight) {
            case Type::Q4_0: k->dot = rows8 ? avx2::dot_q4_0_q8_0_rows8 : avx2::dot_q4_0_q8_0; break;
            case Type::Q4_1: k->dot = avx2::dot_q4_1_q8_1; break;
            case Type::Q5_0: k->dot = avx2::dot_q5_0_q8_0; break;
            case Type::Q5_1: k->dot = avx2::dot_q5_1_q8_1; break;
            case Type::Q8_0: k->dot = avx2::dot_q8_0_q8_0; break;
            case Type::Q4_K:
                k->dot = rows8 ? avx2::dot_q4_K_q8_K_rows8 : avx2::dot_q4_K_q8_K;
                if (rows8) k->dot_batched = avx2::dot_q4_K_q8_K_rows8_tokens4;
                break;
            case Type::Q5_K: k->dot = avx2::dot_q5_K_q8_K; break;
            case Type::Q6_K: k->dot = avx2::dot_q6_K_q8_K; break;
            default: break;
        }
        if (k->quantize == ref::quantize_row_q8_0) k->quantize = avx2::quantize_row_q8_0;
        if (k->quantize == ref::quantize_row_q8_1) k->quantize = avx2::quantize_row_q8_1;
    }
#endif
#if defined(__wasm_simd128__)
    wasm::select(*k, rows8, isa);
#endif
    // Tiles for the 32-value formats' vec_dot order (not Q4_0's interleaved one).
    if (!(rows8 && weight == Type::Q4_0)) {
        if (isa == Isa::Avx512Vnni) {
            k->tile = avx512::tile_for(weight);
            // Their tiles run several rows' chains at once for one token too.
            if (k->tile) k->tile_min_tokens = 1;
            if (!k->tile) k->tile = avx512::kquant_tile_for(weight, rows8, false);
            if (k->dot_batched) k->tile_batched = avx512::kquant_tile_for(weight, rows8, true);
            if (const DotFn dot = avx512::kquant_dot_for(weight, rows8)) k->dot = dot;
            // Interleaved Q4_K's one-token dot is bound by its per-block
            // reduction; the tile takes 8 rows at once for one token too.
            if (rows8 && weight == Type::Q4_K) k->tile_min_tokens = 1;
            if (weight == Type::F16) {
                k->dot = avx512::dot_f16_f16;
                if (k->dot_batched) k->tile_batched = avx512::f16_tile_batched();
            }
        }
        if (isa == Isa::Avx2) {
            k->tile = avx2::tile_for(weight);
            // For one token, four rows' chains side by side stream a matrix
            // faster than a dot per row (Zen 3, 96 MB from memory: Q4_1 1.9
            // against 2.35 ns a block), except Q8_0's, whose larger blocks
            // the dot streams faster (2.4 against 2.9).
            if (k->tile && weight != Type::Q8_0) k->tile_min_tokens = 1;
            if (!k->tile) k->tile = avx2::kquant_tile_for(weight, rows8, false);
            if (k->dot_batched) k->tile_batched = avx2::kquant_tile_for(weight, rows8, true);
            // Interleaved Q4_K's dot is compute-bound when decoding; its tile,
            // 8 rows at once for one token, was 10-25% faster.
            if (rows8 && weight == Type::Q4_K) k->tile_min_tokens = 1;
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
            if (weight == Type::F16) {
                k->dot = avx2::dot_f16_f16;
                if (k->dot_batched) k->tile_batched = avx2::f16_tile_batched();
            }
#endif
        }
    }
    (void)isa;
    return k;
}

}  // namespace smolinfer::quant
