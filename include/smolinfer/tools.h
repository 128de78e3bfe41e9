// Tool calling (OpenAI's tools / tool_calls) on top of a chat template:
// which functions a request offers and how it lets the model call them.
// The template decides the call syntax (Session::tool_syntax); these
// helpers check a request's tools before anything is generated.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "smolinfer/session.h"

namespace smolinfer {

// OpenAI's tool_choice: "auto" (the model decides), "none" (tools are still
// described, no call is parsed), "required" (at least one call), or one
// named function (exactly that one; llama-server treats it as auto).
enum class ToolChoice { Auto, None, Required, Named };

struct ToolRequest {
    std::vector<Tool> tools;
    ToolChoice choice = ToolChoice::Auto;
    std::string function;               // ToolChoice::Named
    std::optional<bool> parallel;       // parallel_tool_calls; unset: what the template can render
};

// Throws smolinfer::Error naming the tool at fault: a duplicate name, a
// name that is not 1-64 letters, digits, '_' or '-', or a parameters schema
// the JSON-schema grammar engine refuses (so that its calls could not be
// constrained).
void check_tools(const std::vector<Tool>& tools);

}  // namespace smolinfer
