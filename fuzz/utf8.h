// Whether bytes are well-formed UTF-8 that the tokenizer keeps byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "text/unicode.h"

namespace smolinfer::fuzz {

inline bool valid_utf8(std::string_view s) {
    std::string again;
    for (const uint32_t cpt : text::utf8_to_codepoints(s)) {
        // U+FFFD stands for invalid bytes (a literal U+FFFD is excluded too,
        // to keep this simple); surrogates and overlong forms decode to code
        // points that re-encode differently and are caught by the comparison.
        if (cpt == text::kReplacementChar || (cpt >= 0xD800 && cpt <= 0xDFFF)) return false;
        text::append_utf8(cpt, again);
    }
    return again == s;
}

}  // namespace smolinfer::fuzz
