// What can go wrong with a template. Unsupported: a construct this
// interpreter does not implement (the chat template falls back to ChatML and
// names it). SyntaxError: the text is not a template. RenderError: the
// template failed on this input, including its own raise_exception.
#pragma once

#include <stdexcept>
#include <string>

namespace smolinfer::text::jinja {

struct Unsupported : std::runtime_error {
    explicit Unsupported(const std::string& construct) : std::runtime_error(construct) {}
};
struct SyntaxError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct RenderError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace smolinfer::text::jinja
