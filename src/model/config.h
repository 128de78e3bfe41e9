// Hyper-parameters of the Llama-shaped architectures smolinfer runs, read
// from GGUF metadata ({arch}.* keys). Each supported family is the Llama
// forward pass with a few switches (see Arch below).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
//   gemma3 token embeddings scaled by sqrt(n_embd); per-head Q/K RMSNorm (as
//          qwen3); queries scaled before attention; RMSNorm of the attention
//          and feed-forward outputs before each residual add; a GELU gate
//          (GEGLU) instead of SiLU; sliding-window attention on five layers
//          of every six, with their own RoPE base; NEOX RoPE.
// The encoders (embedding models; llama.cpp runs them without a KV cache, a
// whole sequence in one pass, every token seeing every other):
//   bert   learned position embeddings and token type 0's embedding added to
//          the token's, then a LayerNorm; no RoPE; biases everywhere; each
//          block's LayerNorm after its residual add (post-norm); an ungated
//          GELU feed-forward.
//   nomic-bert  bert without position embeddings, with NEOX RoPE and a
//          SwiGLU feed-forward without biases.
//   gemma-embedding  gemma3 bidirectional: a windowed layer sees the
//          positions within half the window on either side; mean pooling
//          and two dense projections after the output norm.
enum class Arch { Llama, Qwen2, Qwen3, Phi3, Gemma3, Bert, NomicBert, GemmaEmbedding };

// The feed-forward gate: SiLU (SwiGLU) or GELU in its tanh form (GEGLU).
enum class FfnGate { Silu, Gelu };

// {arch}.pooling_type: how an embedding model's token vectors become one.
// None: each token's own (an embedding is then the last token's, as
// llama.cpp's programs return it); Rank: a reranker's score (not run).
enum class Pooling { None, Mean, Cls, Last, Rank };
const char* pooling_name(Pooling p);

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
    // Queries are multiplied by q_scale after RoPE, and attention then
    // scales by 1 (phi3, gemma3), instead of the scores being scaled.
    bool scale_queries = false;
    float q_scale = 0.0f;
    float kq_scale = 0.0f;  // attention.scale; 0: 1/sqrt(head_dim)
    float rms_eps = 1e-5f;
    bool qk_norm = false;     // RMSNorm of each query and key head before RoPE (qwen3, gemma3)
    float embd_scale = 0.0f;  // token embeddings multiplied by this; 0: not scaled (gemma3: sqrt(n_embd))
    bool post_norms = false;  // RMSNorm of the attention and FFN outputs before their residual adds (gemma3)
    FfnGate ffn_gate = FfnGate::Silu;
    // Sliding-window attention: a layer with swa_layers[il] set sees the
    // n_swa most recent positions (its own included), with RoPE of base
    // rope_base_swa and scale rope_scale_swa; the others see everything.
    int n_swa = 0;
    std::vector<uint8_t> swa_layers;
    float rope_base_swa = 10000.0f;
    float rope_scale_swa = 1.0f;
    float final_softcap = 0.0f;  // logits -> cap * tanh(logits / cap); 0: none

    // Embedding models.
    Pooling pooling = Pooling::None;
    bool encoder = false;        // bert, nomic-bert, gemma-embedding: bidirectional, one pass per sequence
    bool layer_norm = false;     // LayerNorm with bias (eps norm_eps) instead of RMSNorm
    float norm_eps = 1e-12f;
    bool post_norm = false;      // bert: the norm after each residual add, none before each block
    bool ffn_gated = true;       // bert: up, GELU, down
    bool rope = true;            // bert: positions come from position_embd instead
    bool symmetric_swa = false;  // gemma-embedding: a windowed layer sees |p - p0| <= n_swa / 2
    int dense_ff = 0;            // gemma-embedding: dense_2 (n_embd -> dense_ff), dense_3 back; 0: none

    bool is_swa(int il) const { return n_swa > 0 && swa_layers[size_t(il)] != 0; }
    // Cells a sliding-window layer's cache keeps for a context of n_ctx: the
    // window and one of llama.cpp's micro-batches (n_ubatch, 512 by default:
    // at least the most one pass writes to a sequence), padded to 256, as
    // llama.cpp sizes its SWA cache; 0 when every layer keeps n_ctx.
    int swa_ring(int n_ctx, int ubatch = 512) const {
        if (n_swa == 0) return 0;
        const int64_t ring = (int64_t(n_swa) + ubatch + 255) / 256 * 256;
        return ring < n_ctx ? int(ring) : 0;
    }
    int q_dim() const { return n_head * head_dim; }
    int kv_dim() const { return n_head_kv * head_dim; }
    int gqa_group() const { return n_head / n_head_kv; }

    // Throws smolinfer::Error naming the key that is missing or wrong.
    static LlamaConfig from_gguf(const gguf::File& file);
};

}  // namespace smolinfer::model
