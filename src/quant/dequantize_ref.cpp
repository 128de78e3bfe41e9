// Reference dequantization: block bytes -> float32 values.
#include <cstdlib>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/reference.h"

namespace smolinfer::quant::ref {

namespace {

void dequant_q4_0(const BlockQ4_0* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK32) {
        const float d = fp16_to_f32(x[i].d);
        for (size_t j = 0; j < kQK32 / 2; ++j) {
            y[j] = float((x[i].qs[j] & 0xF) - 8) * d;
            y[j + kQK32 / 2] = float((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void dequant_q4_1(const BlockQ4_1* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK32) {
        const float d = fp16_to_f32(x[i].d);
        const float m = fp16_to_f32(x[i].m);
        for (size_t j = 0; j < kQK32 / 2; ++j) {
            y[j] = float(x[i].qs[j] & 0xF) * d + m;
            y[j + kQK32 / 2] = float(x[i].qs[j] >> 4) * d + m;
        }
    }
}

uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Fifth bits of a Q5 block: bit j of qh belongs to value j.
int q5_value(const uint8_t* qs, uint32_t qh, size_t j) {
    const int lo = (j < kQK32 / 2) ? (qs[j] & 0xF) : (qs[j - kQK32 / 2] >> 4);
    return lo | int(((qh >> j) & 1u) << 4);
}

void dequant_q5_0(const BlockQ5_0* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK32) {
        const float d = fp16_to_f32(x[i].d);
        const uint32_t qh = load_u32(x[i].qh);
        for (size_t j = 0; j < kQK32; ++j) {
            y[j] = float(q5_value(x[i].qs, qh, j) - 16) * d;
        }
    }
}

void dequant_q5_1(const BlockQ5_1* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK32) {
        const float d = fp16_to_f32(x[i].d);
        const float m = fp16_to_f32(x[i].m);
        const uint32_t qh = load_u32(x[i].qh);
        for (size_t j = 0; j < kQK32; ++j) {
            y[j] = float(q5_value(x[i].qs, qh, j)) * d + m;
        }
    }
}

void dequant_q8_0(const BlockQ8_0* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK32) {
        const float d = fp16_to_f32(x[i].d);
        for (size_t j = 0; j < kQK32; ++j) {
            y[j] = float(x[i].qs[j]) * d;
        }
    }
}

void dequant_q8_1(const BlockQ8_1* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK32) {
        const float d = fp16_to_f32(x[i].d);
        for (size_t j = 0; j < kQK32; ++j) {
            y[j] = float(x[i].qs[j]) * d;
        }
    }
}

// Q2_K: 16 groups of 16 values; 2-bit quants, 4-bit scale and min per group.
// Group g covers values [16g, 16g+16); its quants sit in qs[32*(g/8) + 16*(g%2) + l]
// at bit shift 2*((g%8)/2).
void dequant_q2_K(const BlockQ2_K* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK256) {
        const float d = fp16_to_f32(x[i].d);
        const float dmin = fp16_to_f32(x[i].dmin);
        for (size_t g = 0; g < 16; ++g) {
            const uint8_t sc = x[i].scales[g];
            const float dl = d * float(sc & 0xF);
            const float ml = dmin * float(sc >> 4);
            const uint8_t* q = x[i].qs + 32 * (g / 8) + 16 * (g % 2);
            const int shift = 2 * int((g % 8) / 2);
            for (size_t l = 0; l < 16; ++l) {
                y[16 * g + l] = dl * float((q[l] >> shift) & 3) - ml;
            }
        }
    }
}

// Q3_K's 16 6-bit scales, unpacked from 12 bytes (low 4 bits in bytes 0..7,
// high 2 bits in bytes 8..11), minus the bias of 32.
void q3_K_scales(const uint8_t* packed, int scales[16]) {
    for (int j = 0; j < 16; ++j) {
        const int lo = (j < 8) ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
        const int hi = (packed[8 + (j % 4)] >> (2 * (j / 4))) & 3;
        scales[j] = (lo | (hi << 4)) - 32;
    }
}

// Q3_K: 2 low bits as in Q2_K plus a high bit in hmask; a clear high bit
// subtracts 4. hmask bit (g/2) of byte (16*(g%2) + l) belongs to group g.
void dequant_q3_K(const BlockQ3_K* x, float* y, size_t nb) {
    int scales[16];
    for (size_t i = 0; i < nb; ++i, y += kQK256) {
        const float d = fp16_to_f32(x[i].d);
        q3_K_scales(x[i].scales, scales);
        for (size_t g = 0; g < 16; ++g) {
            const float dl = d * float(scales[g]);
            const uint8_t* q = x[i].qs + 32 * (g / 8) + 16 * (g % 2);
            const uint8_t* hm = x[i].hmask + 16 * (g % 2);
            const int shift = 2 * int((g % 8) / 2);
            const uint8_t bit = uint8_t(1u << (g / 2));
            for (size_t l = 0; l < 16; ++l) {
                const int v = ((q[l] >> shift) & 3) - ((hm[l] & bit) ? 0 : 4);
                y[16 * g + l] = dl * float(v);
            }
        }
    }
}

// Q4_K: 8 groups of 32; group 2k in the low nibbles of qs[32k..32k+32),
// group 2k+1 in the high nibbles.
void dequant_q4_K(const BlockQ4_K* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK256) {
        const float d = fp16_to_f32(x[i].d);
        const float dmin = fp16_to_f32(x[i].dmin);
        for (int g = 0; g < 8; ++g) {
            uint8_t sc, mn;
            k_scale_min(g, x[i].scales, &sc, &mn);
            const float dl = d * float(sc);
            const float ml = dmin * float(mn);
            const uint8_t* q = x[i].qs + 32 * (g / 2);
            const int shift = 4 * (g % 2);
            for (int l = 0; l < 32; ++l) {
                y[32 * g + l] = dl * float((q[l] >> shift) & 0xF) - ml;
            }
        }
    }
}

// Q5_K: Q4_K plus a fifth bit: bit g of qh[l] belongs to value l of group g.
void dequant_q5_K(const BlockQ5_K* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK256) {
        const float d = fp16_to_f32(x[i].d);
        const float dmin = fp16_to_f32(x[i].dmin);
        for (int g = 0; g < 8; ++g) {
            uint8_t sc, mn;
            k_scale_min(g, x[i].scales, &sc, &mn);
            const float dl = d * float(sc);
            const float ml = dmin * float(mn);
            const uint8_t* q = x[i].qs + 32 * (g / 2);
            const int shift = 4 * (g % 2);
            for (int l = 0; l < 32; ++l) {
                const int v = ((q[l] >> shift) & 0xF) | (((x[i].qh[l] >> g) & 1) << 4);
                y[32 * g + l] = dl * float(v) - ml;
            }
        }
    }
}

// Q6_K: 4 low bits in ql, 2 high bits in qh, minus 32; int8 scale per 16.
// In each half of 128 values, quarter k (32 values) takes ql's low nibbles
// (k = 0, 1) or high nibbles (k = 2, 3) and qh bits 2k..2k+1.
void dequant_q6_K(const BlockQ6_K* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK256) {
        const float d = fp16_to_f32(x[i].d);
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = x[i].ql + 64 * h;
            const uint8_t* qh = x[i].qh + 32 * h;
            for (int k = 0; k < 4; ++k) {
                for (int l = 0; l < 32; ++l) {
                    const int lo = (ql[l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xF;
                    const int hi = (qh[l] >> (2 * k)) & 3;
                    const int idx = 128 * h + 32 * k + l;
                    y[idx] = d * float(x[i].scales[idx / 16]) * float((lo | (hi << 4)) - 32);
                }
            }
        }
    }
}

void dequant_q8_K(const BlockQ8_K* x, float* y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += kQK256) {
        for (size_t j = 0; j < kQK256; ++j) {
            y[j] = x[i].d * float(x[i].qs[j]);
        }
    }
}

}  // namespace

void dequantize_row(Type type, const void* src, float* dst, size_t n) {
    const size_t nb = n / traits(type).block_elems;
    switch (type) {
        case Type::F32:
            std::memcpy(dst, src, n * sizeof(float));
            return;
        case Type::F16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(s[i]);
            return;
        }
        case Type::BF16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
            return;
        }
        case Type::Q4_0: return dequant_q4_0(static_cast<const BlockQ4_0*>(src), dst, nb);
        case Type::Q4_1: return dequant_q4_1(static_cast<const BlockQ4_1*>(src), dst, nb);
        case Type::Q5_0: return dequant_q5_0(static_cast<const BlockQ5_0*>(src), dst, nb);
        case Type::Q5_1: return dequant_q5_1(static_cast<const BlockQ5_1*>(src), dst, nb);
        case Type::Q8_0: return dequant_q8_0(static_cast<const BlockQ8_0*>(src), dst, nb);
        case Type::Q8_1: return dequant_q8_1(static_cast<const BlockQ8_1*>(src), dst, nb);
        case Type::Q2_K: return dequant_q2_K(static_cast<const BlockQ2_K*>(src), dst, nb);
        case Type::Q3_K: return dequant_q3_K(static_cast<const BlockQ3_K*>(src), dst, nb);
        case Type::Q4_K: return dequant_q4_K(static_cast<const BlockQ4_K*>(src), dst, nb);
        case Type::Q5_K: return dequant_q5_K(static_cast<const BlockQ5_K*>(src), dst, nb);
        case Type::Q6_K: return dequant_q6_K(static_cast<const BlockQ6_K*>(src), dst, nb);
        case Type::Q8_K: return dequant_q8_K(static_cast<const BlockQ8_K*>(src), dst, nb);
    }
    std::abort();
}

}  // namespace smolinfer::quant::ref
