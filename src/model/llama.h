// A loaded Llama model (file bytes, config, bound weights) and the forward
// pass state of one sequence (KV cache and scratch, allocated once).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gguf/gguf.h"
#include "model/config.h"
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

class Forward {
public:
    // n_ctx: positions the KV cache holds. max_batch: tokens per run() call.
    Forward(std::shared_ptr<const LlamaModel> model, int n_ctx, int max_batch);

    int n_ctx() const { return cache_.n_ctx(); }
    int max_batch() const { return max_batch_; }
    size_t memory_bytes() const;

    // Runs tokens at positions pos .. pos + n - 1 (n <= max_batch, pos + n <=
    // n_ctx, ids valid: the caller checks) and returns logits: one row of
    // n_vocab per token when all_logits, else the last token's row only.
    std::span<const float> run(runtime::ThreadPool& pool, std::span<const int32_t> tokens, int pos, bool all_logits);

private:
    void layer(runtime::ThreadPool& pool, int il, int n, int pos);

    std::shared_ptr<const LlamaModel> model_;
    int max_batch_;
    KvCache cache_;
    Matmul matmul_;
    // Scratch, max_batch rows each.
    std::vector<float> x_, xn_, q_, k_, v_, att_, gate_, up_, logits_;
    std::vector<float> rope_;    // (cos, sin) pairs per token of the batch
    std::vector<uint16_t> v_half_;  // a token's V as halves, before the transposed store
    std::vector<float> scores_;  // per thread: attention scratch (scratch_per_thread_ floats)
    size_t scratch_per_thread_ = 0;
    int score_threads_ = 0;
};

}  // namespace smolinfer::model
