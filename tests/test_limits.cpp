// Limits (issue 6, item 4, native half).
//
// 1. A GGUF file that claims huge counts or sizes (tensor and metadata
//    counts, array lengths, string lengths, dimension counts, dimensions
//    whose product overflows, tensor offsets beyond the file) is rejected
//    with a smolinfer::Error before anything of the claimed size is
//    allocated: each case runs in a forked child whose address space is
//    limited (setrlimit(RLIMIT_AS)) to what it already uses plus a little
//    headroom, so an allocation driven by the claim fails the test as
//    std::bad_alloc (or a crash) instead of passing quietly. Both the reader
//    (gguf::File::parse) and Session::open_bytes are checked.
// 2. Contexts and prompts beyond the limit are clear errors naming the sizes,
//    in the C++ API and in the CLI; generation that reaches the end of the
//    context stops with StopReason::ContextFull (documented in session.h),
//    and the CLI says so on stderr.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gguf/gguf.h"
#include "quant/types.h"
#include "smolinfer/error.h"
#include "smolinfer/session.h"
#include "support/cli_runner.h"
#include "support/crafted_gguf.h"
#include "support/error_text.h"
#include "support/paths.h"
#include "support/tiny_model.h"

extern char** environ;

namespace smolinfer {
namespace {

using namespace test::crafted;
using gguf::ValueType;

using test::kAddressLimit;

constexpr uint64_t k2p32 = uint64_t(1) << 32;
constexpr uint64_t k2p60 = uint64_t(1) << 60;
constexpr uint64_t kMax = ~uint64_t(0);

// ------------------------------------------------------------------ the forked child

struct Outcome {
    enum Kind { Threw, Returned, BadAlloc, OtherException, Crashed } kind = Crashed;
    std::string message;  // what() of the exception
    int signal = 0;
};

std::string kind_name(Outcome::Kind k) {
    switch (k) {
        case Outcome::Threw: return "threw smolinfer::Error";
        case Outcome::Returned: return "returned normally";
        case Outcome::BadAlloc: return "threw std::bad_alloc (an allocation beyond the limit)";
        case Outcome::OtherException: return "threw a non-smolinfer exception";
        case Outcome::Crashed: return "crashed";
    }
    return "?";
}

size_t address_space_in_use() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmSize:", 0) == 0) return size_t(std::stoull(line.substr(7))) * 1024;
    }
    return 0;
}

// Runs fn in a child process limited to its current address space plus
// `headroom` bytes; reports how it ended.
Outcome in_child(const std::function<void()>& fn, size_t headroom = size_t(128) << 20) {
    int fds[2];
    if (pipe(fds) != 0) {
        ADD_FAILURE() << "pipe: " << std::strerror(errno);
        return {};
    }
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (kAddressLimit) {
            const size_t in_use = address_space_in_use();
            rlimit r{};
            r.rlim_cur = r.rlim_max = rlim_t(in_use + headroom);
            if (in_use == 0 || setrlimit(RLIMIT_AS, &r) != 0) _exit(100);
        }
        int code = 0;
        std::string msg;
        try {
            fn();
            code = Outcome::Returned;
        } catch (const Error& e) {
            code = Outcome::Threw;
            msg = e.what();
        } catch (const std::bad_alloc& e) {
            code = Outcome::BadAlloc;
            msg = e.what();
        } catch (const std::exception& e) {
            code = Outcome::OtherException;
            msg = e.what();
        } catch (...) {
            code = Outcome::OtherException;
        }
        for (size_t at = 0; at < msg.size();) {
            const ssize_t w = write(fds[1], msg.data() + at, msg.size() - at);
            if (w <= 0) break;
            at += size_t(w);
        }
        close(fds[1]);
        _exit(code);
    }
    close(fds[1]);
    Outcome o;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) o.message.append(buf, size_t(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) {
        const int code = WEXITSTATUS(status);
        if (code == 100) ADD_FAILURE() << "the child could not limit its address space";
        o.kind = code <= Outcome::OtherException ? Outcome::Kind(code) : Outcome::Crashed;
    } else {
        o.kind = Outcome::Crashed;
        o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    return o;
}

// The child threw smolinfer::Error with a one-line message holding every phrase.
void expect_error(const Outcome& o, const std::vector<std::string>& phrases) {
    EXPECT_EQ(o.kind, Outcome::Threw) << kind_name(o.kind) << (o.signal ? " signal " + std::to_string(o.signal) : "")
                                      << ": " << o.message;
    EXPECT_EQ(o.message.find('\n'), std::string::npos) << o.message;
    for (const auto& p : phrases) EXPECT_NE(o.message.find(p), std::string::npos) << "missing '" << p << "' in: " << o.message;
}

void parse(const Bytes& b) { gguf::File::parse(b); }

SessionOptions one_thread(int context = 0) {
    SessionOptions o;
    o.threads = 1;
    o.context = context;
    return o;
}


Bytes f32_bytes(std::vector<float> v) {
    Bytes b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// A small valid file: a few metadata entries and two tensors.
Gguf small_file() {
    Gguf g;
    g.kv("general.name", enc_string("limits"))
        .kv("t.u32", enc_u32(7))
        .kv("t.strings", enc_string_array({"a", "bb", ""}))
        .kv("t.ints", enc_array(ValueType::I32, std::vector<int32_t>{1, 2, 3}));
    g.tensor("vec", uint32_t(quant::Type::F32), {4}, f32_bytes({1, 2, 3, 4}));
    g.tensor("mat", uint32_t(quant::Type::Q8_0), {32, 2}, Bytes(68, 0x11));
    return g;
}

size_t tensor_info_at(Gguf g, size_t i) {
    g.tensors.resize(i);
    return g.header().size();
}

// ------------------------------------------------------------------ the harness has teeth

TEST(Limits, TheChildLimitCatchesAHugeAllocation) {
    if (!kAddressLimit) GTEST_SKIP() << "no address-space limit under AddressSanitizer";
    const Outcome o = in_child([] {
        std::vector<uint8_t> big(size_t(1) << 30, 1);  // 1 GiB
        if (big[12345] != 1) throw Error("unreachable");
    });
    EXPECT_EQ(o.kind, Outcome::BadAlloc) << kind_name(o.kind);
    const Outcome ok = in_child([] { parse(small_file().bytes()); });
    EXPECT_EQ(ok.kind, Outcome::Returned) << kind_name(ok.kind) << ": " << ok.message;
}

// ------------------------------------------------------------------ the reader

TEST(Limits, HugeHeaderCounts) {
    const Bytes base = small_file().bytes();
    const uint64_t after_header = base.size() - 24;
    for (const uint64_t n : {k2p32, k2p60, kMax, after_header / 32 + 1}) {
        SCOPED_TRACE("tensor count " + std::to_string(n));
        Gguf g = small_file();
        g.n_tensors_override = n;
        expect_error(in_child([&] { parse(g.bytes()); }), {"claims " + std::to_string(n) + " tensors", "offset 8"});
    }
    for (const uint64_t n : {k2p32, k2p60, kMax, after_header / 13 + 1}) {
        SCOPED_TRACE("metadata count " + std::to_string(n));
        Gguf g = small_file();
        g.n_kv_override = n;
        expect_error(in_child([&] { parse(g.bytes()); }), {"claims " + std::to_string(n) + " metadata", "offset 16"});
    }
}

// Counts within the bound (the file could hold that many) still allocate
// only in proportion to what is really read: a 16 MiB file that claims as
// many tensors (or strings) as its size allows fails at the first bad one
// without first reserving room for all of them (a TensorInfo is ~140 bytes
// for a claimed 32, so reserving the claim up front took 4x the file).
TEST(Limits, CountsAtTheBoundOfABigFile) {
    const size_t big = size_t(16) << 20;
    {
        Bytes b;
        put<uint32_t>(b, 0x46554747);
        put<uint32_t>(b, 3);
        put<uint64_t>(b, (big - 24) / 32);  // the largest count the size allows
        put<uint64_t>(b, 0);
        b.resize(big, 0);  // tensor 0: empty name, 0 dimensions
        expect_error(in_child([&] { parse(b); }, size_t(48) << 20), {"tensor ''", "0 dimensions"});
    }
    {
        Gguf g;
        Bytes arr = enc_array_raw(ValueType::String, 0);
        g.kv("t.strings", arr);
        Bytes b = g.bytes();
        const uint64_t count = (big - b.size()) / 8;
        patch<uint64_t>(b, b.size() - 8, count);
        b.resize(big, 0xff);  // element 0 claims a string of 2^64 - 1 bytes
        expect_error(in_child([&] { parse(b); }, size_t(24) << 20), {"element 0 of 't.strings'", "claims"});
    }
}

TEST(Limits, HugeArrayLengths) {
    const ValueType types[] = {ValueType::U8,  ValueType::I8,  ValueType::U16,  ValueType::I16,
                               ValueType::U32, ValueType::I32, ValueType::F32,  ValueType::Bool,
                               ValueType::U64, ValueType::I64, ValueType::F64,  ValueType::String};
    for (const ValueType t : types) {
        for (const uint64_t n : {k2p32, k2p60, kMax}) {
            SCOPED_TRACE("element type " + std::to_string(int(t)) + ", count " + std::to_string(n));
            Gguf g = small_file();
            g.kv("t.ints", enc_array_raw(t, n));
            expect_error(in_child([&] { parse(g.bytes()); }), {"'t.ints'", "claims " + std::to_string(n)});
        }
    }
    // One more element than the bytes that follow could hold.
    Gguf g = small_file();
    g.tensors.clear();
    g.kv("t.ints", enc_array_raw(ValueType::U8, 0));
    Bytes b = g.bytes();
    const size_t count_at = b.size() - 8;
    b.resize(b.size() + 100, 1);
    patch<uint64_t>(b, count_at, 101);
    expect_error(in_child([&] { parse(b); }), {"'t.ints'", "claims 101"});
}

TEST(Limits, HugeStringLengths) {
    for (const uint64_t n : {k2p32, k2p60, kMax}) {
        SCOPED_TRACE("length " + std::to_string(n));
        // A string value.
        Gguf v = small_file();
        Bytes value = tag(ValueType::String);
        put<uint64_t>(value, n);
        v.kv("general.name", value);
        expect_error(in_child([&] { parse(v.bytes()); }), {"'general.name'", std::to_string(n)});

        // An element of a string array.
        Gguf a = small_file();
        Bytes payload;
        put_str(payload, "ok");
        put<uint64_t>(payload, n);
        a.kv("t.strings", enc_array_raw(ValueType::String, 2, payload));
        expect_error(in_child([&] { parse(a.bytes()); }), {"element 1 of 't.strings'"});

        // A key.
        Bytes k;
        put<uint32_t>(k, 0x46554747);
        put<uint32_t>(k, 3);
        put<uint64_t>(k, 0);
        put<uint64_t>(k, 1);
        put<uint64_t>(k, n);
        k.resize(k.size() + 64, 'k');
        expect_error(in_child([&] { parse(k); }), {"key of metadata entry 0"});

        // A tensor name.
        Gguf t = small_file();
        Bytes tb = t.bytes();
        patch<uint64_t>(tb, tensor_info_at(t, 1), n);  // the name length of "mat"
        expect_error(in_child([&] { parse(tb); }), {"name of tensor 1"});
    }
}

TEST(Limits, HugeDimensionsAndDimensionCounts) {
    struct Case {
        std::vector<uint64_t> dims;
        uint32_t type;
        std::string phrase;
    };
    const uint32_t f32 = uint32_t(quant::Type::F32), q4 = uint32_t(quant::Type::Q4_0);
    const Case cases[] = {
        {{uint64_t(1) << 62}, f32, "dimension 0"},                             // 2^64 bytes: wraps to 0
        {{uint64_t(1) << 40, uint64_t(1) << 20}, f32, "dimension 1"},          // 2^60 elements
        {{uint64_t(1) << 32, uint64_t(1) << 32}, f32, "dimension"},            // product overflows 2^64
        {{1 << 16, 1 << 16, 1 << 16, 1 << 16}, f32, "dimension"},              // 2^64 elements
        {{kMax, kMax}, f32, "dimension 0"},                                    //
        {{kMax / 2 + 1, 2}, f32, "dimension 0"},                               // 2^63 x 2
        {{uint64_t(1) << 36, uint64_t(1) << 4}, f32, "truncated"},             // 2^42 bytes: within the caps, beyond the file
        {{uint64_t(1) << 40}, q4, "truncated"},                                // 2^40 / 32 x 18 bytes
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(::testing::PrintToString(c.dims));
        Gguf g = small_file();
        g.find_tensor("vec").dims = c.dims;
        g.find_tensor("vec").type_id = c.type;
        expect_error(in_child([&] { parse(g.bytes()); }), {"'vec'", c.phrase});
    }
    for (const uint32_t n_dims : {5u, 1000u, 0xffffffffu}) {
        Gguf g = small_file();
        Bytes b = g.bytes();
        patch<uint32_t>(b, tensor_info_at(g, 0) + 8 + 3, n_dims);  // after the name "vec"
        expect_error(in_child([&] { parse(b); }), {"'vec'", std::to_string(n_dims) + " dimensions"});
    }
}

TEST(Limits, TensorOffsetsBeyondTheFile) {
    for (const uint64_t off : {uint64_t(1) << 20, uint64_t(1) << 40, k2p60, kMax - 31, kMax - 63}) {
        SCOPED_TRACE("offset " + std::to_string(off));
        Gguf g = small_file();
        g.find_tensor("mat").offset = off;
        expect_error(in_child([&] { parse(g.bytes()); }), {"'mat'", "truncated"});
    }
    // A huge (power of two) alignment puts the data section past the end.
    Gguf g = small_file();
    g.set_alignment(uint32_t(1) << 31);
    Bytes b = g.header();  // (Gguf::bytes() would pad to 2 GiB)
    b.resize(b.size() + 4096, 0);
    expect_error(in_child([&] { parse(b); }), {"tensor data should start at offset 2147483648"});
}

// ------------------------------------------------------------------ opening a model

// Claims in the model's own metadata (through Session::open_bytes).
TEST(Limits, HugeClaimsInTheModelMetadata) {
    struct Case {
        std::string key;
        Bytes value;
        std::string phrase;
    };
    const Case cases[] = {
        {"llama.block_count", enc_u32(uint32_t(1) << 24), "missing tensor 'blk.2.attn_norm.weight'"},
        {"llama.block_count", enc_u64(k2p60), "'llama.block_count'"},
        {"llama.embedding_length", enc_u32(uint32_t(1) << 24), "head size 4194304"},
        {"llama.feed_forward_length", enc_u32(uint32_t(1) << 24), "ffn"},
        {"llama.attention.head_count", enc_u32(uint32_t(1) << 24), "head_count"},
        {"llama.attention.key_length", enc_u32(uint32_t(1) << 24), "head size 16777216"},
        {"llama.context_length", enc_u64(kMax), "'llama.context_length'"},
        {"tokenizer.ggml.tokens", enc_array_raw(ValueType::String, k2p60), "claims"},
        {"tokenizer.ggml.merges", enc_array_raw(ValueType::String, k2p32), "claims"},
        {"tokenizer.ggml.token_type", enc_array_raw(ValueType::I32, k2p60), "claims"},
        {"tokenizer.ggml.bos_token_id", enc_u32(0xffffffffu), "bos_token_id"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.key);
        Gguf g = tiny();
        g.kv(c.key, c.value);
        const Bytes b = g.bytes();
        expect_error(in_child([&] { Session::open_bytes(b, one_thread()); }, size_t(256) << 20), {c.phrase});
    }
    // A training context of 2^24 is fine: the default context is min(4096, it).
    Gguf g = tiny();
    g.kv("llama.context_length", enc_u32(uint32_t(1) << 24));
    const Bytes b = g.bytes();
    const Outcome o = in_child(
        [&] {
            auto s = Session::open_bytes(b, one_thread());
            if (s->context() != 4096) throw Error("context " + std::to_string(s->context()));
        },
        size_t(256) << 20);
    EXPECT_EQ(o.kind, Outcome::Returned) << kind_name(o.kind) << ": " << o.message;
}

// ------------------------------------------------------------------ contexts

TEST(Limits, ContextBeyondTheModelNamesBothSizes) {
    const Bytes b = tiny().bytes();
    for (const int ctx : {257, 4096, 1 << 24, INT_MAX}) {
        SCOPED_TRACE(ctx);
        expect_error(in_child([&] { Session::open_bytes(b, one_thread(ctx)); }, size_t(256) << 20),
                     {"context " + std::to_string(ctx) + " exceeds the model's training context 256"});
    }
    expect_error(in_child([&] { Session::open_bytes(b, one_thread(-1)); }), {"context must be >= 0"});
}

// A context the model allows but this process cannot hold: its KV cache
// either exceeds the machine's memory, or cannot be allocated (here: the
// address-space limit). Either way a smolinfer::Error that names the
// context size, not std::bad_alloc.
TEST(Limits, ContextTooBigForMemoryIsAClearError) {
    if (!kAddressLimit) GTEST_SKIP() << "needs the address-space limit";
    for (const int n_embd : {64, 256}) {
        SCOPED_TRACE(n_embd);
        test::TinyModelSpec spec;
        spec.n_embd = n_embd;
        spec.n_head = 4;
        spec.n_head_kv = n_embd == 64 ? 2 : 4;  // KV cache of 4 GiB, or 32 GiB
        spec.n_ctx = 1 << 24;
        const Bytes b = test::tiny_llama(spec);
        expect_error(in_child([&] { Session::open_bytes(b, one_thread(1 << 24)); }, size_t(256) << 20),
                     {"context of 16777216 tokens", "MiB"});
    }
}

std::unique_ptr<Session> open_tiny(int context) {
    test::TinyModelSpec spec;
    spec.tied_output = false;
    return Session::open_bytes(test::tiny_llama(spec), one_thread(context));
}

using test::error_of;

#define EXPECT_HAS(haystack, needle) \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

TEST(Limits, PromptBeyondTheContextNamesBothSizes) {
    auto s = open_tiny(16);
    const std::vector<TokenId> seventeen(17, 3 + 'a');
    GenerateOptions g;
    g.sampling.temperature = 0;
    const std::string m = error_of([&] { s->generate(seventeen, g, nullptr); });
    EXPECT_HAS(m, "the prompt is 17 tokens but the context holds 16");
    EXPECT_HAS(error_of([&] { s->start(seventeen, g); }), "the prompt is 17 tokens but the context holds 16");
    EXPECT_TRUE(s->sequence().empty()) << "nothing evaluated";
    // Evaluating past the end names what is in use.
    s->evaluate(std::vector<TokenId>(10, 3 + 'b'), false);
    EXPECT_HAS(error_of([&] { s->evaluate(std::vector<TokenId>(7, 3 + 'c'), false); }),
               "the context holds 16 tokens: 10 are in use and 7 more do not fit");
    EXPECT_EQ(s->sequence().size(), 10u) << "a failed evaluate changes nothing";
}

// Generation that reaches the end of the context stops there: StopReason
// ContextFull after context - prompt + 1 tokens (the last one sampled is
// never evaluated), however large max_tokens is. A follow-up prompt (the
// conversation so far plus more) longer than the context is an error that
// leaves the cache as it was.
TEST(Limits, GenerationStopsAtTheEndOfTheContext) {
    for (const int prompt_len : {1, 5, 15, 16}) {
        SCOPED_TRACE(prompt_len);
        auto s = open_tiny(16);
        const std::vector<TokenId> prompt(size_t(prompt_len), 3 + 'a');
        GenerateOptions g;
        g.max_tokens = INT_MAX;
        g.ignore_eos = true;
        g.sampling.seed = 7;
        std::string text;
        const auto st = s->generate(prompt, g, [&](const TokenEvent& e) {
            text += e.text;
            return true;
        });
        EXPECT_EQ(st.stop, StopReason::ContextFull);
        EXPECT_EQ(st.generated_tokens, 16 - prompt_len + 1);
        EXPECT_EQ(s->sequence().size(), 16u);
        EXPECT_EQ(text, s->detokenize(st.tokens));

        std::vector<TokenId> next = s->sequence();
        next.push_back(3 + 'z');
        EXPECT_HAS(error_of([&] { s->generate(next, g, nullptr); }), "the prompt is 17 tokens but the context holds 16");
        EXPECT_EQ(s->sequence().size(), 16u);
    }
    // With room left, max_tokens ends it first.
    auto s = open_tiny(16);
    GenerateOptions g;
    g.max_tokens = 4;
    g.ignore_eos = true;
    EXPECT_EQ(s->generate(std::vector<TokenId>{3 + 'a'}, g, nullptr).stop, StopReason::MaxTokens);
}

// ------------------------------------------------------------------ the command line

using test::CliResult;
using test::run_cli;

void expect_cli_error(const std::vector<std::string>& args, const std::vector<std::string>& phrases) {
    const CliResult r = run_cli(args);
    std::string cmd = "smolinfer";
    for (const auto& a : args) cmd += " " + a;
    SCOPED_TRACE(cmd + "\n  stderr: [" + r.err + "]");
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(r.exit_code, 1);
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u);
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line";
    EXPECT_EQ(r.err.find("out of memory"), std::string::npos) << "an allocation failed instead of a check";
    for (const auto& p : phrases) EXPECT_NE(r.err.find(p), std::string::npos) << "missing phrase: " << p;
}

class LimitsCli : public ::testing::Test {
protected:
    std::string file(const Bytes& bytes, const std::string& name) {
        const std::string path = test::write_temp_file(bytes, "limits-" + name + ".gguf");
        files_.push_back(path);
        return path;
    }
    void TearDown() override {
        for (const auto& f : files_) std::filesystem::remove(f);
    }
    std::vector<std::string> files_;
};

TEST_F(LimitsCli, ContextBeyondTheModelOrTheFlagRange) {
    const std::string m = file(test::tiny_llama(), "tiny");
    expect_cli_error({"run", "-m", m, "-t", "1", "-c", "257", "-p", "hi"}, {"context 257", "training context 256"});
    expect_cli_error({"run", "-m", m, "-t", "1", "-c", "1048577", "-p", "hi"}, {"--ctx-size", "1048577"});
    expect_cli_error({"run", "-m", m, "-t", "1", "-c", "-5", "-p", "hi"}, {"--ctx-size"});
    expect_cli_error({"perplexity", "-m", m, "-t", "1", "-c", "1000", "-f", m}, {"context 1000", "training context 256"});
}

TEST_F(LimitsCli, ContextTooBigForMemory) {
    if (!kAddressLimit) GTEST_SKIP() << "AddressSanitizer aborts on the 1 GiB allocation instead of throwing";
    test::TinyModelSpec spec;
    spec.n_embd = 256;
    spec.n_head_kv = 4;
    spec.n_ctx = 1 << 24;
    const std::string m = file(test::tiny_llama(spec), "wide");
    // A KV cache of 2 GiB under a 1 GB limit (or more than the machine has).
    expect_cli_error({"run", "-m", m, "-t", "1", "-c", "1048576", "-p", "hi", "-n", "1"},
                     {"context of 1048576 tokens", "MiB"});
}

TEST_F(LimitsCli, PromptBeyondTheDefaultContext) {
    const std::string m = file(test::tiny_llama(), "tiny");
    std::string prompt;
    for (int i = 0; i < 300; ++i) prompt += "x ";
    expect_cli_error({"run", "-m", m, "-t", "1", "-p", prompt}, {"the prompt is", "context holds 256", "-c"});
}

// Reaching the end of the context is not an error: exit 0, the text so
// far, "stop: context" and a warning on stderr. (Greedy on the tied tiny
// model repeats the last prompt token, so no end token comes first.)
TEST_F(LimitsCli, GenerationReachingTheEndOfTheContext) {
    const std::string m = file(test::tiny_llama(), "tiny");
    for (const std::string n : {"-1", "1000"}) {
        const CliResult r =
            run_cli({"run", "-m", m, "-t", "1", "-c", "16", "-n", n, "--temp", "0", "--json", "-p", "the cat"});
        SCOPED_TRACE("stderr: " + r.err);
        ASSERT_EQ(r.exit_code, 0);
        const auto j = nlohmann::json::parse(r.out);
        const size_t p = j["prompt_ids"].size();
        EXPECT_EQ(j["ids"].size(), 16 - p + 1);
        EXPECT_NE(r.err.find("stop: context"), std::string::npos);
        EXPECT_NE(r.err.find("warning: the context (16 tokens) is full"), std::string::npos);
    }
}

}  // namespace
}  // namespace smolinfer
