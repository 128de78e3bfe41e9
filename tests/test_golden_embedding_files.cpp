// The embedding golden files (tests/golden/embeddings/<name>.json, flash
// attention off, and flash-attn/<name>.json, on; made by llama.cpp through
// scripts/golden/make-embedding-golden.mjs) and the models they were made
// from: the random embedding models that tests/support/random_model.cpp
// writes today must be those bytes (a changed generator needs new golden
// files), and every file must be whole. smolinfer does not compute
// embeddings yet: these tests keep the files ready for the tests that will.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "runtime/sha256.h"
#include "support/paths.h"
#include "support/random_model.h"

namespace smolinfer {
namespace {

std::vector<std::string> embedding_golden_names() {
    std::vector<std::string> names;
    for (const auto& s : test::embedding_model_specs()) names.push_back(s.name);
    names.push_back("smollm2-135m");  // the real SmolLM2-135M-Instruct Q4_1 file
    return names;
}

const test::RandomModelSpec* embedding_spec_of(const std::string& name) {
    for (const auto& s : test::embedding_model_specs()) {
        if (s.name == name) return &s;
    }
    return nullptr;
}

std::string bytes_sha256(const std::vector<uint8_t>& bytes) {
    runtime::Sha256 h;
    h.update(bytes);
    return h.finish_hex();
}

std::string file_sha256(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return bytes_sha256(bytes);
}

class GoldenEmbeddingFiles : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenEmbeddingFiles, RecordTheModelTheyWereMadeFrom) {
    const std::string name = GetParam();
    const nlohmann::json off = test::load_golden("embeddings/" + name + ".json");
    const nlohmann::json on = test::load_golden("embeddings/flash-attn/" + name + ".json");
    const std::string sha = off["model_sha256"];
    EXPECT_EQ(on["model_sha256"], sha);
    if (const test::RandomModelSpec* spec = embedding_spec_of(name)) {
        EXPECT_EQ(bytes_sha256(test::random_model_bytes(name)), sha)
            << "tests/support/random_model.cpp no longer writes the " << name
            << " model of the golden files: rerun scripts/golden/make-embedding-golden.mjs";
        EXPECT_EQ(off["n_embd_out"], spec->n_embd);
        if (spec->pooling_type >= 0) {
            EXPECT_EQ(off["pooling_type"], spec->pooling_type);
        }
    } else {
        EXPECT_EQ(file_sha256(test::model_path("Q4_1")), sha);
        EXPECT_EQ(off["pooling"], "none");
    }
}

TEST_P(GoldenEmbeddingFiles, AreWholeAndAgreeOnTheTokens) {
    const std::string name = GetParam();
    const nlohmann::json off = test::load_golden("embeddings/" + name + ".json");
    const nlohmann::json on = test::load_golden("embeddings/flash-attn/" + name + ".json");
    EXPECT_EQ(test::golden_flash_attention(off), FlashAttention::Off);
    EXPECT_EQ(test::golden_flash_attention(on), FlashAttention::On);
    const size_t n_out = off["n_embd_out"];
    ASSERT_EQ(on["cases"].size(), off["cases"].size());
    ASSERT_GE(off["cases"].size(), 10u);
    std::set<int> counts;
    for (size_t i = 0; i < off["cases"].size(); ++i) {
        const auto& a = off["cases"][i];
        const auto& b = on["cases"][i];
        EXPECT_EQ(a["text"], b["text"]);
        EXPECT_EQ(a["ids"], b["ids"]);
        EXPECT_EQ(a["ids"].size(), a["n_tokens"].get<size_t>());
        EXPECT_EQ(a["embedding"].size(), n_out);
        EXPECT_EQ(b["embedding"].size(), n_out);
        counts.insert(a["n_tokens"].get<int>());
    }
    // The token counts that choose llama.cpp's kernels (below and from 64,
    // multiples of 16 or not) are all there.
    auto any = [&](auto f) {
        for (const int n : counts) {
            if (f(n)) return true;
        }
        return false;
    };
    EXPECT_TRUE(any([](int n) { return n <= 3; }));
    EXPECT_TRUE(any([](int n) { return n > 3 && n < 64 && n % 16 != 0; }));
    EXPECT_TRUE(any([](int n) { return n < 64 && n % 16 == 0; }));
    EXPECT_TRUE(any([](int n) { return n >= 64 && n % 16 != 0; }));
    EXPECT_TRUE(any([](int n) { return n >= 64 && n % 16 == 0; }));
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenEmbeddingFiles, ::testing::ValuesIn(embedding_golden_names()),
                         [](const auto& info) {
                             std::string s = info.param;
                             for (char& c : s) {
                                 if (c == '-' || c == '.') c = '_';
                             }
                             return s;
                         });

}  // namespace
}  // namespace smolinfer
