// Text -> token ids, as llama.cpp's llama_tokenize does: special tokens are
// cut out of the text first (longest first), then each remaining run of
// plain text goes to the vocabulary's tokenizer: byte-level BPE
// (pre-tokenize, byte-encode, merge by rank: bpe.h), SentencePiece
// (space prefix, spaces as U+2581, merge by score: sentencepiece.h) or
// WordPiece (normalize, split into words, longest match: wordpiece.h).
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "text/vocab.h"

namespace smolinfer::text {

// A prompt under construction: plain text runs and tokens placed directly.
// Adjacent text runs are tokenized as one run, exactly as if they had been
// one string, so a chat template can splice user text into template text
// without changing how the join is tokenized.
struct PromptPiece {
    std::string text;       // used when !is_token
    bool parse_special;     // whether special-token texts inside `text` become special tokens
    bool is_token = false;
    TokenId token = -1;
};

class Tokenizer {
public:
    explicit Tokenizer(const Vocab& vocab) : vocab_(vocab) {}

    // add_special: BOS/EOS as the model's metadata asks (WordPiece: always
    // [CLS] first and [SEP] last). parse_special:
    // control-token texts inside `text` become those tokens (user-defined
    // tokens always do).
    std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const;

    // Tokenizes pieces; see PromptPiece.
    std::vector<TokenId> encode_pieces(const std::vector<PromptPiece>& pieces, bool add_special) const;

    const Vocab& vocab() const { return vocab_; }

private:
    struct Fragment {
        bool is_token;
        TokenId token;
        size_t begin;  // text span, when !is_token
        size_t end;
    };
    std::vector<Fragment> cut_specials(std::string_view text, bool parse_special) const;
    // `after_special`: the run starts the prompt or follows a token placed
    // directly (SentencePiece then adds its space prefix).
    void encode_plain(std::string_view text, bool after_special, std::vector<TokenId>& out) const;

    const Vocab& vocab_;
};

}  // namespace smolinfer::text
