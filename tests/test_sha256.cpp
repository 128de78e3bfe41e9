// SHA-256 against the FIPS 180-4 examples, in any chunking, and against
// the model's recorded digest.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "runtime/sha256.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

std::string digest(const std::string& s, size_t chunk = 1 << 20) {
    runtime::Sha256 h;
    for (size_t i = 0; i < s.size(); i += chunk) {
        h.update({reinterpret_cast<const uint8_t*>(s.data()) + i, std::min(chunk, s.size() - i)});
    }
    return h.finish_hex();
}

TEST(Sha256, StandardVectors) {
    EXPECT_EQ(digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(digest(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, ChunkingDoesNotMatter) {
    std::string s;
    for (int i = 0; i < 1000; ++i) s += char(i * 7 + 3);
    const std::string whole = digest(s);
    for (const size_t chunk : {size_t(1), size_t(3), size_t(55), size_t(56), size_t(63), size_t(64), size_t(65), size_t(999)}) {
        EXPECT_EQ(digest(s, chunk), whole) << chunk;
    }
}

TEST(Sha256, TheModelMatchesItsRecordedDigest) {
    std::ifstream in(test::model_path(), std::ios::binary);
    runtime::Sha256 h;
    std::vector<char> buf(1 << 20);
    while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0) {
        h.update({reinterpret_cast<const uint8_t*>(buf.data()), size_t(in.gcount())});
    }
    EXPECT_EQ(h.finish_hex(), "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53");
}

}  // namespace
}  // namespace smolinfer
