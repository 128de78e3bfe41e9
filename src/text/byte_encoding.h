// GPT-2's byte-level alphabet: every byte maps to one printable code point
// (bytes that are printable map to themselves, the rest to U+0100 upwards),
// so that BPE vocabularies can be stored as text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace smolinfer::text {

// The code point standing for byte b, as UTF-8.
const std::string& byte_to_symbol(uint8_t b);

// Appends the byte-level form of raw bytes.
void encode_bytes(std::string_view raw, std::string& out);

// Decodes a byte-level token text back to raw bytes. A code point outside
// the alphabet (no byte-level vocabulary has one) is kept as its UTF-8.
std::string decode_symbols(std::string_view symbols);

}  // namespace smolinfer::text
