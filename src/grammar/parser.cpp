// GBNF text -> Grammar. The accepted syntax is llama.cpp's (grammars/README.md
// in its source): `name ::= alternatives` rules, newlines end a rule except
// inside parentheses or after `|` and `::=`, `#` comments, "literals",
// [classes] with ranges and ^, `.`, ( groups ), and the postfixes * + ? {m}
// {m,} {m,n}. Repetitions are rewritten into helper rules the way llama.cpp
// rewrites them, so the limits (2000 repetitions) are the same.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "grammar/grammar.h"
#include "smolinfer/error.h"

namespace smolinfer::grammar {

namespace {

constexpr uint64_t kMaxRepetition = 2000;  // llama.cpp's MAX_REPETITION_THRESHOLD
constexpr uint64_t kUnbounded = UINT64_MAX;
constexpr int kMaxGroupDepth = 256;  // nested parentheses (each level is a recursive call)

bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

using Sequence = std::vector<Element>;  // one alternative, without its End

struct DraftRule {
    std::string name;
    std::string origin;  // the user-written rule a generated rule belongs to
    std::vector<Sequence> alternatives;
    bool defined = false;
    size_t first_use = 0;  // offset of the first reference, for "undefined rule"
};

class Parser {
public:
    explicit Parser(std::string_view src) : src_(src) {}

    Grammar parse(std::string_view root_name) {
        for (size_t i = 0; i < src_.size(); ++i) {
            if (src_[i] == '\0') fail("NUL byte in the grammar", i);
        }
        skip_space(true);
        while (pos_ < src_.size()) parse_rule();
        return finish(root_name);
    }

private:
    std::string_view src_;
    size_t pos_ = 0;
    std::vector<DraftRule> rules_;
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<CharSet> charsets_;
    int group_depth_ = 0;

    // ------------------------------------------------------------ errors

    [[noreturn]] void fail(const std::string& what, size_t at) const {
        at = std::min(at, src_.size());
        size_t line = 1, column = 1;
        for (size_t i = 0; i < at; ++i) {
            if (src_[i] == '\n') {
                ++line;
                column = 1;
            } else if ((uint8_t(src_[i]) & 0xC0) != 0x80) {
                ++column;  // columns count characters, not bytes
            }
        }
        throw Error("grammar: line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
    }
    [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }

    std::string found() const {
        if (pos_ >= src_.size()) return "end of grammar";
        const char c = src_[pos_];
        if (c == '\n' || c == '\r') return "end of line";
        return "'" + std::string(1, c) + "'";
    }

    // ------------------------------------------------------------ lexing

    char peek(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
    bool at_end() const { return pos_ >= src_.size(); }

    void skip_space(bool newline_ok) {
        while (!at_end()) {
            const char c = src_[pos_];
            if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && src_[pos_] != '\r' && src_[pos_] != '\n') ++pos_;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (is_word_char(peek())) ++pos_;
        if (pos_ == start) fail("expected a rule name, found " + found());
        return std::string(src_.substr(start, pos_ - start));
    }

    uint64_t parse_int() {
        uint64_t v = 0;
        if (!is_digit(peek())) fail("expected a number, found " + found());
        while (is_digit(peek())) {
            v = std::min<uint64_t>(v * 10 + uint64_t(src_[pos_++] - '0'), uint64_t(1) << 40);
        }
        return v;
    }

    uint32_t parse_hex(int digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            const char c = peek();
            int d;
            if (c >= '0' && c <= '9') d = c - '0';
            else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
            else fail("expected " + std::to_string(digits) + " hex digits, found " + found());
            v = (v << 4) | uint32_t(d);
            ++pos_;
        }
        return v;
    }

    // One character of a literal or class: an escape or a UTF-8 character.
    uint32_t parse_char() {
        if (at_end()) fail("unexpected end of grammar");
        if (peek() == '\\') {
            const size_t start = pos_;
            if (pos_ + 1 >= src_.size()) fail("unexpected end of grammar after '\\'");
            const char escaped = src_[pos_ + 1];
            pos_ += 2;
            switch (escaped) {
                case 'x': return parse_hex(2);
                case 'u': return parse_hex(4);
                case 'U': return parse_hex(8);
                case 't': return '\t';
                case 'r': return '\r';
                case 'n': return '\n';
                case '\\': case '"': case '[': case ']': case '-':
                    return uint32_t(uint8_t(escaped));
                default:
                    fail("unknown escape '\\" + std::string(1, escaped) + "'", start);
            }
        }
        const uint8_t lead = uint8_t(src_[pos_]);
        const int len = lead < 0x80 ? 1 : lead >= 0xF0 && lead < 0xF8 ? 4 : lead >= 0xE0 && lead < 0xF0 ? 3
                        : lead >= 0xC2 && lead < 0xE0 ? 2 : 0;
        if (len == 0) fail("invalid UTF-8");
        uint32_t cp = len == 1 ? lead : lead & (0x7Fu >> len);
        for (int i = 1; i < len; ++i) {
            const uint8_t b = uint8_t(peek(size_t(i)));
            if ((b & 0xC0) != 0x80) fail("invalid UTF-8");
            cp = (cp << 6) | (b & 0x3F);
        }
        pos_ += size_t(len);
        return cp;
    }

    // ------------------------------------------------------------ rules

    uint32_t rule_id(const std::string& name, size_t at) {
        const auto [it, added] = ids_.emplace(name, uint32_t(rules_.size()));
        if (added) {
            DraftRule r;
            r.name = name;
            r.origin = name;
            r.first_use = at;
            rules_.push_back(std::move(r));
        }
        return it->second;
    }

    uint32_t generated_rule(const std::string& origin) {
        const uint32_t id = uint32_t(rules_.size());
        DraftRule r;
        r.name = origin + "_" + std::to_string(id);
        r.origin = origin;
        r.defined = true;
        rules_.push_back(std::move(r));
        return id;
    }

    uint32_t add_charset(CharSet cs) {
        charsets_.push_back(std::move(cs));
        return uint32_t(charsets_.size() - 1);
    }

    void parse_rule() {
        const size_t start = pos_;
        const std::string name = parse_name();
        skip_space(false);
        if (src_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "', found " + found());
        pos_ += 3;
        skip_space(true);
        const uint32_t id = rule_id(name, start);
        if (rules_[id].defined) fail("rule '" + name + "' is defined twice", start);
        rules_[id].defined = true;
        std::vector<Sequence> alternatives = parse_alternates(name, false);
        rules_[id].alternatives = std::move(alternatives);
        if (peek() == '\r') {
            pos_ += peek(1) == '\n' ? 2 : 1;
        } else if (peek() == '\n') {
            ++pos_;
        } else if (!at_end()) {
            fail("expected an element, '|' or the end of the line in rule '" + name + "', found " + found());
        }
        skip_space(true);
    }

    std::vector<Sequence> parse_alternates(const std::string& rule_name, bool nested) {
        std::vector<Sequence> alternatives;
        alternatives.push_back(parse_sequence(rule_name, nested));
        while (peek() == '|') {
            ++pos_;
            skip_space(true);
            alternatives.push_back(parse_sequence(rule_name, nested));
        }
        return alternatives;
    }

    Sequence parse_sequence(const std::string& rule_name, bool nested) {
        Sequence seq;
        size_t last_start = 0;      // where the item a postfix applies to begins
        uint64_t item_rules = 1;    // rules the item stands for (limits nested repetition)
        bool have_item = false;
        while (!at_end()) {
            const char c = peek();
            const size_t item_pos = pos_;
            if (c == '"') {
                ++pos_;
                last_start = seq.size();
                item_rules = 1;
                have_item = true;
                while (peek() != '"') {
                    if (at_end()) fail("unterminated string literal", item_pos);
                    const uint32_t cp = parse_char();
                    seq.push_back({ElementKind::Chars, add_charset(CharSet{false, false, {{cp, cp}}})});
                }
                ++pos_;
                skip_space(nested);
            } else if (c == '[') {
                ++pos_;
                CharSet cs;
                if (peek() == '^') {
                    ++pos_;
                    cs.negated = true;
                }
                while (peek() != ']') {
                    if (at_end()) fail("unterminated character class", item_pos);
                    const size_t range_pos = pos_;
                    const uint32_t first = parse_char();
                    uint32_t last = first;
                    if (peek() == '-' && peek(1) != ']') {
                        if (pos_ + 1 >= src_.size()) fail("unterminated character class", item_pos);
                        ++pos_;
                        last = parse_char();
                        if (last < first) fail("character range is reversed (end below start)", range_pos);
                    }
                    cs.ranges.push_back({first, last});
                }
                if (cs.ranges.empty()) fail("empty character class", item_pos);
                ++pos_;
                last_start = seq.size();
                item_rules = 1;
                have_item = true;
                seq.push_back({ElementKind::Chars, add_charset(std::move(cs))});
                skip_space(nested);
            } else if (c == '<' || c == '!') {
                fail("token references (<...>, !<...>) are not supported");
            } else if (is_word_char(c)) {
                const std::string name = parse_name();
                last_start = seq.size();
                item_rules = 1;
                have_item = true;
                seq.push_back({ElementKind::Rule, rule_id(name, item_pos)});
                skip_space(nested);
            } else if (c == '(') {
                if (++group_depth_ > kMaxGroupDepth) fail("groups nested more than 256 deep");
                ++pos_;
                skip_space(true);
                const size_t rules_before = rules_.size();
                const uint32_t id = generated_rule(rule_name);
                std::vector<Sequence> alternatives = parse_alternates(rule_name, true);
                rules_[id].alternatives = std::move(alternatives);
                item_rules = std::max<uint64_t>(1, rules_.size() - rules_before);
                last_start = seq.size();
                have_item = true;
                seq.push_back({ElementKind::Rule, id});
                if (peek() != ')') fail("expected ')' to close the group opened at column " +
                                        std::to_string(column_of(item_pos)) + ", found " + found());
                ++pos_;
                --group_depth_;
                skip_space(nested);
            } else if (c == '.') {
                ++pos_;
                last_start = seq.size();
                item_rules = 1;
                have_item = true;
                seq.push_back({ElementKind::Chars, add_charset(CharSet{false, true, {}})});
                skip_space(nested);
            } else if (c == '*' || c == '+' || c == '?') {
                ++pos_;
                skip_space(nested);
                const uint64_t min = c == '+' ? 1 : 0;
                const uint64_t max = c == '?' ? 1 : kUnbounded;
                repeat(seq, have_item, last_start, item_rules, min, max, rule_name, item_pos);
            } else if (c == '{') {
                ++pos_;
                skip_space(nested);
                const uint64_t min = parse_int();
                skip_space(nested);
                uint64_t max = kUnbounded;
                if (peek() == '}') {
                    max = min;
                } else if (peek() == ',') {
                    ++pos_;
                    skip_space(nested);
                    if (is_digit(peek())) {
                        max = parse_int();
                        skip_space(nested);
                    }
                    if (peek() != '}') fail("expected '}' to close the repetition, found " + found());
                } else {
                    fail("expected ',' or '}' in the repetition, found " + found());
                }
                ++pos_;
                skip_space(nested);
                if (min > kMaxRepetition) fail("repetition minimum " + std::to_string(min) + " exceeds 2000", item_pos);
                if (max != kUnbounded && max < min) fail("repetition maximum is below its minimum", item_pos);
                if (max != kUnbounded && max > kMaxRepetition) max = kUnbounded;  // as llama.cpp
                repeat(seq, have_item, last_start, item_rules, min, max, rule_name, item_pos);
            } else {
                break;
            }
        }
        return seq;
    }

    size_t column_of(size_t at) const {
        size_t column = 1;
        for (size_t i = at; i > 0 && src_[i - 1] != '\n'; --i) {
            if ((uint8_t(src_[i - 1]) & 0xC0) != 0x80) ++column;
        }
        return column;
    }

    // S{m,n} -> S x m, then n-m nested optional rules S'(k) ::= S S'(k-1) | ;
    // S{m,}  -> S x m, then S' ::= S S' | .
    void repeat(Sequence& seq, bool have_item, size_t last_start, uint64_t& item_rules, uint64_t min, uint64_t max,
                const std::string& rule_name, size_t at) {
        if (!have_item || last_start == seq.size()) fail("expected an item before '" + std::string(1, src_[at]) + "'", at);
        const bool unbounded = max == kUnbounded;
        uint64_t total = 1;
        if (!unbounded && max > 0) total = max;
        else if (min > 0) total = min;
        if (item_rules * total >= kMaxRepetition) {
            fail("repetition too large: " + std::to_string(item_rules) + " rule(s) repeated " + std::to_string(total) +
                 " times exceeds 2000", at);
        }
        const Sequence item(seq.begin() + ptrdiff_t(last_start), seq.end());
        if (min == 0) {
            seq.resize(last_start);
        } else {
            for (uint64_t i = 1; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
        }
        const uint64_t optional = unbounded ? 1 : max - min;
        uint32_t previous = 0;
        for (uint64_t i = 0; i < optional; ++i) {
            const uint32_t id = generated_rule(rule_name);
            Sequence first = item;
            if (unbounded) first.push_back({ElementKind::Rule, id});
            else if (i > 0) first.push_back({ElementKind::Rule, previous});
            rules_[id].alternatives = {std::move(first), Sequence{}};
            previous = id;
        }
        if (optional > 0) seq.push_back({ElementKind::Rule, previous});
        item_rules *= total;
    }

    // ------------------------------------------------------------ checks

    Grammar finish(std::string_view root_name) {
        for (const DraftRule& r : rules_) {
            if (!r.defined) fail("undefined rule '" + r.name + "'", r.first_use);
        }
        const auto root = ids_.find(std::string(root_name));
        if (root == ids_.end()) throw Error("grammar: no rule named '" + std::string(root_name) + "' (the start rule)");
        check_left_recursion();

        Grammar g;
        g.charsets = std::move(charsets_);
        g.root = root->second;
        g.rules.reserve(rules_.size());
        for (DraftRule& r : rules_) {
            Rule out;
            out.name = r.name;
            for (const Sequence& alt : r.alternatives) {
                out.alternatives.push_back(uint32_t(g.elements.size()));
                g.elements.insert(g.elements.end(), alt.begin(), alt.end());
                g.elements.push_back({ElementKind::End, 0});
            }
            g.rules.push_back(std::move(out));
        }
        return g;
    }

    // A rule that can reach itself before consuming a character would make
    // the matcher expand forever. As llama.cpp, a rule counts as possibly
    // empty when one of its alternatives is written empty.
    void check_left_recursion() {
        const size_t n = rules_.size();
        std::vector<uint8_t> may_be_empty(n, 0), state(n, 0);  // state: 0 new, 1 in progress, 2 done
        for (size_t r = 0; r < n; ++r) {
            for (const Sequence& alt : rules_[r].alternatives) {
                if (alt.empty()) may_be_empty[r] = 1;
            }
        }
        struct Frame {
            uint32_t rule;
            size_t alt = 0, elem = 0;
        };
        for (uint32_t start = 0; start < n; ++start) {
            if (state[start] != 0) continue;
            std::vector<Frame> stack{{start}};
            state[start] = 1;
            while (!stack.empty()) {
                Frame& f = stack.back();
                const DraftRule& rule = rules_[f.rule];
                if (f.alt == rule.alternatives.size()) {
                    state[f.rule] = 2;
                    stack.pop_back();
                    continue;
                }
                const Sequence& alt = rule.alternatives[f.alt];
                // Leftmost elements: a rule reference, then the next while the previous may be empty.
                if (f.elem < alt.size() && alt[f.elem].kind == ElementKind::Rule &&
                    (f.elem == 0 || may_be_empty[alt[f.elem - 1].index])) {
                    const uint32_t callee = alt[f.elem].index;
                    ++f.elem;
                    if (state[callee] == 1) {
                        throw Error("grammar: left recursion: rule '" + rules_[callee].origin +
                                    "' can refer to itself before matching a character");
                    }
                    if (state[callee] == 0) {
                        state[callee] = 1;
                        stack.push_back({callee});
                    }
                } else {
                    ++f.alt;
                    f.elem = 0;
                }
            }
        }
    }
};

}  // namespace

bool CharSet::matches(uint32_t cp) const {
    bool found = any;
    for (const CharRange& r : ranges) found = found || (r.first <= cp && cp <= r.last);
    return found != negated;
}

bool CharSet::may_complete(uint32_t value, int n_remain) const {
    if (n_remain < 0 || (n_remain == 1 && value < 2)) return false;
    uint32_t low = value << (n_remain * 6);
    const uint32_t high = low | ((1u << (n_remain * 6)) - 1);
    if (low == 0) {
        if (n_remain == 2) low = 1u << 11;
        else if (n_remain == 3) low = 1u << 16;
    }
    if (any) return true;
    for (const CharRange& r : ranges) {
        if (r.first <= high && low <= r.last) return !negated;
    }
    return negated;
}

Grammar parse_grammar(std::string_view text, std::string_view root) { return Parser(text).parse(root); }

}  // namespace smolinfer::grammar
