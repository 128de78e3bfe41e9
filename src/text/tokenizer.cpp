#include "text/tokenizer.h"

#include <list>

#include "text/bpe.h"
#include "text/byte_encoding.h"
#include "text/pretokenizer.h"
#include "text/sentencepiece.h"
#include "text/wordpiece.h"

namespace smolinfer::text {

namespace {

bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581

}  // namespace

void Tokenizer::encode_plain(std::string_view text, bool after_special, std::vector<TokenId>& out) const {
    switch (vocab_.model()) {
        case TokenizerModel::Bpe: {
            std::string symbols;
            for (const std::string& word : pretokenize(vocab_.pretokenizer(), text)) {
                symbols.clear();
                encode_bytes(word, symbols);
                bpe_encode_word(vocab_, symbols, out);
            }
            return;
        }
        case TokenizerModel::SentencePiece: {
            std::string escaped;
            escaped.reserve(text.size() + 8);
            if (vocab_.add_space_prefix() && after_special) escaped += kEscapedSpace;
            for (const char c : text) {
                if (c == ' ') {
                    escaped += kEscapedSpace;
                } else {
                    escaped += c;
                }
            }
            sentencepiece_encode(vocab_, escaped, out);
            return;
        }
        case TokenizerModel::WordPiece: wordpiece_encode(vocab_, text, out); return;
    }
}

// For each special token, longest first, every occurrence inside a remaining
// text fragment is cut out, left to right.
std::vector<Tokenizer::Fragment> Tokenizer::cut_specials(std::string_view text, bool parse_special) const {
    std::list<Fragment> frags;
    if (!text.empty()) frags.push_back({false, -1, 0, text.size()});

    for (const TokenId id : vocab_.special_tokens()) {
        const TokenKind kind = vocab_.kind(id);
        if (!parse_special && (kind == TokenKind::Control || kind == TokenKind::Unknown)) continue;
        const std::string& special = vocab_.text(id);
        for (auto it = frags.begin(); it != frags.end();) {
            if (it->is_token) {
                ++it;
                continue;
            }
            const std::string_view window = text.substr(0, it->end);
            size_t from = it->begin;
            for (size_t at; (at = window.find(special, from)) != std::string_view::npos;) {
                size_t left_end = at;
                if (vocab_.lstrip(id)) {
                    while (left_end > from && is_c_space(text[left_end - 1])) --left_end;
                }
                if (left_end > from) frags.insert(it, {false, -1, from, left_end});
                frags.insert(it, {true, id, 0, 0});
                from = at + special.size();
                if (vocab_.rstrip(id)) {
                    while (from < it->end && is_c_space(text[from])) ++from;
                }
            }
            if (from == it->end) {
                it = frags.erase(it);
            } else {
                it->begin = from;
                ++it;
            }
        }
    }
    return {frags.begin(), frags.end()};
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    return encode_pieces({PromptPiece{std::string(text), parse_special}}, add_special);
}

std::vector<TokenId> Tokenizer::encode_pieces(const std::vector<PromptPiece>& pieces, bool add_special) const {
    // WordPiece always frames the text as [CLS] ... [SEP], whatever the
    // add_bos/add_eos keys say (llama.cpp's LLAMA_VOCAB_TYPE_WPM).
    const bool wordpiece = vocab_.model() == TokenizerModel::WordPiece;
    std::vector<TokenId> out;
    if (add_special && (wordpiece || vocab_.add_bos())) out.push_back(*vocab_.bos());

    // Plain text between tokens is collected across pieces and tokenized as
    // one run, as it would be had the pieces been a single string.
    std::string pending;
    bool after_special = true;
    auto flush = [&] {
        if (pending.empty()) return;
        encode_plain(pending, after_special, out);
        pending.clear();
        after_special = false;
    };
    auto place_token = [&](TokenId id) {
        flush();
        out.push_back(id);
        after_special = true;
    };
    for (const PromptPiece& p : pieces) {
        if (p.is_token) {
            place_token(p.token);
            continue;
        }
        for (const Fragment& f : cut_specials(p.text, p.parse_special)) {
            if (f.is_token) {
                place_token(f.token);
            } else {
                pending.append(p.text, f.begin, f.end - f.begin);
            }
        }
    }
    flush();
    if (add_special && wordpiece) {
        out.push_back(vocab_.sep());
    } else if (add_special && vocab_.add_eos()) {
        out.push_back(*vocab_.eos());
    }
    return out;
}

}  // namespace smolinfer::text
