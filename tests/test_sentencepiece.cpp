// SentencePiece (tokenizer.ggml.model = "llama") on a crafted vocabulary,
// every expectation worked out by hand from llama.cpp's llm_tokenizer_spm:
// the adjacent pair whose joined text is the highest-scoring token merges
// first (leftmost on ties), leftover characters fall back to <0xNN> tokens,
// spaces are U+2581 with one put before text at the start or after a
// special token. The real vocabularies are in test_vocab_families.
#include <gtest/gtest.h>

#include <memory>

#include "gguf/gguf.h"
#include "smolinfer/error.h"
#include "support/crafted_gguf.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace smolinfer::text {
namespace {

using namespace test::crafted;

#define S "\xE2\x96\x81"  // U+2581, SentencePiece's space

struct Entry {
    const char* text;
    float score;
    int32_t type;
};

// Ids are positions in this list.
const Entry kVocab[] = {
    {"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3},
    {"<0x0A>", 0, 6}, {"<0xC3>", 0, 6}, {"<0xA9>", 0, 6},
    {S, -1, 1}, {"a", -2, 1}, {"b", -2, 1}, {"c", -2, 1},
    {"ab", -5, 1},   // 10
    {"bc", -3, 1},   // 11: beats "ab"
    {"aa", -2, 1},   // 12
    {S "a", -4, 1},  // 13
    {"x", -2, 1},    // 14
};
enum : TokenId { kUnk, kBos, kEos, kLf, kC3, kA9, kSpace, kA, kB, kC, kAB, kBC, kAA, kSpaceA, kX };

Gguf vocab_file() {
    std::vector<std::string> texts;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (const Entry& e : kVocab) {
        texts.push_back(e.text);
        scores.push_back(e.score);
        types.push_back(e.type);
    }
    Gguf g;
    g.kv("tokenizer.ggml.model", enc_string("llama"));
    g.kv("tokenizer.ggml.tokens", enc_string_array(texts));
    g.kv("tokenizer.ggml.scores", enc_array(gguf::ValueType::F32, scores));
    g.kv("tokenizer.ggml.token_type", enc_array(gguf::ValueType::I32, types));
    return g;
}

// A vocabulary with the bytes it views.
struct Loaded {
    Bytes bytes;
    std::unique_ptr<gguf::File> file;
    std::unique_ptr<Vocab> vocab;
};

std::unique_ptr<Loaded> load(const Gguf& g) {
    auto l = std::make_unique<Loaded>();
    l->bytes = g.bytes();
    l->file = std::make_unique<gguf::File>(gguf::File::parse(l->bytes));
    l->vocab = std::make_unique<Vocab>(Vocab::from_metadata(l->file->metadata()));
    return l;
}

std::vector<TokenId> encode(const Vocab& v, const std::string& text, bool add_special = false, bool parse_special = true) {
    return Tokenizer(v).encode(text, add_special, parse_special);
}

using Ids = std::vector<TokenId>;

TEST(SentencePiece, HighestScoreMergesFirstNotLeftmost) {
    Gguf g = vocab_file();
    g.kv("tokenizer.ggml.add_space_prefix", enc_bool(false));
    const auto l = load(g);
    // "ab" (-5) and "bc" (-3) compete; "bc" wins, and "a"+"bc" is no token.
    EXPECT_EQ(encode(*l->vocab, "abc"), (Ids{kA, kBC}));
    EXPECT_EQ(encode(*l->vocab, "ab"), (Ids{kAB}));
}

TEST(SentencePiece, EqualScoresMergeLeftmostFirst) {
    Gguf g = vocab_file();
    g.kv("tokenizer.ggml.add_space_prefix", enc_bool(false));
    const auto l = load(g);
    EXPECT_EQ(encode(*l->vocab, "aaa"), (Ids{kAA, kA}));
    EXPECT_EQ(encode(*l->vocab, "aaaa"), (Ids{kAA, kAA}));
}

TEST(SentencePiece, UnknownCharactersFallBackToByteTokens) {
    Gguf g = vocab_file();
    g.kv("tokenizer.ggml.add_space_prefix", enc_bool(false));
    const auto l = load(g);
    EXPECT_EQ(encode(*l->vocab, "x\xC3\xA9\n"), (Ids{kX, kC3, kA9, kLf}));  // "xé\n"
    try {
        encode(*l->vocab, "\x01");
        FAIL() << "expected an error for a byte with no token";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("0x01"), std::string::npos) << e.what();
    }
}

TEST(SentencePiece, SpacePrefixAtTheStartAndAfterSpecialTokens) {
    const auto l = load(vocab_file());  // add_space_prefix: llama.cpp's default for SentencePiece
    const Vocab& v = *l->vocab;
    EXPECT_TRUE(v.add_space_prefix());
    EXPECT_EQ(encode(v, "a"), (Ids{kSpaceA}));
    EXPECT_EQ(encode(v, "a b"), (Ids{kSpaceA, kSpace, kB}));  // "▁a▁b": only "▁a" is a token
    EXPECT_EQ(encode(v, "<s>a"), (Ids{kBos, kSpaceA}));
    EXPECT_EQ(encode(v, "a<s>a"), (Ids{kSpaceA, kBos, kSpaceA}));
    EXPECT_EQ(encode(v, ""), Ids{});
}

TEST(SentencePiece, NoSpacePrefixWhenTheFileSaysSo) {
    Gguf g = vocab_file();
    g.kv("tokenizer.ggml.add_space_prefix", enc_bool(false));
    const auto l = load(g);
    EXPECT_EQ(encode(*l->vocab, "<s>a"), (Ids{kBos, kA}));
    EXPECT_EQ(encode(*l->vocab, " a"), (Ids{kSpaceA}));
}

TEST(SentencePiece, BosByDefault) {
    const auto l = load(vocab_file());  // no bos_token_id, no add_bos_token
    const Vocab& v = *l->vocab;
    EXPECT_EQ(v.bos(), kBos);
    EXPECT_EQ(v.eos(), kEos);
    EXPECT_TRUE(v.add_bos());
    EXPECT_EQ(encode(v, "a", /*add_special=*/true), (Ids{kBos, kSpaceA}));
}

TEST(SentencePiece, DetokenizeUnescapesAndDropsThePrefixSpace) {
    const auto l = load(vocab_file());
    const Vocab& v = *l->vocab;
    EXPECT_EQ(detokenize(v, Ids{kSpaceA, kSpace, kB}, false), "a b");
    EXPECT_EQ(detokenize(v, Ids{kC3, kA9}, false), "\xC3\xA9");
    // Only the first token loses its space, and a BOS that renders as
    // nothing is that first token.
    EXPECT_EQ(detokenize(v, Ids{kBos, kSpaceA}, false), " a");
    EXPECT_EQ(detokenize(v, Ids{kBos, kSpaceA}, true), "<s> a");
    EXPECT_EQ(token_piece(v, kSpaceA, false), " a");
}

TEST(SentencePiece, BadScoresAreNamed) {
    Gguf g = vocab_file();
    g.kv("tokenizer.ggml.scores", enc_string_array({"1"}));
    try {
        load(g);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'tokenizer.ggml.scores'"), std::string::npos) << e.what();
    }
    g.kv("tokenizer.ggml.scores", enc_array(gguf::ValueType::F32, std::vector<float>{1.0f}));
    try {
        load(g);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("1 entries for 15 tokens"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace smolinfer::text
