// Chat templates of several model families rendered by smolinfer's Jinja
// interpreter, byte for byte against llama.cpp's own Jinja engine
// (tests/golden/chat/*.json, made by scripts/golden/chat/make-chat-golden.mjs).
// The template texts are read at run time from where the golden says: a file
// of llama.cpp's source, a template string of llama.cpp's
// tests/test-chat-template.cpp, the real model's metadata, or (Hugging Face
// templates found in neither) the golden itself.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
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

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The C string literal after `/* .template_str= */` in the test case named
// `name` of llama.cpp's tests/test-chat-template.cpp.
std::string test_case_template(const std::string& name) {
    const std::string src = read_text(test::llama_source_path("tests/test-chat-template.cpp"));
    const size_t at = src.find("/* .name= */ \"" + name + "\"");
    if (at == std::string::npos) throw std::runtime_error("no test case " + name);
    const size_t open = src.find('"', src.find("/* .template_str= */", at));
    std::string out;
    for (size_t i = open + 1; i < src.size(); ++i) {
        const char c = src[i];
        if (c == '"') return out;
        if (c != '\\') {
            out += c;
            continue;
        }
        const char e = src[++i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
    }
    throw std::runtime_error("unterminated template string of " + name);
}

std::string template_text(const nlohmann::json& source) {
    if (source.contains("llama_source")) return read_text(test::llama_source_path(source["llama_source"]));
    if (source.contains("llama_test_case")) return test_case_template(source["llama_test_case"]);
    if (source.contains("text")) return source["text"];
    const auto bytes = runtime::FileBytes::map(test::model_path());
    const gguf::File file = gguf::File::parse(bytes->bytes());
    const auto tpl = file.metadata().get_string(source["model_metadata"].get<std::string>());
    if (!tpl) throw std::runtime_error("the model has no " + source["model_metadata"].get<std::string>());
    return std::string(*tpl);
}

std::string concat(const std::vector<PromptPiece>& pieces) {
    std::string out;
    for (const auto& p : pieces) out += p.text;
    return out;
}

class ChatGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatGolden, RendersAsLlamaCppDoes) {
    const auto golden = test::load_golden("chat/" + GetParam() + ".json");
    const std::string source = template_text(golden["template"]);
    std::string warning;
    const auto t = ChatTemplate::from_template(source, &warning, {golden["bos_token"], golden["eos_token"]});
    ASSERT_TRUE(t.executes_template()) << warning;
    EXPECT_TRUE(warning.empty()) << warning;
    const std::time_t now = golden["now"].get<int64_t>();
    ASSERT_FALSE(golden["cases"].empty());
    for (const auto& c : golden["cases"]) {
        SCOPED_TRACE(c["name"].get<std::string>());
        std::vector<ChatMessage> messages;
        for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
        const bool agp = c["add_generation_prompt"];
        if (c.contains("error")) {
            // llama.cpp wraps the template's message in its source location; ours carries the message itself.
            const std::string full = c["error"];
            const std::string marker = "Jinja Exception: ";
            ASSERT_NE(full.find(marker), std::string::npos) << full;
            const std::string message = full.substr(full.find(marker) + marker.size());
            try {
                t.render(messages, agp, now);
                ADD_FAILURE() << "expected the template to raise: " << message;
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
            }
            continue;
        }
        const auto pieces = t.render(messages, agp, now);
        EXPECT_EQ(concat(pieces), c["output"].get<std::string>());
        // Plain (never special-token) pieces hold message text only, and the
        // last user message reaches the prompt that way.
        std::string plain;
        for (const auto& p : pieces) {
            if (p.parse_special) continue;
            plain += p.text;
            bool from_a_message = false;
            for (const auto& m : messages) from_a_message = from_a_message || m.content.find(p.text) != std::string::npos;
            EXPECT_TRUE(from_a_message) << "plain piece not from any message: " << p.text;
        }
        std::string last_user;
        for (const auto& m : messages) {
            if (m.role == "user") last_user = m.content;
        }
        const size_t b = last_user.find_first_not_of(" \t\n"), e = last_user.find_last_not_of(" \t\n");
        EXPECT_NE(plain.find(last_user.substr(b, e - b + 1)), std::string::npos) << "the user's text is not plain";
    }
}

INSTANTIATE_TEST_SUITE_P(Families, ChatGolden,
                         ::testing::Values("smollm2", "qwen2.5", "qwen3", "llama3.2", "llama3.1", "phi3.5", "zephyr",
                                           "llama2", "mistral-v0.2"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n) {
                                 if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                             }
                             return n;
                         });

// Breadth: every template in llama.cpp's models/templates on two
// conversations. Those the interpreter accepts render exactly as llama.cpp
// renders them (or fail where llama.cpp fails); the rest must be refused by
// name at load, and exactly these are (a construct added or lost shows here).
TEST(ChatGoldenBreadth, EveryLlamaCppTemplateRendersIdenticallyOrIsRefused) {
    const std::set<std::string> refused = {
        "ByteDance-Seed-OSS.jinja",
        "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
        "Kimi-K2-Instruct.jinja",
        "Kimi-K2-Thinking.jinja",
        "Kimi-K3.jinja",
        "deepseek-ai-DeepSeek-V3.2.jinja",
        "deepseek-ai-DeepSeek-V4-Flash-0731.jinja",
        "deepseek-ai-DeepSeek-V4.jinja",
        "fireworks-ai-llama-3-firefunction-v2.jinja",
        "google-gemma-4-31B-it-interleaved.jinja",
        "google-gemma-4-31B-it.jinja",
        "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
        "openbmb-MiniCPM5-1B.jinja",
        "tencent-Hy3.jinja",
    };
    const auto golden = test::load_golden("chat/llama-cpp-templates.json");
    const ChatTokens tokens{golden["bos_token"], golden["eos_token"]};
    const std::time_t now = golden["now"].get<int64_t>();
    size_t rendered = 0;
    for (const auto& tpl : golden["templates"]) {
        const std::string file = tpl["llama_source"];
        const std::string name = file.substr(file.rfind('/') + 1);
        SCOPED_TRACE(name);
        std::string warning;
        const auto t = ChatTemplate::from_template(read_text(test::llama_source_path(file)), &warning, tokens);
        EXPECT_EQ(!t.executes_template(), refused.count(name) == 1) << warning;
        if (!t.executes_template()) {
            EXPECT_NE(warning.find("does not support"), std::string::npos) << warning;
            continue;
        }
        for (size_t c = 0; c < golden["conversations"].size(); ++c) {
            const auto& conv = golden["conversations"][c];
            const auto& expect = tpl["results"][c];
            std::vector<ChatMessage> messages;
            for (const auto& m : conv["messages"]) messages.push_back({m["role"], m["content"]});
            if (expect.contains("error")) {
                EXPECT_THROW(t.render(messages, conv["add_generation_prompt"], now), Error) << expect["error"];
                continue;
            }
            EXPECT_EQ(concat(t.render(messages, conv["add_generation_prompt"], now)), expect["output"].get<std::string>())
                << conv["name"];
            ++rendered;
        }
    }
    EXPECT_GE(rendered, 100u);
}

}  // namespace
}  // namespace smolinfer::text
