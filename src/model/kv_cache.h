// Keys and values of past positions, per layer, stored as IEEE half (as
// llama.cpp's default cache is).
//
// A layer keeps one cell per position (cell p holds position p), or, for a
// sliding-window layer, a ring of `ring` cells (position p in cell p % ring):
// llama.cpp's SWA cache, which needs only the window plus a micro-batch, so
// a long context costs the global layers' cache only. Kernels address cells.
//
// Keys: [layer][cell][kv_dim], a cell's key heads side by side.
// Values, as llama.cpp lays them out for its attention mode:
// - Transposed (flash attention off): blocks of 256 cells,
//   [layer][block][kv_dim][256], so the weighted sum over cells for one
//   value dimension reads contiguous memory, and a growing context touches
//   its pages block by block.
// - Rows (flash attention on): [layer][cell][kv_dim] like the keys, since
//   flash attention adds one cell's whole value row at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace smolinfer::model {

class KvCache {
public:
    static constexpr int kBlock = 256;  // cells per transposed value block
    enum class ValueLayout { Transposed, Rows };

    // n_ctx positions. With `ring` > 0 (and < n_ctx), the layers marked in
    // ring_layers keep `ring` cells for a window of `window` positions.
    // Not zero-filled: a cell is always written before it is read, and
    // untouched pages of a large cache cost no memory.
    KvCache(int n_layer, int n_ctx, int kv_dim, ValueLayout layout = ValueLayout::Transposed, int ring = 0,
            const std::vector<uint8_t>& ring_layers = {}, int window = 0)
        : n_ctx_(n_ctx), kv_dim_(kv_dim), layout_(layout), window_(window) {
        const bool use_ring = ring > 0 && ring < n_ctx;
        uint64_t k_at = 0, v_at = 0;
        for (int il = 0; il < n_layer; ++il) {
            const bool r = use_ring && size_t(il) < ring_layers.size() && ring_layers[size_t(il)] != 0;
            const int cells = r ? ring : n_ctx;
            ring_.push_back(r ? ring : 0);
            k_offset_.push_back(size_t(k_at));
            v_offset_.push_back(size_t(v_at));
            k_at += uint64_t(cells) * uint64_t(kv_dim);
            v_at += value_cells(cells, layout) * uint64_t(kv_dim);
        }
        k_.reset(new uint16_t[addressable(k_at)]);
        v_.reset(new uint16_t[addressable(v_at)]);
        bytes_ = (k_at + v_at) * sizeof(uint16_t);
    }

    // Bytes a cache of this shape takes (64-bit: in wasm size_t would wrap).
    static uint64_t bytes_for(int n_layer, int n_ctx, int kv_dim, ValueLayout layout = ValueLayout::Transposed,
                              int ring = 0, const std::vector<uint8_t>& ring_layers = {}) {
        const bool use_ring = ring > 0 && ring < n_ctx;
        uint64_t cells = 0;
        for (int il = 0; il < n_layer; ++il) {
            const bool r = use_ring && size_t(il) < ring_layers.size() && ring_layers[size_t(il)] != 0;
            const int c = r ? ring : n_ctx;
            cells += uint64_t(c) + value_cells(c, layout);
        }
        return cells * uint64_t(kv_dim) * sizeof(uint16_t);
    }

    int n_ctx() const { return n_ctx_; }  // positions
    int kv_dim() const { return kv_dim_; }
    ValueLayout layout() const { return layout_; }
    uint64_t bytes() const { return bytes_; }

    // The ring size of the sliding-window layers (0: none).
    int ring() const { return ring_.empty() ? 0 : *std::max_element(ring_.begin(), ring_.end()); }
    // The layer's ring size (0: one cell per position) and the cell of `pos`.
    int ring(int layer) const { return ring_[size_t(layer)]; }
    int cell(int layer, int pos) const {
        const int r = ring_[size_t(layer)];
        return r > 0 ? pos % r : pos;
    }

    // How many of the first `keep` positions can stay when a sequence is cut
    // back to them: all of them, or none when a ring has already written a
    // later lap over the window of position `keep` (a prompt that shares
    // its start with a much longer earlier one). Never more than written.
    size_t reusable(size_t keep) const {
        const int r = ring();
        if (r == 0 || keep == 0) return keep;
        // Position p of the earlier sequence overwrote p - r; the window of
        // the first new position, keep - window + 1 .. keep - 1, must be intact.
        return uint64_t(written_) + uint64_t(window_) <= uint64_t(keep) + uint64_t(r) ? keep : 0;
    }
    // Positions written since the cache was last emptied (reusable's measure).
    void note_written(int end) {
        if (end > written_) written_ = end;
    }
    void clear() { written_ = 0; }

    // The key in `cell` (kv_dim values).
    uint16_t* k(int layer, int cell) { return k_.get() + k_offset_[size_t(layer)] + size_t(cell) * size_t(kv_dim_); }
    const uint16_t* k(int layer, int cell) const { return const_cast<KvCache*>(this)->k(layer, cell); }

    // Rows layout: the value in `cell` (kv_dim values).
    uint16_t* v_row(int layer, int cell) { return v_.get() + v_offset_[size_t(layer)] + size_t(cell) * size_t(kv_dim_); }
    const uint16_t* v_row(int layer, int cell) const { return const_cast<KvCache*>(this)->v_row(layer, cell); }

    // Transposed layout: value dimension `dim` of the 256 cells of block `block`.
    uint16_t* v_block(int layer, int block, int dim) {
        return v_.get() + v_offset_[size_t(layer)] + (size_t(block) * size_t(kv_dim_) + size_t(dim)) * kBlock;
    }
    const uint16_t* v_block(int layer, int block, int dim) const {
        return const_cast<KvCache*>(this)->v_block(layer, block, dim);
    }
    uint16_t v(int layer, int cell, int dim) const {
        return layout_ == ValueLayout::Rows ? v_row(layer, cell)[dim] : v_block(layer, cell / kBlock, dim)[cell % kBlock];
    }
    void set_v(int layer, int cell, int dim, uint16_t value) {
        if (layout_ == ValueLayout::Rows) {
            v_row(layer, cell)[dim] = value;
        } else {
            v_block(layer, cell / kBlock, dim)[cell % kBlock] = value;
        }
    }
    // A cell's whole value (kv_dim halves), in either layout.
    void set_v_row(int layer, int cell, const uint16_t* value) {
        for (int i = 0; i < kv_dim_; ++i) set_v(layer, cell, i, value[i]);
    }

private:
    static uint64_t value_cells(int cells, ValueLayout layout) {
        return layout == ValueLayout::Rows ? uint64_t(cells) : (uint64_t(cells) + kBlock - 1) / kBlock * kBlock;
    }

    // An element count this address space can hold, or bad_alloc (which the
    // session reports with the sizes) instead of a wrapped, too-small array.
    static size_t addressable(uint64_t elements) {
        if (elements > uint64_t(SIZE_MAX / 2 / sizeof(uint16_t))) throw std::bad_alloc();
        return size_t(elements);
    }

    int n_ctx_;
    int kv_dim_;
    ValueLayout layout_;
    int window_ = 0;
    int written_ = 0;
    std::vector<int> ring_;
    std::vector<size_t> k_offset_, v_offset_;
    std::unique_ptr<uint16_t[]> k_;
    std::unique_ptr<uint16_t[]> v_;
    uint64_t bytes_ = 0;
};

}  // namespace smolinfer::model
