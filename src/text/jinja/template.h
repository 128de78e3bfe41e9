// A Jinja template, parsed once and rendered many times: the entry point of
// the interpreter (lexer -> parser -> evaluator).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/evaluator.h"

namespace smolinfer::text::jinja {

class Template {
public:
    // Throws SyntaxError or Unsupported.
    explicit Template(std::string_view source);

    // Throws RenderError.
    std::vector<TaggedString> render(const RenderContext& context) const;

private:
    std::shared_ptr<const Body> program_;
};

}  // namespace smolinfer::text::jinja
