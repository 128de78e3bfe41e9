// The parsed template: statements holding expressions. One node type each,
// with a kind; which fields a kind uses is said next to it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace smolinfer::text::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,  // literal
        Name,     // name
        List,     // args: items
        Dict,     // args: key, value, key, value, ...
        Member,   // args[0].name
        Index,    // args[0][args[1]]
        Slice,    // args[0][args[1]:args[2]:args[3]], absent parts null
        Call,     // args[0](args[1..], kwargs)
        Filter,   // args[0] | name(args[1..], kwargs)
        Test,     // args[0] is [not] name(args[1..])
        Unary,    // name args[0]: "not", "-", "+"
        Binary,   // args[0] name args[1]: arithmetic, comparison, "and", "or", "in", "not in", "~"
        Ternary,  // args[1] if args[0] else args[2] (null: undefined)
    };
    Kind kind;
    size_t offset = 0;
    std::string name;
    Value literal;
    bool negated = false;
    int height = 1;  // of this subtree: the parser bounds it, so evaluating recurses boundedly
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    enum class Kind {
        Text,      // text
        Output,    // {{ expr }}
        If,        // branches: (condition, body); a null condition is the else
        For,       // for targets in expr [if cond]: body [else: else_body]
        Set,       // set targets[0][.attr] = expr, or with a null expr: = rendered body
        Macro,     // macro text(targets...) with defaults (null: none): body
        Break,
        Continue,
    };
    Kind kind;
    size_t offset = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr cond;
    std::vector<std::string> targets;
    std::string attr;
    Body body, else_body;
    std::vector<std::pair<ExprPtr, Body>> branches;
    std::vector<ExprPtr> defaults;  // Macro: one per parameter
};

}  // namespace smolinfer::text::jinja
