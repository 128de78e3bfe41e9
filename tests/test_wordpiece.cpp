// WordPiece (tokenizer.ggml.model = "bert") as llama.cpp's llm_tokenizer_wpm.
//   - WordPieceTables: the code point tables its normalizer reads (classes,
//     lowercase, NFD's first code point), which scripts/gen-unicode-tables.py
//     generates, equal llama.cpp's own src/unicode-data.cpp
//     ($SMOLINFER_LLAMA_SRC) at every code point.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <unordered_set>
#include <vector>

#include "support/files.h"
#include "support/paths.h"
#include "text/unicode.h"

namespace smolinfer::text {
namespace {

// ---------------------------------------------------------------- tables

// The hex numbers of each "{0x..., 0x...}," line of the initializer list
// `name` in llama.cpp's src/unicode-data.cpp.
std::vector<std::vector<uint32_t>> llama_table(const std::string& name) {
    static const std::string source = test::read_file(test::llama_source_path("src/unicode-data.cpp"));
    const size_t begin = source.find(" " + name + " = {");
    if (begin == std::string::npos) throw std::runtime_error("no " + name + " in llama.cpp's src/unicode-data.cpp");
    const size_t end = source.find("};", begin);
    std::vector<std::vector<uint32_t>> rows;
    const std::regex number("0x([0-9A-Fa-f]+)");
    size_t line_start = source.find('\n', begin) + 1;
    while (line_start < end) {
        const size_t line_end = source.find('\n', line_start);
        const std::string line = source.substr(line_start, line_end - line_start);
        std::vector<uint32_t> row;
        for (std::sregex_iterator it(line.begin(), line.end(), number), last; it != last; ++it) {
            row.push_back(uint32_t(std::stoul((*it)[1].str(), nullptr, 16)));
        }
        if (!row.empty()) rows.push_back(std::move(row));
        line_start = line_end + 1;
    }
    return rows;
}

std::string hex(uint32_t c) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", unsigned(c));
    return buf;
}

constexpr uint32_t kCodepoints = 0x110000;

TEST(WordPieceTables, LowercaseIsLlamaCpps) {
    std::map<uint32_t, uint32_t> want;
    for (const auto& row : llama_table("unicode_map_lowercase")) want[row.at(0)] = row.at(1);
    ASSERT_GT(want.size(), 1000u);
    int wrong = 0;
    for (uint32_t c = 0; c < kCodepoints; ++c) {
        const auto it = want.find(c);
        const uint32_t expected = it == want.end() ? c : it->second;
        if (simple_lowercase(c) != expected && wrong++ < 10) {
            ADD_FAILURE() << hex(c) << ": ours " << hex(simple_lowercase(c)) << ", llama.cpp's " << hex(expected);
        }
    }
    EXPECT_EQ(wrong, 0);
}

TEST(WordPieceTables, NfdFirstIsLlamaCpps) {
    // llama.cpp's rows are {first, last, nfd}; code points in none map to themselves.
    std::vector<uint32_t> want(kCodepoints);
    for (uint32_t c = 0; c < kCodepoints; ++c) want[c] = c;
    const auto rows = llama_table("unicode_ranges_nfd");
    ASSERT_GT(rows.size(), 1000u);
    for (const auto& row : rows) {
        for (uint32_t c = row.at(0); c <= row.at(1); ++c) want[c] = row.at(2);
    }
    int wrong = 0;
    for (uint32_t c = 0; c < kCodepoints; ++c) {
        if (nfd_first(c) != want[c] && wrong++ < 10) {
            ADD_FAILURE() << hex(c) << ": ours " << hex(nfd_first(c)) << ", llama.cpp's " << hex(want[c]);
        }
    }
    EXPECT_EQ(wrong, 0);
}

// The classes WordPiece tests (control, mark, punctuation, symbol,
// whitespace) and the rest of the flags.
TEST(WordPieceTables, CodepointClassesAreLlamaCpps) {
    std::vector<uint16_t> want(kCodepoints, CodepointFlags::Undefined);
    const auto ranges = llama_table("unicode_ranges_flags");  // {first, flags}, up to {0x110000, 0}
    ASSERT_GT(ranges.size(), 1000u);
    for (size_t i = 0; i + 1 < ranges.size(); ++i) {
        for (uint32_t c = ranges[i].at(0); c < ranges[i + 1].at(0); ++c) want[c] = uint16_t(ranges[i].at(1));
    }
    for (const auto& row : llama_table("unicode_set_whitespace")) want.at(row.at(0)) |= CodepointFlags::Whitespace;
    int wrong = 0;
    for (uint32_t c = 0; c < kCodepoints; ++c) {
        if (codepoint_flags(c).bits != want[c] && wrong++ < 10) {
            ADD_FAILURE() << hex(c) << ": ours " << codepoint_flags(c).bits << ", llama.cpp's " << want[c];
        }
    }
    EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace smolinfer::text
