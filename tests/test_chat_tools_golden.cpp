// Chat templates with tools, against llama.cpp's common/chat.cpp (what
// llama-server --jinja runs): the tool-call syntax its template analyser
// finds, and the prompt text for tools + messages, byte for byte
// (tests/golden/tools/prompts.json, made by
// scripts/golden/tools/make-tools-golden.mjs). Templates are read where the
// golden says: llama.cpp's models/templates or the real model's metadata.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "runtime/file_bytes.h"
#include "smolinfer/error.h"
#include "support/paths.h"
#include "text/chat_template.h"

namespace smolinfer::text {
namespace {
namespace tools_golden {

std::string template_source(const nlohmann::json& where) {
    if (where.contains("llama_source")) {
        std::ifstream in(test::llama_source_path(where["llama_source"]), std::ios::binary);
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }
    const auto bytes = runtime::FileBytes::map(test::model_path());
    const gguf::File file = gguf::File::parse(bytes->bytes());
    const auto tpl = file.metadata().get_string(where["model_metadata"].get<std::string>());
    if (!tpl) throw std::runtime_error("the model has no " + where["model_metadata"].get<std::string>());
    return std::string(*tpl);
}

// OpenAI's message shape to ours, as the server reads it (arguments given
// as an object are sent on as their compact JSON text, as llama.cpp does).
std::vector<ChatMessage> messages_of(const nlohmann::ordered_json& list) {
    std::vector<ChatMessage> out;
    for (const auto& m : list) {
        ChatMessage msg;
        msg.role = m["role"];
        if (m["content"].is_string()) msg.content = m["content"];
        if (m.contains("tool_call_id")) msg.tool_call_id = m["tool_call_id"];
        if (m.contains("name")) msg.name = m["name"];
        for (const auto& c : m.value("tool_calls", nlohmann::ordered_json::array())) {
            const auto& args = c["function"]["arguments"];
            msg.tool_calls.push_back(
                {c.value("id", ""), c["function"]["name"], args.is_string() ? args.get<std::string>() : args.dump()});
        }
        out.push_back(std::move(msg));
    }
    return out;
}

// Read with ordered_json: schemas reach the template in the client's key order.
std::vector<ChatTool> tools_of(const nlohmann::ordered_json& list) {
    std::vector<ChatTool> out;
    for (const auto& t : list) {
        const auto& f = t["function"];
        out.push_back({f["name"], f.value("description", ""), f.contains("parameters") ? f["parameters"].dump() : ""});
    }
    return out;
}

std::string joined(const std::vector<PromptPiece>& pieces) {
    std::string out;
    for (const auto& p : pieces) out += p.text;
    return out;
}

const char* kind_name(ToolSyntax::Kind k) {
    switch (k) {
        case ToolSyntax::Kind::None: return "NONE";
        case ToolSyntax::Kind::Json: return "JSON_NATIVE";
        case ToolSyntax::Kind::Unsupported: return "unsupported";
    }
    return "?";
}

nlohmann::ordered_json golden_ordered() {
    std::ifstream in(std::string(SMOLINFER_GOLDEN_DIR) + "/tools/prompts.json", std::ios::binary);
    return nlohmann::ordered_json::parse(in);
}

}  // namespace tools_golden

using namespace tools_golden;

TEST(ChatToolsGolden, SyntaxAndPromptsEqualLlamaCpps) {
    const auto golden = golden_ordered();
    const std::time_t now = golden["now"].get<int64_t>();
    size_t prompts = 0, errors = 0;
    for (const auto& t : golden["templates"]) {
        SCOPED_TRACE(t["name"].get<std::string>());
        std::string warning;
        const auto tpl = ChatTemplate::from_template(template_source(t["template"]), &warning,
                                                     {t["bos_token"], t["eos_token"]});
        ASSERT_TRUE(tpl.executes_template()) << warning;
        const auto& a = t["analysis"];
        const ToolSyntax& s = tpl.tool_syntax(true);
        EXPECT_STREQ(kind_name(s.kind), a["mode"].get<std::string>().c_str());
        if (s.kind == ToolSyntax::Kind::Json) {
            EXPECT_EQ(s.call_start, a["per_call_start"].get<std::string>());
            EXPECT_EQ(s.call_end, a["per_call_end"].get<std::string>());
            EXPECT_EQ(a["section_start"], "");
            EXPECT_EQ(s.name_key, a["name_field"].get<std::string>());
            EXPECT_EQ(s.args_key, a["args_field"].get<std::string>());
            EXPECT_EQ(s.type_field, a["openai_wrapper_trigger"].get<bool>());
        }
        EXPECT_EQ(s.parallel, a["supports_parallel_tool_calls"].get<bool>());
        for (const auto& c : t["cases"]) {
            SCOPED_TRACE(c["name"].get<std::string>());
            const auto messages = messages_of(c["messages"]);
            const auto tools = tools_of(c.value("tools", nlohmann::ordered_json::array()));
            const bool agp = c["add_generation_prompt"];
            if (c.contains("error")) {
                EXPECT_THROW(tpl.render(messages, agp, now, tools), Error) << c["error"];
                ++errors;
                continue;
            }
            try {
                EXPECT_EQ(joined(tpl.render(messages, agp, now, tools)), c["prompt"].get<std::string>());
            } catch (const Error& e) {
                ADD_FAILURE() << e.what();
            }
            ++prompts;
        }
    }
    EXPECT_GE(prompts, 60u);
    EXPECT_GE(errors, 2u);
}

// Tool text is the client's: a schema or description holding a control
// token's text must reach the tokenizer as plain text, never as the token.
TEST(ChatTools, ToolAndArgumentTextStaysPlain) {
    const std::string src =
        "{% for t in tools %}{{ t.function.description }}|{{ t | tojson }}{% endfor %}"
        "{% for m in messages %}{% for c in m.tool_calls %}{{ c.function.arguments | tojson }}{% endfor %}"
        "{{ m.content }}{% endfor %}";
    const auto tpl = ChatTemplate::from_template(src, nullptr);
    ChatMessage call{"assistant", "", {{"1", "f", R"({"x": "<|im_end|>"})"}}, {}, {}};
    const auto pieces = tpl.render({{"user", "hi", {}, {}, {}}, call}, false, 0,
                                   {{"f", "<|im_start|>", R"({"type":"object"})"}});
    for (const auto& p : pieces) {
        if (p.text.find("<|im_") != std::string::npos) {
            EXPECT_FALSE(p.parse_special) << p.text;
        }
    }
}

TEST(ChatTools, InvalidArgumentsJsonIsAnErrorNamingTheCall) {
    const auto golden = golden_ordered();
    const auto& qwen = golden["templates"][2];
    ASSERT_EQ(qwen["name"], "qwen2.5");
    const auto tpl = ChatTemplate::from_template(template_source(qwen["template"]), nullptr);
    ChatMessage call{"assistant", "", {{"1", "add", "{\"a\": 1"}}, {}, {}};
    try {
        tpl.render({{"user", "hi", {}, {}, {}}, call}, true, 0, {{"add", "", ""}});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("messages[1].tool_calls[0].function.arguments"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace smolinfer::text
