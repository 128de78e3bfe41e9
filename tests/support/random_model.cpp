#include "support/random_model.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>

#include "gguf/gguf.h"
#include "gguf/gguf_stream_writer.h"
#include "runtime/sha256.h"
#include "support/files.h"
#include "support/paths.h"
#include "support/random_blocks.h"

namespace smolinfer::test {

namespace {

using quant::Type;

std::vector<RandomModelSpec> make_specs() {
    std::vector<RandomModelSpec> v;
    {
        RandomModelSpec s;  // TinyLlama / Llama 2: SentencePiece, untied output
        s.name = "llama-spm";
        s.architecture = "llama";
        s.vocab = "llama-spm";
        s.n_head = 2;
        s.n_head_kv = 1;
        s.tied_output = false;
        s.embd_type = Type::Q4_0;
        s.attn_type = Type::Q4_1;
        s.ffn_type = Type::Q4_1;
        s.down_type = Type::Q5_1;
        s.seed = 11;
        v.push_back(s);
    }
    {
        RandomModelSpec s;  // Llama 3.2: BPE (llama-bpe), rope_freqs, tied output
        s.name = "llama3";
        s.architecture = "llama";
        s.vocab = "llama-bpe";
        s.n_ff = 768;
        s.rope_base = 500000.0f;
        s.rope_freqs = true;
        s.seed = 12;
        v.push_back(s);
    }
    {
        RandomModelSpec s;  // Qwen2.5: Q/K/V biases, NEOX RoPE
        s.name = "qwen2";
        s.architecture = "qwen2";
        s.vocab = "qwen2";
        s.rope_base = 1000000.0f;
        s.qkv_bias = true;
        s.attn_type = Type::Q5_0;
        s.ffn_type = Type::Q8_0;
        s.down_type = Type::Q4_K;
        s.seed = 13;
        v.push_back(s);
    }
    {
        RandomModelSpec s;  // Qwen3: per-head Q/K norms, key_length != n_embd / n_head
        s.name = "qwen3";
        s.architecture = "qwen3";
        s.vocab = "qwen2";
        s.n_embd = 512;
        s.head_dim = 64;
        s.rope_base = 1000000.0f;
        s.qk_norm = true;
        s.tied_output = false;
        s.attn_type = Type::Q8_0;
        s.ffn_type = Type::Q4_K;
        s.down_type = Type::Q8_0;
        s.output_type = Type::Q8_0;
        s.seed = 14;
        v.push_back(s);
    }
    RandomModelSpec phi;  // Phi-3.5 / Phi-4-mini: fused matrices, LongRoPE, partial rotary
    phi.name = "phi3";
    phi.architecture = "phi3";
    phi.vocab = "phi-3";
    phi.n_head_kv = 4;
    phi.rope_dim = 48;
    phi.fused_qkv = true;
    phi.fused_up = true;
    phi.longrope = true;
    phi.n_ctx_orig = 4096;
    phi.tied_output = false;
    phi.embd_type = Type::F16;
    phi.attn_type = Type::Q4_K;
    phi.ffn_type = Type::Q5_0;
    phi.down_type = Type::Q6_K;
    phi.output_type = Type::Q4_K;
    phi.seed = 15;
    v.push_back(phi);
    // The same with a context longer than the original one: the long factors.
    phi.name = "phi3-long";
    phi.n_ctx_orig = 64;
    phi.seed = 16;
    v.push_back(phi);
    {
        // Gemma 3: SentencePiece, Q/K norms, post-norms, GEGLU; a window of
        // 16 on four layers of six (the pattern 3: layers 0, 1, 3, 4), with
        // its own RoPE base, and key_length 96 over n_embd 256 / 4 heads.
        RandomModelSpec s;
        s.name = "gemma3";
        s.architecture = "gemma3";
        s.vocab = "llama-spm";
        s.n_embd = 256;
        s.n_layer = 6;
        s.n_head = 4;
        s.n_head_kv = 1;
        s.head_dim = 96;
        s.n_ff = 512;
        s.rope_base = 1000000.0f;
        s.qk_norm = true;
        s.post_norms = true;
        s.sliding_window = 16;
        s.swa_pattern = 3;
        s.rope_base_swa = 10000.0f;
        s.embd_type = Type::Q8_0;
        s.attn_type = Type::Q5_0;
        s.ffn_type = Type::Q4_K;
        s.down_type = Type::Q6_K;
        s.seed = 17;
        v.push_back(s);
    }
    return v;
}

// SmolLM2's larger sizes in real dimensions, typed as llama.cpp's Q4_K_M
// types them (rows not a multiple of 256 fall back to Q5_0 / Q8_0), with
// SmolLM2's own vocabulary. They prove that big files load and run: the
// 1.7B one is a 1.1 GB file.
std::vector<RandomModelSpec> make_large_specs() {
    std::vector<RandomModelSpec> v;
    RandomModelSpec s;
    s.architecture = "llama";
    s.vocab = "smollm2";
    s.n_ctx_train = 8192;
    s.file_type = 15;  // Q4_K_M
    s.name = "smollm2-360m";
    s.n_embd = 960;
    s.n_layer = 32;
    s.n_head = 15;
    s.n_head_kv = 5;
    s.n_ff = 2560;
    s.rope_base = 100000.0f;
    s.embd_type = Type::Q8_0;
    s.attn_type = Type::Q5_0;
    s.ffn_type = Type::Q5_0;
    s.down_type = Type::Q6_K;
    s.seed = 21;
    v.push_back(s);
    s.name = "smollm2-1.7b";
    s.n_embd = 2048;
    s.n_layer = 24;
    s.n_head = 32;
    s.n_head_kv = 32;
    s.n_ff = 8192;
    s.rope_base = 130000.0f;
    s.embd_type = Type::Q6_K;
    s.attn_type = Type::Q4_K;
    s.ffn_type = Type::Q4_K;
    s.down_type = Type::Q6_K;
    s.seed = 22;
    v.push_back(s);
    return v;
}

// Embedding models, scaled down from the real ones but each with the
// arithmetic that matters: the head sizes (32 and 64), the weight types,
// the pooling, fused or separate QKV, biases, RoPE or position embeddings,
// a sliding window shorter than the texts.
std::vector<RandomModelSpec> make_embedding_specs() {
    std::vector<RandomModelSpec> v;
    // bge-small-en-v1.5 (a llama.cpp F16 conversion), scaled down: WordPiece,
    // absolute positions, token types, Q/K/V and every matrix with a bias,
    // LayerNorms with biases after attention and FFN, GELU, CLS pooling.
    RandomModelSpec bert;
    bert.name = "bert";
    bert.architecture = "bert";
    bert.vocab = "bert-bge";
    bert.n_embd = 128;
    bert.n_layer = 2;
    bert.n_head = 4;  // heads of 32, as bge-small's 384 / 12
    bert.n_head_kv = 4;
    bert.n_ff = 256;
    bert.n_ctx_train = 512;
    bert.bert_layout = true;
    bert.norm_eps = 1e-12f;
    bert.ffn_gate = false;
    bert.position_embd = true;
    bert.token_type_count = 2;
    bert.linear_biases = true;
    bert.write_rope = false;
    bert.causal = 0;
    bert.pooling_type = 2;  // CLS
    bert.embd_type = bert.attn_type = bert.ffn_type = bert.down_type = Type::F16;
    bert.file_type = 1;  // F16
    bert.scaled_weights = true;
    bert.seed = 31;
    v.push_back(bert);
    // The same family quantized to Q8_0, heads of 64 (bge-base's), mean pooling.
    RandomModelSpec mean = bert;
    mean.name = "bert-mean";
    mean.n_layer = 3;
    mean.n_head = mean.n_head_kv = 2;
    mean.pooling_type = 1;  // MEAN
    mean.embd_type = mean.attn_type = mean.ffn_type = mean.down_type = Type::Q8_0;
    mean.file_type = 7;  // Q8_0
    mean.seed = 32;
    v.push_back(mean);
    {
        // nomic-embed-text v1.5 (F16), scaled down: WordPiece, fused QKV,
        // NEOX RoPE with base 1000, SwiGLU, no linear biases, no position
        // embeddings, token types, LayerNorms as bert's, mean pooling.
        RandomModelSpec s;
        s.name = "nomic-bert";
        s.architecture = "nomic-bert";
        s.vocab = "bert-bge";
        s.n_embd = 128;
        s.n_layer = 2;
        s.n_head = s.n_head_kv = 2;  // heads of 64
        s.n_ff = 256;
        s.n_ctx_train = 2048;
        s.rope_base = 1000.0f;
        s.bert_layout = true;
        s.norm_eps = 1e-12f;
        s.fused_qkv = true;
        s.token_type_count = 2;
        s.causal = 0;
        s.pooling_type = 1;  // MEAN
        s.embd_type = s.attn_type = s.ffn_type = s.down_type = Type::F16;
        s.file_type = 1;
        s.scaled_weights = true;
        s.seed = 33;
        v.push_back(s);
    }
    {
        // EmbeddingGemma (Q4_K_M), scaled down: gemma3's tensors, a symmetric
        // window of 16 (+-8 positions) on the layers il % 6 < 5 (no
        // sliding_window_pattern key: llama.cpp's default 6, so layer 5 of 7
        // is global), the local layers on llama.cpp's default RoPE base 10000
        // (no rope.freq_base_swa key), mean pooling, then dense_2 (128 -> 512)
        // and dense_3 (512 -> 128). Rows of 128 values take Q5_0 / Q8_0 where
        // Q4_K_M would put a K-quant; rows of 512 take K-quants (Q4_K for
        // ffn_down, Q6_K for dense_3: random Q4_K blocks have a mean of about
        // 2/3 of their scale, a common offset that dense_3 would add to every
        // output).
        RandomModelSpec s;
        s.name = "gemma-embedding";
        s.architecture = "gemma-embedding";
        s.vocab = "gemma-3-270m";
        s.n_embd = 128;
        s.n_layer = 7;
        s.n_head = 2;
        s.n_head_kv = 1;
        s.head_dim = 64;
        s.n_ff = 512;
        s.n_ctx_train = 2048;
        s.rope_base = 1000000.0f;
        s.qk_norm = true;
        s.post_norms = true;
        s.sliding_window = 16;
        s.pooling_type = 1;  // MEAN (no attention.causal key: llama.cpp makes it non-causal)
        s.dense_out = 512;
        s.embd_type = Type::Q8_0;
        s.attn_type = Type::Q5_0;
        s.ffn_type = Type::Q8_0;
        s.down_type = Type::Q4_K;
        s.dense_2_type = Type::Q8_0;
        s.dense_3_type = Type::Q6_K;
        s.file_type = 15;  // Q4_K_M
        s.scaled_weights = true;
        s.seed = 34;
        v.push_back(s);
    }
    {
        // Qwen3-Embedding (Q8_0): the qwen3 decoder (causal, Q/K norms, a KV
        // cache) with LAST pooling, and add_eos_token: the text ends with
        // <|endoftext|>, whose state is the embedding.
        RandomModelSpec s;
        s.name = "qwen3-embedding";
        s.architecture = "qwen3";
        s.vocab = "qwen2";
        s.n_embd = 256;
        s.n_layer = 2;
        s.n_head = 4;
        s.n_head_kv = 2;
        s.head_dim = 64;
        s.n_ff = 512;
        s.rope_base = 1000000.0f;
        s.qk_norm = true;
        s.pooling_type = 3;  // LAST
        s.add_eos_token = 1;
        s.embd_type = s.attn_type = s.ffn_type = s.down_type = Type::Q8_0;
        s.file_type = 7;  // Q8_0, as Qwen publishes Qwen3-Embedding-0.6B
        s.scaled_weights = true;
        s.seed = 35;
        v.push_back(s);
    }
    return v;
}

// The embedding models in real dimensions, for make bench (no golden files):
// bge-small-en-v1.5 as llama.cpp converts it (F16), nomic-embed-text-v1.5
// (F16) and EmbeddingGemma-300M (Q8_0, its 262,144-token vocabulary).
std::vector<RandomModelSpec> make_embedding_bench_specs() {
    const std::vector<RandomModelSpec> small = make_embedding_specs();
    auto named = [&](const std::string& n) {
        for (const RandomModelSpec& s : small) {
            if (s.name == n) return s;
        }
        throw std::runtime_error("no embedding spec " + n);
    };
    RandomModelSpec bge = named("bert");
    bge.name = "bge-small-shape";
    bge.n_embd = 384;
    bge.n_layer = 12;
    bge.n_head = bge.n_head_kv = 12;
    bge.n_ff = 1536;
    RandomModelSpec nomic = named("nomic-bert");
    nomic.name = "nomic-embed-shape";
    nomic.n_embd = 768;
    nomic.n_layer = 12;
    nomic.n_head = nomic.n_head_kv = 12;
    nomic.n_ff = 3072;
    RandomModelSpec gemma = named("gemma-embedding");
    gemma.name = "embeddinggemma-shape";
    gemma.n_embd = 768;
    gemma.n_layer = 24;
    gemma.n_head = 3;
    gemma.n_head_kv = 1;
    gemma.head_dim = 256;
    gemma.n_ff = 1152;
    gemma.sliding_window = 512;
    gemma.dense_out = 3072;
    gemma.embd_type = gemma.attn_type = gemma.ffn_type = gemma.down_type = Type::Q8_0;
    gemma.dense_2_type = gemma.dense_3_type = Type::Q8_0;
    gemma.file_type = 7;
    return {bge, nomic, gemma};
}

std::vector<RandomModelSpec> make_quantize_source_specs() {
    RandomModelSpec s = make_large_specs().back();  // smollm2-1.7b
    s.name = "smollm2-1.7b-f16";
    s.file_type = 1;  // F16
    s.embd_type = s.attn_type = s.ffn_type = s.down_type = s.output_type = Type::F16;
    return {s};
}

// Little-endian f32 values as tensor bytes.
std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

struct Tensor {
    std::string name;
    Type type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
};

}  // namespace

const std::vector<RandomModelSpec>& random_model_specs() {
    static const std::vector<RandomModelSpec> specs = make_specs();
    return specs;
}

const std::vector<RandomModelSpec>& large_model_specs() {
    static const std::vector<RandomModelSpec> specs = make_large_specs();
    return specs;
}

const std::vector<RandomModelSpec>& quantize_source_specs() {
    static const std::vector<RandomModelSpec> specs = make_quantize_source_specs();
    return specs;
}

const std::vector<RandomModelSpec>& embedding_model_specs() {
    static const std::vector<RandomModelSpec> specs = make_embedding_specs();
    return specs;
}

const std::vector<RandomModelSpec>& embedding_bench_specs() {
    static const std::vector<RandomModelSpec> specs = make_embedding_bench_specs();
    return specs;
}

const RandomModelSpec& random_model_spec(const std::string& name) {
    for (const auto* list : {&random_model_specs(), &large_model_specs(), &quantize_source_specs(), &embedding_model_specs(),
                             &embedding_bench_specs()}) {
        for (const RandomModelSpec& s : *list) {
            if (s.name == name) return s;
        }
    }
    throw std::runtime_error("no random model spec named '" + name + "'");
}

namespace {

// {arch}.attention.causal and {arch}.pooling_type, when the spec sets them.
void add_embedding_keys(gguf::StreamWriter& w, const RandomModelSpec& s) {
    const std::string a = s.architecture + ".";
    if (s.causal >= 0) w.add_bool(a + "attention.causal", s.causal != 0);
    if (s.pooling_type >= 0) w.add_u32(a + "pooling_type", uint32_t(s.pooling_type));
}

// Every tokenizer.* key of the vocabulary (tokenizer.ggml.token_type_count
// and add_eos_token replaced by the spec's, or added, when it sets them),
// then the tensors: the file's bytes.
std::vector<uint8_t> finish_model(gguf::StreamWriter& w, const RandomModelSpec& s, const gguf::Metadata& vmd,
                                  const std::vector<Tensor>& tensors) {
    const std::string type_count = "tokenizer.ggml.token_type_count";
    const std::string add_eos = "tokenizer.ggml.add_eos_token";
    for (const std::string& key : vmd.keys()) {
        if (key.rfind("tokenizer.", 0) != 0) continue;
        if (s.token_type_count > 0 && key == type_count) continue;
        if (s.add_eos_token >= 0 && key == add_eos) continue;
        w.add_value(key, *vmd.find(key));
    }
    if (s.token_type_count > 0) w.add_u32(type_count, uint32_t(s.token_type_count));
    if (s.add_eos_token >= 0) w.add_bool(add_eos, s.add_eos_token != 0);
    for (const Tensor& t : tensors) w.add_tensor(t.name, t.type, t.dims);
    gguf::MemorySink sink;
    w.write_header(sink);
    for (const Tensor& t : tensors) w.write_data(sink, t.data);
    w.finish(sink);
    return std::move(sink.bytes);
}

// bert and nomic-bert, as llama.cpp's converter writes them (conversion/bert.py;
// tensors as src/models/bert.cpp and nomic-bert.cpp load them): token, token
// type and (bert) position embeddings summed and LayerNormed, then post-norm
// blocks: attention (separate or fused QKV; no RoPE for bert, NEOX RoPE for
// nomic-bert), residual, LayerNorm, FFN (bert: up, GELU, down; nomic-bert:
// SwiGLU), residual, LayerNorm. Every LayerNorm has a bias; the matrices have
// biases when linear_biases. No output norm, no lm head.
std::vector<uint8_t> write_bert_layout(const RandomModelSpec& s, const gguf::File& vocab) {
    const gguf::Metadata& vmd = vocab.metadata();
    const auto tokens = vmd.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) throw std::runtime_error("the vocabulary file has no tokenizer.ggml.tokens");
    const int n_vocab = int(tokens->size());
    const int head_dim = s.n_embd / s.n_head;
    const int Q = s.n_head * head_dim, KV = s.n_head_kv * head_dim;
    std::mt19937 rng(s.seed);

    std::vector<Tensor> tensors;
    auto matrix = [&](const std::string& name, Type type, int cols, int rows, float scale) {
        tensors.push_back({name, type, {uint64_t(cols), uint64_t(rows)},
                           random_blocks(type, size_t(cols) * size_t(rows), rng, scale)});
    };
    auto vector = [&](const std::string& name, int n, float center, float spread) {
        std::vector<float> v(static_cast<size_t>(n));
        const std::vector<uint8_t> b = random_blocks(Type::F32, size_t(n), rng, spread);
        std::memcpy(v.data(), b.data(), b.size());
        for (float& x : v) x += center;
        tensors.push_back({name, Type::F32, {uint64_t(n)}, f32_bytes(v)});
    };
    // Weights of about 1/sqrt(inputs) (a power of two times 1.5): outputs of
    // about the size of the inputs, attention scores of about 1 (a softmax
    // far from one-hot) and FFN activations inside GELU's table (|x| < 10).
    auto weight_scale = [](int cols) {
        float r = 1.0f;
        while (r * r * float(cols) > 1.0f) r *= 0.5f;
        return r * 1.5f;
    };
    auto layer_norm = [&](const std::string& name) {
        vector(name + ".weight", s.n_embd, 1.0f, 0.1f);
        vector(name + ".bias", s.n_embd, 0.0f, 0.1f);
    };
    // A matrix and, when linear_biases, its bias.
    auto linear = [&](const std::string& name, Type type, int cols, int rows) {
        matrix(name + ".weight", type, cols, rows, weight_scale(cols));
        if (s.linear_biases) vector(name + ".bias", rows, 0.0f, 0.2f);
    };

    matrix("token_embd.weight", s.embd_type, s.n_embd, n_vocab, 0.15f);
    if (s.token_type_count > 0) matrix("token_types.weight", Type::F32, s.n_embd, s.token_type_count, 0.1f);
    if (s.position_embd) matrix("position_embd.weight", Type::F32, s.n_embd, s.n_ctx_train, 0.1f);
    layer_norm("token_embd_norm");
    for (int i = 0; i < s.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        if (s.fused_qkv) {
            linear(p + "attn_qkv", s.attn_type, s.n_embd, Q + 2 * KV);
        } else {
            linear(p + "attn_q", s.attn_type, s.n_embd, Q);
            linear(p + "attn_k", s.attn_type, s.n_embd, KV);
            linear(p + "attn_v", s.attn_type, s.n_embd, KV);
        }
        linear(p + "attn_output", s.attn_type, Q, s.n_embd);
        layer_norm(p + "attn_output_norm");
        linear(p + "ffn_up", s.ffn_type, s.n_embd, s.n_ff);
        if (s.ffn_gate) linear(p + "ffn_gate", s.ffn_type, s.n_embd, s.n_ff);
        linear(p + "ffn_down", s.down_type, s.n_ff, s.n_embd);
        layer_norm(p + "layer_output_norm");
    }

    gguf::StreamWriter w;
    const std::string a = s.architecture + ".";
    w.add_string("general.architecture", s.architecture);
    w.add_string("general.name", "random " + s.name);
    if (s.file_type >= 0) w.add_u32("general.file_type", uint32_t(s.file_type));
    w.add_u32(a + "context_length", uint32_t(s.n_ctx_train));
    w.add_u32(a + "embedding_length", uint32_t(s.n_embd));
    w.add_u32(a + "feed_forward_length", uint32_t(s.n_ff));
    w.add_u32(a + "block_count", uint32_t(s.n_layer));
    w.add_u32(a + "attention.head_count", uint32_t(s.n_head));
    w.add_f32(a + "attention.layer_norm_epsilon", s.norm_eps);
    if (s.write_rope) w.add_f32(a + "rope.freq_base", s.rope_base);
    add_embedding_keys(w, s);
    return finish_model(w, s, vmd, tensors);
}

}  // namespace

std::vector<uint8_t> write_random_model(const RandomModelSpec& s, const gguf::File& vocab) {
    const gguf::Metadata& vmd = vocab.metadata();
    const auto tokens = vmd.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) throw std::runtime_error("the vocabulary file has no tokenizer.ggml.tokens");
    const int n_vocab = int(tokens->size());
    const int head_dim = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
    const int rope_dim = s.rope_dim > 0 ? s.rope_dim : head_dim;
    const int Q = s.n_head * head_dim, KV = s.n_head_kv * head_dim;
    std::mt19937 rng(s.seed);

    std::vector<Tensor> tensors;
    auto matrix = [&](const std::string& name, Type type, int cols, int rows, float scale) {
        tensors.push_back({name, type, {uint64_t(cols), uint64_t(rows)},
                           random_blocks(type, size_t(cols) * size_t(rows), rng, scale)});
    };
    // Norm weights near 1, biases and factors as given: f32 vectors.
    auto vector = [&](const std::string& name, std::vector<float> values) {
        tensors.push_back({name, Type::F32, {uint64_t(values.size())}, f32_bytes(values)});
    };
    auto random_vector = [&](int n, float center, float spread) {
        std::vector<float> v(static_cast<size_t>(n));
        const std::vector<uint8_t> b = random_blocks(Type::F32, size_t(n), rng, spread);
        std::memcpy(v.data(), b.data(), b.size());
        for (float& x : v) x += center;
        return v;
    };
    // Weights of about 1/sqrt(inputs) keep activations near 1 through the layers.
    auto weight_scale = [&](int cols) {
        float r = 1.0f;
        if (s.scaled_weights) {
            while (r * r * float(cols) > 1.0f) r *= 0.5f;
            return r * 1.5f;
        }
        // (This loop never runs: the models above have weights of about 1.5
        // whatever their inputs; their golden files record those bytes.)
        while (r * r * float(cols) < 1.0f) r *= 0.5f;  // a power of two: exact
        return r * 1.5f;
    };

    if (s.bert_layout) return write_bert_layout(s, vocab);

    // Embedding rows of about 0.15 per value: logits (a normalized state of
    // norm ~sqrt(n_embd) times a row) spread over a few nats, so the top-10
    // log-probabilities are all finite and greedy choices rarely near-ties.
    matrix("token_embd.weight", s.embd_type, s.n_embd, n_vocab, 0.15f);
    vector("output_norm.weight", random_vector(s.n_embd, 1.0f, 0.1f));
    if (!s.tied_output) matrix("output.weight", s.output_type, s.n_embd, n_vocab, 0.15f);
    if (s.dense_out > 0) {
        matrix("dense_2.weight", s.dense_2_type, s.n_embd, s.dense_out, weight_scale(s.n_embd));
        matrix("dense_3.weight", s.dense_3_type, s.dense_out, s.n_embd, weight_scale(s.dense_out));
    }
    const int pairs = rope_dim / 2;
    auto factors = [&](float lo, float step) {
        std::vector<float> f(static_cast<size_t>(pairs));
        for (int i = 0; i < pairs; ++i) f[size_t(i)] = lo + step * float(i * 7 % pairs);
        return f;
    };
    if (s.rope_freqs) vector("rope_freqs.weight", factors(1.0f, 0.25f));
    if (s.longrope) {
        vector("rope_factors_short.weight", factors(1.0f, 0.0625f));
        vector("rope_factors_long.weight", factors(1.5f, 0.5f));
    }
    for (int i = 0; i < s.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        vector(p + "attn_norm.weight", random_vector(s.n_embd, 1.0f, 0.1f));
        if (s.fused_qkv) {
            matrix(p + "attn_qkv.weight", s.attn_type, s.n_embd, Q + 2 * KV, weight_scale(s.n_embd));
        } else {
            matrix(p + "attn_q.weight", s.attn_type, s.n_embd, Q, weight_scale(s.n_embd));
            matrix(p + "attn_k.weight", s.attn_type, s.n_embd, KV, weight_scale(s.n_embd));
            matrix(p + "attn_v.weight", s.attn_type, s.n_embd, KV, weight_scale(s.n_embd));
        }
        if (s.qkv_bias) {
            vector(p + "attn_q.bias", random_vector(Q, 0.0f, 0.5f));
            vector(p + "attn_k.bias", random_vector(KV, 0.0f, 0.5f));
            vector(p + "attn_v.bias", random_vector(KV, 0.0f, 0.5f));
        }
        if (s.qk_norm) {
            vector(p + "attn_q_norm.weight", random_vector(head_dim, 1.0f, 0.2f));
            vector(p + "attn_k_norm.weight", random_vector(head_dim, 1.0f, 0.2f));
        }
        matrix(p + "attn_output.weight", s.attn_type, Q, s.n_embd, weight_scale(Q));
        if (s.post_norms) vector(p + "post_attention_norm.weight", random_vector(s.n_embd, 1.0f, 0.1f));
        vector(p + "ffn_norm.weight", random_vector(s.n_embd, 1.0f, 0.1f));
        if (s.fused_up) {
            matrix(p + "ffn_up.weight", s.ffn_type, s.n_embd, 2 * s.n_ff, weight_scale(s.n_embd));
        } else {
            matrix(p + "ffn_gate.weight", s.ffn_type, s.n_embd, s.n_ff, weight_scale(s.n_embd));
            matrix(p + "ffn_up.weight", s.ffn_type, s.n_embd, s.n_ff, weight_scale(s.n_embd));
        }
        matrix(p + "ffn_down.weight", s.down_type, s.n_ff, s.n_embd, weight_scale(s.n_ff));
        if (s.post_norms) vector(p + "post_ffw_norm.weight", random_vector(s.n_embd, 1.0f, 0.1f));
    }

    gguf::StreamWriter w;
    const std::string a = s.architecture + ".";
    w.add_string("general.architecture", s.architecture);
    w.add_string("general.name", "random " + s.name);
    if (s.file_type >= 0) w.add_u32("general.file_type", uint32_t(s.file_type));
    w.add_u32(a + "context_length", uint32_t(s.n_ctx_train));
    w.add_u32(a + "embedding_length", uint32_t(s.n_embd));
    w.add_u32(a + "block_count", uint32_t(s.n_layer));
    w.add_u32(a + "feed_forward_length", uint32_t(s.n_ff));
    w.add_u32(a + "attention.head_count", uint32_t(s.n_head));
    w.add_u32(a + "attention.head_count_kv", uint32_t(s.n_head_kv));
    if (s.head_dim > 0) {
        w.add_u32(a + "attention.key_length", uint32_t(head_dim));
        w.add_u32(a + "attention.value_length", uint32_t(head_dim));
    }
    w.add_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
    w.add_f32(a + "rope.freq_base", s.rope_base);
    w.add_u32(a + "rope.dimension_count", uint32_t(rope_dim));
    if (s.longrope) {
        w.add_f32(a + "rope.scaling.attn_factor", 1.1902381f);
        w.add_u32(a + "rope.scaling.original_context_length", uint32_t(s.n_ctx_orig));
    }
    if (s.sliding_window > 0) w.add_u32(a + "attention.sliding_window", uint32_t(s.sliding_window));
    if (s.swa_pattern > 0) w.add_u32(a + "attention.sliding_window_pattern", uint32_t(s.swa_pattern));
    if (s.rope_base_swa > 0) w.add_f32(a + "rope.freq_base_swa", s.rope_base_swa);
    add_embedding_keys(w, s);
    if (s.dense_out > 0) {
        w.add_u32(a + "dense_2_feat_in", uint32_t(s.n_embd));
        w.add_u32(a + "dense_2_feat_out", uint32_t(s.dense_out));
        w.add_u32(a + "dense_3_feat_in", uint32_t(s.dense_out));
        w.add_u32(a + "dense_3_feat_out", uint32_t(s.n_embd));
    }
    w.add_u32(a + "vocab_size", uint32_t(n_vocab));
    return finish_model(w, s, vmd, tensors);
}

#ifndef __EMSCRIPTEN__
std::string random_model_file(const std::string& name, const std::string& sha256) {
    namespace fs = std::filesystem;
    // Named by the digest its golden file records and checked against it
    // when written, so a file of that name is the model whatever built it:
    // the release and sanitizer trees, and later clones, share it.
    const std::string prefix = name + "--";
    const fs::path dir = fs::path(scratch_dir()) / "random-models";
    const fs::path file = dir / (prefix + sha256 + ".gguf");
    if (fs::exists(file)) return file.string();

    const std::vector<uint8_t> bytes = random_model_bytes(name);
    runtime::Sha256 h;
    h.update(bytes);
    if (h.finish_hex() != sha256) {
        throw std::runtime_error("the random " + name + " model is not the one the golden file was made from "
                                 "(rerun scripts/golden/make-family-golden.mjs after changing tests/support/random_model.cpp)");
    }
    fs::create_directories(dir);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (e.path().filename().string().rfind(prefix, 0) == 0) fs::remove(e.path(), ec);
    }
    // Another test process may be writing the same file: each writes its own
    // and renames it into place, which is atomic.
    const fs::path tmp = dir / (".tmp-" + std::to_string(::getpid()) + "-" + prefix + ".gguf");
    {
        std::ofstream out(tmp, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        if (!out) throw std::runtime_error("cannot write " + tmp.string());
    }
    fs::rename(tmp, file);
    return file.string();
}
#endif

std::vector<uint8_t> random_model_bytes(const std::string& name) {
    const RandomModelSpec& spec = random_model_spec(name);
    const std::string path = spec.vocab == "smollm2"        ? model_path("Q4_1")
                             : spec.vocab == "gemma-3-270m" ? model_path("gemma-3-270m")
                                                            : llama_source_path("models/ggml-vocab-" + spec.vocab + ".gguf");
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> vocab_bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw std::runtime_error("cannot read " + path);
    return write_random_model(spec, gguf::File::parse(vocab_bytes));
}

}  // namespace smolinfer::test
