#include "openai_response.h"

#include <cmath>
#include <random>

namespace smolinfer::server {

using nlohmann::json;

namespace {

// OpenAI reports a token that cannot be drawn as -9999 (JSON has no -Infinity).
double finite(float logprob) { return std::isinf(logprob) ? -9999.0 : double(logprob); }

// The length of valid UTF-8 text in UTF-16 code units: what OpenAI's (and
// the browser API's) text_offset counts.
size_t utf16_length(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s) {
        if ((c & 0xC0) != 0x80) n += c >= 0xF0 ? 2 : 1;
    }
    return n;
}

json usage(const GenerationStats& s) {
    return {{"prompt_tokens", s.prompt_tokens},
            {"completion_tokens", s.generated_tokens},
            {"total_tokens", s.prompt_tokens + s.generated_tokens}};
}

}  // namespace

std::string new_response_id(Endpoint endpoint) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char* hex = "0123456789abcdef";
    std::string id = endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-";
    for (int i = 0; i < 24; ++i) id += hex[rng() % 16];
    return id;
}

const char* finish_reason(StopReason stop) {
    return stop == StopReason::MaxTokens || stop == StopReason::ContextFull ? "length" : "stop";
}

std::string valid_utf8(std::string_view s) {
    static const std::string replacement = "\xEF\xBF\xBD";
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b < 0x80) {
            out += char(b);
            ++i;
            continue;
        }
        // The WHATWG decoder's bounds: overlong forms, surrogates and code
        // points past U+10FFFF are invalid at their second byte.
        int need = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (b >= 0xC2 && b <= 0xDF) {
            need = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            need = 2;
            if (b == 0xE0) lo = 0xA0;
            if (b == 0xED) hi = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            need = 3;
            if (b == 0xF0) lo = 0x90;
            if (b == 0xF4) hi = 0x8F;
        } else {
            out += replacement;
            ++i;
            continue;
        }
        size_t j = i + 1;
        bool ok = true;
        for (int k = 0; k < need; ++k, ++j) {
            const auto c = j < s.size() ? static_cast<unsigned char>(s[j]) : 0;
            if (j >= s.size() || c < lo || c > hi) {
                ok = false;
                break;
            }
            lo = 0x80;
            hi = 0xBF;
        }
        if (ok) {
            out.append(s.substr(i, j - i));
        } else {
            out += replacement;  // the valid start of the sequence; the byte that broke it is read again
        }
        i = j;
    }
    return out;
}

ResponseShaper::ResponseShaper(ResponseMeta meta, TokenBytes bytes) : meta_(std::move(meta)), bytes_(std::move(bytes)) {}

json ResponseShaper::top_logprob(TokenId id, float logprob) const {
    const std::string raw = bytes_(id);
    json byte_list = json::array();
    for (unsigned char c : raw) byte_list.push_back(int(c));
    return {{"token", valid_utf8(raw)}, {"logprob", finite(logprob)}, {"bytes", byte_list}};
}

// Chat: {content: [{token, logprob, bytes, top_logprobs}], refusal};
// completions: {tokens, token_logprobs, top_logprobs, text_offset}.
json ResponseShaper::logprobs_json(const std::vector<TokenLogprobs>& list, size_t offset) const {
    if (meta_.endpoint == Endpoint::Chat) {
        json content = json::array();
        for (const TokenLogprobs& l : list) {
            json entry = top_logprob(l.token, l.logprob);
            json top = json::array();
            for (const TokenChoice& c : l.top) top.push_back(top_logprob(c.token, c.logprob));
            entry["top_logprobs"] = std::move(top);
            content.push_back(std::move(entry));
        }
        return {{"content", std::move(content)}, {"refusal", nullptr}};
    }
    json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
    for (const TokenLogprobs& l : list) {
        const std::string token = valid_utf8(bytes_(l.token));
        tokens.push_back(token);
        token_logprobs.push_back(finite(l.logprob));
        json top = json::object();
        for (const TokenChoice& c : l.top) top[valid_utf8(bytes_(c.token))] = finite(c.logprob);
        top_logprobs.push_back(std::move(top));
        offsets.push_back(offset);
        offset += utf16_length(token);
    }
    return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
}

json ResponseShaper::chunk(json choices) const {
    json c = {{"id", meta_.id},
              {"object", meta_.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion"},
              {"created", meta_.created},
              {"model", meta_.model},
              {"choices", std::move(choices)}};
    if (meta_.include_usage) c["usage"] = nullptr;
    return c;
}

std::vector<json> ResponseShaper::start() {
    if (!meta_.stream || meta_.endpoint != Endpoint::Chat) return {};
    return {chunk(json::array({{{"index", 0},
                                {"delta", {{"role", "assistant"}, {"content", ""}}},
                                {"logprobs", nullptr},
                                {"finish_reason", nullptr}}}))};
}

std::string new_tool_call_id() {
    static const char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
    return id;
}

namespace {

std::string_view without_leading_space(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v')) ++i;
    return s.substr(i);
}

}  // namespace

const std::string& ResponseShaper::call_id(size_t index) {
    while (call_ids_.size() <= index) call_ids_.push_back(new_tool_call_id());
    return call_ids_[index];
}

std::vector<json> ResponseShaper::tool_deltas(bool final) {
    const ToolParsing& t = *meta_.tools;
    const ToolOutput out = parse_tool_output(t.syntax, t.names, t.parallel, text_);
    std::vector<json> deltas;
    const auto content_delta = [&](std::string_view content) {
        if (content.size() <= sent_content_) return;
        deltas.push_back({{"content", valid_utf8(content.substr(sent_content_))}});
        sent_content_ = content.size();
    };
    if (out.status == ToolOutput::Status::Invalid || (final && out.status == ToolOutput::Status::Incomplete)) {
        // Not a call after all: the text is content (what was sent is its start).
        if (final && sent_calls_ == 0) content_delta(without_leading_space(text_));
        return deltas;
    }
    content_delta(out.content);
    for (; sent_calls_ < out.closed; ++sent_calls_) {
        const ToolCall& c = out.calls[sent_calls_];
        deltas.push_back({{"tool_calls", json::array({{{"index", sent_calls_},
                                                      {"id", call_id(sent_calls_)},
                                                      {"type", "function"},
                                                      {"function", {{"name", c.name}, {"arguments", valid_utf8(c.arguments)}}}}})}});
    }
    return deltas;
}

std::vector<json> ResponseShaper::event(const BatchEvent& e) {
    if (meta_.logprobs && e.logprobs) logprobs_.push_back(*e.logprobs);
    if (meta_.tools && meta_.stream) {
        text_ += e.text;
        if (e.text.empty()) return {};
        std::vector<json> out;
        for (json& d : tool_deltas(false)) {
            out.push_back(chunk(json::array({{{"index", 0}, {"delta", std::move(d)}, {"logprobs", nullptr}, {"finish_reason", nullptr}}})));
        }
        return out;
    }
    if (!meta_.stream) {
        text_ += e.text;
        return {};
    }
    // Log-probabilities of tokens whose text is still held back go out with the next text.
    if (e.text.empty()) return {};
    const std::string text = valid_utf8(e.text);
    json lp = meta_.logprobs ? logprobs_json(logprobs_, offset_) : json(nullptr);
    logprobs_.clear();
    json choice = meta_.endpoint == Endpoint::Chat
                      ? json{{"index", 0}, {"delta", {{"content", text}}}, {"logprobs", lp}, {"finish_reason", nullptr}}
                      : json{{"index", 0}, {"text", text}, {"logprobs", lp}, {"finish_reason", nullptr}};
    offset_ += utf16_length(text);
    return {chunk(json::array({std::move(choice)}))};
}

std::vector<json> ResponseShaper::finish(const GenerationStats& stats) {
    const char* reason = finish_reason(stats.stop);  // "tool_calls" when calls end the answer
    const bool chat = meta_.endpoint == Endpoint::Chat;
    if (!meta_.stream) {
        const json lp = meta_.logprobs ? logprobs_json(logprobs_, 0) : json(nullptr);
        std::string text = valid_utf8(text_);
        json message = {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
        if (meta_.tools) {
            const ToolParsing& t = *meta_.tools;
            const ToolOutput out = parse_tool_output(t.syntax, t.names, t.parallel, text_);
            if (out.status == ToolOutput::Status::Complete) {
                message["content"] = valid_utf8(out.content);
                if (!out.calls.empty()) {
                    json calls = json::array();
                    for (size_t i = 0; i < out.calls.size(); ++i) {
                        calls.push_back({{"id", call_id(i)},
                                         {"type", "function"},
                                         {"function", {{"name", out.calls[i].name}, {"arguments", valid_utf8(out.calls[i].arguments)}}}});
                    }
                    message["tool_calls"] = std::move(calls);
                    if (std::string_view(reason) == "stop") reason = "tool_calls";
                }
            } else {
                message["content"] = valid_utf8(without_leading_space(text_));
            }
        }
        json choice = chat ? json{{"index", 0},
                                  {"message", std::move(message)},
                                  {"logprobs", lp},
                                  {"finish_reason", reason}}
                           : json{{"index", 0}, {"text", text}, {"logprobs", lp}, {"finish_reason", reason}};
        return {{{"id", meta_.id},
                 {"object", chat ? "chat.completion" : "text_completion"},
                 {"created", meta_.created},
                 {"model", meta_.model},
                 {"choices", json::array({std::move(choice)})},
                 {"usage", usage(stats)}}};
    }
    std::vector<json> out;
    if (meta_.tools) {
        for (json& d : tool_deltas(true)) {
            out.push_back(chunk(json::array({{{"index", 0}, {"delta", std::move(d)}, {"logprobs", nullptr}, {"finish_reason", nullptr}}})));
        }
        if (sent_calls_ > 0 && std::string_view(reason) == "stop") reason = "tool_calls";
    }
    const json lp = meta_.logprobs && !logprobs_.empty() ? logprobs_json(logprobs_, offset_) : json(nullptr);
    logprobs_.clear();
    json last = chat ? json{{"index", 0}, {"delta", json::object()}, {"logprobs", lp}, {"finish_reason", reason}}
                     : json{{"index", 0}, {"text", ""}, {"logprobs", lp}, {"finish_reason", reason}};
    out.push_back(chunk(json::array({std::move(last)})));
    if (meta_.include_usage) {
        json u = chunk(json::array());
        u["usage"] = usage(stats);
        out.push_back(std::move(u));
    }
    return out;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_frame(const json& chunk) { return "data: " + dump(chunk) + "\n\n"; }
std::string sse_done() { return "data: [DONE]\n\n"; }

json error_body(const std::string& message, const std::string& type, const std::string& param, const std::string& code) {
    return {{"error",
             {{"message", message},
              {"type", type},
              {"param", param.empty() ? json(nullptr) : json(param)},
              {"code", code.empty() ? json(nullptr) : json(code)}}}};
}

}  // namespace smolinfer::server
