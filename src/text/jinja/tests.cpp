// Jinja tests: `x is defined`, `x is string`, `x is equalto y`, ...
#include <set>

#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"

namespace smolinfer::text::jinja {

bool is_test(const std::string& name) {
    static const std::set<std::string> kTests = {"defined", "undefined", "none",    "string",  "number", "integer",
                                                 "float",   "boolean",   "mapping", "iterable", "sequence", "true",
                                                 "false",   "equalto",   "eq",      "==",      "ne",     "!=",
                                                 "odd",     "even",      "in"};
    return kTests.count(name) != 0;
}

bool apply_test(const std::string& name, const Value& v, const Args& args) {
    using K = Value::Kind;
    auto arg = [&]() -> const Value& {
        if (args.empty()) throw RenderError("the test '" + name + "' needs an argument");
        return args[0];
    };
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.kind == K::Int;
    if (name == "float") return v.kind == K::Float;
    if (name == "boolean") return v.kind == K::Bool;
    if (name == "mapping") return v.is_object();
    // As llama.cpp's interpreter (common/jinja/value.cpp): undefined is
    // iterable (Hermes 2 Pro's template prints an array's item type as
    // "Union[]" through it), a mapping is not.
    if (name == "iterable" || name == "sequence") return v.is_array() || v.is_string() || v.is_undefined();
    if (name == "true") return v.kind == K::Bool && v.b;
    if (name == "false") return v.kind == K::Bool && !v.b;
    if (name == "equalto" || name == "eq" || name == "==") return equal(v, arg());
    if (name == "ne" || name == "!=") return !equal(v, arg());
    if (name == "odd" || name == "even") {
        if (v.kind != K::Int) type_error("the test '" + name + "' needs an integer", v);
        return (v.i % 2 != 0) == (name == "odd");
    }
    if (name == "in") {
        const Value& c = arg();
        if (c.is_array()) {
            for (const Value& x : *c.a) {
                if (equal(x, v)) return true;
            }
            return false;
        }
        if (c.is_object()) return v.is_string() && c.o->find(v.s.str()) != nullptr;
        if (c.is_string() && v.is_string()) return c.s.str().find(v.s.str()) != std::string::npos;
        if (c.is_undefined() || c.is_none()) return false;  // as llama.cpp
        type_error("'in' needs a list, dict or string", c);
    }
    throw RenderError("unknown test '" + name + "'");
}

}  // namespace smolinfer::text::jinja
