// Token ids -> text. Pieces are raw bytes; StreamDecoder holds back the
// start of a UTF-8 character until its last byte arrives, so streamed text
// never splits a character.
#pragma once

#include <span>
#include <string>

#include "text/vocab.h"

namespace smolinfer::text {

// The bytes of one token. Control and unknown tokens are empty unless
// `special` (then their text); user-defined tokens are their text.
std::string token_piece(const Vocab& vocab, TokenId id, bool special);

// Concatenated pieces. Throws smolinfer::Error for an id outside the vocabulary.
std::string detokenize(const Vocab& vocab, std::span<const TokenId> ids, bool special);

class StreamDecoder {
public:
    explicit StreamDecoder(const Vocab& vocab, bool special = false) : vocab_(vocab), special_(special) {}

    // Text that is complete after this token (may be empty).
    std::string push(TokenId id);
    // Whatever is still held back (an unfinished character's bytes).
    std::string finish();

private:
    const Vocab& vocab_;
    bool special_;
    std::string held_;
};

// Length of the longest prefix of `bytes` that does not end inside an
// unfinished (but so far well-formed) UTF-8 sequence.
size_t complete_utf8_prefix(std::string_view bytes);

}  // namespace smolinfer::text
