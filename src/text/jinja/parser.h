// Tokens -> statements. Recognizes the Jinja subset chat templates use;
// any other statement, filter, test, function or method is rejected at
// parse time with Unsupported naming it, so a template either renders with
// everything it may need or is not used at all.
#pragma once

#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace smolinfer::text::jinja {

// Throws SyntaxError or Unsupported.
Body parse(const std::vector<Token>& tokens);

}  // namespace smolinfer::text::jinja
