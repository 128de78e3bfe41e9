// smolinfer run --tools FILE [--tool-choice auto|none|required|NAME]: the
// file read and checked as a request's OpenAI `tools` (the server's rules,
// server/openai_request.cpp), and the calls the answer makes printed.
#pragma once

#include <string>

#include "smolinfer/tools.h"

namespace smolinfer::cli {

// Throws smolinfer::Error prefixed "--tools: " (a file that is missing,
// empty or not JSON, a tool the server would refuse, named) or
// "--tool-choice: " (not auto, none, required or one of the tools).
ToolRequest read_tools_flag(const std::string& path, const std::string& choice);

// Prints the content, then each call as one JSON line {"name","arguments"}
// (arguments as the model wrote them: JSON text, as OpenAI's). Text the
// parser cannot read as calls is printed as content.
void print_tool_answer(const ToolOutput& out, const std::string& text);

}  // namespace smolinfer::cli
