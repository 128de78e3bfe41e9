#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>

#include "grammar/utf8_stream.h"
#include "smolinfer/error.h"

namespace smolinfer::grammar {

namespace {

constexpr size_t kMaxCachedMasks = 256;

std::vector<std::string> cut_at_nul(std::vector<std::string> pieces) {
    for (std::string& p : pieces) {
        const size_t nul = p.find('\0');
        if (nul != std::string::npos) p.resize(nul);
    }
    return pieces;
}

std::vector<std::string> without_end_tokens(const std::vector<std::string>& pieces, const std::vector<uint8_t>& eog) {
    std::vector<std::string> out = pieces;
    for (size_t i = 0; i < out.size() && i < eog.size(); ++i) {
        if (eog[i]) out[i].clear();
    }
    return out;
}

}  // namespace

TokenTable::TokenTable(std::vector<std::string> p, std::vector<uint8_t> eog)
    : pieces(cut_at_nul(std::move(p))),
      end_of_generation(std::move(eog)),
      trie(without_end_tokens(pieces, end_of_generation)) {
    end_of_generation.resize(pieces.size(), 0);
}

Matcher::Matcher(Grammar grammar, std::shared_ptr<const TokenTable> tokens)
    : graph_(std::move(grammar)), tokens_(std::move(tokens)), set_(graph_.initial()) {
    out_.assign((tokens_->size() + 63) / 64, 0);
}

void Matcher::walk(uint32_t index, SetId set, Utf8State state, uint64_t* bits) {
    const TokenTrie& trie = tokens_->trie;
    const TokenTrie::Node parent = trie.node(index);
    for (uint32_t c = parent.first_child; c < parent.first_child + parent.child_count; ++c) {
        const TokenTrie::Node& child = trie.node(c);
        Utf8State next = state;
        SetId next_set = set;
        switch (utf8_step(next, child.byte)) {
            case Utf8Step::Invalid:
                continue;  // this token and all that extend it are rejected
            case Utf8Step::CodePoint:
                next_set = graph_.advance(set, next.value);
                if (next_set == kDeadSet) continue;
                break;
            case Utf8Step::Partial:
                break;
        }
        if (child.token_end > child.token_begin &&
            (next.n_remain == 0 || graph_.may_complete(next_set, next.value, next.n_remain))) {
            for (const int32_t id : trie.tokens_at(child)) bits[size_t(id) / 64] |= uint64_t(1) << (size_t(id) % 64);
        }
        if (child.child_count > 0) walk(c, next_set, next, bits);
    }
}

const std::vector<uint64_t>& Matcher::mask_for_state() {
    const uint64_t key = (uint64_t(uint32_t(set_)) << 32) | (uint64_t(partial_remain_) << 28) | partial_value_;
    const auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    if (cache_.size() >= kMaxCachedMasks) cache_.clear();
    std::vector<uint64_t> bits(out_.size(), 0);
    Utf8State start;
    start.value = partial_value_;
    start.n_remain = partial_remain_;
    start.checking = partial_remain_ > 0;
    walk(TokenTrie::kRoot, set_, start, bits.data());
    return cache_.emplace(key, std::move(bits)).first->second;
}

std::span<const uint64_t> Matcher::allowed(bool allow_end) {
    const std::vector<uint64_t>& mask = mask_for_state();
    std::copy(mask.begin(), mask.end(), out_.begin());
    if (allow_end && complete()) {
        for (size_t id = 0; id < tokens_->size(); ++id) {
            if (tokens_->end_of_generation[id]) out_[id / 64] |= uint64_t(1) << (id % 64);
        }
    }
    any_ = std::any_of(out_.begin(), out_.end(), [](uint64_t w) { return w != 0; });
    return out_;
}

void Matcher::accept(int32_t token) {
    if (token < 0 || size_t(token) >= tokens_->size()) {
        throw Error("grammar: token id " + std::to_string(token) + " is outside the vocabulary");
    }
    const std::string& piece = tokens_->pieces[size_t(token)];
    if (tokens_->end_of_generation[size_t(token)]) {
        if (!complete()) {
            throw Error("grammar: token " + std::to_string(token) + " (\"" + piece + "\") is not allowed here");
        }
        return;
    }
    accept_piece(piece, "token " + std::to_string(token));
}

void Matcher::accept_text(std::string_view text) { accept_piece(text, "text"); }

void Matcher::accept_piece(std::string_view piece, const std::string& what) {
    auto refuse = [&]() {
        throw Error("grammar: " + what + " (\"" + std::string(piece) + "\") is not allowed here");
    };
    if (piece.empty()) refuse();
    Utf8State s;
    s.value = partial_value_;
    s.n_remain = partial_remain_;
    s.checking = partial_remain_ > 0;
    SetId set = set_;
    bool any_char = false;
    for (const char ch : piece) {
        switch (utf8_step(s, uint8_t(ch))) {
            case Utf8Step::Invalid:
                refuse();
                break;
            case Utf8Step::CodePoint:
                set = graph_.advance(set, s.value);
                if (set == kDeadSet) refuse();
                any_char = true;
                break;
            case Utf8Step::Partial:
                break;
        }
    }
    if (s.n_remain > 0 && !graph_.may_complete(set, s.value, s.n_remain)) refuse();
    // As llama.cpp (llama_grammar_accept_token), accepting a token drops the
    // empty stack it started from even when the token completes no character
    // (only bytes of one): the grammar is no longer complete, and
    // end-of-generation waits until the character is.
    if (!any_char) set = graph_.without_empty(set);
    if (set == kDeadSet) refuse();
    set_ = set;
    partial_value_ = s.n_remain > 0 ? s.value : 0;
    partial_remain_ = s.n_remain;
}

}  // namespace smolinfer::grammar
