// Reads an OpenAI request body (POST /v1/chat/completions or
// /v1/completions) field by field and maps it to the engine's options.
// The rules are the browser API's (web/src/openai-request.ts, options.ts):
// same fields, ranges, defaults and error conditions, so a request means
// the same thing on both.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "smolinfer/session.h"
#include "smolinfer/tools.h"

namespace smolinfer::server {

enum class Endpoint { Chat, Completion };

// A request the server refuses with 400; `param` names the field at fault
// ("" when it is the body as a whole).
class BadRequest : public std::runtime_error {
public:
    BadRequest(const std::string& message, std::string param)
        : std::runtime_error(message), param_(std::move(param)) {}
    const std::string& param() const { return param_; }

private:
    std::string param_;
};

struct ParsedRequest {
    Endpoint endpoint = Endpoint::Chat;
    std::vector<ChatMessage> messages;  // Chat
    ToolRequest tools;                  // Chat: tools, tool_choice, parallel_tool_calls
    bool add_generation_prompt = true;  // /apply-template only
    std::string prompt;                 // Completion: the raw prompt (special-token texts are parsed)
    std::optional<std::string> model;   // as sent: the responses' "model"
    bool stream = false;
    bool include_usage = false;         // stream_options.include_usage
    // max_tokens (or max_completion_tokens); absent: until the context is
    // full, which the caller fills in knowing the context size.
    std::optional<int> max_tokens;
    GenerateOptions options;            // everything else; unset fields keep the engine's defaults
};

// Throws BadRequest naming the first field at fault: a body that is not a
// JSON object, an unknown field, a wrong type or a value out of range.
ParsedRequest parse_request(Endpoint endpoint, std::string_view body);

// An OpenAI `tools` array given as JSON text (smolinfer run --tools): the
// same checks as a request's tools; BadRequest naming the tool at fault.
std::vector<Tool> parse_tools(std::string_view json_text);

// POST /apply-template (llama-server's): a chat request whose prompt is
// wanted, not generated; add_generation_prompt (default true) is accepted too.
ParsedRequest parse_template_request(std::string_view body);

}  // namespace smolinfer::server
