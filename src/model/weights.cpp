#include "model/weights.h"

#include "gguf/gguf.h"
#include "model/config.h"
#include "quant/reference.h"
#include "smolinfer/error.h"

namespace smolinfer::model {

namespace {

const gguf::TensorInfo& require(const gguf::File& file, const std::string& name) {
    const gguf::TensorInfo* t = file.find_tensor(name);
    if (t == nullptr) throw Error("missing tensor '" + name + "'");
    return *t;
}

void check_shape(const gguf::TensorInfo& t, uint64_t ne0, uint64_t ne1) {
    const bool ok = t.ne[0] == ne0 && t.ne[1] == ne1 && t.ne[2] == 1 && t.ne[3] == 1;
    if (!ok) {
        const std::string want = ne1 == 1 ? "[" + std::to_string(ne0) + "]"
                                          : "[" + std::to_string(ne0) + ", " + std::to_string(ne1) + "]";
        throw Error("tensor '" + t.name + "' has shape " + t.shape_string() + ", expected " + want);
    }
}

Matrix bind_matrix(const gguf::File& file, const std::string& name, int cols, int rows, quant::Isa isa) {
    const gguf::TensorInfo& t = require(file, name);
    check_shape(t, uint64_t(cols), uint64_t(rows));
    const auto kernel = quant::matmul_kernel(t.type(), rows, cols, isa);
    if (!kernel) {
        throw Error("tensor '" + name + "' has type " + std::string(t.traits.name) + ", which cannot be a weight matrix");
    }
    Matrix m;
    m.name = name;
    m.kernel = *kernel;
    m.data = t.data;
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = t.row_bytes();
    return m;
}

std::vector<float> bind_vector(const gguf::File& file, const std::string& name, int n) {
    const gguf::TensorInfo& t = require(file, name);
    check_shape(t, uint64_t(n), 1);
    const quant::Type type = t.type();
    if (type != quant::Type::F32 && type != quant::Type::F16 && type != quant::Type::BF16) {
        throw Error("tensor '" + name + "' has type " + std::string(t.traits.name) + "; norm weights must be F32, F16 or BF16");
    }
    std::vector<float> v(static_cast<size_t>(n));
    quant::ref::dequantize_row(type, t.data, v.data(), size_t(n));
    return v;
}

}  // namespace

LlamaWeights LlamaWeights::bind(const gguf::File& file, const LlamaConfig& c, quant::Isa isa) {
    if (file.find_tensor("rope_freqs.weight") != nullptr) {
        throw Error("unsupported model: tensor 'rope_freqs.weight' (per-dimension RoPE frequencies)");
    }
    LlamaWeights w;
    w.token_embd = bind_matrix(file, "token_embd.weight", c.n_embd, c.n_vocab, isa);
    w.output_norm = bind_vector(file, "output_norm.weight", c.n_embd);
    if (file.find_tensor("output.weight") != nullptr) {
        w.output = bind_matrix(file, "output.weight", c.n_embd, c.n_vocab, isa);
    } else {
        w.output = w.token_embd;
        w.tied_output = true;
    }
    // Layer by layer, so that a block_count larger than the file's layers
    // fails at the first missing tensor instead of allocating for all.
    for (int i = 0; i < c.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LayerWeights& l = w.layers.emplace_back();
        l.attn_norm = bind_vector(file, p + "attn_norm.weight", c.n_embd);
        l.wq = bind_matrix(file, p + "attn_q.weight", c.n_embd, c.q_dim(), isa);
        l.wk = bind_matrix(file, p + "attn_k.weight", c.n_embd, c.kv_dim(), isa);
        l.wv = bind_matrix(file, p + "attn_v.weight", c.n_embd, c.kv_dim(), isa);
        l.wo = bind_matrix(file, p + "attn_output.weight", c.q_dim(), c.n_embd, isa);
        l.ffn_norm = bind_vector(file, p + "ffn_norm.weight", c.n_embd);
        l.w_gate = bind_matrix(file, p + "ffn_gate.weight", c.n_embd, c.n_ff, isa);
        l.w_up = bind_matrix(file, p + "ffn_up.weight", c.n_embd, c.n_ff, isa);
        l.w_down = bind_matrix(file, p + "ffn_down.weight", c.n_ff, c.n_embd, isa);
    }
    return w;
}

}  // namespace smolinfer::model
