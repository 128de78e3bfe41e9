#include "smolinfer/tools.h"

#include <set>

#include "grammar/json_schema_to_gbnf.h"
#include "text/tool_output.h"

namespace smolinfer {

namespace {

bool is_function_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

}  // namespace

ToolOutput parse_tool_output(const ToolSyntax& syntax, const std::vector<std::string>& names, bool parallel,
                             std::string_view text) {
    return text::read_tool_output(syntax, names, parallel, text);
}

ToolPlan plan_tools(const ToolSyntax& syntax, const ToolRequest& request) {
    ToolPlan plan;
    if (request.tools.empty() || request.choice == ToolChoice::None || syntax.kind != ToolSyntax::Kind::Json) return plan;
    plan.parse = true;
    plan.parallel = request.parallel.value_or(syntax.parallel);
    for (const Tool& t : request.tools) {
        if (request.choice != ToolChoice::Named || t.name == request.function) plan.names.push_back(t.name);
    }
    plan.grammar = tool_call_grammar(syntax, request, plan.parallel);
    return plan;
}

void check_tools(const std::vector<Tool>& tools) {
    std::set<std::string> seen;
    for (const Tool& t : tools) {
        if (!is_function_name(t.name)) {
            throw Error("tool '" + t.name + "': a function name must be 1-64 letters, digits, '_' or '-'");
        }
        if (!seen.insert(t.name).second) throw Error("tool '" + t.name + "' is defined twice");
        try {
            (void)grammar::json_schema_to_gbnf(t.parameters.empty() ? "{}" : t.parameters);
        } catch (const Error& e) {
            throw Error("tool '" + t.name + "': its parameters cannot be enforced: " + e.what());
        }
    }
}

}  // namespace smolinfer
