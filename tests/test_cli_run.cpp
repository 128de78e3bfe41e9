// `smolinfer run` with stop strings, on the tiny random model: the printed
// text is the unstopped text cut before the stop string completed first,
// and stderr says "stop: stop".
#include <cstdlib>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/paths.h"
#include "support/tiny_model.h"

namespace smolinfer {
namespace {

using test::run_cli;

std::string write_text(const std::string& text, const std::string& name) {
    return test::write_temp_file(std::vector<uint8_t>(text.begin(), text.end()), name);
}

TEST(CliRun, StopStringsCutTheAnswer) {
    test::TinyModelSpec spec;
    spec.tied_output = false;  // untied: greedy text varies instead of repeating one token
    const std::string model = test::write_temp_file(test::tiny_llama(spec), "cli-run-stop.gguf");
    const std::vector<std::string> base = {"run", "-m", model, "-t", "1", "-n", "40", "--temp", "0", "--json", "-p", "Once upon a time"};
    const auto text_of = [&](const std::vector<std::string>& extra, std::string* err = nullptr) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        const auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        if (err) *err = r.err;
        return nlohmann::json::parse(r.out)["text"].get<std::string>();
    };
    const std::string full = text_of({});
    ASSERT_GE(full.size(), 12u) << "the tiny model's greedy text is too short to cut";
    // The JSON text shows invalid UTF-8 as U+FFFD: stop strings of plain
    // ASCII (the same bytes in the stream and in the JSON): a character from
    // the second half, a pair from the first.
    const auto ascii_pair_from = [&](size_t from) {
        for (size_t i = from; i + 1 < full.size(); ++i) {
            if (full[i] > 0x20 && full[i] < 0x7f && full[i + 1] >= 0x20 && full[i + 1] < 0x7f) return full.substr(i, 2);
        }
        return std::string();
    };
    const auto ascii_char_from = [&](size_t from) {
        for (size_t i = from; i < full.size(); ++i) {
            if (full[i] > 0x20 && full[i] < 0x7f) return full.substr(i, 1);
        }
        return std::string();
    };
    const std::string a = ascii_char_from(full.size() / 2), b = ascii_pair_from(1);
    ASSERT_FALSE(a.empty() || b.empty()) << full;

    std::string err;
    EXPECT_EQ(text_of({"--stop", a}, &err), full.substr(0, full.find(a)));
    EXPECT_NE(err.find("stop: stop"), std::string::npos) << err;
    // Two stop strings: the one completed first wins.
    const size_t at_a = full.find(a), at_b = full.find(b);
    const size_t cut = at_a + a.size() < at_b + b.size() ? at_a : at_b;
    EXPECT_EQ(text_of({"--stop", a, "--stop", b}), full.substr(0, cut));
    // One that never appears changes nothing.
    EXPECT_EQ(text_of({"--stop", "\x01never\x02"}, &err), full);
    EXPECT_EQ(err.find("stop: stop"), std::string::npos) << err;
    std::filesystem::remove(model);
}

// bench -d fills the cache before each test and says so; -fa is reported.
TEST(CliRun, BenchAtDepthWithFlashAttentionChoices) {
    const std::string model = test::write_temp_file(test::tiny_llama(), "cli-run-bench.gguf");
    for (const char* fa : {"on", "off"}) {
        const auto r = run_cli({"bench", "-m", model, "-t", "1", "-p", "70", "-n", "2", "-d", "100", "-r", "1", "-fa", fa, "--json"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["depth"], 100);
        EXPECT_EQ(j["flash_attention"], std::string(fa) == "on");
        EXPECT_GT(j["prefill_tps"].get<double>(), 0);
        EXPECT_GT(j["decode_tps"].get<double>(), 0);
    }
    std::filesystem::remove(model);
}

// SMOLINFER_ISA caps the kernels (benchmarks measure an AVX2-only host on
// any); bench reports the ones it ran; another value is refused by name.
TEST(CliRun, IsaSwitchPicksTheKernels) {
    const std::string model = test::write_temp_file(test::tiny_llama(), "cli-run-isa.gguf");
    const auto kernels_with = [&](const char* isa) {
        ::setenv("SMOLINFER_ISA", isa, 1);
        const auto r = run_cli({"bench", "-m", model, "-t", "1", "-p", "8", "-n", "2", "-r", "1", "--json"});
        ::unsetenv("SMOLINFER_ISA");
        return r;
    };
    const auto scalar = kernels_with("scalar");
    ASSERT_EQ(scalar.exit_code, 0) << scalar.err;
    EXPECT_EQ(nlohmann::json::parse(scalar.out)["kernels"], "reference");
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
        const auto avx2 = kernels_with("avx2");
        ASSERT_EQ(avx2.exit_code, 0) << avx2.err;
        EXPECT_EQ(nlohmann::json::parse(avx2.out)["kernels"], "avx2");
    }
#endif
    const auto bad = kernels_with("avx9");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("SMOLINFER_ISA must be avx512, avx2 or scalar (got 'avx9')"), std::string::npos) << bad.err;
    std::filesystem::remove(model);
}

// run --tools on the real SmolLM2 with llama.cpp's Qwen2.5 template (Hermes
// calls: <tool_call>\n{"name", "arguments"}</tool_call>). A named choice
// gives exactly that call; the printed call is checked against the raw text
// read by hand (nlohmann, not smolinfer's parser) and the add schema.
TEST(CliRun, ToolsFilePrintsTheCalls) {
    const std::string tools = write_text(R"([
      {"type": "function", "function": {"name": "get_weather", "description": "Get the weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}},
      {"type": "function", "function": {"name": "add", "description": "Add two integers",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
    ])", "cli-run-tools.json");
    const std::vector<std::string> base = {"run", "-m", test::model_path(), "-t", "1", "-n", "60", "--temp", "0",
                                           "--chat-template-file",
                                           test::llama_source_path("models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
                                           "--tools", tools, "--tool-choice", "add", "-p", "What is 2+3? Use the add tool."};
    const auto plain = run_cli(base);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    auto with_json = base;
    with_json.push_back("--json");
    const auto json = run_cli(with_json);
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);

    // The raw answer is one Hermes call of add.
    const std::string text = j["text"], open = "<tool_call>\n", close = "</tool_call>";
    const size_t at = text.find(open), end = text.find(close);
    ASSERT_TRUE(at != std::string::npos && end != std::string::npos && at < end) << text;
    const auto call = nlohmann::json::parse(text.substr(at + open.size(), end - at - open.size()));
    ASSERT_EQ(call["name"], "add") << text;
    const auto& args = call["arguments"];
    ASSERT_TRUE(args.is_object() && args.size() == 2 && args["a"].is_number_integer() && args["b"].is_number_integer())
        << text;

    // --json: that call; plain: one JSON line per call after the (empty) content.
    ASSERT_EQ(j["tool_calls"].size(), 1u) << json.out;
    EXPECT_EQ(j["tool_calls"][0]["name"], "add");
    EXPECT_EQ(nlohmann::json::parse(j["tool_calls"][0]["arguments"].get<std::string>()), args);
    const std::string line = plain.out.substr(0, plain.out.find('\n'));
    EXPECT_EQ(plain.out, line + "\n") << plain.out;
    EXPECT_EQ(line.rfind("{\"name\":\"add\",\"arguments\":", 0), 0u) << line;
    EXPECT_EQ(nlohmann::json::parse(line), j["tool_calls"][0]);
    std::filesystem::remove(tools);
}

// The file is checked before the model is opened: each problem named.
TEST(CliRun, ToolsFileErrors) {
    const auto error_of = [](const std::vector<std::string>& extra) {
        std::vector<std::string> args = {"run", "-m", "/nonexistent-model.gguf", "-p", "hi"};
        args.insert(args.end(), extra.begin(), extra.end());
        const auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << r.out;
        return r.err;
    };
    const auto has = [](const std::string& err, const std::string& what) {
        EXPECT_NE(err.find(what), std::string::npos) << err;
    };
    has(error_of({"--tools", "/nonexistent-tools.json"}), "error: --tools: cannot read '/nonexistent-tools.json'");
    const std::string not_json = write_text("[{\"type\": ", "cli-tools-bad.json");
    has(error_of({"--tools", not_json}), "the tools are not valid JSON");
    const std::string dup = write_text(
        R"([{"type":"function","function":{"name":"add"}},{"type":"function","function":{"name":"add"}}])", "cli-tools-dup.json");
    has(error_of({"--tools", dup}), "tool 'add' is defined twice");
    const std::string refused = write_text(
        R"([{"type":"function","function":{"name":"odd","parameters":{"type":"object","properties":{"x":{"not":{}}}}}}])",
        "cli-tools-odd.json");
    has(error_of({"--tools", refused}), "tool 'odd': its parameters cannot be enforced");
    const std::string object = write_text(R"({"type":"function"})", "cli-tools-object.json");
    has(error_of({"--tools", object}), "'tools' must be an array");
    has(error_of({"--tools", dup, "--tool-choice", "sub"}), "tool 'add' is defined twice");
    const std::string one = write_text(R"([{"type":"function","function":{"name":"add"}}])", "cli-tools-one.json");
    has(error_of({"--tools", one, "--tool-choice", "sub"}), "--tool-choice: 'sub' is not auto, none, required or a tool");
    has(error_of({"--tool-choice", "auto"}), "--tool-choice needs --tools");
    for (const auto& f : {not_json, dup, refused, object, one}) std::filesystem::remove(f);
}

// The weights read into memory (the default) or used in place from the
// mapped file (--mmap): the same tokens.
TEST(CliRun, MmapGivesTheSameText) {
    const std::vector<std::string> base = {"run", "-m", test::model_path(), "-t", "1", "-n", "12", "--temp", "0",
                                           "--json", "-p", "The capital of France is"};
    auto mapped = base;
    mapped.push_back("--mmap");
    const auto read = run_cli(base), map = run_cli(mapped);
    ASSERT_EQ(read.exit_code, 0) << read.err;
    ASSERT_EQ(map.exit_code, 0) << map.err;
    EXPECT_EQ(nlohmann::json::parse(read.out)["ids"], nlohmann::json::parse(map.out)["ids"]);
    EXPECT_EQ(nlohmann::json::parse(read.out)["ids"].size(), 12u);
}

// A template given with --chat-template-file that smolinfer cannot run
// stops the run (the model's own would fall back to ChatML with a warning).
TEST(CliRun, ChatTemplateFileThatCannotRunIsAnError) {
    const std::string bad = write_text("{% for m in messages %}{{ m.content }}", "cli-bad-template.jinja");
    const auto r = run_cli({"run", "-m", test::model_path(), "-t", "1", "-n", "4", "--chat-template-file", bad, "-p", "hi"});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("the chat template given does not parse"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    std::filesystem::remove(bad);
}

}  // namespace
}  // namespace smolinfer
