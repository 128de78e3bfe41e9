#include "text/sentencepiece.h"

#include <algorithm>
#include <queue>

#include "text/merge_piece.h"
#include "text/unicode.h"

namespace smolinfer::text {

namespace {

struct ScoredPair {
    float score;
    int left;  // index of the left piece
    int right;
    size_t len;  // left.len + right.len when proposed; stale once either changes
};

// Highest score first; among equal scores the leftmost pair.
struct LowerFirst {
    bool operator()(const ScoredPair& a, const ScoredPair& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

void sentencepiece_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
    std::vector<MergePiece> pieces;
    for (size_t off = 0; off < text.size();) {
        const size_t len = std::min(text.size() - off, utf8_sequence_length(uint8_t(text[off])));
        const int idx = int(pieces.size());
        pieces.push_back({off, len, idx - 1, off + len == text.size() ? -1 : idx + 1});
        off += len;
    }

    std::priority_queue<ScoredPair, std::vector<ScoredPair>, LowerFirst> queue;
    auto propose = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const size_t len = pieces[left].len + pieces[right].len;
        // Any token counts as a merge, whatever its kind, as in llama.cpp.
        if (auto id = vocab.find(text.substr(pieces[left].start, len))) {
            queue.push({vocab.score(*id), left, right, len});
        }
    };
    for (int i = 1; i < int(pieces.size()); ++i) propose(i - 1, i);

    while (!queue.empty()) {
        const ScoredPair c = queue.top();
        queue.pop();
        MergePiece& l = pieces[c.left];
        MergePiece& r = pieces[c.right];
        // Pieces only grow by absorbing their right neighbour, so a pair is
        // still current exactly when both are alive and of the proposed length.
        if (l.len == 0 || r.len == 0 || l.len + r.len != c.len) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) pieces[r.next].prev = c.left;
        propose(l.prev, c.left);
        propose(c.left, l.next);
    }

    // Every merged piece is a token; only single characters can be left
    // without one, and they fall back to bytes.
    for (int i = pieces.empty() ? -1 : 0; i >= 0; i = pieces[i].next) {
        const std::string_view t = text.substr(pieces[i].start, pieces[i].len);
        if (auto id = vocab.find(t)) {
            out.push_back(*id);
            continue;
        }
        for (const char ch : t) out.push_back(vocab.byte_fallback(uint8_t(ch)));
    }
}

}  // namespace smolinfer::text
