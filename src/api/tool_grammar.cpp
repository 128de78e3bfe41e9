// The grammar a request's tool_choice forces on the output: llama.cpp's
// tool-call grammar (common/chat-auto-parser-generator.cpp) for the
// template's syntax, with each function's arguments constrained by its
// schema through the JSON-schema converter (rules "tool-<name>-schema").
#include <map>
#include <sstream>

#include "grammar/json_schema_to_gbnf.h"
#include "smolinfer/tools.h"

namespace smolinfer {

namespace {

std::string rule_name(const std::string& text) {
    std::string out;
    bool run = false;
    for (char c : text) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        if (ok) {
            out += c;
            run = false;
        } else if (!run) {
            out += '-';
            run = true;
        }
    }
    return out;
}

std::string literal(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string class_char(char c) {
    switch (c) {
        case '\n': return "\\n";
        case '\r': return "\\r";
        case '\t': return "\\t";
        case ']': case '[': case '\\': case '^': case '-': return std::string("\\") + c;
        default: return std::string(1, c);
    }
}

// Rules `prefix-<state>` for "any text that does not contain `delim`": one
// state per matched prefix of delim (its KMP automaton), as llama.cpp's
// until-N rules.
void add_until(std::map<std::string, std::string>& rules, const std::string& prefix, const std::string& delim) {
    const size_t n = delim.size();
    std::vector<size_t> fail(n + 1, 0);
    for (size_t i = 1, k = 0; i < n; ++i) {
        while (k > 0 && delim[i] != delim[k]) k = fail[k];
        if (delim[i] == delim[k]) ++k;
        fail[i + 1] = k;
    }
    std::string chars;
    for (char c : delim) {
        if (chars.find(c) == std::string::npos) chars += c;
    }
    const auto step = [&](size_t state, char c) {
        while (state > 0 && delim[state] != c) state = fail[state];
        return delim[state] == c ? state + 1 : 0;
    };
    std::string others;
    for (char c : chars) others += class_char(c);
    for (size_t state = 0; state < n; ++state) {
        std::string body;
        for (char c : chars) {
            const size_t next = step(state, c);
            if (next == n) continue;  // would complete the delimiter
            body += " | [" + class_char(c) + "] " + prefix + "-" + std::to_string(next);
        }
        body += " | [^" + others + "] " + prefix + "-0";
        rules[prefix + "-" + std::to_string(state)] = body;
    }
}

void add_rules(std::map<std::string, std::string>& rules, const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const size_t at = line.find(" ::= ");
        if (at == std::string::npos) continue;
        rules[line.substr(0, at)] = line.substr(at + 5);
    }
}

}  // namespace

std::optional<ToolGrammar> tool_call_grammar(const ToolSyntax& syntax, const ToolRequest& request, bool parallel) {
    const bool named = request.choice == ToolChoice::Named;
    const bool lazy = request.choice == ToolChoice::Auto;
    if (syntax.kind != ToolSyntax::Kind::Json || request.tools.empty() || request.choice == ToolChoice::None ||
        (lazy && syntax.call_start.empty())) {
        return std::nullopt;
    }
    std::map<std::string, std::string> rules;
    std::vector<std::string> alternatives;
    for (const Tool& t : request.tools) {
        if (named && t.name != request.function) continue;
        const std::string rule = "tool-" + rule_name(t.name);
        std::string top;
        add_rules(rules, grammar::json_schema_rules(t.parameters.empty() ? "{}" : t.parameters, rule + "-schema", &top));
        std::string body = "\"{\" space ";
        if (syntax.type_field) body += "(\"\\\"type\\\"\" space \":\" space \"\\\"function\\\"\" space \",\" space)? ";
        body += literal("\"" + syntax.name_key + "\"") + " space \":\" space (\"\\\"\" " + literal(t.name) +
                " \"\\\"\") space \",\" space " + literal("\"" + syntax.args_key + "\"") + " space \":\" space " + top +
                " space \"}\"";
        rules[rule] = body;
        alternatives.push_back(rule);
    }
    if (alternatives.empty()) throw Error("tool_choice names '" + request.function + "', which is not a tool");
    std::string one = alternatives.size() == 1 ? alternatives[0] : "(";
    if (alternatives.size() > 1) {
        for (size_t i = 0; i < alternatives.size(); ++i) one += (i ? " | " : "") + alternatives[i];
        one += ")";
    }
    // A named function is called once; required calls repeat as the template allows.
    const bool list = parallel && !named;
    const std::string calls = one + (list ? " (space \",\" space " + one + ")*" : "");
    rules["tool-call"] = literal(syntax.call_start) + " space " + calls + " space " + literal(syntax.call_end);
    if (named) {
        rules["root"] = "tool-call space";
    } else if (lazy) {
        rules["root"] = "tool-calls";
        rules["tool-calls"] = "(tool-call space)+";
    } else if (syntax.call_start.empty()) {
        // Llama 3.x: free text before the call, as llama-server allows (it cannot hold a '{').
        rules["root"] = "until-0 tool-call space";
        add_until(rules, "until", "{");
    } else {
        rules["root"] = "until-0 tool-calls";
        rules["tool-calls"] = "(tool-call space)+";
        add_until(rules, "until", syntax.call_start);
    }
    ToolGrammar out;
    for (const auto& [name, body] : rules) out.gbnf += name + " ::= " + body + "\n";
    if (lazy) out.triggers = {syntax.call_start};
    return out;
}

}  // namespace smolinfer
