#include "text/bpe.h"

#include <queue>
#include <string>

#include "text/merge_piece.h"
#include "text/unicode.h"

namespace smolinfer::text {

namespace {

struct RankedPair {
    int rank;
    int left;  // index of the left piece
    int right;
    size_t len;  // left.len + right.len when proposed; stale once either changes
};

// Lowest rank first; among equal ranks the leftmost pair.
struct LaterFirst {
    bool operator()(const RankedPair& a, const RankedPair& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

}  // namespace

void bpe_encode_word(const Vocab& vocab, std::string_view word, std::vector<TokenId>& out) {
    if (vocab.ignore_merges()) {
        // Llama 3: a word the vocabulary has whole is that token, even where
        // the merges would have reached a different split.
        if (auto id = vocab.find(word)) {
            out.push_back(*id);
            return;
        }
    }
    std::vector<MergePiece> pieces;
    for (size_t off = 0; off < word.size();) {
        const size_t len = std::min(word.size() - off, utf8_sequence_length(uint8_t(word[off])));
        const int idx = int(pieces.size());
        pieces.push_back({off, len, idx - 1, off + len == word.size() ? -1 : idx + 1});
        off += len;
    }

    std::priority_queue<RankedPair, std::vector<RankedPair>, LaterFirst> queue;
    auto text = [&](int i) { return word.substr(pieces[i].start, pieces[i].len); };
    auto propose = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const int rank = vocab.merge_rank(text(left), text(right));
        if (rank >= 0) queue.push({rank, left, right, pieces[left].len + pieces[right].len});
    };
    for (int i = 1; i < int(pieces.size()); ++i) propose(i - 1, i);

    while (!queue.empty()) {
        const RankedPair c = queue.top();
        queue.pop();
        MergePiece& l = pieces[c.left];
        MergePiece& r = pieces[c.right];
        // Pieces only grow and stay adjacent to what they absorb, so a pair is
        // still current exactly when both are alive, linked, and of the
        // proposed total length.
        if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) pieces[r.next].prev = c.left;
        propose(l.prev, c.left);
        propose(c.left, l.next);
    }

    for (int i = pieces.empty() ? -1 : 0; i >= 0; i = pieces[i].next) {
        const std::string_view t = text(i);
        if (auto id = vocab.find(t)) {
            out.push_back(*id);
            continue;
        }
        // Not a token: fall back to one token per byte, skipping bytes the
        // vocabulary lacks (as llama.cpp does).
        for (const char ch : t) {
            if (auto id = vocab.find(std::string_view(&ch, 1))) out.push_back(*id);
        }
    }
}

}  // namespace smolinfer::text
