// The vocabulary of a model, read from GGUF metadata (tokenizer.ggml.*):
// which tokenizer it needs (byte-level BPE, SentencePiece or WordPiece), token texts,
// kinds and scores, merge ranks, special ids and the flags llama.cpp derives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "text/pretokenizer.h"

namespace smolinfer::gguf {
class Metadata;
}

namespace smolinfer::text {

using TokenId = int32_t;

// tokenizer.ggml.token_type values.
enum class TokenKind : uint8_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

// tokenizer.ggml.model: which merge loop turns text into tokens.
enum class TokenizerModel : uint8_t {
    Bpe,            // "gpt2": byte-level BPE over pre-tokenized words, by merge rank (bpe.h)
    SentencePiece,  // "llama": bigram merges by token score, <0xNN> byte fallback (sentencepiece.h)
    WordPiece,      // "bert": normalized words, greedy longest match, [UNK] per failed word (wordpiece.h)
};

class Vocab {
public:
    // Throws smolinfer::Error naming the key when the metadata is missing,
    // malformed or inconsistent.
    // Non-fatal problems are appended to `warnings`, if given.
    static Vocab from_metadata(const gguf::Metadata& md, std::vector<std::string>* warnings = nullptr);

    size_t size() const { return texts_.size(); }
    // Heap bytes the vocabulary holds (texts, scores, lookup tables), estimated
    // from container sizes: what a 262k-token vocabulary costs.
    size_t memory_bytes() const;
    bool valid(TokenId id) const { return id >= 0 && size_t(id) < texts_.size(); }
    const std::string& text(TokenId id) const { return texts_[size_t(id)]; }
    TokenKind kind(TokenId id) const { return kinds_[size_t(id)]; }
    std::optional<TokenId> find(std::string_view text) const;

    TokenizerModel model() const { return model_; }

    // Rank of the merge (left, right); lower merges first. -1 if none (BPE).
    int merge_rank(std::string_view left, std::string_view right) const;

    // tokenizer.ggml.scores (0 when the file has none); SentencePiece merges
    // the highest-scoring pair first.
    float score(TokenId id) const { return scores_.empty() ? 0.0f : scores_[size_t(id)]; }

    // The token SentencePiece falls back to for a byte with no better token:
    // "<0xNN>", else the byte itself as a one-byte token. Throws
    // smolinfer::Error naming the byte when the vocabulary has neither.
    TokenId byte_fallback(uint8_t byte) const;

    PreTokenizer pretokenizer() const { return pre_; }
    // BPE: a pre-tokenized word that is itself a token is not merged (Llama 3).
    bool ignore_merges() const { return ignore_merges_; }
    // SentencePiece: a space is put before text that starts the prompt or
    // follows a special token (tokenizer.ggml.add_space_prefix), and
    // detokenize drops the first token's leading space.
    bool add_space_prefix() const { return add_space_prefix_; }
    // detokenize tidies " ," " ." " 's" and the like (clean_up_tokenization_spaces).
    bool clean_spaces() const { return clean_spaces_; }

    // WordPiece: [CLS] is bos(), always there; [SEP] and [UNK] are these.
    TokenId sep() const { return sep_; }
    TokenId unk() const { return unk_; }
    // WordPiece's normalizer (tokenizer.ggml.normalizer.*): lowercase the
    // text; drop accents (the first code point of each NFD decomposition,
    // combining marks dropped).
    bool lowercase() const { return lowercase_; }
    bool strip_accents() const { return strip_accents_; }
    // The longest token text in bytes: WordPiece tries no longer match.
    size_t max_token_len() const { return max_token_len_; }

    std::optional<TokenId> bos() const { return bos_; }
    std::optional<TokenId> eos() const { return eos_; }
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    bool is_end_of_generation(TokenId id) const { return eog_.count(id) != 0; }

    // Tokens matched as a whole inside text before BPE (control, unknown and
    // user-defined), longest first.
    const std::vector<TokenId>& special_tokens() const { return specials_; }
    // Whether whitespace before (lstrip) or after (rstrip) this special
    // token is swallowed when the token is cut out of text.
    bool lstrip(TokenId id) const { return lstrip_.count(id) != 0; }
    bool rstrip(TokenId id) const { return rstrip_.count(id) != 0; }

private:
    void read_bpe_merges(const gguf::Metadata& md);
    void read_scores(const gguf::Metadata& md);
    void mark_special_texts(const gguf::Metadata& md, std::optional<TokenId> eot);
    void set_strip_flags(const gguf::Metadata& md);
    void read_wordpiece(const gguf::Metadata& md, std::optional<TokenId> sep, std::optional<TokenId> unk);

    TokenizerModel model_ = TokenizerModel::Bpe;
    std::vector<std::string> texts_;
    std::vector<float> scores_;
    std::vector<TokenKind> kinds_;
    std::unordered_map<std::string, TokenId> ids_;
    std::unordered_map<std::string, int> merge_ranks_;  // key: merge_key(left, right)
    std::vector<TokenId> specials_;
    std::unordered_set<TokenId> eog_;
    std::unordered_set<TokenId> lstrip_, rstrip_;
    PreTokenizer pre_ = PreTokenizer::Default;
    bool ignore_merges_ = false;
    bool add_space_prefix_ = false;
    bool clean_spaces_ = false;
    std::optional<TokenId> bos_, eos_;
    bool add_bos_ = false;
    bool add_eos_ = false;
    TokenId sep_ = -1, unk_ = -1;  // WordPiece only
    bool lowercase_ = false, strip_accents_ = false;
    size_t max_token_len_ = 0;
};

}  // namespace smolinfer::text
