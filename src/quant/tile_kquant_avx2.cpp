// AVX2 tiles for the K-quant formats of Q4_K_M and Q5_K_M files (Q4_K, Q5_K, Q6_K),
// bit-identical to their AVX2 dots (dot_kquant_avx2.cpp): the same integer
// sums, turned into floats and added where llama.cpp does. A dot decodes a
// block's codes for every (row, token); a tile decodes them once for all the
// tokens of the tile, and runs several tokens' chains side by side.
//
// Q4_K (matrices llama.cpp interleaves by 8 rows) needs one integer total
// per (row, token, 64 or 256 values), in any lane order. Rather than
// reducing 8 lanes for each, 8 rows are transposed so that 32-bit lane r
// holds row r (as the AVX-512 tile does with 16): a VPMADDUBSW with four
// activation bytes broadcast adds two pairs of products to every row at
// once. Eight of those sum in 16 bits (|code * act| <= 15 * 128, so 16
// products stay below 2^15), then one VPMADDWD applies the 32 values'
// scale, and the per-row totals come out in lanes, ready for the float step.
//
// Q5_K and Q6_K keep the dot's 8 lanes per row (value e in lane (e % 32) / 4):
// their floats are summed per lane, so the lanes themselves must match.
#include "quant/tile_avx2.h"

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "quant/blocks.h"
#include "quant/dot_avx2.h"
#include "quant/fp16.h"
#include "quant/simd_avx2.h"

// A named namespace: this file shares a unity build with the other AVX2 kernels.
namespace smolinfer::quant::avx2::kquant_tiles {

namespace {

// Vectors kept per token (std::vector drops __m256's alignment attribute).
struct alignas(32) F8 {
    __m256 v;
};

// ---------------------------------------------------------------- Q4_K

constexpr int kLaneRows = 8;  // rows of a transposed group, one per 32-bit lane

// One block of 8 rows, transposed: 32-bit lane r of every vector is row r.
struct Q4KBlock8 {
    // Codes of values 64j + 4k .. 64j + 4k + 3 (lo) and 64j + 32 + 4k .. (hi),
    // as four unsigned bytes.
    __m256i lo[4][8], hi[4][8];
    __m256i scale[8];     // 6-bit scale of 32-value group g, in both 16-bit halves
    __m256i min_pair[4];  // mins of groups 2j and 2j+1 as two 16-bit halves
    __m256 d, dmin;
};

// Dwords 0..3 of a, b, c, e (each 128-bit half apart) -> dword k of the four.
inline void transpose4(__m256i a, __m256i b, __m256i c, __m256i e, __m256i* out) {
    const __m256i t0 = _mm256_unpacklo_epi32(a, b), t1 = _mm256_unpackhi_epi32(a, b);
    const __m256i t2 = _mm256_unpacklo_epi32(c, e), t3 = _mm256_unpackhi_epi32(c, e);
    out[0] = _mm256_unpacklo_epi64(t0, t2);
    out[1] = _mm256_unpackhi_epi64(t0, t2);
    out[2] = _mm256_unpacklo_epi64(t1, t3);
    out[3] = _mm256_unpackhi_epi64(t1, t3);
}

// 16 bytes of row r in the low half and of row r + 4 in the high half.
inline __m256i load_pair(const uint8_t* low, const uint8_t* high) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(low))),
                                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(high)), 1);
}

inline __m256i bits(__m256i v, int shift, int mask) {
    return _mm256_and_si256(_mm256_srli_epi32(v, shift), _mm256_set1_epi32(mask));
}

// One block of 8 rows (x[r]: row r's), into lanes: each 128-bit half is
// transposed on its own, rows 0-3 in the low half and 4-7 in the high.
void load_q4_K(const BlockQ4_K* const* x, Q4KBlock8& b) {
    const auto* p = reinterpret_cast<const uint8_t* const*>(x);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {  // dwords 4 half .. 4 half + 3 of qs[32j..]
            const size_t at = offsetof(BlockQ4_K, qs) + size_t(32 * j + 16 * half);
            __m256i k4[4];
            transpose4(load_pair(p[0] + at, p[4] + at), load_pair(p[1] + at, p[5] + at), load_pair(p[2] + at, p[6] + at),
                       load_pair(p[3] + at, p[7] + at), k4);
            for (int k = 0; k < 4; ++k) {
                b.lo[j][4 * half + k] = _mm256_and_si256(k4[k], m4);
                b.hi[j][4 * half + k] = _mm256_and_si256(_mm256_srli_epi16(k4[k], 4), m4);
            }
        }
    }
    // The 16 bytes before the codes: d and dmin, then the 12 scale bytes
    // (k_scale_min in blocks.h): q[0..3] hold scales 0..3 and the top bits of
    // 4..7, q[4..7] mins 0..3 and the top bits of mins 4..7, q[8..11] the low
    // bits of scales and mins 4..7.
    __m256i head[4];  // d | dmin << 16, q[0..3], q[4..7], q[8..11]
    transpose4(load_pair(p[0], p[4]), load_pair(p[1], p[5]), load_pair(p[2], p[6]), load_pair(p[3], p[7]), head);
    const __m256i a = head[1], m = head[2], c = head[3];
    __m256i mins[8];
    for (int j = 0; j < 4; ++j) {
        b.scale[j] = bits(a, 8 * j, 63);
        mins[j] = bits(m, 8 * j, 63);
        b.scale[j + 4] = _mm256_or_si256(bits(c, 8 * j, 0xF), _mm256_slli_epi32(bits(a, 8 * j + 6, 3), 4));
        mins[j + 4] = _mm256_or_si256(bits(c, 8 * j + 4, 0xF), _mm256_slli_epi32(bits(m, 8 * j + 6, 3), 4));
    }
    for (int g = 0; g < 8; ++g) b.scale[g] = _mm256_or_si256(b.scale[g], _mm256_slli_epi32(b.scale[g], 16));
    for (int j = 0; j < 4; ++j) b.min_pair[j] = _mm256_or_si256(mins[2 * j], _mm256_slli_epi32(mins[2 * j + 1], 16));
    // Halves to floats: the low (d) or high (dmin) 16 bits of each lane, packed.
    const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,  //
                                          0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    const __m256i halves = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(head[0], pick), 0xD8);  // d0..7, dmin0..7
    b.d = _mm256_cvtph_ps(_mm256_castsi256_si128(halves));
    b.dmin = _mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1));
}

// What the Q4_K tiles need of a token's block besides its codes.
struct Q8KSums {
    float d;
    int32_t group_pair[4];  // sums of groups 2j and 2j+1 as two 16-bit halves
};

// The sums of every (token, block) of a tile's activations, [token][block]:
// made once per matrix product (its tiles share the activations, named by
// Tile::activation_id) rather than once per tile of 16 rows.
struct Q8KPrepared {
    uint64_t id = 0;
    const uint8_t* a = nullptr;
    int tokens = 0;
    size_t nb = 0;
    std::vector<Q8KSums> sums;
};

const Q8KSums* q8_K_sums(const Tile& tile, size_t nb) {
    thread_local Q8KPrepared p;
    if (tile.activation_id != 0 && p.id == tile.activation_id && p.a == tile.a && p.tokens == tile.tokens && p.nb == nb) {
        return p.sums.data();
    }
    p.sums.resize(size_t(tile.tokens) * nb);
    for (int t = 0; t < tile.tokens; ++t) {
        const auto* y = reinterpret_cast<const BlockQ8_K*>(tile.a + size_t(t) * tile.a_stride);
        for (size_t i = 0; i < nb; ++i) {
            Q8KSums& s = p.sums[size_t(t) * nb + i];
            s.d = y[i].d;
            for (int j = 0; j < 4; ++j) {
                const int16_t* bs = y[i].bsums + 4 * j;
                // Each group sum is at most 32 * 128 in size: it fits 16 bits.
                const uint32_t lo = uint16_t(int16_t(bs[0] + bs[1])), hi = uint16_t(int16_t(bs[2] + bs[3]));
                s.group_pair[j] = int32_t(lo | (hi << 16));
            }
        }
    }
    p.id = tile.activation_id;
    p.a = tile.a;
    p.tokens = tile.tokens;
    p.nb = nb;
    return p.sums.data();
}

inline __m256i broadcast4(const int8_t* q) {
    int32_t v;
    std::memcpy(&v, q, 4);
    return _mm256_set1_epi32(v);
}

struct alignas(32) I8 {
    __m256i v;
};

// llama.cpp's interleaved Q4_K kernels (rows in groups of 8): per block
// (kSteps = 1, dot_q4_K_q8_K_rows8) or per 64 values (kSteps = 4, four
// tokens at a time, _tokens4), one fused multiply-add of the scaled integer
// total by d * d_act and one of the minimums' total by dmin * d_act;
// acc - acc_min at the end. The scaled and the minimum chains are apart,
// so each is computed in a loop of its own.
template <int kSteps>
void tile_q4_K(size_t n, const Tile& tile) {
    const size_t nb = n / kQK256;
    const size_t tokens = size_t(tile.tokens);
    thread_local std::vector<F8> acc;   // [token][scaled, minimums]
    thread_local std::vector<I8> part;  // [token]: the scaled total of the 64 or 256 values so far
    thread_local Q4KBlock8 b;
    const Q8KSums* sums = q8_K_sums(tile, nb);
    acc.resize(2 * tokens);
    part.resize(tokens);

    for (int r0 = 0; r0 < tile.rows; r0 += kLaneRows) {
        const int rows = std::min(kLaneRows, tile.rows - r0);
        prefetch_tile_rows(tile, r0 + kLaneRows, kLaneRows);
        // Lanes past the tile's last row repeat it; their results are dropped.
        const BlockQ4_K* x[kLaneRows];
        for (int r = 0; r < kLaneRows; ++r) {
            x[r] = reinterpret_cast<const BlockQ4_K*>(tile.w + size_t(r0 + std::min(r, rows - 1)) * tile.w_stride);
        }
        for (auto& a : acc) a.v = _mm256_setzero_ps();
        for (size_t i = 0; i < nb; ++i) {
            const BlockQ4_K* xi[kLaneRows];
            for (int r = 0; r < kLaneRows; ++r) xi[r] = x[r] + i;
            load_q4_K(xi, b);
            for (int j = 0; j < 4; ++j) {
                // 32 values (one scale) at a time, their codes held in registers for every token.
                for (int half = 0; half < 2; ++half) {
                    __m256i codes[8];
                    for (int k = 0; k < 8; ++k) codes[k] = half ? b.hi[j][k] : b.lo[j][k];
                    const __m256i scale = b.scale[2 * j + half];
                    for (size_t t = 0; t < tokens; ++t) {
                        const int8_t* q = reinterpret_cast<const BlockQ8_K*>(tile.a + t * tile.a_stride)[i].qs + 64 * j + 32 * half;
                        __m256i sum16 = _mm256_maddubs_epi16(codes[0], broadcast4(q));
                        for (int k = 1; k < 8; ++k) sum16 = _mm256_add_epi16(sum16, _mm256_maddubs_epi16(codes[k], broadcast4(q + 4 * k)));
                        const __m256i sum = _mm256_madd_epi16(sum16, scale);
                        const bool first = half == 0 && (kSteps == 4 || j == 0);
                        part[t].v = first ? sum : _mm256_add_epi32(part[t].v, sum);
                    }
                }
                if (kSteps == 4 || j == 3) {
                    for (size_t t = 0; t < tokens; ++t) {
                        const __m256 d = _mm256_mul_ps(b.d, _mm256_set1_ps(sums[t * nb + i].d));
                        acc[2 * t].v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(part[t].v), d, acc[2 * t].v);
                    }
                }
            }
            for (size_t t = 0; t < tokens; ++t) {
                const Q8KSums& s = sums[t * nb + i];
                const __m256 dmin = _mm256_mul_ps(b.dmin, _mm256_set1_ps(s.d));
                __m256i total = _mm256_setzero_si256();
                for (int j = 0; j < 4; ++j) {
                    const __m256i mins = _mm256_madd_epi16(b.min_pair[j], _mm256_set1_epi32(s.group_pair[j]));
                    if constexpr (kSteps == 4) {
                        acc[2 * t + 1].v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins), dmin, acc[2 * t + 1].v);
                    } else {
                        total = _mm256_add_epi32(total, mins);
                    }
                }
                if constexpr (kSteps == 1) acc[2 * t + 1].v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), dmin, acc[2 * t + 1].v);
            }
        }
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        for (size_t t = 0; t < tokens; ++t) {
            float* out = tile.out + t * tile.out_stride + size_t(r0);
            _mm256_maskstore_ps(out, mask, _mm256_sub_ps(acc[2 * t].v, acc[2 * t + 1].v));
        }
    }
}

// One token (decoding): dot_q4_K_q8_K_rows8 for 8 rows at once
// (q4_K_rows8_one_token in simd_avx2.h), each row's block giving its lanes
// as in the dot. Other row counts and more tokens go as before.
void q4_K_one_token_rows8(size_t n, const Tile& tile, int r0) {
    q4_K_rows8_one_token(
        n, tile.w + size_t(r0) * tile.w_stride, tile.w_stride, reinterpret_cast<const BlockQ8_K*>(tile.a), tile.out + r0,
        [](const BlockQ8_K&) { return 0; },
        [](const BlockQ4_K& b, const BlockQ8_K& y, int) {
            uint64_t sc, mn;
            k_scales_mins8(b.scales, &sc, &mn);
            return Q4KLanes{q4_K_scaled_lanes(b, y, sc), k_mins_lanes(mn, y)};
        });
}

void tile_q4_K_rows8(size_t n, const Tile& tile) {
    if (tile.tokens > 1) return tile_q4_K<1>(n, tile);
    int r = 0;
    for (; r + kLaneRows <= tile.rows; r += kLaneRows) q4_K_one_token_rows8(n, tile, r);
    for (; r < tile.rows; ++r) tile.out[r] = dot_q4_K_q8_K_rows8(n, tile.w + size_t(r) * tile.w_stride, tile.a);
}

// ---------------------------------------------------------------- Q5_K, Q6_K

// One block of one row, as its dot takes it apart: 8 slices of 32 unsigned
// codes and their scales, decoded once for every token.
struct SliceBlock {
    __m256i codes[8];
    __m256i scales[8];  // slice c: 16-bit scales of its first and second 16 values
    __m256i extra;      // Q6_K: the 16 scales as 16-bit values (its bias); Q5_K: the mins
    float d, dmin;
};

void load(const BlockQ6_K& x, SliceBlock& b) {
    q6_K_codes(x, b.codes);
    q6_K_slice_scales(x, b.scales);
    b.extra = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
    b.d = fp16_to_f32(x.d);
}

void load(const BlockQ5_K& x, SliceBlock& b) {
    uint64_t sc, mn;
    k_scales_mins8(x.scales, &sc, &mn);
    q5_K_codes(x, b.codes);
    for (int c = 0; c < 8; ++c) b.scales[c] = broadcast_scale(sc, c);
    b.extra = _mm256_set1_epi64x(int64_t(mn));
    b.d = fp16_to_f32(x.d);
    b.dmin = fp16_to_f32(x.dmin);
}

// dot_q6_K_q8_K / dot_q5_K_q8_K for every (row, token): per block 8
// integer lanes of scale * code * activation (Q6_K: less the codes' bias of
// 32 through the activation sums), one fused multiply-add per lane by d,
// hsum8 at the end; Q5_K adds its chain of minimums, one fused
// multiply-add per block.
template <class Block>
void tile_slices(size_t n, const Tile& tile) {
    constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_K>;
    const size_t nb = n / kQK256;
    const size_t tokens = size_t(tile.tokens);
    thread_local std::vector<F8> acc;
    thread_local std::vector<float> acc_min;
    acc.resize(tokens);
    acc_min.resize(tokens);
    thread_local SliceBlock b;
    for (int r = 0; r < tile.rows; ++r) {
        prefetch_tile_rows(tile, r + kTilePrefetchRows, 1);
        const auto* x = reinterpret_cast<const Block*>(tile.w + size_t(r) * tile.w_stride);
        for (auto& a : acc) a.v = _mm256_setzero_ps();
        std::fill(acc_min.begin(), acc_min.end(), 0.0f);
        for (size_t i = 0; i < nb; ++i) {
            load(x[i], b);
            __m256i codes[8];
            for (int c = 0; c < 8; ++c) codes[c] = b.codes[c];
            for (size_t t = 0; t < tokens; ++t) {
                const auto& y = reinterpret_cast<const BlockQ8_K*>(tile.a + t * tile.a_stride)[i];
                __m256i lanes;
                if constexpr (kQ5) {
                    lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(codes[0], load32(y.qs)), b.scales[0]);
                    for (int c = 1; c < 8; ++c) {
                        lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(codes[c], load32(y.qs + 32 * c)), b.scales[c]));
                    }
                    const uint64_t mins = uint64_t(_mm256_extract_epi64(b.extra, 0));
                    acc_min[t] = std::fma(-y.d * b.dmin, float(hsum_i32(k_mins_lanes(mins, y))), acc_min[t]);
                } else {
                    lanes = q6_K_lanes(codes, b.scales, b.extra, y);
                }
                const float d = y.d * b.d;
                acc[t].v = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc[t].v);
            }
        }
        for (size_t t = 0; t < tokens; ++t) {
            tile.out[t * tile.out_stride + size_t(r)] = kQ5 ? hsum8(acc[t].v) + acc_min[t] : hsum8(acc[t].v);
        }
    }
}

}  // namespace

}  // namespace smolinfer::quant::avx2::kquant_tiles

namespace smolinfer::quant::avx2 {

TileFn kquant_tile_for(Type weight, bool rows8, bool batched) {
    using namespace kquant_tiles;
    if (weight == Type::Q4_K && rows8) return batched ? tile_q4_K<4> : tile_q4_K_rows8;
    if (weight == Type::Q5_K && !batched) return tile_slices<BlockQ5_K>;
    if (weight == Type::Q6_K && !batched) return tile_slices<BlockQ6_K>;
    return nullptr;
}

}  // namespace smolinfer::quant::avx2

#else

namespace smolinfer::quant::avx2 {
TileFn kquant_tile_for(Type, bool, bool) { return nullptr; }
}  // namespace smolinfer::quant::avx2

#endif
