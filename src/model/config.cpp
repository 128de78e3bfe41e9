#include "model/config.h"

#include <cmath>

#include "gguf/gguf.h"
#include "smolinfer/error.h"

namespace smolinfer::model {

namespace {

int positive(const gguf::Metadata& md, const std::string& key, std::optional<uint64_t> fallback = std::nullopt) {
    auto v = md.get_uint(key);
    if (!v) v = fallback;
    if (!v) throw Error("missing metadata '" + key + "'");
    if (*v == 0 || *v > (uint64_t(1) << 24)) {
        throw Error("bad metadata: '" + key + "' = " + std::to_string(*v) + " is out of range");
    }
    return int(*v);
}

struct ArchInfo {
    std::string_view name;
    Arch arch;
    RopeStyle rope;
};
constexpr ArchInfo kArchs[] = {
    {"llama", Arch::Llama, RopeStyle::Adjacent},
    {"qwen2", Arch::Qwen2, RopeStyle::Halves},
    {"qwen3", Arch::Qwen3, RopeStyle::Halves},
    {"phi3", Arch::Phi3, RopeStyle::Halves},
    {"gemma3", Arch::Gemma3, RopeStyle::Halves},
    {"bert", Arch::Bert, RopeStyle::Halves},
    {"nomic-bert", Arch::NomicBert, RopeStyle::Halves},
    {"gemma-embedding", Arch::GemmaEmbedding, RopeStyle::Halves},
};

// Gemma 3's switches, as llama.cpp reads them (src/models/gemma3.cpp; it
// never reads attention.scale for Gemma).
void read_gemma3(const gguf::Metadata& md, const std::string& p, LlamaConfig& c) {
    c.embd_scale = std::sqrt(float(c.n_embd));
    c.post_norms = true;
    c.ffn_gate = FfnGate::Gelu;
    // The 27B model (62 layers) scales queries by its embedding per head.
    if (c.n_layer == 62) c.q_scale = 1.0f / std::sqrt(float(c.n_embd / c.n_head));
    if (auto cap = md.get_f32(p + "final_logit_softcapping"); cap && *cap != 0.0f) {
        if (!(*cap > 0.0f) || !std::isfinite(*cap)) throw Error("bad metadata: final_logit_softcapping must be > 0");
        c.final_softcap = *cap;
    }
    const uint64_t window = md.get_uint(p + "attention.sliding_window").value_or(0);
    if (window == 0) return;  // no sliding window: every layer attends to everything
    if (window > (uint64_t(1) << 24)) throw Error("bad metadata: '" + p + "attention.sliding_window' is out of range");
    c.n_swa = int(window);
    // Five windowed layers, then a global one (the last of every period).
    // llama.cpp reads the pattern only as a number; an array there keeps the default.
    const uint64_t period = md.get_uint(p + "attention.sliding_window_pattern").value_or(6);
    if (period > uint64_t(c.n_layer) + 1) {
        throw Error("bad metadata: '" + p + "attention.sliding_window_pattern' = " + std::to_string(period) +
                    " exceeds the layer count");
    }
    c.swa_layers.assign(size_t(c.n_layer), 0);
    for (int il = 0; il < c.n_layer; ++il) {
        c.swa_layers[size_t(il)] = period == 0 || uint64_t(il) % period < period - 1;
    }
    c.rope_base_swa = md.get_f32(p + "rope.freq_base_swa").value_or(10000.0f);
    if (!(c.rope_base_swa > 1.0f) || !std::isfinite(c.rope_base_swa)) {
        throw Error("bad metadata: rope.freq_base_swa must be > 1");
    }
}

// EmbeddingGemma (src/models/gemma-embedding.cpp): gemma3's switches,
// bidirectional, its window symmetric and required; the dense projections
// after pooling when the file has them.
void read_gemma_embedding(const gguf::Metadata& md, const std::string& p, LlamaConfig& c) {
    if (!md.has(p + "attention.sliding_window")) throw Error("missing metadata '" + p + "attention.sliding_window'");
    read_gemma3(md, p, c);
    c.final_softcap = 0.0f;  // llama.cpp's graph applies none (there are no logits)
    c.encoder = true;
    c.symmetric_swa = true;
    if (md.has(p + "dense_2_feat_out")) {
        c.dense_ff = positive(md, p + "dense_2_feat_out");
        const int in2 = positive(md, p + "dense_2_feat_in"), in3 = positive(md, p + "dense_3_feat_in");
        const int out3 = positive(md, p + "dense_3_feat_out");
        if (in2 != c.n_embd || in3 != c.dense_ff || out3 != c.n_embd) {
            throw Error("bad metadata: the dense projections must map " + std::to_string(c.n_embd) + " -> " +
                        std::to_string(c.dense_ff) + " -> " + std::to_string(c.n_embd) + " (" + p + "dense_*_feat_*)");
        }
    }
}

// The BERT family (src/models/bert.cpp, nomic-bert.cpp): LayerNorms after
// the residual adds; bert's positions from position_embd, nomic's by RoPE.
void read_bert(const gguf::Metadata& md, const std::string& p, LlamaConfig& c) {
    c.encoder = true;
    c.layer_norm = true;
    c.post_norm = true;
    const auto eps = md.get_f32(p + "attention.layer_norm_epsilon");
    if (!eps) throw Error("missing metadata '" + p + "attention.layer_norm_epsilon'");
    if (!(*eps > 0.0f) || !std::isfinite(*eps)) throw Error("bad metadata: attention.layer_norm_epsilon must be > 0");
    c.norm_eps = *eps;
    if (md.get_uint("tokenizer.ggml.token_type_count").value_or(0) == 0) {
        throw Error("bad metadata: a " + c.architecture + " model needs tokenizer.ggml.token_type_count > 0");
    }
    if (c.arch == Arch::Bert) {
        c.rope = false;
        c.ffn_gated = false;
        c.ffn_gate = FfnGate::Gelu;
    }
}

}  // namespace

const char* pooling_name(Pooling p) {
    switch (p) {
        case Pooling::None: return "none";
        case Pooling::Mean: return "mean";
        case Pooling::Cls: return "cls";
        case Pooling::Last: return "last";
        case Pooling::Rank: return "rank";
    }
    return "?";
}

std::string supported_architectures() {
    std::string s;
    for (const ArchInfo& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.name);
    return s;
}

LlamaConfig LlamaConfig::from_gguf(const gguf::File& file) {
    const gguf::Metadata& md = file.metadata();
    LlamaConfig c;
    const auto arch = md.get_string("general.architecture");
    if (!arch) throw Error("missing metadata 'general.architecture'");
    c.architecture = std::string(*arch);
    const ArchInfo* info = nullptr;
    for (const ArchInfo& a : kArchs) {
        if (a.name == c.architecture) info = &a;
    }
    if (info == nullptr) {
        throw Error("unsupported architecture " + gguf::quoted(c.architecture) + " (general.architecture); supported: " +
                    supported_architectures());
    }
    c.arch = info->arch;
    c.rope_style = info->rope;
    const bool gemma = c.arch == Arch::Gemma3 || c.arch == Arch::GemmaEmbedding;
    c.scale_queries = c.arch == Arch::Phi3 || gemma;
    c.qk_norm = c.arch == Arch::Qwen3 || gemma;
    c.name = std::string(md.get_string("general.name").value_or(""));
    const std::string p = c.architecture + ".";

    if (md.get_uint(p + "expert_count").value_or(0) > 0) {
        throw Error("unsupported model: mixture-of-experts " + c.architecture + " (" + p + "expert_count > 0)");
    }

    c.n_embd = positive(md, p + "embedding_length");
    c.n_layer = positive(md, p + "block_count");
    c.n_head = positive(md, p + "attention.head_count");
    c.n_head_kv = positive(md, p + "attention.head_count_kv", uint64_t(c.n_head));
    c.n_ff = positive(md, p + "feed_forward_length");
    c.n_ctx_train = positive(md, p + "context_length");
    if (!md.has(p + "attention.key_length") && c.n_embd % c.n_head != 0) {
        throw Error("bad metadata: embedding_length " + std::to_string(c.n_embd) + " is not a multiple of head_count " +
                    std::to_string(c.n_head));
    }
    c.head_dim = positive(md, p + "attention.key_length", uint64_t(c.n_embd / c.n_head));
    if (c.arch != Arch::Qwen3 && c.arch != Arch::Llama && !gemma && c.q_dim() != c.n_embd) {
        throw Error("unsupported model: " + c.architecture + " with attention.key_length " + std::to_string(c.head_dim) +
                    " (head_count x key_length must equal embedding_length)");
    }
    const int v_len = positive(md, p + "attention.value_length", uint64_t(c.head_dim));
    if (v_len != c.head_dim) throw Error("unsupported model: attention.value_length differs from key_length");
    if (c.n_head % c.n_head_kv != 0) {
        throw Error("bad metadata: head_count " + std::to_string(c.n_head) + " is not a multiple of head_count_kv " +
                    std::to_string(c.n_head_kv));
    }
    c.rope_dim = positive(md, p + "rope.dimension_count", uint64_t(c.head_dim));
    if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
        throw Error("bad metadata: rope.dimension_count " + std::to_string(c.rope_dim) + " does not fit head size " +
                    std::to_string(c.head_dim));
    }
    if ((c.arch == Arch::Qwen2 || c.arch == Arch::Qwen3 || gemma) && c.rope_dim != c.head_dim) {
        throw Error("unsupported model: " + c.architecture + " with rope.dimension_count " + std::to_string(c.rope_dim) +
                    " (must equal the head size " + std::to_string(c.head_dim) + ")");
    }
    c.rope_base = md.get_f32(p + "rope.freq_base").value_or(10000.0f);
    if (!(c.rope_base > 1.0f) || !std::isfinite(c.rope_base)) throw Error("bad metadata: rope.freq_base must be > 1");
    c.rms_eps = md.get_f32(p + "attention.layer_norm_rms_epsilon").value_or(1e-5f);
    if (!(c.rms_eps > 0.0f) || !std::isfinite(c.rms_eps)) {
        throw Error("bad metadata: attention.layer_norm_rms_epsilon must be > 0");
    }

    // As llama.cpp: no type means linear, and a factor of 0 or none means 1.
    const std::string scaling(md.get_string(p + "rope.scaling.type").value_or("linear"));
    if (scaling == "linear" || scaling == "longrope") {
        const float factor = md.get_f32(p + "rope.scaling.factor").value_or(0.0f);
        if (!(factor >= 0.0f) || !std::isfinite(factor)) throw Error("bad metadata: rope.scaling.factor must be >= 0");
        if (factor > 0.0f) c.rope_scale = 1.0f / factor;
    } else if (scaling != "none") {
        throw Error("unsupported RoPE scaling " + gguf::quoted(scaling) + " (" + p + "rope.scaling.type; supported: none, linear, longrope)");
    }
    c.rope_attn_factor = md.get_f32(p + "rope.scaling.attn_factor").value_or(1.0f);
    if (!(c.rope_attn_factor > 0.0f) || !std::isfinite(c.rope_attn_factor)) {
        throw Error("bad metadata: rope.scaling.attn_factor must be > 0");
    }
    c.n_ctx_orig = positive(md, p + "rope.scaling.original_context_length", uint64_t(c.n_ctx_train));
    if (auto s = md.get_f32(p + "attention.scale"); s && *s != 0.0f && !gemma) {
        if (!(*s > 0.0f) || !std::isfinite(*s)) throw Error("bad metadata: attention.scale must be > 0");
        c.kq_scale = *s;
    }
    c.q_scale = 1.0f / std::sqrt(float(c.head_dim));
    if (c.arch == Arch::Gemma3) read_gemma3(md, p, c);
    if (c.arch == Arch::GemmaEmbedding) read_gemma_embedding(md, p, c);
    if (c.arch == Arch::Bert || c.arch == Arch::NomicBert) read_bert(md, p, c);
    const uint64_t pooling = md.get_uint(p + "pooling_type").value_or(0);
    if (pooling > uint64_t(Pooling::Rank)) {
        throw Error("bad metadata: '" + p + "pooling_type' = " + std::to_string(pooling) + " (0..4: none, mean, cls, last, rank)");
    }
    c.pooling = Pooling(pooling);
    const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
    if (embd == nullptr) throw Error("missing tensor 'token_embd.weight'");
    c.n_vocab = int(embd->ne[1]);
    if (auto v = md.get_uint(p + "vocab_size"); v && *v != uint64_t(c.n_vocab)) {
        throw Error("bad metadata: vocab_size " + std::to_string(*v) + " disagrees with token_embd.weight " +
                    embd->shape_string());
    }
    return c;
}

}  // namespace smolinfer::model
