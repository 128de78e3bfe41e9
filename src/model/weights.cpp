#include "model/weights.h"

#include <unordered_set>

#include "gguf/gguf.h"
#include "model/config.h"
#include "quant/reference.h"
#include "smolinfer/error.h"

namespace smolinfer::model {

namespace {

// Binds tensors by name and remembers which it bound, so that a tensor the
// forward pass would not apply (a bias, a norm of another family) is an
// error rather than silently left out.
class Binder {
public:
    Binder(const gguf::File& file, quant::Isa isa) : file_(file), isa_(isa) {}

    bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

    Matrix matrix(const std::string& name, int cols, int rows) {
        const gguf::TensorInfo& t = require(name);
        check_shape(t, uint64_t(cols), uint64_t(rows));
        const auto kernel = quant::matmul_kernel(t.type(), rows, cols, isa_);
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

    std::vector<float> vector(const std::string& name, int n) {
        const gguf::TensorInfo& t = require(name);
        check_shape(t, uint64_t(n), 1);
        const quant::Type type = t.type();
        if (type != quant::Type::F32 && type != quant::Type::F16 && type != quant::Type::BF16) {
            throw Error("tensor '" + name + "' has type " + std::string(t.traits.name) + "; norm weights must be F32, F16 or BF16");
        }
        std::vector<float> v(static_cast<size_t>(n));
        quant::ref::dequantize_row(type, t.data, v.data(), size_t(n));
        return v;
    }

    // Empty when the file has no such tensor.
    std::vector<float> optional_vector(const std::string& name, int n) {
        return has(name) ? vector(name, n) : std::vector<float>{};
    }

    // A table of `rows` rows of `cols` values read a row at a time
    // (dequantize_row), never multiplied.
    Matrix table(const std::string& name, int cols, int rows) {
        const gguf::TensorInfo& t = require(name);
        check_shape(t, uint64_t(cols), uint64_t(rows));
        Matrix m;
        m.name = name;
        m.kernel.weight = t.type();
        m.data = t.data;
        m.rows = rows;
        m.cols = cols;
        m.row_bytes = t.row_bytes();
        return m;
    }

    // The first row (n values) of a table of rows.
    std::vector<float> first_row(const std::string& name, int n) {
        const gguf::TensorInfo& t = require(name);
        if (t.ne[0] != uint64_t(n) || t.ne[1] == 0 || t.ne[2] != 1 || t.ne[3] != 1) {
            throw Error("tensor '" + name + "' has shape " + t.shape_string() + ", expected [" + std::to_string(n) + ", N]");
        }
        const quant::Type type = t.type();
        if (type != quant::Type::F32 && type != quant::Type::F16 && type != quant::Type::BF16) {
            throw Error("tensor '" + name + "' has type " + std::string(t.traits.name) + "; expected F32, F16 or BF16");
        }
        std::vector<float> v(static_cast<size_t>(n));
        quant::ref::dequantize_row(type, t.data, v.data(), size_t(n));
        return v;
    }

    // Throws naming the first tensor of the file that was not bound.
    void check_all_bound(const LlamaConfig& c) const {
        for (const gguf::TensorInfo& t : file_.tensors()) {
            if (used_.count(t.name) == 0) {
                throw Error("unsupported model: tensor '" + t.name + "' is not part of a " + c.architecture +
                            " model smolinfer can run");
            }
        }
    }

private:
    const gguf::TensorInfo& require(const std::string& name) {
        const gguf::TensorInfo* t = file_.find_tensor(name);
        if (t == nullptr) throw Error("missing tensor '" + name + "'");
        used_.insert(name);
        return *t;
    }

    static void check_shape(const gguf::TensorInfo& t, uint64_t ne0, uint64_t ne1) {
        const bool ok = t.ne[0] == ne0 && t.ne[1] == ne1 && t.ne[2] == 1 && t.ne[3] == 1;
        if (!ok) {
            const std::string want = ne1 == 1 ? "[" + std::to_string(ne0) + "]"
                                              : "[" + std::to_string(ne0) + ", " + std::to_string(ne1) + "]";
            throw Error("tensor '" + t.name + "' has shape " + t.shape_string() + ", expected " + want);
        }
    }

    const gguf::File& file_;
    quant::Isa isa_;
    std::unordered_set<std::string> used_;
};

// Q, K and V: three matrices, or one fused matrix whose rows are Q's, then
// K's, then V's (llama.cpp accepts either for every family); biases likewise.
void bind_qkv(Binder& b, const std::string& p, const LlamaConfig& c, LayerWeights& l) {
    const int Q = c.q_dim(), KV = c.kv_dim();
    if (b.has(p + "attn_qkv.weight")) {
        const Matrix qkv = b.matrix(p + "attn_qkv.weight", c.n_embd, Q + 2 * KV);
        l.wq = qkv.rows_view(0, Q, "q");
        l.wk = qkv.rows_view(Q, KV, "k");
        l.wv = qkv.rows_view(Q + KV, KV, "v");
        const std::vector<float> bias = b.optional_vector(p + "attn_qkv.bias", Q + 2 * KV);
        if (!bias.empty()) {
            l.bq.assign(bias.begin(), bias.begin() + Q);
            l.bk.assign(bias.begin() + Q, bias.begin() + Q + KV);
            l.bv.assign(bias.begin() + Q + KV, bias.end());
        }
        return;
    }
    l.wq = b.matrix(p + "attn_q.weight", c.n_embd, Q);
    l.wk = b.matrix(p + "attn_k.weight", c.n_embd, KV);
    l.wv = b.matrix(p + "attn_v.weight", c.n_embd, KV);
    l.bq = b.optional_vector(p + "attn_q.bias", Q);
    l.bk = b.optional_vector(p + "attn_k.bias", KV);
    l.bv = b.optional_vector(p + "attn_v.bias", KV);
}

LayerNormWeights layer_norm(Binder& b, const std::string& name, int n) {
    return {b.vector(name + ".weight", n), b.vector(name + ".bias", n)};
}

// The BERT family's layers (src/models/bert.cpp): no norm before a block, a
// LayerNorm after each residual add; bert has biases and an ungated
// feed-forward, nomic-bert a SwiGLU without biases (llama.cpp ignores
// them, so a file with them is refused rather than run differently).
LayerWeights bind_bert_layer(Binder& b, const std::string& p, const LlamaConfig& c) {
    LayerWeights l;
    bind_qkv(b, p, c, l);
    l.wo = b.matrix(p + "attn_output.weight", c.q_dim(), c.n_embd);
    l.bo = b.optional_vector(p + "attn_output.bias", c.n_embd);
    l.attn_out_norm = layer_norm(b, p + "attn_output_norm", c.n_embd);
    if (c.ffn_gated) l.w_gate = b.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff);
    l.w_up = b.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff);
    l.w_down = b.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd);
    if (c.arch == Arch::Bert) {
        l.b_up = b.optional_vector(p + "ffn_up.bias", c.n_ff);
        l.b_down = b.optional_vector(p + "ffn_down.bias", c.n_embd);
    }
    l.layer_out_norm = layer_norm(b, p + "layer_output_norm", c.n_embd);
    return l;
}

// The inputs of the BERT family: token embeddings, token type 0's, bert's
// learned positions (F32 or F16 rows, read one at a time), a LayerNorm.
void bind_bert_inputs(Binder& b, const LlamaConfig& c, LlamaWeights& w) {
    if (b.has("token_types.weight")) w.token_type0 = b.first_row("token_types.weight", c.n_embd);
    if (c.arch == Arch::Bert) w.position_embd = b.table("position_embd.weight", c.n_embd, c.n_ctx_train);
    w.embd_norm = layer_norm(b, "token_embd_norm", c.n_embd);
}

}  // namespace

Matrix Matrix::rows_view(int first, int count, std::string part) const {
    Matrix m = *this;
    m.name = name + "[" + part + "]";
    m.data = row(first);
    m.rows = count;
    return m;
}

const float* LlamaWeights::rope_factors(const LlamaConfig& c, int n_ctx) const {
    if (!rope_freqs.empty()) return rope_freqs.data();
    // As llama.cpp: the long factors once the context exceeds the original one.
    const std::vector<float>& f = n_ctx > c.n_ctx_orig ? rope_long : rope_short;
    return f.empty() ? nullptr : f.data();
}

LlamaWeights LlamaWeights::bind(const gguf::File& file, const LlamaConfig& c, quant::Isa isa) {
    Binder b(file, isa);
    LlamaWeights w;
    w.token_embd = b.matrix("token_embd.weight", c.n_embd, c.n_vocab);
    if (c.post_norm) {
        bind_bert_inputs(b, c, w);
        for (int i = 0; i < c.n_layer; ++i) w.layers.push_back(bind_bert_layer(b, "blk." + std::to_string(i) + ".", c));
        b.check_all_bound(c);
        return w;
    }
    w.output_norm = b.vector("output_norm.weight", c.n_embd);
    if (c.dense_ff > 0) {
        w.dense_2 = b.matrix("dense_2.weight", c.n_embd, c.dense_ff);
        w.dense_3 = b.matrix("dense_3.weight", c.dense_ff, c.n_embd);
    }
    if (b.has("output.weight")) {
        w.output = b.matrix("output.weight", c.n_embd, c.n_vocab);
    } else {
        w.output = w.token_embd;
        w.tied_output = true;
    }
    w.output_bias = b.optional_vector("output.bias", c.n_vocab);
    const int pairs = c.rope_dim / 2;
    w.rope_freqs = b.optional_vector("rope_freqs.weight", pairs);
    w.rope_short = b.optional_vector("rope_factors_short.weight", pairs);
    w.rope_long = b.optional_vector("rope_factors_long.weight", pairs);
    if (w.rope_short.empty() != w.rope_long.empty()) {
        throw Error("bad model: LongRoPE needs both 'rope_factors_short.weight' and 'rope_factors_long.weight'");
    }
    // Layer by layer, so that a block_count larger than the file's layers
    // fails at the first missing tensor instead of allocating for all.
    for (int i = 0; i < c.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LayerWeights& l = w.layers.emplace_back();
        l.attn_norm = b.vector(p + "attn_norm.weight", c.n_embd);
        bind_qkv(b, p, c, l);
        if (c.qk_norm) {
            l.q_norm = b.vector(p + "attn_q_norm.weight", c.head_dim);
            l.k_norm = b.vector(p + "attn_k_norm.weight", c.head_dim);
        }
        l.wo = b.matrix(p + "attn_output.weight", c.q_dim(), c.n_embd);
        if (c.post_norms) l.post_attn_norm = b.vector(p + "post_attention_norm.weight", c.n_embd);
        l.ffn_norm = b.vector(p + "ffn_norm.weight", c.n_embd);
        if (c.arch == Arch::Phi3) {
            // One matrix for both: the gate's rows, then the up projection's.
            const Matrix up = b.matrix(p + "ffn_up.weight", c.n_embd, 2 * c.n_ff);
            l.w_gate = up.rows_view(0, c.n_ff, "gate");
            l.w_up = up.rows_view(c.n_ff, c.n_ff, "up");
        } else {
            l.w_gate = b.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff);
            l.w_up = b.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff);
        }
        l.w_down = b.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd);
        if (c.post_norms) l.post_ffn_norm = b.vector(p + "post_ffw_norm.weight", c.n_embd);
    }
    b.check_all_bound(c);
    return w;
}

}  // namespace smolinfer::model
