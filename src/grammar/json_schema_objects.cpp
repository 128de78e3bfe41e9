#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/json_schema_converter.h"

namespace smolinfer::grammar::detail {

std::string Converter::object_schema(const Json& schema, const std::string& name, const std::string& rule_name,
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

std::string Converter::string_not_in(const std::vector<std::string>& names) {
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

std::string Converter::object_rule(const std::vector<Property>& properties, const std::unordered_set<std::string>& required,
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

std::string Converter::all_of(const Json& schema, const std::string& name, const std::string& rule_name,
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

}  // namespace smolinfer::grammar::detail
