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
    std::string vocab;         // llama.cpp's models/ggml-vocab-<vocab>.gguf; "smollm2": the real model's (model_path());
                               // "gemma-3-270m": the real Gemma 3 270M file's (model_path("gemma-3-270m"))
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

    // Embedding models (embedding_model_specs). The defaults leave the
    // models above as they were, byte for byte.
    int pooling_type = -1;  // {arch}.pooling_type when >= 0 (llama.cpp's: 1 MEAN, 2 CLS, 3 LAST)
    int causal = -1;        // {arch}.attention.causal when >= 0 (0: false)
    // bert / nomic-bert: token_embd_norm, then post-norm blocks (attn_output_norm,
    // layer_output_norm): LayerNorms with biases, {arch}.attention.layer_norm_epsilon
    // (norm_eps), no output_norm and no lm head.
    bool bert_layout = false;
    float norm_eps = 1e-12f;      // bert_layout: attention.layer_norm_epsilon
    bool ffn_gate = true;         // bert_layout: false is bert's ffn_up, GELU, ffn_down
    bool position_embd = false;   // bert: position_embd.weight, n_ctx_train rows (F32)
    int token_type_count = 0;     // > 0: token_types.weight of that many rows (F32) and tokenizer.ggml.token_type_count
    bool linear_biases = false;   // bert_layout: a bias on every matrix (attn_q/k/v or attn_qkv, attn_output, ffn_up, ffn_down)
    bool write_rope = true;       // bert_layout: rope.freq_base (nomic-bert); bert has no RoPE keys
    // gemma-embedding: dense_2 (n_embd -> dense_out) and dense_3 (dense_out -> n_embd)
    // after pooling, with {arch}.dense_2_feat_in/out and dense_3_feat_in/out.
    int dense_out = 0;
    quant::Type dense_2_type = quant::Type::Q8_0;
    quant::Type dense_3_type = quant::Type::Q4_K;
    int add_eos_token = -1;       // >= 0: tokenizer.ggml.add_eos_token (replacing the vocabulary's)
    // Weights of about 1/sqrt(inputs). The models above have weights of about
    // 1.5 whatever their inputs (attention scores in the hundreds: a one-hot
    // softmax), which their golden files record.
    bool scaled_weights = false;
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
// Embedding models (tests/golden/embeddings/<name>.json): bert (CLS
// pooling, head size 32, F16), bert-mean (MEAN, head size 64, Q8_0),
// nomic-bert (fused QKV, RoPE, SwiGLU), gemma-embedding (EmbeddingGemma's
// layout: a symmetric window of 16 on five layers of six, dense_2/dense_3)
// and qwen3-embedding (a causal decoder, LAST pooling).
const std::vector<RandomModelSpec>& embedding_model_specs();
// The embedding models in real dimensions (bge-small, nomic-embed,
// EmbeddingGemma shapes), for make bench's embeddings part.
const std::vector<RandomModelSpec>& embedding_bench_specs();
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
