#include "text/pretokenizer.h"

#include "text/pretokenizer_llama3.h"
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

namespace {

struct NamedPreTokenizer {
    std::string_view name;
    PreTokenizerInfo info;
};

// llama.cpp's names for the splits we implement, with the flags its
// llama_vocab::load sets for each name (src/llama-vocab.cpp).
constexpr NamedPreTokenizer kPreTokenizers[] = {
    {"default", {PreTokenizer::Default}},
    {"gpt-2", {PreTokenizer::Gpt2}},
    {"gpt2", {PreTokenizer::Gpt2}},
    {"phi-2", {PreTokenizer::Gpt2}},
    {"jina-es", {PreTokenizer::Gpt2}},
    {"jina-de", {PreTokenizer::Gpt2}},
    {"gigachat", {PreTokenizer::Gpt2}},
    {"jina-v2-es", {PreTokenizer::Gpt2}},
    {"jina-v2-de", {PreTokenizer::Gpt2}},
    {"a.x-4.0", {PreTokenizer::Gpt2}},
    {"mellum", {PreTokenizer::Gpt2}},
    {"smollm", {PreTokenizer::Smollm, false, false}},
    {"starcoder", {PreTokenizer::Smollm}},
    {"refact", {PreTokenizer::Smollm}},
    {"command-r", {PreTokenizer::Smollm, false, false}},
    {"codeshell", {PreTokenizer::Smollm}},
    {"exaone", {PreTokenizer::Smollm}},
    {"minerva-7b", {PreTokenizer::Smollm}},
    {"llama3", {PreTokenizer::Llama3, true, true, true}},
    {"llama-v3", {PreTokenizer::Llama3, true, true, true}},
    {"llama-bpe", {PreTokenizer::Llama3, true, true, true}},
    {"falcon3", {PreTokenizer::Llama3, true, true, true}},
    {"falcon-h1", {PreTokenizer::Llama3, true, true, true}},
    {"pixtral", {PreTokenizer::Llama3, true, true, true}},
    {"midm-2.0", {PreTokenizer::Llama3, true, true, true}},
    {"lfm2", {PreTokenizer::Llama3, true, true, true}},
    {"dbrx", {PreTokenizer::Llama3}},
    {"smaug-bpe", {PreTokenizer::Llama3}},
    {"qwen2", {PreTokenizer::Qwen2, false, false}},
    {"deepseek-r1-qwen", {PreTokenizer::Qwen2, false, false}},
    {"stablelm2", {PreTokenizer::Qwen2}},
    {"megrez", {PreTokenizer::Qwen2}},
};

}  // namespace

std::optional<PreTokenizerInfo> pretokenizer_info(std::string_view name) {
    if (name.empty()) return PreTokenizerInfo{PreTokenizer::Default};
    for (const NamedPreTokenizer& p : kPreTokenizers) {
        if (p.name == name) return p.info;
    }
    return std::nullopt;
}

std::optional<PreTokenizer> pretokenizer_from_name(std::string_view name) {
    const auto info = pretokenizer_info(name);
    if (!info) return std::nullopt;
    return info->kind;
}

std::string supported_pretokenizer_names() {
    std::string out;
    for (const NamedPreTokenizer& p : kPreTokenizers) {
        if (!out.empty()) out += ", ";
        out += p.name;
    }
    return out;
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
        case PreTokenizer::Llama3:
            frags = split_llama3(cpts, frags, 3);
            break;
        case PreTokenizer::Qwen2:
            frags = split_llama3(cpts, frags, 1);
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
