// WordPiece (tokenizer.ggml.model = "bert") as llama.cpp's llm_tokenizer_wpm.
//   - WordPieceWords: the normalizer and word splitting, by hand.
//   - WordPiece: a crafted vocabulary: greedy longest match by bytes with no
//     backtracking, [UNK] per failed word, [CLS]/[SEP], the one-line errors.
//   - WordPieceBge: llama.cpp's bge vocabulary (models/ggml-vocab-bert-bge.gguf,
//     $SMOLINFER_LLAMA_SRC), expectations worked out by hand and written as
//     token texts. test_vocab_families checks it against llama.cpp itself.
//   - WordPieceTables: the code point tables its normalizer reads (classes,
//     lowercase, NFD's first code point), which scripts/gen-unicode-tables.py
//     generates, equal llama.cpp's own src/unicode-data.cpp at every code point.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "smolinfer/error.h"
#include "support/crafted_gguf.h"
#include "support/files.h"
#include "support/llama_vocab.h"
#include "support/paths.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "text/vocab.h"
#include "text/wordpiece.h"

namespace smolinfer::text::wordpiece_tests {  // named: unity batches share a translation unit
namespace {

using Ids = std::vector<TokenId>;
using Words = std::vector<std::string>;

#define WM "\xE2\x96\x81"  // U+2581, put before every word

// ---------------------------------------------------------------- words

Words words(const std::string& s) { return wordpiece_words(s, /*lowercase=*/true, /*strip_accents=*/true); }

TEST(WordPieceWords, WhitespaceSplitsAndPunctuationAndAsciiSymbolsStandAlone) {
    EXPECT_EQ(words("Hello, world!"), (Words{"hello", ",", "world", "!"}));
    EXPECT_EQ(words("  a\tb\n\nc\xE3\x80\x80" "d "), (Words{"a", "b", "c", "d"}));  // U+3000 is whitespace
    EXPECT_EQ(words("a+b=c $5 x^y|z~"), (Words{"a", "+", "b", "=", "c", "$", "5", "x", "^", "y", "|", "z", "~"}));
    // Symbols beyond ASCII stay inside the word (x\u00D7y, snow\u2603man); punctuation anywhere does not.
    EXPECT_EQ(words("x\xC3\x97y snow\xE2\x98\x83man \xC2\xBFque\xE2\x80\x94no"),
              (Words{"x\xC3\x97y", "snow\xE2\x98\x83man", "\xC2\xBF", "que", "\xE2\x80\x94", "no"}));
    EXPECT_EQ(words(""), Words{});
    EXPECT_EQ(words(" \n "), Words{});
}

TEST(WordPieceWords, AccentsComeOffAndCaseGoesDownOneCodePointAtATime) {
    EXPECT_EQ(words("Caf\xC3\xA9 CAF\xC3\x89"), (Words{"cafe", "cafe"}));  // "Café CAFÉ"
    EXPECT_EQ(words("e\xCC\x81"), (Words{"e"}));                          // e + combining acute: the mark is dropped
    EXPECT_EQ(words("\xC4\xB0"), (Words{"i"}));                           // U+0130 -> I + U+0307 -> "i"
    EXPECT_EQ(words("\xED\x95\x9C\xEA\xB5\xAD"), (Words{"\xE1\x84\x92\xE1\x84\x80"}));  // 한국 -> leading jamo
    // Without strip_accents the marks and precomposed letters stay; lowercase is still one to one.
    EXPECT_EQ(wordpiece_words("Caf\xC3\x89 e\xCC\x81 \xC4\xB0", true, false),
              (Words{"caf\xC3\xA9", "e\xCC\x81", "i"}));
    EXPECT_EQ(wordpiece_words("Caf\xC3\x89", false, true), (Words{"CafE"}));
    EXPECT_EQ(wordpiece_words("Caf\xC3\x89", false, false), (Words{"Caf\xC3\x89"}));
}

TEST(WordPieceWords, CjkIdeographsStandAloneWithLlamaCppsRanges) {
    EXPECT_EQ(words("\xE5\x8C\x97\xE4\xBA\xAC" "ab"), (Words{"\xE5\x8C\x97", "\xE4\xBA\xAC", "ab"}));  // 北京ab
    // Kana is not in BERT's ranges: it stays one word.
    EXPECT_EQ(words("\xE3\x81\x93\xE3\x82\x93"), (Words{"\xE3\x81\x93\xE3\x82\x93"}));
    // U+2B820..U+2B91F are left out (llama.cpp copies Hugging Face's 0x2B920).
    EXPECT_EQ(words("a\xF0\xAB\xA0\xA0" "b"), (Words{"a\xF0\xAB\xA0\xA0" "b"}));              // U+2B820
    EXPECT_EQ(words("a\xF0\xAB\xA4\xA0" "b"), (Words{"a", "\xF0\xAB\xA4\xA0", "b"}));       // U+2B920
}

TEST(WordPieceWords, ControlsNulAndBadBytesVanishWithoutSplitting) {
    EXPECT_EQ(words(std::string("a\0b\x01" "c\x1F" "d", 7)), (Words{"abcd"}));
    EXPECT_EQ(words("soft\xC2\xADhyphen zero\xE2\x80\x8Bwidth"), (Words{"softhyphen", "zerowidth"}));  // Cf
    EXPECT_EQ(words("abc\xFF" "def"), (Words{"abcdef"}));  // the bad byte is U+FFFD, dropped
    EXPECT_EQ(words("x\xEF\xBF\xBDy"), (Words{"xy"}));    // so is a real U+FFFD
}

TEST(WordPieceWords, ACodePointBeyondUnicodeIsAnErrorAsInLlamaCpp) {
    EXPECT_THROW(words("a\xF4\x90\x80\x80"), Error);  // U+110000
    // The last code point, U+10FFFF (unassigned, no control), is an ordinary character.
    EXPECT_EQ(words("\xF4\x8F\xBF\xBF"), (Words{"\xF4\x8F\xBF\xBF"}));
}

// ---------------------------------------------------------------- crafted

using namespace test::crafted;

// Ids are positions in this list.
const char* const kTexts[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", WM "ab", WM "a", "bcd", WM "un", WM "unaff", "aff", "able", WM ","};
enum : TokenId { kPad, kUnk, kCls, kSep, kAb, kA, kBcd, kUn, kUnaff, kAff, kAble, kComma };

Gguf bert_file(bool with_ids = true) {
    std::vector<std::string> texts(std::begin(kTexts), std::end(kTexts));
    std::vector<int32_t> types(texts.size(), 1);
    for (int i = 0; i < 4; ++i) types[size_t(i)] = 3;  // control
    Gguf g;
    g.kv("tokenizer.ggml.model", enc_string("bert"));
    g.kv("tokenizer.ggml.pre", enc_string("no-such-pre-tokenizer"));  // ignored, as in llama.cpp
    g.kv("tokenizer.ggml.tokens", enc_string_array(texts));
    g.kv("tokenizer.ggml.token_type", enc_array(gguf::ValueType::I32, types));
    if (with_ids) {
        g.kv("tokenizer.ggml.bos_token_id", enc_u32(kCls));
        g.kv("tokenizer.ggml.seperator_token_id", enc_u32(kSep));
        g.kv("tokenizer.ggml.unknown_token_id", enc_u32(kUnk));
    }
    return g;
}

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

Ids encode(const Vocab& v, const std::string& text, bool add_special = false, bool parse_special = true) {
    return Tokenizer(v).encode(text, add_special, parse_special);
}

TEST(WordPiece, LongestMatchByBytesWithoutBacktracking) {
    const auto l = load(bert_file());
    const Vocab& v = *l->vocab;
    EXPECT_EQ(v.model(), TokenizerModel::WordPiece);
    EXPECT_EQ(v.max_token_len(), 8u);  // "▁unaff"
    EXPECT_EQ(encode(v, "unaffable"), (Ids{kUnaff, kAble}));  // "▁unaff" beats "▁un"
    EXPECT_EQ(encode(v, "a ab"), (Ids{kA, kAb}));
    // "▁ab" is taken first, and "cd" then matches nothing: the whole word is
    // [UNK], although "▁a" + "bcd" would have spelled it.
    EXPECT_EQ(encode(v, "abcd"), (Ids{kUnk}));
    // One [UNK] per failed word; the others are unaffected ("▁unable" is
    // "▁un" + "able": "▁unaff" does not fit).
    EXPECT_EQ(encode(v, "ab xyz unable zz, a"), (Ids{kAb, kUnk, kUn, kAble, kUnk, kComma, kA}));
}

TEST(WordPiece, AddSpecialIsAlwaysClsAndSep) {
    Gguf g = bert_file();
    g.kv("tokenizer.ggml.add_bos_token", enc_bool(false));
    g.kv("tokenizer.ggml.add_eos_token", enc_bool(true));  // no eos_token_id: WordPiece does not mind
    const auto l = load(g);
    const Vocab& v = *l->vocab;
    EXPECT_EQ(encode(v, "a", true), (Ids{kCls, kA, kSep}));
    EXPECT_EQ(encode(v, "", true), (Ids{kCls, kSep}));
    EXPECT_EQ(encode(v, "[CLS]a[SEP]", true), (Ids{kCls, kCls, kA, kSep, kSep}));
    // Control-token texts are plain text without parse_special: "[" is punctuation.
    EXPECT_EQ(encode(v, "[SEP]", false, false), (Ids{kUnk, kUnk, kUnk}));
}

TEST(WordPiece, DefaultIdsAreBertsAndMissingOnesAreOneLineErrors) {
    auto message = [](const Gguf& g) -> std::string {
        try {
            load(g);
        } catch (const Error& e) {
            return e.what();
        }
        return "(loaded)";
    };
    Gguf g = bert_file(/*with_ids=*/false);  // 12 tokens: 101, 102, 100 are out of range
    EXPECT_NE(message(g).find("'tokenizer.ggml.bos_token_id'"), std::string::npos) << message(g);
    EXPECT_EQ(message(g).find('\n'), std::string::npos);
    EXPECT_NE(message(g).find("[CLS]"), std::string::npos) << message(g);
    g.kv("tokenizer.ggml.bos_token_id", enc_u32(kCls));
    EXPECT_NE(message(g).find("'tokenizer.ggml.seperator_token_id'"), std::string::npos) << message(g);
    g.kv("tokenizer.ggml.seperator_token_id", enc_u32(kSep));
    EXPECT_NE(message(g).find("'tokenizer.ggml.unknown_token_id'"), std::string::npos) << message(g);
    g.kv("tokenizer.ggml.unknown_token_id", enc_u32(99));
    EXPECT_NE(message(g).find("'tokenizer.ggml.unknown_token_id' = 99"), std::string::npos) << message(g);
    g.kv("tokenizer.ggml.unknown_token_id", enc_u32(kUnk));
    EXPECT_EQ(message(g), "(loaded)");
}

TEST(WordPiece, NormalizerKeys) {
    const auto on = load(bert_file());
    EXPECT_TRUE(on->vocab->lowercase());
    EXPECT_TRUE(on->vocab->strip_accents());
    EXPECT_EQ(encode(*on->vocab, "AB"), (Ids{kAb}));

    Gguf g = bert_file();
    g.kv("tokenizer.ggml.normalizer.lowercase", enc_bool(false));  // strip_accents follows
    const auto off = load(g);
    EXPECT_FALSE(off->vocab->lowercase());
    EXPECT_FALSE(off->vocab->strip_accents());
    EXPECT_EQ(encode(*off->vocab, "AB ab"), (Ids{kUnk, kAb}));

    g.kv("tokenizer.ggml.normalizer.strip_accents", enc_bool(true));
    const auto strip = load(g);
    EXPECT_FALSE(strip->vocab->lowercase());
    EXPECT_TRUE(strip->vocab->strip_accents());
}

TEST(WordPiece, DetokenizeUnescapesWordStartsAndCleansSpaces) {
    const auto l = load(bert_file());
    const Vocab& v = *l->vocab;
    EXPECT_TRUE(v.clean_spaces());
    // " ab" " un" "aff"... -> " ab unaffable, a": " ," loses its space; the leading one stays.
    EXPECT_EQ(detokenize(v, Ids{kAb, kUnaff, kAble, kComma, kA}, false), " ab unaffable, a");
    EXPECT_EQ(detokenize(v, Ids{kCls, kA, kSep}, false), " a");
    EXPECT_EQ(detokenize(v, Ids{kCls, kA, kSep}, true), "[CLS] a[SEP]");
}

// ---------------------------------------------------------------- bge

const Vocab& bge() { return test::llama_vocab("bert-bge"); }

// Ids of token texts.
Ids ids(std::initializer_list<const char*> texts) {
    Ids out;
    for (const char* t : texts) {
        const auto id = bge().find(t);
        if (!id) throw std::runtime_error(std::string("no token ") + t + " in the bge vocabulary");
        out.push_back(*id);
    }
    return out;
}

TEST(WordPieceBge, SpecialIdsAndLongestToken) {
    const Vocab& v = bge();
    EXPECT_EQ(v.bos(), TokenId(101));  // no bos_token_id in the file: BERT's default
    EXPECT_EQ(v.sep(), TokenId(102));
    EXPECT_EQ(v.unk(), TokenId(100));
    EXPECT_EQ(v.max_token_len(), 21u);  // "▁telecommunications"
}

TEST(WordPieceBge, HelloWorld) {
    EXPECT_EQ(encode(bge(), "Hello, world!"), (Ids{7592, 1010, 2088, 999}));
    EXPECT_EQ(encode(bge(), "Hello, world!"), ids({WM "hello", WM ",", WM "world", WM "!"}));
    EXPECT_EQ(encode(bge(), "Hello, world!", true), (Ids{101, 7592, 1010, 2088, 999, 102}));
    EXPECT_EQ(detokenize(bge(), Ids{101, 7592, 1010, 2088, 999, 102}, false), " hello, world!");
}

TEST(WordPieceBge, ContinuationsAndUnknownWords) {
    EXPECT_EQ(encode(bge(), "unaffable"), ids({WM "una", "ffa", "ble"}));  // BERT's "una ##ffa ##ble"
    EXPECT_EQ(encode(bge(), "tokenization"), ids({WM "token", "ization"}));
    // U+2603 (a symbol, not ASCII) stays in the word, and nothing spells it.
    EXPECT_EQ(encode(bge(), "hello\xE2\x98\x83world fine"), (Ids{100, ids({WM "fine"})[0]}));
    // No 100-character limit per word (Hugging Face's [UNK] for longer words).
    const Ids long_word = encode(bge(), std::string(300, 'a'));
    EXPECT_GT(long_word.size(), 1u);
    for (const TokenId id : long_word) EXPECT_NE(id, 100);
}

TEST(WordPieceBge, AccentsCaseAndCjk) {
    EXPECT_EQ(encode(bge(), "Caf\xC3\xA9 CAF\xC3\x89"), encode(bge(), "cafe cafe"));
    EXPECT_EQ(encode(bge(), "\xE5\x8C\x97\xE4\xBA\xAC"), ids({WM "\xE5\x8C\x97", WM "\xE4\xBA\xAC"}));  // 北京
    EXPECT_EQ(encode(bge(), "\xED\x95\x9C"), ids({WM "\xE1\x84\x92"}));  // 한 -> the jamo ᄒ
    EXPECT_EQ(encode(bge(), "\xC4\xB0"), ids({WM "i"}));
}

TEST(WordPieceBge, SpecialTokenTextsOnlyWithParseSpecial) {
    EXPECT_EQ(encode(bge(), "[CLS] hi [SEP]", false, true), (Ids{101, ids({WM "hi"})[0], 102}));
    EXPECT_EQ(encode(bge(), "[CLS] hi [SEP]", false, false),
              ids({WM "[", WM "cl", "s", WM "]", WM "hi", WM "[", WM "sep", WM "]"}));
}

// ---------------------------------------------------------------- tables

// The hex numbers of each "{0x..., 0x...}," line of the initializer list
// `name` in llama.cpp's src/unicode-data.cpp.
std::vector<std::vector<uint32_t>> llama_table(const std::string& name) {
    static const std::string source = test::read_file(test::llama_source_path("src/unicode-data.cpp"));
    const size_t begin = source.find(" " + name + " = {");
    if (begin == std::string::npos) throw std::runtime_error("no " + name + " in llama.cpp's src/unicode-data.cpp");
    const size_t end = source.find("};", begin);
    std::vector<std::vector<uint32_t>> rows;
    const std::regex number("0x([0-9A-Fa-f]+)");
    size_t line_start = source.find('\n', begin) + 1;
    while (line_start < end) {
        const size_t line_end = source.find('\n', line_start);
        const std::string line = source.substr(line_start, line_end - line_start);
        std::vector<uint32_t> row;
        for (std::sregex_iterator it(line.begin(), line.end(), number), last; it != last; ++it) {
            row.push_back(uint32_t(std::stoul((*it)[1].str(), nullptr, 16)));
        }
        if (!row.empty()) rows.push_back(std::move(row));
        line_start = line_end + 1;
    }
    return rows;
}

std::string hex(uint32_t c) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", unsigned(c));
    return buf;
}

constexpr uint32_t kCodepoints = 0x110000;

TEST(WordPieceTables, LowercaseIsLlamaCpps) {
    std::map<uint32_t, uint32_t> want;
    for (const auto& row : llama_table("unicode_map_lowercase")) want[row.at(0)] = row.at(1);
    ASSERT_GT(want.size(), 1000u);
    int wrong = 0;
    for (uint32_t c = 0; c < kCodepoints; ++c) {
        const auto it = want.find(c);
        const uint32_t expected = it == want.end() ? c : it->second;
        if (simple_lowercase(c) != expected && wrong++ < 10) {
            ADD_FAILURE() << hex(c) << ": ours " << hex(simple_lowercase(c)) << ", llama.cpp's " << hex(expected);
        }
    }
    EXPECT_EQ(wrong, 0);
}

TEST(WordPieceTables, NfdFirstIsLlamaCpps) {
    // llama.cpp's rows are {first, last, nfd}; code points in none map to themselves.
    std::vector<uint32_t> want(kCodepoints);
    for (uint32_t c = 0; c < kCodepoints; ++c) want[c] = c;
    const auto rows = llama_table("unicode_ranges_nfd");
    ASSERT_GT(rows.size(), 1000u);
    for (const auto& row : rows) {
        for (uint32_t c = row.at(0); c <= row.at(1); ++c) want[c] = row.at(2);
    }
    int wrong = 0;
    for (uint32_t c = 0; c < kCodepoints; ++c) {
        if (nfd_first(c) != want[c] && wrong++ < 10) {
            ADD_FAILURE() << hex(c) << ": ours " << hex(nfd_first(c)) << ", llama.cpp's " << hex(want[c]);
        }
    }
    EXPECT_EQ(wrong, 0);
}

// The classes WordPiece tests (control, mark, punctuation, symbol,
// whitespace) and the rest of the flags.
TEST(WordPieceTables, CodepointClassesAreLlamaCpps) {
    std::vector<uint16_t> want(kCodepoints, CodepointFlags::Undefined);
    const auto ranges = llama_table("unicode_ranges_flags");  // {first, flags}, up to {0x110000, 0}
    ASSERT_GT(ranges.size(), 1000u);
    for (size_t i = 0; i + 1 < ranges.size(); ++i) {
        for (uint32_t c = ranges[i].at(0); c < ranges[i + 1].at(0); ++c) want[c] = uint16_t(ranges[i].at(1));
    }
    for (const auto& row : llama_table("unicode_set_whitespace")) want.at(row.at(0)) |= CodepointFlags::Whitespace;
    int wrong = 0;
    for (uint32_t c = 0; c < kCodepoints; ++c) {
        if (codepoint_flags(c).bits != want[c] && wrong++ < 10) {
            ADD_FAILURE() << hex(c) << ": ours " << codepoint_flags(c).bits << ", llama.cpp's " << want[c];
        }
    }
    EXPECT_EQ(wrong, 0);
}

#undef WM

}  // namespace
}  // namespace smolinfer::text::wordpiece_tests
