// Keys and values of every past position, per layer, stored as IEEE half
// (as llama.cpp's default cache is). Layout: [layer][position][kv_dim].
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace smolinfer::model {

class KvCache {
public:
    // Not zero-filled: a position is always written before it is read, and
    // untouched pages of a large cache cost no memory.
    KvCache(int n_layer, int n_ctx, int kv_dim)
        : n_ctx_(n_ctx),
          kv_dim_(kv_dim),
          size_(size_t(n_layer) * size_t(n_ctx) * size_t(kv_dim)),
          k_(new uint16_t[size_]),
          v_(new uint16_t[size_]) {}

    // Bytes a cache of this shape takes.
    static size_t bytes_for(int n_layer, int n_ctx, int kv_dim) {
        return 2 * size_t(n_layer) * size_t(n_ctx) * size_t(kv_dim) * sizeof(uint16_t);
    }

    int n_ctx() const { return n_ctx_; }
    int kv_dim() const { return kv_dim_; }
    size_t bytes() const { return 2 * size_ * sizeof(uint16_t); }

    uint16_t* k(int layer, int pos) { return k_.get() + offset(layer, pos); }
    uint16_t* v(int layer, int pos) { return v_.get() + offset(layer, pos); }
    const uint16_t* k(int layer, int pos) const { return k_.get() + offset(layer, pos); }
    const uint16_t* v(int layer, int pos) const { return v_.get() + offset(layer, pos); }

private:
    size_t offset(int layer, int pos) const {
        return (size_t(layer) * size_t(n_ctx_) + size_t(pos)) * size_t(kv_dim_);
    }

    int n_ctx_;
    int kv_dim_;
    size_t size_;
    std::unique_ptr<uint16_t[]> k_;
    std::unique_ptr<uint16_t[]> v_;
};

}  // namespace smolinfer::model
