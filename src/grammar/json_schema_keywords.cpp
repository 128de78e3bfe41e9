#include "grammar/json_schema_keywords.h"

#include <array>
#include <utility>

#include "smolinfer/error.h"

namespace smolinfer::grammar {
namespace {

bool is_annotation(std::string_view key) {
    static constexpr std::array<std::string_view, 12> annotations = {
        "$schema", "$id", "$comment", "$defs", "definitions", "title",
        "description", "default", "examples", "readOnly", "writeOnly", "deprecated"};
    for (const std::string_view a : annotations) {
        if (a == key) return true;
    }
    return false;
}

// The kind of value a type-specific keyword constrains; Any for the others.
Kind constrained_kind(std::string_view key) {
    static constexpr std::array<std::pair<std::string_view, Kind>, 27> table = {{
        {"minLength", Kind::String}, {"maxLength", Kind::String}, {"pattern", Kind::String},
        {"format", Kind::String}, {"contentEncoding", Kind::String}, {"contentMediaType", Kind::String},
        {"minimum", Kind::Number}, {"maximum", Kind::Number}, {"exclusiveMinimum", Kind::Number},
        {"exclusiveMaximum", Kind::Number}, {"multipleOf", Kind::Number},
        {"items", Kind::Array}, {"prefixItems", Kind::Array}, {"additionalItems", Kind::Array},
        {"minItems", Kind::Array}, {"maxItems", Kind::Array}, {"uniqueItems", Kind::Array},
        {"contains", Kind::Array},
        {"properties", Kind::Object}, {"required", Kind::Object}, {"additionalProperties", Kind::Object},
        {"patternProperties", Kind::Object}, {"propertyNames", Kind::Object}, {"minProperties", Kind::Object},
        {"maxProperties", Kind::Object}, {"dependentRequired", Kind::Object}, {"dependencies", Kind::Object},
    }};
    for (const auto& [name, kind] : table) {
        if (name == key) return kind;
    }
    return Kind::Any;
}

}  // namespace

Kind kind_of_type(std::string_view type) {
    if (type == "string") return Kind::String;
    if (type == "number" || type == "integer") return Kind::Number;
    if (type == "boolean") return Kind::Boolean;
    if (type == "null") return Kind::Null;
    if (type == "array") return Kind::Array;
    if (type == "object") return Kind::Object;
    return Kind::Any;
}

void check_keywords(const nlohmann::ordered_json& schema, const std::string& pointer,
                    std::initializer_list<std::string_view> honoured, Kind produced) {
    for (const auto& [key, value] : schema.items()) {
        if (is_annotation(key)) continue;
        bool is_honoured = false;
        for (const std::string_view h : honoured) is_honoured = is_honoured || h == key;
        if (is_honoured) continue;
        const Kind kind = constrained_kind(key);
        if (kind != Kind::Any && produced != Kind::Any && kind != produced) continue;
        std::string what = "unsupported keyword '" + key + "'";
        if (key == "format" && value.is_string()) what += " (format \"" + value.get<std::string>() + "\")";
        throw Error("json schema: " + what + " at " + (pointer.empty() ? "/" : pointer));
    }
}

}  // namespace smolinfer::grammar
