// Tokenization identical to llama.cpp on every golden model: 496 varied
// strings for SmolLM2, a multilingual corpus for Gemma 3
// (tests/golden/<model>/tokenizer.json, written by scripts/make-golden).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "smolinfer/session.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

std::string printable(const std::string& s) {
    std::string out;
    for (const unsigned char c : s) {
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20) out += "\\x" + std::to_string(int(c));
        else out += char(c);
    }
    return out;
}

class GoldenTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTokenizer, EveryStringTokenizesExactlyAsLlamaCpp) {
    const auto golden = test::load_golden(GetParam() + "/tokenizer.json");
    SessionOptions o;
    o.context = 64;  // tokenizing needs no cache
    const auto session = Session::open_file(test::model_path(GetParam()), o);
    // SmolLM2's reference ran with add_special = false (the model adds no
    // BOS anyway); Gemma's with add_special = true, as llama_tokenize adds BOS.
    const bool add_special = golden.value("add_special", false);
    int failures = 0;
    size_t n = 0;
    for (const auto& c : golden["cases"]) {
        const std::string text = c["text"];
        const bool special = c["parse_special"];
        const auto ids = session->tokenize(text, add_special, special);
        const auto want = c["ids"].get<std::vector<TokenId>>();
        ++n;
        if (ids != want && failures++ < 10) {
            ADD_FAILURE() << "\"" << printable(text) << "\" (parse_special=" << special << ")\n  ours:      "
                          << ::testing::PrintToString(ids) << "\n  llama.cpp: " << ::testing::PrintToString(want);
        }
    }
    EXPECT_EQ(failures, 0) << failures << " of " << n << " strings differ";
    EXPECT_GE(n, 100u);
}

TEST_P(GoldenTokenizer, PerplexityTextTokenizesExactlyAsLlamaCpp) {
    const auto golden = test::load_golden(GetParam() + "/perplexity.json");
    SessionOptions o;
    o.context = 64;
    const auto session = Session::open_file(test::model_path(GetParam()), o);
    std::ifstream in(test::golden_path("perplexity.txt"), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(session->tokenize(text, true, false), golden["token_ids"].get<std::vector<TokenId>>());
}

INSTANTIATE_TEST_SUITE_P(Model, GoldenTokenizer, ::testing::ValuesIn(test::golden_models()),
                         [](const auto& info) { return test::golden_run_test_name(info.param); });

}  // namespace
}  // namespace smolinfer
