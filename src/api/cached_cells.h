// Which cached KV cells a new prompt may keep, for Session and
// BatchGenerator alike, so that a prompt's tokens and log-probabilities are
// bit for bit a fresh run's whatever was cached before it.
//
// A token's keys, values and logits depend only on its position, its id,
// the cells before it and the arithmetic its forward pass gives it
// (Forward::arithmetic: single-token orders in a pass of one token, batch
// orders in a longer one, and which tokens the grouped kernels take; with
// flash attention also its path, which the prompt's length decides).
// Decoded tokens are computed in the arithmetic of a single-token pass.
// Prompts are read in chunks that end where a fresh run's chunks end
// (model::request_pass: multiples of the chunk size within llama.cpp's
// micro-batches, and the prompt's end). A new prompt keeps a cached cell
// only when it is its token and was computed in the arithmetic a fresh run
// of the new prompt gives it; and it keeps a prefix only if the first chunk
// it then reads gives every token the fresh arithmetic too (for grouped
// kernels, the kept prefix is a multiple of the group; and that chunk is
// not a single token where the fresh one is longer). By induction over
// positions, every cell and every logit equals a fresh run's.
//
// llama.cpp keeps every cell a prompt shares (llama-server's cache_prompt):
// a repeated prompt's last token is then computed alone where a fresh run
// computed it in a batch, and a chat's earlier answer keeps its decoded
// cells, so a greedy answer can change with what was asked before.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "model/flash_attention.h"
#include "model/llama.h"
#include "smolinfer/session.h"

namespace smolinfer {

// The tokens whose keys and values a KV cache holds, each with the
// arithmetic (CellArithmetic::of) of the pass that computed it.
struct CachedCells {
    std::vector<TokenId> tokens;
    std::vector<int> arithmetic;

    size_t size() const { return tokens.size(); }
    void push(TokenId token, int how) {
        tokens.push_back(token);
        arithmetic.push_back(how);
    }
    void resize(size_t n) {
        tokens.resize(n);
        arithmetic.resize(n);
    }
    void clear() { resize(0); }
};

class CellArithmetic {
public:
    // `chunk`: the prompt tokens a fresh run reads per pass (Forward::max_batch).
    CellArithmetic(const model::Forward& forward, size_t chunk) : forward_(forward), chunk_(chunk) {}

    // Token j of a pass of n tokens on flash attention's `path`.
    int of(int j, int n, model::FlashPath path) const {
        return 2 * forward_.arithmetic(j, n) + (path == model::FlashPath::Tiled);
    }
    // The arithmetic a fresh run gives token t of a prompt of n tokens.
    int fresh(size_t t, size_t n) const;
    // A decoded token's: one token in a pass and a request of its own.
    int decoded() const { return of(0, 1, model::flash_path_for(0, 1)); }

    // The longest prefix of `prompt` whose cells may be kept (the rule
    // above), at most all but its last token so that there are logits to
    // sample from. The KV cache may keep less (a sliding window's ring).
    size_t reusable(const CachedCells& cells, std::span<const TokenId> prompt) const;

private:
    // Whether reading a prompt of n tokens from `keep` (first up to the
    // fresh run's next chunk end, then chunk by chunk) gives each token its
    // fresh arithmetic.
    bool reads_as_fresh(size_t keep, size_t n) const;

    const model::Forward& forward_;
    size_t chunk_;
};

}  // namespace smolinfer
