#include "text/pretokenizer_llama3.h"

#include "text/unicode.h"

namespace smolinfer::text {

namespace {

// The contraction letters are ASCII, and no other code point lower-cases to
// one of them, so an ASCII fold is the regex's (?i:) here.
uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c; }

bool is_cr_or_lf(uint32_t c) { return c == '\r' || c == '\n'; }

}  // namespace

std::vector<size_t> split_llama3(const std::vector<uint32_t>& cpts, const std::vector<size_t>& in, size_t max_digits) {
    std::vector<size_t> out;
    out.reserve(in.size());
    size_t start = 0;
    for (const size_t len : in) {
        const size_t begin = start;
        const size_t end = start + len;
        start = end;
        constexpr uint32_t kNone = 0xFFFFFFFF;
        auto cpt_at = [&](size_t p) { return p < end ? cpts[p] : kNone; };
        auto flags_at = [&](size_t p) { return p < end ? codepoint_flags(cpts[p]) : CodepointFlags{}; };

        size_t prev = begin;
        auto emit = [&](size_t to) {
            const size_t n = to - prev;
            if (n > 0) out.push_back(n);
            prev = to;
            return n;
        };

        size_t pos = begin;
        while (pos < end) {
            const uint32_t c = cpts[pos];
            const CodepointFlags f = codepoint_flags(c);

            // (?i:'s|'t|'re|'ve|'m|'ll|'d)
            if (c == '\'' && pos + 1 < end) {
                const uint32_t n1 = ascii_lower(cpt_at(pos + 1));
                if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                    pos += emit(pos + 2);
                    continue;
                }
                if (pos + 2 < end) {
                    const uint32_t n2 = ascii_lower(cpt_at(pos + 2));
                    if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                        pos += emit(pos + 3);
                        continue;
                    }
                }
            }

            // [^\r\n\p{L}\p{N}]?\p{L}+ : any one non-letter, non-number (not CR/LF) may lead a letter run
            if (!is_cr_or_lf(c) && !f.is_number() && (f.is_letter() || flags_at(pos + 1).is_letter())) {
                ++pos;
                while (flags_at(pos).is_letter()) ++pos;
                emit(pos);
                continue;
            }

            // \p{N}{1,max_digits}
            if (f.is_number()) {
                size_t run = 0;
                while (flags_at(pos).is_number()) {
                    ++pos;
                    if (++run == max_digits) {
                        emit(pos);
                        run = 0;
                    }
                }
                emit(pos);
                continue;
            }

            // ' ?[^\s\p{L}\p{N}]+[\r\n]*'. The test on the first code point's
            // own flags (not the one after a space) is llama.cpp's.
            CodepointFlags g = (c == ' ') ? flags_at(pos + 1) : f;
            auto other = [](CodepointFlags x) { return x.any() && !x.is_whitespace() && !x.is_letter() && !x.is_number(); };
            if (!g.is_whitespace() && !g.is_letter() && !g.is_number() && f.any()) {
                if (c == ' ') ++pos;
                while (other(g)) g = flags_at(++pos);
                while (is_cr_or_lf(cpt_at(pos))) ++pos;
                emit(pos);
                continue;
            }

            size_t spaces = 0;
            size_t after_last_newline = 0;
            while (flags_at(pos + spaces).is_whitespace()) {
                if (is_cr_or_lf(cpt_at(pos + spaces))) after_last_newline = pos + spaces + 1;
                ++spaces;
            }
            // \s*[\r\n]+
            if (after_last_newline > 0) {
                pos = after_last_newline;
                emit(pos);
                continue;
            }
            // \s+(?!\S): leave the last space to prefix the next word
            if (spaces > 1 && cpt_at(pos + spaces) != kNone) {
                pos += spaces - 1;
                emit(pos);
                continue;
            }
            // \s+
            if (spaces > 0) {
                pos += spaces;
                emit(pos);
                continue;
            }
            emit(++pos);  // matches nothing: a fragment of its own
        }
    }
    return out;
}

}  // namespace smolinfer::text
