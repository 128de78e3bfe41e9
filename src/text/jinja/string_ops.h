// Python's string methods on tagged strings: every piece of the result keeps
// the tag of the bytes it came from.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "text/jinja/tagged_string.h"

namespace smolinfer::text::jinja {

// The longest string an operation may build: templates that grow text
// without bound fail (RenderError) instead of exhausting memory.
constexpr size_t kMaxStringBytes = size_t(1) << 26;
// Throws RenderError when `size` exceeds kMaxStringBytes.
void check_string_size(size_t size);

// chars: which characters to remove (nullopt: whitespace).
TaggedString strip(const TaggedString& s, const std::optional<std::string>& chars, bool left, bool right);
// sep nullopt: split on runs of whitespace, dropping empty parts. maxsplit < 0: no limit.
std::vector<TaggedString> split(const TaggedString& s, const std::optional<std::string>& sep, long maxsplit);
// Occurrences of `from` become `to` (count < 0: all).
TaggedString replace(const TaggedString& s, const std::string& from, const TaggedString& to, long count);
TaggedString upper(const TaggedString& s);
TaggedString lower(const TaggedString& s);
TaggedString title(const TaggedString& s);
TaggedString capitalize(const TaggedString& s);

// UTF-8 code points: Python counts and indexes strings by them.
size_t codepoint_count(const std::string& s);
// Byte offset of code point `index` (index <= count).
size_t codepoint_offset(const std::string& s, size_t index);

}  // namespace smolinfer::text::jinja
