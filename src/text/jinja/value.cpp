#include "text/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace smolinfer::text::jinja {

const Value* Object::find(const std::string& key) const {
    for (const auto& kv : items) {
        if (kv.first == key) return &kv.second;
    }
    return nullptr;
}

void Object::set(const std::string& key, Value v) {
    for (auto& kv : items) {
        if (kv.first == key) {
            kv.second = std::move(v);
            return;
        }
    }
    items.emplace_back(key, std::move(v));
}

Value Value::none() {
    Value v;
    v.kind = Kind::None;
    return v;
}
Value Value::boolean(bool x) {
    Value v;
    v.kind = Kind::Bool;
    v.b = x;
    return v;
}
Value Value::integer(int64_t x) {
    Value v;
    v.kind = Kind::Int;
    v.i = x;
    return v;
}
Value Value::number(double x) {
    Value v;
    v.kind = Kind::Float;
    v.f = x;
    return v;
}
Value Value::string(TaggedString x) {
    Value v;
    v.kind = Kind::String;
    v.s = std::move(x);
    return v;
}
Value Value::array(Array x) {
    Value v;
    v.kind = Kind::Array;
    for (const Value& item : x) v.nest = std::max(v.nest, item.nest + 1);
    v.a = std::make_shared<Array>(std::move(x));
    return v;
}
Value Value::object(Object x) {
    Value v;
    v.kind = Kind::Object;
    for (const auto& kv : x.items) v.nest = std::max(v.nest, kv.second.nest + 1);
    v.o = std::make_shared<Object>(std::move(x));
    return v;
}

Value Value::function(const std::string& name) {
    Value v;
    v.kind = Kind::Function;
    v.s = TaggedString(name);
    return v;
}

const char* kind_name(Value::Kind k) {
    switch (k) {
        case Value::Kind::Undefined: return "undefined";
        case Value::Kind::None: return "none";
        case Value::Kind::Bool: return "boolean";
        case Value::Kind::Int: return "integer";
        case Value::Kind::Float: return "float";
        case Value::Kind::String: return "string";
        case Value::Kind::Array: return "list";
        case Value::Kind::Object: return "dict";
        case Value::Kind::Function: return "function";
    }
    return "?";
}

bool truthy(const Value& v) {
    switch (v.kind) {
        case Value::Kind::Undefined:
        case Value::Kind::None: return false;
        case Value::Kind::Bool: return v.b;
        case Value::Kind::Int: return v.i != 0;
        case Value::Kind::Float: return v.f != 0;
        case Value::Kind::String: return !v.s.empty();
        case Value::Kind::Array: return !v.a->empty();
        case Value::Kind::Object: return !v.o->items.empty();
        case Value::Kind::Function: return true;
    }
    return false;
}

bool equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.kind == Value::Kind::Int && b.kind == Value::Kind::Int) return a.i == b.i;
        return a.as_double() == b.as_double();
    }
    // Python: True == 1; keep it simple and strict for booleans against numbers.
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case Value::Kind::Undefined:
        case Value::Kind::None: return true;
        case Value::Kind::Bool: return a.b == b.b;
        case Value::Kind::String:
        case Value::Kind::Function: return a.s.str() == b.s.str();
        case Value::Kind::Array:
            if (a.a->size() != b.a->size()) return false;
            for (size_t k = 0; k < a.a->size(); ++k) {
                if (!equal((*a.a)[k], (*b.a)[k])) return false;
            }
            return true;
        case Value::Kind::Object:
            if (a.o->items.size() != b.o->items.size()) return false;
            for (const auto& kv : a.o->items) {
                const Value* other = b.o->find(kv.first);
                if (!other || !equal(kv.second, *other)) return false;
            }
            return true;
        default: return false;
    }
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    char buf[32];
    for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (std::strtod(buf, nullptr) == d) break;
    }
    std::string s = buf;
    if (s.find_first_of(".eni") == std::string::npos) s += ".0";
    return s;
}

namespace {

std::string python_repr(const Value& v);

std::string quote_repr(const std::string& s) {
    const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, q);
    for (const char c : s) {
        if (c == q || c == '\\') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out + q;
}

std::string python_repr(const Value& v) {
    switch (v.kind) {
        case Value::Kind::String: return quote_repr(v.s.str());
        case Value::Kind::Array: {
            std::string out = "[";
            for (size_t k = 0; k < v.a->size(); ++k) out += (k ? ", " : "") + python_repr((*v.a)[k]);
            return out + "]";
        }
        case Value::Kind::Object: {
            std::string out = "{";
            bool first = true;
            for (const auto& kv : v.o->items) {
                out += (first ? "" : ", ") + quote_repr(kv.first) + ": " + python_repr(kv.second);
                first = false;
            }
            return out + "}";
        }
        default: return to_text(v).str();
    }
}

void json_string(const std::string& s, std::string& out) {
    out += '"';
    for (const unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += char(c);  // UTF-8 as it is (ensure_ascii=False)
                }
        }
    }
    out += '"';
}

void json_value(const Value& v, int indent, int depth, std::string& out) {
    const auto newline = [&](int d) {
        out += '\n';
        out.append(size_t(indent * d), ' ');
    };
    switch (v.kind) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
        case Value::Kind::Function: out += "null"; return;
        case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
        case Value::Kind::Int: out += std::to_string(v.i); return;
        case Value::Kind::Float: out += float_repr(v.f); return;
        case Value::Kind::String: json_string(v.s.str(), out); return;
        case Value::Kind::Array: {
            if (v.a->empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t k = 0; k < v.a->size(); ++k) {
                if (k) out += indent < 0 ? ", " : ",";
                if (indent >= 0) newline(depth + 1);
                json_value((*v.a)[k], indent, depth + 1, out);
            }
            if (indent >= 0) newline(depth);
            out += ']';
            return;
        }
        case Value::Kind::Object: {
            if (v.o->items.empty()) {
                out += "{}";
                return;
            }
            out += '{';
            bool first = true;
            for (const auto& kv : v.o->items) {
                if (!first) out += indent < 0 ? ", " : ",";
                first = false;
                if (indent >= 0) newline(depth + 1);
                json_string(kv.first, out);
                out += ": ";
                json_value(kv.second, indent, depth + 1, out);
            }
            if (indent >= 0) newline(depth);
            out += '}';
            return;
        }
    }
}

}  // namespace

TaggedString to_text(const Value& v) {
    switch (v.kind) {
        case Value::Kind::Undefined: return {};
        case Value::Kind::None: return TaggedString("None");
        case Value::Kind::Bool: return TaggedString(v.b ? "True" : "False");
        case Value::Kind::Int: return TaggedString(std::to_string(v.i));
        case Value::Kind::Float: return TaggedString(float_repr(v.f));
        case Value::Kind::String: return v.s;
        case Value::Kind::Array:
        case Value::Kind::Object: return TaggedString(python_repr(v));
        case Value::Kind::Function: return TaggedString("<built-in function " + v.s.str() + ">");
    }
    return {};
}

std::string to_json(const Value& v, int indent) {
    std::string out;
    json_value(v, indent, 0, out);
    return out;
}

}  // namespace smolinfer::text::jinja
