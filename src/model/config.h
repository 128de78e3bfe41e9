// Llama hyper-parameters, read from GGUF metadata ({arch}.* keys).
#pragma once

#include <cstdint>
#include <string>

namespace smolinfer::gguf {
class File;
}

namespace smolinfer::model {

struct LlamaConfig {
    std::string architecture;  // general.architecture
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
    float rms_eps = 1e-5f;

    int q_dim() const { return n_head * head_dim; }
    int kv_dim() const { return n_head_kv * head_dim; }
    int gqa_group() const { return n_head / n_head_kv; }

    // Throws smolinfer::Error naming the key that is missing or wrong.
    static LlamaConfig from_gguf(const gguf::File& file);
};

}  // namespace smolinfer::model
