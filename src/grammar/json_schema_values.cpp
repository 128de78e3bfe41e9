#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "grammar/gbnf_integer_range.h"
#include "grammar/gbnf_repetition.h"
#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_pattern.h"

namespace smolinfer::grammar::detail {

namespace {

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

}  // namespace

std::string Converter::array_schema(const Json& schema, const std::string& name, const std::string& rule_name,
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

std::string Converter::string_length(const Json& schema, const std::string& rule_name, const std::string& pointer) {
    const std::string char_rule = add_fixed("char", "char");
    const int min = schema.contains("minLength") ? count_keyword(schema, "minLength", pointer) : 0;
    const int max = schema.contains("maxLength") ? count_keyword(schema, "maxLength", pointer) : kNoMaxCount;
    if (min > max) fail(pointer, "'minLength' is greater than 'maxLength'");
    return add_rule(rule_name, "\"\\\"\" " + gbnf_repetition(char_rule, min, max, "") + " \"\\\"\"");
}

std::string Converter::integer_range(const Json& schema, const std::string& rule_name, const std::string& pointer) {
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

std::string Converter::pattern_rule(const Json& pattern, const std::string& rule_name, const std::string& pointer) {
    if (!pattern.is_string()) fail(pointer, "'pattern' must be a string");
    const std::string p = pattern.get<std::string>();
    try {
        return pattern_to_gbnf(p, rule_name,
                               [this](const std::string& n, const std::string& body) { return add_rule(n, body); });
    } catch (const PatternError& e) {
        fail(pointer, "pattern " + Json(p).dump() + " is not supported: " + e.what());
    }
}

}  // namespace smolinfer::grammar::detail
