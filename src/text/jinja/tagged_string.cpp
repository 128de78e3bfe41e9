#include "text/jinja/tagged_string.h"

#include <algorithm>

namespace smolinfer::text::jinja {

TaggedString::TaggedString(std::string text, bool plain) {
    // An empty plain string is kept: it still marks where message content went.
    if (!text.empty() || plain) push(Segment{std::move(text), plain});
}

std::string TaggedString::str() const {
    std::string out;
    out.reserve(size_);
    for (const Segment& s : segments_) out += s.text;
    return out;
}

bool TaggedString::any_plain() const {
    return std::any_of(segments_.begin(), segments_.end(), [](const Segment& s) { return s.plain; });
}

void TaggedString::push(Segment s) {
    size_ += s.text.size();
    // Markup runs merge; plain runs stay one segment per source string so a
    // message's content remains recognizable as one piece.
    if (!s.plain && !segments_.empty() && !segments_.back().plain) {
        segments_.back().text += s.text;
        return;
    }
    if (!s.plain && s.text.empty()) return;
    segments_.push_back(std::move(s));
}

void TaggedString::append(const TaggedString& other) {
    for (const Segment& s : other.segments_) push(s);
}

TaggedString TaggedString::substr(size_t begin, size_t end) const {
    TaggedString out;
    size_t at = 0;
    for (const Segment& s : segments_) {
        const size_t s_begin = at, s_end = at + s.text.size();
        at = s_end;
        const size_t b = std::max(begin, s_begin), e = std::min(end, s_end);
        if (b < e) {
            out.push(Segment{s.text.substr(b - s_begin, e - b), s.plain});
        } else if (s.plain && s.text.empty() && begin <= s_begin && s_begin < end) {
            out.push(s);
        }
    }
    return out;
}

}  // namespace smolinfer::text::jinja
