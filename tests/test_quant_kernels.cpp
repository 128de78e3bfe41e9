// Matmul kernels: every instruction-set variant against the scalar
// reference (bit-identical), and the quantized dot against a float64 dot of
// the dequantized operands (close: it is the same sum, in float32).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/reference.h"
#include "support/random_blocks.h"

namespace smolinfer {
namespace {

using quant::Type;

std::vector<float> random_activations(size_t n, std::mt19937& rng) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x(n);
    for (auto& v : x) v = d(rng);
    // A few outliers, as real residual streams have.
    for (size_t i = 0; i < n; i += 97) x[i] *= 40.0f;
    return x;
}

// Every variant that computes llama.cpp's results bit for bit (those this
// build and CPU lack are skipped). WasmRelaxed is exact where relaxed_madd
// fuses, as on every machine these tests run on (test_exact_fma checks).
constexpr quant::Isa kExactIsas[] = {quant::Isa::Avx2, quant::Isa::Avx512Vnni, quant::Isa::WasmSimd, quant::Isa::WasmRelaxed};

class Kernels : public ::testing::TestWithParam<Type> {};

// Every dot a kernel has (one token; batches) for matrices llama.cpp does
// and does not interleave (8 rows and 1 row).
TEST_P(Kernels, EveryIsaIsBitIdenticalToTheReference) {
    const Type type = GetParam();
    std::mt19937 rng(7);
    for (const int rows : {1, 8}) {
        for (const size_t n : {size_t(100), size_t(256), size_t(576), size_t(600), size_t(1536), size_t(4096)}) {
            if (n % quant::traits(type).block_elems != 0) continue;
            const auto ref = quant::matmul_kernel(type, rows, int(n), quant::Isa::Reference);
            ASSERT_TRUE(ref);
            for (int trial = 0; trial < 20; ++trial) {
                const auto w = test::random_blocks(type, n, rng);
                const auto x = random_activations(n, rng);
                std::vector<uint8_t> a(n * 4 + 64);
                ref->quantize(x.data(), a.data(), n);
                for (const quant::Isa isa : kExactIsas) {
                    if (!quant::isa_available(isa)) continue;  // not on this CPU or build
                    const auto k = quant::matmul_kernel(type, rows, int(n), isa);
                    ASSERT_EQ(bool(k->dot_batched), bool(ref->dot_batched));
                    ASSERT_EQ(k->batch_group, ref->batch_group);
                    std::vector<uint8_t> a2(a.size());
                    k->quantize(x.data(), a2.data(), n);
                    ASSERT_EQ(0, std::memcmp(a.data(), a2.data(), quant::row_bytes(quant::traits(k->activation), n)));
                    std::vector<std::pair<quant::DotFn, quant::DotFn>> dots = {{ref->dot, k->dot}};
                    if (ref->dot_batched) dots.emplace_back(ref->dot_batched, k->dot_batched);
                    for (const auto& [ref_dot, isa_dot] : dots) {
                        const float want = ref_dot(n, w.data(), a.data());
                        const float got = isa_dot(n, w.data(), a2.data());
                        ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << quant::isa_name(isa) << " rows=" << rows
                                                                  << " n=" << n << ": " << got << " vs reference " << want;
                    }
                }
            }
        }
    }
}

// Activation codes anywhere in -128..127, not only the -127..127 the
// quantizer gives finite inputs: -128 comes from an infinite or NaN
// activation (test_fuzz_regressions). The WebAssembly kernels move signs
// between operands only where no -128 is in the way (wasm_simd.h,
// sums4_split) and stay exact. The x86 kernels are left out: like
// llama.cpp's (_mm256_sign_epi8), they wrap -(-128) for Q4_0, Q5_0 and Q8_0,
// which only a model whose activations are already infinite can see.
TEST_P(Kernels, RawActivationCodesAreBitIdenticalToTheReference) {
    if (!quant::isa_available(quant::Isa::WasmSimd) && !quant::isa_available(quant::Isa::WasmRelaxed)) {
        GTEST_SKIP() << "WebAssembly kernels only";
    }
    const Type type = GetParam();
    std::mt19937 rng(11);
    const size_t n = 1536;
    if (n % quant::traits(type).block_elems != 0) return;
    const auto ref = quant::matmul_kernel(type, 1, int(n), quant::Isa::Reference);
    ASSERT_TRUE(ref);
    if (ref->activation != Type::Q8_0 && ref->activation != Type::Q8_1) {
        GTEST_SKIP() << "Q8_K activations carry sums of their codes: random codes would not be a valid block";
    }
    const quant::TypeTraits& at = quant::traits(ref->activation);
    for (int trial = 0; trial < 20; ++trial) {
        const auto w = test::random_blocks(type, n, rng);
        std::vector<uint8_t> a(n * 4 + 64);
        ref->quantize(random_activations(n, rng).data(), a.data(), n);
        // Every code of one block in four replaced by a random byte: blocks
        // with and without -128 side by side.
        const size_t scale_bytes = at.block_bytes - at.block_elems;  // the codes come last
        std::uniform_int_distribution<int> byte(0, 255);
        for (size_t b = size_t(trial % 4); b < n / at.block_elems; b += 4) {
            for (size_t j = 0; j < at.block_elems; ++j) a[b * at.block_bytes + scale_bytes + j] = uint8_t(byte(rng));
        }
        const float want = ref->dot(n, w.data(), a.data());
        for (const quant::Isa isa : {quant::Isa::WasmSimd, quant::Isa::WasmRelaxed}) {
            if (!quant::isa_available(isa)) continue;
            const auto k = quant::matmul_kernel(type, 1, int(n), isa);
            const float got = k->dot(n, w.data(), a.data());
            ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << quant::isa_name(isa) << ": " << got << " vs reference " << want;
        }
    }
}

// The activation quantizers alone, on blocks made to hit their edges: all
// zeros, one huge value, ties at .5 after scaling, subnormals, infinities
// and NaN (a broken model's activations) -- every ISA's bytes equal the
// reference's.
TEST(ActivationQuantizers, EveryIsaEqualsTheReferenceOnEdgeCases) {
    std::mt19937 rng(11);
    std::vector<std::vector<float>> blocks;
    blocks.push_back(std::vector<float>(32, 0.0f));
    blocks.push_back(std::vector<float>(32, -0.0f));
    std::vector<float> b(32);
    for (int j = 0; j < 32; ++j) b[size_t(j)] = float(j - 16) * 0.5f;  // scaled ties
    b[0] = 127.0f;
    blocks.push_back(b);
    for (auto& v : b) v = std::ldexp(v, -140);  // subnormal
    blocks.push_back(b);
    for (const float special : {INFINITY, -INFINITY, NAN, 3.0e38f}) {
        auto c = random_activations(32, rng);
        c[size_t(rng() % 32)] = special;
        blocks.push_back(c);
    }
    auto all_nan = std::vector<float>(32, NAN);
    blocks.push_back(all_nan);
    for (int k = 0; k < 200; ++k) blocks.push_back(random_activations(32, rng));
    for (const Type act : {Type::Q8_0, Type::Q8_1}) {
        const Type weight = act == Type::Q8_0 ? Type::Q8_0 : Type::Q4_1;
        const auto ref = quant::matmul_kernel(weight, 1, 32, quant::Isa::Reference);
        for (const quant::Isa isa : kExactIsas) {
            if (!quant::isa_available(isa)) continue;
            const auto k = quant::matmul_kernel(weight, 1, 32, isa);
            for (size_t i = 0; i < blocks.size(); ++i) {
                std::vector<uint8_t> want(64), got(64);
                ref->quantize(blocks[i].data(), want.data(), 32);
                k->quantize(blocks[i].data(), got.data(), 32);
                ASSERT_EQ(want, got) << quant::isa_name(isa) << " " << quant::traits(act).name << " block " << i;
            }
        }
    }
}

// Q8_K (the K-quants' activations) on 256-value blocks made to hit its
// edges: the largest magnitude taken with its sign from its first
// occurrence, ties at .5, zeros, subnormals, infinities and NaN.
TEST(ActivationQuantizers, Q8KEveryIsaEqualsTheReferenceOnEdgeCases) {
    std::mt19937 rng(23);
    std::vector<std::vector<float>> blocks;
    blocks.push_back(std::vector<float>(256, 0.0f));
    std::vector<float> b(256);
    for (int j = 0; j < 256; ++j) b[size_t(j)] = float(j % 32 - 16) * 0.5f;
    b[7] = -127.0f;
    b[200] = 127.0f;  // same magnitude, later: the sign comes from b[7]
    blocks.push_back(b);
    for (auto& v : b) v = std::ldexp(v, -140);  // subnormal
    blocks.push_back(b);
    for (const float special : {INFINITY, -INFINITY, NAN, 3.0e38f, -3.0e38f}) {
        auto c = random_activations(256, rng);
        c[size_t(rng() % 256)] = special;
        blocks.push_back(c);
    }
    blocks.push_back(std::vector<float>(256, NAN));
    for (int k = 0; k < 50; ++k) blocks.push_back(random_activations(256, rng));
    const auto ref = quant::matmul_kernel(Type::Q4_K, 1, 256, quant::Isa::Reference);
    for (const quant::Isa isa : kExactIsas) {
        if (!quant::isa_available(isa)) continue;
        const auto k = quant::matmul_kernel(Type::Q4_K, 1, 256, isa);
        for (size_t i = 0; i < blocks.size(); ++i) {
            std::vector<uint8_t> want(sizeof(quant::BlockQ8_K)), got(sizeof(quant::BlockQ8_K));
            ref->quantize(blocks[i].data(), want.data(), 256);
            k->quantize(blocks[i].data(), got.data(), 256);
            ASSERT_EQ(want, got) << quant::isa_name(isa) << " block " << i;
        }
    }
}

TEST_P(Kernels, QuantizedDotIsTheDotOfTheDequantizedOperands) {
    const Type type = GetParam();
    const auto k = quant::matmul_kernel(type, 1, 256);
    ASSERT_TRUE(k);
    std::mt19937 rng(11);
    const size_t n = 1536;
    const auto w = test::random_blocks(type, n, rng);
    const auto x = random_activations(n, rng);
    std::vector<uint8_t> a(n * 4);
    k->quantize(x.data(), a.data(), n);
    std::vector<float> wf(n), af(n);
    quant::ref::dequantize_row(type, w.data(), wf.data(), n);
    quant::ref::dequantize_row(k->activation, a.data(), af.data(), n);
    double exact = 0, mag = 0, exact_x = 0;
    for (size_t i = 0; i < n; ++i) {
        exact += double(wf[i]) * double(af[i]);
        exact_x += double(wf[i]) * double(x[i]);
        mag += std::abs(double(wf[i]) * double(af[i]));
    }
    const double got = k->dot(n, w.data(), a.data());
    // Float32 rounding of block sums, and for Q8_1 the f16 rounding of s.
    EXPECT_NEAR(got, exact, 2e-3 * mag);
    // And the activation quantization itself keeps the result near the
    // unquantized dot (8-bit: ~1% of the magnitude).
    EXPECT_NEAR(got, exact_x, 2e-2 * mag);
}

// One tile of `rows` rows and `tokens` tokens against one reference dot per
// (row, token), and the same rows as two tiles of one product.
void expect_tile_equals_dots(quant::TileFn tile, quant::DotFn dot, Type type, Type activation, size_t n, int rows,
                             int tokens, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a,
                             const std::string& where) {
    const size_t wrow = quant::row_bytes(quant::traits(type), n);
    const size_t arow = quant::row_bytes(quant::traits(activation), n);
    const size_t stride = size_t(rows) + 3;  // outputs of one token are not adjacent to the next's
    std::vector<float> out(stride * size_t(tokens), -1.0f);
    tile(n, quant::Tile{w.data(), wrow, rows, a.data(), arow, tokens, out.data(), stride});
    // The same rows as two tiles of one product (one activation id),
    // which a kernel may serve from what it derived for the first.
    if (rows >= 2) {
        std::vector<float> out2(out.size(), -1.0f);
        const int half = rows / 2;
        const uint64_t id = quant::new_activation_id();
        tile(n, quant::Tile{w.data(), wrow, half, a.data(), arow, tokens, out2.data(), stride, id});
        tile(n, quant::Tile{w.data() + size_t(half) * wrow, wrow, rows - half, a.data(), arow, tokens, out2.data() + half,
                            stride, id});
        ASSERT_EQ(0, std::memcmp(out.data(), out2.data(), out.size() * sizeof(float))) << where << ": split tile differs";
    }
    for (int t = 0; t < tokens; ++t) {
        for (int r = 0; r < rows; ++r) {
            const float want = dot(n, w.data() + size_t(r) * wrow, a.data() + size_t(t) * arow);
            const float got = out[size_t(t) * stride + size_t(r)];
            ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << where << " at (" << r << ", " << t << "): " << got << " vs " << want;
        }
        for (size_t pad = size_t(rows); pad < stride; ++pad) ASSERT_EQ(out[size_t(t) * stride + pad], -1.0f) << where;
    }
}

// Whole tiles (any number of rows and tokens, several blocks) against one
// reference dot per (row, token), for every instruction set that has
// tiles, for matrices llama.cpp does and does not interleave (8 rows and
// 1): a tile of an interleaved matrix may still have any number of rows
// (the last of a matrix, or a part of it).
TEST_P(Kernels, TilesEqualOneDotPerRowAndToken) {
    const Type type = GetParam();
    std::mt19937 rng(13);
    const bool k256 = quant::traits(type).block_elems == 256;
    for (const quant::Isa isa : kExactIsas) {
        if (!quant::isa_available(isa)) continue;
        for (const int matrix_rows : {1, 8}) {
            for (const size_t n : k256 ? std::vector<size_t>{512, 768} : std::vector<size_t>{576}) {
                const auto k = quant::matmul_kernel(type, matrix_rows, int(n), isa);
                const auto ref = quant::matmul_kernel(type, matrix_rows, int(n), quant::Isa::Reference);
                for (const auto& [tile, dot] : {std::pair{k->tile, ref->dot}, std::pair{k->tile_batched, ref->dot_batched}}) {
                    if (tile == nullptr) continue;
                    for (const int rows : {1, 2, 3, 5, 8, 11, 16}) {
                        for (const int tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17}) {
                            const size_t arow = quant::row_bytes(quant::traits(k->activation), n);
                            const auto w = test::random_blocks(type, n * size_t(rows), rng);
                            std::vector<uint8_t> a(arow * size_t(tokens));
                            for (int t = 0; t < tokens; ++t) {
                                ref->quantize(random_activations(n, rng).data(), a.data() + size_t(t) * arow, n);
                            }
                            const std::string where = std::string(quant::isa_name(isa)) + " matrix_rows=" +
                                                      std::to_string(matrix_rows) + " n=" + std::to_string(n) + " rows=" +
                                                      std::to_string(rows) + " tokens=" + std::to_string(tokens);
                            expect_tile_equals_dots(tile, dot, type, k->activation, n, rows, tokens, w, a, where);
                            if (HasFatalFailure()) return;
                        }
                    }
                }
            }
        }
    }
}

// Half-precision tiles on rows long enough that a batch's tokens are taken
// in several blocks (the AVX2 tile keeps about 192 KiB of activations in
// the L2 cache: 12 tokens of 4096 values), with the rows in every grouping.
TEST(FloatTiles, HalfPrecisionTilesOverSeveralBlocksOfTokens) {
    std::mt19937 rng(17);
    const size_t n = 4096;
    for (const quant::Isa isa : kExactIsas) {
        if (!quant::isa_available(isa)) continue;
        const auto k = quant::matmul_kernel(Type::F16, 16, int(n), isa);
        const auto ref = quant::matmul_kernel(Type::F16, 16, int(n), quant::Isa::Reference);
        if (!k->tile_batched) continue;
        for (const int rows : {16, 7, 4}) {
            for (const int tokens : {30, 13}) {
                const size_t arow = quant::row_bytes(quant::traits(k->activation), n);
                const auto w = test::random_blocks(Type::F16, n * size_t(rows), rng);
                std::vector<uint8_t> a(arow * size_t(tokens));
                for (int t = 0; t < tokens; ++t) ref->quantize(random_activations(n, rng).data(), a.data() + size_t(t) * arow, n);
                const std::string where = std::string(quant::isa_name(isa)) + " rows=" + std::to_string(rows) +
                                          " tokens=" + std::to_string(tokens);
                expect_tile_equals_dots(k->tile_batched, ref->dot_batched, Type::F16, k->activation, n, rows, tokens, w, a, where);
                if (HasFatalFailure()) return;
            }
        }
    }
}

// Q4_K tiles at the limits of their integer sums: every code 15, every
// scale and min 63, the activations all 127 or all -127 (the AVX2 tile sums 16 products
// in 16 bits: 16 * 15 * 127 is just below 2^15; the AVX-512 one groups
// 16-bit pair sums), with random codes mixed in; one token (the one-token
// tiles) and several.
TEST(KQuantTiles, Q4KAtTheLimitsOfTheIntegerSums) {
    const size_t n = 512;
    std::mt19937 rng(29);
    for (const quant::Isa isa : kExactIsas) {
        if (!quant::isa_available(isa)) continue;
        const auto k = quant::matmul_kernel(Type::Q4_K, 8, int(n), isa);
        const auto ref = quant::matmul_kernel(Type::Q4_K, 8, int(n), quant::Isa::Reference);
        for (const auto& [tile, dot] : {std::pair{k->tile, ref->dot}, std::pair{k->tile_batched, ref->dot_batched}}) {
            if (tile == nullptr) continue;
            for (const auto& [all_negative, tokens] : {std::pair{true, 6}, std::pair{false, 6}, std::pair{true, 1}, std::pair{false, 1}}) {
                const int rows = 11;
                auto w = test::random_blocks(Type::Q4_K, n * size_t(rows), rng);
                auto* blocks = reinterpret_cast<quant::BlockQ4_K*>(w.data());
                for (size_t b = 0; b < w.size() / sizeof(quant::BlockQ4_K); ++b) {
                    std::memset(blocks[b].scales, 0xFF, sizeof blocks[b].scales);
                    if (b % 3 != 2) std::memset(blocks[b].qs, 0xFF, sizeof blocks[b].qs);
                }
                const size_t arow = quant::row_bytes(quant::traits(k->activation), n);
                std::vector<uint8_t> a(arow * size_t(tokens));
                // Q8_K takes the value of largest magnitude to -127: equal values
                // all to -127; with one larger of the other sign a block, the rest to +127.
                std::vector<float> x(n, 1.0f);
                if (!all_negative) {
                    for (size_t j = 0; j < n; j += 256) x[j] = -1.001f;
                }
                for (int t = 0; t < tokens; ++t) ref->quantize(x.data(), a.data() + size_t(t) * arow, n);
                const std::string where = std::string(quant::isa_name(isa)) + (all_negative ? " all -127" : " +127") +
                                          " tokens=" + std::to_string(tokens);
                expect_tile_equals_dots(tile, dot, Type::Q4_K, k->activation, n, rows, tokens, w, a, where);
            }
        }
    }
}

// The AVX2 path has tiles for the K-quant formats of Q4_K_M and Q5_K_M
// files, so the tile tests above cannot pass by finding none.
TEST(KQuantTiles, Avx2HasTilesForKQuantFormats) {
    if (!quant::isa_available(quant::Isa::Avx2)) GTEST_SKIP() << "no AVX2 in this build or CPU";
    const auto q4k = quant::matmul_kernel(Type::Q4_K, 2048, 2048, quant::Isa::Avx2);
    EXPECT_NE(q4k->tile, nullptr);
    EXPECT_NE(q4k->tile_batched, nullptr);
    EXPECT_NE(quant::matmul_kernel(Type::Q5_K, 2048, 2048, quant::Isa::Avx2)->tile, nullptr);
    EXPECT_NE(quant::matmul_kernel(Type::Q6_K, 2048, 2048, quant::Isa::Avx2)->tile, nullptr);
}

// The fast WebAssembly SIMD128 kernels multiply, then add, where llama.cpp
// fuses: not bit-identical, but every dot and tile stays within float
// rounding of the reference (relative to the sum of the terms' magnitudes).
TEST_P(Kernels, FastKernelsStayWithinRoundingOfTheReference) {
    if (!quant::isa_available(quant::Isa::WasmSimdFast)) GTEST_SKIP() << "not a plain WebAssembly SIMD128 build";
    const Type type = GetParam();
    std::mt19937 rng(17);
    for (const int rows : {1, 5, 8}) {
        const size_t n = quant::traits(type).block_elems == 256 ? 1024 : 1536;
        const auto ref = quant::matmul_kernel(type, rows, int(n), quant::Isa::Reference);
        const auto k = quant::matmul_kernel(type, rows, int(n), quant::Isa::WasmSimdFast);
        const size_t wrow = quant::row_bytes(quant::traits(type), n);
        const size_t arow = quant::row_bytes(quant::traits(k->activation), n);
        const int tokens = 3;
        const auto w = test::random_blocks(type, n * size_t(rows), rng);
        std::vector<uint8_t> a(arow * tokens);
        for (int t = 0; t < tokens; ++t) ref->quantize(random_activations(n, rng).data(), a.data() + size_t(t) * arow, n);
        std::vector<float> out(size_t(rows) * tokens);
        if (k->tile) k->tile(n, quant::Tile{w.data(), wrow, rows, a.data(), arow, tokens, out.data(), size_t(rows)});
        for (int t = 0; t < tokens; ++t) {
            std::vector<float> af(n), wf(n);
            quant::ref::dequantize_row(k->activation, a.data() + size_t(t) * arow, af.data(), n);
            for (int r = 0; r < rows; ++r) {
                const uint8_t* wr = w.data() + size_t(r) * wrow;
                quant::ref::dequantize_row(type, wr, wf.data(), n);
                double mag = 0;
                for (size_t i = 0; i < n; ++i) mag += std::abs(double(wf[i]) * double(af[i]));
                const float want = ref->dot(n, wr, a.data() + size_t(t) * arow);
                const float got = k->dot(n, wr, a.data() + size_t(t) * arow);
                EXPECT_NEAR(got, want, 1e-5 * mag) << "dot, rows=" << rows << " (" << r << ", " << t << ")";
                if (k->tile) {
                    EXPECT_NEAR(out[size_t(t) * size_t(rows) + size_t(r)], want, 1e-5 * mag) << "tile";
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, Kernels,
                         ::testing::Values(Type::F32, Type::F16, Type::BF16, Type::Q4_0, Type::Q4_1, Type::Q5_0,
                                           Type::Q5_1, Type::Q8_0, Type::Q2_K, Type::Q3_K, Type::Q4_K, Type::Q5_K,
                                           Type::Q6_K),
                         [](const auto& info) { return std::string(quant::traits(info.param).name); });

// Hand-computed: one Q4_1 block with d = 0.5, m = -1, all nibbles 3 (value
// 0.5), against 32 copies of 127.0 (Q8_1: d = 1, q = 127, s = 4064, all
// exact in half precision): 0.5 * 1 * (3 * 127 * 32) - 1 * 4064 = 2032,
// which is also 32 * 0.5 * 127.
TEST(KernelsByHand, Q4_1TimesConstant) {
    quant::BlockQ4_1 b{};
    b.d = quant::f32_to_fp16(0.5f);
    b.m = quant::f32_to_fp16(-1.0f);
    std::memset(b.qs, 0x33, sizeof b.qs);
    const std::vector<float> x(32, 127.0f);
    for (const quant::Isa isa : {quant::Isa::Reference, quant::best_isa()}) {
        const auto k = quant::matmul_kernel(Type::Q4_1, 1, 256, isa);
        quant::BlockQ8_1 a{};
        k->quantize(x.data(), &a, 32);
        EXPECT_EQ(a.qs[0], 127);
        EXPECT_EQ(quant::fp16_to_f32(a.s), 4064.0f);
        EXPECT_EQ(k->dot(32, &b, &a), 2032.0f) << quant::isa_name(isa);
    }
}

}  // namespace
}  // namespace smolinfer
