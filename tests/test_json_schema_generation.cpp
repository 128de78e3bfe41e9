// End-to-end parity for JSON-schema output: for every case of
// tests/golden/json_schema/generation.json (llama.cpp's greedy tokens on the
// real SmolLM2 Q4_1 model under the grammar llama.cpp's converter wrote for
// the schema; scripts/make-json-schema-golden), our converter writes that
// same grammar, our chat prompt is the same tokens, and -- once grammar-
// constrained sampling is in the engine -- our greedy tokens are the same.
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

// What it must do, for each case: open the Q4_1 model (exact arithmetic),
// generate greedily from c["prompt_ids"] with GenerateOptions::grammar =
// json_schema_to_gbnf(<schema>), max_tokens = golden["max_tokens"]; expect
// stats.tokens == c["ids"] (the last id is the end-of-generation token
// llama.cpp sampled once the grammar was complete: our stop reason must be
// EndOfGeneration, and whether stats.tokens includes that id decides
// whether to compare with c["ids"] or c["ids"] minus its last element) and
// the detokenized text == c["text"].
TEST(JsonSchemaGeneration, GreedyTokensUnderOurGrammarMatchLlamaCpp) {
    GTEST_SKIP() << "needs grammar-constrained sampling (GenerateOptions::grammar, the grammar branch); "
                    "the lead enables this test after merging it";
}

}  // namespace
}  // namespace smolinfer
