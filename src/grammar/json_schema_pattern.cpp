#include "grammar/json_schema_pattern.h"

#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/gbnf_repetition.h"

namespace smolinfer::grammar {
namespace {

constexpr int kMaxGroupDepth = 100;

bool is_regex_operator(char c) {
    return std::string_view("|.()[]{}*+?^$").find(c) != std::string_view::npos;
}

// Characters a regular expression escapes that a GBNF literal writes plain.
bool is_escaped_operator(char c) { return std::string_view("^$.[]()|{}*+?").find(c) != std::string_view::npos; }

// Length of a GBNF-compatible escape at pattern[pos] (\t \r \n \\ \" \[ \],
// \xHH, \uHHHH, \UHHHHHHHH), 0 if there is none.
size_t gbnf_escape_length(std::string_view pattern, size_t pos) {
    if (pos + 1 >= pattern.size() || pattern[pos] != '\\') return 0;
    size_t hex_digits = 0;
    switch (pattern[pos + 1]) {
        case 'x': hex_digits = 2; break;
        case 'u': hex_digits = 4; break;
        case 'U': hex_digits = 8; break;
        case 't': case 'r': case 'n': case '\\': case '"': case '[': case ']': return 2;
        default: return 0;
    }
    if (pos + 2 + hex_digits > pattern.size()) return 0;
    for (size_t i = pos + 2; i < pos + 2 + hex_digits; ++i) {
        const char h = pattern[i];
        const bool hex = (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F');
        if (!hex) return 0;
    }
    return 2 + hex_digits;
}

// One element of a sequence: literal text (written quoted, merged with its
// literal neighbours) or GBNF already.
struct Piece {
    std::string text;
    bool literal;
};

std::string as_gbnf(const Piece& piece) { return piece.literal ? '"' + piece.text + '"' : piece.text; }

int parse_count(const std::string& digits) {
    try {
        size_t used = 0;
        const int n = std::stoi(digits, &used);
        if (used != digits.size()) throw PatternError("invalid number in curly brackets");
        return n;
    } catch (const std::logic_error&) {
        throw PatternError("invalid number in curly brackets");
    }
}

class PatternConverter {
public:
    PatternConverter(std::string_view body, const std::string& name, const AddRule& add_rule)
        : body_(body), name_(name), add_rule_(add_rule) {}

    std::string convert() {
        const std::string rule = as_gbnf(sequence());
        if (depth_ != 0) throw PatternError("unbalanced parentheses");
        return rule;
    }

private:
    std::string_view body_;
    const std::string& name_;
    const AddRule& add_rule_;
    size_t pos_ = 0;
    int depth_ = 0;
    // Rule names given to repeated sub-expressions, by their GBNF text.
    std::unordered_map<std::string, std::string> repeated_rules_;

    // Reads up to the end of the pattern or of the current group.
    Piece sequence() {
        std::vector<Piece> seq;
        while (pos_ < body_.size()) {
            const char c = body_[pos_];
            if (c == '.') {
                seq.push_back({add_rule_("dot", R"([^\x0A\x0D])"), false});
                ++pos_;
            } else if (c == '(') {
                ++pos_;
                if (pos_ < body_.size() && body_[pos_] == '?') {
                    if (pos_ + 1 < body_.size() && body_[pos_ + 1] == ':') {
                        pos_ += 2;
                    } else {
                        throw PatternError("unsupported group syntax (lookaround, named group or flags)");
                    }
                }
                if (++depth_ > kMaxGroupDepth) throw PatternError("pattern nesting too deep");
                seq.push_back({"(" + as_gbnf(sequence()) + ")", false});
            } else if (c == ')') {
                ++pos_;
                if (depth_ == 0) throw PatternError("unbalanced parentheses");
                --depth_;
                return join(seq);
            } else if (c == '^' || c == '$') {
                throw PatternError("anchor inside the pattern");
            } else if (c == '[') {
                seq.push_back({char_class(), false});
            } else if (c == '|') {
                seq.push_back({"|", false});
                ++pos_;
            } else if (c == '*' || c == '+' || c == '?') {
                if (seq.empty()) throw PatternError("nothing to repeat");
                seq.back() = {as_gbnf(seq.back()) + c, false};
                ++pos_;
            } else if (c == '{') {
                repeat(seq);
            } else {
                seq.push_back({literal(c), true});
            }
        }
        return join(seq);
    }

    // Consecutive literals become one quoted literal; pieces join with spaces.
    static Piece join(const std::vector<Piece>& seq) {
        std::string out;
        std::string pending;
        auto emit = [&](const std::string& gbnf) {
            if (!out.empty()) out += ' ';
            out += gbnf;
        };
        for (const Piece& piece : seq) {
            if (piece.literal) {
                pending += piece.text;
                continue;
            }
            if (!pending.empty()) {
                emit('"' + pending + '"');
                pending.clear();
            }
            emit(piece.text);
        }
        if (!pending.empty()) emit('"' + pending + '"');
        return {out, false};
    }

    std::string char_class() {
        std::string out = "[";
        ++pos_;
        while (pos_ < body_.size() && body_[pos_] != ']') {
            if (body_[pos_] == '\\') {
                const size_t n = gbnf_escape_length(body_, pos_);
                if (n == 0) {
                    throw PatternError("unsupported escape in character class: " + std::string(body_.substr(pos_, 2)));
                }
                out += body_.substr(pos_, n);
                pos_ += n;
            } else {
                out += body_[pos_++];
            }
        }
        if (pos_ >= body_.size()) throw PatternError("unterminated character class");
        ++pos_;
        return out + "]";
    }

    void repeat(std::vector<Piece>& seq) {
        const size_t open = pos_++;
        while (pos_ < body_.size() && body_[pos_] != '}') ++pos_;
        if (pos_ >= body_.size()) throw PatternError("unterminated curly brackets");
        const std::string inside(body_.substr(open + 1, pos_ - open - 1));
        ++pos_;
        int min = 0;
        int max = std::numeric_limits<int>::max();
        const size_t comma = inside.find(',');
        if (comma == std::string::npos) {
            min = max = parse_count(inside);
        } else {
            if (inside.find(',', comma + 1) != std::string::npos) {
                throw PatternError("wrong number of values in curly brackets");
            }
            const std::string lo = inside.substr(0, comma);
            const std::string hi = inside.substr(comma + 1);
            if (!lo.empty()) min = parse_count(lo);
            if (!hi.empty()) max = parse_count(hi);
        }
        if (seq.empty()) throw PatternError("nothing to repeat");
        Piece& last = seq.back();
        std::string item;
        if (last.literal) {
            item = '"' + last.text + '"';
        } else {
            // A repeated expression gets a rule of its own (one per distinct text).
            std::string& rule = repeated_rules_[last.text];
            if (rule.empty()) rule = add_rule_(name_ + "-" + std::to_string(repeated_rules_.size()), last.text);
            item = rule;
        }
        last = {gbnf_repetition(item, min, max, ""), false};
    }

    // A run of literal characters; a character followed by a quantifier is
    // taken alone so that the quantifier applies to it only.
    std::string literal(char first) {
        std::string out;
        while (pos_ < body_.size()) {
            const char c = body_[pos_];
            if (c == '\\') {
                if (pos_ + 1 == body_.size()) throw PatternError("trailing backslash");
                const char next = body_[pos_ + 1];
                if (is_escaped_operator(next)) {
                    out += next;
                    pos_ += 2;
                } else {
                    const size_t n = gbnf_escape_length(body_, pos_);
                    if (n == 0) throw PatternError("unsupported escape: " + std::string(body_.substr(pos_, 2)));
                    out += body_.substr(pos_, n);
                    pos_ += n;
                }
            } else if (c == '"') {
                out += "\\\"";
                ++pos_;
            } else if (!is_regex_operator(c) &&
                       (pos_ + 1 == body_.size() || out.empty() || body_[pos_ + 1] == '.' ||
                        !is_regex_operator(body_[pos_ + 1]))) {
                out += c;
                ++pos_;
            } else {
                break;
            }
        }
        if (out.empty()) throw PatternError(std::string("unsupported character: ") + first);
        return out;
    }
};

}  // namespace

std::string pattern_to_gbnf(const std::string& pattern, const std::string& name, const AddRule& add_rule) {
    if (pattern.size() < 2 || pattern.front() != '^' || pattern.back() != '$') {
        throw PatternError("not anchored with '^' and '$'");
    }
    PatternConverter converter(std::string_view(pattern).substr(1, pattern.size() - 2), name, add_rule);
    const std::string rule = converter.convert();
    return add_rule(name, "\"\\\"\" (" + rule + ") \"\\\"\"");
}

}  // namespace smolinfer::grammar
