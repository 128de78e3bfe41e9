// Reference activation quantizers. Rounding follows what llama.cpp does on
// x86 (multiply by 127/amax, round half to even) so that the integer
// activations, and hence the logits, match it as closely as possible.
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/reference.h"

namespace smolinfer::quant::ref {

namespace {

float abs_max(const float* x, size_t n) {
    float amax = 0.0f;
    for (size_t j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    return amax;
}

// v rounded to the nearest integer (ties to even), saturated to int8; NaN,
// which only a broken model produces, gives -128. (Converting NaN or an
// out-of-range value to an integer type directly would be undefined.)
int8_t round_to_int8(float v) {
    if (!(v >= -128.0f && v <= 127.0f)) return v > 0.0f ? int8_t(127) : int8_t(-128);
    return int8_t(std::nearbyint(v));
}

// v as x86's round, convert and saturating pack make it (llama.cpp's AVX
// Q8_0/Q8_1 quantizers): beyond int32 range, infinite or NaN gives the
// "integer indefinite" INT32_MIN, hence -128 -- also for +inf, which a block
// of subnormal activations produces (127 / amax overflows).
int8_t x86_round_to_int8(float v) {
    if (!(v >= -2147483648.0f && v < 2147483648.0f)) return int8_t(-128);
    const float r = std::nearbyint(v);
    return r > 127.0f ? int8_t(127) : r < -128.0f ? int8_t(-128) : int8_t(r);
}

// One block of 32 to int8 codes with scale d = amax / 127 (returned).
float quantize_block_q8(const float* x, int8_t* qs) {
    const float amax = abs_max(x, kQK32);
    const float id = (amax != 0.0f) ? 127.0f / amax : 0.0f;
    for (size_t j = 0; j < kQK32; ++j) qs[j] = x86_round_to_int8(x[j] * id);
    return amax / 127.0f;
}

}  // namespace

void quantize_row_q8_0(const float* x, void* dst, size_t n) {
    auto* y = static_cast<BlockQ8_0*>(dst);
    for (size_t i = 0; i < n / kQK32; ++i, x += kQK32) y[i].d = f32_to_fp16(quantize_block_q8(x, y[i].qs));
}

// Q8_1 also keeps d * sum(codes), for weights with a minimum.
void quantize_row_q8_1(const float* x, void* dst, size_t n) {
    auto* y = static_cast<BlockQ8_1*>(dst);
    for (size_t i = 0; i < n / kQK32; ++i, x += kQK32) {
        const float d = quantize_block_q8(x, y[i].qs);
        int sum = 0;
        for (size_t j = 0; j < kQK32; ++j) sum += y[i].qs[j];
        y[i].d = f32_to_fp16(d);
        y[i].s = f32_to_fp16(d * float(sum));
    }
}

void quantize_row_q8_K(const float* x, void* dst, size_t n) {
    auto* y = static_cast<BlockQ8_K*>(dst);
    for (size_t i = 0; i < n / kQK256; ++i, x += kQK256) {
        float amax = 0.0f;
        float max = 0.0f;  // the signed value of largest magnitude
        for (size_t j = 0; j < kQK256; ++j) {
            const float ax = std::fabs(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (size_t j = 0; j < kQK256; ++j) {
            y[i].qs[j] = round_to_int8(iscale * x[j]);
        }
        for (size_t g = 0; g < kQK256 / 16; ++g) {
            int sum = 0;
            for (size_t l = 0; l < 16; ++l) sum += y[i].qs[16 * g + l];
            y[i].bsums[g] = int16_t(sum);
        }
        y[i].d = 1.0f / iscale;
    }
}

void quantize_row_f16(const float* x, void* dst, size_t n) {
    auto* y = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}

void quantize_row_bf16(const float* x, void* dst, size_t n) {
    auto* y = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}

void quantize_row_f32(const float* x, void* dst, size_t n) { std::memcpy(dst, x, n * sizeof(float)); }

}  // namespace smolinfer::quant::ref
