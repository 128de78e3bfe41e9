// Hyper-parameters of the Llama-shaped architectures smolinfer runs, read
// from GGUF metadata ({arch}.* keys). Each supported family is the Llama
// forward pass with a few switches (see Arch below).
#pragma once

#include <cstdint>
#include <string>

namespace smolinfer::gguf {
class File;
}

namespace smolinfer::model {

// The families and what each changes in the Llama layer:
//   llama  (Llama 1-3, TinyLlama, SmolLM): the base; Llama 3.x adds rope_freqs.weight.
//   qwen2  Q/K/V biases; RoPE pairs split by halves (NEOX).
//   qwen3  RMSNorm of each query and key head before RoPE; head size from
//          attention.key_length (q_dim may differ from n_embd); NEOX RoPE.
//   phi3   fused Q/K/V and gate/up matrices; LongRoPE frequency factors and
//          attention factor; queries scaled before attention; NEOX RoPE,
//          possibly over part of each head.
enum class Arch { Llama, Qwen2, Qwen3, Phi3 };

// How RoPE pairs the values of a head: (2i, 2i+1) or (i, i + rope_dim/2).
enum class RopeStyle { Adjacent, Halves };

// "llama, qwen2, qwen3, phi3", for messages.
std::string supported_architectures();

struct LlamaConfig {
    std::string architecture;  // general.architecture
    Arch arch = Arch::Llama;
    std::string name;          // general.name, for display
    int n_vocab = 0;
    int n_embd = 0;
    int n_layer = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;   // per attention head, for queries, keys and values
    int n_ff = 0;
    int n_ctx_train = 0;
    int rope_dim = 0;   // leading dimensions of each head that RoPE rotates
    float rope_base = 10000.0f;
    float rope_scale = 1.0f;  // position multiplier (linear RoPE scaling)
    RopeStyle rope_style = RopeStyle::Adjacent;
    // LongRoPE (phi3): cos and sin are multiplied by rope_attn_factor; the
    // long frequency factors apply when the context exceeds n_ctx_orig.
    float rope_attn_factor = 1.0f;
    int n_ctx_orig = 0;
    // Queries are multiplied by 1/sqrt(head_dim) before attention, which
    // then scales by 1 (phi3), instead of the scores being scaled.
    bool scale_queries = false;
    float kq_scale = 0.0f;  // attention.scale; 0: 1/sqrt(head_dim)
    float rms_eps = 1e-5f;

    int q_dim() const { return n_head * head_dim; }
    int kv_dim() const { return n_head_kv * head_dim; }
    int gqa_group() const { return n_head / n_head_kv; }

    // Throws smolinfer::Error naming the key that is missing or wrong.
    static LlamaConfig from_gguf(const gguf::File& file);
};

}  // namespace smolinfer::model
