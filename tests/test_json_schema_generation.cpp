// End-to-end parity for JSON-schema output: for every case of
// tests/golden/json_schema/generation.json (llama.cpp's greedy tokens on the
// real SmolLM2 Q4_1 model under the grammar llama.cpp's converter wrote for
// the schema; scripts/make-json-schema-golden), our converter writes that
// same grammar, our chat prompt is the same tokens, and our greedy tokens
// under it are the same.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "grammar/json_schema_to_gbnf.h"
#include "smolinfer/session.h"
#include "support/paths.h"
#include "support/files.h"

namespace smolinfer {
namespace {


const std::filesystem::path& schema_dir() {
    static const std::filesystem::path dir = test::golden_path("json_schema");
    return dir;
}

TEST(JsonSchemaGeneration, GoldenHasAtLeastFifteenValidatedCases) {
    const auto golden = test::load_golden("json_schema/generation.json");
    ASSERT_GE(golden["cases"].size(), 15u);
    for (const auto& c : golden["cases"]) EXPECT_EQ(c["stop"], "eog") << c["schema"];
}

TEST(JsonSchemaGeneration, OurGrammarIsTheOneLlamaCppGeneratedUnder) {
    const auto golden = test::load_golden("json_schema/generation.json");
    for (const auto& c : golden["cases"]) {
        const std::string name = c["schema"];
        EXPECT_EQ(grammar::json_schema_to_gbnf(test::read_file(schema_dir() / (name + ".schema.json"))),
                  test::read_file(schema_dir() / (name + ".gbnf")))
            << name;
    }
}

TEST(JsonSchemaGeneration, ChatPromptTokensMatch) {
    const auto golden = test::load_golden("json_schema/generation.json");
    SessionOptions o;
    o.context = 1024;
    auto session = Session::open_file(test::model_path("Q4_1"), o);
    for (const auto& c : golden["cases"]) {
        const std::vector<TokenId> ours = session->tokenize_chat({{"user", c["prompt"].get<std::string>()}});
        EXPECT_EQ(ours, c["prompt_ids"].get<std::vector<TokenId>>()) << c["schema"];
    }
}

// Greedy generation through our converter and grammar engine: llama.cpp's
// tokens (its list ends with the end-of-generation token it sampled once the
// grammar was complete; ours stops there) and text.
//
// The goldens come from llama.cpp's AVX-512 ("zen4") CPU backend, whose
// arithmetic ours reproduces: every generation is identical. Only the
// plain WebAssembly build's fast arithmetic may part from one, and only at
// a near-tie: where our own logits for the two choices are within
// kFastNearTie (test_golden_generation.cpp: up to 0.72 nats apart).
constexpr double kFastNearTie = 0.75;

TEST(JsonSchemaGeneration, GreedyTokensUnderOurGrammarMatchLlamaCpp) {
    const auto golden = test::load_golden("json_schema/generation.json");
    SessionOptions o;
    o.context = 1024;
    o.exact = !test::fast_arithmetic();
    o.flash_attention = test::golden_flash_attention(golden);
    auto session = Session::open_file(test::model_path("Q4_1"), o);
    int identical = 0;
    for (const auto& c : golden["cases"]) {
        const std::string name = c["schema"];
        GenerateOptions g;
        g.max_tokens = golden["max_tokens"].get<int>();
        g.sampling.temperature = 0;
        g.json_schema = test::read_file(schema_dir() / (name + ".schema.json"));
        const auto prompt = c["prompt_ids"].get<std::vector<TokenId>>();
        session->reset();
        const auto st = session->generate(prompt, g, {});
        std::vector<TokenId> want = c["ids"].get<std::vector<TokenId>>();
        ASSERT_FALSE(want.empty()) << name;
        want.pop_back();
        EXPECT_EQ(st.stop, StopReason::EndOfGeneration) << name;
        if (st.tokens == want) {
            EXPECT_EQ(session->detokenize(st.tokens), c["text"].get<std::string>()) << name;
            ++identical;
            continue;
        }
        size_t k = 0;
        while (k < st.tokens.size() && k < want.size() && st.tokens[k] == want[k]) ++k;
        if (o.exact) {
            ADD_FAILURE() << name << " parts from llama.cpp at token " << k << ": ours \""
                          << session->detokenize(st.tokens) << "\", llama.cpp's \"" << c["text"].get<std::string>() << "\"";
            continue;
        }
        ASSERT_LT(k, std::min(st.tokens.size(), want.size())) << name << ": one output is a prefix of the other";
        std::vector<TokenId> upto = prompt;
        upto.insert(upto.end(), want.begin(), want.begin() + ptrdiff_t(k));
        session->reset();
        const auto logits = session->evaluate(upto, false);
        // Re-evaluated as one batch (llama.cpp's batch order, not the
        // token-by-token one), so at a near-tie the sign may flip.
        const double gap = std::abs(double(logits[size_t(st.tokens[k])]) - double(logits[size_t(want[k])]));
        EXPECT_LT(gap, kFastNearTie) << name << " parts from llama.cpp at token " << k << " (ours " << st.tokens[k]
                                 << ", llama.cpp's " << want[k] << "), not a near-tie";
        std::printf("%s: parts from llama.cpp at token %zu, a near-tie (%.4f apart)\n", name.c_str(), k, gap);
    }
    std::printf("%d of %zu identical to llama.cpp\n", identical, golden["cases"].size());
}

}  // namespace
}  // namespace smolinfer
