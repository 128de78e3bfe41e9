// Random-weight GGUF models of the families smolinfer runs, in each family's
// real layout (tensor names, fusions, biases, norms, RoPE factors) with a
// real vocabulary taken from one of llama.cpp's vocabulary files. llama.cpp
// runs any valid file, so its outputs on these are golden files for the
// forward pass of families whose real weights cannot be fetched here.
// The same spec gives the same bytes in every build: the golden files record
// each model's sha256.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quant/types.h"

namespace smolinfer::gguf {
class File;
}

namespace smolinfer::test {

struct RandomModelSpec {
    std::string name;          // golden file name: tests/golden/families/<name>.json
    std::string architecture;  // general.architecture
    std::string vocab;         // llama.cpp's models/ggml-vocab-<vocab>.gguf; "smollm2": the real model's (model_path())
    int n_embd = 256;
    int n_layer = 2;
    int n_head = 4;
    int n_head_kv = 2;
    int head_dim = 0;  // 0: n_embd / n_head (written as attention.key_length otherwise)
    int n_ff = 512;
    int rope_dim = 0;  // 0: head_dim
    float rope_base = 10000.0f;
    int n_ctx_train = 4096;
    bool qkv_bias = false;    // qwen2
    bool qk_norm = false;     // qwen3
    bool fused_qkv = false;   // phi3: attn_qkv
    bool fused_up = false;    // phi3: ffn_up holds gate and up
    bool rope_freqs = false;  // Llama 3.x: rope_freqs.weight
    bool longrope = false;    // phi3: rope_factors_short/long, attn_factor, original context
    int n_ctx_orig = 0;       // longrope: rope.scaling.original_context_length
    bool post_norms = false;  // gemma3: post_attention_norm and post_ffw_norm
    int sliding_window = 0;   // gemma3: attention.sliding_window (0: none)
    int swa_pattern = 0;      // gemma3: attention.sliding_window_pattern (0: not written)
    float rope_base_swa = 0;  // gemma3: rope.freq_base_swa (0: not written)
    bool tied_output = true;
    quant::Type embd_type = quant::Type::Q8_0;
    quant::Type attn_type = quant::Type::Q4_K;
    quant::Type ffn_type = quant::Type::Q4_K;
    quant::Type down_type = quant::Type::Q6_K;
    quant::Type output_type = quant::Type::Q6_K;  // when not tied
    int file_type = -1;  // general.file_type when >= 0 (llama.cpp's numbering: 15 = Q4_K_M)
    uint32_t seed = 1;
};

// The families with golden files: llama-spm (TinyLlama-like), llama3,
// qwen2, qwen3, phi3 (short and long context), gemma3 (a window of 16
// positions, so that the prompts outgrow it).
const std::vector<RandomModelSpec>& random_model_specs();
// SmolLM2-360M and SmolLM2-1.7B in real dimensions and Q4_K_M types, with
// SmolLM2's vocabulary (tests/golden/large/<name>.json; not in the
// WebAssembly golden suites: the 1.7B file is 1.1 GB).
const std::vector<RandomModelSpec>& large_model_specs();
// Sources for timing the quantizer (scripts/quantize-report SOURCE=...): the
// 1.7B shape with every tensor in F16, as a model is published before it is
// quantized (3.4 GB; no golden files: random weights make generation and
// KL divergence meaningless).
const std::vector<RandomModelSpec>& quantize_source_specs();
// Any kind, by name.
const RandomModelSpec& random_model_spec(const std::string& name);

// The GGUF bytes: the spec's hyper-parameters and tensors, and every
// tokenizer.* key of the vocabulary file.
std::vector<uint8_t> write_random_model(const RandomModelSpec& spec, const gguf::File& vocab);

// write_random_model with the vocabulary read from llama.cpp's source
// (llama_source_path) or the real SmolLM2 file, by spec name.
std::vector<uint8_t> random_model_bytes(const std::string& name);

// random_model_bytes(name) as a file, written once its sha256 is checked
// against `sha256` (the golden file's) and then reused by every later test
// process: the 1.7B model takes 10 s to write and ctest runs each test in a
// process of its own. Kept under scratch_dir() and named after the digest,
// so the release and sanitizer builds, and later clones, share it; a
// changed generator makes other bytes, which fail the check. Older copies
// of the model are removed. Throws when the bytes are not the golden file's.
// Native builds only (WebAssembly tests keep the bytes in memory).
std::string random_model_file(const std::string& name, const std::string& sha256);

}  // namespace smolinfer::test
