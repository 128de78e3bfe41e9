// UTF-8 <-> code points, code point classes and the one-to-one lowercase
// and NFD maps, with llama.cpp's exact behaviour: a byte that does not start
// a well-formed sequence decodes to U+FFFD and decoding resumes at the next
// byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace smolinfer::text {

struct CodepointFlags {
    enum : uint16_t {
        Undefined = 1 << 0,
        Number = 1 << 1,  // \p{N}
        Letter = 1 << 2,  // \p{L}
        Separator = 1 << 3,
        Mark = 1 << 4,
        Punctuation = 1 << 5,
        Symbol = 1 << 6,
        Control = 1 << 7,
        Whitespace = 1 << 8,  // \s
    };
    uint16_t bits = 0;

    bool is_number() const { return bits & Number; }
    bool is_letter() const { return bits & Letter; }
    bool is_whitespace() const { return bits & Whitespace; }
    bool is_mark() const { return bits & Mark; }  // \p{M}: accents among others
    bool is_punctuation() const { return bits & Punctuation; }
    bool is_symbol() const { return bits & Symbol; }
    bool is_control() const { return bits & Control; }
    bool any() const { return bits != 0; }
};

inline constexpr uint32_t kReplacementChar = 0xFFFD;

CodepointFlags codepoint_flags(uint32_t cpt);

// llama.cpp's unicode_tolower: UnicodeData's simple lowercase mapping, one
// code point to one (U+0130 -> "i"); others map to themselves.
uint32_t simple_lowercase(uint32_t cpt);

// llama.cpp's unicode_cpts_normalize_nfd, per code point: the first code
// point of the canonical decomposition ("é" -> "e", a Hangul syllable -> its
// leading jamo), not a real NFD (the combining marks are not produced).
uint32_t nfd_first(uint32_t cpt);

std::vector<uint32_t> utf8_to_codepoints(std::string_view text);

void append_utf8(uint32_t cpt, std::string& out);

// Length of the UTF-8 sequence a lead byte announces (1 for stray bytes).
inline size_t utf8_sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xE0) == 0xC0) return 2;
    if ((lead & 0xF0) == 0xE0) return 3;
    if ((lead & 0xF8) == 0xF0) return 4;
    return 1;
}

}  // namespace smolinfer::text
