// The AVX2 building blocks every x86 quant kernel shares: the integer lane
// sums of llama.cpp's x86 dots, its hsum_float_8 tree, and the unpacking of
// 4- and 5-bit codes. Kernels built from them give the lanes lanes.h
// describes, so a tile and a dot that use them agree bit for bit.
#pragma once

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace smolinfer::quant::avx2 {

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Lane j: sum of products 4j..4j+3 of unsigned bytes x and signed bytes y.
inline __m256i lane_isums_us(__m256i x, __m256i y) {
    const __m256i pairs = _mm256_maddubs_epi16(x, y);  // no saturation: |x| <= 128, |y| <= 127
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// Same for signed x (moving x's sign onto y).
inline __m256i lane_isums_ss(__m256i x, __m256i y) {
    return lane_isums_us(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

// Lane j: sum of products 4j..4j+3 of (x - 16) and y, for x = codes_plus16
// and y16 = times16(y), the activations' pair sums times 16, which one
// activation block shares among all the rows it meets. In 16 bits: each
// pair's true value, (x0 - 16) y0 + (x1 - 16) y1, is within +-4096, and
// wrapping subtraction lands on it. The same lanes as lane_isums_ss of the
// signed codes for activations in -127..127 (all a finite row quantizes
// to); at -128 these are right where the sign trick wraps.
inline __m256i times16(__m256i y) { return _mm256_maddubs_epi16(_mm256_set1_epi8(16), y); }
inline __m256 lane_sums_minus16(__m256i x, __m256i y, __m256i y16) {
    const __m256i pairs = _mm256_sub_epi16(_mm256_maddubs_epi16(x, y), y16);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

inline __m256 lane_sums_us(__m256i x, __m256i y) { return _mm256_cvtepi32_ps(lane_isums_us(x, y)); }
inline __m256 lane_sums_ss(__m256i x, __m256i y) { return _mm256_cvtepi32_ps(lane_isums_ss(x, y)); }

inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

// ggml's hsum_float_8 (lanes.h's hsum8).
inline float hsum8(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// The 32 quants of a 4-bit block: low nibbles as values 0..15, high as 16..31.
// The 16 bytes go to both halves in one load, the high half shifted right
// by 4 (per 64 bits: what crosses into a byte from its neighbour is masked
// off): one instruction fewer than shifting a copy and inserting it.
inline __m256i nibbles(const uint8_t* qs) {
    const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    return _mm256_and_si256(_mm256_srlv_epi64(both, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
}

// 0xFF in byte j where bit j of the 32-bit mask is set.
inline __m256i bits_to_bytes(const uint8_t* qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    const __m256i shuffle = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), shuffle);
    bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

// Each 32-value format's codes as bytes: signed values for Q4_0, Q5_0 and
// Q8_0 (used with lane_isums_ss), unsigned for Q4_1 and Q5_1 (their minimum
// is added apart; lane_isums_us).
inline __m256i codes(const BlockQ4_0& b) { return _mm256_sub_epi8(nibbles(b.qs), _mm256_set1_epi8(8)); }
inline __m256i codes(const BlockQ4_1& b) { return nibbles(b.qs); }
inline __m256i codes(const BlockQ5_0& b) {
    // A clear fifth bit means value - 16: set the high nibble to 0xF.
    return _mm256_or_si256(nibbles(b.qs), _mm256_andnot_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(char(0xF0))));
}
// Q5_0's codes plus 16 (0..31): unsigned, so that maddubs takes them as
// they are, where signed codes need their sign moved onto the activations
// first (two instructions a row); lane_sums_minus16 takes the 16 off.
inline __m256i codes_plus16(const BlockQ5_0& b) {
    return _mm256_or_si256(nibbles(b.qs), _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
}
inline __m256i codes(const BlockQ5_1& b) {
    return _mm256_or_si256(nibbles(b.qs), _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
}
inline __m256i codes(const BlockQ8_0& b) { return load32(b.qs); }

// A Q5_K block's 32-value slices c = 0..7 as unsigned codes 0..31: slice
// 2j + h in the low (h = 0) or high nibbles of qs[32j..], its fifth bit is
// bit c of qh[l].
inline void q5_K_codes(const BlockQ5_K& x, __m256i* codes) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i qh = load32(x.qh);
    for (int j = 0; j < 4; ++j) {
        const __m256i q = load32(x.qs + 32 * j);
        const __m256i h_lo = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4);
        const __m256i h_hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4);
        codes[2 * j] = _mm256_or_si256(_mm256_and_si256(q, m4), h_lo);
        codes[2 * j + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h_hi);
    }
}

// The integer totals of 8 rows' lane vectors v[0..7], row r in lane r (the
// lanes of a row are summed in some order: exact, as integers).
inline __m256i row_totals(const __m256i* v) {
    const __m256i a = _mm256_hadd_epi32(v[0], v[1]), b = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i c = _mm256_hadd_epi32(v[4], v[5]), e = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i ab = _mm256_hadd_epi32(a, b), ce = _mm256_hadd_epi32(c, e);  // [r0..r3 | r0..r3], [r4..r7 | r4..r7]
    return _mm256_add_epi32(_mm256_permute2x128_si256(ab, ce, 0x20), _mm256_permute2x128_si256(ab, ce, 0x31));
}

// A Q4_K block's integer lanes against its activations: those of the
// scales times codes times activations, and those of the mins times the
// activations' group sums (their totals are the block's two sums).
struct Q4KLanes {
    __m256i scaled, mins;
};

// The AVX2 tile's one-token walk of 8 rows of interleaved Q4_K (llama.cpp's
// rows8 order; the AVX-512 tile decodes the 8 rows' headers together
// instead, which did not pay here: 5.0-5.3 ns per block either way on a
// Zen 5 running the AVX2 path, where the scalar decode overlaps the
// twice-as-many vector steps): per block, `prepare(y)`
// arranges the activations once and `lanes(block, y, prepared)` gives a
// row's lanes; one tree (row_totals) reduces the 8 rows' lanes to a vector
// of their totals and the float steps run on the 8 rows as lanes. Writes
// out[0..7].
template <class Prepare, class Lanes>
inline void q4_K_rows8_one_token(size_t n, const uint8_t* w, size_t w_stride, const BlockQ8_K* y, float* out,
                                 Prepare prepare, Lanes lanes) {
    const BlockQ4_K* x[8];
    for (int r = 0; r < 8; ++r) x[r] = reinterpret_cast<const BlockQ4_K*>(w + size_t(r) * w_stride);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (size_t i = 0; i < n / kQK256; ++i) {
        __m256i scaled[8], mins[8];
        alignas(16) uint16_t d[8], dmin[8];
        const auto prepared = prepare(y[i]);
        for (int r = 0; r < 8; ++r) {
            const BlockQ4_K& b = x[r][i];
            prefetch_next_rows8(x[0], w_stride, i, r, sizeof(BlockQ4_K));
            const Q4KLanes l = lanes(b, y[i], prepared);
            scaled[r] = l.scaled;
            mins[r] = l.mins;
            d[r] = b.d;
            dmin[r] = b.dmin;
        }
        const __m256 yd = _mm256_set1_ps(y[i].d);
        const __m256 dd = _mm256_mul_ps(_mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d))), yd);
        const __m256 dm = _mm256_mul_ps(_mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dmin))), yd);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(scaled)), dd, acc);
        acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(mins)), dm, acc_min);
    }
    _mm256_storeu_ps(out, _mm256_sub_ps(acc, acc_min));
}

// Byte g of `bytes` (8 scales, from k_scales_mins8) in every 16-bit lane.
inline __m256i broadcast_scale(uint64_t bytes, int g) {
    return _mm256_shuffle_epi8(_mm256_set1_epi64x(int64_t(bytes)), _mm256_set1_epi16(int16_t(0x8000 | g)));
}

// The integer total of min * (group sum of the activations) over a Q4_K or
// Q5_K block's 8 groups (mins from k_scales_mins8): as 16-bit pairs m0 m0
// m1 m1 ... against the 16 sums of 16 activations, in 8 lanes.
inline __m256i k_mins_lanes(uint64_t mins, const BlockQ8_K& y) {
    const __m128i m8 = _mm_cvtsi64_si128(int64_t(mins));
    return _mm256_madd_epi16(load32(y.bsums), _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8)));
}

// A Q4_K block's scale * code * activation in 8 lanes (values 64j .. 64j +
// 63 as the low and high nibbles of qs[32j..]); `sc` from k_scales_mins8.
inline __m256i q4_K_scaled_lanes(const BlockQ4_K& x, const BlockQ8_K& y, uint64_t sc) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i scaled = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
        const __m256i q = load32(x.qs + 32 * j);
        const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        const __m256i p_lo = _mm256_maddubs_epi16(lo, load32(y.qs + 64 * j));
        const __m256i p_hi = _mm256_maddubs_epi16(hi, load32(y.qs + 64 * j + 32));
        scaled = _mm256_add_epi32(scaled, _mm256_madd_epi16(p_lo, broadcast_scale(sc, 2 * j)));
        scaled = _mm256_add_epi32(scaled, _mm256_madd_epi16(p_hi, broadcast_scale(sc, 2 * j + 1)));
    }
    return scaled;
}

// A Q6_K block's 32-value slices c = 0..7 as unsigned codes 0..63: low bits
// in ql (low nibbles for c % 4 < 2, high for the others, at 64 (c / 4) +
// 32 (c % 2)), high bits at 2 (c % 4) of qh[32 (c / 4)..].
inline void q6_K_codes(const BlockQ6_K& x, __m256i* codes) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
    for (int h = 0; h < 2; ++h) {
        const __m256i ql0 = load32(x.ql + 64 * h), ql1 = load32(x.ql + 64 * h + 32), qh = load32(x.qh + 32 * h);
        const __m256i low[4] = {_mm256_and_si256(ql0, m4), _mm256_and_si256(ql1, m4),
                                _mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4)};
        for (int k = 0; k < 4; ++k) {
            const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2);
            codes[4 * h + k] = _mm256_or_si256(low[k], _mm256_slli_epi16(high, 4));
        }
    }
}

// Slice c's scales as 16-bit lanes: scale 2c for its first 16 values (the
// low half), 2c + 1 for the others.
inline void q6_K_slice_scales(const BlockQ6_K& x, __m256i* scales) {
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
    for (int h = 0; h < 2; ++h) {
        // 32-bit lane k: scale 8h + k in both 16-bit halves.
        const __m256i s = _mm256_cvtepi8_epi32(h ? _mm_srli_si128(sc, 8) : sc);
        const __m256i both = _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(s, 16));
        for (int c = 0; c < 4; ++c) {
            const __m256i pick = _mm256_setr_epi32(2 * c, 2 * c, 2 * c, 2 * c, 2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1);
            scales[4 * h + c] = _mm256_permutevar8x32_epi32(both, pick);
        }
    }
}

// Lane l: sum over slices of scale * code * activation for values
// 32c + 4l .. 32c + 4l + 3, less 32 * scale * activations of slice l (the
// codes' bias of 32, through the activation sums), as llama.cpp's
// ggml_vec_dot_q6_K_q8_K lanes.
inline __m256i q6_K_lanes(const __m256i* codes, const __m256i* scales, const __m256i& scales16, const BlockQ8_K& y) {
    __m256i sum = _mm256_madd_epi16(_mm256_maddubs_epi16(codes[0], load32(y.qs)), scales[0]);
    for (int c = 1; c < 8; ++c) {
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(codes[c], load32(y.qs + 32 * c)), scales[c]));
    }
    return _mm256_sub_epi32(sum, _mm256_slli_epi32(_mm256_madd_epi16(load32(y.bsums), scales16), 5));
}

}  // namespace smolinfer::quant::avx2

#endif
