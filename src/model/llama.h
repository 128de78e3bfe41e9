// A loaded Llama model (file bytes, config, bound weights) and the forward
// pass (scratch allocated once) over KV caches the caller owns.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gguf/gguf.h"
#include "model/config.h"
#include "model/flash_attention.h"
#include "model/kv_cache.h"
#include "model/matmul.h"
#include "model/weights.h"
#include "runtime/file_bytes.h"

namespace smolinfer::runtime {
class ThreadPool;
}

namespace smolinfer::model {

class LlamaModel {
public:
    // Parses and validates the file; throws smolinfer::Error on any problem.
    // Matrices get the kernels of `isa`.
    static std::shared_ptr<const LlamaModel> load(std::shared_ptr<const runtime::FileBytes> bytes,
                                                  quant::Isa isa = quant::best_isa());

    const gguf::File& file() const { return file_; }
    const LlamaConfig& config() const { return config_; }
    const LlamaWeights& weights() const { return weights_; }
    quant::Isa isa() const { return isa_; }

private:
    std::shared_ptr<const runtime::FileBytes> bytes_;
    gguf::File file_;
    LlamaConfig config_;
    LlamaWeights weights_;
    quant::Isa isa_ = quant::Isa::Reference;
};

// One token of one sequence in a multi-sequence pass (Forward::run_tokens).
struct SequenceToken {
    int32_t token;
    KvCache* cache;  // the sequence's keys and values
    int pos;         // the token's position in it
};

// What a pass returns for the rows it is asked for: logits, or the final
// hidden states (after the output norm, when the model has one): what an
// embedding is pooled from.
enum class PassOutput { Logits, Hidden };

// The forward pass: weights, scratch and the thread pool's work, over KV
// caches the caller owns (one per sequence).
class Forward {
public:
    // n_ctx: most positions of any cache passed in. max_batch: tokens per call.
    Forward(std::shared_ptr<const LlamaModel> model, int n_ctx, int max_batch);

    int n_ctx() const { return n_ctx_; }
    int max_batch() const { return max_batch_; }
    size_t memory_bytes() const;  // scratch (caches not included)
    const LlamaModel& model() const { return *model_; }

    // Which arithmetic run() gives the token at index j of a call with n
    // tokens. The orders depend on nothing else about the call: a token's
    // keys, values and logits are bit for bit the same in two calls where it
    // has the same position, id, earlier cells and arithmetic. run_tokens()
    // gives every token the arithmetic of a call with one token.
    int arithmetic(int j, int n) const;

    // Runs tokens at positions pos .. pos + n - 1 of one sequence (n <=
    // max_batch, pos + n <= cache.n_ctx() <= n_ctx(), ids valid: the caller
    // checks) and returns logits: one row of n_vocab per token when
    // all_logits, else the last token's row only. Two or more tokens are
    // summed in llama.cpp's batch orders, one token in its single-token orders.
    // A cache with its values in rows takes flash attention, by `flash_path`
    // (the size of llama.cpp's micro-batch holding these tokens decides it).
    // An encoder (LlamaConfig::encoder) takes a whole sequence in one call
    // from position 0, every token seeing every other: flash attention (a
    // cache with its values in rows) by llama.cpp's path for n tokens, else
    // attention in f32 (encoder_attention.h).
    // PassOutput::Hidden returns the final hidden states (n_embd a row)
    // instead of logits.
    std::span<const float> run(runtime::ThreadPool& pool, KvCache& cache, std::span<const int32_t> tokens, int pos,
                               bool all_logits, FlashPath flash_path = FlashPath::Chunk,
                               PassOutput output = PassOutput::Logits);

    // gemma-embedding's dense projections of a pooled vector (dense_2, then
    // dense_3, each as a single token's product); the vector itself when
    // the model has none.
    std::vector<float> project(runtime::ThreadPool& pool, std::vector<float> pooled);

    // One token for each of several sequences (at most max_batch, distinct
    // caches), each computed bit for bit as run() computes a single token:
    // a sequence's result does not depend on the others. Returns a row of
    // logits per entry.
    std::span<const float> run_tokens(runtime::ThreadPool& pool, std::span<const SequenceToken> tokens);

    // The thread count of the llama.cpp run whose arithmetic to reproduce
    // (its flash attention splits a token decoded alone between its
    // threads); 0: the pool's size.
    void set_reference_threads(int n) { reference_threads_ = n; }
    int reference_threads() const { return reference_threads_; }

private:
    // The pass over the n rows set up in row_token_, row_cache_, row_pos_.
    std::span<const float> run_rows(runtime::ThreadPool& pool, int n, RowOrder order, bool all_logits,
                                    FlashPath flash_path, PassOutput output = PassOutput::Logits);
    void embed_tokens(int n);
    void layer(runtime::ThreadPool& pool, int il, int n, RowOrder order, FlashPath flash_path);
    void feed_forward(runtime::ThreadPool& pool, const LayerWeights& w, const float* in, int n, RowOrder order);
    void attention(runtime::ThreadPool& pool, int il, int n, RowOrder order);
    void encoder_attention(runtime::ThreadPool& pool, int il, int n);
    void flash_attention(runtime::ThreadPool& pool, int il, int n, RowOrder order, FlashPath path);

    std::shared_ptr<const LlamaModel> model_;
    int n_ctx_;
    int max_batch_;
    // Tokens the grouped matrix kernels take together: the least common
    // multiple of the matrices' groups (1 when no kernel groups tokens).
    int batch_group_ = 1;
    Matmul matmul_;
    // Per row of the pass: its token, cache and position.
    std::vector<int32_t> row_token_;
    std::vector<KvCache*> row_cache_;
    std::vector<int> row_pos_;
    // Scratch, max_batch rows each.
    std::vector<float> x_, xn_, q_, k_, v_, att_, gate_, up_, logits_;
    std::vector<float> rope_;    // (cos, sin) pairs per token of the batch
    std::vector<float> rope_swa_;  // the same for sliding-window layers, when their RoPE differs
    std::vector<uint16_t> v_half_;  // a token's V as halves, before the transposed store
    std::vector<float> v_t_;        // an encoder's values transposed per KV head (f32 attention)
    std::vector<float> flash_parts_;  // a decoded token's split walk: every head's parts (flash_attend_part)
    std::vector<float> scores_;  // per thread: attention scratch (scratch_per_thread_ floats)
    size_t scratch_per_thread_ = 0;
    int score_threads_ = 0;
    int reference_threads_ = 0;
};

}  // namespace smolinfer::model
