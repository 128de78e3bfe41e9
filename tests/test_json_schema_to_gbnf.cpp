// JSON schema -> GBNF against llama.cpp's own converter: for every schema
// in tests/golden/json_schema/ our grammar text equals the one llama.cpp's
// common/json-schema-to-grammar.cpp writes (<name>.gbnf, recorded by
// scripts/make-json-schema-golden). Plus hand-written cases and the errors
// for what we refuse (where llama.cpp would silently not enforce a keyword).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/json_schema_to_gbnf.h"
#include "smolinfer/error.h"
#include "support/paths.h"
#include "support/files.h"

namespace smolinfer {
namespace {

using grammar::json_object_grammar;
using grammar::json_schema_to_gbnf;


std::vector<std::string> golden_schema_names() {
    std::vector<std::string> names;
    const std::string suffix = ".schema.json";
    for (const auto& entry : std::filesystem::directory_iterator(test::golden_path("json_schema"))) {
        const std::string file = entry.path().filename().string();
        if (file.size() > suffix.size() && file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0) {
            names.push_back(file.substr(0, file.size() - suffix.size()));
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

const std::string kSpace = "space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n";

TEST(JsonSchemaToGbnf, SameGrammarTextAsLlamaCppForEveryGoldenSchema) {
    const auto names = golden_schema_names();
    ASSERT_GE(names.size(), 20u);
    const std::filesystem::path dir = test::golden_path("json_schema");
    for (const std::string& name : names) {
        SCOPED_TRACE(name);
        const std::string schema = test::read_file(dir / (name + ".schema.json"));
        const std::string expected = test::read_file(dir / (name + ".gbnf"));
        std::string ours;
        ASSERT_NO_THROW(ours = json_schema_to_gbnf(schema));
        EXPECT_EQ(ours, expected);
    }
}

TEST(JsonSchemaToGbnf, JsonObjectGrammarIsLlamaCppsForResponseFormatJsonObject) {
    // llama.cpp's server turns response_format {type: "json_object"} into the schema {}.
    EXPECT_EQ(json_object_grammar(), test::read_file(std::filesystem::path(test::golden_path("json_schema")) / "json_object.gbnf"));
}

// Hand-computed: what each rule must be, independent of any golden file.
TEST(JsonSchemaToGbnf, HandComputedSmallSchemas) {
    EXPECT_EQ(json_schema_to_gbnf(R"({"type": "boolean"})"), "root ::= (\"true\" | \"false\")\n" + kSpace);
    EXPECT_EQ(json_schema_to_gbnf(R"({"const": {"a": [1, "x"]}})"),
              "root ::= \"{\\\"a\\\":[1,\\\"x\\\"]}\"\n" + kSpace);
    EXPECT_EQ(json_schema_to_gbnf(R"({"enum": ["a", 2, null], "description": "ignored"})"),
              "root ::= (\"\\\"a\\\"\" | \"2\" | \"null\")\n" + kSpace);
    EXPECT_EQ(json_schema_to_gbnf(R"({"type": "integer", "minimum": 3, "maximum": 7})"),
              "root ::= ([3-7])\n" + kSpace);
    EXPECT_EQ(json_schema_to_gbnf(R"({"type": "integer", "minimum": 5, "maximum": 12})"),
              "root ::= ([5-9] | \"1\" [0-2])\n" + kSpace);
    EXPECT_EQ(json_schema_to_gbnf(R"({"type": "array", "items": {"type": "null"}, "minItems": 1, "maxItems": 2})"),
              "null ::= \"null\"\n"
              "root ::= \"[\" space null (\",\" space null)? space \"]\"\n" + kSpace);
    EXPECT_EQ(json_schema_to_gbnf(R"({"type": "object", "properties": {"a": {"type": "null"}}, "required": ["a"]})"),
              "a-kv ::= \"\\\"a\\\"\" space \":\" space null\n"
              "null ::= \"null\"\n"
              "root ::= \"{\" space a-kv space \"}\"\n" + kSpace);
    EXPECT_EQ(json_schema_to_gbnf(R"({"type": "string", "pattern": "^a[bc]{2}$"})"),
              "root ::= \"\\\"\" (\"a\" root-1{2,2}) \"\\\"\"\n"
              "root-1 ::= [bc]\n" + kSpace);
}

// Keywords that only constrain another kind of value are vacuous, as in JSON Schema.
TEST(JsonSchemaToGbnf, KeywordsForOtherValueKindsAreAccepted) {
    EXPECT_NO_THROW(json_schema_to_gbnf(R"({"type": "integer", "maxLength": 3, "pattern": "^x$"})"));
    EXPECT_NO_THROW(json_schema_to_gbnf(R"({"type": ["string", "null"], "maxLength": 3})"));
    EXPECT_NO_THROW(json_schema_to_gbnf(R"({"type": "boolean", "minItems": 1, "properties": {}})"));
}

// "type" beside anyOf is not enforced by the conversion: accepted only where
// every alternative produces that type anyway.
TEST(JsonSchemaToGbnf, TypeBesideAnyOfOnlyWhenEveryAlternativeHasIt) {
    EXPECT_NO_THROW(json_schema_to_gbnf(
        R"({"type": "object", "anyOf": [{"properties": {"a": {}}}, {"$ref": "#/$defs/b"}], "$defs": {"b": {"type": "object"}}})"));
    // Untyped alternatives other than objects and arrays are not certain.
    EXPECT_THROW(json_schema_to_gbnf(R"({"type": "string", "oneOf": [{"type": "string"}, {"format": "date"}]})"), Error);
    EXPECT_THROW(json_schema_to_gbnf(R"({"type": "string", "oneOf": [{"type": "string"}, {"enum": [1]}]})"), Error);
    EXPECT_THROW(json_schema_to_gbnf(R"({"type": "integer", "anyOf": [{"type": "integer"}]})"), Error);
}

struct ErrorCase {
    const char* name;
    const char* schema;
    const char* message;  // the whole error message
};

// ctest lists a case by its name, not by its bytes.
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class JsonSchemaErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(JsonSchemaErrors, OneClearErrorNamingKeywordAndPlace) {
    const ErrorCase& c = GetParam();
    try {
        const std::string grammar = json_schema_to_gbnf(c.schema);
        ADD_FAILURE() << "no error; grammar:\n" << grammar;
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), c.message);
    }
}

const ErrorCase kErrorCases[] = {
    {"invalid_json", R"({"type": "string",})",
     "json schema: invalid JSON at byte 19: [json.exception.parse_error.101] parse error at line 1, column 19: "
     "syntax error while parsing object key - unexpected '}'; expected string literal"},
    {"empty_text", "", "json schema: invalid JSON at byte 1: [json.exception.parse_error.101] parse error at line 1, column 1: "
                       "syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal"},
    {"not", R"({"type": "object", "properties": {"a": {"not": {"type": "string"}}}})",
     "json schema: unsupported keyword 'not' at /properties/a"},
    {"if_then", R"({"if": {"type": "string"}, "then": {"minLength": 1}})", "json schema: unsupported keyword 'if' at /"},
    {"multiple_of", R"({"type": "number", "multipleOf": 5})", "json schema: unsupported keyword 'multipleOf' at /"},
    {"number_minimum", R"({"type": "number", "minimum": 0})", "json schema: unsupported keyword 'minimum' at /"},
    {"unique_items", R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})",
     "json schema: unsupported keyword 'uniqueItems' at /"},
    {"min_items_without_items", R"({"type": "array", "minItems": 1})", "json schema: unsupported keyword 'minItems' at /"},
    {"min_properties", R"({"type": "object", "properties": {"a": {}}, "minProperties": 1})",
     "json schema: unsupported keyword 'minProperties' at /"},
    {"pattern_properties", R"({"type": "object", "patternProperties": {"^x": {}}})",
     "json schema: unsupported keyword 'patternProperties' at /"},
    {"format_email", R"({"type": "object", "properties": {"e": {"type": "string", "format": "email"}}})",
     "json schema: unsupported keyword 'format' (format \"email\") at /properties/e"},
    {"length_with_pattern", R"({"type": "string", "pattern": "^a+$", "maxLength": 3})",
     "json schema: unsupported keyword 'maxLength' at /"},
    {"type_next_to_any_of", R"({"type": "object", "anyOf": [{"type": "null"}]})",
     "json schema: unsupported keyword 'type' at /"},
    {"nested_item_keyword", R"({"type": "array", "items": {"type": "string", "contentEncoding": "base64"}})",
     "json schema: unsupported keyword 'contentEncoding' at /items"},
    {"remote_ref", R"({"$ref": "https://example.com/schema.json#/a"})",
     "json schema: remote $ref 'https://example.com/schema.json#/a' is not supported (only local #/... references) at /"},
    {"root_ref", R"({"properties": {"self": {"$ref": "#"}}})",
     "json schema: $ref '#' is not supported (only local #/... references) at /properties/self"},
    {"missing_ref", R"({"$defs": {"a": {}}, "$ref": "#/$defs/b"})",
     "json schema: $ref '#/$defs/b' does not resolve: no 'b' at /"},
    {"ref_with_sibling", R"({"$defs": {"a": {"type": "integer"}}, "properties": {"x": {"$ref": "#/$defs/a", "maximum": 3}}})",
     "json schema: unsupported keyword 'maximum' at /properties/x"},
    {"error_inside_ref_target", R"({"$defs": {"a": {"type": "string", "format": "hostname"}}, "$ref": "#/$defs/a"})",
     "json schema: unsupported keyword 'format' (format \"hostname\") at /$defs/a"},
    {"boolean_schema", R"({"type": "object", "properties": {"a": true}})",
     "json schema: a schema must be a JSON object (true/false schemas are not supported) at /properties/a"},
    {"unknown_type", R"({"type": "date"})", "json schema: unknown type 'date' at /"},
    {"required_not_declared", R"({"type": "object", "properties": {"a": {}}, "required": ["a", "b"]})",
     "json schema: required property 'b' is not in 'properties' at /"},
    {"min_items_above_max", R"({"type": "array", "items": {}, "minItems": 3, "maxItems": 2})",
     "json schema: 'minItems' is greater than 'maxItems' at /"},
    {"negative_length", R"({"type": "string", "minLength": -1})",
     "json schema: 'minLength' must be a non-negative integer at /"},
    {"fractional_integer_bound", R"({"type": "integer", "minimum": 1.5})",
     "json schema: 'minimum' must be an integer for type 'integer' at /"},
    {"minimum_above_maximum", R"({"type": "integer", "minimum": 5, "maximum": 4})",
     "json schema: the minimum is greater than the maximum at /"},
    {"both_minimums", R"({"type": "integer", "minimum": 1, "exclusiveMinimum": 0})",
     "json schema: unsupported keyword 'exclusiveMinimum' (together with 'minimum') at /"},
    {"empty_enum", R"({"enum": []})", "json schema: 'enum' must be a non-empty array at /"},
    {"disjoint_all_of_enums", R"({"allOf": [{"enum": ["a"]}, {"enum": ["b"]}]})",
     "json schema: the enums of 'allOf' have no value in common at /"},
    {"pattern_lookahead", R"({"type": "string", "pattern": "^(?=a)a$"})",
     "json schema: pattern \"^(?=a)a$\" is not supported: unsupported group syntax (lookaround, named group or flags) at /"},
    {"pattern_unanchored", R"({"properties": {"p": {"type": "string", "pattern": "abc"}}})",
     "json schema: pattern \"abc\" is not supported: not anchored with '^' and '$' at /properties/p"},
    {"pattern_unbalanced", R"({"type": "string", "pattern": "^(ab$"})",
     "json schema: pattern \"^(ab$\" is not supported: unbalanced parentheses at /"},
    {"pattern_class_escape", R"({"type": "string", "pattern": "^[\\d]+$"})",
     "json schema: pattern \"^[\\\\d]+$\" is not supported: unsupported escape in character class: \\d at /"},
    {"prefix_items_and_items", R"({"type": "array", "prefixItems": [{}], "items": false})",
     "json schema: unsupported keyword 'prefixItems' (together with 'items') at /"},
    {"huge_integer_bound", R"({"type": "integer", "minimum": 10000000000000000})",
     "json schema: integer bounds of more than 15 digits are not supported at /"},
};

INSTANTIATE_TEST_SUITE_P(Cases, JsonSchemaErrors, ::testing::ValuesIn(kErrorCases),
                         [](const ::testing::TestParamInfo<ErrorCase>& info) { return std::string(info.param.name); });

TEST(JsonSchemaToGbnf, DeeplyNestedSchemaIsAnErrorNotACrash) {
    std::string schema;
    for (int i = 0; i < 1000; ++i) schema += R"({"type": "array", "items": )";
    schema += "{}";
    for (int i = 0; i < 1000; ++i) schema += "}";
    EXPECT_THROW(json_schema_to_gbnf(schema), Error);
}

TEST(JsonSchemaToGbnf, RecursiveRefsTerminate) {
    const std::string grammar = json_schema_to_gbnf(
        R"({"$defs": {"list": {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/list"}, {"type": "null"}]}}}}, "$ref": "#/$defs/list"})");
    EXPECT_NE(grammar.find("ref-defs-list ::="), std::string::npos) << grammar;
}

}  // namespace
}  // namespace smolinfer
