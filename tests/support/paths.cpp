#include "support/paths.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace smolinfer::test {

// SMOLINFER_GOLDEN_DIR in the environment wins: the WebAssembly suites are
// compiled without the clone's path in them (so that a second clone finds
// their objects and links in the caches), and web/tests/wasm-gtest.mjs says
// where the files are.
std::string golden_path(const std::string& name) {
    const char* dir = std::getenv("SMOLINFER_GOLDEN_DIR");
    return std::string(dir != nullptr && *dir != '\0' ? dir : SMOLINFER_GOLDEN_DIR) + "/" + name;
}

nlohmann::json load_golden(const std::string& name) {
    std::ifstream in(golden_path(name));
    if (!in) throw std::runtime_error("cannot read golden file " + golden_path(name));
    return nlohmann::json::parse(in);
}

std::string model_path(const std::string& name) {
    std::string var = "SMOLINFER_MODEL";
    if (name != "Q4_1") {
        var += "_";
        for (const char ch : name) var += std::isalnum(static_cast<unsigned char>(ch)) ? char(std::toupper(ch)) : '_';
    }
    const char* p = std::getenv(var.c_str());
    if (p == nullptr || *p == '\0') {
        throw std::runtime_error(var + " is not set: run the tests with 'make test', which fetches and makes the models");
    }
    if (!std::ifstream(p)) throw std::runtime_error(var + "=" + p + " does not exist");
    return p;
}

std::string llama_source_path(const std::string& relative) {
    const char* root = std::getenv("SMOLINFER_LLAMA_SRC");
    if (root == nullptr || *root == '\0') {
        throw std::runtime_error("SMOLINFER_LLAMA_SRC is not set: run the tests with 'make test', which unpacks llama.cpp's source");
    }
    const std::string path = std::string(root) + "/" + relative;
    if (!std::ifstream(path)) throw std::runtime_error(path + " does not exist (SMOLINFER_LLAMA_SRC=" + root + ")");
    return path;
}

const std::vector<std::string>& smollm2_golden_models() {
    static const std::vector<std::string> names = {"Q4_1", "Q4_K_M"};
    return names;
}

const std::vector<std::string>& golden_models() {
    static const std::vector<std::string> names = {"Q4_1", "Q4_K_M", "gemma-3-270m"};
    return names;
}

namespace {
std::vector<std::string> runs_of(const std::vector<std::string>& models) {
    std::vector<std::string> r = models;
    for (const std::string& m : models) r.push_back(m + "/flash-attn");
    return r;
}
}  // namespace

const std::vector<std::string>& golden_runs() {
    static const std::vector<std::string> runs = runs_of(golden_models());
    return runs;
}

const std::vector<std::string>& smollm2_golden_runs() {
    static const std::vector<std::string> runs = runs_of(smollm2_golden_models());
    return runs;
}

std::string golden_run_model(const std::string& run) { return run.substr(0, run.find('/')); }

std::string golden_run_test_name(const std::string& run) {
    std::string n = run;
    for (char& ch : n) {
        if (ch == '/' || ch == '-' || ch == '.') ch = '_';
    }
    return n;
}

FlashAttention golden_flash_attention(const nlohmann::json& golden) {
    const auto& f = golden.at("source").at("context").at("flashAttention");
    if (!f.is_boolean()) throw std::runtime_error("golden source.context.flashAttention is not a boolean: " + f.dump());
    return f.get<bool>() ? FlashAttention::On : FlashAttention::Off;
}

int golden_threads(const nlohmann::json& golden) {
    const auto& t = golden.at("source").at("context").at("threads");
    if (!t.is_number_integer() || t.get<int>() < 1) {
        throw std::runtime_error("golden source.context.threads is not a positive integer: " + t.dump());
    }
    return t.get<int>();
}

std::string cli_path() { return SMOLINFER_CLI_PATH; }

bool fast_arithmetic() {
    const char* a = std::getenv("SMOLINFER_TEST_ARITHMETIC");
    return a != nullptr && std::string(a) == "fast";
}

}  // namespace smolinfer::test
