// The WordPiece tokenizer (tokenizer.ggml.model = "bert"), as llama.cpp's
// llm_tokenizer_wpm: one run of plain text in, token ids out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/vocab.h"

namespace smolinfer::text {

// The text's words after llama.cpp's BERT normalizer and pre-tokenizer:
// with `strip_accents` each code point becomes the first one of its NFD form
// and marks (\p{M}) are dropped; with `lowercase` each is lowercased one to
// one; whitespace ends a word; NUL, U+FFFD and control characters are
// dropped; punctuation, ASCII symbols and CJK ideographs are words of their
// own. Throws smolinfer::Error for a code point beyond U+10FFFF (a 4-byte
// form from F4 90 up), which llama.cpp rejects too.
std::vector<std::string> wordpiece_words(std::string_view text, bool lowercase, bool strip_accents);

// Each word with U+2581 put before it is cut from the left into the longest
// token that matches its bytes there (continuations are stored without the
// mark); a word with a position no token matches becomes one [UNK].
// Appends the ids to `out`. [CLS] and [SEP] are the caller's.
void wordpiece_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

}  // namespace smolinfer::text
