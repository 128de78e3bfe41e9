#include "model/llama.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/attention.h"
#include "model/encoder_attention.h"
#include "model/gelu.h"
#include "model/ops.h"
#include "quant/fp16.h"
#include "quant/reference.h"
#include "runtime/thread_pool.h"
#include "smolinfer/error.h"

namespace smolinfer::model {

namespace {
constexpr int kMaxHeadDim = 512;  // attention keeps one query head on the stack

// fn(t) for every token: across the threads for a batch, on the calling
// thread alone for one token (a barrier would cost more than it saves).
template <typename Fn>
void for_tokens(runtime::ThreadPool& pool, int n, Fn&& fn) {
    if (n == 1) {
        fn(0);
        return;
    }
    pool.parallel_for(size_t(n), [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) fn(int(t));
    });
}
// fn(thread, token, first_head, n_heads) over work items that each hold
// query heads of one KV head for one token, together so that the kernels
// convert each cached half once for all of them -- or split in parts when
// there are too few items to keep every thread busy.
template <typename Fn>
void for_head_groups(runtime::ThreadPool& pool, const LlamaConfig& c, int n, Fn&& fn) {
    const int group = c.n_head / c.n_head_kv;
    const int groups = n * c.n_head_kv;
    const int parts = std::clamp((2 * pool.size() + groups - 1) / groups, 1, group);
    const int part_heads = (group + parts - 1) / parts;
    const size_t items = size_t(groups) * size_t(parts);
    pool.parallel_for_dynamic(items, 1, [&](int thread, size_t begin, size_t end) {
        for (size_t item = begin; item < end; ++item) {
            const int t = int(item / size_t(c.n_head_kv * parts));
            const int kv = int(item / size_t(parts) % size_t(c.n_head_kv));
            const int first = kv * group + int(item % size_t(parts)) * part_heads;
            const int count = std::min(part_heads, (kv + 1) * group - first);
            if (count > 0) fn(thread, t, first, count);
        }
    });
}
}  // namespace

std::shared_ptr<const LlamaModel> LlamaModel::load(std::shared_ptr<const runtime::FileBytes> bytes, quant::Isa isa) {
    auto m = std::shared_ptr<LlamaModel>(new LlamaModel());
    m->bytes_ = std::move(bytes);
    m->file_ = gguf::File::parse_parts(m->bytes_->parts());
    m->config_ = LlamaConfig::from_gguf(m->file_);
    if (m->config_.head_dim > kMaxHeadDim) {
        throw Error("unsupported model: head size " + std::to_string(m->config_.head_dim) + " (at most " +
                    std::to_string(kMaxHeadDim) + ")");
    }
    m->weights_ = LlamaWeights::bind(m->file_, m->config_, isa);
    m->isa_ = isa;
    return m;
}

Forward::Forward(std::shared_ptr<const LlamaModel> model, int n_ctx, int max_batch)
    : model_(std::move(model)),
      n_ctx_(n_ctx),
      max_batch_(max_batch),
      matmul_(max_batch, std::max({model_->config().n_embd, model_->config().n_ff, model_->config().q_dim(),
                                   model_->config().dense_ff})) {
    const LlamaConfig& c = model_->config();
    const size_t b = size_t(max_batch);
    row_token_.resize(b);
    row_cache_.resize(b);
    row_pos_.resize(b);
    x_.resize(b * size_t(c.n_embd));
    xn_.resize(b * size_t(std::max(c.n_embd, c.q_dim())));
    q_.resize(b * size_t(c.q_dim()));
    k_.resize(b * size_t(c.kv_dim()));
    v_.resize(b * size_t(c.kv_dim()));
    att_.resize(b * size_t(c.q_dim()));
    gate_.resize(b * size_t(c.n_ff));
    up_.resize(b * size_t(c.n_ff));
    // One row of logits; the rows of a pass that wants all of them are
    // allocated when one first does (64 rows of Gemma's 262,144 logits are
    // 64 MiB, which generation never needs).
    logits_.resize(size_t(c.n_vocab));
    rope_.resize(b * size_t(c.rope_dim));
    if (c.n_swa > 0) rope_swa_.resize(b * size_t(c.rope_dim));
    v_half_.resize(b * size_t(c.kv_dim()));
    if (c.encoder) v_t_.resize(b * size_t(c.kv_dim()));
    const auto group = [&](const Matrix& m) {
        if (m.kernel.dot_batched) batch_group_ = std::lcm(batch_group_, m.kernel.batch_group);
    };
    for (const LayerWeights& l : model_->weights().layers) {
        for (const Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) group(*m);
    }
    group(model_->weights().output);
}

int Forward::arithmetic(int j, int n) const {
    // One token: single-token orders everywhere (run_rows, layer, Matmul).
    if (n == 1) return 0;
    // Two or more: batch orders; a matrix with a grouped kernel uses it for
    // tokens [0, n - n % its group) (multiply_rows). Before n - n % g every
    // matrix does, since each group divides g; in the tail of n % g tokens,
    // which ones do depends on the tail's length and the token's place in it.
    const int grouped = n - n % batch_group_;
    if (j < grouped) return 1;
    return 2 + (n % batch_group_) * batch_group_ + (j - grouped);
}

size_t Forward::memory_bytes() const {
    size_t floats = x_.size() + xn_.size() + q_.size() + k_.size() + v_.size() + att_.size() + gate_.size() +
                    up_.size() + logits_.size() + scores_.size() + rope_.size();
    return (floats + rope_swa_.size() + v_t_.size()) * sizeof(float) + v_half_.size() * sizeof(uint16_t);
}

namespace {
// An encoder's pass of n tokens is one sequence, seen whole.
AttentionShape attention_shape(const LlamaConfig& c, int il, int n) {
    return {c.n_head, c.n_head_kv, c.head_dim, c.scale_queries ? 1.0f : c.kq_scale, c.is_swa(il) ? c.n_swa : 0,
            c.encoder ? n : 0};
}

// bert's LayerNorm, in place.
void layer_norm_in_place(const LlamaConfig& c, const LayerNormWeights& ln, float* x, size_t n) {
    layer_norm(x, ln.weight.data(), ln.bias.data(), x, n, c.norm_eps);
}
}  // namespace

void Forward::attention(runtime::ThreadPool& pool, int il, int n, RowOrder order) {
    const LlamaConfig& c = model_->config();
    const AttentionShape shape = attention_shape(c, il, n);
    const AttentionOrder att_order =
        n >= 2 && order == RowOrder::Batch ? AttentionOrder::Batch : AttentionOrder::Single;
    for_head_groups(pool, c, n, [&](int thread, int t, int first, int count) {
        const size_t off = size_t(t) * size_t(c.q_dim()) + size_t(first * c.head_dim);
        attend_heads(*row_cache_[size_t(t)], il, shape, first, count, row_pos_[size_t(t)], &q_[off], &att_[off],
                     &scores_[size_t(thread) * scratch_per_thread_], att_order);
    });
}

void Forward::flash_attention(runtime::ThreadPool& pool, int il, int n, RowOrder order, FlashPath path) {
    const LlamaConfig& c = model_->config();
    const size_t Q = size_t(c.q_dim());
    const AttentionShape shape = attention_shape(c, il, n);
    const bool fused = model_->isa() != quant::Isa::WasmSimdFast;
    if (path == FlashPath::Chunk) {
        // A token decoded alone: llama.cpp splits its keys between its threads.
        const bool alone = n == 1 || order == RowOrder::PerToken;
        const int splits = !alone ? 1 : reference_threads_ > 0 ? reference_threads_ : pool.size();
        const int parts = n == 1 && pool.size() > 1 ? flash_walk_parts(*row_cache_[0], il, shape, row_pos_[0], splits) : 1;
        if (parts > 1) {
            // So do we: each thread walks a part of every head of a KV head,
            // reading its keys and values once, then the parts are folded in
            // order -- not each head's whole walk on one thread, which left
            // a thread idle when there are few KV heads and read a KV head's
            // cache once per thread holding some of its heads.
            const int group = c.n_head / c.n_head_kv;
            const size_t item_floats = size_t(group) * size_t(c.head_dim + 2);
            const size_t items = size_t(c.n_head_kv) * size_t(parts);
            if (flash_parts_.size() < items * item_floats) flash_parts_.resize(items * item_floats);
            pool.parallel_for_dynamic(items, 1, [&](int thread, size_t begin, size_t end) {
                for (size_t item = begin; item < end; ++item) {
                    const int kv = int(item / size_t(parts)), part = int(item % size_t(parts));
                    flash_attend_part(*row_cache_[0], il, shape, kv * group, group, row_pos_[0], &q_[size_t(kv * group * c.head_dim)],
                                      splits, part, &flash_parts_[item * item_floats],
                                      &scores_[size_t(thread) * scratch_per_thread_], fused);
                }
            });
            for (int kv = 0; kv < c.n_head_kv; ++kv) {
                flash_fold_parts(&flash_parts_[size_t(kv) * size_t(parts) * item_floats], item_floats, parts, group,
                                 c.head_dim, &att_[size_t(kv * group * c.head_dim)]);
            }
            return;
        }
        for_head_groups(pool, c, n, [&](int thread, int t, int first, int count) {
            const size_t off = size_t(t) * Q + size_t(first * c.head_dim);
            flash_attend_heads(*row_cache_[size_t(t)], il, shape, first, count, row_pos_[size_t(t)], &q_[off],
                               &att_[off], &scores_[size_t(thread) * scratch_per_thread_], fused, splits);
        });
        return;
    }
    // Tiled: a KV head for a run of tokens per item, which share the
    // conversion of each tile of cached keys and values: runs as long as
    // they can be while every thread still gets two items.
    int per_item = kFlashTokensPerCall;
    while (per_item > 8 && (n + per_item - 1) / per_item * c.n_head_kv < 2 * pool.size()) per_item /= 2;
    const int runs = (n + per_item - 1) / per_item;
    const size_t items = size_t(runs) * size_t(c.n_head_kv);
    pool.parallel_for_dynamic(items, 1, [&](int thread, size_t begin, size_t end) {
        float* scratch = &scores_[size_t(thread) * scratch_per_thread_];
        for (size_t item = begin; item < end; ++item) {
            const int t0 = int(item / size_t(c.n_head_kv)) * per_item;
            const int kv = int(item % size_t(c.n_head_kv));
            const int count = std::min(per_item, n - t0);
            flash_attend_tiled(*row_cache_[size_t(t0)], il, shape, kv, count, &row_pos_[size_t(t0)],
                               &q_[size_t(t0) * Q], &att_[size_t(t0) * Q], Q, scratch, fused);
        }
    });
}

void Forward::encoder_attention(runtime::ThreadPool& pool, int il, int n) {
    const LlamaConfig& c = model_->config();
    const AttentionShape shape = attention_shape(c, il, n);
    const size_t KV = size_t(c.kv_dim()), hd = size_t(c.head_dim);
    // Values transposed per KV head: dimension i of token j at [i][j], as
    // llama.cpp's ggml_cont(ggml_transpose(v)) lays them out.
    for (size_t h = 0; h < size_t(c.n_head_kv); ++h) {
        for (size_t i = 0; i < hd; ++i) {
            float* row = &v_t_[(h * hd + i) * size_t(n)];
            for (size_t j = 0; j < size_t(n); ++j) row[j] = v_[j * KV + h * hd + i];
        }
    }
    for_head_groups(pool, c, n, [&](int thread, int t, int first, int count) {
        const size_t off = size_t(t) * size_t(c.q_dim()) + size_t(first) * hd;
        const size_t kv_head = size_t(first / (c.n_head / c.n_head_kv));
        encoder_attend_heads(shape, first, count, t, &q_[off], k_.data(), KV, &v_t_[kv_head * hd * size_t(n)], &att_[off],
                             &scores_[size_t(thread) * scratch_per_thread_]);
    });
}

void Forward::layer(runtime::ThreadPool& pool, int il, int n, RowOrder order, FlashPath flash_path) {
    const LlamaConfig& c = model_->config();
    const LayerWeights& w = model_->weights().layers[size_t(il)];
    const size_t E = size_t(c.n_embd), Q = size_t(c.q_dim()), KV = size_t(c.kv_dim());

    // Attention block: on the normed input, or (post-norm) on the input itself.
    const float* in = x_.data();
    if (!c.post_norm) {
        for_tokens(pool, n, [&](int t) { rms_norm(&x_[t * E], w.attn_norm.data(), &xn_[t * E], E, c.rms_eps); });
        in = xn_.data();
    }
    matmul_.run(pool, in, n, c.n_embd, {{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}}, order);
    // Sliding-window layers turn by their own RoPE base (gemma3).
    const std::vector<float>& rope = c.is_swa(il) && !rope_swa_.empty() ? rope_swa_ : rope_;
    for_tokens(pool, n, [&](int t) {
        float* q = &q_[t * Q];
        float* k = &k_[t * KV];
        if (!w.bq.empty()) add(q, w.bq.data(), Q);  // qwen2
        if (!w.bk.empty()) add(k, w.bk.data(), KV);
        if (!w.bv.empty()) add(&v_[t * KV], w.bv.data(), KV);
        const size_t hd = size_t(c.head_dim);
        if (!w.q_norm.empty()) {  // qwen3, gemma3
            for (int h = 0; h < c.n_head; ++h) rms_norm(q + h * hd, w.q_norm.data(), q + h * hd, hd, c.rms_eps);
            for (int h = 0; h < c.n_head_kv; ++h) rms_norm(k + h * hd, w.k_norm.data(), k + h * hd, hd, c.rms_eps);
        }
        if (c.rope) {
            const float* cs = &rope[size_t(t) * size_t(c.rope_dim)];
            for (int h = 0; h < c.n_head; ++h) rope_rotate(q + h * hd, c.rope_dim, cs, c.rope_style);
            for (int h = 0; h < c.n_head_kv; ++h) rope_rotate(k + h * hd, c.rope_dim, cs, c.rope_style);
        }
        if (c.scale_queries) {  // phi3, gemma3
            for (size_t i = 0; i < Q; ++i) q[i] *= c.q_scale;
        }
        KvCache& cache = *row_cache_[size_t(t)];
        // An encoder without flash attention keeps its keys and values in f32.
        if (c.encoder && cache.layout() != KvCache::ValueLayout::Rows) return;
        const int cell = cache.cell(il, row_pos_[size_t(t)]);
        quant::f32_to_fp16_row(k, cache.k(il, cell), KV);
        // Convert the row, then store it (scattered, when V is transposed).
        uint16_t* vh = &v_half_[size_t(t) * KV];
        quant::f32_to_fp16_row(&v_[t * KV], vh, KV);
        cache.set_v_row(il, cell, vh);
    });
    if (row_cache_[0]->layout() == KvCache::ValueLayout::Rows) {
        // llama.cpp's path is the size of its micro-batch: an encoder's whole sequence.
        flash_attention(pool, il, n, order, c.encoder ? (n >= kFlashTileQ ? FlashPath::Tiled : FlashPath::Chunk) : flash_path);
    } else if (c.encoder) {
        encoder_attention(pool, il, n);
    } else {
        attention(pool, il, n, order);
    }
    matmul_.run(pool, att_.data(), n, c.q_dim(), {{&w.wo, xn_.data()}}, order);
    // The residual add and the next norm, token by token (rows are independent).
    for_tokens(pool, n, [&](int t) {
        if (!w.bo.empty()) add(&xn_[t * E], w.bo.data(), E);  // bert
        if (!w.post_attn_norm.empty()) rms_norm(&xn_[t * E], w.post_attn_norm.data(), &xn_[t * E], E, c.rms_eps);
        add(&x_[t * E], &xn_[t * E], E);
        if (c.post_norm) {
            layer_norm_in_place(c, w.attn_out_norm, &x_[t * E], E);
        } else {
            rms_norm(&x_[t * E], w.ffn_norm.data(), &xn_[t * E], E, c.rms_eps);
        }
    });
    feed_forward(pool, w, c.post_norm ? x_.data() : xn_.data(), n, order);
    for_tokens(pool, n, [&](int t) {
        if (!w.b_down.empty()) add(&xn_[t * E], w.b_down.data(), E);  // bert
        if (!w.post_ffn_norm.empty()) rms_norm(&xn_[t * E], w.post_ffn_norm.data(), &xn_[t * E], E, c.rms_eps);
        add(&x_[t * E], &xn_[t * E], E);
        if (c.post_norm) layer_norm_in_place(c, w.layer_out_norm, &x_[t * E], E);
    });
}

// The feed-forward block from `in` into xn_: a gate (SwiGLU or GEGLU) on
// each tile of rows as soon as both products have it, or (bert) the up
// product's bias and GELU on each tile of it.
void Forward::feed_forward(runtime::ThreadPool& pool, const LayerWeights& w, const float* in, int n, RowOrder order) {
    const LlamaConfig& c = model_->config();
    const size_t F = size_t(c.n_ff);
    if (!c.ffn_gated) {
        matmul_.run(pool, in, n, c.n_embd, {{&w.w_up, up_.data()}}, order, [&](int r0, int r1) {
            for (size_t t = 0; t < size_t(n); ++t) {
                float* u = &up_[t * F + size_t(r0)];
                if (!w.b_up.empty()) add(u, &w.b_up[size_t(r0)], size_t(r1 - r0));
                gelu(u, size_t(r1 - r0));
            }
        });
        matmul_.run(pool, up_.data(), n, c.n_ff, {{&w.w_down, xn_.data()}}, order);
        return;
    }
    const auto gate = c.ffn_gate == FfnGate::Gelu ? geglu : swiglu;
    matmul_.run(pool, in, n, c.n_embd, {{&w.w_gate, gate_.data()}, {&w.w_up, up_.data()}}, order,
                [&](int r0, int r1) {
                    for (size_t t = 0; t < size_t(n); ++t) gate(&gate_[t * F + size_t(r0)], &up_[t * F + size_t(r0)], size_t(r1 - r0));
                });
    matmul_.run(pool, gate_.data(), n, c.n_ff, {{&w.w_down, xn_.data()}}, order);
}

std::span<const float> Forward::run(runtime::ThreadPool& pool, KvCache& cache, std::span<const int32_t> tokens, int pos,
                                    bool all_logits, FlashPath flash_path, PassOutput output) {
    const int n = int(tokens.size());
    for (int t = 0; t < n; ++t) {
        row_token_[size_t(t)] = tokens[size_t(t)];
        row_cache_[size_t(t)] = &cache;
        row_pos_[size_t(t)] = pos + t;
    }
    return run_rows(pool, n, RowOrder::Batch, all_logits, flash_path, output);
}

std::vector<float> Forward::project(runtime::ThreadPool& pool, std::vector<float> pooled) {
    const LlamaWeights& w = model_->weights();
    if (w.dense_2.data == nullptr) return pooled;
    std::vector<float> mid(size_t(w.dense_2.rows)), out(size_t(w.dense_3.rows));
    matmul_.run(pool, pooled.data(), 1, w.dense_2.cols, {{&w.dense_2, mid.data()}}, RowOrder::Batch);
    matmul_.run(pool, mid.data(), 1, w.dense_3.cols, {{&w.dense_3, out.data()}}, RowOrder::Batch);
    return out;
}

std::span<const float> Forward::run_tokens(runtime::ThreadPool& pool, std::span<const SequenceToken> tokens) {
    const int n = int(tokens.size());
    for (int t = 0; t < n; ++t) {
        row_token_[size_t(t)] = tokens[size_t(t)].token;
        row_cache_[size_t(t)] = tokens[size_t(t)].cache;
        row_pos_[size_t(t)] = tokens[size_t(t)].pos;
    }
    return run_rows(pool, n, RowOrder::PerToken, true, FlashPath::Chunk);
}

// Each row's input: its token's embedding (gemma: scaled), and in bert
// token type 0's and its position's added, then a LayerNorm.
void Forward::embed_tokens(int n) {
    const LlamaConfig& c = model_->config();
    const LlamaWeights& w = model_->weights();
    const size_t E = size_t(c.n_embd);
    for (int t = 0; t < n; ++t) {
        float* x = &x_[t * E];
        quant::ref::dequantize_row(w.token_embd.type(), w.token_embd.row(row_token_[size_t(t)]), x, E);
        if (c.embd_scale != 0.0f) {  // gemma3
            for (size_t i = 0; i < E; ++i) x[i] *= c.embd_scale;
        }
        if (!w.token_type0.empty()) add(x, w.token_type0.data(), E);
        if (w.position_embd.data != nullptr) {
            float* position = &xn_[t * E];
            quant::ref::dequantize_row(w.position_embd.type(), w.position_embd.row(row_pos_[size_t(t)]), position, E);
            add(x, position, E);
        }
        if (!w.embd_norm.empty()) layer_norm_in_place(c, w.embd_norm, x, E);
    }
}

std::span<const float> Forward::run_rows(runtime::ThreadPool& pool, int n, RowOrder order, bool all_logits,
                                        FlashPath flash_path, PassOutput output) {
    const LlamaConfig& c = model_->config();
    const LlamaWeights& w = model_->weights();
    const size_t E = size_t(c.n_embd);
    if (score_threads_ != pool.size()) {
        score_threads_ = pool.size();
        scratch_per_thread_ = std::max({attention_scratch_floats(c.n_head / c.n_head_kv, n_ctx_),
                                        flash_tiled_scratch_floats(c.head_dim, c.n_head / c.n_head_kv),
                                        encoder_attention_scratch_floats(max_batch_)});
        scores_.assign(size_t(score_threads_) * scratch_per_thread_, 0.0f);
    }

    embed_tokens(n);
    // LongRoPE picks its factors by the cache's size (llama.cpp: n_ctx).
    for (int t = 0; t < n && c.rope; ++t) {
        const float* factors = w.rope_factors(c, row_cache_[size_t(t)]->n_ctx());
        rope_angles(row_pos_[size_t(t)], c.rope_dim, c.rope_base, c.rope_scale, factors, c.rope_attn_factor,
                    &rope_[size_t(t) * size_t(c.rope_dim)]);
        if (!rope_swa_.empty()) {
            rope_angles(row_pos_[size_t(t)], c.rope_dim, c.rope_base_swa, c.rope_scale_swa, factors, c.rope_attn_factor,
                        &rope_swa_[size_t(t) * size_t(c.rope_dim)]);
        }
    }
    for (int il = 0; il < c.n_layer; ++il) layer(pool, il, n, order, flash_path);
    for (int t = 0; t < n; ++t) row_cache_[size_t(t)]->note_written(row_pos_[size_t(t)] + 1);

    // Only the rows whose logits are wanted go through the output matrix.
    const int first = all_logits ? 0 : n - 1;
    const int rows = n - first;
    for (int t = first; t < n; ++t) {
        float* y = &xn_[size_t(t - first) * E];
        if (w.output_norm.empty()) {  // bert: its last layer ends with a norm
            std::copy_n(&x_[t * E], E, y);
        } else {
            rms_norm(&x_[t * E], w.output_norm.data(), y, E, c.rms_eps);
        }
    }
    if (output == PassOutput::Hidden) return {xn_.data(), size_t(rows) * E};
    if (logits_.size() < size_t(rows) * size_t(c.n_vocab)) logits_.resize(size_t(rows) * size_t(c.n_vocab));
    matmul_.run(pool, xn_.data(), rows, c.n_embd, {{&w.output, logits_.data()}}, order);
    if (!w.output_bias.empty()) {
        for (int r = 0; r < rows; ++r) add(&logits_[size_t(r) * size_t(c.n_vocab)], w.output_bias.data(), size_t(c.n_vocab));
    }
    if (c.final_softcap != 0.0f) {
        // As llama.cpp: scale by 1/cap, tanh, scale by cap (three roundings).
        const float inv = 1.0f / c.final_softcap;
        for (size_t i = 0; i < size_t(rows) * size_t(c.n_vocab); ++i) {
            logits_[i] = float(std::tanh(double(logits_[i] * inv))) * c.final_softcap;
        }
    }
    return {logits_.data(), size_t(rows) * size_t(c.n_vocab)};
}

}  // namespace smolinfer::model
