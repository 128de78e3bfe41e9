#include "text/detokenizer.h"

#include "smolinfer/error.h"
#include "text/byte_encoding.h"
#include "text/unicode.h"

namespace smolinfer::text {

namespace {

// "<0xAB>" -> 0xAB
std::string byte_token(const std::string& text) {
    if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>') {
        return std::string(1, char(std::stoi(text.substr(3, 2), nullptr, 16)));
    }
    return decode_symbols(text);
}

// SentencePiece stores a space as U+2581; WordPiece marks the start of a
// word with it ("▁hello", "##lo" stored as "lo"), so words come back
// separated by spaces, with one before the first.
std::string unescape_spaces(const std::string& text) {
    static constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        if (text.compare(i, kEscapedSpace.size(), kEscapedSpace) == 0) {
            out += ' ';
            i += kEscapedSpace.size();
        } else {
            out += text[i++];
        }
    }
    return out;
}

// llama.cpp's clean_up_tokenization_spaces: three passes compacting the
// bytes in place (reads behind the write position see what llama.cpp's see,
// including the byte pass two blanks out).
//   1. " ?" " !" " ." " ," lose the space;
//   2. a lone apostrophe between spaces loses both spaces;
//   3. " 's" " 'm" " 're" " 've" lose the space.
void clean_spaces(std::string& t) {
    size_t n = t.size();
    if (n == 0) return;
    size_t kept = 1;
    for (size_t i = 1; i < n; ++i) {
        const char x = t[i];
        if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --kept;
        t[kept++] = x;
    }
    n = kept;
    kept = 1;
    for (size_t i = 1; i < n; ++i) {
        const char x = t[i];
        if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
            --kept;
            t[++i] = '\0';
        }
        t[kept++] = x;
    }
    n = kept;
    kept = 1;
    for (size_t i = 1; i < n; ++i) {
        const char x = t[i];
        if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            const char x1 = t[i + 1];
            if (x1 == 's' || x1 == 'm') {
                --kept;
            } else if (i + 2 < n && ((x1 == 'r' && t[i + 2] == 'e') || (x1 == 'v' && t[i + 2] == 'e'))) {
                --kept;
            }
        }
        t[kept++] = x;
    }
    t.resize(kept);
}

}  // namespace

std::string token_piece(const Vocab& vocab, TokenId id, bool special) {
    switch (vocab.kind(id)) {
        case TokenKind::Normal:
            // SentencePiece's spaces and WordPiece's word starts are U+2581.
            return vocab.model() == TokenizerModel::Bpe ? decode_symbols(vocab.text(id)) : unescape_spaces(vocab.text(id));
        case TokenKind::Control:
        case TokenKind::Unknown: return special ? vocab.text(id) : std::string();
        case TokenKind::UserDefined: return vocab.text(id);
        case TokenKind::Byte: return byte_token(vocab.text(id));
        case TokenKind::Unused:
        case TokenKind::Undefined: return {};
    }
    return {};
}

std::string detokenize(const Vocab& vocab, std::span<const TokenId> ids, bool special) {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (!vocab.valid(ids[i])) {
            throw Error("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                        " is outside the vocabulary (0.." + std::to_string(vocab.size() - 1) + ")");
        }
        std::string piece = token_piece(vocab, ids[i], special);
        // The space prefix the tokenizer added comes off the first token
        // (whatever that token is: llama.cpp does not look for BOS here).
        if (i == 0 && vocab.add_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
        out += piece;
    }
    if (vocab.clean_spaces()) clean_spaces(out);
    return out;
}

size_t complete_utf8_prefix(std::string_view bytes) {
    // Look back at most 3 bytes for a lead byte whose sequence is unfinished.
    const size_t n = bytes.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto b = uint8_t(bytes[n - back]);
        if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
        const size_t need = utf8_sequence_length(b);
        return (need > back) ? n - back : n;
    }
    return n;
}

std::string StreamDecoder::push(TokenId id) {
    if (!vocab_.valid(id)) {
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
    }
    held_ += token_piece(vocab_, id, special_);
    const size_t ready = complete_utf8_prefix(held_);
    std::string out = held_.substr(0, ready);
    held_.erase(0, ready);
    return out;
}

std::string StreamDecoder::finish() {
    std::string out;
    out.swap(held_);
    return out;
}

}  // namespace smolinfer::text
