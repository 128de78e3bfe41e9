// Runs llama.cpp's chat machinery (common/chat.cpp: template analysis, prompt
// rendering with tools, tool-call grammar, output parsing and the streamed
// diffs) on one request per stdin line and prints one JSON result per line.
// Built and driven by make-tools-golden.mjs against the prebuilt common
// library node-llama-cpp ships (same llama.cpp commit as its source tree).
//
// Request: {"template": text, "bos", "eos", "messages", "tools",
//   "tool_choice", "parallel_tool_calls", "add_generation_prompt",
//   "outputs": [{"text", "partial"}], "stream": [chunk, ...]}
// The server's clock gives the date strings (llama.cpp ignores inputs.now
// for them); the caller records the moment and checks the date.
#include <iostream>
#include <sstream>
#include <string>

#include "chat.h"
#include "chat-auto-parser.h"

using json = common_json;

namespace {

json tool_call_delta(const common_chat_msg_diff& d) {
    json tc;
    tc["index"] = d.tool_call_index;
    if (!d.tool_call_delta.id.empty()) {
        tc["id"] = d.tool_call_delta.id;
        tc["type"] = "function";
    }
    json f = json::object();
    if (!d.tool_call_delta.name.empty()) f["name"] = d.tool_call_delta.name;
    if (!d.tool_call_delta.arguments.empty()) f["arguments"] = d.tool_call_delta.arguments;
    if (!f.empty()) tc["function"] = f;
    return tc;
}

// What the server streams for the chunks: one delta object per diff; ids are
// "ID1", "ID2", ... in place of the server's random ones.
json stream_deltas(const common_chat_params& p, const common_chat_templates_inputs& in, const json& chunks) {
    common_chat_parser_params pp(p);
    pp.reasoning_format = in.reasoning_format;
    if (!p.parser.empty()) pp.parser.load(p.parser);
    std::string text;
    common_chat_msg prev;
    std::vector<std::string> ids;
    int next_id = 0;
    auto gen = [&] { return "ID" + std::to_string(++next_id); };
    json out = json::array();
    for (size_t i = 0; i <= chunks.size(); ++i) {
        const bool partial = i < chunks.size();
        if (partial) text += chunks[i].get<std::string>();
        json step = json::object();
        try {
            common_chat_msg msg = common_chat_parse(text, partial, pp);
            json deltas = json::array();
            if (!msg.empty()) {
                msg.set_tool_call_ids(ids, gen);
                for (const auto& d : common_chat_msg_diff::compute_diffs(prev, msg)) {
                    json delta = json::object();
                    if (!d.reasoning_content_delta.empty()) delta["reasoning_content"] = d.reasoning_content_delta;
                    if (!d.content_delta.empty()) delta["content"] = d.content_delta;
                    if (d.tool_call_index != std::string::npos) delta["tool_calls"] = json::array({tool_call_delta(d)});
                    deltas.push_back(delta);
                }
                prev = msg;
            }
            step["deltas"] = deltas;
        } catch (const std::exception& e) {
            step["error"] = e.what();
        }
        out.push_back(step);
    }
    return out;
}

// The template's tool-call format as the auto-analyser finds it, and the
// capabilities llama.cpp reads off the template.
json analysis(const std::string& source, const std::string& bos, const std::string& eos) {
    json a = json::object();
    common_chat_template tmpl(source, bos, eos);
    for (const auto& [k, v] : tmpl.original_caps().to_map()) a["caps"][k] = v;
    try {
        autoparser::autoparser ap;
        ap.analyze_template(tmpl);
        const auto& f = ap.tools.format;
        std::ostringstream mode;
        mode << f.mode;
        a["mode"] = mode.str();
        a["section_start"] = f.section_start;
        a["section_end"] = f.section_end;
        a["per_call_start"] = f.per_call_start;
        a["per_call_end"] = f.per_call_end;
        a["name_field"] = f.name_field;
        a["args_field"] = f.args_field;
        a["openai_wrapper_trigger"] = f.openai_wrapper_trigger;
    } catch (const std::exception& e) {
        a["error"] = e.what();
    }
    return a;
}

json run(const json& req) {
    json out = json::object();
    if (req.value("analyze", false)) {
        out["analysis"] = analysis(req.at("template").get<std::string>(), req.value("bos", std::string()),
                                   req.value("eos", std::string()));
    }
    auto tmpls = common_chat_templates_init(nullptr, req.at("template").get<std::string>(), req.value("bos", std::string()),
                                            req.value("eos", std::string()));
    common_chat_templates_inputs in;
    try {
        in.messages = common_chat_msgs_parse_oaicompat(req.at("messages"));
        if (req.contains("tools")) in.tools = common_chat_tools_parse_oaicompat(req.at("tools"));
        in.tool_choice = common_chat_tool_choice_parse_oaicompat(req.value("tool_choice", std::string("auto")));
    } catch (const std::exception& e) {
        out["error"] = e.what();
        return out;
    }
    in.parallel_tool_calls = req.value("parallel_tool_calls", false);
    in.add_generation_prompt = req.value("add_generation_prompt", true);
    in.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;  // the server's default
    in.enable_thinking = true;
    common_chat_params p;
    try {
        p = common_chat_templates_apply(tmpls.get(), in);
    } catch (const std::exception& e) {
        out["error"] = e.what();
        return out;
    }
    out["format"] = common_chat_format_name(p.format);
    out["prompt"] = p.prompt;
    out["generation_prompt"] = p.generation_prompt;
    out["grammar"] = p.grammar;
    out["grammar_lazy"] = p.grammar_lazy;
    json triggers = json::array();
    for (const auto& t : p.grammar_triggers) triggers.push_back(t.value);
    out["grammar_triggers"] = triggers;
    out["preserved_tokens"] = p.preserved_tokens;
    if (req.contains("outputs")) {
        json parsed = json::array();
        for (const auto& o : req.at("outputs")) {
            common_chat_parser_params pp(p);
            pp.reasoning_format = in.reasoning_format;
            if (!p.parser.empty()) pp.parser.load(p.parser);
            json one = json::object();
            try {
                one["message"] = common_chat_parse(o.at("text").get<std::string>(), o.value("partial", false), pp)
                                     .to_json_oaicompat();
            } catch (const std::exception& e) {
                one["error"] = e.what();
            }
            parsed.push_back(one);
        }
        out["parsed"] = parsed;
    }
    if (req.contains("stream")) out["stream"] = stream_deltas(p, in, req.at("stream"));
    return out;
}

}  // namespace

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        std::cout << run(json::parse(line)).dump() << "\n" << std::flush;
    }
}
