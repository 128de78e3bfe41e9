// Where the tests find their inputs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "smolinfer/session.h"

namespace smolinfer::test {

// tests/golden/<name>
std::string golden_path(const std::string& name);

// Parsed tests/golden/<name>; fails the calling test if unreadable.
nlohmann::json load_golden(const std::string& name);

// The real models: "Q4_1" is the fetched SmolLM2 file ($SMOLINFER_MODEL);
// other names are that file quantized by smolinfer or another fetched model
// ($SMOLINFER_MODEL_<NAME> with every character but letters and digits as
// '_': SMOLINFER_MODEL_Q4_K_M, SMOLINFER_MODEL_GEMMA_3_270M). make test
// sets them. Throws with a clear message when one is not set or missing, so
// tests that need a model fail loudly rather than skip.
std::string model_path(const std::string& name = "Q4_1");

// A file of llama.cpp's source tree ($SMOLINFER_LLAMA_SRC, which make test
// sets from scripts/llama-cpp-source), e.g. "models/ggml-vocab-qwen2.gguf".
// Throws with a clear message when the variable is unset or the file missing.
std::string llama_source_path(const std::string& relative);

// The models with llama.cpp golden files in tests/golden/<name>/: the
// SmolLM2 files and Gemma 3 270M ("gemma-3-270m").
const std::vector<std::string>& golden_models();
// The SmolLM2 ones only (Q4_1 and our Q4_K_M), for the tests that check
// what does not depend on the family (batching, dequantization).
const std::vector<std::string>& smollm2_golden_models();

// The directories of golden generation and perplexity runs: each golden
// model's own (flash attention off) and <model>/flash-attn (on, llama.cpp's
// default).
const std::vector<std::string>& golden_runs();
const std::vector<std::string>& smollm2_golden_runs();
// The model of a golden run ("Q4_1/flash-attn" -> "Q4_1").
std::string golden_run_model(const std::string& run);
// A test-name-safe form of a golden run ("Q4_1/flash-attn" -> "Q4_1_flash_attn").
std::string golden_run_test_name(const std::string& run);

// The attention a golden file was made with (its source.context.flashAttention,
// which must be a boolean): a session reproducing it must use the same.
FlashAttention golden_flash_attention(const nlohmann::json& golden);
// The thread count llama.cpp ran with (source.context.threads): the session
// reproduces its split of a decoded token's attention (SessionOptions::reference_threads).
int golden_threads(const nlohmann::json& golden);

// The smolinfer command-line binary of this build.
std::string cli_path();

// True when the golden tests run against the fast, not bit-exact arithmetic
// of the plain WebAssembly SIMD128 build (SMOLINFER_TEST_ARITHMETIC=fast,
// set by scripts/run-tests for that build): sessions open with
// SessionOptions::exact = false and the tests apply that build's bars.
bool fast_arithmetic();

}  // namespace smolinfer::test
