// Tool calling (OpenAI's tools / tool_calls) on top of a chat template:
// which functions a request offers and how it lets the model call them.
// The template decides the call syntax (Session::tool_syntax); these
// helpers check a request's tools before anything is generated.
#pragma once

#include <optional>
#include <string>
#include <string_view>
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

// How a template writes a tool call, as llama.cpp's template analyser
// (common/chat-diff-analyzer.cpp) finds it by rendering probe calls:
//   None: the template never shows tool calls (SmolLM2, plain ChatML);
//         tools are not rendered and llama-server parses no calls.
//   Json: a JSON object {"<name_key>": "f", "<args_key>": {...}}, between
//         call_start and call_end (both "" for Llama 3.x); Hermes and Qwen
//         write <tool_call>\n{"name", "arguments"}</tool_call>.
//   Unsupported: another syntax (XML-like tags, ...): tools are rendered
//         but smolinfer does not parse calls from the output.
struct ToolSyntax {
    enum class Kind { None, Json, Unsupported };
    Kind kind = Kind::None;
    std::string call_start;  // keeps its trailing newline: "<tool_call>\n"
    std::string call_end;
    std::string name_key = "name";
    std::string args_key = "arguments";
    // Llama 3.x's instructions ask for {"name", "parameters"} but models
    // write OpenAI's {"type": "function", ...}: that leading field is allowed.
    bool type_field = false;
    // The template renders two calls in one turn (Llama 3.x raises instead);
    // llama-server's default for parallel_tool_calls.
    bool parallel = false;
};

// A model's output read back into content and tool calls (see
// parse_tool_output).
struct ToolOutput {
    enum class Status {
        Complete,    // content and closed calls account for the whole text
        Incomplete,  // the text ends inside a call or a possible call marker
        Invalid,     // something follows that no call can be (llama-server: HTTP 500)
    };
    Status status = Status::Complete;
    // What llama.cpp's parser reports for the text so far (also when
    // Incomplete: the content before the marker, the calls with their
    // arguments as far as they go; a call appears once its name is whole).
    std::string content;
    std::vector<ToolCall> calls;  // ids left empty
    size_t closed = 0;            // calls[0..closed) are complete
};

// Reads `text` (the output after the generation prompt) for a template
// whose calls are JSON (syntax.kind == Json), calling only `names`.
ToolOutput parse_tool_output(const ToolSyntax& syntax, const std::vector<std::string>& names, bool parallel,
                             std::string_view text);

// The grammar for a request's calls (GenerateOptions::grammar and
// grammar_triggers), for a template whose calls are JSON, as llama-server's:
//   auto: lazy, from the call marker on (<tool_call>\n): calls only, then
//         the end; the text before is free. None when the calls have no
//         marker (Llama 3.x: llama-server has no grammar there either);
//   required: free text without the call marker, then one or more calls
//         (commas between calls iff parallel);
//   a named function (llama-server treats it as auto): exactly one call of it.
// nullopt for none, or a template smolinfer reads no calls from.
struct ToolGrammar {
    std::string gbnf;
    std::vector<std::string> triggers;  // non-empty: lazy
};
std::optional<ToolGrammar> tool_call_grammar(const ToolSyntax& syntax, const ToolRequest& request, bool parallel);

// What a request's tools make of one generation under a template (what
// llama-server does, shared by smolinfer serve, run --tools and the
// WebAssembly engine): whether calls are read back from the output (not
// for tool_choice none, no tools, or a template whose calls are not JSON),
// which functions may be called (a named tool_choice: that one), whether
// they come in comma lists (parallel_tool_calls, else the template's
// default), and the grammar that constrains them (GenerateOptions::grammar
// and grammar_triggers).
struct ToolPlan {
    bool parse = false;
    std::vector<std::string> names;
    bool parallel = false;
    std::optional<ToolGrammar> grammar;
};
ToolPlan plan_tools(const ToolSyntax& syntax, const ToolRequest& request);

// Throws smolinfer::Error naming the tool at fault: a duplicate name, a
// name that is not 1-64 letters, digits, '_' or '-', or a parameters schema
// the JSON-schema grammar engine refuses (so that its calls could not be
// constrained).
void check_tools(const std::vector<Tool>& tools);

}  // namespace smolinfer
