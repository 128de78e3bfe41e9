// A GBNF grammar (llama.cpp's grammar format) compiled to flat rules: each
// rule is a list of alternatives, each alternative a run of elements in
// `elements` ending with an End element. Repetitions, groups and optionals
// are rewritten into helper rules by the parser, so the matcher only knows
// three kinds of element.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace smolinfer::grammar {

struct CharRange {
    uint32_t first;
    uint32_t last;  // inclusive
};

// One character position: a literal character, a class like [a-z] or
// [^"\\], or `.`. Matching follows llama.cpp: a code point matches when it
// is in a range (or the set is `.`), inverted for a negated class.
struct CharSet {
    bool negated = false;
    bool any = false;  // `.`
    std::vector<CharRange> ranges;

    bool matches(uint32_t cp) const;
    // Whether a code point that starts with an incomplete UTF-8 sequence
    // (value = its bits so far, n_remain continuation bytes missing) may
    // match; llama.cpp's test for a token that ends inside a character,
    // including its approximations (a negated class rejects the whole window
    // of completions when any of them is excluded; overlong 2-byte starts
    // never match).
    bool may_complete(uint32_t value, int n_remain) const;
};

enum class ElementKind : uint8_t {
    Chars,  // index: into Grammar::charsets
    Rule,   // index: into Grammar::rules
    End,    // end of an alternative
};

struct Element {
    ElementKind kind;
    uint32_t index;
};

struct Rule {
    std::string name;                   // generated rules: "<parent>_<n>"
    std::vector<uint32_t> alternatives; // start positions in Grammar::elements
};

struct Grammar {
    std::vector<Element> elements;
    std::vector<CharSet> charsets;
    std::vector<Rule> rules;
    uint32_t root = 0;
};

// Parses GBNF text. Throws smolinfer::Error "grammar: line L, column C: ..."
// for a syntax error, and "grammar: ..." naming the rule for an undefined
// rule, a missing root rule or left recursion.
Grammar parse_grammar(std::string_view text, std::string_view root = "root");

}  // namespace smolinfer::grammar
