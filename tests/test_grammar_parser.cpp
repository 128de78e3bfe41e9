// The GBNF parser (src/grammar/parser.cpp): each malformed grammar gives one
// error naming the line and column (columns count characters), or the rule;
// well-formed grammars accept exactly the strings their rules describe
// (checked by feeding code points through the stack graph).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/stack_graph.h"
#include "smolinfer/error.h"

namespace smolinfer::grammar {
namespace {

std::string parse_error(const std::string& text) {
    try {
        StackGraph g(parse_grammar(text));
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

struct ErrorCase {
    const char* grammar;
    const char* message;
};

TEST(GrammarParser, MalformedGrammarsNameLineAndColumn) {
    const ErrorCase cases[] = {
        {"root ::= \"abc", "grammar: line 1, column 10: unterminated string literal"},
        {"root ::= [a-z", "grammar: line 1, column 10: unterminated character class"},
        {"root ::= foo", "grammar: line 1, column 10: undefined rule 'foo'"},
        {"root ::= \"a\"\nroot ::= \"b\"", "grammar: line 2, column 1: rule 'root' is defined twice"},
        {"root ::= \"\\q\"", "grammar: line 1, column 11: unknown escape '\\q'"},
        {"root ::= \"\\x4\"", "grammar: line 1, column 14: expected 2 hex digits, found '\"'"},
        {"root ::= \"\\u12G4\"", "grammar: line 1, column 15: expected 4 hex digits, found 'G'"},
        {"root ::= *", "grammar: line 1, column 10: expected an item before '*'"},
        {"root ::= \"a\" | +", "grammar: line 1, column 16: expected an item before '+'"},
        {"root ::= \"a\"{3,2}", "grammar: line 1, column 13: repetition maximum is below its minimum"},
        {"root ::= \"a\"{2001}", "grammar: line 1, column 13: repetition minimum 2001 exceeds 2000"},
        {"root ::= \"a\"{", "grammar: line 1, column 14: expected a number, found end of grammar"},
        {"root ::= \"a\"{2;", "grammar: line 1, column 15: expected ',' or '}' in the repetition, found ';'"},
        {"root = \"a\"", "grammar: line 1, column 6: expected '::=' after rule name 'root', found '='"},
        {"root ::= (\"a\" | \"b\"",
         "grammar: line 1, column 20: expected ')' to close the group opened at column 10, found end of grammar"},
        {"root ::= []", "grammar: line 1, column 10: empty character class"},
        {"root ::= [z-a]", "grammar: line 1, column 11: character range is reversed (end below start)"},
        {"root ::= a b\na ::= \"x\"\nb ::= \"y\" )",
         "grammar: line 3, column 11: expected an element, '|' or the end of the line in rule 'b', found ')'"},
        // columns count characters: the é is one column
        {"root ::= \"\xC3\xA9\" ]",
         "grammar: line 1, column 14: expected an element, '|' or the end of the line in rule 'root', found ']'"},
        {"root ::= <foo>", "grammar: line 1, column 10: token references (<...>, !<...>) are not supported"},
        {"# only a comment\n   ::= \"a\"", "grammar: line 2, column 4: expected a rule name, found ':'"},
        {"root ::= \"\xFF\"", "grammar: line 1, column 11: invalid UTF-8"},
        {"expr ::= \"a\"", "grammar: no rule named 'root' (the start rule)"},
        {"", "grammar: no rule named 'root' (the start rule)"},
        {"root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"",
         "grammar: left recursion: rule 'expr' can refer to itself before matching a character"},
        {"root ::= a\na ::= b \"x\"\nb ::= | a",
         "grammar: left recursion: rule 'a' can refer to itself before matching a character"},
        {"root ::= (\"a\" \"b\"{0,20}){100}",
         "grammar: line 1, column 25: repetition too large: 21 rule(s) repeated 100 times exceeds 2000"},
    };
    for (const ErrorCase& c : cases) EXPECT_EQ(parse_error(c.grammar), c.message) << c.grammar;
}

TEST(GrammarParser, DeepNestingIsAnErrorNotAStackOverflow) {
    EXPECT_EQ(parse_error("root ::= " + std::string(100000, '(')),
              "grammar: line 1, column 266: groups nested more than 256 deep");
    EXPECT_EQ(parse_error("root ::= " + std::string(256, '(') + "\"a\"" + std::string(256, ')')), "(no error)");
}

// A rule that reaches itself through rules that match nothing without being
// written empty slips past llama.cpp's left-recursion check (as it does
// ours); llama.cpp then expands forever, we stop with an error.
TEST(GrammarParser, HiddenLeftRecursionIsAnErrorNotAHang) {
    EXPECT_EQ(parse_error("root ::= e \"x\"\ne ::= n root\nn ::= m\nm ::= \"\""),
              "grammar: expanding the rules does not terminate (a rule refers to itself before matching a "
              "character, through rules that match nothing)");
}

// Feeds a UTF-8 string code point by code point: "dead" when some prefix
// leaves the grammar, "complete" when the whole is a sentence, else "prefix".
std::string judge(const std::string& grammar, const std::string& text) {
    StackGraph g(parse_grammar(grammar));
    SetId s = g.initial();
    for (size_t i = 0; i < text.size();) {
        const uint8_t lead = uint8_t(text[i]);
        const int len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        uint32_t cp = len == 1 ? lead : lead & (0x7Fu >> len);
        for (int k = 1; k < len; ++k) cp = (cp << 6) | (uint8_t(text[i + size_t(k)]) & 0x3F);
        i += size_t(len);
        s = g.advance(s, cp);
        if (s == kDeadSet) return "dead";
    }
    return g.complete(s) ? "complete" : "prefix";
}

struct JudgeCase {
    const char* grammar;
    const char* text;
    const char* verdict;
};

TEST(GrammarParser, GrammarsAcceptWhatTheirRulesDescribe) {
    const char* json = R"(root ::= "{" ws (pair ("," ws pair)*)? "}"
pair ::= str ":" ws val ws
val  ::= str | [0-9]+ | root
str  ::= "\"" [^"\\]* "\""
ws   ::= " "?)";
    const JudgeCase cases[] = {
        {json, "{\"a\": 1}", "complete"},
        {json, "{\"a\": {\"b\": \"c\"}, \"d\": 22}", "complete"},
        {json, "{\"a\": ", "prefix"},
        {json, "{\"a\" 1}", "dead"},
        {"root ::= \"a\"{2,3}", "a", "prefix"},
        {"root ::= \"a\"{2,3}", "aa", "complete"},
        {"root ::= \"a\"{2,3}", "aaa", "complete"},
        {"root ::= \"a\"{2,3}", "aaaa", "dead"},
        {"root ::= \"ab\"{2}", "abab", "complete"},
        {"root ::= \"ab\"{2}", "aba", "prefix"},
        {"root ::= [0-9]{2,}", "1", "prefix"},
        {"root ::= [0-9]{2,}", "12345", "complete"},
        {"root ::= \"x\"{0}\"y\"", "y", "complete"},
        {"root ::= [^a-c]+", "xyz", "complete"},
        {"root ::= [^a-c]+", "xa", "dead"},
        {"root ::= . \"!\"", "\xC3\xA9!", "complete"},
        {"root ::= . \"!\"", "\n!", "complete"},
        {"root ::= [\xD0\xB0-\xD1\x8F]+", "\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82", "complete"},  // привет
        {"root ::= [\xD0\xB0-\xD1\x8F]+", "hello", "dead"},
        {"root ::= [\\u3041-\\u309F]+", "\xE3\x81\x82\xE3\x81\x84", "complete"},  // あい
        {"root ::= \"\\x41\\u00E9\\U0001F600\\t\\n\\\\\\\"\\[\\]\\-\"", "A\xC3\xA9\xF0\x9F\x98\x80\t\n\\\"[]-", "complete"},
        {"root ::= [\\]\\-]+", "]-]", "complete"},
        {"root ::= [a-]", "-", "complete"},  // a '-' before ']' is itself
        {"root ::= (\"a\"? \"b\"?)*", "abba", "complete"},  // nullable loop: no hang
        {"root ::= \"(\" root \")\" | \"x\"", "((((x))))", "complete"},
        {"root ::= \"(\" root \")\" | \"x\"", "((x)", "prefix"},
        {"root ::= item+\nitem ::= [a-z] \",\"", "a,b,c,", "complete"},
        {"root ::= (\"cat\" | \"car\" | \"cart\") \"!\"", "cart!", "complete"},
        {"root ::= (\"cat\" | \"car\" | \"cart\") \"!\"", "cab", "dead"},
        {"root ::= \"a\" |\n", "", "complete"},
        {"root ::=   \"a\"   # comment\n\n# another\n", "a", "complete"},
        {"root ::= (\n  \"a\"\n  | \"b\"\n)\n", "b", "complete"},
        {"root ::= \"a\"\r\nb ::= \"c\"\r\n", "a", "complete"},
    };
    for (const JudgeCase& c : cases) EXPECT_EQ(judge(c.grammar, c.text), c.verdict) << c.grammar << " / " << c.text;
}

// {m,n} beyond 2000 means unbounded, as in llama.cpp.
TEST(GrammarParser, RepetitionMaximumAbove2000IsUnbounded) {
    EXPECT_EQ(judge("root ::= \"a\"{1,5000}", std::string(2500, 'a')), "complete");
}

}  // namespace
}  // namespace smolinfer::grammar
