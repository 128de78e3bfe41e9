// Reference dot products of a quantized weight row with a quantized
// activation row. Within a block everything is an exact integer sum; the
// block's float scale is applied once, as ggml does.
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/lanes.h"
#include "quant/reference.h"

namespace smolinfer::quant::ref {

namespace {

uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// 4-bit quant j (0..31) of a 32-value block: low nibbles first, then high.
int nibble(const uint8_t* qs, size_t j) {
    return (j < kQK32 / 2) ? (qs[j] & 0xF) : (qs[j - kQK32 / 2] >> 4);
}

int q5(const uint8_t* qs, uint32_t qh, size_t j) { return nibble(qs, j) | int(((qh >> j) & 1u) << 4); }

// Sum of bsums over the 32 values of group g (two 16-value sums).
int bsum32(const BlockQ8_K& a, int g) { return a.bsums[2 * g] + a.bsums[2 * g + 1]; }

// The 32-value formats all follow llama.cpp's x86 kernel shape: lane j
// (of 8) takes the exact integer sum of products 4j..4j+3 of each block and
// accumulates it times d_w * d_a with a fused multiply-add; the lanes are
// summed with hsum8 at the end. `code(x, j)` is weight quant j as an int.
template <typename WBlock, typename ABlock, typename Code>
float dot_blocks32(size_t n, const WBlock* x, const ABlock* y, Code code) {
    float lanes[8] = {};
    for (size_t i = 0; i < n / kQK32; ++i) {
        const float dd = fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d);
        for (int j = 0; j < 8; ++j) {
            int sum = 0;
            for (int k = 4 * j; k < 4 * j + 4; ++k) sum += code(x[i], size_t(k)) * y[i].qs[k];
            lanes[j] = std::fma(dd, float(sum), lanes[j]);
        }
    }
    return hsum8(lanes);
}

// With a minimum m: sum((q*d + m) * a) = d*da*sum(q*qa) + m*(da*sum(qa)) = ... + m*s,
// the m*s terms summed on their own (as a fused multiply-add chain).
template <typename WBlock, typename ABlock>
float min_terms(size_t n, const WBlock* x, const ABlock* y) {
    float sum = 0.0f;
    for (size_t i = 0; i < n / kQK32; ++i) sum = std::fma(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), sum);
    return sum;
}

}  // namespace

float dot_q4_0_q8_0(size_t n, const void* w, const void* a) {
    return dot_blocks32(n, static_cast<const BlockQ4_0*>(w), static_cast<const BlockQ8_0*>(a),
                        [](const BlockQ4_0& b, size_t j) { return nibble(b.qs, j) - 8; });
}

float dot_q4_1_q8_1(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    return dot_blocks32(n, x, y, [](const BlockQ4_1& b, size_t j) { return nibble(b.qs, j); }) + min_terms(n, x, y);
}

float dot_q5_0_q8_0(size_t n, const void* w, const void* a) {
    return dot_blocks32(n, static_cast<const BlockQ5_0*>(w), static_cast<const BlockQ8_0*>(a),
                        [](const BlockQ5_0& b, size_t j) { return q5(b.qs, load_u32(b.qh), j) - 16; });
}

float dot_q5_1_q8_1(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    return dot_blocks32(n, x, y, [](const BlockQ5_1& b, size_t j) { return q5(b.qs, load_u32(b.qh), j); }) +
           min_terms(n, x, y);
}

float dot_q8_0_q8_0(size_t n, const void* w, const void* a) {
    return dot_blocks32(n, static_cast<const BlockQ8_0*>(w), static_cast<const BlockQ8_0*>(a),
                        [](const BlockQ8_0& b, size_t j) { return int(b.qs[j]); });
}

// K-quants with a minimum: value = d*sc*q - dmin*mn. The minimum's share,
// dmin*mn*sum(qa), uses the activation's precomputed group sums (bsums).
float dot_q2_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ2_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        int isum = 0;
        int msum = 0;
        for (int g = 0; g < 16; ++g) {
            const uint8_t sc = x[i].scales[g];
            const uint8_t* q = x[i].qs + 32 * (g / 8) + 16 * (g % 2);
            const int shift = 2 * ((g % 8) / 2);
            int gsum = 0;
            for (int l = 0; l < 16; ++l) gsum += ((q[l] >> shift) & 3) * y[i].qs[16 * g + l];
            isum += (sc & 0xF) * gsum;
            msum += (sc >> 4) * y[i].bsums[g];
        }
        sum += y[i].d * fp16_to_f32(x[i].d) * float(isum) - y[i].d * fp16_to_f32(x[i].dmin) * float(msum);
    }
    return sum;
}

float dot_q3_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ3_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        const uint8_t* packed = x[i].scales;
        int isum = 0;
        for (int g = 0; g < 16; ++g) {
            const int lo = (g < 8) ? (packed[g] & 0xF) : (packed[g - 8] >> 4);
            const int hi = (packed[8 + (g % 4)] >> (2 * (g / 4))) & 3;
            const int scale = (lo | (hi << 4)) - 32;
            const uint8_t* q = x[i].qs + 32 * (g / 8) + 16 * (g % 2);
            const uint8_t* hm = x[i].hmask + 16 * (g % 2);
            const int shift = 2 * ((g % 8) / 2);
            const uint8_t bit = uint8_t(1u << (g / 2));
            int gsum = 0;
            for (int l = 0; l < 16; ++l) {
                const int v = ((q[l] >> shift) & 3) - ((hm[l] & bit) ? 0 : 4);
                gsum += v * y[i].qs[16 * g + l];
            }
            isum += scale * gsum;
        }
        sum += y[i].d * fp16_to_f32(x[i].d) * float(isum);
    }
    return sum;
}

float dot_q4_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        int isum = 0;
        int msum = 0;
        for (int g = 0; g < 8; ++g) {
            uint8_t sc, mn;
            k_scale_min(g, x[i].scales, &sc, &mn);
            const uint8_t* q = x[i].qs + 32 * (g / 2);
            const int shift = 4 * (g % 2);
            int gsum = 0;
            for (int l = 0; l < 32; ++l) gsum += ((q[l] >> shift) & 0xF) * y[i].qs[32 * g + l];
            isum += sc * gsum;
            msum += mn * bsum32(y[i], g);
        }
        sum += y[i].d * fp16_to_f32(x[i].d) * float(isum) - y[i].d * fp16_to_f32(x[i].dmin) * float(msum);
    }
    return sum;
}

float dot_q5_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        int isum = 0;
        int msum = 0;
        for (int g = 0; g < 8; ++g) {
            uint8_t sc, mn;
            k_scale_min(g, x[i].scales, &sc, &mn);
            const uint8_t* q = x[i].qs + 32 * (g / 2);
            const int shift = 4 * (g % 2);
            int gsum = 0;
            for (int l = 0; l < 32; ++l) {
                const int v = ((q[l] >> shift) & 0xF) | (((x[i].qh[l] >> g) & 1) << 4);
                gsum += v * y[i].qs[32 * g + l];
            }
            isum += sc * gsum;
            msum += mn * bsum32(y[i], g);
        }
        sum += y[i].d * fp16_to_f32(x[i].d) * float(isum) - y[i].d * fp16_to_f32(x[i].dmin) * float(msum);
    }
    return sum;
}

float dot_q6_K_q8_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        int isum = 0;
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = x[i].ql + 64 * h;
            const uint8_t* qh = x[i].qh + 32 * h;
            for (int k = 0; k < 4; ++k) {
                int gsum[2] = {0, 0};  // the two 16-value scale groups of this quarter
                for (int l = 0; l < 32; ++l) {
                    const int lo = (ql[l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xF;
                    const int hi = (qh[l] >> (2 * k)) & 3;
                    gsum[l / 16] += ((lo | (hi << 4)) - 32) * y[i].qs[128 * h + 32 * k + l];
                }
                const int g = (128 * h + 32 * k) / 16;
                isum += x[i].scales[g] * gsum[0] + x[i].scales[g + 1] * gsum[1];
            }
        }
        sum += y[i].d * fp16_to_f32(x[i].d) * float(isum);
    }
    return sum;
}

float dot_f16_f16(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const uint16_t*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += fp16_to_f32(x[i]) * fp16_to_f32(y[i]);
    return sum;
}

float dot_bf16_bf16(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const uint16_t*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    return sum;
}

float dot_f32_f32(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const float*>(w);
    const auto* y = static_cast<const float*>(a);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

}  // namespace smolinfer::quant::ref
