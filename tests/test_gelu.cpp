// GELU as llama.cpp computes it on float rows: the half-precision table
// (every entry of llama.cpp's own, read out of its zen4 CPU backend) and the
// gated form Gemma's feed-forward uses.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/gelu.h"
#include "quant/fp16.h"
#include "runtime/sha256.h"

namespace smolinfer {
namespace {

using quant::f32_to_fp16;
using quant::fp16_to_f32;

// SHA-256 of ggml_table_gelu_f16 in libggml-cpu-zen4.so (node-llama-cpp
// 3.21.1), its 63,488 entries for finite inputs as little-endian uint16 in
// input order (NaN inputs are left out: their payloads are nobody's business).
constexpr const char* kLlamaTableSha256 = "6be7bd8fd6b8a8fb4b704136976fc0173a0d12de047f1322f1e97fb20723bef7";

TEST(Gelu, TableEqualsLlamaCppsEntryForEntry) {
    const uint16_t* table = model::gelu_table();
    std::vector<uint8_t> bytes;
    for (uint32_t h = 0; h < 65536; ++h) {
        if (!std::isfinite(fp16_to_f32(uint16_t(h)))) continue;
        bytes.push_back(uint8_t(table[h] & 0xFF));
        bytes.push_back(uint8_t(table[h] >> 8));
    }
    ASSERT_EQ(bytes.size(), 2u * 63488u);
    runtime::Sha256 sha;
    sha.update(bytes);
    EXPECT_EQ(sha.finish_hex(), kLlamaTableSha256);
}

TEST(Gelu, EntriesByHand) {
    const uint16_t* table = model::gelu_table();
    // gelu(1) = 0.841192 -> half 0.84130859375; gelu(-1) = -0.158808 -> -0.1588134765625.
    EXPECT_EQ(table[0x3C00], 0x3ABB);
    EXPECT_EQ(table[0xBC00], 0xB115);
    EXPECT_EQ(table[0x4000], 0x3FD2);  // gelu(2) = 1.954598 -> 1.955078125
    EXPECT_EQ(table[0x0000], 0x0000);
    EXPECT_EQ(table[0x8000], 0x8000);  // gelu(-0) = -0
}

TEST(Gelu, GatedFormCutsOffAtTen) {
    std::vector<float> gate = {-20.0f, -10.0f, -9.99f, 1.0f, 9.99f, 10.0f, 12.5f};
    const std::vector<float> up = {3.0f, 3.0f, 2.0f, 2.0f, 2.0f, 2.0f, 0.5f};
    const std::vector<float> x = gate;
    model::geglu(gate.data(), up.data(), gate.size());
    EXPECT_EQ(gate[0], 0.0f);
    EXPECT_EQ(gate[1], 0.0f);  // -10 is at the cut-off: 0, not looked up
    for (size_t i = 2; i <= 4; ++i) {
        EXPECT_EQ(gate[i], fp16_to_f32(model::gelu_table()[f32_to_fp16(x[i])]) * up[i]) << x[i];
    }
    EXPECT_EQ(gate[3], 0.84130859375f * 2.0f);
    EXPECT_EQ(gate[5], 20.0f);  // the identity from 10 on
    EXPECT_EQ(gate[6], 6.25f);
}

}  // namespace
}  // namespace smolinfer
