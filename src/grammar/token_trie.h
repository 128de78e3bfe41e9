// The vocabulary's token pieces as a byte trie: tokens that share a prefix
// share the walk over it, so the matcher judges a whole vocabulary by
// visiting each distinct prefix once (and skips every token below a prefix
// the grammar rejects).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace smolinfer::grammar {

class TokenTrie {
public:
    struct Node {
        uint32_t first_child = 0;  // children are contiguous, sorted by byte
        uint32_t child_count = 0;
        uint32_t token_begin = 0;  // tokens whose piece ends here: token_ids()[begin, end)
        uint32_t token_end = 0;
        uint8_t byte = 0;  // the edge from the parent
    };

    // pieces[id] is token id's bytes; empty pieces are left out.
    explicit TokenTrie(const std::vector<std::string>& pieces);

    const Node& node(uint32_t index) const { return nodes_[index]; }
    static constexpr uint32_t kRoot = 0;
    std::span<const int32_t> tokens_at(const Node& n) const {
        return std::span<const int32_t>(ids_).subspan(n.token_begin, n.token_end - n.token_begin);
    }
    size_t node_count() const { return nodes_.size(); }

private:
    void build(uint32_t index, uint32_t lo, uint32_t hi, size_t depth, const std::vector<std::string>& pieces);

    std::vector<Node> nodes_;
    std::vector<int32_t> ids_;  // token ids sorted by piece
};

}  // namespace smolinfer::grammar
