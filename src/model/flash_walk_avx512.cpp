// The chunk path's walk of flash attention (flash_attention.cpp: a token
// against the cached values one position at a time, the sums in a half
// accumulator) with AVX-512: 16 lanes per register, so a head of 64 is 4
// registers where the F16C form holds 8. Per lane the same operations in
// the same order -- the rescale where the softmax's maximum grew, one fused
// multiply-add and the round trip through half per position -- so the
// result is bit-identical; what changes is that each conversion to and from
// half, the walk's bottleneck, covers twice the lanes.
#include "model/flash_walk.h"

#include "model/attention_kernels.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_ATTENTION)

#include <immintrin.h>

#include "runtime/machine.h"

namespace smolinfer::model {

namespace {

// x rounded to half and back (ggml's store and load of VKQ16).
inline __m512 round_to_half(__m512 x) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Head dim 16 * B.
template <int B>
void walk(const uint16_t* values, size_t stride, CellRuns2 runs, const float* weight, const float* rescale, int j0,
          int j1, float* out) {
    __m512 acc[B];
    for (int b = 0; b < B; ++b) acc[b] = _mm512_setzero_ps();
    for (int j = j0; j < j1; ++j) {
        if (const float r = rescale[j - j0]; r != 1.0f) {
            const __m512 vr = _mm512_set1_ps(r);
            for (int b = 0; b < B; ++b) acc[b] = round_to_half(_mm512_mul_ps(acc[b], vr));
        }
        if (j + kPrefetchValueRows < j1) prefetch_halves(values + size_t(runs.cell(j + kPrefetchValueRows)) * stride, 16 * B);
        const uint16_t* v = values + size_t(runs.cell(j)) * stride;
        const __m512 w = _mm512_set1_ps(weight[j - j0]);
        for (int b = 0; b < B; ++b) {
            const __m512 vb = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 16 * b)));
            acc[b] = round_to_half(_mm512_fmadd_ps(vb, w, acc[b]));
        }
    }
    for (int b = 0; b < B; ++b) _mm512_storeu_ps(out + 16 * b, acc[b]);
}

}  // namespace

ChunkWalkFn chunk_walk_avx512(int head_dim) {
    if (!runtime::cpu_has_avx512()) return nullptr;
    switch (head_dim) {
        case 32: return walk<2>;
        case 64: return walk<4>;
        case 128: return walk<8>;
        case 256: return walk<16>;
        default: return nullptr;
    }
}

}  // namespace smolinfer::model

#else

namespace smolinfer::model {
ChunkWalkFn chunk_walk_avx512(int) { return nullptr; }
}  // namespace smolinfer::model

#endif
