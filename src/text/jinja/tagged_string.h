// A string that remembers which of its bytes came from message content
// (plain) and which from the template (markup). Concatenation, slicing and
// the string filters keep the tags, so the rendered prompt can tokenize
// template markers as control tokens and message text never.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace smolinfer::text::jinja {

struct Segment {
    std::string text;
    bool plain = false;  // from message content: never parsed for special tokens
};

class TaggedString {
public:
    TaggedString() = default;
    TaggedString(std::string text, bool plain = false);  // NOLINT: literals convert implicitly

    const std::vector<Segment>& segments() const { return segments_; }
    std::string str() const;
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    bool any_plain() const;

    void append(const TaggedString& other);
    // Bytes [begin, end) with their tags.
    TaggedString substr(size_t begin, size_t end) const;
    // Each byte mapped through f, tags kept (ASCII case changes).
    template <class F>
    TaggedString map_bytes(F f) const {
        TaggedString out = *this;
        for (Segment& s : out.segments_) {
            for (char& c : s.text) c = f(c);
        }
        return out;
    }

private:
    void push(Segment s);
    std::vector<Segment> segments_;
    size_t size_ = 0;
};

}  // namespace smolinfer::text::jinja
