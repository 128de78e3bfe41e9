#include "text/vocab.h"

#include <algorithm>

#include "gguf/gguf.h"
#include "smolinfer/error.h"

namespace smolinfer::text {

namespace {

// Unambiguous key for a pair of strings that may themselves contain spaces.
std::string merge_key(std::string_view left, std::string_view right) {
    std::string key = std::to_string(left.size());
    key += ':';
    key += left;
    key += right;
    return key;
}

// Token texts that end a turn in the chat formats llama.cpp knows; such
// tokens stop generation even when the file names a different EOS.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
};

}  // namespace

std::optional<TokenId> Vocab::find(std::string_view text) const {
    auto it = ids_.find(std::string(text));
    if (it == ids_.end()) return std::nullopt;
    return it->second;
}

int Vocab::merge_rank(std::string_view left, std::string_view right) const {
    auto it = merge_ranks_.find(merge_key(left, right));
    return it == merge_ranks_.end() ? -1 : it->second;
}

Vocab Vocab::from_metadata(const gguf::Metadata& md, std::vector<std::string>* warnings) {
    Vocab v;
    const auto model = md.get_string("tokenizer.ggml.model");
    if (!model) throw Error("missing metadata 'tokenizer.ggml.model'");
    if (*model != "gpt2") {
        throw Error("unsupported tokenizer.ggml.model " + gguf::quoted(*model) + " (supported: gpt2, byte-level BPE)");
    }

    const auto tokens = md.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) throw Error("missing metadata 'tokenizer.ggml.tokens'");
    if (tokens->empty()) throw Error("bad metadata: 'tokenizer.ggml.tokens' is empty");
    if (tokens->size() > size_t(INT32_MAX)) throw Error("bad metadata: 'tokenizer.ggml.tokens' is too large");
    const size_t n = tokens->size();

    std::vector<int64_t> types(n, int64_t(TokenKind::Normal));
    if (auto t = md.get_int_array("tokenizer.ggml.token_type")) {
        if (t->size() != n) {
            throw Error("bad metadata: 'tokenizer.ggml.token_type' has " + std::to_string(t->size()) +
                        " entries for " + std::to_string(n) + " tokens");
        }
        types = std::move(*t);
    }

    v.texts_.reserve(n);
    v.kinds_.reserve(n);
    v.ids_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        v.texts_.emplace_back((*tokens)[i]);
        const int64_t k = types[i];
        v.kinds_.push_back((k >= 0 && k <= 6) ? TokenKind(k) : TokenKind::Undefined);
        // A repeated text keeps its last id, as in llama.cpp's token map.
        v.ids_[v.texts_.back()] = TokenId(i);
    }

    const auto merges = md.get_string_array("tokenizer.ggml.merges");
    if (!merges) throw Error("missing metadata 'tokenizer.ggml.merges'");
    v.merge_ranks_.reserve(merges->size());
    for (size_t r = 0; r < merges->size(); ++r) {
        const std::string_view m = (*merges)[r];
        const size_t sp = m.find(' ', 1);
        if (sp == std::string_view::npos) {
            throw Error("bad metadata: merge " + std::to_string(r) + " of 'tokenizer.ggml.merges' has no space");
        }
        v.merge_ranks_.emplace(merge_key(m.substr(0, sp), m.substr(sp + 1)), int(r));
    }

    const auto pre = md.get_string("tokenizer.ggml.pre");
    if (!pre) {
        if (warnings) warnings->push_back("no tokenizer.ggml.pre in the file; using the 'default' pre-tokenizer");
    } else {
        const auto kind = pretokenizer_from_name(*pre);
        if (!kind) throw Error("unsupported pre-tokenizer " + gguf::quoted(*pre) + " (tokenizer.ggml.pre)");
        v.pre_ = *kind;
    }

    auto special_id = [&](const char* key) -> std::optional<TokenId> {
        const auto id = md.get_int(key);
        if (!id) return std::nullopt;
        if (*id < 0 || size_t(*id) >= n) {
            throw Error("bad metadata: '" + std::string(key) + "' = " + std::to_string(*id) +
                        " is not a token id (vocabulary of " + std::to_string(n) + ")");
        }
        return TokenId(*id);
    };
    v.bos_ = special_id("tokenizer.ggml.bos_token_id");
    v.eos_ = special_id("tokenizer.ggml.eos_token_id");
    const auto eot = special_id("tokenizer.ggml.eot_token_id");
    v.add_bos_ = md.get_bool("tokenizer.ggml.add_bos_token").value_or(false);
    v.add_eos_ = md.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
    if (v.add_bos_ && !v.bos_) throw Error("bad metadata: add_bos_token is set but there is no bos_token_id");
    if (v.add_eos_ && !v.eos_) throw Error("bad metadata: add_eos_token is set but there is no eos_token_id");

    if (v.eos_) v.eog_.insert(*v.eos_);
    if (eot) v.eog_.insert(*eot);
    for (const std::string_view t : kEndOfTurnTexts) {
        if (auto id = v.find(t)) {
            v.eog_.insert(*id);
            // llama.cpp treats an end-of-turn token as control whatever its type says.
            v.kinds_[size_t(*id)] = TokenKind::Control;
        }
    }

    for (size_t i = 0; i < n; ++i) {
        const TokenKind k = v.kinds_[i];
        if (k == TokenKind::Control || k == TokenKind::Unknown || k == TokenKind::UserDefined) {
            if (!v.texts_[i].empty()) v.specials_.push_back(TokenId(i));
        }
    }
    std::stable_sort(v.specials_.begin(), v.specials_.end(),
                     [&](TokenId a, TokenId b) { return v.text(a).size() > v.text(b).size(); });
    return v;
}

}  // namespace smolinfer::text
