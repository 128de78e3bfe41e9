#include "text/tool_output.h"

#include <algorithm>
#include <cctype>

namespace smolinfer::text {

namespace {

// Each step matches, cannot match, or runs out of text while it still could
// (llama.cpp's PEG results SUCCESS / FAIL / NEED_MORE).
enum class Match { Ok, Fail, More };

bool space_char(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class OutputParser {
public:
    OutputParser(const ToolSyntax& s, const std::vector<std::string>& names, bool parallel, std::string_view text)
        : s_(s), names_(names), parallel_(parallel), t_(text) {}

    ToolOutput run() {
        size_t p = skip_space(0);
        const std::string delim = s_.call_start.empty() ? "{" : s_.call_start;
        // Content: up to the first place where the marker starts, whole or cut off by the end.
        size_t k = p;
        while (k < t_.size() && !marker_at(k, delim)) ++k;
        out_.content = std::string(t_.substr(p, k - p));
        p = k;
        if (p == t_.size()) return done(ToolOutput::Status::Complete);
        const Match m = s_.call_start.empty() ? bare_calls(p) : marked_calls(p);
        if (m == Match::More) return done(ToolOutput::Status::Incomplete);
        if (m == Match::Fail) return done(ToolOutput::Status::Invalid);
        return done(ToolOutput::Status::Complete);
    }

private:
    ToolOutput done(ToolOutput::Status status) {
        out_.status = status;
        return std::move(out_);
    }

    // `delim` starts at k, or the text ends with a beginning of it.
    bool marker_at(size_t k, const std::string& delim) const {
        const size_t n = std::min(delim.size(), t_.size() - k);
        return t_.compare(k, n, delim, 0, n) == 0;
    }

    size_t skip_space(size_t p) const {
        while (p < t_.size() && space_char(t_[p])) ++p;
        return p;
    }

    Match literal(size_t& p, std::string_view lit) const {
        const size_t n = std::min(lit.size(), t_.size() - p);
        if (t_.compare(p, n, lit.substr(0, n)) != 0) return Match::Fail;
        if (n < lit.size()) return Match::More;
        p += n;
        return Match::Ok;
    }

    // (call_start Space CALLS Space call_end Space)+ then the end.
    Match marked_calls(size_t p) {
        while (p < t_.size()) {
            if (const Match m = literal(p, s_.call_start); m != Match::Ok) return m;
            if (const Match m = call_list(p); m != Match::Ok) return m;
            p = skip_space(p);
            if (const Match m = literal(p, s_.call_end); m != Match::Ok) return m;
            p = skip_space(p);
        }
        return Match::Ok;
    }

    // Llama 3.x: one list of calls, then the end.
    Match bare_calls(size_t p) {
        if (const Match m = call_list(p); m != Match::Ok) return m;
        p = skip_space(p);
        return p == t_.size() ? Match::Ok : Match::Fail;
    }

    // Space CALL (Space "," Space CALL)* when parallel.
    Match call_list(size_t& p) {
        p = skip_space(p);
        if (const Match m = call(p); m != Match::Ok) return m;
        while (parallel_) {
            size_t q = skip_space(p);
            if (q == t_.size()) return Match::More;
            if (t_[q] != ',') break;
            q = skip_space(q + 1);
            if (const Match m = call(q); m != Match::Ok) return m;
            p = q;
        }
        return Match::Ok;
    }

    Match key(size_t& p, const std::string& name) const {
        if (const Match m = literal(p, "\"" + name + "\""); m != Match::Ok) return m;
        p = skip_space(p);
        if (const Match m = literal(p, ":"); m != Match::Ok) return m;
        p = skip_space(p);
        return Match::Ok;
    }

    Match comma(size_t& p) const {
        p = skip_space(p);
        if (const Match m = literal(p, ","); m != Match::Ok) return m;
        p = skip_space(p);
        return Match::Ok;
    }

    // {"name": "<tool>", "arguments": <JSON>}; the call is reported once its
    // name is whole, then its arguments as far as they go.
    Match call(size_t& p) {
        size_t q = p;
        if (const Match m = literal(q, "{"); m != Match::Ok) return m;
        q = skip_space(q);
        if (s_.type_field) {
            size_t r = q;
            Match m = key(r, "type");
            if (m == Match::Ok) m = literal(r, "\"function\"");
            if (m == Match::Ok) m = comma(r);
            if (m == Match::More) return m;
            if (m == Match::Ok) q = r;
        }
        if (const Match m = key(q, s_.name_key); m != Match::Ok) return m;
        // The first tool whose name fits, as llama.cpp's choice over the tools.
        const std::string* name = nullptr;
        Match best = Match::Fail;
        for (const std::string& n : names_) {
            size_t r = q;
            const Match m = literal(r, "\"" + n + "\"");
            if (m == Match::Ok) {
                name = &n;
                q = r;
                break;
            }
            if (m == Match::More) best = Match::More;
        }
        if (!name) return best;
        out_.calls.push_back({"", *name, "{"});
        if (const Match m = comma(q); m != Match::Ok) return m;
        if (const Match m = key(q, s_.args_key); m != Match::Ok) return m;
        const size_t args = q;
        const Match v = value(q);
        std::string text(t_.substr(args, q - args));
        while (!text.empty() && space_char(text.back())) text.pop_back();
        if (!text.empty() && text.front() == '{') out_.calls.back().arguments = text;
        if (v != Match::Ok) return v;
        q = skip_space(q);
        if (const Match m = literal(q, "}"); m != Match::Ok) return m;
        if (out_.calls.back().arguments == "{") out_.calls.back().arguments = "{}";
        ++out_.closed;
        p = q;
        return Match::Ok;
    }

    // One JSON value; on More, p is where the text ran out.
    Match value(size_t& p) const {
        if (p == t_.size()) return Match::More;
        const char c = t_[p];
        if (c == '{' || c == '[') return container(p, c == '{');
        if (c == '"') return string(p);
        if (c == 't') return literal(p, "true");
        if (c == 'f') return literal(p, "false");
        if (c == 'n') return literal(p, "null");
        if (c == '-' || (c >= '0' && c <= '9')) return number(p);
        return Match::Fail;
    }

    Match container(size_t& p, bool object) const {
        const char close = object ? '}' : ']';
        ++p;
        p = skip_space(p);
        if (p == t_.size()) return Match::More;
        if (t_[p] == close) {
            ++p;
            return Match::Ok;
        }
        for (;;) {
            if (object) {
                if (t_[p] != '"') return Match::Fail;
                if (const Match m = string(p); m != Match::Ok) return m;
                p = skip_space(p);
                if (const Match m = literal(p, ":"); m != Match::Ok) return m;
                p = skip_space(p);
            }
            if (const Match m = value(p); m != Match::Ok) return m;
            p = skip_space(p);
            if (p == t_.size()) return Match::More;
            if (t_[p] == close) {
                ++p;
                return Match::Ok;
            }
            if (t_[p] != ',') return Match::Fail;
            p = skip_space(p + 1);
            if (p == t_.size()) return Match::More;
        }
    }

    Match string(size_t& p) const {
        ++p;  // the opening quote
        while (p < t_.size()) {
            const unsigned char c = static_cast<unsigned char>(t_[p]);
            if (c == '"') {
                ++p;
                return Match::Ok;
            }
            if (c < 0x20) return Match::Fail;
            if (c != '\\') {
                ++p;
                continue;
            }
            if (p + 1 == t_.size()) return Match::More;
            const char e = t_[p + 1];
            if (e == 'u') {
                for (size_t k = 0; k < 4; ++k) {
                    if (p + 2 + k == t_.size()) return Match::More;
                    if (!std::isxdigit(static_cast<unsigned char>(t_[p + 2 + k]))) return Match::Fail;
                }
                p += 6;
            } else if (std::string_view("\"\\/bfnrt").find(e) != std::string_view::npos) {
                p += 2;
            } else {
                return Match::Fail;
            }
        }
        return Match::More;
    }

    Match number(size_t& p) const {
        const auto digits = [&](size_t& q) {
            const size_t start = q;
            while (q < t_.size() && t_[q] >= '0' && t_[q] <= '9') ++q;
            return q - start;
        };
        size_t q = p;
        if (t_[q] == '-') ++q;
        if (q == t_.size()) return Match::More;
        if (t_[q] == '0') {
            ++q;
        } else if (digits(q) == 0) {
            return Match::Fail;
        }
        if (q < t_.size() && t_[q] == '.') {
            ++q;
            if (digits(q) == 0) return q == t_.size() ? Match::More : Match::Fail;
        }
        if (q < t_.size() && (t_[q] == 'e' || t_[q] == 'E')) {
            ++q;
            if (q < t_.size() && (t_[q] == '+' || t_[q] == '-')) ++q;
            if (digits(q) == 0) return q == t_.size() ? Match::More : Match::Fail;
        }
        p = q;
        // A number the text ends in may go on.
        return q == t_.size() ? Match::More : Match::Ok;
    }

    const ToolSyntax& s_;
    const std::vector<std::string>& names_;
    bool parallel_;
    std::string_view t_;
    ToolOutput out_;
};

}  // namespace

ToolOutput read_tool_output(const ToolSyntax& syntax, const std::vector<std::string>& names, bool parallel,
                             std::string_view text) {
    return OutputParser(syntax, names, parallel, text).run();
}

}  // namespace smolinfer::text
