#include "quant/kernels.h"

#include "quant/reference.h"

namespace smolinfer::quant {

std::optional<MatmulKernel> matmul_kernel(Type weight) {
    switch (weight) {
        case Type::F32: return MatmulKernel{weight, Type::F32, ref::quantize_row_f32, ref::dot_f32_f32};
        case Type::F16: return MatmulKernel{weight, Type::F16, ref::quantize_row_f16, ref::dot_f16_f16};
        case Type::BF16: return MatmulKernel{weight, Type::BF16, ref::quantize_row_bf16, ref::dot_bf16_bf16};
        case Type::Q4_0: return MatmulKernel{weight, Type::Q8_0, ref::quantize_row_q8_0, ref::dot_q4_0_q8_0};
        case Type::Q4_1: return MatmulKernel{weight, Type::Q8_1, ref::quantize_row_q8_1, ref::dot_q4_1_q8_1};
        case Type::Q5_0: return MatmulKernel{weight, Type::Q8_0, ref::quantize_row_q8_0, ref::dot_q5_0_q8_0};
        case Type::Q5_1: return MatmulKernel{weight, Type::Q8_1, ref::quantize_row_q8_1, ref::dot_q5_1_q8_1};
        case Type::Q8_0: return MatmulKernel{weight, Type::Q8_0, ref::quantize_row_q8_0, ref::dot_q8_0_q8_0};
        case Type::Q2_K: return MatmulKernel{weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q2_K_q8_K};
        case Type::Q3_K: return MatmulKernel{weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q3_K_q8_K};
        case Type::Q4_K: return MatmulKernel{weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q4_K_q8_K};
        case Type::Q5_K: return MatmulKernel{weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q5_K_q8_K};
        case Type::Q6_K: return MatmulKernel{weight, Type::Q8_K, ref::quantize_row_q8_K, ref::dot_q6_K_q8_K};
        case Type::Q8_1:
        case Type::Q8_K: return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace smolinfer::quant
