// Template text -> tokens, with the whitespace rules llama.cpp and
// Hugging Face apply to chat templates: trim_blocks and lstrip_blocks on,
// `-` markers strip the adjacent text, one trailing newline dropped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace smolinfer::text::jinja {

struct Token {
    enum class Type { Text, OpenExpr, CloseExpr, OpenStmt, CloseStmt, Name, String, Int, Float, Op, End };
    Type type;
    std::string text;   // Text/Name/Op spelling, String value, number digits
    size_t offset = 0;  // in the source, for error messages
};

// Throws SyntaxError naming the offset.
std::vector<Token> tokenize(std::string_view source);

}  // namespace smolinfer::text::jinja
