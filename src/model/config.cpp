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

}  // namespace

LlamaConfig LlamaConfig::from_gguf(const gguf::File& file) {
    const gguf::Metadata& md = file.metadata();
    LlamaConfig c;
    const auto arch = md.get_string("general.architecture");
    if (!arch) throw Error("missing metadata 'general.architecture'");
    c.architecture = std::string(*arch);
    if (c.architecture != "llama") {
        throw Error("unsupported architecture " + gguf::quoted(c.architecture) + " (general.architecture); supported: llama");
    }
    c.name = std::string(md.get_string("general.name").value_or(""));
    const std::string p = c.architecture + ".";

    if (md.get_uint(p + "expert_count").value_or(0) > 0) {
        throw Error("unsupported model: mixture-of-experts llama (" + p + "expert_count > 0)");
    }

    c.n_embd = positive(md, p + "embedding_length");
    c.n_layer = positive(md, p + "block_count");
    c.n_head = positive(md, p + "attention.head_count");
    c.n_head_kv = positive(md, p + "attention.head_count_kv", uint64_t(c.n_head));
    c.n_ff = positive(md, p + "feed_forward_length");
    c.n_ctx_train = positive(md, p + "context_length");
    if (c.n_embd % c.n_head != 0) {
        throw Error("bad metadata: embedding_length " + std::to_string(c.n_embd) + " is not a multiple of head_count " +
                    std::to_string(c.n_head));
    }
    c.head_dim = positive(md, p + "attention.key_length", uint64_t(c.n_embd / c.n_head));
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
    c.rope_base = md.get_f32(p + "rope.freq_base").value_or(10000.0f);
    if (!(c.rope_base > 1.0f) || !std::isfinite(c.rope_base)) throw Error("bad metadata: rope.freq_base must be > 1");
    c.rms_eps = md.get_f32(p + "attention.layer_norm_rms_epsilon").value_or(1e-5f);
    if (!(c.rms_eps > 0.0f) || !std::isfinite(c.rms_eps)) {
        throw Error("bad metadata: attention.layer_norm_rms_epsilon must be > 0");
    }

    const std::string scaling(md.get_string(p + "rope.scaling.type").value_or("none"));
    if (scaling == "linear") {
        const float factor = md.get_f32(p + "rope.scaling.factor").value_or(1.0f);
        if (!(factor > 0.0f)) throw Error("bad metadata: rope.scaling.factor must be > 0");
        c.rope_scale = 1.0f / factor;
    } else if (scaling != "none") {
        throw Error("unsupported RoPE scaling " + gguf::quoted(scaling) + " (" + p + "rope.scaling.type)");
    }

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
