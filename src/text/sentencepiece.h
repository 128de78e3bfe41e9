// The SentencePiece (BPE-by-score) merge loop, as llama.cpp's
// llm_tokenizer_spm: one run of text in, token ids out.
#pragma once

#include <string_view>
#include <vector>

#include "text/vocab.h"

namespace smolinfer::text {

// `text` is already escaped (spaces as U+2581, the space prefix added).
// Starting from single UTF-8 characters, repeatedly merges the adjacent pair
// whose concatenation is the highest-scoring token (leftmost on ties); a
// piece left that is not a token becomes its bytes' <0xNN> tokens.
// Appends the ids to `out`.
void sentencepiece_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

}  // namespace smolinfer::text
