// What the machine offers: instruction sets and memory.
#pragma once

#include <cstdint>

namespace smolinfer::runtime {

// Throws smolinfer::Error when the CPU lacks an instruction set the build
// targets (x86-64-v3: AVX2, FMA, F16C), instead of crashing on the first one.
void require_build_cpu_features();

// Whether the CPU converts halves in hardware (x86 F16C). Our own CPUID check:
// clang before 16 does not know __builtin_cpu_supports("f16c").
bool cpu_has_f16c();

// The widest kernels SMOLINFER_ISA allows: `avx512` (the default), `avx2`
// (none of the AVX-512 kernels: an AVX2-only host, measurable on any) or
// `scalar` (the reference kernels; the compiler's own vector code stays).
// For benchmarks and tests; any other value throws smolinfer::Error.
enum class IsaLimit { Scalar, Avx2, Avx512 };
IsaLimit isa_limit();

// Whether the CPU runs the AVX-512 kernels (AVX-512 F, BW, DQ, VL and VNNI:
// what llama.cpp's zen4 variant, and every AVX-512 file here, is built
// for), and SMOLINFER_ISA allows them.
bool cpu_has_avx512();

// Physical memory, or 0 if unknown.
uint64_t physical_memory_bytes();

}  // namespace smolinfer::runtime
