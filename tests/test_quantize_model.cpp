// convert::quantize_gguf / quantize_file on the tiny random-weight model
// (tests/support/tiny_model.h): for every mix, the output parses, has the
// chosen type for every tensor, the input's metadata (with file_type and
// quantization_version rewritten as llama.cpp does), the input's tensor order
// and alignment; its weights decode close to the source; it is the same bytes
// every time and with any thread count; it loads in the engine. Failures
// (disk full, bad paths) leave nothing behind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <sstream>

#include "convert/quantize_model.h"
#include "gguf/gguf.h"
#include "quant/reference.h"
#include "smolinfer/error.h"
#include "smolinfer/session.h"
#include "support/small_tmpfs.h"
#include "support/tiny_model.h"
#include "support/files.h"

namespace smolinfer {
namespace {

using test::fresh_dir;
using test::listing;
using test::slurp;

using convert::Mix;
using quant::Type;

#define EXPECT_HAS(haystack, needle) \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

// The tiny model with rows of 256 and 512 values (so that the K-quants fit
// without a fallback), F32 weights, 4 layers (so that the _M mixes raise
// some layers and not others), an untied output matrix.
test::TinyModelSpec wide_spec(Type weights = Type::F32, bool tied = false) {
    test::TinyModelSpec s;
    s.n_embd = 256;
    s.n_ff = 512;
    s.n_layer = 4;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.weight_type = weights;
    s.tied_output = tied;
    return s;
}

const std::vector<uint8_t>& wide_f32() {
    static const std::vector<uint8_t> b = test::tiny_llama(wide_spec());
    return b;
}

std::vector<uint8_t> quantize_bytes(const std::vector<uint8_t>& in, Mix mix, int threads = 1,
                                    std::vector<std::string>* warnings = nullptr) {
    const gguf::File f = gguf::File::parse(in);
    gguf::MemorySink sink;
    convert::QuantizeOptions o;
    o.mix = mix;
    o.threads = threads;
    if (warnings) o.on_warning = [warnings](const std::string& w) { warnings->push_back(w); };
    convert::quantize_gguf(f, sink, o);
    return std::move(sink.bytes);
}

std::vector<float> decode(const gguf::TensorInfo& t) {
    std::vector<float> v(t.n_elements);
    quant::ref::dequantize_row(t.type(), t.data, v.data(), v.size());
    return v;
}

// RMS error relative to the RMS of the source.
double relative_rms_error(const std::vector<float>& src, const std::vector<float>& got) {
    double e = 0, s = 0;
    for (size_t i = 0; i < src.size(); ++i) {
        e += (double(got[i]) - src[i]) * (double(got[i]) - src[i]);
        s += double(src[i]) * src[i];
    }
    return std::sqrt(e / s);
}

// Bound on the relative RMS error of Gaussian weights stored in each type
// (a 4-bit code on 32 values has about 0.08 of the values' RMS). Measured
// on these tensors: 50-90% of each bound.
double error_bound(Type t) {
    switch (t) {
        case Type::F32: return 0.0;
        case Type::F16: return 4e-4;
        case Type::BF16: return 3e-3;
        case Type::Q8_0: return 6e-3;
        case Type::Q6_K: return 0.02;
        case Type::Q5_0: return 0.05;
        case Type::Q5_1:
        case Type::Q5_K: return 0.045;
        case Type::Q4_0: return 0.1;
        case Type::Q4_1:
        case Type::Q4_K: return 0.09;
        case Type::Q3_K: return 0.2;
        case Type::Q2_K: return 0.4;
        default: return 0.0;
    }
}

bool values_equal(const gguf::Value& a, const gguf::Value& b) {
    if (a.type != b.type || a.elem_type != b.elem_type || a.count != b.count) return false;
    if (a.type != gguf::ValueType::Array) {
        // NaN-safe: compare doubles by bits
        if (std::holds_alternative<double>(a.scalar) && std::holds_alternative<double>(b.scalar)) {
            return std::memcmp(&std::get<double>(a.scalar), &std::get<double>(b.scalar), sizeof(double)) == 0;
        }
        return a.scalar == b.scalar;
    }
    return a.strings == b.strings && std::equal(a.raw.begin(), a.raw.end(), b.raw.begin(), b.raw.end());
}

std::vector<convert::Mix> available_mixes() {
    std::vector<Mix> m;
    for (const auto& mi : convert::all_mixes()) {
        if (convert::mix_supported(mi.mix)) m.push_back(mi.mix);
    }
    return m;
}




void write_file(const std::string& path, const std::vector<uint8_t>& b) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

// ------------------------------------------------------------------ every mix

TEST(QuantizeModel, EveryMixOnTheWideModel) {
    const std::vector<uint8_t>& src_bytes = wide_f32();
    const gguf::File src = gguf::File::parse(src_bytes);
    const auto mixes = available_mixes();
    // The K-quant mixes this quantizer produces, and at least all the 32-block and float ones.
    EXPECT_GE(mixes.size(), 8u);
    for (const Mix mix : mixes) {
        const auto& mi = convert::mix_info(mix);
        SCOPED_TRACE(std::string(mi.name));
        const std::vector<uint8_t> out_bytes = quantize_bytes(src_bytes, mix);
        const gguf::File out = gguf::File::parse(out_bytes);

        // Metadata: the input's, in order, then the two rewritten keys.
        const auto& in_keys = src.metadata().keys();
        std::vector<std::string> want_keys;
        for (const auto& k : in_keys) {
            if (k != "general.file_type" && k != "general.quantization_version") want_keys.push_back(k);
        }
        want_keys.push_back("general.quantization_version");
        want_keys.push_back("general.file_type");
        EXPECT_EQ(out.metadata().keys(), want_keys);
        for (const auto& k : in_keys) {
            EXPECT_TRUE(values_equal(*src.metadata().find(k), *out.metadata().find(k))) << k;
        }
        EXPECT_EQ(out.metadata().get_u32("general.file_type"), mi.file_type);
        EXPECT_EQ(out.metadata().get_u32("general.quantization_version"), 2u);
        EXPECT_EQ(out.alignment(), src.alignment());
        EXPECT_EQ(out.version(), 3u);

        // Tensors: same order and shapes, the chosen types, close to the source.
        const auto choices = convert::plan_quantization(src, mix);
        ASSERT_EQ(out.tensors().size(), src.tensors().size());
        for (size_t i = 0; i < src.tensors().size(); ++i) {
            const auto& a = src.tensors()[i];
            const auto& b = out.tensors()[i];
            EXPECT_EQ(b.name, a.name);
            EXPECT_EQ(b.n_dims, a.n_dims);
            EXPECT_EQ(b.ne, a.ne);
            EXPECT_EQ(b.type(), choices[i].type) << a.name;
            EXPECT_FALSE(choices[i].fallback) << a.name;
            const double err = relative_rms_error(decode(a), decode(b));
            EXPECT_LE(err, error_bound(b.type())) << a.name << " as " << b.traits.name;
        }
    }
}

// A few choices spelled out, on the wide model (4 layers; use_more_bits(i, 4)
// holds for layers 2 and 3).
TEST(QuantizeModel, Q4KMTypesOnTheWideModel) {
    if (!convert::mix_supported(Mix::Q4_K_M)) GTEST_SKIP() << "no Q4_K quantizer in this build";
    const auto out_bytes = quantize_bytes(wide_f32(), Mix::Q4_K_M);
    const gguf::File out = gguf::File::parse(out_bytes);
    std::map<std::string, Type> t;
    for (const auto& x : out.tensors()) t[x.name] = x.type();
    EXPECT_EQ(t["token_embd.weight"], Type::Q4_K);  // untied: the mix's type
    EXPECT_EQ(t["output.weight"], Type::Q6_K);
    EXPECT_EQ(t["output_norm.weight"], Type::F32);
    EXPECT_EQ(t["blk.0.attn_v.weight"], Type::Q4_K);
    EXPECT_EQ(t["blk.2.attn_v.weight"], Type::Q6_K);
    EXPECT_EQ(t["blk.1.ffn_down.weight"], Type::Q4_K);
    EXPECT_EQ(t["blk.3.ffn_down.weight"], Type::Q6_K);
    EXPECT_EQ(t["blk.3.ffn_up.weight"], Type::Q4_K);
}

// The default tiny model has rows of 64 and 128: the K-quants fall back.
TEST(QuantizeModel, FallbacksOnNarrowRows) {
    test::TinyModelSpec s;
    s.weight_type = Type::F32;
    const auto in = test::tiny_llama(s);
    for (const Mix mix : {Mix::Q4_K_M, Mix::Q5_K_M, Mix::Q6_K}) {
        if (!convert::mix_supported(mix)) continue;
        const auto out_bytes = quantize_bytes(in, mix);
        const gguf::File out = gguf::File::parse(out_bytes);
        for (const auto& t : out.tensors()) {
            if (t.n_dims < 2) continue;
            EXPECT_EQ(t.traits.block_elems, 32u) << t.name << " " << t.traits.name;
        }
    }
}

// ------------------------------------------------------------------ bytes

TEST(QuantizeModel, SameBytesEveryTimeAndWithAnyThreadCount) {
    test::TinyModelSpec spec = wide_spec();
    spec.n_layer = 1;
    const auto in = test::tiny_llama(spec);
    for (const Mix mix : available_mixes()) {
        SCOPED_TRACE(std::string(convert::mix_info(mix).name));
        const auto a = quantize_bytes(in, mix, 1);
        const auto b = quantize_bytes(in, mix, 1);
        const auto c = quantize_bytes(in, mix, 3);
        EXPECT_TRUE(a == b);
        EXPECT_TRUE(a == c);
    }
}

// A tensor that keeps its type is copied, not requantized; an all-Q8_0 model
// quantized to Q8_0 is the same tensor data.
TEST(QuantizeModel, SameTypeIsCopiedByteForByte) {
    const auto in = test::tiny_llama(wide_spec(Type::Q8_0));
    std::vector<std::string> warnings;
    const auto out_bytes = quantize_bytes(in, Mix::Q8_0, 2, &warnings);
    EXPECT_TRUE(warnings.empty());
    const gguf::File a = gguf::File::parse(in);
    const gguf::File b = gguf::File::parse(out_bytes);
    for (size_t i = 0; i < a.tensors().size(); ++i) {
        const auto& x = a.tensors()[i];
        const auto& y = b.tensors()[i];
        ASSERT_EQ(x.n_bytes, y.n_bytes);
        EXPECT_EQ(std::memcmp(x.data, y.data, x.n_bytes), 0) << x.name;
    }
}

TEST(QuantizeModel, RequantizingWarnsOnce) {
    const auto in = test::tiny_llama(wide_spec(Type::Q8_0));
    std::vector<std::string> w;
    quantize_bytes(in, Mix::Q4_0, 1, &w);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_HAS(w[0], "requantizing");
    EXPECT_HAS(w[0], "Q8_0");
    EXPECT_HAS(w[0], "quality is lost");
    EXPECT_EQ(w[0].find('\n'), std::string::npos);
    // Widening quantized weights to a float type loses nothing: no warning.
    w.clear();
    quantize_bytes(in, Mix::F16, 1, &w);
    EXPECT_TRUE(w.empty());
    // Neither does quantizing float weights.
    quantize_bytes(wide_f32(), Mix::Q4_0, 1, &w);
    EXPECT_TRUE(w.empty());
}

TEST(QuantizeModel, NonFiniteWeightsAreRefused) {
    const float inf = INFINITY;
    // A 2-D F32 tensor with an infinity in its second row.
    gguf::Writer v = test::tiny_llama_writer(wide_spec());
    std::vector<uint8_t> data(256 * 2 * 4, 0);
    std::memcpy(data.data() + 256 * 4 + 12, &inf, 4);
    v.add_tensor("blk.0.extra.weight", uint32_t(Type::F32), {256, 2}, data);
    try {
        quantize_bytes(v.to_bytes(), Mix::Q8_0);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_HAS(e.what(), "'blk.0.extra.weight' row 1");
        EXPECT_HAS(e.what(), "NaN or infinite");
    }
}

// ------------------------------------------------------------------ the engine

// The Q8_0 file made from F32 weights loads, its logits follow the F32
// model's closely, and it generates. Every other mix at least loads and
// evaluates.
TEST(QuantizeModel, QuantizedFilesLoadInTheEngine) {
    SessionOptions so;
    so.threads = 2;
    auto ref = Session::open_bytes(wide_f32(), so);
    const auto prompt = ref->tokenize("the answer is", false);
    const auto w = ref->evaluate(prompt, false);
    const std::vector<float> ref_logits(w.begin(), w.end());
    auto relative_error = [&](std::span<const float> l) {
        double e = 0, n = 0;
        for (size_t i = 0; i < l.size(); ++i) {
            e += (double(l[i]) - ref_logits[i]) * (double(l[i]) - ref_logits[i]);
            n += double(ref_logits[i]) * ref_logits[i];
        }
        return std::sqrt(e / n);
    };
    test::TinyModelSpec other = wide_spec();
    other.seed = 7;
    const double unrelated = relative_error(Session::open_bytes(test::tiny_llama(other), so)->evaluate(prompt, false));
    EXPECT_GT(unrelated, 0.8);

    const std::string dir = fresh_dir("quantize-engine");
    for (const Mix mix : available_mixes()) {
        const auto& mi = convert::mix_info(mix);
        SCOPED_TRACE(std::string(mi.name));
        const std::string path = dir + "/tiny-" + std::string(mi.name) + ".gguf";
        convert::QuantizeOptions o;
        o.mix = mix;
        const std::string in_path = dir + "/tiny-f32.gguf";
        if (!std::filesystem::exists(in_path)) write_file(in_path, wide_f32());
        convert::quantize_file(in_path, path, o);
        auto s = Session::open_file(path, so);
        const auto l = s->evaluate(prompt, false);
        ASSERT_EQ(l.size(), ref_logits.size());
        const double rel = relative_error(l);
        // This random model amplifies weight errors about tenfold in its
        // logits; compare with the logits of an unrelated model (other seed).
        const double bound = mix == Mix::F32 ? 1e-6 : mix == Mix::F16 ? 0.01
                             : (mix == Mix::Q8_0 || mix == Mix::BF16 || mix == Mix::Q6_K) ? 0.1 * unrelated
                                                                                             : 0.5 * unrelated;
        EXPECT_LT(rel, bound) << "relative logit error (unrelated model: " << unrelated << ")";
        if (mix == Mix::Q8_0) {
            s->reset();
            GenerateOptions g;
            g.max_tokens = 8;
            g.sampling.temperature = 0.0f;
            g.ignore_eos = true;
            const auto st = s->generate(prompt, g, nullptr);
            EXPECT_EQ(st.generated_tokens, 8);
        }
    }
    std::filesystem::remove_all(dir);
}

// ------------------------------------------------------------------ files and failures

TEST(QuantizeModel, FileToFile) {
    const std::string dir = fresh_dir("quantize-file");
    const std::string in = dir + "/in.gguf", out = dir + "/out.gguf";
    write_file(in, wide_f32());
    convert::QuantizeOptions o;
    o.mix = Mix::Q8_0;
    std::vector<std::string> seen;
    o.on_tensor = [&](const convert::TensorProgress& p) {
        EXPECT_EQ(p.index, seen.size());
        seen.push_back(p.tensor->name);
        EXPECT_EQ(p.copied, p.tensor->type() == p.to);
    };
    const auto r = convert::quantize_file(in, out, o);
    const std::string bytes = slurp(out);
    EXPECT_EQ(bytes.size(), r.out_file_bytes);
    EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()), quantize_bytes(wide_f32(), Mix::Q8_0));
    EXPECT_EQ(seen.size(), r.n_tensors);
    EXPECT_EQ(r.in_file_bytes, wide_f32().size());
    EXPECT_GT(r.n_converted, 0u);
    EXPECT_EQ(listing(dir), "in.gguf out.gguf ");
    std::filesystem::remove_all(dir);
}

// A write that fails with ENOSPC part way (injected): an Error naming OUT,
// and neither OUT nor the temporary file exists afterwards; an old OUT stays.
TEST(QuantizeModel, DiskFullLeavesNothing) {
    const std::string dir = fresh_dir("quantize-enospc");
    const std::string in = dir + "/in.gguf", out = dir + "/out.gguf";
    write_file(in, wide_f32());
    for (const bool old : {false, true}) {
        if (old) std::ofstream(out) << "old";
        size_t taken = 0;
        convert::QuantizeOptions o;
        o.mix = Mix::F16;  // ~5 MB: several buffer flushes
        o.write_fn = [&](int fd, const void* p, size_t n) -> ssize_t {
            if (taken >= 1500000) {
                errno = ENOSPC;
                return -1;
            }
            const ssize_t r = ::write(fd, p, std::min(n, 1500000 - taken));
            if (r > 0) taken += size_t(r);
            return r;
        };
        try {
            convert::quantize_file(in, out, o);
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            EXPECT_HAS(e.what(), "cannot write '" + out + "'");
            EXPECT_HAS(e.what(), std::strerror(ENOSPC));
        }
        EXPECT_EQ(listing(dir), old ? "in.gguf out.gguf " : "in.gguf ");
        if (old) {
            EXPECT_EQ(slurp(out), "old");
        }
    }
    std::filesystem::remove_all(dir);
}

// The same on a real full file system (a 256 KB tmpfs; needs root, skipped elsewhere).
TEST(QuantizeModel, DiskFullOnTmpfs) {
    test::SmallTmpfs fs("256k");
    if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (not root?)";
    const std::string dir = fresh_dir("quantize-tmpfs");
    const std::string in = dir + "/in.gguf";
    write_file(in, wide_f32());
    const std::string out = fs.dir() + "/out.gguf";
    convert::QuantizeOptions o;
    o.mix = Mix::Q8_0;
    try {
        convert::quantize_file(in, out, o);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_HAS(e.what(), "cannot write '" + out + "'");
        EXPECT_HAS(e.what(), std::strerror(ENOSPC));
    }
    EXPECT_EQ(fs.listing(), "");
    std::filesystem::remove_all(dir);
}

TEST(QuantizeModel, BadPaths) {
    const std::string dir = fresh_dir("quantize-paths");
    const std::string in = dir + "/in.gguf";
    write_file(in, wide_f32());
    convert::QuantizeOptions o;
    auto error_of = [&](const std::string& a, const std::string& b) -> std::string {
        try {
            convert::quantize_file(a, b, o);
        } catch (const Error& e) {
            return e.what();
        }
        ADD_FAILURE() << "no error for " << a << " -> " << b;
        return {};
    };
    EXPECT_HAS(error_of(dir + "/missing.gguf", dir + "/o.gguf"), "cannot open '" + dir + "/missing.gguf'");
    std::ofstream(dir + "/text.gguf") << "hello, not a model";
    EXPECT_HAS(error_of(dir + "/text.gguf", dir + "/o.gguf"), dir + "/text.gguf: not a GGUF file");
    EXPECT_HAS(error_of(in, in), "is the input file");
    std::filesystem::create_symlink(in, dir + "/link.gguf");
    EXPECT_HAS(error_of(in, dir + "/link.gguf"), "is the input file");
    EXPECT_HAS(error_of(in, dir), "is a directory");
    EXPECT_HAS(error_of(in, dir + "/no/such/dir/o.gguf"), "cannot write '" + dir + "/no/such/dir/o.gguf'");
    EXPECT_EQ(slurp(in).size(), wide_f32().size());  // the input is untouched
    EXPECT_EQ(listing(dir), "in.gguf link.gguf text.gguf ");
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace smolinfer
