// Jinja values: undefined, none, booleans, integers, floats, tagged strings,
// arrays, insertion-ordered objects and built-in functions (named in `s`,
// so `strftime_now is defined` holds) (namespaces are objects that `set`
// may assign into). Arrays and objects are shared, as in Python.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/tagged_string.h"

namespace smolinfer::text::jinja {

struct Value;
using Array = std::vector<Value>;

struct Object {
    std::vector<std::pair<std::string, Value>> items;
    bool is_namespace = false;

    const Value* find(const std::string& key) const;
    void set(const std::string& key, Value v);
};

struct Value {
    enum class Kind { Undefined, None, Bool, Int, Float, String, Array, Object, Function };
    Kind kind = Kind::Undefined;
    bool b = false;
    int64_t i = 0;
    double f = 0;
    TaggedString s;
    std::shared_ptr<Array> a;
    std::shared_ptr<Object> o;
    uint32_t nest = 0;  // how deep lists and dicts nest inside (0 for scalars)

    static Value none();
    static Value boolean(bool v);
    static Value integer(int64_t v);
    static Value number(double v);
    static Value string(TaggedString v);
    static Value array(Array v = {});
    static Value object(Object v = {});
    static Value function(const std::string& name);

    bool is_undefined() const { return kind == Kind::Undefined; }
    bool is_none() const { return kind == Kind::None; }
    bool is_string() const { return kind == Kind::String; }
    bool is_array() const { return kind == Kind::Array; }
    bool is_object() const { return kind == Kind::Object; }
    bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
    double as_double() const { return kind == Kind::Int ? double(i) : f; }
};

const char* kind_name(Value::Kind k);

// Python truthiness.
bool truthy(const Value& v);
// Python ==, deep for arrays and objects, ints equal to floats of the same value.
bool equal(const Value& a, const Value& b);
// Python str(): how {{ v }} prints (undefined prints nothing). Strings keep their tags.
TaggedString to_text(const Value& v);
// JSON text as Jinja's tojson gives it; indent < 0: one line with ", " and ": ".
std::string to_json(const Value& v, int indent);
// Python's repr of a float (shortest round-trip digits, always a dot or exponent).
std::string float_repr(double d);

}  // namespace smolinfer::text::jinja
