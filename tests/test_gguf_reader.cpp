// gguf::File::parse on crafted bytes: every metadata value type, versions,
// alignment and tensor placement, the typed getters, and every kind of
// malformed input (each must be a smolinfer::Error naming the problem, never
// a crash, an out-of-bounds read or a huge allocation).
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <string>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "quant/types.h"
#include "smolinfer/error.h"
#include "support/crafted_gguf.h"

namespace smolinfer {
namespace {

using namespace test::crafted;
using gguf::ValueType;

constexpr uint64_t k2p60 = uint64_t(1) << 60;

// Parses a heap copy sized exactly to the bytes, so that AddressSanitizer
// sees any read past the end. The copy is kept for the File's views.
gguf::File parse_exact(const Bytes& b) {
    static std::deque<std::vector<uint8_t>> keep;
    keep.emplace_back(b.begin(), b.end());
    return gguf::File::parse(keep.back());
}

// The message of the smolinfer::Error that parsing throws; fails the test if
// it succeeds or throws anything else.
std::string parse_error(const Bytes& b) {
    const std::vector<uint8_t> exact(b.begin(), b.end());
    try {
        gguf::File::parse(exact);
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.find('\n'), std::string::npos) << "message is not one line: " << m;
        EXPECT_FALSE(m.empty());
        return m;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "threw a non-smolinfer exception: " << e.what();
        return {};
    }
    ADD_FAILURE() << "parse accepted the bytes";
    return {};
}

#define EXPECT_HAS(haystack, needle) \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

Bytes f32_bytes(std::vector<float> v) {
    Bytes b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// Byte offset of tensor i's info in g's header.
size_t tensor_info_at(Gguf g, size_t i) {
    g.tensors.resize(i);
    return g.header().size();
}

// 34-byte Q8_0 blocks with recognizable content.
Bytes q8_blocks(size_t n_blocks, uint8_t fill) { return Bytes(n_blocks * 34, fill); }

// A small file with every value type and two tensors.
Gguf every_type_file() {
    Gguf g;
    g.kv("t.u8", enc_u8(200))
        .kv("t.i8", enc_i8(-100))
        .kv("t.u16", enc_u16(60000))
        .kv("t.i16", enc_i16(-30000))
        .kv("t.u32", enc_u32(4000000000u))
        .kv("t.i32", enc_i32(-2000000000))
        .kv("t.f32", enc_f32(1.5f))
        .kv("t.bool", enc_bool(true))
        .kv("t.string", enc_string("héllo wörld"))
        .kv("t.strings", enc_string_array({"a", "", "ccc"}))
        .kv("t.ints", enc_array(ValueType::I32, std::vector<int32_t>{1, -2, 3}))
        .kv("t.u64", enc_u64(uint64_t(1) << 63))
        .kv("t.i64", enc_i64(std::numeric_limits<int64_t>::min()))
        .kv("t.f64", enc_f64(0.1))
        .kv("t.u8s", enc_array(ValueType::U8, std::vector<uint8_t>{7, 8}))
        .kv("t.f32s", enc_array(ValueType::F32, std::vector<float>{0.25f, -1.0f}))
        .kv("t.bools", enc_array(ValueType::Bool, std::vector<uint8_t>{1, 0}))
        .kv("t.empty", enc_array_raw(ValueType::String, 0));
    g.tensor("vec", uint32_t(quant::Type::F32), {4}, f32_bytes({1, 2, 3, 4}));
    g.tensor("mat", uint32_t(quant::Type::Q8_0), {32, 2}, q8_blocks(2, 0x5a));
    return g;
}

// ---------------------------------------------------------------- valid files

TEST(GgufReader, EveryValueTypeRoundTrips) {
    const Bytes bytes = every_type_file().bytes();
    const gguf::File f = parse_exact(bytes);
    const gguf::Metadata& md = f.metadata();
    ASSERT_EQ(md.keys().size(), 18u);
    EXPECT_EQ(md.keys().front(), "t.u8");  // insertion order kept
    EXPECT_EQ(md.keys().back(), "t.empty");

    EXPECT_EQ(md.find("t.u8")->type, ValueType::U8);
    EXPECT_EQ(md.get_uint("t.u8"), 200u);
    EXPECT_EQ(md.find("t.i8")->type, ValueType::I8);
    EXPECT_EQ(md.get_int("t.i8"), -100);
    EXPECT_EQ(md.find("t.u16")->type, ValueType::U16);
    EXPECT_EQ(md.get_uint("t.u16"), 60000u);
    EXPECT_EQ(md.find("t.i16")->type, ValueType::I16);
    EXPECT_EQ(md.get_int("t.i16"), -30000);
    EXPECT_EQ(md.find("t.u32")->type, ValueType::U32);
    EXPECT_EQ(md.get_u32("t.u32"), 4000000000u);
    EXPECT_EQ(md.find("t.i32")->type, ValueType::I32);
    EXPECT_EQ(md.get_int("t.i32"), -2000000000);
    EXPECT_EQ(md.find("t.f32")->type, ValueType::F32);
    EXPECT_EQ(md.get_f32("t.f32"), 1.5f);
    EXPECT_EQ(md.find("t.bool")->type, ValueType::Bool);
    EXPECT_EQ(md.get_bool("t.bool"), true);
    EXPECT_EQ(md.find("t.string")->type, ValueType::String);
    EXPECT_EQ(md.get_string("t.string"), "héllo wörld");
    EXPECT_EQ(md.find("t.u64")->type, ValueType::U64);
    EXPECT_EQ(md.get_uint("t.u64"), uint64_t(1) << 63);
    EXPECT_EQ(md.find("t.i64")->type, ValueType::I64);
    EXPECT_EQ(md.get_int("t.i64"), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(md.find("t.f64")->type, ValueType::F64);
    EXPECT_EQ(std::get<double>(md.find("t.f64")->scalar), 0.1);  // exact, not via float
    EXPECT_FLOAT_EQ(*md.get_f32("t.f64"), 0.1f);

    const gguf::Value* strings = md.find("t.strings");
    ASSERT_NE(strings, nullptr);
    EXPECT_EQ(strings->type, ValueType::Array);
    EXPECT_EQ(strings->elem_type, ValueType::String);
    const auto sv = md.get_string_array("t.strings");
    ASSERT_TRUE(sv);
    EXPECT_EQ(*sv, (std::vector<std::string_view>{"a", "", "ccc"}));

    EXPECT_EQ(md.find("t.ints")->elem_type, ValueType::I32);
    EXPECT_EQ(md.get_int_array("t.ints"), (std::vector<int64_t>{1, -2, 3}));
    EXPECT_EQ(md.get_int_array("t.u8s"), (std::vector<int64_t>{7, 8}));

    const gguf::Value* f32s = md.find("t.f32s");
    ASSERT_EQ(f32s->count, 2u);
    EXPECT_EQ(std::get<double>(f32s->item(0)), 0.25);
    EXPECT_EQ(std::get<double>(f32s->item(1)), -1.0);
    const gguf::Value* bools = md.find("t.bools");
    ASSERT_EQ(bools->count, 2u);
    EXPECT_EQ(std::get<bool>(bools->item(0)), true);
    EXPECT_EQ(std::get<bool>(bools->item(1)), false);
    EXPECT_EQ(md.get_string_array("t.empty"), std::vector<std::string_view>{});

    EXPECT_FALSE(md.has("nope"));
    EXPECT_EQ(md.find("nope"), nullptr);
    EXPECT_EQ(md.get_uint("nope"), std::nullopt);
    EXPECT_EQ(md.get_string("nope"), std::nullopt);
    EXPECT_EQ(md.get_string_array("nope"), std::nullopt);
}

TEST(GgufReader, WriterOutputRoundTrips) {
    gguf::Writer w;
    w.add_u8("w.u8", 9);
    w.add_u32("w.u32", 123456);
    w.add_i32("w.i32", -5);
    w.add_u64("w.u64", 1ull << 40);
    w.add_f32("w.f32", -0.5f);
    w.add_bool("w.bool", false);
    w.add_string("w.str", "x y");
    w.add_string_array("w.strs", {"p", "q"});
    w.add_i32_array("w.ints", {-1, 0, 1});
    w.add_f32_array("w.floats", {3.0f});
    w.add_tensor("t", uint32_t(quant::Type::F32), {2, 3}, f32_bytes({1, 2, 3, 4, 5, 6}));
    const Bytes bytes = w.to_bytes();
    const gguf::File f = parse_exact(bytes);
    const gguf::Metadata& md = f.metadata();
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(md.get_uint("w.u8"), 9u);
    EXPECT_EQ(md.get_u32("w.u32"), 123456u);
    EXPECT_EQ(md.get_int("w.i32"), -5);
    EXPECT_EQ(md.get_uint("w.u64"), 1ull << 40);
    EXPECT_EQ(md.get_f32("w.f32"), -0.5f);
    EXPECT_EQ(md.get_bool("w.bool"), false);
    EXPECT_EQ(md.get_string("w.str"), "x y");
    EXPECT_EQ(md.get_string_array("w.strs"), (std::vector<std::string_view>{"p", "q"}));
    EXPECT_EQ(md.get_int_array("w.ints"), (std::vector<int64_t>{-1, 0, 1}));
    EXPECT_EQ(md.find("w.floats")->elem_type, ValueType::F32);
    ASSERT_EQ(f.tensors().size(), 1u);
    const gguf::TensorInfo* t = f.find_tensor("t");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape_string(), "[2, 3]");
    float v[6];
    std::memcpy(v, t->data, sizeof v);
    EXPECT_EQ(v[5], 6.0f);
}

TEST(GgufReader, Versions2And3Accepted) {
    for (uint32_t version : {2u, 3u}) {
        Gguf g = every_type_file();
        g.version = version;
        const Bytes bytes = g.bytes();
        const gguf::File f = parse_exact(bytes);
        EXPECT_EQ(f.version(), version);
        EXPECT_EQ(f.tensors().size(), 2u);
        EXPECT_EQ(f.metadata().get_u32("t.u32"), 4000000000u);
    }
}

TEST(GgufReader, HeaderOnlyFileParses) {
    Gguf g;
    const Bytes bytes = g.bytes();
    ASSERT_EQ(bytes.size(), 24u);
    const gguf::File f = parse_exact(bytes);
    EXPECT_TRUE(f.tensors().empty());
    EXPECT_TRUE(f.metadata().keys().empty());
    EXPECT_EQ(f.alignment(), 32u);
}

TEST(GgufReader, TensorInfoAndPlacementDefaultAlignment) {
    const Bytes bytes = every_type_file().bytes();
    const gguf::File f = parse_exact(bytes);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.data_offset() % 32, 0u);
    EXPECT_EQ(f.data_offset(), Gguf::align_up(every_type_file().header().size(), 32));

    const gguf::TensorInfo* vec = f.find_tensor("vec");
    ASSERT_NE(vec, nullptr);
    EXPECT_EQ(vec->type(), quant::Type::F32);
    EXPECT_EQ(vec->n_dims, 1);
    EXPECT_EQ(vec->n_elements, 4u);
    EXPECT_EQ(vec->n_bytes, 16u);
    EXPECT_EQ(vec->rows(), 1u);
    EXPECT_EQ(vec->file_offset, f.data_offset());
    EXPECT_EQ(vec->data, f.bytes().data() + f.data_offset());
    float v[4];
    std::memcpy(v, vec->data, sizeof v);
    EXPECT_EQ(v[3], 4.0f);

    const gguf::TensorInfo* mat = f.find_tensor("mat");
    ASSERT_NE(mat, nullptr);
    EXPECT_EQ(mat->type(), quant::Type::Q8_0);
    EXPECT_EQ(mat->shape_string(), "[32, 2]");
    EXPECT_EQ(mat->n_elements, 64u);
    EXPECT_EQ(mat->n_bytes, 68u);
    EXPECT_EQ(mat->rows(), 2u);
    EXPECT_EQ(mat->row_bytes(), 34u);
    EXPECT_EQ(mat->file_offset, f.data_offset() + 32);  // 16 bytes of vec, padded to 32
    EXPECT_EQ(mat->data[0], 0x5a);
    EXPECT_EQ(mat->file_offset + mat->n_bytes, bytes.size());
    EXPECT_EQ(f.find_tensor("missing"), nullptr);
}

TEST(GgufReader, AlignmentMetadataHonoured) {
    Gguf g = every_type_file();
    g.set_alignment(64);
    g.tensors[0].data = f32_bytes({1, 2, 3, 4, 5});  // 20 bytes: next tensor at +64
    g.tensors[0].dims = {5};
    g.tensor("third", uint32_t(quant::Type::F16), {8}, Bytes(16, 0x3c));
    const Bytes bytes = g.bytes();
    const gguf::File f = parse_exact(bytes);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.data_offset() % 64, 0u);
    EXPECT_EQ(f.data_offset(), Gguf::align_up(g.header().size(), 64));
    EXPECT_EQ(f.find_tensor("vec")->file_offset, f.data_offset());
    EXPECT_EQ(f.find_tensor("mat")->file_offset, f.data_offset() + 64);
    EXPECT_EQ(f.find_tensor("third")->file_offset, f.data_offset() + 64 + 128);  // 68 bytes of mat -> 128
    for (const auto& t : f.tensors()) {
        EXPECT_EQ(t.file_offset % 64, 0u) << t.name;
        EXPECT_EQ(t.data, f.bytes().data() + t.file_offset) << t.name;
    }
    EXPECT_EQ(f.find_tensor("mat")->data[67], 0x5a);
    EXPECT_EQ(f.find_tensor("third")->data[0], 0x3c);

    // The same offsets with alignment 32 would be misaligned for 64: a file
    // that says 64 but was laid out for 32 is caught.
    Gguf wrong = every_type_file();
    wrong.kv("general.alignment", enc_u32(64));  // layout stays 32-aligned: mat at +32
    const std::string m = parse_error(wrong.bytes());
    EXPECT_HAS(m, "'mat'");
    EXPECT_HAS(m, "alignment 64");
}

TEST(GgufReader, BadAlignmentValues) {
    for (uint32_t a : {0u, 3u, 48u}) {
        Gguf g = every_type_file();
        g.kv("general.alignment", enc_u32(a));
        const std::string m = parse_error(g.bytes());
        EXPECT_HAS(m, "general.alignment");
        EXPECT_HAS(m, "power of two");
    }
    Gguf g = every_type_file();
    g.kv("general.alignment", enc_u64(32));
    const std::string m = parse_error(g.bytes());
    EXPECT_HAS(m, "general.alignment");
    EXPECT_HAS(m, "uint64");
}

// ---------------------------------------------------------------- getters

TEST(GgufReader, TypedGettersConvertAndRangeCheck) {
    Gguf g;
    g.kv("neg", enc_i32(-1))
        .kv("big", enc_u64(uint64_t(1) << 32))
        .kv("huge", enc_u64(~uint64_t(0)))
        .kv("small", enc_i8(5))
        .kv("str", enc_string("text"))
        .kv("flag", enc_bool(true))
        .kv("ints", enc_array(ValueType::I32, std::vector<int32_t>{1}))
        .kv("bigints", enc_array(ValueType::U64, std::vector<uint64_t>{~uint64_t(0)}))
        .kv("strs", enc_string_array({"x"}))
        .kv("f", enc_f32(2.5f));
    const Bytes bytes = g.bytes();
    const gguf::File f = parse_exact(bytes);
    const gguf::Metadata& md = f.metadata();

    auto msg = [](auto&& fn) -> std::string {
        try {
            fn();
        } catch (const Error& e) {
            return e.what();
        }
        ADD_FAILURE() << "no error";
        return {};
    };

    // Range checks.
    std::string m = msg([&] { (void)md.get_u32("neg"); });
    EXPECT_HAS(m, "'neg'");
    EXPECT_HAS(m, "negative");
    m = msg([&] { (void)md.get_uint("neg"); });
    EXPECT_HAS(m, "'neg'");
    m = msg([&] { (void)md.get_u32("big"); });
    EXPECT_HAS(m, "'big'");
    EXPECT_HAS(m, "out of range");
    m = msg([&] { (void)md.get_int("huge"); });
    EXPECT_HAS(m, "'huge'");
    EXPECT_HAS(m, "out of range");
    m = msg([&] { (void)md.get_int_array("bigints"); });
    EXPECT_HAS(m, "'bigints'");

    // Conversions that are fine.
    EXPECT_EQ(md.get_uint("big"), uint64_t(1) << 32);
    EXPECT_EQ(md.get_int("neg"), -1);
    EXPECT_EQ(md.get_u32("small"), 5u);
    EXPECT_EQ(md.get_int("small"), 5);
    EXPECT_EQ(md.get_f32("small"), 5.0f);
    EXPECT_EQ(md.get_f32("neg"), -1.0f);
    EXPECT_EQ(md.get_f32("f"), 2.5f);

    // Wrong types name the key and both types.
    m = msg([&] { (void)md.get_u32("str"); });
    EXPECT_HAS(m, "'str'");
    EXPECT_HAS(m, "string");
    EXPECT_HAS(m, "integer");
    m = msg([&] { (void)md.get_string("neg"); });
    EXPECT_HAS(m, "'neg'");
    EXPECT_HAS(m, "int32");
    m = msg([&] { (void)md.get_bool("small"); });
    EXPECT_HAS(m, "'small'");
    EXPECT_HAS(m, "bool");
    m = msg([&] { (void)md.get_f32("str"); });
    EXPECT_HAS(m, "'str'");
    m = msg([&] { (void)md.get_int("f"); });
    EXPECT_HAS(m, "'f'");
    EXPECT_HAS(m, "float32");
    m = msg([&] { (void)md.get_string_array("ints"); });
    EXPECT_HAS(m, "'ints'");
    EXPECT_HAS(m, "array of int32");
    m = msg([&] { (void)md.get_int_array("strs"); });
    EXPECT_HAS(m, "'strs'");
    EXPECT_HAS(m, "array of string");
    m = msg([&] { (void)md.get_string("strs"); });
    EXPECT_HAS(m, "'strs'");
    m = msg([&] { (void)md.get_uint("flag"); });
    EXPECT_HAS(m, "'flag'");
    m = msg([&] { (void)md.get_string_array("str"); });
    EXPECT_HAS(m, "'str'");
}

// ---------------------------------------------------------------- bad headers

TEST(GgufReader, WrongMagic) {
    Gguf g = every_type_file();
    g.magic = 0x4c4d4747;  // "GGML"
    std::string m = parse_error(g.bytes());
    EXPECT_HAS(m, "magic");
    EXPECT_HAS(m, "offset 0");

    Bytes text = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'};
    m = parse_error(text);
    EXPECT_HAS(m, "not a GGUF file");
}

TEST(GgufReader, UnsupportedVersions) {
    for (uint32_t version : {0u, 1u, 4u, 0xffffffffu}) {
        Gguf g = every_type_file();
        g.version = version;
        const std::string m = parse_error(g.bytes());
        EXPECT_HAS(m, "version " + std::to_string(version));
        EXPECT_HAS(m, "offset 4");
    }
}

TEST(GgufReader, ShorterThanTheHeader) {
    const Bytes full = every_type_file().bytes();
    for (size_t n = 0; n < 24; ++n) {
        const std::string m = parse_error(Bytes(full.begin(), full.begin() + long(n)));
        if (n < 4) {
            EXPECT_HAS(m, "only " + std::to_string(n) + " bytes");
        } else {
            EXPECT_HAS(m, "truncated");
            EXPECT_HAS(m, "file ends at " + std::to_string(n));
        }
    }
    EXPECT_HAS(parse_error(Bytes(full.begin(), full.begin() + 6)), "version");
    EXPECT_HAS(parse_error(Bytes(full.begin(), full.begin() + 12)), "tensor count");
    EXPECT_HAS(parse_error(Bytes(full.begin(), full.begin() + 20)), "metadata count");
}

TEST(GgufReader, EveryTruncationPointThrows) {
    for (uint32_t alignment : {32u, 64u}) {
        Gguf g = every_type_file();
        if (alignment != 32) g.set_alignment(alignment);
        const Bytes full = g.bytes();
        const size_t header = g.header().size();
        const gguf::File whole = parse_exact(full);
        ASSERT_EQ(whole.tensors().back().file_offset + whole.tensors().back().n_bytes, full.size());
        for (size_t n = 0; n < full.size(); ++n) {
            SCOPED_TRACE("cut at " + std::to_string(n) + " of " + std::to_string(full.size()));
            const std::string m = parse_error(Bytes(full.begin(), full.begin() + long(n)));
            if (n >= 4) {
                // Either a read runs off the end, or a count is checked
                // against the bytes that are left before anything is read.
                EXPECT_TRUE(m.find("truncated GGUF file") != std::string::npos || m.find("claims") != std::string::npos)
                    << m;
            }
            if (n >= header) {
                EXPECT_HAS(m, n < whole.data_offset() ? "tensor data should start" : "tensor '");
            }
        }
    }
}

TEST(GgufReader, TruncatedInsideMetadataNamesTheKey) {
    Gguf g;
    g.kv("general.name", enc_string("a fairly long model name"));
    const Bytes full = g.bytes();
    // Cut inside the string value.
    std::string m = parse_error(Bytes(full.begin(), full.end() - 3));
    EXPECT_HAS(m, "'general.name'");
    EXPECT_HAS(m, "offset");
    // Cut inside the key (after enough bytes that the entry count is plausible).
    m = parse_error(Bytes(full.begin(), full.begin() + 24 + 8 + 6));
    EXPECT_HAS(m, "key of metadata entry 0");
    EXPECT_HAS(m, "offset 32");
}

TEST(GgufReader, TruncatedTensorData) {
    Gguf g = every_type_file();
    Bytes b = g.bytes();
    b.pop_back();
    std::string m = parse_error(b);
    EXPECT_HAS(m, "truncated");
    EXPECT_HAS(m, "'mat'");
    EXPECT_HAS(m, "file ends at " + std::to_string(b.size()));

    // All of the data missing: the file ends where the tensor infos end.
    Bytes header = g.header();
    m = parse_error(header);
    if (header.size() % 32 == 0) {
        EXPECT_HAS(m, "'vec'");  // data would start right at the end
    } else {
        EXPECT_HAS(m, "tensor data should start at offset " + std::to_string(Gguf::align_up(header.size(), 32)));
    }
    g.kv("general.name", enc_string("x"));  // shifts the header end off the alignment
    header = g.header();
    ASSERT_NE(header.size() % 32, 0u);
    m = parse_error(header);
    EXPECT_HAS(m, "tensor data should start at offset " + std::to_string(Gguf::align_up(header.size(), 32)));
}

TEST(GgufReader, TensorOffsetPastTheEnd) {
    Gguf g = every_type_file();
    g.find_tensor("vec").offset = 1 << 20;
    const Bytes b = g.bytes();
    std::string m = parse_error(b);
    EXPECT_HAS(m, "'vec'");
    const uint64_t data_offset = Gguf::align_up(g.header().size(), 32);
    EXPECT_HAS(m, "bytes " + std::to_string(data_offset + (1 << 20)) + "..");  // the absolute byte offset
    EXPECT_HAS(m, "file ends at " + std::to_string(b.size()));

    // An offset near 2^64 must not wrap around into the file.
    Gguf h = every_type_file();
    h.find_tensor("mat").offset = ~uint64_t(0) - 31;  // a multiple of 32
    m = parse_error(h.bytes());
    EXPECT_HAS(m, "'mat'");
    EXPECT_HAS(m, "truncated");
}

TEST(GgufReader, TensorSizePastTheEnd) {
    // 2^40 F32 values (4 TiB) described by a tiny file.
    Gguf g = every_type_file();
    g.find_tensor("mat").type_id = uint32_t(quant::Type::F32);
    g.find_tensor("mat").dims = {uint64_t(1) << 20, uint64_t(1) << 20};
    std::string m = parse_error(g.bytes());
    EXPECT_HAS(m, "'mat'");
    EXPECT_HAS(m, "truncated");

    // Dimensions whose product overflows 64 bits.
    for (std::vector<uint64_t> dims : {std::vector<uint64_t>{uint64_t(1) << 41},
                                       std::vector<uint64_t>{uint64_t(1) << 32, uint64_t(1) << 32},
                                       std::vector<uint64_t>{1 << 16, 1 << 16, 1 << 16, 1 << 16},
                                       std::vector<uint64_t>{~uint64_t(0), ~uint64_t(0)}}) {
        Gguf h = every_type_file();
        h.find_tensor("vec").dims = dims;
        m = parse_error(h.bytes());
        EXPECT_HAS(m, "'vec'");
        EXPECT_HAS(m, "dimension");
    }
}

TEST(GgufReader, AbsurdTensorCount) {
    Gguf g = every_type_file();
    g.n_tensors_override = k2p60;
    const std::string m = parse_error(g.bytes());
    EXPECT_HAS(m, std::to_string(k2p60));
    EXPECT_HAS(m, "tensors");
    EXPECT_HAS(m, "offset 8");
}

TEST(GgufReader, AbsurdMetadataCount) {
    Gguf g = every_type_file();
    g.n_kv_override = k2p60;
    std::string m = parse_error(g.bytes());
    EXPECT_HAS(m, std::to_string(k2p60));
    EXPECT_HAS(m, "metadata");
    EXPECT_HAS(m, "offset 16");
    // One more than there is: runs into the tensor infos, then off the end.
    g.n_kv_override = g.kvs.size() + 1;
    m = parse_error(g.bytes());
    EXPECT_FALSE(m.empty());
}

TEST(GgufReader, AbsurdArrayCount) {
    for (ValueType elem : {ValueType::U8, ValueType::Bool, ValueType::I32, ValueType::U64, ValueType::String}) {
        Gguf g = every_type_file();
        g.kv("tokenizer.ggml.tokens", enc_array_raw(elem, k2p60));
        const std::string m = parse_error(g.bytes());
        EXPECT_HAS(m, "'tokenizer.ggml.tokens'");
        EXPECT_HAS(m, std::to_string(k2p60));
        EXPECT_HAS(m, "offset");
    }
}

TEST(GgufReader, AbsurdStringLengths) {
    // A string value.
    Gguf g;
    Bytes v = tag(ValueType::String);
    put<uint64_t>(v, k2p60);
    g.kv("general.name", v);
    std::string m = parse_error(g.bytes());
    EXPECT_HAS(m, "'general.name'");
    EXPECT_HAS(m, std::to_string(k2p60));

    // A string inside an array.
    Gguf a;
    Bytes payload;
    put_str(payload, "ok");
    put<uint64_t>(payload, k2p60);
    a.kv("tokenizer.ggml.tokens", enc_array_raw(ValueType::String, 2, payload));
    m = parse_error(a.bytes());
    EXPECT_HAS(m, "element 1 of 'tokenizer.ggml.tokens'");

    // A key.
    Bytes key;
    put<uint32_t>(key, 0x46554747);
    put<uint32_t>(key, 3);
    put<uint64_t>(key, 0);
    put<uint64_t>(key, 1);
    put<uint64_t>(key, k2p60);
    key.resize(key.size() + 64, 'k');
    m = parse_error(key);
    EXPECT_HAS(m, "key of metadata entry 0");
    EXPECT_HAS(m, "offset 24");

    // A tensor name.
    Gguf t = every_type_file();
    Bytes tb = t.bytes();
    patch<uint64_t>(tb, tensor_info_at(t, 0), k2p60);  // name length of "vec", the first tensor info
    m = parse_error(tb);
    EXPECT_HAS(m, "name of tensor 0");
    EXPECT_HAS(m, std::to_string(k2p60));
}

TEST(GgufReader, UnknownTensorType) {
    for (uint32_t type_id : {4u, 5u, 16u, 99u, 0xffffffffu}) {
        Gguf g = every_type_file();
        g.find_tensor("mat").type_id = type_id;
        const std::string m = parse_error(g.bytes());
        EXPECT_HAS(m, "'mat'");
        EXPECT_HAS(m, std::to_string(type_id));
        EXPECT_HAS(m, "unsupported tensor type");
    }
    // Activation-only formats are not valid in a file either.
    for (quant::Type t : {quant::Type::Q8_1, quant::Type::Q8_K}) {
        Gguf g = every_type_file();
        g.find_tensor("mat").type_id = uint32_t(t);
        g.find_tensor("mat").dims = {256, 1};
        const std::string m = parse_error(g.bytes());
        EXPECT_HAS(m, "'mat'");
        EXPECT_HAS(m, quant::type_name(uint32_t(t)));
    }
}

// The message names the unknown type id once ("type type 99" read badly).
TEST(GgufReader, UnknownTensorTypeMessageReadsWell) {
    Gguf g = every_type_file();
    g.find_tensor("mat").type_id = 99;
    const std::string m = parse_error(g.bytes());
    EXPECT_EQ(m.find("type type"), std::string::npos) << m;
}

TEST(GgufReader, UnknownMetadataTypes) {
    Gguf g = every_type_file();
    g.kv("t.bad", tag(ValueType(13)));
    std::string m = parse_error(g.bytes());
    EXPECT_HAS(m, "'t.bad'");
    EXPECT_HAS(m, "type 13");

    Gguf a = every_type_file();
    a.kv("t.badarr", enc_array_raw(ValueType(77), 1));
    m = parse_error(a.bytes());
    EXPECT_HAS(m, "'t.badarr'");
    EXPECT_HAS(m, "77");

    Gguf n = every_type_file();
    n.kv("t.nested", enc_array_raw(ValueType::Array, 1, enc_array_raw(ValueType::U8, 0)));
    m = parse_error(n.bytes());
    EXPECT_HAS(m, "'t.nested'");
    EXPECT_HAS(m, "nested");

    Gguf b = every_type_file();
    b.kv("t.bool", enc_scalar(ValueType::Bool, uint8_t(2)));
    m = parse_error(b.bytes());
    EXPECT_HAS(m, "'t.bool'");
}

TEST(GgufReader, DuplicateKey) {
    Gguf g = every_type_file();
    g.append_kv("t.u16", enc_u16(1));
    const std::string m = parse_error(g.bytes());
    EXPECT_HAS(m, "duplicate");
    EXPECT_HAS(m, "'t.u16'");
    EXPECT_HAS(m, "offset");
}

TEST(GgufReader, DuplicateTensorName) {
    Gguf g = every_type_file();
    g.tensor("vec", uint32_t(quant::Type::F32), {4}, f32_bytes({5, 6, 7, 8}));
    const std::string m = parse_error(g.bytes());
    EXPECT_HAS(m, "duplicate");
    EXPECT_HAS(m, "'vec'");
}

TEST(GgufReader, MisalignedTensorOffset) {
    for (uint64_t off : {1u, 16u, 31u}) {
        Gguf g = every_type_file();
        g.find_tensor("mat").offset = off;
        const std::string m = parse_error(g.bytes());
        EXPECT_HAS(m, "'mat'");
        EXPECT_HAS(m, "offset " + std::to_string(off));
        EXPECT_HAS(m, "alignment 32");
    }
}

TEST(GgufReader, BadDimensionCounts) {
    struct Case {
        std::vector<uint64_t> dims;
        std::string phrase;
    };
    for (const Case& c : {Case{{}, "0 dimensions"}, Case{{4, 1, 1, 1, 1}, "5 dimensions"},
                          Case{{4, 0}, "dimension 1 = 0"}, Case{{0}, "dimension 0 = 0"}}) {
        Gguf g = every_type_file();
        g.find_tensor("vec").dims = c.dims;
        const std::string m = parse_error(g.bytes());
        EXPECT_HAS(m, "'vec'");
        EXPECT_HAS(m, c.phrase);
    }
    // A huge dimension count must not be read as that many dimensions.
    Gguf g = every_type_file();
    Bytes b = g.bytes();
    patch<uint32_t>(b, tensor_info_at(g, 0) + 8 + 3, 0xffffffffu);  // after the name "vec"
    const std::string m = parse_error(b);
    EXPECT_HAS(m, "'vec'");
    EXPECT_HAS(m, "4294967295 dimensions");
}

TEST(GgufReader, RowLengthNotAMultipleOfTheBlockSize) {
    struct Case {
        quant::Type type;
        uint64_t ne0;
    };
    for (const Case& c : {Case{quant::Type::Q8_0, 33}, Case{quant::Type::Q4_0, 16}, Case{quant::Type::Q4_K, 32},
                          Case{quant::Type::Q6_K, 255}}) {
        Gguf g = every_type_file();
        g.find_tensor("mat").type_id = uint32_t(c.type);
        g.find_tensor("mat").dims = {c.ne0, 2};
        const std::string m = parse_error(g.bytes());
        EXPECT_HAS(m, "'mat'");
        EXPECT_HAS(m, "block size " + std::to_string(quant::traits(c.type).block_elems));
    }
}

void gguf_tensor_rename(Gguf& g, const std::string& from, const std::string& to) { g.find_tensor(from).name = to; }

// Keys and tensor names are escaped in error messages, so a file cannot put
// a newline (or a NUL, or terminal escape sequences) into the one-line error.
TEST(GgufReader, NamesFromTheFileCannotBreakTheMessage) {
    Gguf k = every_type_file();
    k.kv("evil\nkey", tag(ValueType(13)));
    std::string m = parse_error(k.bytes());  // parse_error expects one line
    EXPECT_HAS(m, "evil");

    Gguf d = every_type_file();
    d.append_kv("t.u8", enc_u8(1));
    d.kvs.back().key = std::string("t.u8\0hidden", 11);
    d.append_kv(std::string("t.u8\0hidden", 11), enc_u8(2));
    m = parse_error(d.bytes());
    EXPECT_HAS(m, "duplicate");
    EXPECT_HAS(m, "at offset");  // what() is a C string: a raw NUL in the key cuts the rest of the message

    Gguf t = every_type_file();
    gguf_tensor_rename(t, "mat", "mat\nerror: forged second line");
    t.tensors.back().type_id = 99;
    m = parse_error(t.bytes());
    EXPECT_HAS(m, "mat");
    EXPECT_HAS(m, "99");
}

// Random corruption of a valid file: parse either succeeds or throws
// smolinfer::Error; never crashes, reads out of bounds or throws bad_alloc.
TEST(GgufReader, RandomCorruptionNeverCrashes) {
    const Bytes full = every_type_file().bytes();
    std::mt19937 rng(1234);
    int rejected = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        Bytes b = full;
        const int flips = 1 + int(rng() % 4);
        for (int k = 0; k < flips; ++k) {
            const size_t at = rng() % b.size();
            switch (rng() % 4) {
                case 0: b[at] ^= uint8_t(1u << (rng() % 8)); break;
                case 1: b[at] = 0xff; break;
                case 2: b[at] = 0; break;
                default: b[at] = uint8_t(rng()); break;
            }
        }
        if (rng() % 4 == 0) b.resize(rng() % b.size());
        const std::vector<uint8_t> exact(b.begin(), b.end());
        try {
            const gguf::File f = gguf::File::parse(exact);
            for (const auto& t : f.tensors()) {
                ASSERT_LE(t.file_offset + t.n_bytes, b.size()) << t.name;
            }
        } catch (const Error&) {
            // One-line messages are checked by NamesFromTheFileCannotBreakTheMessage:
            // corrupt bytes inside a key or tensor name end up in the message.
            ++rejected;
        } catch (const std::exception& e) {
            FAIL() << "iteration " << iter << ": non-smolinfer exception " << e.what();
        }
    }
    EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace smolinfer
