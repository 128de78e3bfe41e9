// Shared pieces of the tokenizer/detokenizer property tests
// (test_properties_text.cpp on the tiny vocabulary,
// test_properties_text_model.cpp on SmolLM2's): seeded random text
// generators, and UTF-8 oracles written independently of src/text.
//
// Every property runs a few thousand cases; case i uses the generator seed
// base + i, where base is SMOLINFER_PROPERTY_SEED (default 20250611). A
// failure prints the base, the case's seed and the input (escaped), so
//   SMOLINFER_PROPERTY_SEED=<base> ./test_properties_text --gtest_filter=...
// reproduces it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace smolinfer::test::props {

inline uint64_t base_seed() {
    static const uint64_t seed = [] {
        const char* s = std::getenv("SMOLINFER_PROPERTY_SEED");
        return (s != nullptr && *s != '\0') ? std::strtoull(s, nullptr, 0) : uint64_t(20250611);
    }();
    return seed;
}

// Cases per property: SMOLINFER_PROPERTY_CASES overrides (for long local runs).
inline int cases(int fallback) {
    const char* s = std::getenv("SMOLINFER_PROPERTY_CASES");
    return (s != nullptr && *s != '\0') ? std::atoi(s) : fallback;
}

// Bytes as a C-like literal: printable ASCII as is, everything else \xNN.
inline std::string escaped(std::string_view s) {
    std::string out = "\"";
    char buf[8];
    for (const unsigned char c : s) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += char(c);
        } else if (c >= 0x20 && c < 0x7F) {
            out += char(c);
        } else {
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        }
    }
    return out + "\"";
}

inline std::string where(uint64_t case_seed, std::string_view input) {
    return "base seed " + std::to_string(base_seed()) + ", case seed " + std::to_string(case_seed) +
           ", input (" + std::to_string(input.size()) + " bytes) " + escaped(input);
}

// ---------------------------------------------------------------- UTF-8 oracles

// UTF-8 of one code point, encoded by hand (also for surrogates and values
// above U+10FFFF up to 0x1FFFFF, which the lenient decoder produces).
inline void put_utf8(uint32_t c, std::string& s) {
    if (c < 0x80) {
        s += char(c);
    } else if (c < 0x800) {
        s += char(0xC0 | (c >> 6));
        s += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        s += char(0xE0 | (c >> 12));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    } else {
        s += char(0xF0 | (c >> 18));
        s += char(0x80 | ((c >> 12) & 0x3F));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    }
}

// Strict UTF-8 (RFC 3629: shortest form, no surrogates, at most U+10FFFF).
inline bool strict_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto b = uint8_t(s[i]);
        size_t n;
        uint32_t c;
        if (b < 0x80) {
            ++i;
            continue;
        }
        if (b >= 0xC2 && b <= 0xDF) {
            n = 2;
            c = b & 0x1Fu;
        } else if (b >= 0xE0 && b <= 0xEF) {
            n = 3;
            c = b & 0x0Fu;
        } else if (b >= 0xF0 && b <= 0xF4) {
            n = 4;
            c = b & 0x07u;
        } else {
            return false;
        }
        if (i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            const auto cb = uint8_t(s[i + k]);
            if ((cb & 0xC0) != 0x80) return false;
            c = (c << 6) | (cb & 0x3Fu);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) || (c >= 0xD800 && c <= 0xDFFF)) {
            return false;
        }
        i += n;
    }
    return true;
}

// The lenient reading llama.cpp's tokenizer uses: a lead byte 110xxxxx,
// 1110xxxx or 11110xxx followed by its full count of continuation bytes
// (10xxxxxx) is one character, whatever its value (overlong forms and
// surrogates included); any other byte is an invalid byte on its own.
struct Unit {
    size_t begin, len;
    bool complete;  // a whole sequence (false: one invalid byte)
    uint32_t cpt;
};

inline size_t lead_length(uint8_t b) {
    if (b < 0x80) return 1;
    if ((b & 0xE0) == 0xC0) return 2;
    if ((b & 0xF0) == 0xE0) return 3;
    if ((b & 0xF8) == 0xF0) return 4;
    return 0;  // continuation byte or F8..FF: starts nothing
}

inline std::vector<Unit> lenient_units(std::string_view s) {
    std::vector<Unit> out;
    size_t i = 0;
    while (i < s.size()) {
        const auto b = uint8_t(s[i]);
        const size_t n = lead_length(b);
        bool ok = n != 0 && i + n <= s.size();
        for (size_t k = 1; ok && k < n; ++k) ok = (uint8_t(s[i + k]) & 0xC0) == 0x80;
        if (!ok) {
            out.push_back({i, 1, false, 0xFFFD});
            ++i;
            continue;
        }
        uint32_t c = n == 1 ? b : n == 2 ? (b & 0x1Fu) : n == 3 ? (b & 0x0Fu) : (b & 0x07u);
        for (size_t k = 1; k < n; ++k) c = (c << 6) | (uint8_t(s[i + k]) & 0x3Fu);
        out.push_back({i, n, true, c});
        i += n;
    }
    return out;
}

// What llama.cpp-style tokenization can give back for arbitrary bytes: each
// lenient character re-encoded in shortest form, each invalid byte U+FFFD.
inline std::string lenient_normalize(std::string_view s) {
    std::string out;
    for (const Unit& u : lenient_units(s)) put_utf8(u.cpt, out);
    return out;
}

// ---------------------------------------------------------------- generators

struct TextOptions {
    // Texts embedded verbatim now and then (a vocabulary's special tokens).
    std::vector<std::string> specials;
    // Leave '<' out of everything but the embedded specials, so that every
    // occurrence of a special text in the result is one that was embedded.
    bool no_angle_bracket = false;
    size_t max_items = 24;
};

class TextGen {
public:
    explicit TextGen(uint64_t seed) : rng_(seed) {}

    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
    uint32_t in(uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng_); }
    std::mt19937_64& rng() { return rng_; }

    // A random valid (strict) UTF-8 string. `embedded` receives the specials
    // put in, in order.
    std::string text(const TextOptions& o, std::vector<std::string>* embedded = nullptr) {
        std::string s;
        const size_t n = size_t(pick(int(o.max_items) + 1));
        for (size_t i = 0; i < n; ++i) item(o, s, embedded);
        return s;
    }

    // Arbitrary bytes: uniformly random ones, or a valid text broken on
    // purpose (truncated characters, stray continuation bytes, overlong
    // forms, surrogates, bytes F5..FF, code points above U+10FFFF).
    std::string bytes(const TextOptions& o) {
        if (pick(3) == 0) {
            std::string s(size_t(pick(40)), '\0');
            for (char& c : s) c = char(pick(256));
            return s;
        }
        std::string s = text(o);
        const int breaks = 1 + pick(4);
        for (int k = 0; k < breaks; ++k) {
            std::string bad;
            switch (pick(9)) {
                case 0: bad = std::string(1, char(0x80 + pick(64))); break;               // stray continuation
                case 1: bad = std::string(1, char(0xC2 + pick(30))); break;               // lone 2-byte lead
                case 2: bad = {char(0xE0 + pick(16)), char(0x80 + pick(64))}; break;      // 3-byte cut short
                case 3: bad = {char(0xF0 + pick(5)), char(0x90), char(0x80)}; break;      // 4-byte cut short
                case 4: bad = {char(0xC0 + pick(2)), char(0x80 + pick(64))}; break;       // overlong 2-byte
                case 5: bad = {char(0xE0), char(0x80 + pick(32)), char(0x80 + pick(64))}; break;  // overlong 3
                case 6: bad = {char(0xED), char(0xA0 + pick(32)), char(0x80 + pick(64))}; break;  // surrogate
                case 7: bad = std::string(1, char(0xF5 + pick(11))); break;               // F5..FF
                default: put_utf8(in(0x110000, 0x1FFFFF), bad); break;                    // above U+10FFFF
            }
            s.insert(size_t(pick(int(s.size()) + 1)), bad);
        }
        if (!s.empty() && pick(4) == 0) s.resize(size_t(pick(int(s.size()))));  // maybe inside a character
        return s;
    }

private:
    void cp(uint32_t c, std::string& s) { put_utf8(c, s); }

    void item(const TextOptions& o, std::string& s, std::vector<std::string>* embedded) {
        static const char* const kWords[] = {"the",  "in",   "er",    "an", "Hello", "world", "don't", "I'm",
                                             "it's", "WE'RE", "x",    "a",  "zebra", "über",  "naïve", "café",
                                             "日本語", "Привет", "mañana", "Ω"};
        static const char* const kEmoji[] = {
            "\U0001F600",                                            // 😀
            "\U0001F44D\U0001F3FD",                                  // 👍🏽 skin tone
            "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",  // family, ZWJ
            "\U0001F3F3\uFE0F\u200D\U0001F308",                      // rainbow flag
            "\U0001F1EB\U0001F1F7",                                  // flag: regional indicators
            "\u2764\uFE0F",                                          // heart + VS16
            "\U0001F469\U0001F3FF\u200D\U0001F4BB",                  // woman technologist, dark skin
            "1\uFE0F\u20E3",                                         // keycap
        };
        switch (pick(17)) {
            case 0: {  // a word, maybe with a leading space
                if (pick(2)) s += ' ';
                s += kWords[pick(int(std::size(kWords)))];
                break;
            }
            case 1: {  // printable ASCII
                for (int k = pick(6) + 1; k > 0; --k) {
                    char c = char(in(0x20, 0x7E));
                    if (o.no_angle_bracket && c == '<') c = '>';
                    s += c;
                }
                break;
            }
            case 2: {  // whitespace runs
                static const char ws[] = {' ', ' ', ' ', '\t', '\n', '\r', '\v', '\f'};
                for (int k = pick(9) + 1; k > 0; --k) s += ws[pick(int(sizeof ws))];
                break;
            }
            case 3: {  // digit runs
                for (int k = pick(9) + 1; k > 0; --k) s += char('0' + pick(10));
                break;
            }
            case 4: {  // punctuation runs
                static const std::string punct = "!\"#$%&'()*+,-./:;=?@[\\]^_`{|}~<>";
                for (int k = pick(4) + 1; k > 0; --k) {
                    char c = punct[size_t(pick(int(punct.size())))];
                    if (o.no_angle_bracket && c == '<') c = '>';
                    s += c;
                }
                break;
            }
            case 5: cp(in(0xC0, 0x17F), s); break;  // accented Latin (precomposed)
            case 6: {  // a base letter with combining marks (stacked)
                s += char('a' + pick(26));
                for (int k = pick(3) + 1; k > 0; --k) cp(in(0x300, 0x36F), s);
                break;
            }
            case 7: {  // CJK, kana, Hangul
                static const uint32_t lo[] = {0x4E00, 0x3040, 0x30A0, 0xAC00, 0x3000};
                static const uint32_t hi[] = {0x9FFF, 0x309F, 0x30FF, 0xD7A3, 0x303F};
                const int r = pick(5);
                for (int k = pick(4) + 1; k > 0; --k) cp(in(lo[r], hi[r]), s);
                break;
            }
            case 8: s += kEmoji[pick(int(std::size(kEmoji)))]; break;
            case 9: {  // RTL: Hebrew or Arabic, maybe with direction marks
                const bool hebrew = pick(2);
                for (int k = pick(5) + 1; k > 0; --k) cp(hebrew ? in(0x5D0, 0x5EA) : in(0x627, 0x64A), s);
                if (pick(3) == 0) cp(pick(2) ? 0x200F : 0x200E, s);
                break;
            }
            case 10: {  // special-token texts
                if (o.specials.empty()) break;
                const std::string& sp = o.specials[size_t(pick(int(o.specials.size())))];
                s += sp;
                if (embedded) embedded->push_back(sp);
                break;
            }
            case 11: {  // look-alikes of special texts
                static const char* const kLook[] = {"<|", "|>", "<|im_", "im_end|>", "<|im_start", "<||>", "<|endoftext"};
                std::string t = kLook[pick(int(std::size(kLook)))];
                if (o.no_angle_bracket) {
                    for (char& c : t) c = c == '<' ? '[' : c;
                }
                s += t;
                break;
            }
            case 12: {  // odd spaces and invisible characters
                static const uint32_t odd[] = {0xA0, 0x2000, 0x2003, 0x2009, 0x200A, 0x200B, 0x200D,
                                               0x2028, 0x2029, 0x3000, 0xFEFF, 0x85,   0x1680, 0x202F};
                cp(odd[pick(int(std::size(odd)))], s);
                break;
            }
            case 13: cp(in(0x00, 0x1F), s); break;  // C0 controls, NUL included
            case 14: {                                // any code point but surrogates
                uint32_t c;
                do c = in(0x80, 0x10FFFF);
                while (c >= 0xD800 && c <= 0xDFFF);
                cp(c, s);
                break;
            }
            case 15: {  // noncharacters, private use, specials block
                static const uint32_t odd[] = {0xFFFE, 0xFFFF, 0xFFFD, 0xE000, 0xF8FF, 0x10FFFF, 0x1FFFE, 0xFDD0};
                cp(odd[pick(int(std::size(odd)))], s);
                break;
            }
            default: {  // supplementary planes: math letters, emoji, CJK extension B
                static const uint32_t lo[] = {0x1D400, 0x1F300, 0x20000, 0x1F900};
                static const uint32_t hi[] = {0x1D7FF, 0x1F5FF, 0x2A6DF, 0x1F9FF};
                const int r = pick(4);
                cp(in(lo[r], hi[r]), s);
                break;
            }
        }
    }

    std::mt19937_64 rng_;
};

}  // namespace smolinfer::test::props
