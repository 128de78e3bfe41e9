// The tokenizer/detokenizer properties themselves, for any byte-level BPE
// vocabulary: run on the tiny test vocabulary by test_properties_text.cpp
// and on SmolLM2's by test_properties_text_model.cpp. Each takes the
// vocabulary and a case count and reports failures with the seed and input
// (see text_properties.h).
//
// Notation: tok(s, ps) = Tokenizer::encode(s, add_special = false,
// parse_special = ps); detok(ids, sp) = detokenize(vocab, ids, special = sp).
// missing = the bytes whose byte-level symbol is not a token of the
// vocabulary (none for the tiny vocabulary; 21 for SmolLM2); drop(s) = s
// without those bytes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "support/text_properties.h"
#include "text/byte_encoding.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace smolinfer::test::props {

using text::TokenId;
using text::TokenKind;
using text::Vocab;

// Stops reporting after a few failures per property (the first ones are
// the useful ones), but counts them all.
class Failures {
public:
    explicit Failures(std::string property) : property_(std::move(property)) {}
    ~Failures() { EXPECT_EQ(count_, 0) << property_ << ": " << count_ << " failing cases"; }
    bool report(const std::string& what) {
        if (count_++ < 5) ADD_FAILURE() << property_ << ": " << what;
        return false;
    }
    int count() const { return count_; }

private:
    std::string property_;
    int count_ = 0;
};

inline std::array<bool, 256> missing_bytes(const Vocab& v) {
    std::array<bool, 256> m{};
    for (int b = 0; b < 256; ++b) m[size_t(b)] = !v.find(text::byte_to_symbol(uint8_t(b))).has_value();
    return m;
}

inline std::string drop(std::string_view s, const std::array<bool, 256>& missing) {
    std::string out;
    for (const char c : s) {
        if (!missing[uint8_t(c)]) out += c;
    }
    return out;
}

// The texts of the control (and unknown) tokens: what parse_special cuts out.
inline std::vector<std::string> control_texts(const Vocab& v) {
    std::vector<std::string> out;
    for (const TokenId id : v.special_tokens()) {
        if (v.kind(id) == TokenKind::Control || v.kind(id) == TokenKind::Unknown) out.push_back(v.text(id));
    }
    return out;
}

inline bool is_control(const Vocab& v, TokenId id) {
    return v.kind(id) == TokenKind::Control || v.kind(id) == TokenKind::Unknown;
}

// The unfinished character a text ends with: a lead byte announcing n bytes,
// followed by fewer than n - 1 continuation bytes up to the end. This is
// what a streaming decoder must hold back, and nothing else.
// Returns its length (0: none). There is at most one such position p.
inline size_t unfinished_tail(std::string_view s) {
    for (size_t p = s.size() >= 3 ? s.size() - 3 : 0; p < s.size(); ++p) {
        const size_t n = lead_length(uint8_t(s[p]));
        if (n < 2 || p + n <= s.size()) continue;
        bool continuations = true;
        for (size_t k = p + 1; k < s.size(); ++k) continuations = continuations && (uint8_t(s[k]) & 0xC0) == 0x80;
        if (continuations) return s.size() - p;
    }
    return 0;
}

// Streams `ids` through a StreamDecoder and checks, after every push, that
// the text given out so far is exactly the text of the ids so far minus its
// unfinished tail. That implies: the pieces concatenate (with finish()) to
// the whole detokenization, no piece ends inside a character that later
// bytes complete, and nothing is held back longer than needed. Also checks
// directly that no piece boundary falls inside a complete character of the
// whole text, and that every piece is strict UTF-8 when the whole text is.
inline bool check_stream(const Vocab& v, const std::vector<TokenId>& ids, bool special, std::string& why) {
    text::StreamDecoder d(v, special);
    std::string so_far, emitted;
    std::vector<std::string> pieces;
    for (size_t i = 0; i < ids.size(); ++i) {
        so_far += text::token_piece(v, ids[i], special);
        pieces.push_back(d.push(ids[i]));
        emitted += pieces.back();
        const std::string expected = so_far.substr(0, so_far.size() - unfinished_tail(so_far));
        if (emitted != expected) {
            why = "after push " + std::to_string(i) + " (id " + std::to_string(ids[i]) + ") emitted " + escaped(emitted) +
                  ", expected " + escaped(expected);
            return false;
        }
    }
    const std::string rest = d.finish();
    if (rest != so_far.substr(emitted.size())) {
        why = "finish() gave " + escaped(rest) + ", expected " + escaped(so_far.substr(emitted.size()));
        return false;
    }
    if (!rest.empty()) pieces.push_back(rest);
    const std::string whole = text::detokenize(v, ids, special);
    if (emitted + rest != whole) {
        why = "streamed " + escaped(emitted + rest) + " != detokenized " + escaped(whole);
        return false;
    }
    // Boundaries against the complete characters of the whole text.
    std::vector<bool> inside(whole.size() + 1, false);
    for (const Unit& u : lenient_units(whole)) {
        if (u.complete) {
            for (size_t k = 1; k < u.len; ++k) inside[u.begin + k] = true;
        }
    }
    const bool whole_strict = strict_utf8(whole);
    size_t at = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
        at += pieces[i].size();
        if (inside[at]) {
            why = "piece " + std::to_string(i) + " ends at byte " + std::to_string(at) + ", inside a character";
            return false;
        }
        if (whole_strict && !strict_utf8(pieces[i])) {
            why = "piece " + std::to_string(i) + " " + escaped(pieces[i]) + " is not valid UTF-8";
            return false;
        }
    }
    return true;
}

// ---------------------------------------------------------------- the properties

// P1 (parse_special off): for random valid UTF-8 s, including special-token
// texts: tok(s, false) contains no control token, and
// detok(tok(s, false), false) == detok(tok(s, false), true) == drop(s).
// With no missing bytes in s that is s itself.
inline void round_trip_plain(const Vocab& v, int n, uint64_t salt) {
    const text::Tokenizer tok(v);
    const auto missing = missing_bytes(v);
    TextOptions o;
    o.specials = control_texts(v);
    Failures f("detok(tok(s, parse_special=false)) == drop(s)");
    int exact = 0;
    for (int i = 0; i < n; ++i) {
        const uint64_t seed = base_seed() + salt + uint64_t(i);
        TextGen g(seed);
        const std::string s = g.text(o);
        if (!strict_utf8(s)) {
            f.report("generator made invalid UTF-8: " + where(seed, s));
            continue;
        }
        const auto ids = tok.encode(s, false, false);
        for (const TokenId id : ids) {
            if (is_control(v, id)) f.report("control token " + std::to_string(id) + " from plain text: " + where(seed, s));
        }
        const std::string want = drop(s, missing);
        if (want == s) ++exact;
        const std::string got = text::detokenize(v, ids, false);
        if (got != want) f.report("got " + escaped(got) + ": " + where(seed, s));
        if (text::detokenize(v, ids, true) != got) f.report("special=true differs: " + where(seed, s));
    }
    EXPECT_GT(exact, n / 2) << "most generated texts should round-trip exactly";
}

// P2 (parse_special on): for random valid UTF-8 s,
// detok(tok(s, true), true) == drop(s). The control texts come back because
// special=true renders control tokens as their text.
// P2b: when s has no '<' except in the embedded special texts (every
// SmolLM2/tiny control text is '<' + no other '<' + ..., and none is a prefix
// of another, checked here), the control tokens of tok(s, true) are exactly
// the embedded ones in order, and detok(tok(s, true), false) == drop(s
// without the embedded texts).
// P2c: tok with add_special = true is [BOS if add_bos] + tok(s) + [EOS if add_eos].
inline void round_trip_special(const Vocab& v, int n, uint64_t salt) {
    const text::Tokenizer tok(v);
    const auto missing = missing_bytes(v);
    const auto specials = control_texts(v);
    for (const std::string& a : specials) {
        ASSERT_FALSE(a.empty());
        ASSERT_EQ(a[0], '<') << a;
        ASSERT_EQ(a.find('<', 1), std::string::npos) << a;
        for (const std::string& b : specials) {
            if (a != b) {
                ASSERT_NE(b.rfind(a, 0), 0u) << a << " is a prefix of " << b;
            }
        }
    }
    Failures f("detok(tok(s, parse_special=true), special) properties");
    for (int i = 0; i < n; ++i) {
        const uint64_t seed = base_seed() + salt + uint64_t(i);
        TextGen g(seed);
        TextOptions o;
        o.specials = specials;
        o.no_angle_bracket = (i % 2 == 0);
        std::vector<std::string> embedded;
        const std::string s = g.text(o, &embedded);
        const auto ids = tok.encode(s, false, true);
        const std::string got = text::detokenize(v, ids, true);
        if (got != drop(s, missing)) f.report("P2 got " + escaped(got) + ": " + where(seed, s));

        std::vector<TokenId> with_specials;
        if (v.add_bos()) with_specials.push_back(*v.bos());
        with_specials.insert(with_specials.end(), ids.begin(), ids.end());
        if (v.add_eos()) with_specials.push_back(*v.eos());
        if (tok.encode(s, true, true) != with_specials) f.report("P2c add_special: " + where(seed, s));

        if (!o.no_angle_bracket) continue;
        std::vector<std::string> found;
        for (const TokenId id : ids) {
            if (is_control(v, id)) found.push_back(v.text(id));
        }
        if (found != embedded) {
            f.report("P2b " + std::to_string(found.size()) + " control tokens for " + std::to_string(embedded.size()) +
                     " embedded texts: " + where(seed, s));
        }
        std::string without;
        for (size_t at = 0; at < s.size();) {
            if (s[at] == '<') {
                bool cut = false;
                for (const std::string& sp : specials) {
                    if (s.compare(at, sp.size(), sp) == 0) {
                        at += sp.size();
                        cut = true;
                        break;
                    }
                }
                if (!cut) {
                    f.report("P2b a '<' that starts no special text: " + where(seed, s));
                    break;
                }
                continue;
            }
            without += s[at++];
        }
        const std::string plain = text::detokenize(v, ids, false);
        if (plain != drop(without, missing)) f.report("P2b special=false gave " + escaped(plain) + ": " + where(seed, s));
    }
}

// P3 (any bytes): detok(tok(b, false), false) == drop(lenient_normalize(b)):
// each well-formed-looking sequence comes back re-encoded in shortest form
// (overlong forms are not kept), each byte that starts no sequence becomes
// U+FFFD. So arbitrary bytes round-trip exactly iff that normalization (and
// drop) leaves them unchanged; the test also checks that this really fails
// for some inputs (invalid UTF-8 is not preserved). The same holds with
// parse_special on and special on.
inline void arbitrary_bytes(const Vocab& v, int n, uint64_t salt) {
    const text::Tokenizer tok(v);
    const auto missing = missing_bytes(v);
    TextOptions o;
    o.specials = control_texts(v);
    Failures f("detok(tok(bytes)) == drop(lenient_normalize(bytes))");
    int changed = 0;
    for (int i = 0; i < n; ++i) {
        const uint64_t seed = base_seed() + salt + uint64_t(i);
        TextGen g(seed);
        const std::string b = g.bytes(o);
        const std::string want = drop(lenient_normalize(b), missing);
        if (want != b) ++changed;
        const auto ids = tok.encode(b, false, false);
        const std::string got = text::detokenize(v, ids, false);
        if (got != want) f.report("parse_special=false got " + escaped(got) + " want " + escaped(want) + ": " + where(seed, b));
        const std::string got_sp = text::detokenize(v, tok.encode(b, false, true), true);
        if (got_sp != want) f.report("parse_special=true got " + escaped(got_sp) + ": " + where(seed, b));
        std::string why;
        if (!check_stream(v, ids, false, why)) f.report("stream: " + why + ": " + where(seed, b));
    }
    EXPECT_GT(changed, n / 4) << "the byte generator should make mostly invalid UTF-8";
}

// P4: streaming the ids of tokenized random text (see check_stream).
inline void stream_tokenized(const Vocab& v, int n, uint64_t salt) {
    const text::Tokenizer tok(v);
    TextOptions o;
    o.specials = control_texts(v);
    Failures f("streamed detokenization of tokenized text");
    for (int i = 0; i < n; ++i) {
        const uint64_t seed = base_seed() + salt + uint64_t(i);
        TextGen g(seed);
        const std::string s = g.text(o);
        const bool parse = g.pick(2);
        const bool special = g.pick(2);
        const auto ids = tok.encode(s, false, parse);
        std::string why;
        if (!check_stream(v, ids, special, why)) {
            f.report(why + " (parse_special " + std::to_string(parse) + ", special " + std::to_string(special) +
                     "): " + where(seed, s));
        }
    }
}

// P5: streaming random id sequences (see check_stream): ids drawn mostly
// from the single-byte tokens >= 0x80 (UTF-8 leads and continuations, so
// characters split across tokens, broken and overlong sequences), plus
// control tokens and any other token.
inline void stream_random_ids(const Vocab& v, int n, uint64_t salt) {
    std::vector<TokenId> high_bytes, controls;
    for (int b = 0x80; b < 0x100; ++b) {
        if (auto id = v.find(text::byte_to_symbol(uint8_t(b)))) high_bytes.push_back(*id);
    }
    for (TokenId id = 0; size_t(id) < v.size(); ++id) {
        if (is_control(v, id)) controls.push_back(id);
    }
    ASSERT_FALSE(high_bytes.empty());
    Failures f("streamed detokenization of random ids");
    for (int i = 0; i < n; ++i) {
        const uint64_t seed = base_seed() + salt + uint64_t(i);
        TextGen g(seed);
        std::vector<TokenId> ids(size_t(g.pick(30)));
        for (TokenId& id : ids) {
            const int r = g.pick(10);
            if (r < 6) {
                id = high_bytes[size_t(g.pick(int(high_bytes.size())))];
            } else if (r < 7 && !controls.empty()) {
                id = controls[size_t(g.pick(int(controls.size())))];
            } else {
                id = TokenId(g.pick(int(v.size())));
            }
        }
        const bool special = g.pick(2);
        std::string why;
        if (!check_stream(v, ids, special, why)) {
            f.report(why + " (special " + std::to_string(special) + "), base seed " + std::to_string(base_seed()) +
                     ", case seed " + std::to_string(seed) + ", ids " + ::testing::PrintToString(ids));
        }
    }
}

}  // namespace smolinfer::test::props
