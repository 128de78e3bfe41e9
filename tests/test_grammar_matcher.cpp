// The grammar matcher (src/grammar/matcher.h) on a small hand-made
// vocabulary: which tokens are allowed, hand-computed from llama.cpp's rules
// (all bytes consumed; a token ending inside a UTF-8 character allowed iff
// the character may still match; the next token must continue it with
// 10xxxxxx bytes; empty and NUL-leading pieces never; end-of-generation only
// when the grammar is complete).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "smolinfer/error.h"

namespace smolinfer::grammar {
namespace {

// id: piece
const std::vector<std::string> kPieces = {
    "<eos>",                   // 0, end of generation
    "a",                       // 1
    "b",                       // 2
    "ab",                      // 3
    "abc",                     // 4
    "\xE3",                    // 5: first byte of U+3042 (E3 81 82)
    "\x81\x82",                // 6: its last two bytes
    "\xE3\x81",                // 7: its first two bytes
    "\x82",                    // 8: its last byte
    "\xE3\x81\x82",            // 9: U+3042 whole
    "",                        // 10: empty piece
    std::string("\0a", 2),     // 11: NUL first
    std::string("c\0zz", 4),   // 12: NUL inside: read as "c"
    "\x81",                    // 13: a lone continuation byte
    "\xC3" "A",                // 14: a lead byte then ASCII: one character, 0xC1, to llama.cpp
    "c",                       // 15
};

std::shared_ptr<const TokenTable> table() {
    std::vector<uint8_t> eog(kPieces.size(), 0);
    eog[0] = 1;
    return std::make_shared<const TokenTable>(kPieces, eog);
}

std::set<int> allowed(Matcher& m, bool allow_end = true) {
    const auto bits = m.allowed(allow_end);
    std::set<int> out;
    for (size_t id = 0; id < kPieces.size(); ++id) {
        if ((bits[id / 64] >> (id % 64)) & 1) out.insert(int(id));
    }
    return out;
}

TEST(GrammarMatcher, TokensSpanningElementsAndCompletion) {
    Matcher m(parse_grammar("root ::= \"ab\" \"c\"?"), table());
    EXPECT_EQ(allowed(m), (std::set<int>{1, 3, 4}));
    m.accept(3);  // "ab": complete, or one more "c"
    EXPECT_TRUE(m.complete());
    EXPECT_EQ(allowed(m), (std::set<int>{0, 12, 15}));
    EXPECT_EQ(allowed(m, false), (std::set<int>{12, 15}));
    m.accept(12);
    EXPECT_EQ(allowed(m), (std::set<int>{0}));  // complete: only end-of-generation
    EXPECT_EQ(allowed(m, false), (std::set<int>{}));
    EXPECT_FALSE(m.any_allowed());
    EXPECT_THROW(m.accept(1), Error);
    m.accept(0);  // end-of-generation leaves the state alone
    EXPECT_TRUE(m.complete());
}

TEST(GrammarMatcher, Utf8SplitAcrossTokens) {
    Matcher m(parse_grammar("root ::= [\\u3040-\\u309F]+"), table());
    // 5 (E3: U+3000..U+3FFF) and 7 (E3 81: U+3040..U+307F) may still match; 9 does.
    EXPECT_EQ(allowed(m), (std::set<int>{5, 7, 9}));
    m.accept(5);
    // Continuations only: 6 completes U+3042; 8 (E3 82 -> U+3080..U+30BF) and
    // 13 (E3 81) may; 9 and 1 do not start with 10xxxxxx.
    EXPECT_EQ(allowed(m), (std::set<int>{6, 8, 13}));
    EXPECT_THROW(m.accept(9), Error);
    m.accept(6);
    EXPECT_TRUE(m.complete());
    EXPECT_EQ(allowed(m), (std::set<int>{0, 5, 7, 9}));
    // A token of only a character's first bytes: complete before it, not
    // after (llama.cpp drops the empty stack with any accepted token), so
    // end-of-generation waits for the character.
    m.accept(7);
    EXPECT_FALSE(m.complete());
    EXPECT_EQ(allowed(m), (std::set<int>{8, 13}));
}

TEST(GrammarMatcher, PartialCharacterOutsideTheClassIsRejected) {
    // U+00C0..U+00FF: E3 can only start U+3000.., so no split token fits; 14
    // reads as U+00C1 (llama.cpp takes any byte after a lead byte within a token).
    Matcher m(parse_grammar("root ::= [\\u00C0-\\u00FF]"), table());
    EXPECT_EQ(allowed(m), (std::set<int>{14}));
}

TEST(GrammarMatcher, NegatedClassAndAnyChar) {
    Matcher neg(parse_grammar("root ::= [^a]*"), table());
    // 12 reads as "c"; 14 as U+00C1; 5 and 7 end inside a character that may match.
    EXPECT_EQ(allowed(neg), (std::set<int>{0, 2, 5, 7, 9, 12, 14, 15}));
    Matcher any(parse_grammar("root ::= .+"), table());
    EXPECT_EQ(allowed(any, false), (std::set<int>{1, 2, 3, 4, 5, 7, 9, 12, 14, 15}));
}

TEST(GrammarMatcher, NoTokenCanFollowMeansNothingAllowed) {
    // A NUL character: no piece can provide it (a piece ends at its NUL).
    Matcher m(parse_grammar("root ::= \"\\x00\""), table());
    EXPECT_EQ(allowed(m), (std::set<int>{}));
    EXPECT_FALSE(m.any_allowed());
}

TEST(GrammarMatcher, AlternativesSharingPrefixesStayAlive) {
    Matcher m(parse_grammar("root ::= \"a\" \"b\" \"x\" | \"ab\" \"c\" | \"abc\" \"b\""), table());
    EXPECT_EQ(allowed(m), (std::set<int>{1, 3, 4}));
    m.accept(1);
    EXPECT_EQ(allowed(m), (std::set<int>{2}));
    m.accept(2);
    EXPECT_EQ(allowed(m), (std::set<int>{12, 15}));  // "c" (x is no token here)
    m.accept(15);
    EXPECT_EQ(allowed(m), (std::set<int>{0, 2}));  // complete, or "abcb"
}

}  // namespace
}  // namespace smolinfer::grammar
