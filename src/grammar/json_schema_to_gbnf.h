// JSON Schema -> GBNF grammar text, for the subset llama.cpp's converter
// (common/json-schema-to-grammar.cpp) supports, producing the same grammar
// text it does for the same schema: rule names, rule order and rule bodies.
//
// Supported: type (string, number, integer, boolean, null, object, array, or
// a list of them), properties (in the schema's order), required,
// additionalProperties, enum, const, items, prefixItems, minItems, maxItems,
// minLength, maxLength, pattern (anchored ^...$ regular expressions),
// format date / time / date-time / uuid, integer minimum / maximum /
// exclusiveMinimum / exclusiveMaximum, anyOf, oneOf (as anyOf), allOf of
// objects and enums, and local $ref into $defs / definitions. Annotations
// (title, description, default, examples, $schema, $id, $comment, ...) are
// ignored.
//
// Where llama.cpp would silently ignore a keyword (so the output could break
// the schema) we refuse instead: every error is a smolinfer::Error naming the
// keyword and the JSON pointer of the schema it sits in, e.g.
//   json schema: unsupported keyword 'not' at /properties/a
// Invalid JSON is an error naming the byte offset.
#pragma once

#include <string>
#include <string_view>

namespace smolinfer::grammar {

// The GBNF grammar (root rule "root") whose sentences are the JSON texts the
// schema accepts (with llama.cpp's whitespace rule between tokens).
std::string json_schema_to_gbnf(std::string_view schema_json);

// The rules of the same grammar with the schema's own rule named `name`
// instead of "root" (llama.cpp's add_schema(name, schema), as its tool-call
// grammars use it: "tool-<function>-schema"); `top` gets the rule that
// matches the schema (a fixed rule such as "string" for a bare type).
std::string json_schema_rules(std::string_view schema_json, const std::string& name, std::string* top);

// Any JSON object: what OpenAI's response_format {type: "json_object"} asks
// for. The same text llama.cpp's server uses for it (the schema {}).
std::string json_object_grammar();

}  // namespace smolinfer::grammar
