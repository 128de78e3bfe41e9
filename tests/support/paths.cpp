#include "support/paths.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace smolinfer::test {

std::string golden_path(const std::string& name) { return std::string(SMOLINFER_GOLDEN_DIR) + "/" + name; }

nlohmann::json load_golden(const std::string& name) {
    std::ifstream in(golden_path(name));
    if (!in) throw std::runtime_error("cannot read golden file " + golden_path(name));
    return nlohmann::json::parse(in);
}

std::string model_path(const std::string& name) {
    const std::string var = name == "Q4_1" ? "SMOLINFER_MODEL" : "SMOLINFER_MODEL_" + name;
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

const std::vector<std::string>& golden_models() {
    static const std::vector<std::string> names = {"Q4_1", "Q4_K_M"};
    return names;
}

const std::vector<std::string>& golden_runs() {
    static const std::vector<std::string> runs = [] {
        std::vector<std::string> r = golden_models();
        for (const std::string& m : golden_models()) r.push_back(m + "/flash-attn");
        return r;
    }();
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

std::string cli_path() { return SMOLINFER_CLI_PATH; }

bool fast_arithmetic() {
    const char* a = std::getenv("SMOLINFER_TEST_ARITHMETIC");
    return a != nullptr && std::string(a) == "fast";
}

}  // namespace smolinfer::test
