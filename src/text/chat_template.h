// Chat prompts. The model's tokenizer.chat_template runs in smolinfer's
// Jinja interpreter (text/jinja/) with the context llama.cpp gives it
// (messages, add_generation_prompt, bos_token, eos_token, enable_thinking,
// date strings, strftime_now, and `tools` when the request has some). A template the interpreter cannot run, or
// none, falls back to ChatML with a warning. Template markup becomes control
// tokens; message text stays plain text even if it contains marker strings.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "smolinfer/tools.h"
#include "text/tokenizer.h"

namespace smolinfer::text {

// A call the assistant made: `arguments` is the JSON text as the client
// sent it (templates that read arguments as an object get it parsed).
struct ChatToolCall {
    std::string id;
    std::string name;
    std::string arguments;
};

struct ChatMessage {
    std::string role;  // "system", "user", "assistant" or "tool"
    std::string content;
    // Defaulted so that {role, content} stays a complete initializer.
    std::vector<ChatToolCall> tool_calls = {};  // assistant
    std::string tool_call_id = {};              // tool: the call this answers
    std::string name = {};                      // tool: the function's name
};

// A function the model may call; `parameters` is its JSON Schema as JSON
// text ("" = {}). The template sees {"type": "function", "function":
// {name, description, parameters}}, as llama.cpp gives it.
struct ChatTool {
    std::string name;
    std::string description;
    std::string parameters;
};

// How a template writes tool calls (include/smolinfer/tools.h).
using ToolSyntax = smolinfer::ToolSyntax;

namespace jinja {
class Template;
}

// The texts of the vocabulary's BOS and EOS tokens, as templates see them.
struct ChatTokens {
    std::string bos;
    std::string eos;
};

class ChatTemplate {
public:
    // From the model's template text (nullopt if the file has none). A
    // missing template, or one using a construct the interpreter lacks,
    // falls back to ChatML; `warning` then says so (naming the construct).
    // `tool_use`: the file's tokenizer.chat_template.tool_use (Hermes 2 Pro
    // ships one), used instead when a request has tools.
    static ChatTemplate from_template(std::optional<std::string_view> source, std::string* warning,
                                      const ChatTokens& tokens = {},
                                      std::optional<std::string_view> tool_use = std::nullopt);
    // A template the caller chose instead of the file's (the CLI's
    // --chat-template-file, the JS engine's chatTemplate): one the
    // interpreter cannot run is an Error, not ChatML in its place.
    static ChatTemplate from_caller(std::string_view source, const ChatTokens& tokens = {});

    const std::string& name() const { return name_; }
    const std::string& default_system() const { return default_system_; }

    // The conversation as prompt pieces, ending with the assistant's turn
    // opener when add_generation_prompt. Throws smolinfer::Error for an
    // unknown role, an empty conversation, or a template that fails (its
    // raise_exception message, or what went wrong). `now` is the moment the
    // template's dates show (UTC); the first overload uses the clock.
    std::vector<PromptPiece> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
    std::vector<PromptPiece> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                    std::time_t now) const;
    // With tools: `tools` reaches the template only when non-empty (as in
    // llama.cpp); tool calls' arguments must then be JSON where the
    // template reads them as objects (Error otherwise).
    std::vector<PromptPiece> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                    std::time_t now, const std::vector<ChatTool>& tools) const;

    // How the template used for a request with (or without) tools writes calls.
    const ToolSyntax& tool_syntax(bool with_tools) const {
        return with_tools && tool_use_program_ ? tool_use_syntax_ : syntax_;
    }

    // Whether the model's template runs (false: the ChatML fallback).
    bool executes_template() const { return program_ != nullptr; }
    // Whether the file has a template at all (a base model has none).
    bool present() const { return present_; }

private:
    std::vector<PromptPiece> render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
    std::vector<PromptPiece> run(const jinja::Template& program, const ToolSyntax& syntax,
                                 const std::vector<ChatMessage>& messages, bool add_generation_prompt, std::time_t now,
                                 const std::vector<ChatTool>& tools) const;
    ToolSyntax analyse(const jinja::Template& program, std::string_view source) const;
    // The program of `source`, or why there is none (empty when parsed).
    static std::string parse_program(std::string_view source, std::shared_ptr<const jinja::Template>& program);
    void finish(std::string_view source);

    std::string name_ = "chatml";
    std::string default_system_;
    std::shared_ptr<const jinja::Template> program_;
    std::shared_ptr<const jinja::Template> tool_use_program_;
    ToolSyntax syntax_;
    ToolSyntax tool_use_syntax_;
    ChatTokens tokens_;
    bool present_ = false;
};

}  // namespace smolinfer::text
