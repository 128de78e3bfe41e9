#include "text/jinja/string_ops.h"

#include "text/jinja/errors.h"

namespace smolinfer::text::jinja {

namespace {

constexpr const char* kWhitespace = " \t\n\r\v\f";

bool is_ascii_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
char to_upper(char c) { return is_ascii_lower(c) ? char(c - 'a' + 'A') : c; }
char to_lower(char c) { return is_ascii_upper(c) ? char(c - 'A' + 'a') : c; }

}  // namespace

void check_string_size(size_t size) {
    if (size > kMaxStringBytes) throw RenderError("a string grew beyond " + std::to_string(kMaxStringBytes) + " bytes");
}

TaggedString strip(const TaggedString& s, const std::optional<std::string>& chars, bool left, bool right) {
    const std::string text = s.str();
    const std::string set = chars ? *chars : std::string(kWhitespace);
    size_t b = 0, e = text.size();
    if (left) {
        while (b < e && set.find(text[b]) != std::string::npos) ++b;
    }
    if (right) {
        while (e > b && set.find(text[e - 1]) != std::string::npos) --e;
    }
    return s.substr(b, e);
}

std::vector<TaggedString> split(const TaggedString& s, const std::optional<std::string>& sep, long maxsplit) {
    const std::string text = s.str();
    std::vector<TaggedString> out;
    if (!sep) {
        const std::string ws = kWhitespace;
        size_t k = 0;
        while (true) {
            while (k < text.size() && ws.find(text[k]) != std::string::npos) ++k;
            if (k >= text.size()) break;
            if (maxsplit >= 0 && long(out.size()) == maxsplit) {
                size_t e = text.size();
                while (e > k && ws.find(text[e - 1]) != std::string::npos) --e;
                out.push_back(s.substr(k, e));
                break;
            }
            size_t e = k;
            while (e < text.size() && ws.find(text[e]) == std::string::npos) ++e;
            out.push_back(s.substr(k, e));
            k = e;
        }
        return out;
    }
    size_t start = 0;
    while (true) {
        const size_t at = (maxsplit >= 0 && long(out.size()) == maxsplit) ? std::string::npos : text.find(*sep, start);
        if (at == std::string::npos) {
            out.push_back(s.substr(start, text.size()));
            return out;
        }
        out.push_back(s.substr(start, at));
        start = at + sep->size();
    }
}

TaggedString replace(const TaggedString& s, const std::string& from, const TaggedString& to, long count) {
    const std::string text = s.str();
    TaggedString out;
    size_t start = 0;
    long done = 0;
    if (from.empty()) {
        // Python inserts `to` between every character (and at both ends).
        for (size_t k = 0; k <= text.size(); ++k) {
            if (count < 0 || done < count) {
                out.append(to);
                check_string_size(out.size());
                ++done;
            }
            if (k < text.size()) out.append(s.substr(k, k + 1));
        }
        return out;
    }
    while (count < 0 || done < count) {
        const size_t at = text.find(from, start);
        if (at == std::string::npos) break;
        out.append(s.substr(start, at));
        out.append(to);
        check_string_size(out.size());
        start = at + from.size();
        ++done;
    }
    out.append(s.substr(start, text.size()));
    return out;
}

TaggedString upper(const TaggedString& s) { return s.map_bytes(to_upper); }
TaggedString lower(const TaggedString& s) { return s.map_bytes(to_lower); }

TaggedString title(const TaggedString& s) {
    bool in_word = false;
    return s.map_bytes([&](char c) {
        const bool letter = is_ascii_lower(c) || is_ascii_upper(c);
        const char r = letter ? (in_word ? to_lower(c) : to_upper(c)) : c;
        in_word = letter;
        return r;
    });
}

TaggedString capitalize(const TaggedString& s) {
    bool first = true;
    return s.map_bytes([&](char c) {
        const char r = first ? to_upper(c) : to_lower(c);
        first = false;
        return r;
    });
}

size_t codepoint_count(const std::string& s) {
    size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

size_t codepoint_offset(const std::string& s, size_t index) {
    size_t n = 0;
    for (size_t k = 0; k < s.size(); ++k) {
        if ((static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) continue;
        if (n == index) return k;
        ++n;
    }
    return s.size();
}

}  // namespace smolinfer::text::jinja
