// Model outputs read back into content and tool calls, against llama.cpp's
// own parser (tests/golden/tools/parse.json, made by
// scripts/golden/tools/make-tools-golden.mjs) for the Hermes 2 Pro, Qwen2.5
// and Llama 3.2 templates under every tool_choice and parallel_tool_calls.
// Where llama.cpp fails (HTTP 500 in llama-server) ours says Invalid; where
// the text ends inside a call ours says Incomplete and still reports what
// llama.cpp reports.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/paths.h"
#include "text/chat_template.h"
#include "text/tool_output.h"

namespace smolinfer::text {
namespace {
namespace tool_output_golden {

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

ChatTemplate load(const nlohmann::json& t) {
    const std::string src = read_all(test::llama_source_path(t["template"]["llama_source"]));
    return ChatTemplate::from_template(src, nullptr, {t["bos_token"], t["eos_token"]});
}

}  // namespace tool_output_golden

using namespace tool_output_golden;

TEST(ToolOutputGolden, ParsesAsLlamaCppDoes) {
    const auto golden = test::load_golden("tools/parse.json");
    const std::vector<std::string> names = {"get_weather", "add"};
    size_t compared = 0, invalid = 0, incomplete = 0;
    for (const auto& t : golden["templates"]) {
        SCOPED_TRACE(t["name"].get<std::string>());
        const auto& outputs = t["outputs"];
        const bool smollm2 = t["name"] == "smollm2";
        const ToolSyntax syntax = smollm2 ? ToolSyntax{} : load(t).tool_syntax(true);
        for (const auto& v : t["variants"]) {
            const bool parallel = v["parallel_tool_calls"];
            SCOPED_TRACE(v["tool_choice"].get<std::string>() + (parallel ? " parallel" : " single"));
            for (size_t i = 0; i < outputs.size(); ++i) {
                const std::string text = outputs[i];
                const auto& expect = v["results"][i];
                SCOPED_TRACE(text);
                // No tool syntax, or tool_choice none: the text is the content, verbatim.
                if (syntax.kind != ToolSyntax::Kind::Json || v["tool_choice"] == "none") {
                    ASSERT_TRUE(expect.contains("message"));
                    EXPECT_EQ(expect["message"]["content"], text);
                    EXPECT_FALSE(expect["message"].contains("tool_calls"));
                    continue;
                }
                const ToolOutput out = read_tool_output(syntax, names, parallel, text);
                if (expect.contains("error")) {
                    EXPECT_EQ(out.status, ToolOutput::Status::Invalid);
                    ++invalid;
                    continue;
                }
                EXPECT_NE(out.status, ToolOutput::Status::Invalid);
                if (out.status == ToolOutput::Status::Incomplete) ++incomplete;
                const auto& m = expect["message"];
                EXPECT_EQ(out.content, m["content"].get<std::string>());
                const auto calls = m.value("tool_calls", nlohmann::json::array());
                ASSERT_EQ(out.calls.size(), calls.size());
                for (size_t k = 0; k < calls.size(); ++k) {
                    EXPECT_EQ(out.calls[k].name, calls[k]["function"]["name"].get<std::string>());
                    EXPECT_EQ(out.calls[k].arguments, calls[k]["function"]["arguments"].get<std::string>());
                }
                if (out.status == ToolOutput::Status::Complete) {
                    EXPECT_EQ(out.closed, out.calls.size());
                }
                ++compared;
            }
        }
    }
    EXPECT_GE(compared, 100u) << invalid << " " << incomplete;
    EXPECT_GE(invalid, 20u);
    EXPECT_GE(incomplete, 10u);
}

}  // namespace
}  // namespace smolinfer::text
