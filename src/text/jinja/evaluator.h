// Runs a parsed template against named values. Output is a list of tagged
// strings, one per text run or {{ }} (the chat template turns each into
// prompt pieces). Bounded: loops, output size and nesting have limits, so a
// hostile template fails with RenderError instead of running away.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace smolinfer::text::jinja {

struct Limits {
    size_t max_steps = 200'000;            // statements run + loop iterations
    uint32_t max_nest = 64;                // lists/dicts inside lists/dicts a {% set %} may store
    int max_macro_depth = 32;              // macros calling macros (or themselves)
    // Statements and expressions inside each other, counted through macro
    // calls: the parser bounds one template's nesting, but a macro may call
    // itself from deep inside its body, and each level is C++ stack (1 MB in
    // the browser). A for loop counts twice (evaluator.cpp says why).
    int max_depth = 1000;
    size_t max_output_bytes = 16u << 20;   // rendered text
};

struct RenderContext {
    std::vector<std::pair<std::string, Value>> globals;
    std::time_t now = 0;  // what strftime_now formats (UTC)
    Limits limits;
};

// Throws RenderError (its message is the template's own for raise_exception).
std::vector<TaggedString> evaluate(const Body& program, const RenderContext& context);

}  // namespace smolinfer::text::jinja
