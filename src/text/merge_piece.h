// The pieces a word is split into while its pairs merge, shared by the
// byte-level BPE (bpe.cpp) and SentencePiece (sentencepiece.cpp) merge loops.
#pragma once

#include <cstddef>

namespace smolinfer::text {

// Bytes [start, start + len) of the word, linked to its neighbours. A piece
// merged into its left neighbour keeps len == 0.
struct MergePiece {
    size_t start;
    size_t len;
    int prev;
    int next;
};

}  // namespace smolinfer::text
