#include "grammar/json_gbnf_rules.h"

#include <array>

namespace smolinfer::grammar {
namespace {

const std::array<FixedRule, 18>& fixed_rules() {
    static const std::array<FixedRule, 18> rules = {{
        {"boolean", R"(("true" | "false"))", {}},
        {"decimal-part", R"([0-9]{1,16})", {}},
        {"integral-part", R"([0] | [1-9] [0-9]{0,15})", {}},
        {"number", R"(("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?)",
         {"integral-part", "decimal-part"}},
        {"integer", R"(("-"? integral-part))", {"integral-part"}},
        {"value", R"(object | array | string | number | boolean | null)",
         {"object", "array", "string", "number", "boolean", "null"}},
        {"object", R"("{" space ( string ":" space value ("," space string ":" space value)* )? space "}")",
         {"string", "value"}},
        {"array", R"("[" space ( value ("," space value)* )? space "]")", {"value"}},
        {"uuid",
         R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"")",
         {}},
        {"char", R"([^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4}))", {}},
        {"string", R"("\"" char* "\"")", {"char"}},
        {"null", R"("null")", {}},
        {"date", R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] ))", {}},
        {"time",
         R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
         {}},
        {"date-time", R"(date "T" time)", {"date", "time"}},
        {"date-string", R"("\"" date "\"")", {"date"}},
        {"time-string", R"("\"" time "\"")", {"time"}},
        {"date-time-string", R"("\"" date-time "\"")", {"date-time"}},
    }};
    return rules;
}

}  // namespace

const FixedRule* find_fixed_rule(std::string_view name) {
    for (const FixedRule& rule : fixed_rules()) {
        if (rule.name == name) return &rule;
    }
    return nullptr;
}

bool is_reserved_rule_name(std::string_view name) {
    return name == "root" || find_fixed_rule(name) != nullptr;
}

}  // namespace smolinfer::grammar
