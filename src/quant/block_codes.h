// Where each value of a block lives: the integer code of value j, and the
// integer scale (and minimum) of its group, for every block format. The
// dequantizers and the reference dot products both read blocks only
// through these, so each layout is written down once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"

namespace smolinfer::quant::codes {

// 32-value formats: value j < 16 in the low nibble of qs[j], value j >= 16
// in the high nibble of qs[j - 16]; Q5's fifth bit j in the 32-bit qh.
inline int nibble(const uint8_t* qs, size_t j) { return (j < 16) ? (qs[j] & 0xF) : (qs[j - 16] >> 4); }

inline int fifth_bit(const uint8_t* qh, size_t j) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    return int((bits >> j) & 1u);
}

inline int code(const BlockQ4_0& b, size_t j) { return nibble(b.qs, j) - 8; }
inline int code(const BlockQ4_1& b, size_t j) { return nibble(b.qs, j); }
inline int code(const BlockQ5_0& b, size_t j) { return (nibble(b.qs, j) | fifth_bit(b.qh, j) << 4) - 16; }
inline int code(const BlockQ5_1& b, size_t j) { return nibble(b.qs, j) | fifth_bit(b.qh, j) << 4; }
inline int code(const BlockQ8_0& b, size_t j) { return b.qs[j]; }

// Q2_K and Q3_K: 16 groups of 16. Group g's 2-bit codes are in
// qs[32*(g/8) + 16*(g%2) + l] at bit shift 2*((g%8)/2).
inline int two_bits(const uint8_t* qs, size_t j) {
    const size_t g = j / 16, l = j % 16;
    return (qs[32 * (g / 8) + 16 * (g % 2) + l] >> (2 * ((g % 8) / 2))) & 3;
}

inline int code(const BlockQ2_K& b, size_t j) { return two_bits(b.qs, j); }
inline int scale(const BlockQ2_K& b, size_t g) { return b.scales[g] & 0xF; }
inline int min(const BlockQ2_K& b, size_t g) { return b.scales[g] >> 4; }

// Q3_K: a clear bit (g/2) in hmask[16*(g%2) + l] subtracts 4.
inline int code(const BlockQ3_K& b, size_t j) {
    const size_t g = j / 16, l = j % 16;
    const bool high = b.hmask[16 * (g % 2) + l] & (1u << (g / 2));
    return two_bits(b.qs, j) - (high ? 0 : 4);
}
// 16 6-bit scales: low 4 bits in bytes 0..7 (low then high nibbles), high 2
// bits in bytes 8..11; biased by 32.
inline int scale(const BlockQ3_K& b, size_t g) {
    const int lo = (g < 8) ? (b.scales[g] & 0xF) : (b.scales[g - 8] >> 4);
    const int hi = (b.scales[8 + g % 4] >> (2 * (g / 4))) & 3;
    return (lo | hi << 4) - 32;
}

// Q4_K and Q5_K: 8 groups of 32. Groups 2k and 2k+1 share qs[32k..32k+32),
// low and high nibbles; Q5_K's fifth bit of value l of group g is bit g of qh[l].
inline int code(const BlockQ4_K& b, size_t j) {
    const size_t g = j / 32, l = j % 32;
    return (b.qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 0xF;
}
inline int code(const BlockQ5_K& b, size_t j) {
    const size_t g = j / 32, l = j % 32;
    return ((b.qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 0xF) | ((b.qh[l] >> g) & 1) << 4;
}
template <typename B>
int scale_k(const B& b, size_t g) {
    uint8_t sc, mn;
    k_scale_min(int(g), b.scales, &sc, &mn);
    return sc;
}
template <typename B>
int min_k(const B& b, size_t g) {
    uint8_t sc, mn;
    k_scale_min(int(g), b.scales, &sc, &mn);
    return mn;
}
inline int scale(const BlockQ4_K& b, size_t g) { return scale_k(b, g); }
inline int min(const BlockQ4_K& b, size_t g) { return min_k(b, g); }
inline int scale(const BlockQ5_K& b, size_t g) { return scale_k(b, g); }
inline int min(const BlockQ5_K& b, size_t g) { return min_k(b, g); }

// Q6_K: in each half of 128 values, quarter k (32 values) has its low 4 bits
// in ql (low nibbles for k < 2, high for k >= 2, offset 32*(k%2)) and its
// high 2 bits at qh bits 2k..2k+1; biased by 32. One int8 scale per 16.
inline int code(const BlockQ6_K& b, size_t j) {
    const size_t h = j / 128, k = (j % 128) / 32, l = j % 32;
    const int lo = (b.ql[64 * h + l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xF;
    const int hi = (b.qh[32 * h + l] >> (2 * k)) & 3;
    return (lo | hi << 4) - 32;
}
inline int scale(const BlockQ6_K& b, size_t g) { return b.scales[g]; }

}  // namespace smolinfer::quant::codes
