// Keys and values of every past position, per layer, stored as IEEE half
// (as llama.cpp's default cache is). Layout: [layer][position][kv_dim].
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace smolinfer::model {

class KvCache {
public:
    KvCache(int n_layer, int n_ctx, int kv_dim)
        : n_ctx_(n_ctx),
          kv_dim_(kv_dim),
          k_(size_t(n_layer) * size_t(n_ctx) * size_t(kv_dim)),
          v_(k_.size()) {}

    int n_ctx() const { return n_ctx_; }
    int kv_dim() const { return kv_dim_; }
    size_t bytes() const { return (k_.size() + v_.size()) * sizeof(uint16_t); }

    uint16_t* k(int layer, int pos) { return k_.data() + offset(layer, pos); }
    uint16_t* v(int layer, int pos) { return v_.data() + offset(layer, pos); }
    const uint16_t* k(int layer, int pos) const { return k_.data() + offset(layer, pos); }
    const uint16_t* v(int layer, int pos) const { return v_.data() + offset(layer, pos); }

private:
    size_t offset(int layer, int pos) const {
        return (size_t(layer) * size_t(n_ctx_) + size_t(pos)) * size_t(kv_dim_);
    }

    int n_ctx_;
    int kv_dim_;
    std::vector<uint16_t> k_;
    std::vector<uint16_t> v_;
};

}  // namespace smolinfer::model
