// AVX-512 VNNI tiles for the K-quant formats of Q4_K_M files (Q4_K, Q6_K),
// bit-identical to their dots (dot_kquant_ref.cpp): the same integer sums,
// turned into floats and added where llama.cpp does. The dots decode a
// block's codes for every (row, token); the tiles decode them once for all
// the tokens of the tile.
//
// Q4_K (matrices llama.cpp interleaves by 8 rows) needs one integer total
// per (row, token, 64 or 256 values). Rather than reducing lanes for each,
// 16 rows are transposed so that 32-bit lane r holds row r: a VPDPBUSD with
// four activation bytes broadcast adds four products to every row at once,
// and the per-row totals come out in lanes, ready for the float step.
//
// Q6_K keeps llama.cpp's 8 lanes per row (value e in lane (e % 32) / 4), so
// two rows share a register, as the 32-value tiles do, and the scale of
// every 16 values is applied by VPDPWSSD on the pairwise products.
#include "quant/tile_avx512.h"

#if defined(__x86_64__) && defined(SMOLINFER_HAVE_AVX512_TILES)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/simd_avx2.h"

namespace smolinfer::quant::avx512 {

namespace {

// Vectors kept per token (std::vector drops __m512's alignment attribute).
struct alignas(64) F16 {
    __m512 v;
};
struct alignas(64) I16 {
    __m512i v;
};

// ---------------------------------------------------------------- Q4_K

constexpr int kLaneRows = 16;  // rows of a transposed group, one per 32-bit lane

// One block of up to 16 rows, transposed: lane r of every vector is row r.
struct Q4KBlock16 {
    // Codes of values 64j + 4k .. 64j + 4k + 3 (lo) and 64j + 32 + 4k .. (hi),
    // as four unsigned bytes.
    __m512i lo[4][8], hi[4][8];
    __m512i scale[8];     // 6-bit scale of 32-value group g
    __m512i min_pair[4];  // mins of groups 2j and 2j+1 as two 16-bit halves
    __m512 d, dmin;
};

inline __m512i gather(__mmask16 rows, __m512i offsets, const uint8_t* at) {
    return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rows, offsets, at, 1);
}

inline __m512i bits(__m512i v, int shift, int mask) {
    return _mm512_and_si512(_mm512_srli_epi32(v, unsigned(shift)), _mm512_set1_epi32(mask));
}

// Block i of the rows whose first bytes are at `block` + offsets[r].
void load_q4_K(const uint8_t* block, __m512i offsets, __mmask16 rows, Q4KBlock16& b) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const uint8_t* qs = block + offsetof(BlockQ4_K, qs);
    for (int j = 0; j < 4; ++j) {
        for (int k = 0; k < 8; ++k) {
            const __m512i raw = gather(rows, offsets, qs + 32 * j + 4 * k);
            b.lo[j][k] = _mm512_and_si512(raw, m4);
            b.hi[j][k] = _mm512_and_si512(_mm512_srli_epi32(raw, 4), m4);
        }
    }
    const __m512i dm = gather(rows, offsets, block + offsetof(BlockQ4_K, d));
    b.d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
    b.dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
    // The 12 scale bytes (k_scale_min in blocks.h): q[0..3] hold scales 0..3
    // and the top bits of 4..7, q[4..7] mins 0..3 and the top bits of mins
    // 4..7, q[8..11] the low bits of scales and mins 4..7.
    const uint8_t* sc = block + offsetof(BlockQ4_K, scales);
    const __m512i a = gather(rows, offsets, sc), m = gather(rows, offsets, sc + 4), c = gather(rows, offsets, sc + 8);
    __m512i mins[8];
    for (int j = 0; j < 4; ++j) {
        b.scale[j] = bits(a, 8 * j, 63);
        mins[j] = bits(m, 8 * j, 63);
        b.scale[j + 4] = _mm512_or_si512(bits(c, 8 * j, 0xF), _mm512_slli_epi32(bits(a, 8 * j + 6, 3), 4));
        mins[j + 4] = _mm512_or_si512(bits(c, 8 * j + 4, 0xF), _mm512_slli_epi32(bits(m, 8 * j + 6, 3), 4));
    }
    for (int j = 0; j < 4; ++j) b.min_pair[j] = _mm512_or_si512(mins[2 * j], _mm512_slli_epi32(mins[2 * j + 1], 16));
}

// What the Q4_K tiles need of a token's block besides its codes.
struct Q8KSums {
    float d;
    int32_t group_pair[4];  // sums of groups 2j and 2j+1 as two 16-bit halves
};

void q8_K_sums(const Tile& tile, size_t nb, std::vector<Q8KSums>& sums) {
    sums.resize(size_t(tile.tokens) * nb);
    for (int t = 0; t < tile.tokens; ++t) {
        const auto* y = reinterpret_cast<const BlockQ8_K*>(tile.a + size_t(t) * tile.a_stride);
        for (size_t i = 0; i < nb; ++i) {
            Q8KSums& s = sums[size_t(t) * nb + i];
            s.d = y[i].d;
            for (int j = 0; j < 4; ++j) {
                const int16_t* bs = y[i].bsums + 4 * j;
                // Each group sum is at most 32 * 128 in size: it fits 16 bits.
                const uint32_t lo = uint16_t(int16_t(bs[0] + bs[1])), hi = uint16_t(int16_t(bs[2] + bs[3]));
                s.group_pair[j] = int32_t(lo | (hi << 16));
            }
        }
    }
}

// llama.cpp's interleaved Q4_K kernels (rows in groups of 8): per block
// (kSteps = 1, dot_q4_K_q8_K_rows8) or per 64 values (kSteps = 4, four
// tokens at a time, _tokens4), one fused multiply-add of the scaled integer
// total by d and one of the minimums' total by dmin; acc - acc_min at the end.
template <int kSteps>
void tile_q4_K(size_t n, const Tile& tile) {
    const size_t nb = n / kQK256;
    thread_local std::vector<Q8KSums> sums;
    thread_local std::vector<F16> acc;  // [token][scaled, minimums]
    thread_local std::vector<I16> isum;  // kSteps == 1: [token][scaled, minimums] of the block so far
    q8_K_sums(tile, nb, sums);
    acc.resize(2 * size_t(tile.tokens));
    if constexpr (kSteps == 1) isum.resize(2 * size_t(tile.tokens));
    thread_local Q4KBlock16 b;

    for (int r0 = 0; r0 < tile.rows; r0 += kLaneRows) {
        const int rows = std::min(kLaneRows, tile.rows - r0);
        const __mmask16 mask = __mmask16((1u << rows) - 1);
        const __m512i offsets = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                                   _mm512_set1_epi32(int32_t(tile.w_stride)));
        const uint8_t* w = tile.w + size_t(r0) * tile.w_stride;
        for (auto& a : acc) a.v = _mm512_setzero_ps();
        for (size_t i = 0; i < nb; ++i) {
            load_q4_K(w + i * sizeof(BlockQ4_K), offsets, mask, b);
            for (int j = 0; j < 4; ++j) {
                __m512i lo[8], hi[8];
                for (int k = 0; k < 8; ++k) lo[k] = b.lo[j][k], hi[k] = b.hi[j][k];
                const __m512i s_lo = b.scale[2 * j], s_hi = b.scale[2 * j + 1], min_pair = b.min_pair[j];
                for (int t = 0; t < tile.tokens; ++t) {
                    const auto* y = reinterpret_cast<const BlockQ8_K*>(tile.a + size_t(t) * tile.a_stride) + i;
                    const int8_t* q = y->qs + 64 * j;
                    __m512i g_lo = _mm512_setzero_si512(), g_hi = _mm512_setzero_si512();
                    for (int k = 0; k < 8; ++k) {
                        int32_t a_lo, a_hi;
                        std::memcpy(&a_lo, q + 4 * k, 4);
                        std::memcpy(&a_hi, q + 32 + 4 * k, 4);
                        g_lo = _mm512_dpbusd_epi32(g_lo, lo[k], _mm512_set1_epi32(a_lo));
                        g_hi = _mm512_dpbusd_epi32(g_hi, hi[k], _mm512_set1_epi32(a_hi));
                    }
                    const Q8KSums& s = sums[size_t(t) * nb + i];
                    const __m512i scaled = _mm512_add_epi32(_mm512_mullo_epi32(g_lo, s_lo), _mm512_mullo_epi32(g_hi, s_hi));
                    const __m512i mins = _mm512_dpwssd_epi32(_mm512_setzero_si512(), min_pair, _mm512_set1_epi32(s.group_pair[j]));
                    __m512i total[2] = {scaled, mins};
                    if constexpr (kSteps == 1) {  // the block's totals so far
                        __m512i* so_far = &isum[2 * size_t(t)].v;
                        if (j > 0) {
                            total[0] = _mm512_add_epi32(so_far[0], scaled);
                            total[1] = _mm512_add_epi32(so_far[1], mins);
                        }
                        if (j < 3) {
                            so_far[0] = total[0];
                            so_far[1] = total[1];
                            continue;
                        }
                    }
                    const __m512 yd = _mm512_set1_ps(s.d);
                    __m512* a = &acc[2 * size_t(t)].v;
                    a[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[0]), _mm512_mul_ps(b.d, yd), a[0]);
                    a[1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[1]), _mm512_mul_ps(b.dmin, yd), a[1]);
                }
            }
        }
        for (int t = 0; t < tile.tokens; ++t) {
            float* out = tile.out + size_t(t) * tile.out_stride + size_t(r0);
            _mm512_mask_storeu_ps(out, mask, _mm512_sub_ps(acc[2 * size_t(t)].v, acc[2 * size_t(t) + 1].v));
        }
    }
}

// ---------------------------------------------------------------- Q6_K

// One block of two rows: row 0 in the low 256 bits of every vector, row 1
// in the high.
struct Q6KBlock2 {
    __m512i codes[8];   // 32-value slice c: unsigned codes 0..63
    __m512i scales[8];  // slice c: 16-bit scale of its lanes 0..3, then 4..7
    __m512i bias;       // 16-bit -32 * scale[g], g = 0..15: the codes' bias of 32
    __m512 d;
};

inline __m512i load2(const uint8_t* p0, const uint8_t* p1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1)), 1);
}

void load_q6_K(const BlockQ6_K& x0, const BlockQ6_K& x1, Q6KBlock2& b) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
    for (int h = 0; h < 2; ++h) {
        // Slice 4h + k: low bits in ql (low nibbles for k < 2, high for
        // k >= 2, at 32 * (k % 2)), high bits at 2k of qh[32h..].
        const __m512i ql0 = load2(x0.ql + 64 * h, x1.ql + 64 * h);
        const __m512i ql1 = load2(x0.ql + 64 * h + 32, x1.ql + 64 * h + 32);
        const __m512i qh = load2(x0.qh + 32 * h, x1.qh + 32 * h);
        const __m512i low[4] = {_mm512_and_si512(ql0, m4), _mm512_and_si512(ql1, m4),
                                _mm512_and_si512(_mm512_srli_epi16(ql0, 4), m4),
                                _mm512_and_si512(_mm512_srli_epi16(ql1, 4), m4)};
        for (int k = 0; k < 4; ++k) {
            const __m512i high = _mm512_and_si512(_mm512_srli_epi16(qh, unsigned(2 * k)), m2);
            b.codes[4 * h + k] = _mm512_or_si512(low[k], _mm512_slli_epi16(high, 4));
        }
    }
    // Both rows' 16 scales as 16-bit values: row 0 in 0..15, row 1 in 16..31.
    const __m512i sc = _mm512_cvtepi8_epi16(
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x0.scales))),
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(x1.scales)), 1));
    // Slice c's lanes 0..3 take scale 2c, lanes 4..7 scale 2c + 1, of their row.
    const __m512i step = _mm512_set_epi64(0x0011001100110011, 0x0011001100110011, 0x0010001000100010, 0x0010001000100010,
                                          0x0001000100010001, 0x0001000100010001, 0, 0);
    for (int c = 0; c < 8; ++c) b.scales[c] = _mm512_permutexvar_epi16(_mm512_add_epi16(_mm512_set1_epi16(int16_t(2 * c)), step), sc);
    b.bias = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(sc, 5));
    const __m256i dh = _mm256_set_m128i(_mm_set1_epi16(int16_t(x1.d)), _mm_set1_epi16(int16_t(x0.d)));
    b.d = _mm512_cvtph_ps(dh);
}

// dot_q6_K_q8_K for every (row, token): per block and row, 8 integer lanes
// of scale * code * activation (the unsigned codes, then the bias of 32
// taken off per 32-value slice through the activation sums), one fused
// multiply-add per lane by d, hsum8 at the end.
void tile_q6_K(size_t n, const Tile& tile) {
    const size_t nb = n / kQK256;
    thread_local std::vector<F16> acc;
    acc.resize(size_t(tile.tokens));
    thread_local Q6KBlock2 b;
    for (int r = 0; r < tile.rows; r += 2) {
        prefetch_tile_rows(tile, r + kTilePrefetchRows, 2);
        const bool pair = r + 1 < tile.rows;
        const auto* x0 = reinterpret_cast<const BlockQ6_K*>(tile.w + size_t(r) * tile.w_stride);
        const auto* x1 = pair ? reinterpret_cast<const BlockQ6_K*>(tile.w + size_t(r + 1) * tile.w_stride) : x0;
        for (auto& a : acc) a.v = _mm512_setzero_ps();
        for (size_t i = 0; i < nb; ++i) {
            load_q6_K(x0[i], x1[i], b);
            __m512i codes[8], scales[8];
            for (int c = 0; c < 8; ++c) codes[c] = b.codes[c], scales[c] = b.scales[c];
            const __m512i bias = b.bias;
            const __m512 d = b.d;
            for (int t = 0; t < tile.tokens; ++t) {
                const auto* y = reinterpret_cast<const BlockQ8_K*>(tile.a + size_t(t) * tile.a_stride) + i;
                const __m512i bsums = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y->bsums)));
                __m512i lanes = _mm512_madd_epi16(bsums, bias);
                for (int c = 0; c < 8; ++c) {
                    const __m512i act = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y->qs + 32 * c)));
                    lanes = _mm512_dpwssd_epi32(lanes, _mm512_maddubs_epi16(codes[c], act), scales[c]);
                }
                acc[size_t(t)].v = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(y->d), d), _mm512_cvtepi32_ps(lanes), acc[size_t(t)].v);
            }
        }
        for (int t = 0; t < tile.tokens; ++t) {
            const __m512 v = acc[size_t(t)].v;
            float* out = tile.out + size_t(t) * tile.out_stride + size_t(r);
            out[0] = avx2::hsum8(_mm512_castps512_ps256(v));
            if (pair) out[1] = avx2::hsum8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        }
    }
}

// ---------------------------------------------------------------- one token
//
// A single token's dot streams a row of the matrix once: each block is read
// from memory and used once, so there is nothing to share and the work per
// block must stay below the time its bytes take to arrive (decoding a
// 1.7B-shaped Q4_K_M model, the AVX2 dots were compute-bound at 0.7x the
// speed of llama.cpp's). These use the whole register width per block.

// dot_q4_K_q8_K_rows8: per block one integer total of scale * code *
// activation and one of min * (group sum of the activations). The codes
// times the activations in 16-bit pairs (VPMADDUBSW), then times the
// group's scale into 32-bit lanes (VPDPWSSD), over the whole block; the
// totals are the sums of the lanes q4_K_block_lanes returns.
//
// 64 bytes of codes hold 4 groups: the low nibbles of bytes 0-31 group 4h,
// the high nibbles group 4h + 1, bytes 32-63 groups 4h + 2 and 4h + 3. One
// load, a mask and a shift give two registers of two groups each; the
// activations are arranged once per block to match (Q4KActivations).
struct Q4KActivations {
    __m512i act[4];  // groups [0 | 2], [1 | 3], [4 | 6], [5 | 7] as 256-bit halves
};

inline Q4KActivations q4_K_activations(const BlockQ8_K& y) {
    const auto half = [&](int g) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs + 32 * g)); };
    const auto pair = [&](int g0, int g1) { return _mm512_inserti64x4(_mm512_castsi256_si512(half(g0)), half(g1), 1); };
    return {{pair(0, 2), pair(1, 3), pair(4, 6), pair(5, 7)}};
}

// A block's scale * code * activation lanes, folded to 8; `scales`: its 8
// scale bytes (k_scales_mins8's) in every 64-bit lane. A byte shuffle
// (cheaper than a word permute) puts register k's two scales in 16-bit
// lanes 0-15 and 16-31, index 0x80 giving the zero high bytes.
inline __m256i q4_K_scaled_lanes(const BlockQ4_K& x, __m512i scales, const Q4KActivations& a) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const auto pick = [](int g0, int g1) {
        return _mm512_mask_blend_epi64(0xF0, _mm512_set1_epi16(int16_t(0x8000 | g0)), _mm512_set1_epi16(int16_t(0x8000 | g1)));
    };
    const __m512i q0 = _mm512_loadu_si512(x.qs), q1 = _mm512_loadu_si512(x.qs + 64);
    const __m512i codes[4] = {_mm512_and_si512(q0, m4), _mm512_and_si512(_mm512_srli_epi16(q0, 4), m4),
                              _mm512_and_si512(q1, m4), _mm512_and_si512(_mm512_srli_epi16(q1, 4), m4)};
    const __m512i picks[4] = {pick(0, 2), pick(1, 3), pick(4, 6), pick(5, 7)};
    __m512i scaled = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
        scaled = _mm512_dpwssd_epi32(scaled, _mm512_maddubs_epi16(codes[k], a.act[k]), _mm512_shuffle_epi8(scales, picks[k]));
    }
    return _mm256_add_epi32(_mm512_castsi512_si256(scaled), _mm512_extracti64x4_epi64(scaled, 1));
}

inline avx2::Q4KLanes q4_K_block_lanes(const BlockQ4_K& x, const BlockQ8_K& y, const Q4KActivations& a) {
    uint64_t sc, mn;
    k_scales_mins8(x.scales, &sc, &mn);
    // mins as 16-bit pairs (m0 m0 m1 m1 ...) against the 16 activation sums of 16 values.
    const __m128i mins8 = _mm_cvtsi64_si128(int64_t(mn));
    const __m256i mins = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)),
                                           _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mins8, mins8)));
    return {q4_K_scaled_lanes(x, _mm512_set1_epi64(int64_t(sc)), a), mins};
}

float dot_q4_K_rows8(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0.0f, acc_min = 0.0f;
    for (size_t i = 0; i < n / kQK256; ++i) {
        prefetch_ahead(x + i, sizeof(BlockQ4_K));
        const avx2::Q4KLanes l = q4_K_block_lanes(x[i], y[i], q4_K_activations(y[i]));
        // [s01 s23 m01 m23 | s45 s67 m45 m67] -> [s0123 m0123 ... | s4567 m4567 ...]
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(l.scaled, l.mins), _mm256_setzero_si256());
        const __m128i t = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        const float yd = y[i].d;
        acc = std::fma(float(_mm_cvtsi128_si32(t)), _cvtsh_ss(x[i].d) * yd, acc);
        acc_min = std::fma(float(_mm_extract_epi32(t, 1)), _cvtsh_ss(x[i].dmin) * yd, acc_min);
    }
    return acc - acc_min;
}

// The first 16 bytes (d, dmin, the 12 bytes of scales and mins) of block
// i of 8 rows, decoded in vectors: the scalar decode (k_scales_mins8) and
// the d/dmin gathers were a third of the instructions of a row's block.
struct Q4KHeaders8 {
    __m512i scales;  // row r's 8 scale bytes in 64-bit lane r (k_scales_mins8's order)
    __m512i mins;    // row r's 8 min bytes in 64-bit lane r
    __m256 d, dmin;  // row r in lane r
};

// Four rows' headers (one per 128-bit lane: dwords [d|dmin, u0, u1, u2])
// as dwords [sc_lo, s_hi, mn_lo, m_hi] per lane, k_scales_mins8's formulas.
inline __m512i q4_K_scales_mins4(__m512i h) {
    const __m512i p = _mm512_shuffle_epi32(h, _MM_PERM_ENUM(_MM_SHUFFLE(3, 2, 3, 1)));  // [u0, u2, u1, u2]
    const __m512i q = _mm512_shuffle_epi32(h, _MM_PERM_ENUM(_MM_SHUFFLE(2, 2, 1, 1)));  // [u0, u0, u1, u1]
    const __m512i lo = _mm512_and_si512(p, _mm512_set1_epi32(0x3f3f3f3f));
    const __m512i high_nibbles = _mm512_and_si512(_mm512_srlv_epi32(p, _mm512_set4_epi32(4, 0, 0, 0)), _mm512_set1_epi32(0x0f0f0f0f));
    const __m512i top_bits = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(q, 6), _mm512_set1_epi32(0x03030303)), 4);
    return _mm512_mask_blend_epi32(0xAAAA, lo, _mm512_or_si512(high_nibbles, top_bits));
}

inline Q4KHeaders8 q4_K_headers8(const BlockQ4_K* const* x, size_t i) {
    const auto head = [&](int r) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(&x[r][i])); };
    const auto four = [&](int r) {
        const __m256i a = _mm256_inserti128_si256(_mm256_castsi128_si256(head(r)), head(r + 1), 1);
        const __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(head(r + 2)), head(r + 3), 1);
        return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    };
    const __m512i h0 = four(0), h1 = four(4);
    const __m512i a = q4_K_scales_mins4(h0), b = q4_K_scales_mins4(h1);
    const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    // Word 0 (d) and word 1 (dmin) of each row's lane.
    const __m512i d_words = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                             56, 48, 40, 32, 24, 16, 8, 0);
    const __m512i dmin_words = _mm512_add_epi16(d_words, _mm512_set1_epi16(1));
    const __m512i bits = _mm512_permutex2var_epi16(h0, d_words, h1);
    const __m512i min_bits = _mm512_permutex2var_epi16(h0, dmin_words, h1);
    return {_mm512_permutex2var_epi64(a, even, b), _mm512_permutex2var_epi64(a, odd, b),
            _mm256_cvtph_ps(_mm512_castsi512_si128(bits)), _mm256_cvtph_ps(_mm512_castsi512_si128(min_bits))};
}

// The 8 rows' totals of min * (group sum of the activations): the group
// sums (pairs of bsums, at most 4096 in magnitude: 16-bit) against every row's
// mins at once. Integer sums, so any order gives the reference's totals.
inline __m256i q4_K_min_totals8(__m512i mins, const BlockQ8_K& y) {
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
    const __m128i group = _mm256_cvtepi32_epi16(_mm256_madd_epi16(bsums, _mm256_set1_epi16(1)));
    const __m512i groups = _mm512_broadcast_i32x4(group);
    // Rows 0-3 and 4-7: 4 dwords per row, each two groups' products.
    const __m512i lo = _mm512_madd_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(mins)), groups);
    const __m512i hi = _mm512_madd_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(mins, 1)), groups);
    // 128-bit lane k of x: two partial sums of row k, two of row k + 4; of t:
    // those rows' totals, each twice.
    const __m512i x = _mm512_add_epi32(_mm512_unpacklo_epi64(lo, hi), _mm512_unpackhi_epi64(lo, hi));
    const __m512i t = _mm512_add_epi32(x, _mm512_shuffle_epi32(x, _MM_PERM_ENUM(_MM_SHUFFLE(2, 3, 0, 1))));
    const __m512i order = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 10, 6, 2, 12, 8, 4, 0);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, t));
}

// One token (decoding): dot_q4_K_rows8 for 8 rows at once. Per block the
// 8 rows' headers are decoded together, each row's scaled lanes come from
// the whole register, one tree reduces them, and the float steps run on
// the 8 rows as lanes: the same integer totals and float operations, in the
// same order, as the dot.
void q4_K_one_token_rows8(size_t n, const Tile& tile, int r0) {
    const uint8_t* w = tile.w + size_t(r0) * tile.w_stride;
    const auto* y = reinterpret_cast<const BlockQ8_K*>(tile.a);
    const BlockQ4_K* x[8];
    for (int r = 0; r < 8; ++r) x[r] = reinterpret_cast<const BlockQ4_K*>(w + size_t(r) * tile.w_stride);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (size_t i = 0; i < n / kQK256; ++i) {
        const Q4KHeaders8 h = q4_K_headers8(x, i);
        const Q4KActivations a = q4_K_activations(y[i]);
        __m256i scaled[8];
        for (int r = 0; r < 8; ++r) {
            prefetch_next_rows8(x[0], tile.w_stride, i, r, sizeof(BlockQ4_K));
            scaled[r] = q4_K_scaled_lanes(x[r][i], _mm512_permutexvar_epi64(_mm512_set1_epi64(r), h.scales), a);
        }
        const __m256 yd = _mm256_set1_ps(y[i].d);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(avx2::row_totals(scaled)), _mm256_mul_ps(h.d, yd), acc);
        acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q4_K_min_totals8(h.mins, y[i])), _mm256_mul_ps(h.dmin, yd), acc_min);
    }
    _mm256_storeu_ps(tile.out + r0, _mm256_sub_ps(acc, acc_min));
}

void tile_q4_K_rows8(size_t n, const Tile& tile) {
    if (tile.tokens > 1) return tile_q4_K<1>(n, tile);
    int r = 0;
    for (; r + 8 <= tile.rows; r += 8) q4_K_one_token_rows8(n, tile, r);
    for (; r < tile.rows; ++r) tile.out[r] = dot_q4_K_rows8(n, tile.w + size_t(r) * tile.w_stride, tile.a);
}

// dot_q6_K_q8_K: 8 integer lanes per block (two 32-value slices a register,
// folded at the end of the block), the bias of 32 through the activation
// sums, one fused multiply-add per lane by d, hsum8 at the end.
float dot_q6_K(size_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
    // Slices 4h + 0 and 4h + 1 take qh's bits 0-1 and 2-3; 4h + 2 and 4h + 3 bits 4-5 and 6-7.
    const __m512i shift_a = _mm512_maskz_mov_epi64(0xF0, _mm512_set1_epi16(2));
    const __m512i shift_b = _mm512_mask_blend_epi64(0xF0, _mm512_set1_epi16(4), _mm512_set1_epi16(6));
    // 16-bit lanes 0-7, 8-15, 16-23, 24-31 of a register: scales 2c + 0, 1, 2, 3.
    const __m512i scale_step = _mm512_set_epi64(0x0003000300030003, 0x0003000300030003, 0x0002000200020002,
                                                0x0002000200020002, 0x0001000100010001, 0x0001000100010001, 0, 0);
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n / kQK256; ++i) {
        prefetch_ahead(x + i, sizeof(BlockQ6_K));
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales)));
        const __m512i sc = _mm512_zextsi256_si512(sc16);
        __m512i lanes = _mm512_setzero_si512();
        for (int h = 0; h < 2; ++h) {
            const __m512i ql = _mm512_loadu_si512(x[i].ql + 64 * h);
            const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh + 32 * h)));
            const __m512i pair[2] = {
                _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_a), m2), 4)),
                _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_b), m2), 4)),
            };
            for (int p = 0; p < 2; ++p) {
                const int c = 4 * h + 2 * p;  // slices c and c + 1; scales 2c .. 2c + 3
                const __m512i pick = _mm512_add_epi16(_mm512_set1_epi16(int16_t(2 * c)), scale_step);
                const __m512i act = _mm512_loadu_si512(y[i].qs + 32 * c);
                lanes = _mm512_dpwssd_epi32(lanes, _mm512_maddubs_epi16(pair[p], act), _mm512_permutexvar_epi16(pick, sc));
            }
        }
        const __m256i folded = _mm256_add_epi32(_mm512_castsi512_si256(lanes), _mm512_extracti64x4_epi64(lanes, 1));
        const __m256i bias = _mm256_slli_epi32(
            _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums)), sc16), 5);
        const float d = y[i].d * _cvtsh_ss(x[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_sub_epi32(folded, bias)), acc);
    }
    return avx2::hsum8(acc);
}

}  // namespace

TileFn kquant_tile_for(Type weight, bool rows8, bool batched) {
    if (weight == Type::Q4_K && rows8) return batched ? tile_q4_K<4> : tile_q4_K_rows8;
    if (weight == Type::Q6_K && !batched) return tile_q6_K;
    return nullptr;
}

DotFn kquant_dot_for(Type weight, bool rows8) {
    if (weight == Type::Q4_K && rows8) return dot_q4_K_rows8;
    if (weight == Type::Q6_K) return dot_q6_K;
    return nullptr;
}

}  // namespace smolinfer::quant::avx512

#else

namespace smolinfer::quant::avx512 {
TileFn kquant_tile_for(Type, bool, bool) { return nullptr; }
DotFn kquant_dot_for(Type, bool) { return nullptr; }
}  // namespace smolinfer::quant::avx512

#endif
