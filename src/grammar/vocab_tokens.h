// The vocabulary as the grammar matcher reads it: each token's piece as
// llama.cpp's grammar sampler sees it (token_to_piece, control tokens as
// their text) and which tokens end a generation.
#pragma once

#include <memory>

#include "grammar/matcher.h"
#include "text/vocab.h"

namespace smolinfer::grammar {

std::shared_ptr<const TokenTable> vocab_token_table(const text::Vocab& vocab);

}  // namespace smolinfer::grammar
