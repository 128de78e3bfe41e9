#include "text/jinja/template.h"

#include "text/jinja/lexer.h"
#include "text/jinja/parser.h"

namespace smolinfer::text::jinja {

Template::Template(std::string_view source) : program_(std::make_shared<const Body>(parse(tokenize(source)))) {}

std::vector<TaggedString> Template::render(const RenderContext& context) const { return evaluate(*program_, context); }

}  // namespace smolinfer::text::jinja
