#include "text/chat_template.h"

#include <ctime>
#include <optional>

#include <nlohmann/json.hpp>

#include "smolinfer/error.h"
#include "text/jinja/errors.h"
#include "text/jinja/json_value.h"
#include "text/jinja/template.h"

namespace smolinfer::text {

namespace {

// The Jinja string literal that starts at tpl[open] (a quote character), with
// its escapes processed; nullopt if it does not close.
std::optional<std::string> string_literal(std::string_view tpl, size_t open) {
    const char quote = tpl[open];
    std::string out;
    for (size_t i = open + 1; i < tpl.size(); ++i) {
        const char c = tpl[i];
        if (c == quote) return out;
        if (c != '\\' || i + 1 == tpl.size()) {
            out += c;
            continue;
        }
        switch (const char e = tpl[++i]) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            default: out += e; break;  // \\, \', \" and anything else: the character itself
        }
    }
    return std::nullopt;
}

// The system message the template inserts when the conversation has none:
// a string literal '<|im_start|>system\n...<|im_end|>...' in the template.
// (A block built from an expression, like messages[0]['content'], is not a
// literal and is skipped.)
std::string find_default_system(std::string_view tpl) {
    constexpr std::string_view kOpener = "<|im_start|>system\n";
    constexpr std::string_view kCloser = "<|im_end|>";
    for (size_t at = tpl.find("<|im_start|>system"); at != std::string_view::npos;
         at = tpl.find("<|im_start|>system", at + 1)) {
        if (at == 0 || (tpl[at - 1] != '\'' && tpl[at - 1] != '"')) continue;
        const auto literal = string_literal(tpl, at - 1);
        if (!literal || literal->rfind(kOpener, 0) != 0) continue;
        const size_t end = literal->find(kCloser);
        if (end == std::string::npos || end == kOpener.size()) continue;
        return literal->substr(kOpener.size(), end - kOpener.size());
    }
    return {};
}

void check_roles(const std::vector<ChatMessage>& messages) {
    if (messages.empty()) throw Error("chat: no messages");
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string& role = messages[i].role;
        if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
            throw Error("chat: message " + std::to_string(i) + " has role '" + role +
                        "' (expected system, user, assistant or tool)");
        }
    }
}

std::string format_utc(std::time_t now, const char* format) {
    std::tm tm{};
#if defined(_WIN32)
    gmtime_s(&tm, &now);
#else
    gmtime_r(&now, &tm);
#endif
    char buf[64];
    return std::string(buf, std::strftime(buf, sizeof buf, format, &tm));
}

}  // namespace

ChatTemplate ChatTemplate::from_template(std::optional<std::string_view> source, std::string* warning,
                                         const ChatTokens& tokens, std::optional<std::string_view> tool_use) {
    ChatTemplate t;
    t.tokens_ = tokens;
    t.present_ = source.has_value();
    if (!source) {
        if (warning) *warning = "the model has no chat template (tokenizer.chat_template); using ChatML";
        return t;
    }
    const std::string why = parse_program(*source, t.program_);
    if (!why.empty() && warning) *warning = "the chat template (tokenizer.chat_template) " + why + "; using ChatML";
    t.finish(*source);
    if (t.program_ && tool_use) {
        // A tool_use variant the interpreter cannot run only costs the
        // requests with tools their variant: they use the main template.
        try {
            t.tool_use_program_ = std::make_shared<const jinja::Template>(*tool_use);
            t.tool_use_syntax_ = t.analyse(*t.tool_use_program_, *tool_use);
        } catch (const std::runtime_error& e) {  // jinja::Unsupported, SyntaxError
            if (warning) *warning = std::string("the tool-use chat template (tokenizer.chat_template.tool_use) cannot be "
                                                "used (") + e.what() + "); requests with tools use the main template";
        }
    }
    return t;
}

ChatTemplate ChatTemplate::from_caller(std::string_view source, const ChatTokens& tokens) {
    ChatTemplate t;
    t.tokens_ = tokens;
    t.present_ = true;
    const std::string why = parse_program(source, t.program_);
    if (!why.empty()) throw Error("the chat template given " + why);
    t.finish(source);
    return t;
}

std::string ChatTemplate::parse_program(std::string_view source, std::shared_ptr<const jinja::Template>& program) {
    try {
        program = std::make_shared<const jinja::Template>(source);
        return {};
    } catch (const jinja::Unsupported& e) {
        return std::string("uses ") + e.what() + ", which smolinfer's Jinja interpreter does not support";
    } catch (const jinja::SyntaxError& e) {
        return std::string("does not parse: ") + e.what();
    }
}

// What the template's text tells beyond its program: ChatML's default
// system message, and the tool-call syntax.
void ChatTemplate::finish(std::string_view source) {
    if (source.find("<|im_start|>") != std::string_view::npos) {
        default_system_ = find_default_system(source);
    } else if (program_) {
        name_ = "jinja";
    }
    if (program_) syntax_ = analyse(*program_, source);
}

std::vector<PromptPiece> ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    return render(messages, add_generation_prompt, std::time(nullptr));
}

std::vector<PromptPiece> ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                              std::time_t now) const {
    return render(messages, add_generation_prompt, now, {});
}

std::vector<PromptPiece> ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                              std::time_t now, const std::vector<ChatTool>& tools) const {
    check_roles(messages);
    if (!program_) return render_chatml(messages, add_generation_prompt);
    const bool with_tools = !tools.empty();
    const auto& program = with_tools && tool_use_program_ ? *tool_use_program_ : *program_;
    return run(program, tool_syntax(with_tools), messages, add_generation_prompt, now, tools);
}

namespace {

nlohmann::ordered_json parse_json_text(const std::string& text, const std::string& what) {
    try {
        return nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::ordered_json::parse_error& e) {
        throw Error(what + " is not valid JSON (at byte " + std::to_string(e.byte) + ")");
    }
}

// A message as llama.cpp's common_chat_msg::to_json_oaicompat gives it to a
// template: content always a string, then name, tool_call_id and tool_calls
// only when set; arguments parsed into objects when the template writes
// calls itself (llama.cpp's supports_object_arguments).
jinja::Value message_value(const ChatMessage& m, size_t index, bool object_arguments) {
    using jinja::TaggedString;
    using jinja::Value;
    jinja::Object o;
    // Roles are checked against a fixed set, so they count as markup;
    // content is the user's and stays plain.
    o.set("role", Value::string(TaggedString(m.role)));
    o.set("content", Value::string(TaggedString(m.content, true)));
    if (!m.name.empty()) o.set("name", Value::string(TaggedString(m.name, true)));
    if (!m.tool_call_id.empty()) o.set("tool_call_id", Value::string(TaggedString(m.tool_call_id, true)));
    if (!m.tool_calls.empty()) {
        jinja::Array calls;
        for (size_t k = 0; k < m.tool_calls.size(); ++k) {
            const ChatToolCall& c = m.tool_calls[k];
            jinja::Object function;
            function.set("name", Value::string(TaggedString(c.name, true)));
            const std::string what = "messages[" + std::to_string(index) + "].tool_calls[" + std::to_string(k) +
                                     "].function.arguments";
            function.set("arguments", object_arguments ? jinja::from_json(parse_json_text(c.arguments, what))
                                                       : Value::string(TaggedString(c.arguments, true)));
            jinja::Object call;
            call.set("type", Value::string(TaggedString("function")));
            call.set("function", Value::object(std::move(function)));
            if (!c.id.empty()) call.set("id", Value::string(TaggedString(c.id, true)));
            calls.push_back(Value::object(std::move(call)));
        }
        o.set("tool_calls", Value::array(std::move(calls)));
    }
    return Value::object(std::move(o));
}

jinja::Value tools_value(const std::vector<ChatTool>& tools) {
    using jinja::TaggedString;
    using jinja::Value;
    jinja::Array list;
    for (const ChatTool& t : tools) {
        jinja::Object function;
        function.set("name", Value::string(TaggedString(t.name, true)));
        function.set("description", Value::string(TaggedString(t.description, true)));
        function.set("parameters", t.parameters.empty()
                                       ? Value::object()
                                       : jinja::from_json(parse_json_text(t.parameters, "the parameters of tool '" +
                                                                                            t.name + "'")));
        jinja::Object tool;
        tool.set("type", Value::string(TaggedString("function")));
        tool.set("function", Value::object(std::move(function)));
        list.push_back(Value::object(std::move(tool)));
    }
    return Value::array(std::move(list));
}

}  // namespace

std::vector<PromptPiece> ChatTemplate::run(const jinja::Template& program, const ToolSyntax& syntax,
                                           const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                           std::time_t now, const std::vector<ChatTool>& tools) const {
    using jinja::TaggedString;
    using jinja::Value;
    const bool object_arguments = syntax.kind != ToolSyntax::Kind::None;
    jinja::Array list;
    for (size_t i = 0; i < messages.size(); ++i) list.push_back(message_value(messages[i], i, object_arguments));
    // What llama.cpp's common_chat_template_direct_apply gives a template:
    // add_generation_prompt only when true, enable_thinking on by default,
    // its extra date strings, and tools only when there are some.
    jinja::RenderContext ctx;
    ctx.now = now;
    ctx.globals = {
        {"messages", Value::array(std::move(list))},
        {"bos_token", Value::string(TaggedString(tokens_.bos))},
        {"eos_token", Value::string(TaggedString(tokens_.eos))},
        {"enable_thinking", Value::boolean(true)},
        {"datetime", Value::string(TaggedString(format_utc(now, "%b %d %Y")))},
        {"date_string", Value::string(TaggedString(format_utc(now, "%d %b %Y")))},
    };
    if (!tools.empty()) ctx.globals.emplace_back("tools", tools_value(tools));
    if (add_generation_prompt) ctx.globals.emplace_back("add_generation_prompt", Value::boolean(true));

    std::vector<TaggedString> out;
    try {
        out = program.render(ctx);
    } catch (const jinja::RenderError& e) {
        throw Error(std::string("chat template: ") + e.what());
    }
    std::vector<PromptPiece> pieces;
    for (const TaggedString& s : out) {
        for (const jinja::Segment& seg : s.segments()) pieces.push_back(PromptPiece{seg.text, !seg.plain});
    }
    return pieces;
}

std::vector<PromptPiece> ChatTemplate::render_chatml(const std::vector<ChatMessage>& messages,
                                                     bool add_generation_prompt) const {
    std::vector<PromptPiece> pieces;
    auto markup = [&](std::string s) { pieces.push_back(PromptPiece{std::move(s), true}); };
    auto content = [&](const std::string& s) { pieces.push_back(PromptPiece{s, false}); };

    if (messages.front().role != "system" && !default_system_.empty()) {
        markup("<|im_start|>system\n" + default_system_ + "<|im_end|>\n");
    }
    for (const ChatMessage& m : messages) {
        markup("<|im_start|>" + m.role + "\n");
        content(m.content);
        markup("<|im_end|>\n");
    }
    if (add_generation_prompt) markup("<|im_start|>assistant\n");
    return pieces;
}

}  // namespace smolinfer::text
