// Byte layouts of the block formats, identical to ggml's so that GGUF tensor
// data can be used in place. Scales are raw IEEE half bits (see fp16.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace smolinfer::quant {

inline constexpr size_t kQK32 = 32;    // values per block of the 32-value formats
inline constexpr size_t kQK256 = 256;  // values per K-quant super-block
inline constexpr size_t kKScaleBytes = 12;

struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[kQK32 / 2];  // value j in low nibble of qs[j], value j+16 in high nibble
};

struct BlockQ4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kQK32 / 2];
};

struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];  // fifth bit of each value, bit j for value j
    uint8_t qs[kQK32 / 2];
};

struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK32 / 2];
};

struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[kQK32];
};

struct BlockQ8_1 {
    uint16_t d;
    uint16_t s;  // d * sum(qs), used by the formats with a minimum
    int8_t qs[kQK32];
};

struct BlockQ2_K {
    uint8_t scales[kQK256 / 16];  // low nibble scale, high nibble min, per 16 values
    uint8_t qs[kQK256 / 4];
    uint16_t d;
    uint16_t dmin;
};

struct BlockQ3_K {
    uint8_t hmask[kQK256 / 8];
    uint8_t qs[kQK256 / 4];
    uint8_t scales[kKScaleBytes];  // 16 6-bit scales
    uint16_t d;
};

struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleBytes];  // 8 6-bit scales and 8 6-bit mins
    uint8_t qs[kQK256 / 2];
};

struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleBytes];
    uint8_t qh[kQK256 / 8];
    uint8_t qs[kQK256 / 2];
};

struct BlockQ6_K {
    uint8_t ql[kQK256 / 2];
    uint8_t qh[kQK256 / 4];
    int8_t scales[kQK256 / 16];
    uint16_t d;
};

struct BlockQ8_K {
    float d;
    int8_t qs[kQK256];
    int16_t bsums[kQK256 / 16];  // sums of each group of 16 qs
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// K-quant 6-bit scale/min pair j (0..7) packed in 12 bytes (Q4_K, Q5_K).
inline void k_scale_min(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
    if (j < 4) {
        *scale = q[j] & 63;
        *min = q[j + 4] & 63;
    } else {
        *scale = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *min = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// All eight of a Q4_K/Q5_K block's scales and mins (k_scale_min's), a byte
// each, by whole-word masks and shifts. Static: the AVX-512 and AVX2 units
// each keep their own copy, compiled for their instruction set.
static inline void k_scales_mins8(const uint8_t* q, uint64_t* scales, uint64_t* mins) {
    uint32_t u[3];
    std::memcpy(u, q, 12);
    const uint32_t s_hi = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    const uint32_t m_hi = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    *scales = uint64_t(u[0] & 0x3f3f3f3fu) | (uint64_t(s_hi) << 32);
    *mins = uint64_t(u[1] & 0x3f3f3f3fu) | (uint64_t(m_hi) << 32);
}

}  // namespace smolinfer::quant
