// Embeddings against llama.cpp's (tests/golden/embeddings/<name>.json with
// flash attention off, flash-attn/<name>.json on; made by
// scripts/golden/make-embedding-golden.mjs through node-llama-cpp's zen4
// CPU library): the random-weight bert, bert-mean, nomic-bert,
// gemma-embedding and qwen3-embedding models and the real SmolLM2-135M.
// For every text: the tokens llama.cpp evaluated, and the raw vector bit
// for bit (each golden value is the shortest decimal of a float32); the
// normalised vector is llama.cpp's common_embd_normalize of those floats.
// The plain SIMD128 WebAssembly build's fast arithmetic: cosine >= 0.9999.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/sha256.h"
#include "smolinfer/session.h"
#include "support/paths.h"
#include "support/random_model.h"

namespace smolinfer {
namespace {

constexpr double kFastCosine = 0.9999;

struct EmbeddingRun {
    std::string model;  // a random embedding model's name, or "smollm2-135m"
    bool flash;
};

void PrintTo(const EmbeddingRun& r, std::ostream* os) { *os << r.model << (r.flash ? " flash-attn" : ""); }

std::vector<EmbeddingRun> runs() {
    std::vector<EmbeddingRun> out;
    for (const bool flash : {false, true}) {
        for (const auto& s : test::embedding_model_specs()) out.push_back({s.name, flash});
        out.push_back({"smollm2-135m", flash});
    }
    return out;
}

std::string run_name(const ::testing::TestParamInfo<EmbeddingRun>& info) {
    std::string n = info.param.model + (info.param.flash ? "_flash_attn" : "");
    for (char& c : n) {
        if (c == '-') c = '_';
    }
    return n;
}

std::vector<float> floats(const nlohmann::json& a) {
    std::vector<float> v;
    for (const auto& x : a) v.push_back(std::strtof(x.dump().c_str(), nullptr));
    return v;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    return ab / std::sqrt(aa * bb);
}

class GoldenEmbeddings : public ::testing::TestWithParam<EmbeddingRun> {
protected:
    void SetUp() override {
        const EmbeddingRun& r = GetParam();
        golden_ = test::load_golden(std::string("embeddings/") + (r.flash ? "flash-attn/" : "") + r.model + ".json");
        SessionOptions o;
        o.context = golden_["source"]["context"]["contextSize"].get<int>();
        o.exact = !test::fast_arithmetic();
        o.flash_attention = test::golden_flash_attention(golden_);
        ASSERT_EQ(o.flash_attention == FlashAttention::On, r.flash);
        if (r.model == "smollm2-135m") {
            session_ = Session::open_file(test::model_path("Q4_1"), o);
            return;
        }
        const std::string sha = golden_["model_sha256"];
#ifndef __EMSCRIPTEN__
        session_ = Session::open_file(test::random_model_file(r.model, sha), o);
#else
        std::vector<uint8_t> bytes = test::random_model_bytes(r.model);
        runtime::Sha256 h;
        h.update(bytes);
        ASSERT_EQ(h.finish_hex(), sha) << "the random model is not the one the golden file was made from";
        session_ = Session::open_bytes(std::move(bytes), o);
#endif
    }

    nlohmann::json golden_;
    std::unique_ptr<Session> session_;
};

TEST_P(GoldenEmbeddings, ModelDescribesItsPooling) {
    EXPECT_EQ(session_->info().pooling, golden_["pooling"].get<std::string>());
    EXPECT_EQ(session_->info().n_embd_out, golden_["n_embd_out"].get<int>());
    EXPECT_EQ(session_->info().encoder, !golden_["causal_attn"].get<bool>());
}

// An encoder has no language-model head: every request for text is refused
// by one message that says so (not, for a file without a chat template,
// "a base model").
TEST_P(GoldenEmbeddings, EncoderRefusesText) {
    if (!session_->info().encoder) GTEST_SKIP() << "a decoder: it generates";
    const auto says_embedding_model = [](const std::function<void()>& f) {
        try {
            f();
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("is an embedding model"), std::string::npos) << e.what();
        }
    };
    says_embedding_model([&] { session_->tokenize_chat({{"user", "hi"}}, true); });
    const std::vector<TokenId> ids = session_->tokenize("hi", true, false);
    says_embedding_model([&] { session_->evaluate(ids, false); });
    says_embedding_model([&] { session_->generate(ids, {}, [](const TokenEvent&) { return true; }); });
}

TEST_P(GoldenEmbeddings, TokensAndVectorsAreLlamaCpps) {
    int checked = 0;
    for (const auto& c : golden_["cases"]) {
        const std::string text = c["text"];
        const auto ids = c["ids"].get<std::vector<TokenId>>();
        // As node-llama-cpp's embedding context: special tokens added, not parsed.
        EXPECT_EQ(session_->tokenize(text, true, false), ids) << text;
        const std::vector<float> want = floats(c["embedding"]);
        const std::vector<float> raw = session_->embed_tokens(ids, false);
        ASSERT_EQ(raw.size(), want.size()) << text;
        const std::vector<float> unit = session_->embed_tokens(ids, true);
        if (test::fast_arithmetic()) {
            EXPECT_GE(cosine(raw, want), kFastCosine) << text << " (" << ids.size() << " tokens)";
        } else {
            for (size_t i = 0; i < want.size(); ++i) {
                ASSERT_EQ(raw[i], want[i]) << text << " (" << ids.size() << " tokens), value " << i;
            }
            EXPECT_EQ(unit, normalized(want)) << text;
        }
        ++checked;
    }
    EXPECT_GE(checked, 10);
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenEmbeddings, ::testing::ValuesIn(runs()), run_name);

}  // namespace
}  // namespace smolinfer
