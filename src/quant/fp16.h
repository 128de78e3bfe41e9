// IEEE half and bfloat16 <-> float conversions, exact (round to nearest even),
// so that values stored in the KV cache or quant scales are bit-identical to
// what the hardware converters used by llama.cpp produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace smolinfer::quant {

inline float bits_to_f32(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

inline uint32_t f32_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// Portable conversions; the hardware ones below give identical results.
inline float fp16_to_f32_soft(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) {  // inf or nan
        return bits_to_f32(sign | 0x7f800000u | (man << 13));
    }
    if (exp != 0) {
        return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
    }
    // zero or subnormal: value = man * 2^-24, exact in float
    const float mag = float(man) * 5.9604644775390625e-08f;
    return (sign != 0u) ? -mag : mag;
}

inline uint16_t f32_to_fp16_soft(float f) {
    const uint32_t x = f32_to_bits(f);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {  // inf or nan; keep nan quiet
        return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    }
    if (ax >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
        return uint16_t(sign | 0x7c00u);
    }
    if (ax < 0x38800000u) {  // below the smallest normal half: subnormal or zero
        if (ax < 0x33000000u) {  // below half of the smallest subnormal: rounds to zero
            return sign;
        }
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;  // 14..24 bits drop out
        uint32_t h = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) {
            ++h;
        }
        return uint16_t(sign | h);
    }
    // normal: rebias exponent, round the 13 dropped mantissa bits to nearest even
    uint32_t h = ((ax >> 13) - (112u << 10));
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) {
        ++h;  // may carry into the exponent, which is the correct result
    }
    return uint16_t(sign | h);
}

// The same without branches, for the inner loops of builds without F16C
// (WebAssembly): the half's exponent and mantissa are shifted into place and
// rebased by one float multiply (normal numbers), or read as a fraction of
// 2^-14 by one float subtraction (subnormals); a select picks.
inline float fp16_to_f32_branchless(uint16_t h) {
    const uint32_t w = uint32_t(h) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w;  // exponent and mantissa at the top, sign gone
    // Normal, inf, nan: exponent rebased by 2^-112 (bias 127-15 shifted up by 0xE0).
    const float normal = bits_to_f32((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
    // Subnormal: mantissa as 0.5 + m * 2^-24 in a float of exponent -1, minus 0.5.
    const float subnormal = bits_to_f32((two_w >> 17) | (126u << 23)) - 0.5f;
    const uint32_t magnitude = (two_w < (1u << 27)) ? f32_to_bits(subnormal) : f32_to_bits(normal);
    return bits_to_f32(sign | magnitude);
}

#if defined(__F16C__)
inline float fp16_to_f32(uint16_t h) { return _cvtsh_ss(h); }
inline uint16_t f32_to_fp16(float f) { return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }
#else
inline float fp16_to_f32(uint16_t h) { return fp16_to_f32_branchless(h); }
inline uint16_t f32_to_fp16(float f) { return f32_to_fp16_soft(f); }
#endif

// y[i] = f32_to_fp16(x[i]) for a row: the hardware converter natively, four
// at a time in WebAssembly (fp16_row.cpp), bit-identical to the scalar forms.
void f32_to_fp16_row(const float* x, uint16_t* y, size_t n);
// y[i] = fp16_to_f32(x[i]) for a row, likewise.
void fp16_to_f32_row(const uint16_t* x, float* y, size_t n);

inline float bf16_to_f32(uint16_t b) { return bits_to_f32(uint32_t(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
    const uint32_t x = f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return uint16_t((x >> 16) | 0x40u);  // quiet nan
    }
    return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace smolinfer::quant
