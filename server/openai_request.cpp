#include "openai_request.h"

#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace smolinfer::server {

namespace {

// Ordered: tool schemas reach the chat template in the client's key order.
using ojson = nlohmann::ordered_json;

constexpr int kMaxStopStrings = 4;
constexpr int kMaxTopLogprobs = 20;
constexpr double kLogitBiasRange = 100;
constexpr double kMaxInt32 = 2147483647.0;
constexpr double kMaxSafeInteger = 9007199254740991.0;  // JavaScript's, so that both APIs take the same seeds
// response_format json_object: any JSON object (what the browser API sends too).
constexpr const char* kAnyJsonObject = R"({"type":"object"})";

[[noreturn]] void bad(const std::string& name, const std::string& what) {
    throw BadRequest("'" + name + "' must be " + what, name);
}
// "0" or a decimal without leading zeros, at most 10 digits (as the browser
// API's /^(0|[1-9][0-9]{0,9})$/).
bool is_token_id_key(const std::string& key) {
    if (key.empty() || key.size() > 10) return false;
    if (key[0] == '0') return key.size() == 1;
    for (char c : key) {
        if (c < '0' || c > '9') return false;
    }
    return true;
}

// 1-64 letters, digits, '_' or '-' (OpenAI's rule for a schema's name).
bool is_schema_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

[[noreturn]] void unknown(const std::string& name) { throw BadRequest("unknown field '" + name + "'", name); }

const std::set<std::string>& allowed_fields(Endpoint endpoint) {
    static const std::vector<std::string> common = {
        "model",          "max_tokens", "temperature", "top_p", "seed",  "stop",           "logit_bias",
        "frequency_penalty", "presence_penalty", "response_format", "n", "stream", "stream_options", "top_k",
        "min_p",          "repeat_penalty", "grammar", "user"};
    static const std::set<std::string> chat = [] {
        std::set<std::string> s(common.begin(), common.end());
        s.insert({"messages", "max_completion_tokens", "logprobs", "top_logprobs", "tools", "tool_choice",
                  "parallel_tool_calls"});
        return s;
    }();
    static const std::set<std::string> completion = [] {
        std::set<std::string> s(common.begin(), common.end());
        s.insert({"prompt", "logprobs"});
        return s;
    }();
    return endpoint == Endpoint::Chat ? chat : completion;
}

// One request object's fields; null counts as absent (OpenAI's clients send it so).
class Fields {
public:
    explicit Fields(const ojson& o) : o_(o) {}

    const ojson* get(const std::string& name) const {
        auto it = o_.find(name);
        if (it == o_.end() || it->is_null()) return nullptr;
        return &*it;
    }

    std::optional<double> number(const std::string& name, double lo, double hi, bool integer = false,
                                 std::optional<std::string> what = std::nullopt) const {
        const ojson* v = get(name);
        if (!v) return std::nullopt;
        const auto describe = [&] {
            return what ? *what : std::string(integer ? "an integer" : "a number") + " in [" + format(lo) + ", " + format(hi) + "]";
        };
        if (!v->is_number()) bad(name, describe());
        const double d = v->get<double>();
        if (!std::isfinite(d) || d < lo || d > hi || (integer && std::floor(d) != d)) bad(name, describe());
        return d;
    }

    std::optional<bool> boolean(const std::string& name) const {
        const ojson* v = get(name);
        if (!v) return std::nullopt;
        if (!v->is_boolean()) bad(name, "a boolean");
        return v->get<bool>();
    }

    std::optional<std::string> string(const std::string& name) const {
        const ojson* v = get(name);
        if (!v) return std::nullopt;
        if (!v->is_string()) bad(name, "a string");
        return v->get<std::string>();
    }

private:
    static std::string format(double d) {
        if (std::floor(d) == d && std::fabs(d) < 1e16) return std::to_string(static_cast<long long>(d));
        std::string s = std::to_string(d);
        while (s.size() > 1 && s.back() == '0') s.pop_back();
        return s;
    }
    const ojson& o_;
};

// A message's content as text: a string, text parts (joined), or for an
// assistant turn that calls tools, nothing.
std::string content_text(const ojson& m, const std::string& name, bool may_be_absent) {
    const ojson content = m.value("content", ojson());
    if (content.is_string()) return content.get<std::string>();
    if (content.is_null() && may_be_absent) return {};
    if (!content.is_array()) {
        bad(name + ".content", may_be_absent ? "a string, an array of text parts or null"
                                             : "a string or an array of text parts");
    }
    std::string text;
    for (size_t k = 0; k < content.size(); ++k) {
        const ojson& p = content[k];
        if (!p.is_object() || p.size() != 2 || p.value("type", ojson()) != "text" || !p.contains("text") ||
            !p["text"].is_string()) {
            bad(name + ".content[" + std::to_string(k) + "]", R"({ type: "text", text: string } (only text is supported))");
        }
        text += p["text"].get<std::string>();
    }
    return text;
}

// An assistant turn's tool_calls: arguments as sent when a string (the
// chat template checks it is JSON), else the value's compact JSON text.
std::vector<ToolCall> tool_calls(const ojson& list, const std::string& name) {
    if (!list.is_array()) bad(name, "an array of tool calls");
    std::vector<ToolCall> out;
    for (size_t k = 0; k < list.size(); ++k) {
        const ojson& c = list[k];
        const std::string at = name + "[" + std::to_string(k) + "]";
        if (!c.is_object()) bad(at, R"(an object { id, type: "function", function: { name, arguments } })");
        for (const auto& [key, _] : c.items()) {
            if (key != "id" && key != "type" && key != "function") unknown(at + "." + key);
        }
        if (c.value("type", ojson("function")) != "function") bad(at + ".type", R"("function")");
        const ojson id = c.value("id", ojson(""));
        if (!id.is_string()) bad(at + ".id", "a string");
        const ojson fn = c.value("function", ojson());
        if (!fn.is_object() || !fn.value("name", ojson()).is_string() || fn["name"].get<std::string>().empty()) {
            bad(at + ".function", "an object { name, arguments }");
        }
        for (const auto& [key, _] : fn.items()) {
            if (key != "name" && key != "arguments") unknown(at + ".function." + key);
        }
        const ojson args = fn.value("arguments", ojson("{}"));
        out.push_back({id.get<std::string>(), fn["name"].get<std::string>(),
                       args.is_string() ? args.get<std::string>() : args.dump()});
    }
    return out;
}

std::vector<ChatMessage> messages(const Fields& f) {
    const ojson* list = f.get("messages");
    if (!list || !list->is_array() || list->empty()) bad("messages", "a non-empty array of messages");
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < list->size(); ++i) {
        const ojson& m = (*list)[i];
        const std::string name = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) bad(name, "an object { role, content }");
        const ojson role = m.value("role", ojson());
        if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
            bad(name + ".role", R"("system", "user", "assistant" or "tool")");
        }
        const bool assistant = role == "assistant", tool = role == "tool";
        for (const auto& [key, value] : m.items()) {
            const bool known = key == "role" || key == "content" || (assistant && key == "tool_calls") ||
                               (tool && (key == "tool_call_id" || key == "name"));
            if (!known) unknown(name + "." + key);
        }
        ChatMessage msg{role.get<std::string>(), ""};
        const ojson calls = m.value("tool_calls", ojson());
        if (assistant && !calls.is_null()) msg.tool_calls = tool_calls(calls, name + ".tool_calls");
        msg.content = content_text(m, name, !msg.tool_calls.empty());
        if (tool) {
            const ojson id = m.value("tool_call_id", ojson());
            if (!id.is_string()) bad(name + ".tool_call_id", "the id of the call this message answers (a string)");
            msg.tool_call_id = id.get<std::string>();
            const ojson fn = m.value("name", ojson(""));
            if (!fn.is_string()) bad(name + ".name", "a string");
            msg.name = fn.get<std::string>();
        }
        out.push_back(std::move(msg));
    }
    return out;
}

// An OpenAI tools array; each tool's schema must be one the grammar
// engine enforces (BadRequest naming the tool otherwise).
std::vector<Tool> tools_from(const ojson& list) {
    if (!list.is_array()) bad("tools", R"(an array of { type: "function", function: { name, description, parameters } })");
    std::vector<Tool> tools;
    for (size_t i = 0; i < list.size(); ++i) {
        const ojson& t = list[i];
        const std::string at = "tools[" + std::to_string(i) + "]";
        if (!t.is_object() || t.value("type", ojson()) != "function" || !t.value("function", ojson()).is_object()) {
            bad(at, R"(an object { type: "function", function: { name, description, parameters } })");
        }
        for (const auto& [key, _] : t.items()) {
            if (key != "type" && key != "function") unknown(at + "." + key);
        }
        const ojson& fn = t["function"];
        for (const auto& [key, _] : fn.items()) {
            if (key != "name" && key != "description" && key != "parameters" && key != "strict") {
                unknown(at + ".function." + key);
            }
        }
        const ojson name = fn.value("name", ojson());
        if (!name.is_string()) bad(at + ".function.name", "a string");
        const ojson description = fn.value("description", ojson(""));
        if (!description.is_string()) bad(at + ".function.description", "a string");
        const ojson parameters = fn.value("parameters", ojson::object());
        if (!parameters.is_object()) bad(at + ".function.parameters", "a JSON Schema object");
        const ojson strict = fn.value("strict", ojson());
        if (!strict.is_null() && !strict.is_boolean()) bad(at + ".function.strict", "a boolean");
        tools.push_back({name.get<std::string>(), description.get<std::string>(),
                         fn.contains("parameters") ? parameters.dump() : ""});
    }
    try {
        check_tools(tools);
    } catch (const Error& e) {
        throw BadRequest(e.what(), "tools");
    }
    return tools;
}

// tools, tool_choice and parallel_tool_calls.
ToolRequest tool_request(const Fields& f) {
    ToolRequest r;
    if (const ojson* list = f.get("tools")) r.tools = tools_from(*list);
    if (const ojson* choice = f.get("tool_choice")) {
        const char* what = R"("auto", "none", "required" or { type: "function", function: { name } })";
        if (choice->is_string()) {
            const std::string c = choice->get<std::string>();
            if (c == "auto") r.choice = ToolChoice::Auto;
            else if (c == "none") r.choice = ToolChoice::None;
            else if (c == "required") r.choice = ToolChoice::Required;
            else bad("tool_choice", what);
        } else {
            if (!choice->is_object() || choice->value("type", ojson()) != "function") bad("tool_choice", what);
            const ojson fn = choice->value("function", ojson());
            if (!fn.is_object() || !fn.value("name", ojson()).is_string()) bad("tool_choice.function", "an object { name }");
            r.choice = ToolChoice::Named;
            r.function = fn["name"].get<std::string>();
            bool found = false;
            for (const Tool& t : r.tools) found = found || t.name == r.function;
            if (!found) bad("tool_choice.function.name", "the name of one of the tools ('" + r.function + "' is not)");
        }
        if (r.choice != ToolChoice::Auto && r.choice != ToolChoice::None && r.tools.empty()) {
            bad("tool_choice", "left out, \"auto\" or \"none\" when there are no tools");
        }
    }
    r.parallel = f.boolean("parallel_tool_calls");
    return r;
}

std::string prompt(const Fields& f) {
    const ojson* p = f.get("prompt");
    if (p && p->is_string()) return p->get<std::string>();
    if (p && p->is_array() && p->size() == 1 && (*p)[0].is_string()) return (*p)[0].get<std::string>();
    bad("prompt", "a string (or an array holding one string)");
}

std::vector<std::string> stop_strings(const Fields& f) {
    const ojson* v = f.get("stop");
    if (!v) return {};
    const std::string what =
        "a non-empty string or an array of up to " + std::to_string(kMaxStopStrings) + " non-empty strings";
    const ojson list = v->is_string() ? ojson::array({*v}) : *v;
    if (!list.is_array() || list.size() > size_t(kMaxStopStrings)) bad("stop", what);
    std::vector<std::string> out;
    for (const ojson& s : list) {
        if (!s.is_string() || s.get_ref<const std::string&>().empty()) bad("stop", what);
        out.push_back(s.get<std::string>());
    }
    return out;
}

std::vector<LogitBias> logit_bias(const Fields& f) {
    const ojson* v = f.get("logit_bias");
    if (!v) return {};
    if (!v->is_object()) bad("logit_bias", "an object mapping token ids to numbers");
    std::vector<LogitBias> out;
    for (const auto& [key, bias] : v->items()) {
        const std::string name = "logit_bias." + key;
        if (!is_token_id_key(key) || std::stod(key) > kMaxInt32) bad(name, "keyed by a token id (an integer >= 0)");
        if (!bias.is_number() || !std::isfinite(bias.get<double>()) || std::fabs(bias.get<double>()) > kLogitBiasRange) {
            bad(name, "a number in [-100, 100]");
        }
        out.push_back({int32_t(std::stol(key)), bias.get<float>()});
    }
    return out;
}

// The JSON Schema text response_format asks for, if any.
std::optional<std::string> response_format(const Fields& f) {
    const ojson* format = f.get("response_format");
    if (!format) return std::nullopt;
    if (!format->is_object()) bad("response_format", "an object { type }");
    const ojson type = format->value("type", ojson());
    for (const auto& [key, _] : format->items()) {
        if (key != "type" && !(key == "json_schema" && type == "json_schema")) unknown("response_format." + key);
    }
    if (type == "text") return std::nullopt;
    if (type == "json_object") return std::string(kAnyJsonObject);
    if (type != "json_schema") bad("response_format.type", R"("text", "json_object" or "json_schema")");
    const ojson js = format->value("json_schema", ojson());
    if (!js.is_object()) bad("response_format.json_schema", "an object { name, schema }");
    for (const auto& [key, _] : js.items()) {
        if (key != "name" && key != "description" && key != "schema" && key != "strict") {
            unknown("response_format.json_schema." + key);
        }
    }
    const ojson name = js.value("name", ojson());
    if (!name.is_string() || !is_schema_name(name.get<std::string>())) {
        bad("response_format.json_schema.name", "1-64 letters, digits, '_' or '-'");
    }
    const ojson strict = js.value("strict", ojson());
    if (!strict.is_null() && !strict.is_boolean()) bad("response_format.json_schema.strict", "a boolean");
    const ojson schema = js.value("schema", ojson());
    if (!schema.is_object()) bad("response_format.json_schema.schema", "a JSON Schema object");
    return schema.dump();
}

}  // namespace

std::vector<Tool> parse_tools(std::string_view json_text) {
    ojson list;
    try {
        list = ojson::parse(json_text);
    } catch (const ojson::parse_error& e) {
        throw BadRequest("the tools are not valid JSON (at byte " + std::to_string(e.byte) + ")", "tools");
    }
    return tools_from(list);
}

ParsedRequest parse_request(Endpoint endpoint, std::string_view body) {
    ojson o;
    try {
        o = ojson::parse(body);
    } catch (const ojson::parse_error& e) {
        throw BadRequest("the body is not valid JSON (at byte " + std::to_string(e.byte) + ")", "");
    }
    if (!o.is_object()) throw BadRequest("the request must be a JSON object", "");
    const auto& allowed = allowed_fields(endpoint);
    for (const auto& [key, _] : o.items()) {
        if (!allowed.count(key)) unknown(key);
    }
    const Fields f(o);
    const bool chat = endpoint == Endpoint::Chat;
    ParsedRequest r;
    r.endpoint = endpoint;
    if (chat) {
        r.messages = messages(f);
        r.tools = tool_request(f);
    } else {
        r.prompt = prompt(f);
    }
    r.model = f.string("model");
    (void)f.string("user");  // accepted (OpenAI's end-user id); nothing depends on it

    f.number("n", 1, 1, true, "1 (one choice per request)");
    const auto max_tokens = f.number("max_tokens", 0, kMaxInt32, true);
    std::optional<double> max_completion;
    if (chat) {
        max_completion = f.number("max_completion_tokens", 0, kMaxInt32, true);
        if (max_tokens && max_completion && *max_tokens != *max_completion) {
            bad("max_completion_tokens", "equal to max_tokens when both are given");
        }
    }
    if (const auto m = max_completion ? max_completion : max_tokens) r.max_tokens = int(*m);

    GenerateOptions& g = r.options;
    if (chat) {
        g.logprobs = f.boolean("logprobs").value_or(false);
        const auto top = f.number("top_logprobs", 0, kMaxTopLogprobs, true);
        if (top && !g.logprobs) bad("top_logprobs", "left out unless logprobs is true");
        g.top_logprobs = int(top.value_or(0));
    } else {
        const auto top = f.number("logprobs", 0, kMaxTopLogprobs, true);
        g.logprobs = top.has_value();
        g.top_logprobs = int(top.value_or(0));
    }

    const auto grammar = f.string("grammar");
    if (grammar && grammar->empty()) bad("grammar", "a non-empty GBNF string");
    const auto schema = response_format(f);
    if (schema && grammar) bad("grammar", "left out when response_format asks for JSON");
    const bool tools_active = !r.tools.tools.empty() && r.tools.choice != ToolChoice::None;
    if (grammar && tools_active) bad("grammar", "left out when tools may be called");
    if (schema && tools_active) bad("response_format", "left out (or text) when tools may be called");
    g.grammar = grammar.value_or("");
    g.json_schema = schema.value_or("");

    r.stream = f.boolean("stream").value_or(false);
    if (r.stream && g.logprobs && tools_active) bad("logprobs", "left out when tools may be called in a stream");
    if (const ojson* so = f.get("stream_options")) {
        if (!r.stream) bad("stream_options", "left out unless stream is true");
        if (!so->is_object()) bad("stream_options", "an object { include_usage }");
        for (const auto& [key, _] : so->items()) {
            if (key != "include_usage") unknown("stream_options." + key);
        }
        const ojson usage = so->value("include_usage", ojson());
        if (!usage.is_null() && !usage.is_boolean()) bad("stream_options.include_usage", "a boolean");
        r.include_usage = usage == true;
    }

    SamplingParams& s = g.sampling;
    constexpr double tiny = std::numeric_limits<double>::denorm_min();  // JavaScript's Number.MIN_VALUE: "> 0"
    constexpr double huge = std::numeric_limits<double>::max();
    if (auto v = f.number("temperature", 0, 2)) s.temperature = float(*v);
    if (auto v = f.number("top_p", tiny, 1, false, "a number in (0, 1]")) s.top_p = float(*v);
    if (auto v = f.number("seed", 0, kMaxSafeInteger, true, "an integer >= 0")) s.seed = uint64_t(*v);
    g.stop = stop_strings(f);
    s.logit_bias = logit_bias(f);
    if (auto v = f.number("frequency_penalty", -2, 2)) s.frequency_penalty = float(*v);
    if (auto v = f.number("presence_penalty", -2, 2)) s.presence_penalty = float(*v);
    if (auto v = f.number("top_k", 0, kMaxInt32, true)) s.top_k = int(*v);
    if (auto v = f.number("min_p", 0, 1)) s.min_p = float(*v);
    if (auto v = f.number("repeat_penalty", tiny, huge, false, "a number > 0")) s.repeat_penalty = float(*v);
    return r;
}

ParsedRequest parse_template_request(std::string_view body) {
    ojson o;
    try {
        o = ojson::parse(body);
    } catch (const ojson::parse_error& e) {
        throw BadRequest("the body is not valid JSON (at byte " + std::to_string(e.byte) + ")", "");
    }
    if (!o.is_object()) throw BadRequest("the request must be a JSON object", "");
    const ojson agp = o.value("add_generation_prompt", ojson(true));
    if (!agp.is_boolean()) bad("add_generation_prompt", "a boolean");
    o.erase("add_generation_prompt");
    ParsedRequest r = parse_request(Endpoint::Chat, o.dump());
    r.add_generation_prompt = agp.get<bool>();
    return r;
}

}  // namespace smolinfer::server
