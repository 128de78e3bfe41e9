// The grammars tool_choice "required" and a named function force
// (tool_call_grammar), checked on hand-written outputs with the grammar
// matcher: what llama-server's required grammar lets through (text without
// the call marker, then calls whose arguments fit the schema), and for a
// named function exactly one call of it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "smolinfer/error.h"
#include "smolinfer/tools.h"
#include "support/paths.h"
#include "text/chat_template.h"

namespace smolinfer {
namespace {
namespace tool_grammar_test {

// One token per byte value 1..255, and 0 for end of generation.
std::shared_ptr<const grammar::TokenTable> byte_tokens() {
    std::vector<std::string> pieces = {"<eos>"};
    for (int b = 1; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
    std::vector<uint8_t> eog(pieces.size(), 0);
    eog[0] = 1;
    return std::make_shared<const grammar::TokenTable>(pieces, eog);
}

bool accepts(const std::optional<ToolGrammar>& g, const std::string& text) {
    const std::string& gbnf = g->gbnf;
    grammar::Matcher m(grammar::parse_grammar(gbnf), byte_tokens());
    for (unsigned char c : text) {
        const auto bits = m.allowed(false);
        if (!((bits[c / 64] >> (c % 64)) & 1)) return false;
        m.accept(int32_t(c));
    }
    return m.complete();
}

const Tool kAdd{"add", "", R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]})"};
const Tool kWeather{"get_weather", "", R"({"type":"object","properties":{"location":{"type":"string"}},"required":["location"]})"};

ToolSyntax hermes() {
    ToolSyntax s;
    s.kind = ToolSyntax::Kind::Json;
    s.call_start = "<tool_call>\n";
    s.call_end = "</tool_call>";
    s.parallel = true;
    return s;
}

ToolSyntax llama3() {
    ToolSyntax s;
    s.kind = ToolSyntax::Kind::Json;
    s.args_key = "parameters";
    s.type_field = true;
    return s;
}

std::map<std::string, std::string> rules_of(const std::string& gbnf) {
    std::map<std::string, std::string> out;
    std::istringstream in(gbnf);
    std::string line;
    while (std::getline(in, line)) {
        const size_t at = line.find(" ::= ");
        if (at != std::string::npos) out[line.substr(0, at)] = line.substr(at + 5);
    }
    return out;
}

}  // namespace tool_grammar_test

using namespace tool_grammar_test;

TEST(ToolGrammar, RequiredHermes) {
    const auto g = tool_call_grammar(hermes(), {{kWeather, kAdd}, ToolChoice::Required, "", {}}, true);
    ASSERT_TRUE(g);
    const std::string add = "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>";
    EXPECT_TRUE(accepts(*g, add));
    EXPECT_TRUE(accepts(*g, "Let me add <these> <tool_call>.\n" + add));
    EXPECT_TRUE(accepts(*g, add + "\n" + add));
    EXPECT_TRUE(accepts(*g, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, "
                            "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}</tool_call>"));
    EXPECT_FALSE(accepts(*g, "Just text."));
    EXPECT_FALSE(accepts(*g, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": \"1\", \"b\": 2}}\n</tool_call>"));
    EXPECT_FALSE(accepts(*g, "<tool_call>\n{\"name\": \"sub\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"));
    EXPECT_FALSE(accepts(*g, "<tool_call>\n{\"arguments\": {\"a\": 1, \"b\": 2}, \"name\": \"add\"}\n</tool_call>"));
    EXPECT_FALSE(accepts(*g, add + " and more"));
    // Without parallel calls, one call per block (blocks may still repeat).
    const auto single = tool_call_grammar(hermes(), {{kWeather, kAdd}, ToolChoice::Required, "", {}}, false);
    EXPECT_FALSE(accepts(*single, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, "
                                  "{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}</tool_call>"));
    EXPECT_TRUE(accepts(*single, add + "\n" + add));
}

TEST(ToolGrammar, NamedCallsExactlyThatFunctionOnce) {
    const auto g = tool_call_grammar(hermes(), {{kWeather, kAdd}, ToolChoice::Named, "get_weather", {}}, true);
    ASSERT_TRUE(g);
    const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>";
    EXPECT_TRUE(accepts(*g, call));
    EXPECT_FALSE(accepts(*g, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"));
    EXPECT_FALSE(accepts(*g, "Sure. " + call));
    EXPECT_FALSE(accepts(*g, call + "\n" + call));
    EXPECT_FALSE(accepts(*g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
}

TEST(ToolGrammar, RequiredLlama3) {
    const auto g = tool_call_grammar(llama3(), {{kWeather, kAdd}, ToolChoice::Required, "", {}}, false);
    ASSERT_TRUE(g);
    EXPECT_TRUE(accepts(*g, "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}"));
    EXPECT_TRUE(accepts(*g, "Sure: {\"type\": \"function\", \"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}"));
    EXPECT_FALSE(accepts(*g, "{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}"));
    EXPECT_FALSE(accepts(*g, "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}, "
                             "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}"));
}

// The call rules (tool-call, tool-<name>, tool-<name>-schema...) equal
// llama.cpp's for "required" on the real templates (tests/golden/tools/
// parse.json). Its root differs by design: llama.cpp's starts with the
// generation prompt, which it feeds the grammar before sampling, and names
// its free-text rules after parser node ids.
TEST(ToolGrammar, CallRulesEqualLlamaCppsForRequired) {
    const auto golden = test::load_golden("tools/parse.json");
    std::vector<Tool> tools;
    for (const auto& t : golden["tools"]) {
        const auto& f = t["function"];
        tools.push_back({f["name"], f.value("description", ""), f["parameters"].dump()});
    }
    // The golden's schemas went through nlohmann::json (sorted keys) here; the
    // rules do not depend on key order except properties', which are sorted
    // in the golden's tools already (location < unit, a < b).
    size_t compared = 0;
    for (const auto& t : golden["templates"]) {
        if (t["name"] == "smollm2") continue;
        SCOPED_TRACE(t["name"].get<std::string>());
        std::ifstream in(test::llama_source_path(t["template"]["llama_source"]), std::ios::binary);
        std::ostringstream src;
        src << in.rdbuf();
        const auto tpl = text::ChatTemplate::from_template(src.str(), nullptr, {t["bos_token"], t["eos_token"]});
        for (const auto& v : t["variants"]) {
            if (v["tool_choice"] != "required") continue;
            const bool parallel = v["parallel_tool_calls"];
            const auto ours = rules_of(tool_call_grammar(tpl.tool_syntax(true), {tools, ToolChoice::Required, "", {}}, parallel)->gbnf);
            const auto theirs = rules_of(v["grammar"]);
            for (const auto& [name, body] : theirs) {
                if (name.rfind("tool-", 0) != 0 || name == "tool-calls") continue;
                ASSERT_TRUE(ours.count(name)) << name;
                EXPECT_EQ(ours.at(name), body) << name;
                ++compared;
            }
        }
    }
    EXPECT_GE(compared, 40u);
}

// auto: lazy from the call marker on; only calls after it.
TEST(ToolGrammar, AutoIsLazyFromTheMarker) {
    const auto g = tool_call_grammar(hermes(), {{kWeather, kAdd}, ToolChoice::Auto, "", {}}, true);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->triggers, std::vector<std::string>{"<tool_call>\n"});
    const std::string add = "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>";
    EXPECT_TRUE(accepts(g, add));
    EXPECT_TRUE(accepts(g, add + "\n" + add + "\n"));
    EXPECT_FALSE(accepts(g, "Text " + add));
    EXPECT_FALSE(accepts(g, add + " and text"));
    // Llama 3.x calls have no marker to trigger on: no grammar, as in llama-server.
    EXPECT_FALSE(tool_call_grammar(llama3(), {{kAdd}, ToolChoice::Auto, "", {}}, true));
}

TEST(ToolGrammar, NoGrammarForNoneOrNoSyntax) {
    EXPECT_FALSE(tool_call_grammar(hermes(), {{kAdd}, ToolChoice::None, "", {}}, true));
    EXPECT_FALSE(tool_call_grammar(ToolSyntax{}, {{kAdd}, ToolChoice::Required, "", {}}, true));
}

}  // namespace
}  // namespace smolinfer
