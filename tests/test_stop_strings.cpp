// Stop strings over streamed text (src/text/stop_strings.h). The truth is
// plain: the whole text cut before the occurrence of a stop string that
// ends first (of two ending at the same byte, the one starting first): the
// one a reader of the stream meets first. Whatever way the text is split into pieces, the text released so
// far must always be a prefix of that (so no part of a stop string is ever
// released), and at the end it must be all of it.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "smolinfer/error.h"
#include "text/stop_strings.h"

namespace smolinfer::text {
namespace {

std::string expected_cut(const std::string& text, const std::vector<std::string>& stops, bool& found) {
    size_t first = std::string::npos, first_end = std::string::npos;
    for (const auto& s : stops) {
        const size_t at = text.find(s);
        if (at == std::string::npos) continue;
        if (at + s.size() < first_end || (at + s.size() == first_end && at < first)) {
            first = at;
            first_end = at + s.size();
        }
    }
    found = first != std::string::npos;
    return found ? text.substr(0, first) : text;
}

// Streams `text` split at `cuts` (sorted offsets) and checks the invariants.
void check_split(const std::string& text, const std::vector<std::string>& stops, const std::vector<size_t>& cuts) {
    bool found = false;
    const std::string want = expected_cut(text, stops, found);
    StopStrings ss(stops);
    std::string released;
    bool stopped = false;
    size_t from = 0;
    std::vector<size_t> ends = cuts;
    ends.push_back(text.size());
    for (const size_t to : ends) {
        const auto r = ss.push(std::string_view(text).substr(from, to - from));
        released += r.text;
        from = to;
        ASSERT_EQ(want.compare(0, released.size(), released), 0)
            << "released '" << released << "', not a prefix of '" << want << "' (text '" << text << "')";
        if (r.stopped) {
            stopped = true;
            break;
        }
    }
    if (!stopped) released += ss.finish();
    EXPECT_EQ(stopped, found) << "text '" << text << "'";
    EXPECT_EQ(released, want) << "text '" << text << "'";
}

TEST(StopStrings, HandPickedCases) {
    StopStrings s({"###", "END"});
    auto r = s.push("Hello #");
    EXPECT_EQ(r.text, "Hello ");  // "#" could start "###"
    EXPECT_FALSE(r.stopped);
    r = s.push("# world");  // "## " cannot: released
    EXPECT_EQ(r.text, "## world");
    r = s.push(" EN");
    EXPECT_EQ(r.text, " ");
    r = s.push("D and more");
    EXPECT_EQ(r.text, "");
    EXPECT_TRUE(r.stopped);

    StopStrings t({"ab"});
    EXPECT_EQ(t.push("xa").text, "x");
    EXPECT_EQ(t.push("a").text, "a");  // "aa": the first a is free, the second held
    EXPECT_EQ(t.finish(), "a");         // the stream ended: it was not a stop string
}

TEST(StopStrings, TheFirstCompletedWinsWhateverTheSplit) {
    // "lo w" ends before "world" does.
    StopStrings s({"world", "lo w"});
    auto r = s.push("hello world");
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "hel");
    // "b" ends before "aba" (which starts first): in one piece or two, "ca".
    StopStrings t({"aba", "b"});
    r = t.push("cabab");
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "ca");
    StopStrings u({"aba", "b"});
    EXPECT_EQ(u.push("ca").text, "c");
    r = u.push("bab");
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "a");
    // Ending together: the longer one, which starts first.
    StopStrings v({"b", "ab"});
    r = v.push("xab");
    EXPECT_EQ(r.text, "x");
}

TEST(StopStrings, NoStopStringsPassesEverything) {
    StopStrings s({});
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(s.push("abc").text, "abc");
    EXPECT_EQ(s.finish(), "");
}

TEST(StopStrings, EmptyStopStringIsAnError) { EXPECT_THROW(StopStrings({"a", ""}), Error); }

TEST(StopStrings, EverySplitOfShortTexts) {
    // All 2^(n-1) ways to split each text into pieces.
    const std::vector<std::string> stops = {"aab", "ba", "xyzx"};
    const std::vector<std::string> texts = {"aaab", "abba", "xyzyxyzx", "aabaab", "cxyzaab", "aaaaaa", "bxyzxa", "ab"};
    for (const auto& text : texts) {
        const size_t n = text.size();
        for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
            std::vector<size_t> cuts;
            for (size_t i = 0; i + 1 < n; ++i) {
                if (mask & (1u << i)) cuts.push_back(i + 1);
            }
            check_split(text, stops, cuts);
        }
    }
}

TEST(StopStrings, RandomTextsAndSplits) {
    std::mt19937 g(20250611);
    for (int i = 0; i < 3000; ++i) {
        std::uniform_int_distribution<int> letter(0, 2), len(1, 5), count(1, 4), tlen(0, 40);
        auto word = [&](int n) {
            std::string w;
            for (int k = 0; k < n; ++k) w += char('a' + letter(g));
            return w;
        };
        std::vector<std::string> stops;
        for (int k = count(g); k > 0; --k) stops.push_back(word(len(g)));
        const std::string text = word(tlen(g));
        std::vector<size_t> cuts;
        for (size_t at = 0; at < text.size(); at += size_t(len(g))) {
            if (at > 0) cuts.push_back(at);
        }
        check_split(text, stops, cuts);
    }
}

TEST(StopStrings, MultiByteCharactersAreNeverCut) {
    // "é" is c3 a9; a stop string starting with it holds back whole characters.
    StopStrings s({"été"});
    EXPECT_EQ(s.push("un é").text, "un ");
    EXPECT_EQ(s.push("t").text, "");
    const auto r = s.push("é!");
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "");
}

}  // namespace
}  // namespace smolinfer::text
