#include "grammar/token_trie.h"

#include <algorithm>

namespace smolinfer::grammar {

TokenTrie::TokenTrie(const std::vector<std::string>& pieces) {
    for (size_t id = 0; id < pieces.size(); ++id) {
        if (!pieces[id].empty()) ids_.push_back(int32_t(id));
    }
    std::sort(ids_.begin(), ids_.end(), [&](int32_t a, int32_t b) {
        return pieces[size_t(a)] < pieces[size_t(b)] || (pieces[size_t(a)] == pieces[size_t(b)] && a < b);
    });
    nodes_.emplace_back();
    build(kRoot, 0, uint32_t(ids_.size()), 0, pieces);
}

// ids_[lo, hi) share their first `depth` bytes and are sorted, so the tokens
// ending here come first and each child's tokens are one run.
void TokenTrie::build(uint32_t index, uint32_t lo, uint32_t hi, size_t depth, const std::vector<std::string>& pieces) {
    auto piece = [&](uint32_t i) -> const std::string& { return pieces[size_t(ids_[i])]; };
    uint32_t i = lo;
    while (i < hi && piece(i).size() == depth) ++i;
    nodes_[index].token_begin = lo;
    nodes_[index].token_end = i;

    struct Run {
        uint8_t byte;
        uint32_t lo, hi;
    };
    std::vector<Run> runs;
    while (i < hi) {
        const uint8_t b = uint8_t(piece(i)[depth]);
        uint32_t j = i;
        while (j < hi && uint8_t(piece(j)[depth]) == b) ++j;
        runs.push_back({b, i, j});
        i = j;
    }
    const uint32_t first = uint32_t(nodes_.size());
    nodes_[index].first_child = first;
    nodes_[index].child_count = uint32_t(runs.size());
    for (const Run& r : runs) {
        Node child;
        child.byte = r.byte;
        nodes_.push_back(child);
    }
    for (uint32_t c = 0; c < runs.size(); ++c) build(first + c, runs[c].lo, runs[c].hi, depth + 1, pieces);
}

}  // namespace smolinfer::grammar
