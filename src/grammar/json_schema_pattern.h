// A JSON-schema "pattern" (an anchored regular expression ^...$) as a GBNF
// rule for the JSON string it matches, as llama.cpp's converter writes it.
// Supported: literals and escapes, '.', [classes], groups (...) and (?:...),
// '|', and the quantifiers * + ? {n} {n,} {n,m}.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace smolinfer::grammar {

// Adds a rule (name, body) and returns the name it got.
using AddRule = std::function<std::string(const std::string& name, const std::string& body)>;

// Thrown for a pattern that is not a valid regular expression or has no
// GBNF equivalent here; the message says which construct.
struct PatternError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Adds the rules for `pattern` (the string rule itself named `name`, helper
// rules "dot" and "<name>-<n>") and returns the string rule's name.
std::string pattern_to_gbnf(const std::string& pattern, const std::string& name, const AddRule& add_rule);

}  // namespace smolinfer::grammar
