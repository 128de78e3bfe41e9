#include "text/jinja/lexer.h"

#include "text/jinja/errors.h"

namespace smolinfer::text::jinja {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

[[noreturn]] void fail(const std::string& what, size_t at) {
    throw SyntaxError("template syntax: " + what + " at offset " + std::to_string(at));
}

class Lexer {
public:
    explicit Lexer(std::string src) : src_(std::move(src)) {}

    std::vector<Token> run() {
        bool in_tag = false;
        Token::Type closer = Token::Type::CloseExpr;
        while (pos_ < src_.size()) {
            if (!in_tag) {
                text();
                if (pos_ >= src_.size()) break;
                const char kind = src_[pos_ + 1];
                if (kind == '#') {
                    comment();
                    continue;
                }
                tokens_.push_back({kind == '{' ? Token::Type::OpenExpr : Token::Type::OpenStmt, "", pos_});
                closer = kind == '{' ? Token::Type::CloseExpr : Token::Type::CloseStmt;
                pos_ += 2;
                if (pos_ < src_.size() && src_[pos_] == '-') ++pos_;
                in_tag = true;
                depth_ = 0;
                continue;
            }
            while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
            if (pos_ >= src_.size()) fail("unclosed tag", pos_);
            if (closes(closer)) {
                in_tag = false;
                continue;
            }
            inside_token();
        }
        if (in_tag) fail("unclosed tag", pos_);
        tokens_.push_back({Token::Type::End, "", src_.size()});
        return std::move(tokens_);
    }

private:
    bool at(size_t p, char c) const { return p < src_.size() && src_[p] == c; }

    // Text up to the next tag, with the block whitespace rules applied.
    void text() {
        const size_t start = pos_;
        // The tag before this text: "-X}" strips leading whitespace; "%}",
        // "#}" or "-}" drops one leading newline (trim_blocks).
        bool strip_leading = false, drop_newline = false;
        if (start > 3) {
            const char c0 = src_[start - 3], c1 = src_[start - 2], c2 = src_[start - 1];
            strip_leading = c0 == '-' && (c1 == '%' || c1 == '}' || c1 == '#') && c2 == '}';
            drop_newline = (c1 == '#' || c1 == '%' || c1 == '-') && c2 == '}';
        }
        size_t end = start;
        while (pos_ < src_.size() && !(src_[pos_] == '{' && (at(pos_ + 1, '%') || at(pos_ + 1, '{') || at(pos_ + 1, '#')))) {
            end = ++pos_;
        }
        // lstrip_blocks: spaces between a line start and a block or comment tag go.
        if (pos_ < src_.size() && (at(pos_ + 1, '%') || at(pos_ + 1, '#') || at(pos_ + 1, '-'))) {
            for (size_t cur = end; cur > start; --cur) {
                const char c = src_[cur - 1];
                if (cur == 1) {
                    end = 0;
                    break;
                }
                if (c == '\n') {
                    end = cur;
                    break;
                }
                if (!is_space(c)) break;
            }
        }
        std::string t = src_.substr(start, end > start ? end - start : 0);
        if (drop_newline && !t.empty() && t.front() == '\n') t.erase(0, 1);
        if (strip_leading) {
            size_t k = 0;
            while (k < t.size() && is_space(t[k])) ++k;
            t.erase(0, k);
        }
        if (pos_ < src_.size() && at(pos_ + 2, '-')) {
            while (!t.empty() && is_space(t.back())) t.pop_back();
        }
        if (!t.empty()) tokens_.push_back({Token::Type::Text, std::move(t), start});
    }

    void comment() {
        const size_t open = pos_;
        const size_t close = src_.find("#}", pos_ + 2);
        if (close == std::string::npos) fail("unclosed comment", open);
        pos_ = close + 2;
    }

    bool closes(Token::Type closer) {
        const bool dash = src_[pos_] == '-';
        const size_t p = dash ? pos_ + 1 : pos_;
        const bool stmt = at(p, '%') && at(p + 1, '}');
        const bool expr = depth_ == 0 && at(p, '}') && at(p + 1, '}');
        if (!stmt && !expr) return false;
        if ((closer == Token::Type::CloseStmt) != stmt) fail(stmt ? "'%}' closes an expression" : "'}}' closes a statement", pos_);
        tokens_.push_back({closer, "", pos_});
        pos_ = p + 2;
        return true;
    }

    void inside_token() {
        const size_t start = pos_;
        const char c = src_[pos_];
        if (c == '\'' || c == '"') {
            tokens_.push_back({Token::Type::String, string_literal(), start});
            return;
        }
        if (is_digit(c)) {
            while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
            bool is_float = false;
            if (at(pos_, '.') && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1])) {
                is_float = true;
                ++pos_;
                while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
            }
            tokens_.push_back({is_float ? Token::Type::Float : Token::Type::Int, src_.substr(start, pos_ - start), start});
            return;
        }
        if (is_name_start(c)) {
            while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
            tokens_.push_back({Token::Type::Name, src_.substr(start, pos_ - start), start});
            return;
        }
        static const char* const kTwo[] = {"==", "!=", "<=", ">=", "//", "**"};
        for (const char* op : kTwo) {
            if (src_.compare(pos_, 2, op) == 0) {
                tokens_.push_back({Token::Type::Op, op, start});
                pos_ += 2;
                return;
            }
        }
        if (std::string_view("+-*/%()[]{},.:|~=<>").find(c) == std::string_view::npos) {
            fail(std::string("unexpected character '") + c + "'", pos_);
        }
        if (c == '{') ++depth_;
        if (c == '}' && depth_ > 0) --depth_;
        tokens_.push_back({Token::Type::Op, std::string(1, c), start});
        ++pos_;
    }

    std::string string_literal() {
        const char quote = src_[pos_];
        const size_t open = pos_++;
        std::string out;
        while (pos_ < src_.size() && src_[pos_] != quote) {
            char ch = src_[pos_++];
            if (ch == '\\') {
                if (pos_ >= src_.size()) break;
                const char e = src_[pos_++];
                switch (e) {
                    case 'n': ch = '\n'; break;
                    case 't': ch = '\t'; break;
                    case 'r': ch = '\r'; break;
                    case 'b': ch = '\b'; break;
                    case 'f': ch = '\f'; break;
                    case 'v': ch = '\v'; break;
                    case '\\': case '\'': case '"': ch = e; break;
                    default: fail(std::string("unknown escape \\") + e, pos_ - 2);
                }
            }
            out += ch;
        }
        if (pos_ >= src_.size()) fail("unterminated string", open);
        ++pos_;
        return out;
    }

    std::string src_;
    size_t pos_ = 0;
    int depth_ = 0;  // open '{' inside an expression, so '}}' of a dict is not a closer
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
    // As llama.cpp: \r\n and \r become \n, and one trailing newline is dropped.
    std::string src;
    src.reserve(source.size());
    for (size_t k = 0; k < source.size(); ++k) {
        if (source[k] == '\r') {
            src += '\n';
            if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
        } else {
            src += source[k];
        }
    }
    if (!src.empty() && src.back() == '\n') src.pop_back();
    return Lexer(std::move(src)).run();
}

}  // namespace smolinfer::text::jinja
