// gguf::StreamWriter (header first, then tensor data in any number of
// pieces) and gguf::AtomicFileSink (temp name, rename on commit, nothing
// left behind on failure, every write checked).
//
// Disk full is tested two ways: an injected write() that fails with ENOSPC
// after N bytes (always), and a real 256 KB tmpfs (only where mounting is
// allowed, e.g. as root; skipped otherwise).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf/gguf.h"
#include "gguf/gguf_stream_writer.h"
#include "smolinfer/error.h"
#include "support/crafted_gguf.h"
#include "support/small_tmpfs.h"
#include "support/tiny_model.h"
#include "support/files.h"

namespace smolinfer {
namespace {

using test::fresh_dir;
using test::listing;
using test::slurp;

using namespace test::crafted;
using gguf::ValueType;

// Copies a parsed file into a StreamWriter: every key via add_value, every tensor declared.
gguf::StreamWriter copy_of(const gguf::File& f) {
    gguf::StreamWriter w;
    for (const std::string& k : f.metadata().keys()) w.add_value(k, *f.metadata().find(k));
    for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type(), std::span<const uint64_t>(t.ne.data(), size_t(t.n_dims)));
    return w;
}

// Writes the header, then every tensor's bytes in pieces of `piece` bytes.
std::vector<uint8_t> stream(const gguf::File& f, size_t piece) {
    gguf::StreamWriter w = copy_of(f);
    gguf::MemorySink sink;
    w.write_header(sink);
    EXPECT_EQ(sink.bytes.size(), w.header_bytes());
    for (const auto& t : f.tensors()) {
        for (uint64_t at = 0; at < t.n_bytes; at += piece) {
            w.write_data(sink, {t.data + at, size_t(std::min<uint64_t>(piece, t.n_bytes - at))});
        }
    }
    w.finish(sink);
    EXPECT_EQ(sink.bytes.size(), w.total_bytes());
    return sink.bytes;
}




#define EXPECT_HAS(haystack, needle) \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

// ------------------------------------------------------------------ StreamWriter

// Streaming the tiny model in any piece size gives exactly the bytes the
// in-memory Writer made (same layout, v3, padding after every tensor).
TEST(StreamWriter, SameBytesAsTheInMemoryWriter) {
    const std::vector<uint8_t> original = test::tiny_llama();
    const gguf::File f = gguf::File::parse(original);
    for (const size_t piece : {size_t(1) << 30, size_t(1000), size_t(7), size_t(1)}) {
        EXPECT_EQ(stream(f, piece), original) << "piece " << piece;
    }
}

// Every metadata value type survives add_value bit for bit, arrays included.
TEST(StreamWriter, EveryValueTypeRoundTrips) {
    Gguf g;
    g.kv("u8", enc_u8(200)).kv("i8", enc_i8(-100)).kv("u16", enc_u16(65000)).kv("i16", enc_i16(-32000));
    g.kv("u32", enc_u32(4000000000u)).kv("i32", enc_i32(-2000000000)).kv("f32", enc_f32(-1.5e-7f));
    g.kv("bool", enc_bool(true)).kv("u64", enc_u64(uint64_t(1) << 63)).kv("i64", enc_i64(-(int64_t(1) << 62)));
    g.kv("f64", enc_f64(3.141592653589793)).kv("nan", enc_f32(std::numeric_limits<float>::quiet_NaN()));
    g.kv("str", enc_string("héllo\nworld")).kv("empty", enc_string(""));
    g.kv("strs", enc_string_array({"a", "", "ccc"}));
    g.kv("i32s", enc_array(ValueType::I32, std::vector<int32_t>{1, -2, 3}));
    g.kv("f64s", enc_array(ValueType::F64, std::vector<double>{0.5, -0.25}));
    g.kv("bools", enc_array(ValueType::Bool, std::vector<uint8_t>{1, 0, 1}));
    g.kv("none", enc_array(ValueType::U16, std::vector<uint16_t>{}));
    g.tensor("w", uint32_t(quant::Type::F32), {8, 2}, Bytes(64, 7));
    const Bytes original = g.bytes();
    const gguf::File f = gguf::File::parse(original);
    const auto b = stream(f, 5);
    // The crafted file does not pad its last tensor; ours does.
    ASSERT_EQ(b.size(), Gguf::align_up(original.size(), 32));
    EXPECT_TRUE(std::equal(original.begin(), original.end(), b.begin()));
}

// The typed adds of the shared MetadataEncoder write what the crafted
// (independent) encoder writes, whichever writer uses them.
TEST(MetadataEncoder, TypedAddsEncodeAsTheCraftedFile) {
    Gguf g;
    g.kv("u8", enc_u8(200)).kv("i8", enc_i8(-100)).kv("u16", enc_u16(65000)).kv("i16", enc_i16(-32000));
    g.kv("u32", enc_u32(4000000000u)).kv("i32", enc_i32(-2000000000)).kv("f32", enc_f32(-1.5e-7f));
    g.kv("bool", enc_bool(true)).kv("u64", enc_u64(uint64_t(1) << 63)).kv("i64", enc_i64(-(int64_t(1) << 62)));
    g.kv("f64", enc_f64(3.141592653589793)).kv("str", enc_string("h\xc3\xa9llo"));
    g.kv("strs", enc_string_array({"a", "", "ccc"}));
    g.kv("i32s", enc_array(ValueType::I32, std::vector<int32_t>{1, -2, 3}));
    g.kv("u32s", enc_array(ValueType::U32, std::vector<uint32_t>{7, 4000000000u}));
    g.kv("f32s", enc_array(ValueType::F32, std::vector<float>{0.5f, -0.25f}));
    g.kv("bools", enc_array(ValueType::Bool, std::vector<uint8_t>{1, 0, 1}));
    g.tensor("w", uint32_t(quant::Type::F32), {8, 2}, Bytes(64, 7));
    const Bytes crafted = g.bytes();

    gguf::Writer w;
    w.add_u8("u8", 200);
    w.add_i8("i8", -100);
    w.add_u16("u16", 65000);
    w.add_i16("i16", -32000);
    w.add_u32("u32", 4000000000u);
    w.add_i32("i32", -2000000000);
    w.add_f32("f32", -1.5e-7f);
    w.add_bool("bool", true);
    w.add_u64("u64", uint64_t(1) << 63);
    w.add_i64("i64", -(int64_t(1) << 62));
    w.add_f64("f64", 3.141592653589793);
    w.add_string("str", "h\xc3\xa9llo");
    w.add_string_array("strs", {"a", "", "ccc"});
    w.add_i32_array("i32s", {1, -2, 3});
    w.add_u32_array("u32s", {7, 4000000000u});
    w.add_f32_array("f32s", {0.5f, -0.25f});
    w.add_bool_array("bools", {true, false, true});
    w.add_tensor("w", uint32_t(quant::Type::F32), {8, 2}, Bytes(64, 7));
    const Bytes written = w.to_bytes();
    ASSERT_EQ(written.size(), Gguf::align_up(crafted.size(), 32));  // ours pads the last tensor
    EXPECT_TRUE(std::equal(crafted.begin(), crafted.end(), written.begin()));

    EXPECT_THROW(w.add_u16("u16", 1), Error);  // a key twice
    w.set_u16("u8", 9);                         // replaced: removed, appended last
    const gguf::File f = gguf::File::parse(w.to_bytes());
    EXPECT_EQ(f.metadata().keys().back(), "u8");
    EXPECT_EQ(f.metadata().get_uint("u8"), 9u);
}

TEST(StreamWriter, KeepsTheAlignment) {
    std::vector<uint8_t> bytes;
    {
        gguf::Writer w;
        w.set_alignment(128);
        w.add_string("general.architecture", "llama");
        w.add_tensor("a", uint32_t(quant::Type::F32), {3}, std::vector<uint8_t>(12, 1));
        w.add_tensor("b", uint32_t(quant::Type::Q8_0), {32, 2}, std::vector<uint8_t>(68, 2));
        bytes = w.to_bytes();
    }
    const gguf::File f = gguf::File::parse(bytes);
    ASSERT_EQ(f.alignment(), 128u);
    const auto out = stream(f, 10);
    EXPECT_EQ(out, bytes);
    const gguf::File g = gguf::File::parse(out);
    EXPECT_EQ(g.alignment(), 128u);
    for (const auto& t : g.tensors()) EXPECT_EQ(t.file_offset % 128, 0u) << t.name;
}

TEST(StreamWriter, MisuseIsAnError) {
    auto two = [] {
        gguf::StreamWriter w;
        w.add_u32("k", 1);
        const uint64_t d[] = {32, 2};
        w.add_tensor("t", quant::Type::Q8_0, d);
        return w;
    };
    gguf::MemorySink sink;
    {
        gguf::StreamWriter w = two();
        EXPECT_THROW(w.add_u32("k", 2), Error);  // duplicate key
        w.set_u32("k", 3);                        // replace: removed, appended
        const uint64_t bad[] = {48, 2};
        EXPECT_THROW(w.add_tensor("u", quant::Type::Q8_0, bad), Error);  // 48 is not a multiple of 32
        const uint64_t d[] = {32};
        EXPECT_THROW(w.add_tensor("t", quant::Type::Q8_0, d), Error);  // duplicate tensor
        EXPECT_THROW(w.write_data(sink, std::vector<uint8_t>(4)), Error);  // data before the header
        w.write_header(sink);
        EXPECT_THROW(w.add_u32("late", 1), Error);
        w.write_data(sink, std::vector<uint8_t>(60, 1));
        EXPECT_EQ(w.current_tensor(), 0u);
        try {
            w.finish(sink);
            ADD_FAILURE() << "finish accepted a short tensor";
        } catch (const Error& e) {
            EXPECT_HAS(e.what(), "'t' got 60 of its 68 bytes");
        }
        w.write_data(sink, std::vector<uint8_t>(8, 1));
        EXPECT_EQ(w.current_tensor(), 1u);
        EXPECT_THROW(w.write_data(sink, std::vector<uint8_t>(1)), Error);  // past the last tensor
        w.finish(sink);
    }
    {
        gguf::StreamWriter w;
        w.add_string("general.alignment", "no");
        EXPECT_THROW(w.write_header(sink), Error);
    }
}

// ------------------------------------------------------------------ AtomicFileSink

TEST(AtomicFileSink, CommitRenamesAndLeavesNoTemporary) {
    const std::string dir = fresh_dir("sink-commit");
    const std::string path = dir + "/out.gguf";
    {
        gguf::AtomicFileSink s(path);
        EXPECT_EQ(s.temp_path(), path + ".tmp-" + std::to_string(::getpid()));
        EXPECT_TRUE(std::filesystem::exists(s.temp_path()));
        EXPECT_FALSE(std::filesystem::exists(path));
        const std::vector<uint8_t> data(3 << 20, 0x5a);  // more than the sink's buffer
        s.write(data.data(), data.size());
        s.write(data.data(), 5);
        EXPECT_EQ(s.bytes_written(), data.size() + 5);
        s.commit();
    }
    EXPECT_EQ(std::filesystem::file_size(path), (3u << 20) + 5);
    EXPECT_EQ(listing(dir), "out.gguf ");
    std::filesystem::remove_all(dir);
}

TEST(AtomicFileSink, WithoutCommitNothingIsLeftAndTheOldFileStays) {
    const std::string dir = fresh_dir("sink-abandon");
    const std::string path = dir + "/out.gguf";
    std::ofstream(path) << "old";
    {
        gguf::AtomicFileSink s(path);
        const std::vector<uint8_t> data(2 << 20, 1);
        s.write(data.data(), data.size());
    }
    EXPECT_EQ(slurp(path), "old");
    EXPECT_EQ(listing(dir), "out.gguf ");
    std::filesystem::remove_all(dir);
}

// ENOSPC from write() after N bytes (a partial write first): one clear Error
// naming the file; no temporary file; the old file untouched.
TEST(AtomicFileSink, InjectedDiskFull) {
    const std::string dir = fresh_dir("sink-enospc");
    const std::string path = dir + "/out.gguf";
    std::ofstream(path) << "old";
    for (const size_t limit : {size_t(0), size_t(1000), size_t(3) << 20}) {
        SCOPED_TRACE(limit);
        size_t taken = 0;
        auto full_after = [&](int fd, const void* p, size_t n) -> ssize_t {
            if (taken >= limit) {
                errno = ENOSPC;
                return -1;
            }
            const size_t k = std::min(n, limit - taken);
            const ssize_t r = ::write(fd, p, k);
            if (r > 0) taken += size_t(r);
            return r;
        };
        try {
            gguf::AtomicFileSink s(path, full_after);
            const std::vector<uint8_t> data(5 << 20, 1);
            s.write(data.data(), data.size());
            s.commit();
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            EXPECT_HAS(e.what(), "cannot write '" + path + "'");
            EXPECT_HAS(e.what(), std::strerror(ENOSPC));
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
        }
        EXPECT_EQ(slurp(path), "old");
        EXPECT_EQ(listing(dir), "out.gguf ");
    }
    std::filesystem::remove_all(dir);
}

TEST(AtomicFileSink, DirectoryThatDoesNotExist) {
    try {
        gguf::AtomicFileSink s("/nonexistent-smolinfer-dir/out.gguf");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_HAS(e.what(), "cannot write '/nonexistent-smolinfer-dir/out.gguf'");
        EXPECT_HAS(e.what(), std::strerror(ENOENT));
    }
}

// A real full file system: a 256 KB tmpfs (needs root; skipped elsewhere,
// where InjectedDiskFull covers the same path).
TEST(AtomicFileSink, RealDiskFullOnTmpfs) {
    test::SmallTmpfs fs("256k");
    if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (not root?)";
    const std::string path = fs.dir() + "/out.gguf";
    try {
        gguf::AtomicFileSink s(path);
        const std::vector<uint8_t> data(4 << 20, 1);
        s.write(data.data(), data.size());
        s.commit();
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_HAS(e.what(), "cannot write '" + path + "'");
        EXPECT_HAS(e.what(), std::strerror(ENOSPC));
    }
    EXPECT_EQ(fs.listing(), "");
}

TEST(AtomicFileSink, ReadOnlyFileSystem) {
    test::SmallTmpfs fs("64k", /*read_only=*/true);
    if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (not root?)";
    try {
        gguf::AtomicFileSink s(fs.dir() + "/out.gguf");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_HAS(e.what(), "cannot write '" + fs.dir() + "/out.gguf'");
        EXPECT_HAS(e.what(), std::strerror(EROFS));
    }
}

}  // namespace
}  // namespace smolinfer
