#include "model/gelu.h"

#include <cmath>
#include <memory>

#include "quant/exact_fma.h"
#include "quant/fp16.h"

namespace smolinfer::model {

float gelu_f32(float x) {
    constexpr float kCoefA = 0.044715f;
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    const float inner = quant::exact_fma(kCoefA * x, x, 1.0f);
    const float arg = kSqrt2OverPi * x * inner;
    // tanh in double, rounded once to float: on all 65,536 inputs the same
    // table as glibc's tanhf, which libggml-cpu calls (tests/test_gelu.cpp
    // checks the table's digest, natively and in WebAssembly).
    const float t = float(std::tanh(double(arg)));
    return 0.5f * x * (1.0f + t);
}

const uint16_t* gelu_table() {
    static const std::unique_ptr<uint16_t[]> table = [] {
        auto t = std::make_unique<uint16_t[]>(65536);
        for (uint32_t h = 0; h < 65536; ++h) {
            t[h] = quant::f32_to_fp16(gelu_f32(quant::fp16_to_f32(uint16_t(h))));
        }
        return t;
    }();
    return table.get();
}

namespace {
inline float gelu_lookup(const uint16_t* table, float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return quant::fp16_to_f32(table[quant::f32_to_fp16(x)]);
}
}  // namespace

void gelu(float* x, size_t n) {
    const uint16_t* table = gelu_table();
    for (size_t i = 0; i < n; ++i) x[i] = gelu_lookup(table, x[i]);
}

void geglu(float* gate, const float* up, size_t n) {
    const uint16_t* table = gelu_table();
    for (size_t i = 0; i < n; ++i) {
        const float x = gate[i];
        if (x <= -10.0f) {
            gate[i] = 0.0f;
        } else if (x >= 10.0f) {
            gate[i] = x * up[i];
        } else {
            gate[i] = quant::fp16_to_f32(table[quant::f32_to_fp16(x)]) * up[i];
        }
    }
}

}  // namespace smolinfer::model
