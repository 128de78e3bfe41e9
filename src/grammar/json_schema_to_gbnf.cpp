#include "grammar/json_schema_to_gbnf.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/gbnf_integer_range.h"
#include "grammar/gbnf_repetition.h"
#include "grammar/json_gbnf_rules.h"
#include "grammar/json_schema_keywords.h"
#include "grammar/json_schema_pattern.h"
#include "smolinfer/error.h"

namespace smolinfer::grammar {
namespace {

// Keeps the schema's key order: properties become rules in that order.
using Json = nlohmann::ordered_json;

// Deeper schemas are refused rather than risking the stack.
constexpr int kMaxSchemaDepth = 128;

[[noreturn]] void fail(const std::string& pointer, const std::string& what) {
    throw Error("json schema: " + what + " at " + (pointer.empty() ? "/" : pointer));
}

// JSON pointer of a child: '~' and '/' in the key are escaped (RFC 6901).
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

// The GBNF literal for exactly this JSON value (compact, keys in order).
std::string constant_rule(const Json& value) { return gbnf_literal(value.dump()); }

// Rule names hold letters, digits and '-': every run of other bytes becomes one '-'.
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

// minItems, maxLength, ...: a non-negative integer (1.0 counts as 1).
int count_keyword(const Json& schema, const char* key, const std::string& pointer) {
    const Json& v = schema.at(key);
    constexpr double kLimit = std::numeric_limits<int>::max() - 1;
    if (v.is_number_unsigned() || v.is_number_integer()) {
        if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0) {
            fail(pointer, std::string("'") + key + "' must be a non-negative integer");
        }
        if (v.get<uint64_t>() > static_cast<uint64_t>(kLimit)) fail(pointer, std::string("'") + key + "' is too large");
        return static_cast<int>(v.get<uint64_t>());
    }
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (d >= 0 && d <= kLimit && std::floor(d) == d) return static_cast<int>(d);
    }
    fail(pointer, std::string("'") + key + "' must be a non-negative integer");
}

// minimum, maximum, ... of an integer schema: an integer in int64 (1.0 counts as 1).
int64_t integer_keyword(const Json& schema, const char* key, const std::string& pointer) {
    const Json& v = schema.at(key);
    if (v.is_number_unsigned()) {
        if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            fail(pointer, std::string("'") + key + "' is out of range");
        }
        return v.get<int64_t>();
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::floor(d) == d && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
    }
    fail(pointer, std::string("'") + key + "' must be an integer for type 'integer'");
}

struct SchemaAt {
    const Json* schema;
    std::string pointer;
};

struct Property {
    std::string name;
    SchemaAt schema;
};

class Converter {
public:
    explicit Converter(const Json& root) : root_(root) { rules_["space"] = std::string(kSpaceRule); }

    std::string run() {
        visit(root_, "", "");
        std::string out;
        for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
        return out;
    }

private:
    const Json& root_;
    // Sorted by name: the grammar lists its rules in this order.
    std::map<std::string, std::string> rules_;
    std::unordered_set<std::string> refs_in_progress_;
    int depth_ = 0;

    // Adds a rule under `name` (made a valid rule name); an existing rule of
    // that name with another body makes it name0, name1, ...
    std::string add_rule(const std::string& name, const std::string& body) {
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

    // A fixed rule's body under `name`, plus the fixed rules it refers to.
    std::string add_fixed(const std::string& name, std::string_view fixed_name) {
        const FixedRule* rule = find_fixed_rule(fixed_name);
        const std::string added = add_rule(name, std::string(rule->body));
        for (const std::string_view need : rule->needs) {
            if (rules_.find(std::string(need)) == rules_.end()) add_fixed(std::string(need), need);
        }
        return added;
    }

    std::string visit(const Json& schema, const std::string& name, const std::string& pointer) {
        if (!schema.is_object()) fail(pointer, "a schema must be a JSON object (true/false schemas are not supported)");
        if (++depth_ > kMaxSchemaDepth) fail(pointer, "schema nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
        std::string rule = visit_object(schema, name, pointer);
        --depth_;
        return rule;
    }

    std::string visit_object(const Json& schema, const std::string& name, const std::string& pointer) {
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

    // Whether each alternative certainly produces values of JSON type `type`
    // (following local $refs; unknown counts as no).
    bool all_alternatives_are(const Json& alternatives, const std::string& type) {
        if (type == "integer") return false;  // a "number" alternative could produce 1.5
        const Kind wanted = kind_of_type(type);
        for (const Json& alt : alternatives) {
            if (produced_kind(alt, 0) != wanted) return false;
        }
        return true;
    }

    Kind produced_kind(const Json& schema, int depth) {
        if (!schema.is_object() || depth > 16) return Kind::Any;
        if (schema.contains("$ref")) {
            const Json& ref = schema.at("$ref");
            if (!ref.is_string() || ref.get<std::string>().rfind("#/", 0) != 0) return Kind::Any;
            std::string target_pointer;
            try {
                return produced_kind(ref_target(ref, "", &target_pointer), depth + 1);
            } catch (const Error&) {
                return Kind::Any;  // reported where the reference is visited
            }
        }
        for (const char* key : {"oneOf", "anyOf"}) {
            if (!schema.contains(key)) continue;
            const Json& alts = schema.at(key);
            if (!alts.is_array() || alts.empty()) return Kind::Any;
            const Kind first = produced_kind(alts[0], depth + 1);
            for (const Json& alt : alts) {
                if (produced_kind(alt, depth + 1) != first) return Kind::Any;
            }
            return first;
        }
        if (schema.contains("const") || schema.contains("enum")) return Kind::Any;
        const Json type = schema.contains("type") ? schema.at("type") : Json();
        if (type.is_string()) return kind_of_type(type.get<std::string>());
        if (!type.is_null()) return Kind::Any;
        const bool closed_additional =
            schema.contains("additionalProperties") && schema.at("additionalProperties") != Json(true);
        if (schema.contains("properties") || closed_additional || schema.empty()) {
            return Kind::Object;
        }
        if (schema.contains("items") || schema.contains("prefixItems")) return Kind::Array;
        return Kind::Any;
    }

    static bool is_uuid_format(const std::string& format) {
        return format == "uuid" || (format.size() == 5 && format.compare(0, 4, "uuid") == 0 && format[4] >= '1' &&
                                    format[4] <= '5');
    }

    static void check_type(const Json& type, const std::string& pointer) {
        if (!type.is_string()) fail(pointer, "'type' must be a string or a list of strings");
        const std::string t = type.get<std::string>();
        static const std::set<std::string> known = {"string", "number", "integer", "boolean", "null", "object", "array"};
        if (known.count(t) == 0) fail(pointer, "unknown type '" + t + "'");
    }

    std::string union_rule(const std::string& name, const std::vector<SchemaAt>& alternatives) {
        std::vector<std::string> rules;
        for (size_t i = 0; i < alternatives.size(); ++i) {
            const std::string alt_name = name + (name.empty() ? "alternative-" : "-") + std::to_string(i);
            rules.push_back(visit(*alternatives[i].schema, alt_name, alternatives[i].pointer));
        }
        return join(rules, " | ");
    }

    std::string enum_rule(const Json& schema, const std::string& pointer) {
        const Json& values = schema.at("enum");
        if (!values.is_array() || values.empty()) fail(pointer, "'enum' must be a non-empty array");
        std::vector<std::string> alternatives;
        for (const Json& v : values) alternatives.push_back(constant_rule(v));
        return "(" + join(alternatives, " | ") + ")";
    }

    // ------------------------------------------------------------ $ref

    // The schema a local reference "#/a/b" points to (JSON pointer tokens,
    // ~0 and ~1 unescaped), or an error naming the reference.
    const Json& ref_target(const Json& ref, const std::string& pointer, std::string* target_pointer) {
        if (!ref.is_string()) fail(pointer, "'$ref' must be a string");
        const std::string r = ref.get<std::string>();
        if (r.rfind("#/", 0) != 0) {
            if (r.find("://") != std::string::npos) fail(pointer, "remote $ref '" + r + "' is not supported (only local #/... references)");
            fail(pointer, "$ref '" + r + "' is not supported (only local #/... references)");
        }
        const Json* node = &root_;
        size_t start = 2;
        while (true) {
            const size_t slash = r.find('/', start);
            std::string token = r.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
            std::string key;
            for (size_t i = 0; i < token.size(); ++i) {
                if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
                    key += token[i + 1] == '0' ? '~' : '/';
                    ++i;
                } else {
                    key += token[i];
                }
            }
            if (node->is_object() && node->contains(key)) {
                node = &node->at(key);
            } else if (node->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
                       key.size() < 10 && std::stoul(key) < node->size()) {
                node = &(*node)[std::stoul(key)];
            } else {
                fail(pointer, "$ref '" + r + "' does not resolve: no '" + key + "'");
            }
            if (slash == std::string::npos) break;
            start = slash + 1;
        }
        *target_pointer = r.substr(1);
        return *node;
    }

    std::string resolve_ref(const Json& ref, const std::string& pointer) {
        std::string target_pointer;
        const Json& target = ref_target(ref, pointer, &target_pointer);
        const std::string r = ref.get<std::string>();
        std::string name = "ref" + rule_name_from(r.substr(1));
        // A reference being resolved further up (recursion) is used by name.
        if (rules_.find(name) == rules_.end() && refs_in_progress_.count(r) == 0) {
            refs_in_progress_.insert(r);
            name = visit(target, name, target_pointer);
            refs_in_progress_.erase(r);
        }
        return name;
    }

    // ------------------------------------------------------------ objects

    std::string object_schema(const Json& schema, const std::string& name, const std::string& rule_name,
                              const std::string& pointer) {
        check_keywords(schema, pointer, {"type", "properties", "required", "additionalProperties"}, Kind::Object);
        std::vector<Property> properties;
        if (schema.contains("properties")) {
            const Json& props = schema.at("properties");
            if (!props.is_object()) fail(pointer, "'properties' must be an object");
            for (const auto& [key, value] : props.items()) {
                properties.push_back({key, {&value, child_pointer(child_pointer(pointer, "properties"), key)}});
            }
        }
        std::unordered_set<std::string> required;
        if (schema.contains("required")) {
            const Json& req = schema.at("required");
            if (!req.is_array()) fail(pointer, "'required' must be an array of property names");
            for (const Json& item : req) {
                if (!item.is_string()) fail(pointer, "'required' must be an array of property names");
                const std::string prop = item.get<std::string>();
                const bool declared = schema.contains("properties") && schema.at("properties").contains(prop);
                if (!declared) fail(pointer, "required property '" + prop + "' is not in 'properties'");
                required.insert(prop);
            }
        }
        std::optional<SchemaAt> additional;
        bool any_additional = false;
        if (schema.contains("additionalProperties")) {
            const Json& extra = schema.at("additionalProperties");
            if (extra.is_object()) {
                additional = SchemaAt{&extra, child_pointer(pointer, "additionalProperties")};
            } else if (extra.is_boolean()) {
                any_additional = extra.get<bool>();
            } else {
                fail(pointer, "'additionalProperties' must be a boolean or a schema");
            }
        }
        return add_rule(rule_name, object_rule(properties, required, name, additional, any_additional));
    }

    // A JSON string that is none of `names` (the keys an additional
    // property may not take): a trie of the names, by bytes.
    std::string string_not_in(const std::vector<std::string>& names) {
        struct Node {
            std::map<char, Node> children;
            bool ends = false;
        };
        Node trie;
        for (const std::string& s : names) {
            Node* node = &trie;
            for (const char c : s) node = &node->children[c];
            node->ends = true;
        }
        const std::string char_rule = add_fixed("char", "char");
        std::string out = "[\"] ( ";
        std::function<void(const Node&)> walk = [&](const Node& node) {
            std::string rejected;
            bool first = true;
            for (const auto& [c, child] : node.children) {
                rejected += c;
                if (!first) out += " | ";
                first = false;
                out += "[";
                out += c;
                out += "]";
                if (!child.children.empty()) {
                    out += " (";
                    walk(child);
                    out += ")";
                } else if (child.ends) {
                    out += " " + char_rule + "+";
                }
            }
            if (!node.children.empty()) {
                if (!first) out += " | ";
                out += "[^\"" + rejected + "] " + char_rule + "*";
            }
        };
        walk(trie);
        out += " )";
        if (!trie.ends) out += "?";
        out += " [\"]";
        return out;
    }

    // Required properties in order, then the optional ones (and additional
    // ones, "*") each optional, in order, with the commas right.
    std::string object_rule(const std::vector<Property>& properties, const std::unordered_set<std::string>& required,
                            const std::string& name, const std::optional<SchemaAt>& additional, bool any_additional) {
        const std::string prefix = name + (name.empty() ? "" : "-");
        std::vector<std::string> required_names;
        std::vector<std::string> optional_names;
        std::unordered_map<std::string, std::string> kv_rules;
        std::vector<std::string> names;
        for (const Property& prop : properties) {
            const std::string value_rule = visit(*prop.schema.schema, prefix + prop.name, prop.schema.pointer);
            kv_rules[prop.name] =
                add_rule(prefix + prop.name + "-kv", constant_rule(Json(prop.name)) + " space \":\" space " + value_rule);
            (required.count(prop.name) ? required_names : optional_names).push_back(prop.name);
            names.push_back(prop.name);
        }
        if (any_additional || additional) {
            const std::string sub = prefix + "additional";
            const std::string value_rule = additional ? visit(*additional->schema, sub + "-value", additional->pointer)
                                                      : add_fixed("value", "value");
            const std::string key_rule = names.empty() ? add_fixed("string", "string") : add_rule(sub + "-k", string_not_in(names));
            kv_rules["*"] = add_rule(sub + "-kv", key_rule + " \":\" space " + value_rule);
            optional_names.push_back("*");
        }
        if (required_names.empty() && optional_names.empty()) return "\"{\" space \"}\"";

        std::string rule = "\"{\" space ";
        for (size_t i = 0; i < required_names.size(); ++i) {
            if (i > 0) rule += " \",\" space ";
            rule += kv_rules[required_names[i]];
        }
        if (!optional_names.empty()) {
            rule += " (";
            if (!required_names.empty()) rule += " \",\" space ( ";
            // The optional properties from index `from` on, the first of them
            // present (or, when first_optional, maybe absent too).
            std::function<std::string(size_t, bool)> optional_tail = [&](size_t from, bool first_optional) {
                const std::string& key = optional_names[from];
                const std::string& kv = kv_rules[key];
                const std::string comma_kv = "( \",\" space " + kv + " )";
                std::string out;
                if (first_optional) {
                    out = comma_kv + (key == "*" ? "*" : "?");
                } else {
                    out = kv + (key == "*" ? " " + comma_kv + "*" : "");
                }
                if (from + 1 < optional_names.size()) {
                    out += " " + add_rule(prefix + key + "-rest", optional_tail(from + 1, true));
                }
                return out;
            };
            for (size_t i = 0; i < optional_names.size(); ++i) {
                if (i > 0) rule += " | ";
                rule += optional_tail(i, false);
            }
            if (!required_names.empty()) rule += " )";
            rule += " )?";
        }
        return rule + " space \"}\"";
    }

    // allOf: the properties of every part (required unless the part is an
    // anyOf list), or the values common to every part's enum.
    std::string all_of(const Json& schema, const std::string& name, const std::string& rule_name,
                       const std::string& pointer) {
        check_keywords(schema, pointer, {"type", "allOf"}, Kind::Object);
        const Json& parts = schema.at("allOf");
        if (!parts.is_array() || parts.empty()) fail(pointer, "'allOf' must be a non-empty array");
        std::vector<Property> properties;
        std::unordered_set<std::string> required;
        std::set<std::string> seen;
        std::map<std::string, size_t> enum_counts;
        std::function<void(const Json&, bool, const std::string&)> add_part = [&](const Json& part, bool is_required,
                                                                                 const std::string& at) {
            if (!part.is_object()) fail(at, "an allOf part must be a JSON object");
            if (part.contains("$ref")) {
                check_keywords(part, at, {"$ref"}, Kind::Any);
                std::string target_pointer;
                const Json& target = ref_target(part.at("$ref"), at, &target_pointer);
                add_part(target, is_required, target_pointer);
            } else if (part.contains("properties")) {
                if (is_required) {
                    check_keywords(part, at, {"type", "properties", "required", "additionalProperties"}, Kind::Object);
                } else {
                    check_keywords(part, at, {"type", "properties", "additionalProperties"}, Kind::Object);
                }
                const Json& props = part.at("properties");
                if (!props.is_object()) fail(at, "'properties' must be an object");
                for (const auto& [key, value] : props.items()) {
                    if (!seen.insert(key).second) fail(at, "property '" + key + "' appears in more than one allOf part");
                    properties.push_back({key, {&value, child_pointer(child_pointer(at, "properties"), key)}});
                    if (is_required) required.insert(key);
                }
            } else if (part.contains("enum")) {
                check_keywords(part, at, {"type", "enum"}, Kind::Any);
                const Json& values = part.at("enum");
                if (!values.is_array() || values.empty()) fail(at, "'enum' must be a non-empty array");
                for (const Json& v : values) ++enum_counts[constant_rule(v)];
            } else {
                fail(at, "an allOf part needs 'properties', 'enum' or '$ref'");
            }
        };
        for (size_t i = 0; i < parts.size(); ++i) {
            const Json& part = parts[i];
            const std::string at = child_pointer(pointer, "allOf", i);
            if (part.is_object() && part.contains("anyOf")) {
                check_keywords(part, at, {"anyOf"}, Kind::Any);
                const Json& alts = part.at("anyOf");
                if (!alts.is_array()) fail(at, "'anyOf' must be an array");
                for (size_t j = 0; j < alts.size(); ++j) add_part(alts[j], false, child_pointer(at, "anyOf", j));
            } else {
                add_part(part, true, at);
            }
        }
        if (!enum_counts.empty()) {
            if (!properties.empty()) fail(pointer, "'allOf' mixes enums and object properties");
            std::vector<std::string> common;
            for (const auto& [value, count] : enum_counts) {
                if (count == parts.size()) common.push_back(value);
            }
            if (common.empty()) fail(pointer, "the enums of 'allOf' have no value in common");
            return add_rule(rule_name, "(" + join(common, " | ") + ")");
        }
        return add_rule(rule_name, object_rule(properties, required, name, std::nullopt, false));
    }

    // ------------------------------------------------------------ arrays, strings, integers

    std::string array_schema(const Json& schema, const std::string& name, const std::string& rule_name,
                             const std::string& pointer) {
        const std::string prefix = name + (name.empty() ? "" : "-");
        if (schema.contains("items") && schema.contains("prefixItems")) {
            fail(pointer, "unsupported keyword 'prefixItems' (together with 'items')");
        }
        const char* key = schema.contains("items") ? "items" : "prefixItems";
        const Json& items = schema.at(key);
        if (items.is_array()) {
            check_keywords(schema, pointer, {"type", key}, Kind::Array);
            std::string rule = "\"[\" space ";
            for (size_t i = 0; i < items.size(); ++i) {
                if (i > 0) rule += " \",\" space ";
                rule += visit(items[i], prefix + "tuple-" + std::to_string(i), child_pointer(pointer, key, i));
            }
            rule += " space \"]\"";
            return add_rule(rule_name, rule);
        }
        // A single prefixItems schema (not JSON Schema, but llama.cpp reads it) is every item's schema.
        check_keywords(schema, pointer, {"type", key, "minItems", "maxItems"}, Kind::Array);
        const std::string item_rule = visit(items, prefix + "item", child_pointer(pointer, key));
        const int min = schema.contains("minItems") ? count_keyword(schema, "minItems", pointer) : 0;
        const int max = schema.contains("maxItems") ? count_keyword(schema, "maxItems", pointer) : kNoMaxCount;
        if (min > max) fail(pointer, "'minItems' is greater than 'maxItems'");
        return add_rule(rule_name, "\"[\" space " + gbnf_repetition(item_rule, min, max, "\",\" space") + " space \"]\"");
    }

    std::string string_length(const Json& schema, const std::string& rule_name, const std::string& pointer) {
        const std::string char_rule = add_fixed("char", "char");
        const int min = schema.contains("minLength") ? count_keyword(schema, "minLength", pointer) : 0;
        const int max = schema.contains("maxLength") ? count_keyword(schema, "maxLength", pointer) : kNoMaxCount;
        if (min > max) fail(pointer, "'minLength' is greater than 'maxLength'");
        return add_rule(rule_name, "\"\\\"\" " + gbnf_repetition(char_rule, min, max, "") + " \"\\\"\"");
    }

    std::string integer_range(const Json& schema, const std::string& rule_name, const std::string& pointer) {
        if (schema.contains("minimum") && schema.contains("exclusiveMinimum")) {
            fail(pointer, "unsupported keyword 'exclusiveMinimum' (together with 'minimum')");
        }
        if (schema.contains("maximum") && schema.contains("exclusiveMaximum")) {
            fail(pointer, "unsupported keyword 'exclusiveMaximum' (together with 'maximum')");
        }
        constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
        constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
        std::optional<int64_t> lo;
        std::optional<int64_t> hi;
        if (schema.contains("minimum")) lo = integer_keyword(schema, "minimum", pointer);
        if (schema.contains("exclusiveMinimum")) {
            const int64_t v = integer_keyword(schema, "exclusiveMinimum", pointer);
            if (v == kMax) fail(pointer, "'exclusiveMinimum' is out of range");
            lo = v + 1;
        }
        if (schema.contains("maximum")) hi = integer_keyword(schema, "maximum", pointer);
        if (schema.contains("exclusiveMaximum")) {
            const int64_t v = integer_keyword(schema, "exclusiveMaximum", pointer);
            if (v == kMin) fail(pointer, "'exclusiveMaximum' is out of range");
            hi = v - 1;
        }
        if (lo && hi && *lo > *hi) fail(pointer, "the minimum is greater than the maximum");
        // The open-ended rules allow at most 16 digits (as llama.cpp's do):
        // a bound of more digits would give an invalid repetition.
        const int64_t limit = 999'999'999'999'999;
        if ((lo && (*lo > limit || *lo < -limit)) || (hi && (*hi > limit || *hi < -limit))) {
            fail(pointer, "integer bounds of more than 15 digits are not supported");
        }
        return add_rule(rule_name, "(" + gbnf_integer_range(lo, hi) + ")");
    }

    std::string pattern_rule(const Json& pattern, const std::string& rule_name, const std::string& pointer) {
        if (!pattern.is_string()) fail(pointer, "'pattern' must be a string");
        const std::string p = pattern.get<std::string>();
        try {
            return pattern_to_gbnf(p, rule_name,
                                   [this](const std::string& n, const std::string& body) { return add_rule(n, body); });
        } catch (const PatternError& e) {
            fail(pointer, "pattern " + Json(p).dump() + " is not supported: " + e.what());
        }
    }
};

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema_json) {
    Json schema;
    try {
        schema = Json::parse(schema_json.begin(), schema_json.end());
    } catch (const Json::parse_error& e) {
        throw Error("json schema: invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
    }
    return Converter(schema).run();
}

std::string json_object_grammar() { return json_schema_to_gbnf("{}"); }

}  // namespace smolinfer::grammar
