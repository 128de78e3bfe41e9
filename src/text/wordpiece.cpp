#include "text/wordpiece.h"

#include <algorithm>
#include <cstdio>

#include "smolinfer/error.h"
#include "text/unicode.h"

namespace smolinfer::text {

namespace {

constexpr std::string_view kWordMark = "\xE2\x96\x81";  // U+2581, put before every word

// The CJK ideograph blocks of BERT's _is_chinese_char, as llama.cpp copies
// them from Hugging Face's Rust tokenizers (Extension C is taken to start at
// 0x2B920 there, not 0x2B820).
bool is_cjk_ideograph(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Calls on_word with each word, U+2581 already before it, in order.
template <class OnWord>
void split_words(std::string_view text, bool lowercase, bool strip_accents, OnWord on_word) {
    std::string word(kWordMark);
    auto finish = [&] {
        if (word.size() == kWordMark.size()) return;
        on_word(std::string_view(word));
        word.resize(kWordMark.size());
    };
    for (uint32_t cpt : utf8_to_codepoints(text)) {
        // The classes below are those of the decomposed code point, as in llama.cpp.
        if (strip_accents) cpt = nfd_first(cpt);
        const CodepointFlags f = codepoint_flags(cpt);
        if (f.is_whitespace()) {
            finish();
            continue;
        }
        if (cpt == 0 || cpt == kReplacementChar || f.is_control()) continue;
        if (strip_accents && f.is_mark()) continue;
        if (cpt > 0x10FFFF) {
            char hex[16];
            std::snprintf(hex, sizeof hex, "%X", unsigned(cpt));
            throw Error("text to tokenize has a code point beyond Unicode (U+" + std::string(hex) +
                        ", from a 4-byte UTF-8 form), which llama.cpp's WordPiece tokenizer rejects");
        }
        const uint32_t emitted = lowercase ? simple_lowercase(cpt) : cpt;
        if (f.is_punctuation() || (cpt < 0x7F && f.is_symbol()) || is_cjk_ideograph(cpt)) {
            finish();
            append_utf8(emitted, word);
            finish();
        } else {
            append_utf8(emitted, word);
        }
    }
    finish();
}

// Greedy longest match from the left, by bytes, as llama.cpp: at each
// position the longest piece (up to one byte past the longest token) that
// is a token, of any kind.
void encode_word(const Vocab& vocab, std::string_view word, std::vector<TokenId>& out) {
    const size_t start = out.size();
    const size_t n = word.size();
    for (size_t i = 0; i < n;) {
        size_t j = std::min(n, i + vocab.max_token_len() + 1);
        for (; j > i; --j) {
            if (auto id = vocab.find(word.substr(i, j - i))) {
                out.push_back(*id);
                break;
            }
        }
        if (j == i) {  // nothing matches here: the whole word is unknown
            out.resize(start);
            out.push_back(vocab.unk());
            return;
        }
        i = j;
    }
}

}  // namespace

std::vector<std::string> wordpiece_words(std::string_view text, bool lowercase, bool strip_accents) {
    std::vector<std::string> words;
    split_words(text, lowercase, strip_accents,
                [&](std::string_view w) { words.emplace_back(w.substr(kWordMark.size())); });
    return words;
}

void wordpiece_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
    split_words(text, vocab.lowercase(), vocab.strip_accents(),
                [&](std::string_view w) { encode_word(vocab, w, out); });
}

}  // namespace smolinfer::text
