// Tokenizer/detokenizer properties on llama.cpp's vocabularies of the other
// families ($SMOLINFER_LLAMA_SRC), seeded random text as in
// test_properties_text_model.cpp (see tests/support/text_properties.h).
//   - Qwen2 (byte-level BPE, no clean-up of spaces): the byte-level BPE
//     properties of tests/support/text_property_checks.h.
//   - SentencePiece (Llama 2 / TinyLlama, Phi-3): valid UTF-8 comes back
//     exactly from detok(tok(s)), except that U+2581 (SentencePiece's own
//     space mark) comes back as a space; every character without a token
//     goes through <0xNN> tokens. Streaming the pieces gives the same text
//     with the space prefix still on.
// Llama 3's and GPT-2's vocabularies clean up spaces in detokenize (" ," ->
// ","), so plain round trips do not hold there; their golden files check them.
//   - WordPiece (bge): the text comes back normalized, not as it was, so:
//     add_special frames the plain ids with [CLS] ... [SEP]; words are
//     tokenized on their own (s + " " + t gives the ids of s, then of t);
//     the detokenized text tokenizes to the same ids less the [UNK]s (an
//     unknown word detokenizes to nothing); plain text gives no control
//     token but [UNK].
#include <gtest/gtest.h>

#include "support/llama_vocab.h"
#include "support/text_properties.h"
#include "support/text_property_checks.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace smolinfer {
namespace {

using namespace test::props;

TEST(TextPropertiesQwen2, RoundTripValidUtf8WithoutSpecialParsing) {
    round_trip_plain(test::llama_vocab("qwen2"), cases(2000), 2100000);
}

TEST(TextPropertiesQwen2, StreamingTokenizedText) {
    stream_tokenized(test::llama_vocab("qwen2"), cases(2000), 2200000);
}

TEST(TextPropertiesQwen2, StreamingRandomIds) {
    stream_random_ids(test::llama_vocab("qwen2"), cases(2000), 2300000);
}

std::string spaces_for_marks(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        if (s.compare(i, 3, "\xE2\x96\x81") == 0) {
            out += ' ';
            i += 3;
        } else {
            out += s[i++];
        }
    }
    return out;
}

void sentencepiece_round_trip(const std::string& name, int n, uint64_t salt) {
    const Vocab& v = test::llama_vocab(name);
    ASSERT_EQ(v.model(), text::TokenizerModel::SentencePiece);
    const text::Tokenizer tok(v);
    TextOptions o;
    o.specials = control_texts(v);
    Failures f(name + ": detok(tok(s, parse_special=false)) == s (U+2581 as space)");
    int bytes_used = 0;
    for (int i = 0; i < n; ++i) {
        const uint64_t seed = base_seed() + salt + uint64_t(i);
        TextGen g(seed);
        const std::string s = g.text(o);
        const auto ids = tok.encode(s, false, false);
        for (const TokenId id : ids) {
            if (is_control(v, id)) f.report("control token " + std::to_string(id) + " from plain text: " + where(seed, s));
            if (v.kind(id) == TokenKind::Byte) ++bytes_used;
        }
        const std::string want = spaces_for_marks(s);
        const std::string got = text::detokenize(v, ids, false);
        if (got != want) f.report("got " + escaped(got) + ": " + where(seed, s));

        text::StreamDecoder stream(v);
        std::string streamed;
        for (const TokenId id : ids) streamed += stream.push(id);
        streamed += stream.finish();
        const std::string streamed_want = (s.empty() || !v.add_space_prefix()) ? want : " " + want;
        if (streamed != streamed_want) f.report("streamed " + escaped(streamed) + ": " + where(seed, s));
    }
    EXPECT_GT(bytes_used, 0) << "the generator should reach characters that need byte fallback";
}

TEST(TextPropertiesSentencePiece, LlamaRoundTripValidUtf8) { sentencepiece_round_trip("llama-spm", cases(2000), 2400000); }

TEST(TextPropertiesSentencePiece, Phi3RoundTripValidUtf8) { sentencepiece_round_trip("phi-3", cases(2000), 2500000); }

TEST(TextPropertiesWordPiece, BgeFramingWordsAndRetokenizing) {
    const Vocab& v = test::llama_vocab("bert-bge");
    ASSERT_EQ(v.model(), text::TokenizerModel::WordPiece);
    const text::Tokenizer tok(v);
    TextOptions o;
    o.specials = control_texts(v);  // plain text here: "[CLS]" is "[", "cls", "]"
    Failures f("bert-bge: WordPiece properties");
    int unknown = 0;
    for (int i = 0; i < cases(2000); ++i) {
        const uint64_t seed = base_seed() + 2600000 + uint64_t(i);
        TextGen g(seed);
        const std::string s = g.text(o);
        const std::string t = g.text(o);
        const auto ids = tok.encode(s, false, false);
        auto framed = ids;
        framed.insert(framed.begin(), *v.bos());
        framed.push_back(v.sep());
        if (tok.encode(s, true, false) != framed) f.report("add_special is not [CLS] + ids + [SEP]: " + where(seed, s));

        auto joined = ids;
        const auto t_ids = tok.encode(t, false, false);
        joined.insert(joined.end(), t_ids.begin(), t_ids.end());
        if (tok.encode(s + " " + t, false, false) != joined) f.report("s + \" \" + t: " + where(seed, s + " " + t));

        std::vector<TokenId> known;
        for (const TokenId id : ids) {
            if (id == v.unk()) {
                ++unknown;
                continue;
            }
            if (is_control(v, id)) f.report("control token " + std::to_string(id) + " from plain text: " + where(seed, s));
            known.push_back(id);
        }
        const std::string back = text::detokenize(v, ids, false);
        if (tok.encode(back, false, false) != known) f.report("retokenized " + escaped(back) + ": " + where(seed, s));
    }
    EXPECT_GT(unknown, 0) << "the generator should reach words no token spells";
}

}  // namespace
}  // namespace smolinfer
