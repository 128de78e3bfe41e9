// ChatTemplate::analyse: how a template writes tool calls, found the way
// llama.cpp's auto-analyser (common/chat-diff-analyzer.cpp) finds it: render
// an assistant turn with text and the same turn with a probe call, take
// what differs, and read the call's JSON shape and markers from it.
#include <nlohmann/json.hpp>

#include "smolinfer/error.h"
#include "text/chat_template.h"

namespace smolinfer::text {

namespace {

// llama.cpp's probe names: unlikely to occur in any template.
constexpr const char* kFirstFunction = "FFF_FIRST_FUN_F";
constexpr const char* kSecondFunction = "SSS_SECOND_FUN_S";
constexpr const char* kFirstArg = "AA_ARG_FST_AA";
constexpr const char* kSecondArg = "BB_ARG_SND_BB";

ChatTool probe_tool(const char* name) {
    const std::string params = std::string(R"({"type": "object", "properties": {")") + kFirstArg +
                               R"(": {"type": "string", "description": "First argument"}, ")" + kSecondArg +
                               R"(": {"type": "string", "description": "Second argument"}}, "required": [")" +
                               kFirstArg + R"("]})";
    return {name, "Test function", params};
}

ChatToolCall probe_call(const char* name, const char* id) {
    return {id, name, std::string("{\"") + kFirstArg + "\": \"XXXX\", \"" + kSecondArg + "\": \"YYYY\"}"};
}

std::string concat(const std::vector<PromptPiece>& pieces) {
    std::string out;
    for (const PromptPiece& p : pieces) out += p.text;
    return out;
}

// The part of `b` that differs from `a` once their common prefix and suffix are removed.
std::string difference(const std::string& a, const std::string& b) {
    size_t pre = 0;
    while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
    size_t suf = 0;
    while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
    return b.substr(pre, b.size() - pre - suf);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string trim_leading(std::string s) {
    size_t i = 0;
    while (i < s.size() && is_space(s[i])) ++i;
    return s.substr(i);
}

std::string trim(std::string s) {
    s = trim_leading(std::move(s));
    while (!s.empty() && is_space(s.back())) s.pop_back();
    return s;
}

// Whether `"name"` occurs right after a '{' or ':' (spaces between): the
// function name is a JSON value, not a tag.
bool name_is_json_value(const std::string& text, const std::string& name) {
    const std::string quoted = "\"" + name + "\"";
    for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
        size_t k = at;
        while (k > 0 && is_space(text[k - 1])) --k;
        if (k > 0 && (text[k - 1] == '{' || text[k - 1] == ':')) return true;
    }
    return false;
}

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

}  // namespace

ToolSyntax ChatTemplate::analyse(const jinja::Template& program, std::string_view source) const {
    using Kind = ToolSyntax::Kind;
    const std::vector<ChatTool> tools = {probe_tool(kFirstFunction), probe_tool(kSecondFunction)};
    const ChatMessage user{"user", "U_USER_MSG Hello END_U", {}, {}, {}};
    const ChatMessage text_turn{"assistant", "A_ASST_MSG I can help END_A", {}, {}, {}};
    const ChatMessage call_turn{"assistant", "", {probe_call(kFirstFunction, "call00001")}, {}, {}};
    const ChatMessage two_calls{"assistant", "",
                                {probe_call(kFirstFunction, "call00001"), probe_call(kSecondFunction, "call00002")},
                                {},
                                {}};
    // Probe renders treat arguments as objects, as llama.cpp's do.
    ToolSyntax as_json;
    as_json.kind = Kind::Json;
    const auto render = [&](const ChatMessage& turn) -> std::optional<std::string> {
        try {
            return concat(run(program, as_json, {user, turn}, false, 0, tools));
        } catch (const Error&) {
            return std::nullopt;
        }
    };
    const auto with_text = render(text_turn);
    const auto with_call = render(call_turn);
    ToolSyntax s;
    if (!with_text || !with_call || with_call->find(kFirstFunction) == std::string::npos) return s;  // None

    s.kind = Kind::Unsupported;
    const std::string call = difference(*with_text, *with_call);
    if (!name_is_json_value(call, kFirstFunction)) return s;
    const size_t open = call.find('{'), close = call.rfind('}');
    if (open == std::string::npos || close == std::string::npos || close < open) return s;
    nlohmann::ordered_json object;
    try {
        object = nlohmann::ordered_json::parse(call.substr(open, close - open + 1));
    } catch (const nlohmann::ordered_json::parse_error&) {
        return s;  // e.g. several objects, or a list of calls
    }
    if (!object.is_object()) return s;
    std::string name_key, args_key;
    for (const auto& [key, value] : object.items()) {
        if (value == kFirstFunction) {
            name_key = key;
        } else if (value.dump().find(kFirstArg) != std::string::npos) {
            args_key = key;
        } else {
            return s;  // ids, nested OpenAI wrappers, ...: not a syntax smolinfer parses
        }
    }
    if (name_key.empty() || args_key.empty()) return s;

    s.call_start = trim_leading(call.substr(0, open));
    s.call_end = trim(call.substr(close + 1));
    s.name_key = name_key;
    s.args_key = args_key;
    if (const auto both = render(two_calls)) {
        // Markers around each call; a single section around all of them is another syntax.
        const std::string calls = difference(*with_text, *both);
        if (!s.call_start.empty() && count(calls, s.call_start) < 2) return s;
        s.parallel = calls.find(kSecondFunction) != std::string::npos;
    }
    // llama.cpp's workaround for Llama 3.x's instruction text (chat-diff-analyzer.cpp).
    s.type_field = source.find("Respond in the format {\"name\": function name") != std::string_view::npos &&
                   source.find("Do not use variables.") != std::string_view::npos;
    s.kind = Kind::Json;
    return s;
}

}  // namespace smolinfer::text
