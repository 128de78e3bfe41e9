// A model's output read back into content and tool calls, for a template
// whose calls are JSON (ToolSyntax::Kind::Json), with the rules of
// llama.cpp's output parser for that syntax (common/chat-auto-parser-
// generator.cpp, chat-peg-parser.cpp):
//   leading whitespace, then content up to the first call marker
//   (call_start, or "{" for Llama 3.x), then calls, then only whitespace.
//   A call is {"<name_key>": "<one of the tools>", "<args_key>": <JSON>}
//   in that key order (Llama may put "type": "function" first), between
//   call_start and call_end; with `parallel`, several calls separated by
//   commas between one pair of markers. Marker pairs may repeat when the
//   template has markers. Arguments are the model's own text; a value that
//   is not an object becomes "{}".
// The parser never checks arguments against the schema (the grammar does).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/chat_template.h"

namespace smolinfer::text {

using ToolOutput = smolinfer::ToolOutput;

ToolOutput read_tool_output(const ToolSyntax& syntax, const std::vector<std::string>& names, bool parallel,
                             std::string_view text);

}  // namespace smolinfer::text
