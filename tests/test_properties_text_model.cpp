// The tokenizer/detokenizer properties of test_properties_text.cpp on the
// real SmolLM2 vocabulary ($SMOLINFER_MODEL; label "model"). See
// tests/support/text_property_checks.h for the exact statements.
//
// SmolLM2's vocabulary has no token for 21 of the 256 byte-level symbols:
// the C0 controls 0x04 0x06 0x13 0x14 0x16 0x1D and the bytes 0xC0 0xC1
// 0xF1 0xF2 0xF5..0xFF. Byte fallback (as in llama.cpp) skips a byte that
// has no token, so these bytes are dropped by tokenization:
//   - valid UTF-8 round-trips exactly unless it contains one of those six
//     controls or a code point in U+40000..U+BFFFF (lead byte F1/F2; all
//     unassigned), and then detok(tok(s)) == s without those bytes -- for
//     U+40000..U+BFFFF that leaves the three continuation bytes, so valid
//     input can come back as invalid UTF-8;
//   - arbitrary bytes come back as drop(lenient_normalize(b)).
#include <gtest/gtest.h>

#include "gguf/gguf.h"
#include "runtime/file_bytes.h"
#include "support/paths.h"
#include "support/text_properties.h"
#include "support/text_property_checks.h"

namespace smolinfer {
namespace {

using namespace test::props;

const Vocab& smollm2_vocab() {
    struct Loaded {
        std::shared_ptr<const runtime::FileBytes> bytes = runtime::FileBytes::map(test::model_path());
        gguf::File file = gguf::File::parse(bytes->bytes());
        Vocab vocab = Vocab::from_metadata(file.metadata());
    };
    static const Loaded l;
    return l.vocab;
}

TEST(TextPropertiesSmolLM2, TheMissingBytesAreTheDocumentedOnes) {
    const auto m = missing_bytes(smollm2_vocab());
    std::vector<int> missing;
    for (int b = 0; b < 256; ++b) {
        if (m[size_t(b)]) missing.push_back(b);
    }
    const std::vector<int> documented = {0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, 0xF5,
                                         0xF6, 0xF7, 0xF8, 0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF};
    EXPECT_EQ(missing, documented);
    EXPECT_EQ(control_texts(smollm2_vocab()).size(), 17u);
}

TEST(TextPropertiesSmolLM2, DroppedBytesOnKnownInputs) {
    const text::Tokenizer tok(smollm2_vocab());
    auto round = [&](const std::string& s) { return text::detokenize(smollm2_vocab(), tok.encode(s, false, false), false); };
    EXPECT_EQ(tok.encode("\x04", false, false).size(), 0u);  // no token at all
    EXPECT_EQ(round("a\x04" "b\x1D" "c"), "abc");
    // U+50000 (F1 90 80 80): the lead byte goes, the continuation bytes stay.
    EXPECT_EQ(round("x\xF1\x90\x80\x80y"), "x\x90\x80\x80y");
    EXPECT_FALSE(strict_utf8(round("\xF1\x90\x80\x80")));
    // U+C0000 (F3 lead) and U+100000 (F4) are kept.
    EXPECT_EQ(round("\xF3\x80\x80\x80"), "\xF3\x80\x80\x80");
    EXPECT_EQ(round("\xF4\x80\x80\x80"), "\xF4\x80\x80\x80");
    // An invalid byte becomes U+FFFD, which has its bytes.
    EXPECT_EQ(round("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
}

TEST(TextPropertiesSmolLM2, RoundTripValidUtf8WithoutSpecialParsing) {
    round_trip_plain(smollm2_vocab(), cases(3000), 1000000);
}

TEST(TextPropertiesSmolLM2, RoundTripValidUtf8WithSpecialParsing) {
    round_trip_special(smollm2_vocab(), cases(3000), 1100000);
}

TEST(TextPropertiesSmolLM2, ArbitraryBytesComeBackNormalized) { arbitrary_bytes(smollm2_vocab(), cases(3000), 1200000); }

TEST(TextPropertiesSmolLM2, StreamingTokenizedText) { stream_tokenized(smollm2_vocab(), cases(3000), 1300000); }

TEST(TextPropertiesSmolLM2, StreamingRandomIds) { stream_random_ids(smollm2_vocab(), cases(4000), 1400000); }

}  // namespace
}  // namespace smolinfer
