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
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "quant/blocks.h"

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
    isum.resize(2 * size_t(tile.tokens));
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
                    __m512i* total = &isum[2 * size_t(t)].v;
                    if constexpr (kSteps == 1) {
                        total[0] = j == 0 ? scaled : _mm512_add_epi32(total[0], scaled);
                        total[1] = j == 0 ? mins : _mm512_add_epi32(total[1], mins);
                        if (j < 3) continue;
                    } else {
                        total[0] = scaled;
                        total[1] = mins;
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
    for (int c = 0; c < 8; ++c) {
        const __m512i pick = _mm512_set_epi16(17 + 2 * c, 17 + 2 * c, 17 + 2 * c, 17 + 2 * c, 17 + 2 * c, 17 + 2 * c,
                                              17 + 2 * c, 17 + 2 * c, 16 + 2 * c, 16 + 2 * c, 16 + 2 * c, 16 + 2 * c,
                                              16 + 2 * c, 16 + 2 * c, 16 + 2 * c, 16 + 2 * c, 1 + 2 * c, 1 + 2 * c,
                                              1 + 2 * c, 1 + 2 * c, 1 + 2 * c, 1 + 2 * c, 1 + 2 * c, 1 + 2 * c, 2 * c,
                                              2 * c, 2 * c, 2 * c, 2 * c, 2 * c, 2 * c, 2 * c);
        b.scales[c] = _mm512_permutexvar_epi16(pick, sc);
    }
    b.bias = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(sc, 5));
    const __m256i dh = _mm256_set_m128i(_mm_set1_epi16(int16_t(x1.d)), _mm_set1_epi16(int16_t(x0.d)));
    b.d = _mm512_cvtph_ps(dh);
}

// ggml's hsum_float_8 of each half.
inline void hsum8_halves(__m512 v, float* lo, float* hi) {
    const auto h8 = [](__m256 x) {
        __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
        r = _mm_add_ps(r, _mm_movehl_ps(r, r));
        r = _mm_add_ss(r, _mm_movehdup_ps(r));
        return _mm_cvtss_f32(r);
    };
    *lo = h8(_mm512_castps512_ps256(v));
    *hi = h8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
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
            float lo, hi;
            hsum8_halves(acc[size_t(t)].v, &lo, &hi);
            float* out = tile.out + size_t(t) * tile.out_stride + size_t(r);
            out[0] = lo;
            if (pair) out[1] = hi;
        }
    }
}

}  // namespace

TileFn kquant_tile_for(Type weight, bool rows8, bool batched) {
    if (weight == Type::Q4_K && rows8) return batched ? tile_q4_K<4> : tile_q4_K<1>;
    if (weight == Type::Q6_K && !batched) return tile_q6_K;
    return nullptr;
}

}  // namespace smolinfer::quant::avx512

#else

namespace smolinfer::quant::avx512 {
TileFn kquant_tile_for(Type, bool, bool) { return nullptr; }
}  // namespace smolinfer::quant::avx512

#endif
