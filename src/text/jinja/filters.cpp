// Jinja filters: `x | trim`, `x | tojson(indent=4)`, `xs | selectattr(...)`, ...
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "text/jinja/builtins.h"
#include "text/jinja/checked_int.h"
#include "text/jinja/errors.h"
#include "text/jinja/string_ops.h"

namespace smolinfer::text::jinja {

const Value* kwarg(const Kwargs& kwargs, const char* name) {
    for (const auto& kv : kwargs) {
        if (kv.first == name) return &kv.second;
    }
    return nullptr;
}

void type_error(const std::string& what, const Value& got) {
    throw RenderError(what + " (got " + kind_name(got.kind) + ")");
}

const TaggedString& need_string(const Value& v, const std::string& what) {
    if (!v.is_string()) type_error(what + " must be a string", v);
    return v.s;
}

namespace {

const Array& need_list(const Value& v, const std::string& filter) {
    // As llama.cpp: a missing list (undefined, none) filters as an empty one.
    static const Array kEmpty;
    if (v.is_undefined() || v.is_none()) return kEmpty;
    if (!v.is_array()) type_error("the filter '" + filter + "' needs a list", v);
    return *v.a;
}

// The items of a list, the keys of a dict, the characters of a string
// (nothing for undefined or none).
Array iterate(const Value& v, const std::string& filter) {
    if (v.is_undefined() || v.is_none()) return {};
    if (v.is_array()) return *v.a;
    if (v.is_object()) {
        Array keys;
        for (const auto& kv : v.o->items) keys.push_back(Value::string(TaggedString(kv.first)));
        return keys;
    }
    if (v.is_string()) {
        Array chars;
        const std::string s = v.s.str();
        const size_t n = codepoint_count(s);
        for (size_t k = 0; k < n; ++k) {
            chars.push_back(Value::string(v.s.substr(codepoint_offset(s, k), codepoint_offset(s, k + 1))));
        }
        return chars;
    }
    type_error("the filter '" + filter + "' needs something to iterate", v);
}

Value attribute(const Value& item, const Value& name) {
    if (!item.is_object()) return Value();
    const Value* v = item.o->find(need_string(name, "an attribute name").str());
    return v ? *v : Value();
}

// select/reject/selectattr/rejectattr: keep items whose test result is `keep`.
Value filter_items(const Value& subject, const Args& args, bool by_attribute, bool keep, const std::string& filter) {
    const Array& items = need_list(subject, filter);
    size_t k = 0;
    Value attr;
    if (by_attribute) {
        if (args.empty()) throw RenderError("the filter '" + filter + "' needs an attribute name");
        attr = args[k++];
    }
    std::string test;
    Args test_args;
    if (k < args.size()) {
        test = need_string(args[k++], "a test name").str();
        if (!is_test(test)) throw Unsupported("the test '" + test + "'");
        test_args.assign(args.begin() + ptrdiff_t(k), args.end());
    }
    Array out;
    for (const Value& item : items) {
        const Value v = by_attribute ? attribute(item, attr) : item;
        const bool pass = test.empty() ? truthy(v) : apply_test(test, v, test_args);
        if (pass == keep) out.push_back(item);
    }
    return Value::array(std::move(out));
}

Value join(const Value& subject, const Args& args, const Kwargs& kwargs) {
    TaggedString sep;
    if (!args.empty()) sep = need_string(args[0], "the join separator");
    const Value* attr = kwarg(kwargs, "attribute");
    TaggedString out;
    bool first = true;
    for (const Value& item : iterate(subject, "join")) {
        if (!first) out.append(sep);
        first = false;
        out.append(to_text(attr ? attribute(item, *attr) : item));
        check_string_size(out.size());
    }
    return Value::string(out);
}

Value to_int(const Value& v) {
    switch (v.kind) {
        case Value::Kind::Int: return v;
        case Value::Kind::Float: return Value::integer(checked_truncate(v.f));
        case Value::Kind::Bool: return Value::integer(v.b);
        case Value::Kind::String: {
            errno = 0;
            const long long i = std::strtoll(v.s.str().c_str(), nullptr, 10);
            if (errno == ERANGE) throw RenderError("'" + v.s.str() + "'|int does not fit a 64-bit integer");
            return Value::integer(i);
        }
        default: return Value::integer(0);
    }
}

}  // namespace

bool is_filter(const std::string& name) {
    static const std::set<std::string> kFilters = {
        "trim",   "length",  "count",   "tojson",     "join",  "list",       "first",      "last",
        "reverse", "upper",  "lower",   "title",      "capitalize", "default", "d",     "string",
        "int",    "float",   "abs",     "replace",    "items", "selectattr", "rejectattr", "select",
        "reject", "map",     "safe",    "unique"};
    return kFilters.count(name) != 0;
}

Value apply_filter(const std::string& name, const Value& v, const Args& args, const Kwargs& kwargs) {
    if (name == "trim") {
        std::optional<std::string> chars;
        if (!args.empty()) chars = need_string(args[0], "trim's characters").str();
        // Jinja's soft_str: an undefined value trims to "" (Hermes 2 Pro's
        // tool template trims descriptions a parameter may lack).
        if (v.is_undefined()) return Value::string(TaggedString());
        return Value::string(strip(need_string(v, "trim's input"), chars, true, true));
    }
    if (name == "length" || name == "count") {
        if (v.is_string()) return Value::integer(int64_t(codepoint_count(v.s.str())));
        if (v.is_array()) return Value::integer(int64_t(v.a->size()));
        if (v.is_object()) return Value::integer(int64_t(v.o->items.size()));
        if (v.is_undefined() || v.is_none()) return Value::integer(0);
        type_error("the filter 'length' needs a string, list or dict", v);
    }
    if (name == "tojson") {
        const Value* indent = kwarg(kwargs, "indent");
        if (!indent && !args.empty()) indent = &args[0];
        const int n = indent && indent->kind == Value::Kind::Int ? int(indent->i) : -1;
        // JSON of message text is message text.
        return Value::string(TaggedString(to_json(v, n), to_text(v).any_plain() || v.is_array() || v.is_object()));
    }
    if (name == "join") return join(v, args, kwargs);
    if (name == "list") return Value::array(iterate(v, name));
    if (name == "first" || name == "last") {
        const Array items = iterate(v, name);
        if (items.empty()) return Value();
        return name == "first" ? items.front() : items.back();
    }
    if (name == "reverse") {
        Array items = iterate(v, name);
        std::reverse(items.begin(), items.end());
        if (v.is_string()) {
            TaggedString out;
            for (const Value& c : items) out.append(c.s);
            return Value::string(out);
        }
        return Value::array(std::move(items));
    }
    if (name == "upper") return Value::string(upper(need_string(v, "upper's input")));
    if (name == "lower") return Value::string(lower(need_string(v, "lower's input")));
    if (name == "title") return Value::string(title(need_string(v, "title's input")));
    if (name == "capitalize") return Value::string(capitalize(need_string(v, "capitalize's input")));
    if (name == "default" || name == "d") {
        const bool boolean = (args.size() > 1 && truthy(args[1])) || (kwarg(kwargs, "boolean") && truthy(*kwarg(kwargs, "boolean")));
        const bool use_default = v.is_undefined() || (boolean && !truthy(v));
        if (!use_default) return v;
        return args.empty() ? Value::string(TaggedString()) : args[0];
    }
    if (name == "string") return Value::string(to_text(v));
    if (name == "safe") return v;
    if (name == "int") return to_int(v);
    if (name == "float") {
        if (v.is_number()) return Value::number(v.as_double());
        if (v.is_string()) return Value::number(std::strtod(v.s.str().c_str(), nullptr));
        return Value::number(0);
    }
    if (name == "abs") {
        if (v.kind == Value::Kind::Int) return Value::integer(v.i < 0 ? checked_neg(v.i) : v.i);
        if (v.kind == Value::Kind::Float) return Value::number(std::fabs(v.f));
        type_error("the filter 'abs' needs a number", v);
    }
    if (name == "replace") {
        if (args.size() < 2) throw RenderError("the filter 'replace' needs two arguments");
        long count = -1;
        if (args.size() > 2 && args[2].kind == Value::Kind::Int) count = long(args[2].i);
        return Value::string(replace(need_string(v, "replace's input"), need_string(args[0], "replace's old text").str(),
                                     need_string(args[1], "replace's new text"), count));
    }
    if (name == "items") {
        if (!v.is_object()) type_error("the filter 'items' needs a dict", v);
        return call_method(v, "items", {}, {});
    }
    if (name == "selectattr") return filter_items(v, args, true, true, name);
    if (name == "rejectattr") return filter_items(v, args, true, false, name);
    if (name == "select") return filter_items(v, args, false, true, name);
    if (name == "reject") return filter_items(v, args, false, false, name);
    if (name == "map") {
        const Value* attr = kwarg(kwargs, "attribute");
        if (!attr) throw Unsupported("the filter 'map' without attribute=");
        Array out;
        for (const Value& item : need_list(v, name)) out.push_back(attribute(item, *attr));
        return Value::array(std::move(out));
    }
    if (name == "unique") {
        Array out;
        for (const Value& item : iterate(v, name)) {
            bool seen = false;
            for (const Value& o : out) seen = seen || equal(o, item);
            if (!seen) out.push_back(item);
        }
        return Value::array(std::move(out));
    }
    throw RenderError("unknown filter '" + name + "'");
}

}  // namespace smolinfer::text::jinja
