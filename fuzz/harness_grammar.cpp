// fuzz_grammar: bytes as GBNF text -> the parser; when it parses, the matcher
// on a small vocabulary (ASCII, multi-character pieces, pieces split inside
// UTF-8 characters, an empty and a NUL piece, an end token) walks up to 16
// tokens, each chosen among those it allows. An allowed token must be
// accepted, and end-of-generation allowed only when the grammar is complete.
#include <memory>
#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "harness.h"
#include "smolinfer/error.h"

namespace smolinfer::fuzz {

namespace {

std::shared_ptr<const grammar::TokenTable> vocabulary() {
    static const auto table = [] {
        std::vector<std::string> pieces = {"<end>", "", std::string("\0x", 2), " ", "\n", "\t", "\"", "\\", "{", "}",
                                           "[", "]", ":", ",", "-", "0", "1", "9", "a", "b", "z", "A", "ab", "abc",
                                           "true", "null", " \"", "\":", "\xC3", "\xA9", "\xC3\xA9", "\xE3\x81",
                                           "\x82", "\xE3\x81\x82", "\xF0\x9F", "\x98\x80", "\x80", "\xC3" "A"};
        std::vector<uint8_t> eog(pieces.size(), 0);
        eog[0] = 1;
        return std::make_shared<const grammar::TokenTable>(std::move(pieces), std::move(eog));
    }();
    return table;
}

}  // namespace

void grammar_one(Bytes data) {
    const std::string text(data.begin(), data.end());
    std::unique_ptr<grammar::Matcher> m;
    try {
        m = std::make_unique<grammar::Matcher>(grammar::parse_grammar(text), vocabulary());
    } catch (const Error&) {
        return;  // a malformed grammar: rejected with an error, as it should be
    }
    const auto table = vocabulary();
    for (size_t step = 0; step < 16; ++step) {
        std::vector<int32_t> allowed;
        try {
            const auto bits = m->allowed(true);
            for (size_t id = 0; id < table->size(); ++id) {
                if ((bits[id / 64] >> (id % 64)) & 1) allowed.push_back(int32_t(id));
            }
        } catch (const Error&) {
            return;  // expanding the rules does not terminate: reported as an error
        }
        check(m->any_allowed() == !allowed.empty(), "any_allowed() disagrees with the mask");
        if (allowed.empty()) return;
        const int32_t pick = allowed[(step * 7 + text.size()) % allowed.size()];
        if (table->end_of_generation[size_t(pick)]) {
            check(m->complete(), "end-of-generation allowed before the grammar is complete");
            return;
        }
        check(!table->pieces[size_t(pick)].empty(), "an empty piece is allowed");
        try {
            m->accept(pick);
        } catch (const Error& e) {
            throw InvariantError(std::string("an allowed token was refused: ") + e.what());
        }
    }
}

}  // namespace smolinfer::fuzz
