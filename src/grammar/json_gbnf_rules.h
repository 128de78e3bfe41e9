// The fixed GBNF rules the JSON-schema converter builds on: JSON's value
// kinds and the string formats. Their names and bodies are the ones
// llama.cpp's converter emits, so that converted grammars match its text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace smolinfer::grammar {

struct FixedRule {
    std::string_view name;
    std::string_view body;
    std::vector<std::string_view> needs;  // other fixed rules the body refers to
};

// Whitespace allowed between JSON tokens (always present, named "space").
inline constexpr std::string_view kSpaceRule = R"(| " " | "\n"{1,2} [ \t]{0,20})";

// boolean, decimal-part, integral-part, number, integer, value, object,
// array, uuid, char, string, null; then date, time, date-time and the
// quoted date-string, time-string, date-time-string. nullptr if unknown.
const FixedRule* find_fixed_rule(std::string_view name);

// Names a schema-derived rule may not take (the fixed ones and "root").
bool is_reserved_rule_name(std::string_view name);

}  // namespace smolinfer::grammar
