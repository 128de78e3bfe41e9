// Byte-at-a-time UTF-8 decoding as llama.cpp's grammar decodes token pieces
// (decode_utf8 in llama-grammar.cpp), so that tokens are judged the same:
//   - a character left incomplete at the end of one token is continued by
//     the next, and those continuation bytes must look like 10xxxxxx;
//   - inside one token, a lead byte takes the next 1-3 bytes whatever they are;
//   - a lone continuation byte where a character should start is invalid.
#pragma once

#include <cstdint>

namespace smolinfer::grammar {

struct Utf8State {
    uint32_t value = 0;     // bits of the character so far
    int n_remain = 0;       // continuation bytes still missing (0: between characters)
    bool checking = false;  // continuing a character begun in an earlier token
};

enum class Utf8Step { Invalid, Partial, CodePoint };

inline Utf8Step utf8_step(Utf8State& s, uint8_t b) {
    if (s.n_remain > 0) {
        if (s.checking && (b >> 6) != 2) return Utf8Step::Invalid;
        s.value = (s.value << 6) + (b & 0x3Fu);
        if (--s.n_remain > 0) return Utf8Step::Partial;
        s.checking = false;
        return Utf8Step::CodePoint;
    }
    static constexpr int8_t kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
    const int length = kLength[b >> 4];
    if (length == 0) return Utf8Step::Invalid;
    s.n_remain = length - 1;
    s.value = b & ((1u << (7 - s.n_remain)) - 1);
    return s.n_remain == 0 ? Utf8Step::CodePoint : Utf8Step::Partial;
}

}  // namespace smolinfer::grammar
