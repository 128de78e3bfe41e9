// The vocabulary of a byte-level BPE model, read from GGUF metadata
// (tokenizer.ggml.*): token texts and kinds, merge ranks, special ids.
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

class Vocab {
public:
    // Throws smolinfer::Error naming the key when the metadata is missing,
    // malformed or inconsistent.
    // Non-fatal problems are appended to `warnings`, if given.
    static Vocab from_metadata(const gguf::Metadata& md, std::vector<std::string>* warnings = nullptr);

    size_t size() const { return texts_.size(); }
    bool valid(TokenId id) const { return id >= 0 && size_t(id) < texts_.size(); }
    const std::string& text(TokenId id) const { return texts_[size_t(id)]; }
    TokenKind kind(TokenId id) const { return kinds_[size_t(id)]; }
    std::optional<TokenId> find(std::string_view text) const;

    // Rank of the merge (left, right); lower merges first. -1 if none.
    int merge_rank(std::string_view left, std::string_view right) const;

    PreTokenizer pretokenizer() const { return pre_; }
    std::optional<TokenId> bos() const { return bos_; }
    std::optional<TokenId> eos() const { return eos_; }
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    bool is_end_of_generation(TokenId id) const { return eog_.count(id) != 0; }

    // Tokens matched as a whole inside text before BPE (control, unknown and
    // user-defined), longest first.
    const std::vector<TokenId>& special_tokens() const { return specials_; }

private:
    std::vector<std::string> texts_;
    std::vector<TokenKind> kinds_;
    std::unordered_map<std::string, TokenId> ids_;
    std::unordered_map<std::string, int> merge_ranks_;  // key: merge_key(left, right)
    std::vector<TokenId> specials_;
    std::unordered_set<TokenId> eog_;
    PreTokenizer pre_ = PreTokenizer::Default;
    std::optional<TokenId> bos_, eos_;
    bool add_bos_ = false;
    bool add_eos_ = false;
};

}  // namespace smolinfer::text
