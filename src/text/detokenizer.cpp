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

}  // namespace

std::string token_piece(const Vocab& vocab, TokenId id, bool special) {
    switch (vocab.kind(id)) {
        case TokenKind::Normal: return decode_symbols(vocab.text(id));
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
        out += token_piece(vocab, ids[i], special);
    }
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
