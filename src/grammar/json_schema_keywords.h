// Which JSON-schema keywords the converter may leave unenforced: annotations,
// and keywords about another kind of value than the one a rule produces
// (e.g. maxLength on a number: JSON Schema applies it to strings only).
// Anything else a conversion step does not honour is an error.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace smolinfer::grammar {

// The kind of JSON value a grammar rule produces (Any: it may produce several).
enum class Kind { Any, String, Number, Boolean, Null, Array, Object };

// The kind a type name ("integer" is a Number) stands for.
Kind kind_of_type(std::string_view type);

// Throws smolinfer::Error "json schema: unsupported keyword 'K' at POINTER"
// for the first keyword of `schema` that is not honoured, not an annotation
// and not vacuous for values of kind `produced`.
void check_keywords(const nlohmann::ordered_json& schema, const std::string& pointer,
                    std::initializer_list<std::string_view> honoured, Kind produced);

}  // namespace smolinfer::grammar
