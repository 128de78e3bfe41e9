// Pre-tokenizers (src/text/pretokenizer.h) and the UTF-8 / code point class
// helpers under them (src/text/unicode.h). Every expectation is worked out by
// hand from the regexes llama.cpp uses for each tokenizer.ggml.pre:
//   GPT-2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   smollm:  \p{N}   then GPT-2 inside each fragment
//   default: [\p{P}\$\+<=>\^~\|]+   then GPT-2, then \p{N}+, then [0-9][0-9][0-9]
//   llama3:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:   the same with \p{N} for \p{N}{1,3}
// A later pass never looks across the fragments an earlier pass produced.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/pretokenizer.h"
#include "text/unicode.h"

namespace smolinfer::text {
namespace {

using Words = std::vector<std::string>;

Words gpt2(const std::string& s) { return pretokenize(PreTokenizer::Gpt2, s); }
Words smollm(const std::string& s) { return pretokenize(PreTokenizer::Smollm, s); }
Words dflt(const std::string& s) { return pretokenize(PreTokenizer::Default, s); }
Words llama3(const std::string& s) { return pretokenize(PreTokenizer::Llama3, s); }
Words qwen2(const std::string& s) { return pretokenize(PreTokenizer::Qwen2, s); }

std::string join(const Words& w) {
    std::string out;
    for (const auto& s : w) out += s;
    return out;
}

// ---------------------------------------------------------------- names

TEST(PretokenizerName, KnownAndUnknownNames) {
    EXPECT_EQ(pretokenizer_from_name("default"), PreTokenizer::Default);
    EXPECT_EQ(pretokenizer_from_name("gpt-2"), PreTokenizer::Gpt2);
    EXPECT_EQ(pretokenizer_from_name("smollm"), PreTokenizer::Smollm);
    EXPECT_EQ(pretokenizer_from_name("starcoder"), PreTokenizer::Smollm);
    EXPECT_EQ(pretokenizer_from_name("llama-bpe"), PreTokenizer::Llama3);
    EXPECT_EQ(pretokenizer_from_name("qwen2"), PreTokenizer::Qwen2);
    EXPECT_TRUE(pretokenizer_info("llama-bpe")->ignore_merges);
    EXPECT_FALSE(pretokenizer_info("qwen2")->ignore_merges);
    // Splits we do not implement must not be silently mapped onto one of ours.
    EXPECT_EQ(pretokenizer_from_name("deepseek-llm"), std::nullopt);
    EXPECT_EQ(pretokenizer_from_name("qwen35"), std::nullopt);
    EXPECT_EQ(pretokenizer_from_name("SMOLLM"), std::nullopt);  // names are case-sensitive
}

// ---------------------------------------------------------------- Llama 3 and Qwen2

TEST(PretokenizerLlama3, NumbersInRunsOfThreeOrOne) {
    EXPECT_EQ(llama3("12345"), (Words{"123", "45"}));
    EXPECT_EQ(qwen2("12345"), (Words{"1", "2", "3", "4", "5"}));
    EXPECT_EQ(llama3("$100"), (Words{"$", "100"}));
}

TEST(PretokenizerLlama3, AnyOneNonLetterLeadsAWord) {
    EXPECT_EQ(llama3("Hello world"), (Words{"Hello", " world"}));
    EXPECT_EQ(llama3("(hello"), (Words{"(hello"}));
    EXPECT_EQ(llama3(" (x)"), (Words{" (", "x", ")"}));
    EXPECT_EQ(qwen2("(hello"), (Words{"(hello"}));
}

TEST(PretokenizerLlama3, ContractionsIgnoreCase) {
    EXPECT_EQ(llama3("I'M here"), (Words{"I", "'M", " here"}));
    EXPECT_EQ(llama3("we'LL"), (Words{"we", "'LL"}));
    EXPECT_EQ(gpt2("I'M"), (Words{"I", "'", "M"}));  // GPT-2's are case-sensitive
}

TEST(PretokenizerLlama3, NewlinesAndSpaces) {
    EXPECT_EQ(llama3("a\n\nb"), (Words{"a", "\n\n", "b"}));
    EXPECT_EQ(llama3("hi!!\n\nthere"), (Words{"hi", "!!\n\n", "there"}));
    EXPECT_EQ(llama3("a   b"), (Words{"a", "  ", " b"}));
    EXPECT_EQ(llama3("a \n b"), (Words{"a", " \n", " b"}));
}

// ---------------------------------------------------------------- GPT-2

TEST(PretokenizerGpt2, EmptyText) {
    EXPECT_TRUE(gpt2("").empty());
    EXPECT_TRUE(smollm("").empty());
    EXPECT_TRUE(dflt("").empty());
}

TEST(PretokenizerGpt2, WordsTakeTheirLeadingSpace) {
    EXPECT_EQ(gpt2("Hello world"), (Words{"Hello", " world"}));
    EXPECT_EQ(gpt2(" Hello"), (Words{" Hello"}));
    EXPECT_EQ(gpt2("a b c"), (Words{"a", " b", " c"}));
}

TEST(PretokenizerGpt2, Contractions) {
    // Each contraction is its own word, with the apostrophe.
    EXPECT_EQ(gpt2("it's"), (Words{"it", "'s"}));
    EXPECT_EQ(gpt2("don't"), (Words{"don", "'t"}));
    EXPECT_EQ(gpt2("we're"), (Words{"we", "'re"}));
    EXPECT_EQ(gpt2("they've"), (Words{"they", "'ve"}));
    EXPECT_EQ(gpt2("I'm"), (Words{"I", "'m"}));
    EXPECT_EQ(gpt2("we'll"), (Words{"we", "'ll"}));
    EXPECT_EQ(gpt2("he'd"), (Words{"he", "'d"}));
    // The contraction ends the match even if letters follow: 's then "tar".
    EXPECT_EQ(gpt2("it'star"), (Words{"it", "'s", "tar"}));
    // At the very start of the text.
    EXPECT_EQ(gpt2("'s"), (Words{"'s"}));
    EXPECT_EQ(gpt2("'ll do"), (Words{"'ll", " do"}));
}

TEST(PretokenizerGpt2, ContractionsAreCaseSensitive) {
    // 'S is not in the list: the apostrophe is an "other" run of its own,
    // then S is a letter run.
    EXPECT_EQ(gpt2("IT'S"), (Words{"IT", "'", "S"}));
    EXPECT_EQ(gpt2("WE'LL"), (Words{"WE", "'", "LL"}));
}

TEST(PretokenizerGpt2, ContractionsAtTheEndOfTheText) {
    // A lone apostrophe at the end: no contraction, an "other" run.
    EXPECT_EQ(gpt2("it'"), (Words{"it", "'"}));
    // 'r / 'v / 'l with the text ending after one letter: the two-letter
    // contractions cannot match, so "'" and the letter separate.
    EXPECT_EQ(gpt2("we'r"), (Words{"we", "'", "r"}));
    EXPECT_EQ(gpt2("we'l"), (Words{"we", "'", "l"}));
    // ...but 'll exactly at the end does match.
    EXPECT_EQ(gpt2("we'll"), (Words{"we", "'ll"}));
    // 'd exactly at the end.
    EXPECT_EQ(gpt2("I'd"), (Words{"I", "'d"}));
}

TEST(PretokenizerGpt2, ApostropheRunsAndSpaces) {
    // "''" is one other-run (the first ' is not followed by a contraction letter).
    EXPECT_EQ(gpt2("''s"), (Words{"''", "s"}));
    // A space before the apostrophe: " ?[^\s\p{L}\p{N}]+" takes " '", then "s".
    EXPECT_EQ(gpt2("x 's"), (Words{"x", " '", "s"}));
}

TEST(PretokenizerGpt2, Numbers) {
    EXPECT_EQ(gpt2("abc 123"), (Words{"abc", " 123"}));
    EXPECT_EQ(gpt2("a1b2"), (Words{"a", "1", "b", "2"}));
    EXPECT_EQ(gpt2("2024"), (Words{"2024"}));  // GPT-2 keeps a digit run whole
    EXPECT_EQ(gpt2("3.14"), (Words{"3", ".", "14"}));
}

TEST(PretokenizerGpt2, PunctuationRunsWithOptionalSpace) {
    EXPECT_EQ(gpt2("Hello, world!!!"), (Words{"Hello", ",", " world", "!!!"}));
    EXPECT_EQ(gpt2("wait ...?"), (Words{"wait", " ...?"}));
    // Symbols and punctuation are both "other" and join one run.
    EXPECT_EQ(gpt2("a+=$b"), (Words{"a", "+=$", "b"}));
    EXPECT_EQ(gpt2("x `~ y"), (Words{"x", " `~", " y"}));
}

TEST(PretokenizerGpt2, WhitespaceRunsLeaveTheLastSpaceToTheNextWord) {
    // \s+(?!\S): of three spaces, two stand alone and one prefixes "b".
    EXPECT_EQ(gpt2("a   b"), (Words{"a", "  ", " b"}));
    EXPECT_EQ(gpt2("a  b"), (Words{"a", " ", " b"}));
    EXPECT_EQ(gpt2("  hello"), (Words{" ", " hello"}));
    EXPECT_EQ(gpt2("a  123"), (Words{"a", " ", " 123"}));
    EXPECT_EQ(gpt2("a  !"), (Words{"a", " ", " !"}));
}

TEST(PretokenizerGpt2, TrailingWhitespaceIsOneWord) {
    // At the end nothing follows, so (?!\S) holds for the whole run.
    EXPECT_EQ(gpt2("a   "), (Words{"a", "   "}));
    EXPECT_EQ(gpt2("a "), (Words{"a", " "}));
    EXPECT_EQ(gpt2("hello\n"), (Words{"hello", "\n"}));
    EXPECT_EQ(gpt2("a  \n"), (Words{"a", "  \n"}));
    EXPECT_EQ(gpt2("   "), (Words{"   "}));
}

TEST(PretokenizerGpt2, NewlinesAndTabs) {
    // Only a plain space is the optional prefix; "\n" and "\t" never join a word.
    EXPECT_EQ(gpt2("a\nb"), (Words{"a", "\n", "b"}));
    EXPECT_EQ(gpt2("a\tb"), (Words{"a", "\t", "b"}));
    // "\n\n" before "b": \s+(?!\S) backs off to the first "\n", the second is \s+.
    EXPECT_EQ(gpt2("a\n\nb"), (Words{"a", "\n", "\n", "b"}));
    EXPECT_EQ(gpt2("a\r\nb"), (Words{"a", "\r", "\n", "b"}));
    // " \t" before "b": " " alone, then "\t" alone, then "b".
    EXPECT_EQ(gpt2("a \tb"), (Words{"a", " ", "\t", "b"}));
    // "\n " before "b": "\n" alone, the space joins "b".
    EXPECT_EQ(gpt2("a\n b"), (Words{"a", "\n", " b"}));
}

TEST(PretokenizerGpt2, UnicodeWhitespace) {
    const std::string nbsp = "\xC2\xA0";            // U+00A0, \s but not ' '
    const std::string ideo = "\xE3\x80\x80";        // U+3000
    EXPECT_EQ(gpt2("a" + nbsp + "b"), (Words{"a", nbsp, "b"}));
    EXPECT_EQ(gpt2("a " + nbsp + "b"), (Words{"a", " ", nbsp, "b"}));
    EXPECT_EQ(gpt2("x" + ideo + ideo + "y"), (Words{"x", ideo, ideo, "y"}));
}

TEST(PretokenizerGpt2, NonAsciiLetters) {
    EXPECT_EQ(gpt2("héllo wörld"), (Words{"héllo", " wörld"}));
    EXPECT_EQ(gpt2("Привет мир"), (Words{"Привет", " мир"}));
    EXPECT_EQ(gpt2("日本語 テキスト"), (Words{"日本語", " テキスト"}));
    EXPECT_EQ(gpt2("שלום עולם"), (Words{"שלום", " עולם"}));
    // A letter run stops at punctuation of any script: U+3002 is \p{P}.
    EXPECT_EQ(gpt2("你好。世界"), (Words{"你好", "。", "世界"}));
}

TEST(PretokenizerGpt2, CombiningMarksAreNotLetters) {
    // "cafe" + U+0301 (combining acute, \p{M}): the mark is "other".
    EXPECT_EQ(gpt2("cafe\xCC\x81 ok"), (Words{"cafe", "\xCC\x81", " ok"}));
}

TEST(PretokenizerGpt2, DigitsOfOtherScripts) {
    // U+0663 U+0664 U+0665 (Arabic-Indic digits) are \p{N}.
    EXPECT_EQ(gpt2("abc٣٤٥"), (Words{"abc", "٣٤٥"}));
    EXPECT_EQ(gpt2("x ١٢"), (Words{"x", " ١٢"}));
    // Devanagari digits, Roman numeral twelve (Nl), superscript two (No).
    EXPECT_EQ(gpt2("क१२"), (Words{"क", "१२"}));
    EXPECT_EQ(gpt2("Ⅻ"), (Words{"Ⅻ"}));
    EXPECT_EQ(gpt2("x²"), (Words{"x", "²"}));
}

TEST(PretokenizerGpt2, EmojiAndControlsAreOther) {
    EXPECT_EQ(gpt2("hi 😀😀"), (Words{"hi", " 😀😀"}));
    EXPECT_EQ(gpt2("ok😀!"), (Words{"ok", "😀!"}));
    EXPECT_EQ(gpt2(std::string("a\x01\x02" "b")), (Words{"a", "\x01\x02", "b"}));
    // An unassigned code point (U+0378) is "other" too (llama.cpp: flags != 0).
    EXPECT_EQ(gpt2("!\xCD\xB8!"), (Words{"!\xCD\xB8!"}));
}

TEST(PretokenizerGpt2, InvalidBytesBecomeReplacementCharacters) {
    // 0xFF -> U+FFFD (a symbol, so "other"), emitted as UTF-8 EF BF BD.
    EXPECT_EQ(gpt2("a\xFF" "b"), (Words{"a", "\xEF\xBF\xBD", "b"}));
    EXPECT_EQ(gpt2("a \xC3"), (Words{"a", " \xEF\xBF\xBD"}));
}

TEST(PretokenizerGpt2, WordsConcatenateToTheText) {
    const std::string text = "  It's 2024 — the café's 3 ½ cups!!  \n\t Done.\n\n";
    EXPECT_EQ(join(gpt2(text)), text);
    EXPECT_EQ(join(smollm(text)), text);
    EXPECT_EQ(join(dflt(text)), text);
    for (const auto& w : gpt2(text)) EXPECT_FALSE(w.empty());
}

// ---------------------------------------------------------------- smollm

TEST(PretokenizerSmollm, EveryDigitIsItsOwnWord) {
    // \p{N} isolates "1","2","3"," ","4","5" first; GPT-2 then cannot join the
    // space to "4" because they are in different fragments.
    EXPECT_EQ(smollm("abc123 45"), (Words{"abc", "1", "2", "3", " ", "4", "5"}));
    EXPECT_EQ(smollm("x 1"), (Words{"x", " ", "1"}));
    EXPECT_EQ(smollm("a1b"), (Words{"a", "1", "b"}));
    EXPECT_EQ(smollm("2024"), (Words{"2", "0", "2", "4"}));
    EXPECT_EQ(smollm("hello world 2024!"), (Words{"hello", " world", " ", "2", "0", "2", "4", "!"}));
    EXPECT_EQ(smollm("3.14"), (Words{"3", ".", "1", "4"}));
}

TEST(PretokenizerSmollm, NonAsciiDigitsAreSplitToo) {
    EXPECT_EQ(smollm("٣٤"), (Words{"٣", "٤"}));
    EXPECT_EQ(smollm("x²y"), (Words{"x", "²", "y"}));
}

TEST(PretokenizerSmollm, GptRulesInsideFragments) {
    EXPECT_EQ(smollm("it's 9"), (Words{"it", "'s", " ", "9"}));
    EXPECT_EQ(smollm("a   b"), (Words{"a", "  ", " b"}));
    // The fragment "a  " ends before the digit: its spaces are trailing.
    EXPECT_EQ(smollm("a  1"), (Words{"a", "  ", "1"}));
}

// ---------------------------------------------------------------- default

TEST(PretokenizerDefault, ThreeDigitGroups) {
    EXPECT_EQ(dflt("1234567"), (Words{"123", "456", "7"}));
    EXPECT_EQ(dflt("12345"), (Words{"123", "45"}));
    EXPECT_EQ(dflt("12"), (Words{"12"}));
    EXPECT_EQ(dflt("123"), (Words{"123"}));
    // GPT-2 gives " 1234"; \p{N}+ then splits the space off; groups of three.
    EXPECT_EQ(dflt(" 1234"), (Words{" ", "123", "4"}));
    EXPECT_EQ(dflt("ab1234cd"), (Words{"ab", "123", "4", "cd"}));
}

TEST(PretokenizerDefault, PunctuationAndOperatorsAreIsolated) {
    EXPECT_EQ(dflt("Hello, world!"), (Words{"Hello", ",", " world", "!"}));
    EXPECT_EQ(dflt("a+=b"), (Words{"a", "+=", "b"}));
    // "=" is isolated before GPT-2 runs, so the spaces around it stand alone.
    EXPECT_EQ(dflt("x = 1"), (Words{"x", " ", "=", " ", "1"}));
    EXPECT_EQ(dflt("$100"), (Words{"$", "100"}));
    EXPECT_EQ(dflt("3.14159"), (Words{"3", ".", "141", "59"}));
    EXPECT_EQ(dflt("hello... world"), (Words{"hello", "...", " world"}));
    // Backtick is a symbol (Sk) and not in the list; "~" is.
    EXPECT_EQ(dflt("a`~b"), (Words{"a", "`", "~", "b"}));
    // Non-ASCII punctuation is \p{P}: the leading space is cut off.
    EXPECT_EQ(dflt(" ¡hola!"), (Words{" ", "¡", "hola", "!"}));
}

TEST(PretokenizerDefault, ContrastWithGpt2) {
    // The same strings under GPT-2 alone keep the space with the punctuation.
    EXPECT_EQ(gpt2(" ¡hola!"), (Words{" ¡", "hola", "!"}));
    EXPECT_EQ(gpt2("a`~b"), (Words{"a", "`~", "b"}));
    // Apostrophes are \p{P}: default cuts "'" before the contraction rule runs.
    EXPECT_EQ(dflt("it's"), (Words{"it", "'", "s"}));
}

TEST(PretokenizerDefault, NonAsciiDigitsAreOneRunButNotGrouped) {
    // [0-9] is ASCII only.
    EXPECT_EQ(dflt("٣٤٥٦"), (Words{"٣٤٥٦"}));
    EXPECT_EQ(dflt("12٣45"), (Words{"12٣45"}));
}

// ---------------------------------------------------------------- unicode.h

using Cpts = std::vector<uint32_t>;
constexpr uint32_t R = kReplacementChar;

TEST(Utf8Decode, WellFormed) {
    EXPECT_EQ(utf8_to_codepoints(""), Cpts{});
    EXPECT_EQ(utf8_to_codepoints("h\xC3\xA9"), (Cpts{'h', 0xE9}));
    EXPECT_EQ(utf8_to_codepoints("\xE4\xB8\x96"), (Cpts{0x4E16}));
    EXPECT_EQ(utf8_to_codepoints("\xF0\x9F\x98\x80"), (Cpts{0x1F600}));
    EXPECT_EQ(utf8_to_codepoints(std::string("a\0b", 3)), (Cpts{'a', 0, 'b'}));
    EXPECT_EQ(utf8_to_codepoints("\xF4\x8F\xBF\xBF"), (Cpts{0x10FFFF}));
}

TEST(Utf8Decode, EachBadByteIsOneReplacementAndDecodingResumesAtTheNextByte) {
    EXPECT_EQ(utf8_to_codepoints("\xFF"), (Cpts{R}));
    EXPECT_EQ(utf8_to_codepoints("\x80"), (Cpts{R}));              // stray continuation
    EXPECT_EQ(utf8_to_codepoints("\x80\x80" "a"), (Cpts{R, R, 'a'}));
    EXPECT_EQ(utf8_to_codepoints("\xC3" "A"), (Cpts{R, 'A'}));     // lead, then no continuation
    // E4 B8 then 'A': E4 fails (third byte is not a continuation) -> U+FFFD;
    // decoding resumes at B8, a stray continuation -> U+FFFD; then 'A'.
    EXPECT_EQ(utf8_to_codepoints("\xE4\xB8" "A"), (Cpts{R, R, 'A'}));
    // A bad lead followed by a good sequence: the good one survives.
    EXPECT_EQ(utf8_to_codepoints("\xC3\xC3\xA9"), (Cpts{R, 0xE9}));
    EXPECT_EQ(utf8_to_codepoints("\xF8\x88\x80\x80\x80"), (Cpts{R, R, R, R, R}));  // 5-byte form
    EXPECT_EQ(utf8_to_codepoints("\xFE\xFF"), (Cpts{R, R}));
}

TEST(Utf8Decode, TruncatedSequencesAtTheEnd) {
    EXPECT_EQ(utf8_to_codepoints("a\xC3"), (Cpts{'a', R}));
    EXPECT_EQ(utf8_to_codepoints("\xE4\xB8"), (Cpts{R, R}));
    EXPECT_EQ(utf8_to_codepoints("\xF0\x9F\x98"), (Cpts{R, R, R}));
    EXPECT_EQ(utf8_to_codepoints("ok\xF0"), (Cpts{'o', 'k', R}));
}

TEST(Utf8Decode, LenientLikeLlamaCpp) {
    // llama.cpp's unicode_cpt_from_utf8 checks only the bit patterns: overlong
    // forms and surrogates decode to their (odd) values rather than U+FFFD.
    // Matching llama.cpp here is what keeps tokenization identical.
    EXPECT_EQ(utf8_to_codepoints("\xC0\x80"), (Cpts{0}));
    EXPECT_EQ(utf8_to_codepoints("\xED\xA0\x80"), (Cpts{0xD800}));
}

TEST(Utf8Encode, RoundTripsEveryScalarValueRange) {
    // Boundaries of each encoded length, and a sample in between.
    for (const uint32_t c : {0x0u, 0x41u, 0x7Fu, 0x80u, 0xE9u, 0x7FFu, 0x800u, 0x4E16u, 0xFFFDu, 0xFFFFu, 0x10000u,
                             0x1F600u, 0x10FFFFu}) {
        std::string s;
        append_utf8(c, s);
        const size_t want_len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        EXPECT_EQ(s.size(), want_len) << std::hex << c;
        EXPECT_EQ(utf8_sequence_length(uint8_t(s[0])), want_len) << std::hex << c;
        EXPECT_EQ(utf8_to_codepoints(s), (Cpts{c})) << std::hex << c;
    }
    // Hand-encoded bytes.
    std::string s;
    append_utf8(0xE9, s);
    append_utf8(0x20AC, s);
    append_utf8(0x1F600, s);
    EXPECT_EQ(s, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST(Utf8Encode, RoundTripAllBmpAndASampleOfAstral) {
    std::string s;
    Cpts want;
    for (uint32_t c = 0; c < 0x110000; c += (c < 0x10000 ? 1 : 97)) {
        if (c >= 0xD800 && c <= 0xDFFF) continue;
        append_utf8(c, s);
        want.push_back(c);
    }
    EXPECT_EQ(utf8_to_codepoints(s), want);
}

CodepointFlags F(uint32_t c) { return codepoint_flags(c); }

TEST(CodepointFlags, LettersInSeveralScripts) {
    for (const uint32_t c : {uint32_t('A'), uint32_t('z'), 0xE9u /*é*/, 0x416u /*Ж*/, 0x5E9u /*ש*/, 0x639u /*ع*/,
                             0x915u /*क*/, 0x4E16u /*世*/, 0x3042u /*あ*/, 0x30FCu /*ー, Lm*/, 0xD55Cu /*한*/}) {
        EXPECT_TRUE(F(c).is_letter()) << std::hex << c;
        EXPECT_FALSE(F(c).is_number()) << std::hex << c;
        EXPECT_FALSE(F(c).is_whitespace()) << std::hex << c;
    }
}

TEST(CodepointFlags, NumbersInSeveralScripts) {
    for (const uint32_t c : {uint32_t('0'), uint32_t('9'), 0x663u /*٣*/, 0x969u /*३*/, 0xFF15u /*fullwidth 5*/,
                             0x216Bu /*Ⅻ, Nl*/, 0xB2u /*², No*/, 0xBDu /*½, No*/}) {
        EXPECT_TRUE(F(c).is_number()) << std::hex << c;
        EXPECT_FALSE(F(c).is_letter()) << std::hex << c;
    }
}

TEST(CodepointFlags, Whitespace) {
    for (const uint32_t c : {0x20u, 0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x85u, 0xA0u, 0x1680u, 0x2003u, 0x2028u,
                             0x202Fu, 0x3000u}) {
        EXPECT_TRUE(F(c).is_whitespace()) << std::hex << c;
    }
    // Separators that are whitespace also carry the Separator class.
    EXPECT_TRUE(F(0xA0).bits & CodepointFlags::Separator);
    EXPECT_TRUE(F(0x3000).bits & CodepointFlags::Separator);
    // Zero-width space (Cf) and ordinary characters are not whitespace.
    EXPECT_FALSE(F(0x200B).is_whitespace());
    EXPECT_FALSE(F('a').is_whitespace());
    EXPECT_FALSE(F('_').is_whitespace());
}

TEST(CodepointFlags, MarksSymbolsPunctuationControls) {
    EXPECT_EQ(F(0x301).bits, CodepointFlags::Mark);   // combining acute (Mn)
    EXPECT_EQ(F(0x93F).bits, CodepointFlags::Mark);   // Devanagari vowel sign i (Mc)
    EXPECT_EQ(F(0x1F600).bits, CodepointFlags::Symbol);  // 😀
    EXPECT_EQ(F(0x20AC).bits, CodepointFlags::Symbol);   // €
    EXPECT_EQ(F('+').bits, CodepointFlags::Symbol);
    EXPECT_EQ(F('`').bits, CodepointFlags::Symbol);
    EXPECT_EQ(F('!').bits, CodepointFlags::Punctuation);
    EXPECT_EQ(F('_').bits, CodepointFlags::Punctuation);
    EXPECT_EQ(F(0x3002).bits, CodepointFlags::Punctuation);  // 。
    EXPECT_EQ(F(0xAB).bits, CodepointFlags::Punctuation);    // «
    EXPECT_EQ(F(0xFFFD).bits, CodepointFlags::Symbol);
    EXPECT_EQ(F(0x00).bits, CodepointFlags::Control);
    EXPECT_EQ(F(0x7F).bits, CodepointFlags::Control);
    EXPECT_EQ(F(0xE000).bits, CodepointFlags::Control);  // private use (Co) counts as C
    EXPECT_EQ(F(0x09).bits, CodepointFlags::Control | CodepointFlags::Whitespace);
    EXPECT_EQ(F(0x20).bits, CodepointFlags::Separator | CodepointFlags::Whitespace);
}

TEST(CodepointFlags, UndefinedCodePoints) {
    EXPECT_EQ(F(0x378).bits, CodepointFlags::Undefined);     // unassigned in Greek
    EXPECT_EQ(F(0x110000).bits, CodepointFlags::Undefined);  // beyond Unicode
    EXPECT_EQ(F(0xFFFFFFFF).bits, CodepointFlags::Undefined);
    EXPECT_TRUE(F(0x378).any());
}

}  // namespace
}  // namespace smolinfer::text
