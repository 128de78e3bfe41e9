// The JSON-schema converter's internals (json_schema_to_gbnf.h is its
// interface), shared by its source files: one per part of the schema
// language -- dispatch (json_schema_to_gbnf.cpp), $ref (json_schema_refs.cpp),
// objects (json_schema_objects.cpp), arrays, strings and integers
// (json_schema_values.cpp). Rule names and bodies follow llama.cpp's
// converter so that the grammar text is the same.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_gbnf_rules.h"
#include "grammar/json_schema_keywords.h"

namespace smolinfer::grammar::detail {

// Keeps the schema's key order: properties become rules in that order.
using Json = nlohmann::ordered_json;

// Throws smolinfer::Error "json schema: <what> at <pointer>" ("/" for the root).
[[noreturn]] void fail(const std::string& pointer, const std::string& what);

// JSON pointer of a child: '~' and '/' in the key are escaped (RFC 6901).
std::string child_pointer(const std::string& pointer, const std::string& key);
std::string child_pointer(const std::string& pointer, const std::string& key, size_t index);

// The GBNF literal for exactly this JSON value (compact, keys in order).
std::string constant_rule(const Json& value);

// Rule names hold letters, digits and '-': every run of other bytes becomes one '-'.
std::string rule_name_from(const std::string& text);

std::string join(const std::vector<std::string>& parts, const std::string& separator);

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

    // The grammar: every rule, sorted by name, one per line.
    std::string run();
    // The same with the schema's own rule called `name` (nested rules are
    // named after it), for grammars that embed several schemas; `top` gets
    // the rule that matches the schema (a fixed rule like "string" when
    // the schema is only a type).
    std::string run(const std::string& name, std::string* top = nullptr);

private:
    const Json& root_;
    // Sorted by name: the grammar lists its rules in this order.
    std::map<std::string, std::string> rules_;
    std::unordered_set<std::string> refs_in_progress_;
    int depth_ = 0;

    // Adds a rule under `name` (made a valid rule name); an existing rule of
    // that name with another body makes it name0, name1, ...
    std::string add_rule(const std::string& name, const std::string& body);

    // A fixed rule's body under `name`, plus the fixed rules it refers to.
    std::string add_fixed(const std::string& name, std::string_view fixed_name);

    // The rule for `schema` at JSON pointer `pointer`, named after `name`
    // ("" for the root): the branch llama.cpp's converter would take, after
    // checking that the branch enforces every keyword that matters.
    std::string visit(const Json& schema, const std::string& name, const std::string& pointer);

    std::string visit_object(const Json& schema, const std::string& name, const std::string& pointer);

    // "uuid" and "uuid1".."uuid5".
    static bool is_uuid_format(const std::string& format);

    // A single type name JSON Schema knows.
    static void check_type(const Json& type, const std::string& pointer);

    // Alternatives named <name>-0, <name>-1, ... ("alternative-<i>" at the root).
    std::string union_rule(const std::string& name, const std::vector<SchemaAt>& alternatives);

    std::string enum_rule(const Json& schema, const std::string& pointer);

    // $ref (json_schema_refs.cpp)

    // The schema a local reference "#/a/b" points to (JSON pointer tokens,
    // ~0 and ~1 unescaped), or an error naming the reference.
    const Json& ref_target(const Json& ref, const std::string& pointer, std::string* target_pointer);

    // The rule for a local reference, "ref-..." after its pointer; visited once.
    std::string resolve_ref(const Json& ref, const std::string& pointer);

    // Whether each alternative certainly produces values of JSON type `type`
    // (following local $refs; unknown counts as no).
    bool all_alternatives_are(const Json& alternatives, const std::string& type);

    // The kind of value a schema's rule certainly produces, Any if unsure.
    Kind produced_kind(const Json& schema, int depth);

    // Objects (json_schema_objects.cpp)

    // properties / required / additionalProperties.
    std::string object_schema(const Json& schema, const std::string& name, const std::string& rule_name,
                              const std::string& pointer);

    // A JSON string that is none of `names` (the keys an additional
    // property may not take): a trie of the names, by bytes.
    std::string string_not_in(const std::vector<std::string>& names);

    // Required properties in order, then the optional ones (and additional
    // ones, "*") each optional, in order, with the commas right.
    std::string object_rule(const std::vector<Property>& properties, const std::unordered_set<std::string>& required,
                            const std::string& name, const std::optional<SchemaAt>& additional, bool any_additional);

    // allOf: the properties of every part (required unless the part is an
    // anyOf list), or the values common to every part's enum.
    std::string all_of(const Json& schema, const std::string& name, const std::string& rule_name,
                       const std::string& pointer);

    // Arrays, strings, integers (json_schema_values.cpp)

    // items (minItems, maxItems) or a tuple (items or prefixItems as a list).
    std::string array_schema(const Json& schema, const std::string& name, const std::string& rule_name,
                             const std::string& pointer);

    // A string of minLength..maxLength characters.
    std::string string_length(const Json& schema, const std::string& rule_name, const std::string& pointer);

    // An integer within minimum / maximum (or their exclusive forms).
    std::string integer_range(const Json& schema, const std::string& rule_name, const std::string& pointer);

    // A string matching a regular expression (json_schema_pattern.h).
    std::string pattern_rule(const Json& pattern, const std::string& rule_name, const std::string& pointer);
};

}  // namespace smolinfer::grammar::detail
