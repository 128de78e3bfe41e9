#include "text/byte_encoding.h"

#include <array>

#include "text/unicode.h"

namespace smolinfer::text {

namespace {

struct Tables {
    std::array<std::string, 256> symbol;  // byte -> UTF-8 of its code point
    std::array<int, 512> byte_of;         // code point (< 512) -> byte, or -1

    Tables() {
        byte_of.fill(-1);
        auto printable = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
        int next = 256;
        for (int b = 0; b < 256; ++b) {
            const int cpt = printable(b) ? b : next++;
            append_utf8(uint32_t(cpt), symbol[b]);
            byte_of[cpt] = b;
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

const std::string& byte_to_symbol(uint8_t b) { return tables().symbol[b]; }

void encode_bytes(std::string_view raw, std::string& out) {
    const Tables& t = tables();
    for (const char c : raw) out += t.symbol[uint8_t(c)];
}

std::string decode_symbols(std::string_view symbols) {
    const Tables& t = tables();
    std::string out;
    out.reserve(symbols.size());
    for (const uint32_t cpt : utf8_to_codepoints(symbols)) {
        if (cpt < t.byte_of.size() && t.byte_of[cpt] >= 0) {
            out.push_back(char(t.byte_of[cpt]));
        } else {
            append_utf8(cpt, out);
        }
    }
    return out;
}

}  // namespace smolinfer::text
