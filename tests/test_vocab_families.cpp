// Tokenizers of the model families beyond SmolLM2, on llama.cpp's own
// vocabulary-only GGUFs (models/ggml-vocab-<name>.gguf in llama.cpp's
// source, found through $SMOLINFER_LLAMA_SRC; never committed here):
//   - llama.cpp's test strings (.gguf.inp) give exactly the ids of .gguf.out,
//     tokenized as its tests/test-tokenizer-0.cpp does (add_special = false,
//     parse_special = false);
//   - our 496-string corpus gives exactly the ids llama.cpp gave
//     (tests/golden/vocab/<name>.json, written by
//     scripts/golden/make-vocab-golden.mjs; plus tests/golden/vocab-strings.json
//     around these families' own special tokens), and those ids detokenize to
//     llama.cpp's text. WordPiece's file (bert-bge) also has add_special
//     cases, strings of its own, text that is not valid UTF-8 ("text_hex")
//     and the text llama.cpp refuses ("error").
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "smolinfer/error.h"
#include "support/llama_vocab.h"
#include "support/paths.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/vocab.h"
#include "support/files.h"

namespace smolinfer::text {
namespace {


const Vocab& family_vocab(const std::string& name) { return test::llama_vocab(name); }

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

// llama.cpp's test strings, separated by "\n__ggml_vocab_test__\n", and
// the expected ids, one line of space-separated ids per string.
std::vector<std::pair<std::string, std::vector<TokenId>>> llama_cpp_cases(const std::string& name) {
    const std::string base = "models/ggml-vocab-" + name + ".gguf";
    const std::string inp = test::read_file(test::llama_source_path(base + ".inp"));
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0; pos < inp.size();) {
        const size_t next = inp.find(sep, pos);
        if (next == std::string::npos) {
            texts.push_back(inp.substr(pos));
            break;
        }
        texts.push_back(inp.substr(pos, next - pos));
        pos = next + sep.size();
    }
    std::ifstream out(test::llama_source_path(base + ".out"));
    std::vector<std::pair<std::string, std::vector<TokenId>>> cases;
    size_t i = 0;
    for (std::string line; std::getline(out, line); ++i) {
        if (i >= texts.size()) throw std::runtime_error(base + ".out has more lines than .inp has strings");
        std::vector<TokenId> ids;
        std::istringstream words(line);
        for (long id; words >> id;) ids.push_back(TokenId(id));
        cases.emplace_back(texts[i], std::move(ids));
    }
    if (i != texts.size()) throw std::runtime_error(base + ".out has fewer lines than .inp has strings");
    return cases;
}

std::string from_hex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out += char(std::stoi(hex.substr(i, 2), nullptr, 16));
    return out;
}

// A golden case's bytes: the field `name`, or `name`_hex when they were not valid UTF-8.
std::optional<std::string> golden_bytes(const nlohmann::json& c, const std::string& name) {
    if (c.contains(name)) return c[name].get<std::string>();
    if (c.contains(name + "_hex")) return from_hex(c[name + "_hex"].get<std::string>());
    return std::nullopt;
}

class VocabFamily : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabFamily, LlamaCppTestStringsTokenizeToItsIds) {
    const Vocab& vocab = family_vocab(GetParam());
    const Tokenizer tok(vocab);
    const auto cases = llama_cpp_cases(GetParam());
    int failures = 0;
    for (const auto& [text, want] : cases) {
        const auto ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
        if (ids != want && failures++ < 10) {
            ADD_FAILURE() << "\"" << printable(text) << "\"\n  ours:      " << ::testing::PrintToString(ids)
                          << "\n  llama.cpp: " << ::testing::PrintToString(want);
        }
    }
    EXPECT_EQ(failures, 0) << failures << " of " << cases.size() << " strings differ";
    EXPECT_GE(cases.size(), 30u);
}

TEST_P(VocabFamily, CorpusTokenizesAndDetokenizesExactlyAsLlamaCpp) {
    const Vocab& vocab = family_vocab(GetParam());
    const Tokenizer tok(vocab);
    const auto golden = test::load_golden("vocab/" + GetParam() + ".json");
    int failures = 0;
    size_t n = 0;
    for (const auto& c : golden["cases"]) {
        const std::string text = *golden_bytes(c, "text");
        const bool special = c["parse_special"];
        const bool add_special = c.value("add_special", false);
        const std::string what = "\"" + printable(text) + "\" (parse_special=" + std::to_string(special) +
                                 ", add_special=" + std::to_string(add_special) + ")";
        ++n;
        if (c.contains("error")) {  // llama.cpp's tokenizer threw
            try {
                tok.encode(text, add_special, special);
                if (failures++ < 10) ADD_FAILURE() << what << ": llama.cpp fails (" << c["error"] << "), ours does not";
            } catch (const Error&) {
            }
            continue;
        }
        const auto want = c["ids"].get<std::vector<TokenId>>();
        const auto ids = tok.encode(text, add_special, special);
        if (ids != want && failures++ < 10) {
            ADD_FAILURE() << what << "\n  ours:      " << ::testing::PrintToString(ids)
                          << "\n  llama.cpp: " << ::testing::PrintToString(want);
        }
        // The ids detokenized with control tokens left out, then (where
        // recorded) rendered.
        for (const bool unparse : {false, true}) {
            const auto expected = golden_bytes(c, unparse ? "detokenized_special" : "detokenized");
            if (!expected) continue;
            const std::string back = detokenize(vocab, want, unparse);
            if (back != *expected && failures++ < 10) {
                ADD_FAILURE() << "detokenize(special=" << unparse << ") of " << what << "'s ids\n  ours:      \""
                              << printable(back) << "\"\n  llama.cpp: \"" << printable(*expected) << "\"";
            }
        }
    }
    EXPECT_EQ(failures, 0) << failures << " mismatches over " << n << " cases";
    EXPECT_GE(n, 496u);
}

// Which tokens are control, user-defined, unknown, rstrip and
// end-of-generation, BOS/EOS and whether they are added: llama.cpp derives
// these from token types, ids, flags and its text-based rules.
TEST_P(VocabFamily, SpecialTokensAreLlamaCpps) {
    const Vocab& vocab = family_vocab(GetParam());
    const auto special = test::load_golden("vocab/" + GetParam() + ".json")["special"];
    ASSERT_EQ(vocab.size(), special["n_tokens"].get<size_t>());
    auto optional_id = [](const nlohmann::json& j) -> std::optional<TokenId> {
        if (j.is_null()) return std::nullopt;
        return j.get<TokenId>();
    };
    EXPECT_EQ(vocab.bos(), optional_id(special["bos"]));
    EXPECT_EQ(vocab.eos(), optional_id(special["eos"]));
    EXPECT_EQ(vocab.add_bos(), special["add_bos"].get<bool>());
    EXPECT_EQ(vocab.add_eos(), special["add_eos"].get<bool>());
    if (special.contains("sep")) {
        EXPECT_EQ(vocab.sep(), special["sep"].get<TokenId>());
    }

    auto ids_where = [&](auto pred) {
        std::vector<TokenId> ids;
        for (TokenId id = 0; size_t(id) < vocab.size(); ++id) {
            if (pred(id)) ids.push_back(id);
        }
        return ids;
    };
    auto golden_ids = [&](const char* key) { return special[key].get<std::vector<TokenId>>(); };
    EXPECT_EQ(ids_where([&](TokenId id) { return vocab.kind(id) == TokenKind::Control; }), golden_ids("control"));
    EXPECT_EQ(ids_where([&](TokenId id) { return vocab.kind(id) == TokenKind::UserDefined; }),
              golden_ids("user_defined"));
    EXPECT_EQ(ids_where([&](TokenId id) { return vocab.kind(id) == TokenKind::Unknown; }), golden_ids("unknown"));
    EXPECT_EQ(ids_where([&](TokenId id) { return vocab.rstrip(id); }), golden_ids("rstrip"));
    EXPECT_EQ(ids_where([&](TokenId id) { return vocab.is_end_of_generation(id); }), golden_ids("eog"));
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, VocabFamily,
                         ::testing::Values("llama-spm", "llama-bpe", "qwen2", "phi-3", "gpt-2", "bert-bge"),
                         [](const auto& info) {
                             std::string s = info.param;
                             for (char& c : s) if (c == '-') c = '_';
                             return s;
                         });

}  // namespace
}  // namespace smolinfer::text
