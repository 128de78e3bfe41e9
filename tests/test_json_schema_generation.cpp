// End-to-end parity for JSON-schema output: for every case of
// tests/golden/json_schema/generation.json (llama.cpp's greedy tokens on the
// real SmolLM2 Q4_1 model under the grammar llama.cpp's converter wrote for
// the schema; scripts/make-json-schema-golden), our converter writes that
// same grammar, our chat prompt is the same tokens, and our greedy tokens
// under it are the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "grammar/json_schema_to_gbnf.h"
#include "smolinfer/session.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

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
        EXPECT_EQ(grammar::json_schema_to_gbnf(read_file(schema_dir() / (name + ".schema.json"))),
                  read_file(schema_dir() / (name + ".gbnf")))
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
TEST(JsonSchemaGeneration, GreedyTokensUnderOurGrammarMatchLlamaCpp) {
    const auto golden = test::load_golden("json_schema/generation.json");
    SessionOptions o;
    o.context = 1024;
    o.exact = !test::fast_arithmetic();
    auto session = Session::open_file(test::model_path("Q4_1"), o);
    for (const auto& c : golden["cases"]) {
        const std::string name = c["schema"];
        GenerateOptions g;
        g.max_tokens = golden["max_tokens"].get<int>();
        g.sampling.temperature = 0;
        g.json_schema = read_file(schema_dir() / (name + ".schema.json"));
        session->reset();
        const auto st = session->generate(c["prompt_ids"].get<std::vector<TokenId>>(), g, {});
        std::vector<TokenId> want = c["ids"].get<std::vector<TokenId>>();
        ASSERT_FALSE(want.empty()) << name;
        want.pop_back();
        EXPECT_EQ(st.stop, StopReason::EndOfGeneration) << name;
        EXPECT_EQ(st.tokens, want) << name;
        EXPECT_EQ(session->detokenize(st.tokens), c["text"].get<std::string>()) << name;
    }
}

}  // namespace
}  // namespace smolinfer
