#include "grammar/json_schema_to_gbnf.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "grammar/json_schema_converter.h"
#include "smolinfer/error.h"

namespace smolinfer::grammar {
namespace detail {
namespace {

// Deeper schemas are refused rather than risking the stack.
constexpr int kMaxSchemaDepth = 128;

// A GBNF string literal: quotes, backslashes and line breaks escaped.
std::string gbnf_literal(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
            case '\r': out += "\\r"; break;
            case '\n': out += "\\n"; break;
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            default: out += c;
        }
    }
    return out + "\"";
}

}  // namespace

[[noreturn]] void fail(const std::string& pointer, const std::string& what) {
    throw Error("json schema: " + what + " at " + (pointer.empty() ? "/" : pointer));
}

std::string child_pointer(const std::string& pointer, const std::string& key) {
    std::string out = pointer + "/";
    for (const char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

std::string child_pointer(const std::string& pointer, const std::string& key, size_t index) {
    return child_pointer(pointer, key) + "/" + std::to_string(index);
}

std::string constant_rule(const Json& value) { return gbnf_literal(value.dump()); }

std::string rule_name_from(const std::string& text) {
    std::string out;
    bool in_run = false;
    for (const char c : text) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        if (ok) {
            out += c;
            in_run = false;
        } else if (!in_run) {
            out += '-';
            in_run = true;
        }
    }
    return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) out += separator;
        out += parts[i];
    }
    return out;
}

std::string Converter::run() { return run(""); }

std::string Converter::run(const std::string& name, std::string* top) {
    const std::string rule = visit(root_, name, "");
    if (top) *top = rule;
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
}

std::string Converter::add_rule(const std::string& name, const std::string& body) {
    const std::string base = rule_name_from(name);
    auto it = rules_.find(base);
    if (it == rules_.end() || it->second == body) {
        rules_[base] = body;
        return base;
    }
    int i = 0;
    for (;; ++i) {
        auto other = rules_.find(base + std::to_string(i));
        if (other == rules_.end() || other->second == body) break;
    }
    const std::string key = base + std::to_string(i);
    rules_[key] = body;
    return key;
}

std::string Converter::add_fixed(const std::string& name, std::string_view fixed_name) {
    const FixedRule* rule = find_fixed_rule(fixed_name);
    const std::string added = add_rule(name, std::string(rule->body));
    for (const std::string_view need : rule->needs) {
        if (rules_.find(std::string(need)) == rules_.end()) add_fixed(std::string(need), need);
    }
    return added;
}

std::string Converter::visit(const Json& schema, const std::string& name, const std::string& pointer) {
    if (!schema.is_object()) fail(pointer, "a schema must be a JSON object (true/false schemas are not supported)");
    if (++depth_ > kMaxSchemaDepth) fail(pointer, "schema nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
    std::string rule = visit_object(schema, name, pointer);
    --depth_;
    return rule;
}

std::string Converter::visit_object(const Json& schema, const std::string& name, const std::string& pointer) {
    const Json type = schema.contains("type") ? schema.at("type") : Json();
    std::string format;
    if (schema.contains("format")) {
        if (!schema.at("format").is_string()) fail(pointer, "'format' must be a string");
        format = schema.at("format").get<std::string>();
    }
    const std::string rule_name = is_reserved_rule_name(name) ? name + "-" : name.empty() ? "root" : name;
    const bool untyped = type.is_null();
    auto has_type = [&](const char* t) { return type.is_string() && type.get<std::string>() == t; };

    if (schema.contains("$ref")) {
        check_keywords(schema, pointer, {"$ref"}, Kind::Any);
        return add_rule(rule_name, resolve_ref(schema.at("$ref"), pointer));
    }
    if (schema.contains("oneOf") || schema.contains("anyOf")) {
        const char* key = schema.contains("oneOf") ? "oneOf" : "anyOf";
        const Json& alternatives = schema.at(key);
        if (!alternatives.is_array() || alternatives.empty()) {
            fail(pointer, std::string("'") + key + "' must be a non-empty array");
        }
        // The alternatives alone decide the value: a "type" beside them
        // is accepted where every alternative produces that type anyway.
        if (type.is_string() && all_alternatives_are(alternatives, type.get<std::string>())) {
            check_keywords(schema, pointer, {key, "type"}, Kind::Any);
        } else {
            check_keywords(schema, pointer, {key}, Kind::Any);
        }
        std::vector<SchemaAt> alts;
        for (size_t i = 0; i < alternatives.size(); ++i) {
            alts.push_back({&alternatives[i], child_pointer(pointer, key, i)});
        }
        return add_rule(rule_name, union_rule(name, alts));
    }
    if (type.is_array()) {
        if (type.empty()) fail(pointer, "'type' must not be an empty list");
        std::vector<Json> copies;
        for (const Json& t : type) {
            Json copy = schema;
            copy["type"] = t;
            copies.push_back(std::move(copy));
        }
        std::vector<SchemaAt> alts;
        for (const Json& copy : copies) alts.push_back({&copy, pointer});
        return add_rule(rule_name, union_rule(name, alts));
    }
    if (!untyped) check_type(type, pointer);
    if (schema.contains("const")) {
        check_keywords(schema, pointer, {"const", "type"}, Kind::Any);
        return add_rule(rule_name, constant_rule(schema.at("const")));
    }
    if (schema.contains("enum")) {
        check_keywords(schema, pointer, {"enum", "type"}, Kind::Any);
        return add_rule(rule_name, enum_rule(schema, pointer));
    }
    const bool closed_additional =
        schema.contains("additionalProperties") && schema.at("additionalProperties") != Json(true);
    if ((untyped || has_type("object")) && (schema.contains("properties") || closed_additional)) {
        return object_schema(schema, name, rule_name, pointer);
    }
    if ((untyped || has_type("object") || has_type("string")) && schema.contains("allOf")) {
        if (has_type("string")) fail(pointer, "'allOf' is supported for objects and enums only, not with type 'string'");
        return all_of(schema, name, rule_name, pointer);
    }
    if ((untyped || has_type("array")) && (schema.contains("items") || schema.contains("prefixItems"))) {
        return array_schema(schema, name, rule_name, pointer);
    }
    const bool stringish = untyped || has_type("string");
    if (stringish && schema.contains("pattern")) {
        check_keywords(schema, pointer, {"type", "pattern"}, Kind::String);
        return pattern_rule(schema.at("pattern"), rule_name, pointer);
    }
    if (stringish && is_uuid_format(format)) {
        check_keywords(schema, pointer, {"type", "format"}, Kind::String);
        return add_fixed(rule_name == "root" ? "root" : format, "uuid");
    }
    if (stringish && (format == "date" || format == "time" || format == "date-time")) {
        check_keywords(schema, pointer, {"type", "format"}, Kind::String);
        const std::string fixed = format + "-string";
        return add_rule(rule_name, add_fixed(fixed, fixed));
    }
    if (has_type("string") && (schema.contains("minLength") || schema.contains("maxLength"))) {
        check_keywords(schema, pointer, {"type", "minLength", "maxLength"}, Kind::String);
        return string_length(schema, rule_name, pointer);
    }
    if (has_type("integer") && (schema.contains("minimum") || schema.contains("exclusiveMinimum") ||
                                schema.contains("maximum") || schema.contains("exclusiveMaximum"))) {
        check_keywords(schema, pointer, {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
                       Kind::Number);
        return integer_range(schema, rule_name, pointer);
    }
    if (schema.empty() || has_type("object")) {
        check_keywords(schema, pointer, {"type", "additionalProperties"}, Kind::Object);
        return add_rule(rule_name, add_fixed("object", "object"));
    }
    if (untyped) {
        // Only annotations: any JSON value.
        check_keywords(schema, pointer, {}, Kind::Any);
        return add_rule(rule_name, add_fixed("value", "value"));
    }
    const std::string t = type.get<std::string>();
    check_keywords(schema, pointer, {"type"}, kind_of_type(t));
    return add_fixed(rule_name == "root" ? "root" : t, t);
}

bool Converter::is_uuid_format(const std::string& format) {
    return format == "uuid" || (format.size() == 5 && format.compare(0, 4, "uuid") == 0 && format[4] >= '1' &&
                                format[4] <= '5');
}

void Converter::check_type(const Json& type, const std::string& pointer) {
    if (!type.is_string()) fail(pointer, "'type' must be a string or a list of strings");
    const std::string t = type.get<std::string>();
    static const std::set<std::string> known = {"string", "number", "integer", "boolean", "null", "object", "array"};
    if (known.count(t) == 0) fail(pointer, "unknown type '" + t + "'");
}

std::string Converter::union_rule(const std::string& name, const std::vector<SchemaAt>& alternatives) {
    std::vector<std::string> rules;
    for (size_t i = 0; i < alternatives.size(); ++i) {
        const std::string alt_name = name + (name.empty() ? "alternative-" : "-") + std::to_string(i);
        rules.push_back(visit(*alternatives[i].schema, alt_name, alternatives[i].pointer));
    }
    return join(rules, " | ");
}

std::string Converter::enum_rule(const Json& schema, const std::string& pointer) {
    const Json& values = schema.at("enum");
    if (!values.is_array() || values.empty()) fail(pointer, "'enum' must be a non-empty array");
    std::vector<std::string> alternatives;
    for (const Json& v : values) alternatives.push_back(constant_rule(v));
    return "(" + join(alternatives, " | ") + ")";
}

}  // namespace detail

std::string json_schema_to_gbnf(std::string_view schema_json) {
    detail::Json schema;
    try {
        schema = detail::Json::parse(schema_json.begin(), schema_json.end());
    } catch (const detail::Json::parse_error& e) {
        throw Error("json schema: invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
    }
    return detail::Converter(schema).run();
}

std::string json_schema_rules(std::string_view schema_json, const std::string& name, std::string* top) {
    detail::Json schema;
    try {
        schema = detail::Json::parse(schema_json.begin(), schema_json.end());
    } catch (const detail::Json::parse_error& e) {
        throw Error("json schema: invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
    }
    return detail::Converter(schema).run(name, top);
}

std::string json_object_grammar() { return json_schema_to_gbnf("{}"); }

}  // namespace smolinfer::grammar
