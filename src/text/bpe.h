// The BPE merge loop: one pre-tokenized word in, token ids out.
#pragma once

#include <string_view>
#include <vector>

#include "text/vocab.h"

namespace smolinfer::text {

// `word` is in byte-level form (see byte_encoding.h). Appends its tokens.
void bpe_encode_word(const Vocab& vocab, std::string_view word, std::vector<TokenId>& out);

}  // namespace smolinfer::text
