#include "run_tools.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "server/openai_request.h"
#include "smolinfer/error.h"

namespace smolinfer::cli {

ToolRequest read_tools_flag(const std::string& path, const std::string& choice) {
    std::string text;
    try {
        text = read_file(path);
    } catch (const Error& e) {
        throw Error(std::string("--tools: ") + e.what());
    }
    ToolRequest r;
    try {
        r.tools = server::parse_tools(text);
    } catch (const server::BadRequest& e) {
        throw Error("--tools: '" + path + "': " + e.what());
    }
    if (r.tools.empty()) throw Error("--tools: '" + path + "' holds no tools (an empty array)");
    if (choice.empty() || choice == "auto") {
        r.choice = ToolChoice::Auto;
    } else if (choice == "none") {
        r.choice = ToolChoice::None;
    } else if (choice == "required") {
        r.choice = ToolChoice::Required;
    } else {
        bool found = false;
        for (const Tool& t : r.tools) found = found || t.name == choice;
        if (!found) throw Error("--tool-choice: '" + choice + "' is not auto, none, required or a tool in '" + path + "'");
        r.choice = ToolChoice::Named;
        r.function = choice;
    }
    return r;
}

void print_tool_answer(const ToolOutput& out, const std::string& text) {
    // Ordered: {"name", "arguments"} as OpenAI's function objects read.
    const auto dump = [](const nlohmann::ordered_json& j) {
        return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    };
    // Written as bytes: a model's text may hold anything, NUL included.
    const auto line = [](const std::string& t) {
        std::fwrite(t.data(), 1, t.size(), stdout);
        std::fputc('\n', stdout);
    };
    if (out.status != ToolOutput::Status::Complete) {
        line(text);  // cut off inside a call, or not a call after all: the text as it came
        return;
    }
    if (!out.content.empty()) line(out.content);
    for (const ToolCall& c : out.calls) {
        line(dump({{"name", c.name}, {"arguments", c.arguments}}));
    }
}

}  // namespace smolinfer::cli
