#include "text/pretokenizer.h"

#include "text/unicode.h"

namespace smolinfer::text {

namespace {

// A split pass reads fragment lengths (in code points) and returns finer ones.
using Fragments = std::vector<size_t>;

// The GPT-2 pattern, hand-compiled as llama.cpp does:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Matching never looks outside the fragment it is splitting.
Fragments split_gpt2(const std::vector<uint32_t>& cpts, const Fragments& in) {
    Fragments out;
    out.reserve(in.size());
    size_t start = 0;
    for (const size_t len : in) {
        const size_t begin = start;
        const size_t end = start + len;
        start = end;
        constexpr uint32_t kNone = 0xFFFFFFFF;
        auto cpt_at = [&](size_t p) { return p < end ? cpts[p] : kNone; };
        auto flags_at = [&](size_t p) { return p < end ? codepoint_flags(cpts[p]) : CodepointFlags{}; };
        auto is_other = [](CodepointFlags f) { return f.any() && !f.is_whitespace() && !f.is_letter() && !f.is_number(); };

        size_t prev = begin;
        auto emit = [&](size_t to) {
            if (to > prev) out.push_back(to - prev);
            prev = to;
        };

        size_t pos = begin;
        while (pos < end) {
            const uint32_t c = cpts[pos];
            if (c == '\'' && pos + 1 < end) {
                const uint32_t n1 = cpt_at(pos + 1);
                if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                    pos += 2;
                    emit(pos);
                    continue;
                }
                if (pos + 2 < end) {
                    const uint32_t n2 = cpt_at(pos + 2);
                    if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                        pos += 3;
                        emit(pos);
                        continue;
                    }
                }
            }
            // An optional leading space joins a following letter, number or other run.
            CodepointFlags f = (c == ' ') ? flags_at(pos + 1) : flags_at(pos);
            if (f.is_letter() || f.is_number() || is_other(f)) {
                const bool letter = f.is_letter();
                const bool number = f.is_number();
                if (c == ' ') ++pos;
                auto same = [&](CodepointFlags g) {
                    return letter ? g.is_letter() : number ? g.is_number() : is_other(g);
                };
                while (same(f)) f = flags_at(++pos);
                emit(pos);
                continue;
            }
            size_t spaces = 0;
            while (flags_at(pos + spaces).is_whitespace()) ++spaces;
            if (spaces > 1 && cpt_at(pos + spaces) != kNone) {
                // \s+(?!\S): leave the last space to prefix the next word
                pos += spaces - 1;
                emit(pos);
                continue;
            }
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

// Isolates every maximal run of code points satisfying `pred`; the text
// between runs becomes fragments too. With `single`, each matching code
// point is a run of its own.
template <typename Pred>
Fragments isolate_runs(const std::vector<uint32_t>& cpts, const Fragments& in, Pred pred, bool single) {
    Fragments out;
    out.reserve(in.size());
    size_t start = 0;
    for (const size_t len : in) {
        const size_t end = start + len;
        size_t pos = start;
        size_t prev = start;
        while (pos < end) {
            if (!pred(cpts[pos])) {
                ++pos;
                continue;
            }
            if (pos > prev) out.push_back(pos - prev);
            size_t run_end = pos + 1;
            if (!single) {
                while (run_end < end && pred(cpts[run_end])) ++run_end;
            }
            out.push_back(run_end - pos);
            pos = prev = run_end;
        }
        if (end > prev) out.push_back(end - prev);
        start = end;
    }
    return out;
}

// [0-9][0-9][0-9], leftmost first: groups of three ASCII digits.
Fragments isolate_digit_triples(const std::vector<uint32_t>& cpts, const Fragments& in) {
    Fragments out;
    out.reserve(in.size());
    auto digit = [&](size_t p) { return cpts[p] >= '0' && cpts[p] <= '9'; };
    size_t start = 0;
    for (const size_t len : in) {
        const size_t end = start + len;
        size_t pos = start;
        size_t prev = start;
        while (pos + 3 <= end) {
            if (digit(pos) && digit(pos + 1) && digit(pos + 2)) {
                if (pos > prev) out.push_back(pos - prev);
                out.push_back(3);
                pos = prev = pos + 3;
            } else {
                ++pos;
            }
        }
        if (end > prev) out.push_back(end - prev);
        start = end;
    }
    return out;
}

bool is_number(uint32_t c) { return codepoint_flags(c).is_number(); }

// [\p{P}\$\+<=>\^~\|]
bool is_punct_or_operator(uint32_t c) {
    switch (c) {
        case '$': case '+': case '<': case '=': case '>': case '^': case '~': case '|': return true;
        default: break;
    }
    const CodepointFlags f = codepoint_flags(c);
    return (f.bits & CodepointFlags::Punctuation) && !f.is_whitespace();
}

}  // namespace

std::optional<PreTokenizer> pretokenizer_from_name(std::string_view name) {
    if (name == "default" || name.empty()) return PreTokenizer::Default;
    if (name == "gpt-2" || name == "gpt2" || name == "phi-2" || name == "jina-es" || name == "jina-de" ||
        name == "gigachat" || name == "jina-v2-es" || name == "jina-v2-de" || name == "a.x-4.0" ||
        name == "mellum") {
        return PreTokenizer::Gpt2;
    }
    if (name == "smollm" || name == "starcoder" || name == "refact" || name == "command-r" ||
        name == "codeshell" || name == "exaone" || name == "minerva-7b") {
        return PreTokenizer::Smollm;
    }
    return std::nullopt;
}

std::vector<std::string> pretokenize(PreTokenizer kind, std::string_view text) {
    const std::vector<uint32_t> cpts = utf8_to_codepoints(text);
    Fragments frags;
    if (!cpts.empty()) frags.push_back(cpts.size());
    switch (kind) {
        case PreTokenizer::Default:
            frags = isolate_runs(cpts, frags, is_punct_or_operator, false);
            frags = split_gpt2(cpts, frags);
            frags = isolate_runs(cpts, frags, is_number, false);
            frags = isolate_digit_triples(cpts, frags);
            break;
        case PreTokenizer::Gpt2:
            frags = split_gpt2(cpts, frags);
            break;
        case PreTokenizer::Smollm:
            frags = isolate_runs(cpts, frags, is_number, true);
            frags = split_gpt2(cpts, frags);
            break;
    }
    std::vector<std::string> words;
    words.reserve(frags.size());
    size_t pos = 0;
    for (const size_t len : frags) {
        std::string w;
        for (size_t i = pos; i < pos + len; ++i) append_utf8(cpts[i], w);
        words.push_back(std::move(w));
        pos += len;
    }
    return words;
}

}  // namespace smolinfer::text
