#include "openai_request.h"

#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace smolinfer::server {

namespace {

using nlohmann::json;

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
        s.insert({"messages", "max_completion_tokens", "logprobs", "top_logprobs"});
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
    explicit Fields(const json& o) : o_(o) {}

    const json* get(const std::string& name) const {
        auto it = o_.find(name);
        if (it == o_.end() || it->is_null()) return nullptr;
        return &*it;
    }

    std::optional<double> number(const std::string& name, double lo, double hi, bool integer = false,
                                 std::optional<std::string> what = std::nullopt) const {
        const json* v = get(name);
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
        const json* v = get(name);
        if (!v) return std::nullopt;
        if (!v->is_boolean()) bad(name, "a boolean");
        return v->get<bool>();
    }

    std::optional<std::string> string(const std::string& name) const {
        const json* v = get(name);
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
    const json& o_;
};

std::vector<ChatMessage> messages(const Fields& f) {
    const json* list = f.get("messages");
    if (!list || !list->is_array() || list->empty()) bad("messages", "a non-empty array of messages");
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < list->size(); ++i) {
        const json& m = (*list)[i];
        const std::string name = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) bad(name, "an object { role, content }");
        for (const auto& [key, _] : m.items()) {
            if (key != "role" && key != "content") unknown(name + "." + key);
        }
        const json role = m.value("role", json());
        if (role != "system" && role != "user" && role != "assistant") bad(name + ".role", R"("system", "user" or "assistant")");
        const json content = m.value("content", json());
        std::string text;
        if (content.is_string()) {
            text = content.get<std::string>();
        } else if (content.is_array()) {
            for (size_t k = 0; k < content.size(); ++k) {
                const json& p = content[k];
                if (!p.is_object() || p.size() != 2 || p.value("type", json()) != "text" || !p.contains("text") ||
                    !p["text"].is_string()) {
                    bad(name + ".content[" + std::to_string(k) + "]", R"({ type: "text", text: string } (only text is supported))");
                }
                text += p["text"].get<std::string>();
            }
        } else {
            bad(name + ".content", "a string or an array of text parts");
        }
        out.push_back({role.get<std::string>(), std::move(text)});
    }
    return out;
}

std::string prompt(const Fields& f) {
    const json* p = f.get("prompt");
    if (p && p->is_string()) return p->get<std::string>();
    if (p && p->is_array() && p->size() == 1 && (*p)[0].is_string()) return (*p)[0].get<std::string>();
    bad("prompt", "a string (or an array holding one string)");
}

std::vector<std::string> stop_strings(const Fields& f) {
    const json* v = f.get("stop");
    if (!v) return {};
    const std::string what =
        "a non-empty string or an array of up to " + std::to_string(kMaxStopStrings) + " non-empty strings";
    const json list = v->is_string() ? json::array({*v}) : *v;
    if (!list.is_array() || list.size() > size_t(kMaxStopStrings)) bad("stop", what);
    std::vector<std::string> out;
    for (const json& s : list) {
        if (!s.is_string() || s.get_ref<const std::string&>().empty()) bad("stop", what);
        out.push_back(s.get<std::string>());
    }
    return out;
}

std::vector<LogitBias> logit_bias(const Fields& f) {
    const json* v = f.get("logit_bias");
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
    const json* format = f.get("response_format");
    if (!format) return std::nullopt;
    if (!format->is_object()) bad("response_format", "an object { type }");
    const json type = format->value("type", json());
    for (const auto& [key, _] : format->items()) {
        if (key != "type" && !(key == "json_schema" && type == "json_schema")) unknown("response_format." + key);
    }
    if (type == "text") return std::nullopt;
    if (type == "json_object") return std::string(kAnyJsonObject);
    if (type != "json_schema") bad("response_format.type", R"("text", "json_object" or "json_schema")");
    const json js = format->value("json_schema", json());
    if (!js.is_object()) bad("response_format.json_schema", "an object { name, schema }");
    for (const auto& [key, _] : js.items()) {
        if (key != "name" && key != "description" && key != "schema" && key != "strict") {
            unknown("response_format.json_schema." + key);
        }
    }
    const json name = js.value("name", json());
    if (!name.is_string() || !is_schema_name(name.get<std::string>())) {
        bad("response_format.json_schema.name", "1-64 letters, digits, '_' or '-'");
    }
    const json strict = js.value("strict", json());
    if (!strict.is_null() && !strict.is_boolean()) bad("response_format.json_schema.strict", "a boolean");
    const json schema = js.value("schema", json());
    if (!schema.is_object()) bad("response_format.json_schema.schema", "a JSON Schema object");
    return schema.dump();
}

}  // namespace

ParsedRequest parse_request(Endpoint endpoint, std::string_view body) {
    json o;
    try {
        o = json::parse(body);
    } catch (const json::parse_error& e) {
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
    g.grammar = grammar.value_or("");
    g.json_schema = schema.value_or("");

    r.stream = f.boolean("stream").value_or(false);
    if (const json* so = f.get("stream_options")) {
        if (!r.stream) bad("stream_options", "left out unless stream is true");
        if (!so->is_object()) bad("stream_options", "an object { include_usage }");
        for (const auto& [key, _] : so->items()) {
            if (key != "include_usage") unknown("stream_options." + key);
        }
        const json usage = so->value("include_usage", json());
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

}  // namespace smolinfer::server
