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
