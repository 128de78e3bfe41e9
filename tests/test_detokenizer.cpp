// Token ids -> text (src/text/detokenizer.h): the UTF-8 completeness rule
// the streaming decoder relies on, and streaming/plain detokenization on the
// tiny model's vocabulary (ids 0..2 control tokens, 3 + b the single byte b,
// then a few merged tokens).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "smolinfer/error.h"
#include "support/tiny_model.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace smolinfer::text {
namespace {

// Strict UTF-8 validity (RFC 3629: no overlongs, no surrogates, <= U+10FFFF),
// written independently of the code under test.
bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto b = uint8_t(s[i]);
        size_t n;
        uint32_t c;
        if (b < 0x80) { ++i; continue; }
        if (b >= 0xC2 && b <= 0xDF) { n = 2; c = b & 0x1F; }
        else if (b >= 0xE0 && b <= 0xEF) { n = 3; c = b & 0x0F; }
        else if (b >= 0xF0 && b <= 0xF4) { n = 4; c = b & 0x07; }
        else return false;
        if (i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            const auto cb = uint8_t(s[i + k]);
            if ((cb & 0xC0) != 0x80) return false;
            c = (c << 6) | (cb & 0x3F);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) || (c >= 0xD800 && c <= 0xDFFF)) {
            return false;
        }
        i += n;
    }
    return true;
}

using test::tiny_vocab;

TokenId byte_token(uint8_t b) { return TokenId(3 + b); }

// ---------------------------------------------------------------- complete_utf8_prefix

TEST(CompleteUtf8Prefix, Ascii) {
    EXPECT_EQ(complete_utf8_prefix(""), 0u);
    EXPECT_EQ(complete_utf8_prefix("a"), 1u);
    EXPECT_EQ(complete_utf8_prefix("hello"), 5u);
}

TEST(CompleteUtf8Prefix, TwoByteSequences) {
    EXPECT_EQ(complete_utf8_prefix("\xC3\xA9"), 2u);     // é, complete
    EXPECT_EQ(complete_utf8_prefix("ab\xC3"), 2u);       // lead only: hold it back
    EXPECT_EQ(complete_utf8_prefix("\xC3"), 0u);
    EXPECT_EQ(complete_utf8_prefix("x\xC3\xA9"), 3u);
}

TEST(CompleteUtf8Prefix, ThreeByteSequences) {
    EXPECT_EQ(complete_utf8_prefix("\xE4\xB8\x96"), 3u);  // 世
    EXPECT_EQ(complete_utf8_prefix("a\xE4\xB8"), 1u);     // two of three
    EXPECT_EQ(complete_utf8_prefix("a\xE4"), 1u);         // one of three
}

TEST(CompleteUtf8Prefix, FourByteSequences) {
    EXPECT_EQ(complete_utf8_prefix("\xF0\x9F\x98\x80"), 4u);  // 😀
    EXPECT_EQ(complete_utf8_prefix("\xF0\x9F\x98"), 0u);
    EXPECT_EQ(complete_utf8_prefix("ab\xF0\x9F"), 2u);
    EXPECT_EQ(complete_utf8_prefix("ab\xF0"), 2u);
    EXPECT_EQ(complete_utf8_prefix("\xF0\x9F\x98\x80\xF0\x9F"), 4u);  // one done, one started
}

TEST(CompleteUtf8Prefix, StrayContinuationBytesAreNotHeld) {
    // Nothing can complete them, so holding them would only delay output.
    EXPECT_EQ(complete_utf8_prefix("\x80"), 1u);
    EXPECT_EQ(complete_utf8_prefix("a\x80"), 2u);
    EXPECT_EQ(complete_utf8_prefix("\x80\x80\x80\x80"), 4u);
    // A 2-byte lead followed by two continuations: already too long, complete.
    EXPECT_EQ(complete_utf8_prefix("\xC3\xA9\xA9"), 3u);
}

TEST(CompleteUtf8Prefix, InvalidLeadBytesAreNotHeld) {
    // 0xF8..0xFF start no sequence.
    EXPECT_EQ(complete_utf8_prefix("\xFF"), 1u);
    EXPECT_EQ(complete_utf8_prefix("a\xF8"), 2u);
    EXPECT_EQ(complete_utf8_prefix("\xFE\x80"), 2u);
}

TEST(CompleteUtf8Prefix, BrokenSequenceThenNewLead) {
    // E4 B8 was cut short by a new lead E4: the broken pair goes out, the new
    // lead is held.
    EXPECT_EQ(complete_utf8_prefix("\xE4\xB8\xE4"), 2u);
    EXPECT_EQ(complete_utf8_prefix("\xC3\xC3"), 1u);
}

// ---------------------------------------------------------------- pieces

TEST(TokenPiece, ByteTokensAndControlTokens) {
    const Vocab& v = tiny_vocab();
    ASSERT_EQ(v.size(), 3u + 256u + 9u);
    for (int b = 0; b < 256; ++b) {
        EXPECT_EQ(token_piece(v, byte_token(uint8_t(b)), false), std::string(1, char(b))) << b;
    }
    EXPECT_EQ(token_piece(v, 0, false), "");
    EXPECT_EQ(token_piece(v, 1, false), "");
    EXPECT_EQ(token_piece(v, 2, false), "");
    EXPECT_EQ(token_piece(v, 0, true), "<|endoftext|>");
    EXPECT_EQ(token_piece(v, 1, true), "<|im_start|>");
    EXPECT_EQ(token_piece(v, 2, true), "<|im_end|>");
    // The merged tokens: "Ġt" is the byte-level form of " t".
    ASSERT_TRUE(v.find("Ġt").has_value());
    EXPECT_EQ(token_piece(v, *v.find("Ġt"), false), " t");
    EXPECT_EQ(token_piece(v, *v.find("Ġthe"), false), " the");
}

TEST(Detokenize, ConcatenatesPiecesAndDropsControlTokensUnlessSpecial) {
    const Vocab& v = tiny_vocab();
    const std::vector<TokenId> ids = {1, byte_token('h'), byte_token('i'), 2, byte_token('!')};
    EXPECT_EQ(detokenize(v, ids, false), "hi!");
    EXPECT_EQ(detokenize(v, ids, true), "<|im_start|>hi<|im_end|>!");
    EXPECT_EQ(detokenize(v, std::vector<TokenId>{}, false), "");
}

TEST(Detokenize, OutOfRangeIdThrows) {
    const Vocab& v = tiny_vocab();
    const TokenId n = TokenId(v.size());
    EXPECT_THROW(detokenize(v, std::vector<TokenId>{byte_token('a'), n}, false), Error);
    EXPECT_THROW(detokenize(v, std::vector<TokenId>{-1}, false), Error);
    EXPECT_NO_THROW(detokenize(v, std::vector<TokenId>{n - 1}, false));
    StreamDecoder d(v);
    EXPECT_THROW(d.push(n), Error);
    EXPECT_THROW(d.push(-5), Error);
}

// ---------------------------------------------------------------- streaming

TEST(StreamDecoder, OneByteTokenAtATimeNeverSplitsACharacter) {
    const Vocab& v = tiny_vocab();
    const std::string text = "héllo 😀 世界";
    StreamDecoder d(v);
    std::string out;
    std::vector<std::string> pushes;
    for (const char c : text) {
        pushes.push_back(d.push(byte_token(uint8_t(c))));
        EXPECT_TRUE(valid_utf8(pushes.back())) << "push " << pushes.size();
        out += pushes.back();
    }
    out += d.finish();
    EXPECT_EQ(out, text);
    // Hand-checked byte positions: h=0, é=1..2, "llo "=3..6, 😀=7..10, " "=11,
    // 世=12..14, 界=15..17. A character comes out with its last byte only.
    ASSERT_EQ(pushes.size(), 18u);
    EXPECT_EQ(pushes[0], "h");
    EXPECT_EQ(pushes[1], "");
    EXPECT_EQ(pushes[2], "é");
    EXPECT_EQ(pushes[6], " ");
    EXPECT_EQ(pushes[7], "");
    EXPECT_EQ(pushes[8], "");
    EXPECT_EQ(pushes[9], "");
    EXPECT_EQ(pushes[10], "😀");
    EXPECT_EQ(pushes[11], " ");
    EXPECT_EQ(pushes[12], "");
    EXPECT_EQ(pushes[13], "");
    EXPECT_EQ(pushes[14], "世");
    EXPECT_EQ(pushes[17], "界");
}

TEST(StreamDecoder, FinishReturnsAnUnfinishedCharacter) {
    const Vocab& v = tiny_vocab();
    StreamDecoder d(v);
    EXPECT_EQ(d.push(byte_token('a')), "a");
    EXPECT_EQ(d.push(byte_token(0xE4)), "");
    EXPECT_EQ(d.push(byte_token(0xB8)), "");
    EXPECT_EQ(d.finish(), "\xE4\xB8");
    EXPECT_EQ(d.finish(), "");  // nothing left
}

TEST(StreamDecoder, ControlTokensAreEmptyUnlessSpecial) {
    const Vocab& v = tiny_vocab();
    StreamDecoder plain(v);
    EXPECT_EQ(plain.push(1), "");
    EXPECT_EQ(plain.push(byte_token('x')), "x");
    EXPECT_EQ(plain.push(2), "");
    EXPECT_EQ(plain.finish(), "");
    StreamDecoder special(v, true);
    EXPECT_EQ(special.push(1), "<|im_start|>");
    EXPECT_EQ(special.push(byte_token('x')), "x");
    EXPECT_EQ(special.push(2), "<|im_end|>");
}

TEST(StreamDecoder, ControlTokenInsideAHeldCharacterKeepsTheBytes) {
    // A control token between the bytes of a character adds nothing (not
    // special), so the character still completes.
    const Vocab& v = tiny_vocab();
    StreamDecoder d(v);
    EXPECT_EQ(d.push(byte_token(0xC3)), "");
    EXPECT_EQ(d.push(0), "");
    EXPECT_EQ(d.push(byte_token(0xA9)), "é");
}

// ---------------------------------------------------------------- round trip property

// A random valid UTF-8 string mixing ASCII (with the letters of the tiny
// model's merges and spaces, so BPE merges happen), 2-, 3- and 4-byte
// characters, control characters and special-token look-alikes.
std::string random_text(std::mt19937& rng) {
    static const std::vector<std::string> chunks = {
        " the", "in", "er", "an", " a", "on", "re", "he", " ", "  ", "\n", "\t", "<|im_end|>", "<|im_start|>",
        "<|endoftext|>", "'s", "123", "!!", "\r\n",
    };
    std::uniform_int_distribution<int> kind(0, 9);
    std::uniform_int_distribution<int> len(0, 40);
    std::string s;
    const int n = len(rng);
    for (int i = 0; i < n; ++i) {
        uint32_t c;
        switch (kind(rng)) {
            case 0: case 1: c = std::uniform_int_distribution<uint32_t>(0x20, 0x7E)(rng); break;
            case 2: c = std::uniform_int_distribution<uint32_t>(0x00, 0x1F)(rng); break;
            case 3: c = std::uniform_int_distribution<uint32_t>(0x80, 0x7FF)(rng); break;
            case 4:
                do c = std::uniform_int_distribution<uint32_t>(0x800, 0xFFFF)(rng);
                while (c >= 0xD800 && c <= 0xDFFF);
                break;
            case 5: c = std::uniform_int_distribution<uint32_t>(0x10000, 0x10FFFF)(rng); break;
            default: s += chunks[std::uniform_int_distribution<size_t>(0, chunks.size() - 1)(rng)]; continue;
        }
        // Encode by hand (independent of append_utf8).
        if (c < 0x80) {
            s += char(c);
        } else if (c < 0x800) {
            s += char(0xC0 | (c >> 6));
            s += char(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            s += char(0xE0 | (c >> 12));
            s += char(0x80 | ((c >> 6) & 0x3F));
            s += char(0x80 | (c & 0x3F));
        } else {
            s += char(0xF0 | (c >> 18));
            s += char(0x80 | ((c >> 12) & 0x3F));
            s += char(0x80 | ((c >> 6) & 0x3F));
            s += char(0x80 | (c & 0x3F));
        }
    }
    return s;
}

TEST(DetokenizeProperty, TokenizeThenDetokenizeGivesTheTextBack) {
    const Vocab& v = tiny_vocab();
    const Tokenizer tok(v);
    std::mt19937 rng(20240611);
    for (int iter = 0; iter < 400; ++iter) {
        const std::string text = random_text(rng);
        ASSERT_TRUE(valid_utf8(text));
        // Special texts stay plain text without parse_special...
        const std::vector<TokenId> ids = tok.encode(text, false, false);
        for (const TokenId id : ids) ASSERT_GE(id, 3) << "a control token from plain text";
        EXPECT_EQ(detokenize(v, ids, false), text) << "iteration " << iter;

        // ...and streaming gives the same text, one valid piece at a time.
        StreamDecoder d(v);
        std::string streamed;
        for (const TokenId id : ids) {
            const std::string piece = d.push(id);
            EXPECT_TRUE(valid_utf8(piece)) << "iteration " << iter;
            streamed += piece;
        }
        const std::string rest = d.finish();
        EXPECT_EQ(rest, "") << "valid text leaves nothing held back";
        EXPECT_EQ(streamed + rest, text) << "iteration " << iter;

        // With parse_special the marker strings become control tokens; with
        // special=true detokenization restores their text.
        const std::vector<TokenId> sp = tok.encode(text, false, true);
        EXPECT_EQ(detokenize(v, sp, true), text) << "iteration " << iter;
    }
}

}  // namespace
}  // namespace smolinfer::text
