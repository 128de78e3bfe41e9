// AVX-512 forms of element-wise steps in ops.h, chosen at run time.
#pragma once

#include <cstddef>

namespace smolinfer::model::avx512 {

using SwigluFn = void (*)(float* gate, const float* up, size_t n);
// ops.h's swiglu, or null when this build or CPU has no AVX-512.
SwigluFn swiglu_kernel();

}  // namespace smolinfer::model::avx512
