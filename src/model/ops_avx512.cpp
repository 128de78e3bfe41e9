// The element-wise steps that llama.cpp's AVX-512 build vectorizes, sixteen
// lanes at a time and bit-identical to their scalar forms in ops.cpp.
#include "model/ops_avx512.h"
#include "runtime/machine.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_OPS)

#include "model/exp_approx.h"
#include "model/vector_math_avx512.h"

namespace smolinfer::model::avx512 {

namespace {

void swiglu(float* gate, const float* up, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(gate + i, _mm512_mul_ps(silu_approx16(_mm512_loadu_ps(gate + i)), _mm512_loadu_ps(up + i)));
    }
    for (; i < n; ++i) gate[i] = silu_approx(gate[i]) * up[i];
}

}  // namespace

SwigluFn swiglu_kernel() {
    return runtime::cpu_has_avx512() ? swiglu : nullptr;
}

}  // namespace smolinfer::model::avx512

#else

namespace smolinfer::model::avx512 {
SwigluFn swiglu_kernel() { return nullptr; }
}  // namespace smolinfer::model::avx512

#endif
