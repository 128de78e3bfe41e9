// Keys and values of every past position, per layer, stored as IEEE half
// (as llama.cpp's default cache is).
//
// Keys: [layer][position][kv_dim], a position's key heads side by side.
// Values, as llama.cpp lays them out for its attention mode:
// - Transposed (flash attention off): blocks of 256 positions,
//   [layer][block][kv_dim][256], so the weighted sum over positions for one
//   value dimension reads contiguous memory, and a growing context touches
//   its pages block by block.
// - Rows (flash attention on): [layer][position][kv_dim] like the keys, since
//   flash attention adds one position's whole value row at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace smolinfer::model {

class KvCache {
public:
    static constexpr int kBlock = 256;  // positions per transposed value block
    enum class ValueLayout { Transposed, Rows };

    // Not zero-filled: a position is always written before it is read, and
    // untouched pages of a large cache cost no memory.
    KvCache(int n_layer, int n_ctx, int kv_dim, ValueLayout layout = ValueLayout::Transposed)
        : n_ctx_(n_ctx),
          kv_dim_(kv_dim),
          n_blocks_(blocks(n_ctx)),
          layout_(layout),
          k_(new uint16_t[addressable(uint64_t(n_layer) * uint64_t(n_ctx) * uint64_t(kv_dim))]),
          v_(new uint16_t[addressable(uint64_t(n_layer) * value_positions(n_ctx, layout) * uint64_t(kv_dim))]),
          bytes_(bytes_for(n_layer, n_ctx, kv_dim, layout)) {}

    // Bytes a cache of this shape takes (64-bit: in wasm size_t would wrap).
    static uint64_t bytes_for(int n_layer, int n_ctx, int kv_dim, ValueLayout layout = ValueLayout::Transposed) {
        const uint64_t per_layer = uint64_t(n_ctx) + value_positions(n_ctx, layout);
        return uint64_t(n_layer) * per_layer * uint64_t(kv_dim) * sizeof(uint16_t);
    }

    int n_ctx() const { return n_ctx_; }
    int kv_dim() const { return kv_dim_; }
    ValueLayout layout() const { return layout_; }
    uint64_t bytes() const { return bytes_; }

    // The key of position `pos` (kv_dim values).
    uint16_t* k(int layer, int pos) { return k_.get() + (size_t(layer) * size_t(n_ctx_) + size_t(pos)) * size_t(kv_dim_); }
    const uint16_t* k(int layer, int pos) const { return const_cast<KvCache*>(this)->k(layer, pos); }

    // Rows layout: the value of position `pos` (kv_dim values).
    uint16_t* v_row(int layer, int pos) {
        return v_.get() + (size_t(layer) * size_t(n_ctx_) + size_t(pos)) * size_t(kv_dim_);
    }
    const uint16_t* v_row(int layer, int pos) const { return const_cast<KvCache*>(this)->v_row(layer, pos); }

    // Transposed layout: value dimension `dim` of the 256 positions of block `block`.
    uint16_t* v_block(int layer, int block, int dim) {
        return v_.get() + ((size_t(layer) * size_t(n_blocks_) + size_t(block)) * size_t(kv_dim_) + size_t(dim)) * kBlock;
    }
    const uint16_t* v_block(int layer, int block, int dim) const {
        return const_cast<KvCache*>(this)->v_block(layer, block, dim);
    }
    uint16_t v(int layer, int pos, int dim) const {
        return layout_ == ValueLayout::Rows ? v_row(layer, pos)[dim] : v_block(layer, pos / kBlock, dim)[pos % kBlock];
    }
    void set_v(int layer, int pos, int dim, uint16_t value) {
        if (layout_ == ValueLayout::Rows) {
            v_row(layer, pos)[dim] = value;
        } else {
            v_block(layer, pos / kBlock, dim)[pos % kBlock] = value;
        }
    }
    // A position's whole value (kv_dim halves), in either layout.
    void set_v_row(int layer, int pos, const uint16_t* value) {
        for (int i = 0; i < kv_dim_; ++i) set_v(layer, pos, i, value[i]);
    }

private:
    static int blocks(int n_ctx) { return int((int64_t(n_ctx) + kBlock - 1) / kBlock); }
    static uint64_t value_positions(int n_ctx, ValueLayout layout) {
        return layout == ValueLayout::Rows ? uint64_t(n_ctx) : uint64_t(blocks(n_ctx)) * kBlock;
    }

    // An element count this address space can hold, or bad_alloc (which the
    // session reports with the sizes) instead of a wrapped, too-small array.
    static size_t addressable(uint64_t elements) {
        if (elements > uint64_t(SIZE_MAX / 2 / sizeof(uint16_t))) throw std::bad_alloc();
        return size_t(elements);
    }

    int n_ctx_;
    int kv_dim_;
    int n_blocks_;
    ValueLayout layout_;
    std::unique_ptr<uint16_t[]> k_;
    std::unique_ptr<uint16_t[]> v_;
    uint64_t bytes_;
};

}  // namespace smolinfer::model
