// The real smolinfer binary on bad input: every failure is exit code 1 and
// exactly one line on stderr, "error: ..." naming the problem. The binary
// runs under `ulimit -v 1000000` (about 1 GB of address space), so a huge
// allocation driven by a crafted file fails loudly instead of passing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "quant/types.h"
#include "support/cli_runner.h"
#include "support/crafted_gguf.h"
#include "support/paths.h"
#include "support/tiny_model.h"


namespace smolinfer {
namespace {

using namespace test::crafted;
using gguf::ValueType;

using Result = test::CliResult;
using test::run_cli;
std::string temp_dir() { return test::scratch_dir(); }

std::string describe(const std::vector<std::string>& args, const Result& r) {
    std::string cmd = "smolinfer";
    for (const auto& a : args) cmd += " '" + a + "'";
    return cmd + "\n  exit " + std::to_string(r.exit_code) + (r.signal ? " signal " + std::to_string(r.signal) : "") +
           "\n  stderr: [" + r.err + "]";
}

// Exit 1, and stderr is exactly "error: <...phrase...>\n".
void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& phrases) {
    const Result r = run_cli(args);
    SCOPED_TRACE(describe(args, r));
    EXPECT_EQ(r.signal, 0) << "killed by a signal";
    EXPECT_EQ(r.exit_code, 1);
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << "does not start with 'error: '";
    EXPECT_EQ(r.err.back(), '\n');
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line";
    EXPECT_EQ(r.err.find('\0'), std::string::npos);
    EXPECT_EQ(r.err.find("out of memory"), std::string::npos) << "a huge allocation";
    for (const auto& p : phrases) EXPECT_NE(r.err.find(p), std::string::npos) << "missing phrase: " << p;
}


// Writes `bytes` to a temp file named after the test case.
class CliErrors : public ::testing::Test {
protected:
    std::string file(const Bytes& bytes) {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        const std::string path =
            test::write_temp_file(bytes, std::string("cli-") + info->name() + "-" + std::to_string(files_.size()) + ".gguf");
        files_.push_back(path);
        return path;
    }
    std::string file(const Gguf& g) { return file(g.bytes()); }
    void TearDown() override {
        for (const auto& f : files_) std::filesystem::remove(f);
    }
    // The usual command on a model file.
    void expect_run_error(const Bytes& bytes, const std::vector<std::string>& phrases) {
        expect_error({"run", "-m", file(bytes), "-p", "hi", "-n", "1", "-t", "1"}, phrases);
    }
    void expect_run_error(const Gguf& g, const std::vector<std::string>& phrases) { expect_run_error(g.bytes(), phrases); }

    std::vector<std::string> files_;
};

// ------------------------------------------------------------------ success

TEST_F(CliErrors, TokenizeSucceeds) {
    const std::string m = file(test::tiny_llama());
    const Result r = run_cli({"tokenize", "-m", m, "-t", "1", "-p", "hello"});
    SCOPED_TRACE(describe({"tokenize"}, r));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.err, "");
    ASSERT_FALSE(r.out.empty());
    EXPECT_EQ(r.out.back(), '\n');
    std::istringstream ids(r.out);
    int id = 0, n = 0;
    while (ids >> id) {
        EXPECT_GE(id, 0);
        EXPECT_LT(id, 268);
        ++n;
    }
    EXPECT_GE(n, 2);  // byte-level pieces of "hello" (only "he" is a merge)
}

TEST_F(CliErrors, RunSucceeds) {
    const std::string m = file(test::tiny_llama());
    const Result r = run_cli({"run", "-m", m, "-p", "hello", "-n", "3", "--temp", "0", "-t", "1", "--json"});
    SCOPED_TRACE(describe({"run"}, r));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("\"ids\""), std::string::npos);
    EXPECT_EQ(r.err.find("error"), std::string::npos);
}

TEST_F(CliErrors, GrammarFile) {
    const std::string m = file(test::tiny_llama());
    auto text_file = [&](const std::string& text) { return file(Bytes(text.begin(), text.end())); };
    expect_error({"run", "-m", m, "-p", "hi", "--grammar-file", "/nonexistent/g.gbnf"},
                 {"--grammar-file", "cannot read '/nonexistent/g.gbnf'"});
    expect_error({"run", "-m", m, "-p", "hi", "--grammar-file", text_file("")}, {"--grammar-file", "is empty"});
    expect_error({"run", "-m", m, "-p", "hi", "--grammar-file", text_file("root ::= [a-")},
                 {"grammar: line 1, column 10: unterminated character class"});
    // A grammar that allows one text: greedy or not, that is the output.
    const Result r = run_cli({"run", "-m", m, "-p", "hello", "-n", "8", "-t", "1", "--seed", "3", "--json",
                              "--grammar-file", text_file("root ::= \"ab\" \"c\"{2}\n")});
    SCOPED_TRACE(describe({"run"}, r));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("\"text\":\"abcc\""), std::string::npos);
}

// ------------------------------------------------------------------ bad GGUF files

TEST_F(CliErrors, WrongMagic) {
    Gguf g = tiny();
    g.magic = 0x4c4d4747;
    expect_run_error(g, {"not a GGUF file", "magic"});
}

TEST_F(CliErrors, UnsupportedVersion) {
    for (uint32_t v : {1u, 4u}) {
        Gguf g = tiny();
        g.version = v;
        expect_run_error(g, {"unsupported GGUF version " + std::to_string(v)});
    }
}

TEST_F(CliErrors, TruncatedHeader) {
    const Bytes full = tiny().bytes();
    expect_run_error(Bytes(full.begin(), full.begin() + 10), {"truncated", "tensor count"});
    expect_run_error(Bytes(full.begin(), full.begin() + 2), {"not a GGUF file", "2 bytes"});
}

TEST_F(CliErrors, TruncatedMetadata) {
    const Bytes full = tiny().bytes();
    // Inside the token list: the element count no longer fits in what is left.
    expect_run_error(Bytes(full.begin(), full.begin() + 2000), {"'tokenizer.ggml.tokens'", "offset", "claims"});
    // Inside the tensor infos.
    const Gguf g = tiny();
    expect_run_error(Bytes(full.begin(), full.begin() + long(g.header().size()) - 5), {"truncated", "offset"});
}

TEST_F(CliErrors, TruncatedTensorData) {
    const Bytes full = tiny().bytes();
    expect_run_error(Bytes(full.begin(), full.end() - 1), {"truncated", "'blk.1.ffn_down.weight'"});
}

TEST_F(CliErrors, TensorOffsetPastTheEnd) {
    Gguf g = tiny();
    g.find_tensor("blk.0.attn_q.weight").offset = uint64_t(1) << 40;
    expect_run_error(g, {"'blk.0.attn_q.weight'", "file ends at"});
}

TEST_F(CliErrors, TensorSizePastTheEnd) {
    Gguf g = tiny();
    g.find_tensor("blk.0.attn_q.weight").dims = {uint64_t(1) << 20, uint64_t(1) << 20};
    expect_run_error(g, {"'blk.0.attn_q.weight'", "truncated"});
}

TEST_F(CliErrors, AbsurdTensorCount) {
    Gguf g = tiny();
    g.n_tensors_override = uint64_t(1) << 60;
    expect_run_error(g, {std::to_string(uint64_t(1) << 60) + " tensors"});
}

TEST_F(CliErrors, AbsurdMetadataCount) {
    Gguf g = tiny();
    g.n_kv_override = uint64_t(1) << 60;
    expect_run_error(g, {std::to_string(uint64_t(1) << 60) + " metadata entries"});
}

TEST_F(CliErrors, AbsurdArrayCount) {
    Gguf g = tiny();
    g.kv("tokenizer.ggml.merges", enc_array_raw(ValueType::String, uint64_t(1) << 60));
    expect_run_error(g, {"'tokenizer.ggml.merges'", std::to_string(uint64_t(1) << 60)});
}

TEST_F(CliErrors, AbsurdStringLength) {
    Gguf g = tiny();
    Bytes v = tag(ValueType::String);
    put<uint64_t>(v, uint64_t(1) << 60);
    g.kv("general.name", v);
    expect_run_error(g, {"'general.name'", std::to_string(uint64_t(1) << 60)});
}

TEST_F(CliErrors, UnknownTensorType) {
    Gguf g = tiny();
    g.find_tensor("blk.1.attn_v.weight").type_id = 99;
    expect_run_error(g, {"'blk.1.attn_v.weight'", "99"});
}

TEST_F(CliErrors, MalformedTensorInfos) {
    Gguf dup = tiny();
    dup.tensor("output_norm.weight", uint32_t(quant::Type::F32), {64}, Bytes(256, 0));
    expect_run_error(dup, {"duplicate", "'output_norm.weight'"});

    Gguf mis = tiny();
    mis.find_tensor("blk.0.ffn_up.weight").offset = 16;
    expect_run_error(mis, {"'blk.0.ffn_up.weight'", "alignment"});

    Gguf dims = tiny();
    dims.find_tensor("blk.0.ffn_up.weight").dims = {64, 0};
    expect_run_error(dims, {"'blk.0.ffn_up.weight'", "dimension 1 = 0"});

    Gguf five = tiny();
    five.find_tensor("blk.0.ffn_up.weight").dims = {64, 128, 1, 1, 1};
    expect_run_error(five, {"'blk.0.ffn_up.weight'", "5 dimensions"});

    Gguf row = tiny();
    row.find_tensor("blk.0.ffn_up.weight").dims = {48, 128};
    expect_run_error(row, {"'blk.0.ffn_up.weight'", "block size 32"});

    Gguf key = tiny();
    key.append_kv("llama.block_count", enc_u32(2));
    expect_run_error(key, {"duplicate", "'llama.block_count'"});
}

// ------------------------------------------------------------------ bad models

TEST_F(CliErrors, MissingMetadata) {
    for (const std::string k : {"llama.embedding_length", "tokenizer.ggml.tokens", "tokenizer.ggml.merges"}) {
        Gguf g = tiny();
        g.remove_kv(k);
        expect_run_error(g, {"missing metadata '" + k + "'"});
    }
}

TEST_F(CliErrors, WrongArchitecture) {
    Gguf g = tiny();
    g.kv("general.architecture", enc_string("mamba"));
    expect_run_error(g, {"unsupported architecture 'mamba'", "supported: llama, qwen2, qwen3, phi3, gemma3"});
}

TEST_F(CliErrors, MissingTensor) {
    Gguf g = tiny();
    g.remove_tensor("blk.1.ffn_down.weight");
    expect_run_error(g, {"missing tensor 'blk.1.ffn_down.weight'"});
}

TEST_F(CliErrors, WrongShapeAndType) {
    Gguf g = tiny();
    g.find_tensor("blk.0.attn_q.weight").dims = {128, 32};
    expect_run_error(g, {"'blk.0.attn_q.weight'", "[128, 32]", "expected [64, 64]"});

    Gguf t = tiny();
    Tensor& norm = t.find_tensor("output_norm.weight");
    norm.type_id = uint32_t(quant::Type::Q8_0);
    norm.data = Bytes(68, 0);
    expect_run_error(t, {"'output_norm.weight'", "Q8_0"});
}

TEST_F(CliErrors, VocabularyProblems) {
    Gguf empty = tiny();
    empty.kv("tokenizer.ggml.tokens", enc_string_array({}));
    expect_run_error(empty, {"'tokenizer.ggml.tokens' is empty"});

    Gguf types = tiny();
    types.kv("tokenizer.ggml.token_type", enc_array(ValueType::I32, std::vector<int32_t>{1}));
    expect_run_error(types, {"'tokenizer.ggml.token_type'", "1 entries for 268 tokens"});

    std::vector<std::string> tokens;
    for (int i = 0; i < 300; ++i) tokens.push_back("t" + std::to_string(i));
    Gguf size = tiny();
    size.kv("tokenizer.ggml.tokens", enc_string_array(tokens));
    size.remove_kv("tokenizer.ggml.token_type");
    expect_run_error(size, {"300 tokens", "token_embd.weight", "268 rows"});

    Gguf bos = tiny();
    bos.kv("tokenizer.ggml.bos_token_id", enc_u32(100000));
    expect_run_error(bos, {"'tokenizer.ggml.bos_token_id' = 100000"});

    Gguf pre = tiny();
    pre.kv("tokenizer.ggml.pre", enc_string("mystery"));
    expect_run_error(pre, {"unsupported pre-tokenizer 'mystery'"});
}

// A 100 KB file claiming llama.block_count = 2^24 must fail at the first
// missing layer tensor, not allocate for 2^24 layers first (it once did:
// ~12 GB, "out of memory" under the address limit).
TEST_F(CliErrors, HugeBlockCountDoesNotAllocate) {
    Gguf g = tiny();
    g.kv("llama.block_count", enc_u32(uint32_t(1) << 24));
    expect_run_error(g, {"missing tensor 'blk.2.attn_norm.weight'"});
}

// Names from the file are escaped in messages: a newline in a tensor name
// must not make the error two lines (see test_gguf_reader
// NamesFromTheFileCannotBreakTheMessage).
TEST_F(CliErrors, NameWithANewlineStaysOneLine) {
    Gguf g = tiny();
    Tensor& t = g.find_tensor("blk.0.attn_k.weight");
    t.name = "blk.0.attn_k.weight\nerror: forged";
    t.type_id = 99;  // so that the message names this tensor
    expect_run_error(g, {"blk.0.attn_k.weight", "99"});
}

// Load warnings (here: no tokenizer.ggml.pre) are held until the model is
// open, so a later error is still the only line on stderr.
TEST_F(CliErrors, ErrorAfterAWarningIsStillOneLine) {
    Gguf g = tiny();
    g.remove_kv("tokenizer.ggml.pre");
    g.kv("tokenizer.ggml.bos_token_id", enc_u32(5000));
    expect_run_error(g, {"'tokenizer.ggml.bos_token_id' = 5000"});
}

// ------------------------------------------------------------------ bad paths

TEST_F(CliErrors, NonexistentModel) {
    expect_error({"run", "-m", "/nonexistent/smolinfer/model.gguf", "-p", "hi"},
                 {"cannot open '/nonexistent/smolinfer/model.gguf'", "No such file"});
}

TEST_F(CliErrors, DirectoryAsModel) {
    const std::string dir = temp_dir();
    expect_error({"run", "-m", dir, "-p", "hi"}, {"'" + dir + "'", "not a regular file"});
}

TEST_F(CliErrors, EmptyFile) {
    const std::string path = file(Bytes{});
    expect_error({"tokenize", "-m", path, "-p", "hi"}, {path, "0 bytes"});
}

// ------------------------------------------------------------------ bad command lines

TEST_F(CliErrors, NoSubcommand) { expect_error({}, {"subcommand"}); }

// An unknown subcommand is named in the error.
TEST_F(CliErrors, UnknownSubcommand) { expect_error({"frobnicate", "-m", "x.gguf"}, {"frobnicate"}); }

TEST_F(CliErrors, MissingModelFlag) {
    expect_error({"run", "-p", "hi"}, {"--model", "required"});
    expect_error({"tokenize", "-p", "hi"}, {"--model", "required"});
}

TEST_F(CliErrors, BadFlagValues) {
    const std::string m = file(test::tiny_llama());
    expect_error({"run", "-m", m, "-p", "hi", "--temp", "-1"}, {"temperature"});
    expect_error({"run", "-m", m, "-p", "hi", "--top-p", "2"}, {"top-p"});
    expect_error({"run", "-m", m, "-p", "hi", "--top-p", "abc"}, {"--top-p", "abc"});
    expect_error({"run", "-m", m, "-p", "hi", "--min-p", "1.5"}, {"min-p"});
    expect_error({"run", "-m", m, "-p", "hi", "--top-k", "-3"}, {"top-k"});
    expect_error({"run", "-m", m, "-p", "hi", "-c", "0"}, {"--ctx-size", "0"});
    expect_error({"run", "-m", m, "-p", "hi", "-t", "0"}, {"--threads", "0"});
    expect_error({"run", "-m", m, "-p", "hi", "--bogus"}, {"--bogus"});
    expect_error({"run", "-m", m, "-p", "hi", "--system", "x"}, {"--system needs --chat"});
    expect_error({"tokenize", "-m", m}, {"-p, -f or --jsonl"});
}

// --repeat-last-n is bounded: a window of 2e9 tokens is a range error, not
// an 8 GB reservation in the sampler.
TEST_F(CliErrors, HugeRepeatWindowDoesNotAllocate) {
    const std::string m = file(test::tiny_llama());
    expect_error({"run", "-m", m, "-p", "hi", "-n", "1", "-t", "1", "--repeat-last-n", "2000000000"},
                 {"--repeat-last-n"});
}

// bench's -p is bounded by the largest batch a session takes; within that
// bound, a prompt longer than the model's context names the context.
TEST_F(CliErrors, BenchLongPromptNamesTheRealProblem) {
    const std::string m = file(test::tiny_llama());
    expect_error({"bench", "-m", m, "-p", "5000", "-n", "1", "-r", "1", "-t", "1"}, {"--n-prompt", "4096"});
    expect_error({"bench", "-m", m, "-p", "1000", "-n", "1", "-r", "1", "-t", "1"}, {"training context 256"});
}

// bench -d (llama-bench's depth) adds to the context it needs, and -fa
// takes on, off or auto only.
TEST_F(CliErrors, BenchDepthAndFlashAttentionOptions) {
    const std::string m = file(test::tiny_llama());
    expect_error({"bench", "-m", m, "-p", "8", "-n", "8", "-d", "250", "-r", "1", "-t", "1"}, {"training context 256"});
    expect_error({"bench", "-m", m, "-p", "8", "-n", "1", "-r", "1", "-t", "1", "-fa", "sometimes"},
                 {"--flash-attn", "on, off or auto"});
    expect_error({"run", "-m", m, "-p", "hi", "-n", "1", "-t", "1", "--flash-attn"}, {"--flash-attn"});
}

TEST_F(CliErrors, PromptLongerThanTheContext) {
    const std::string m = file(test::tiny_llama());
    expect_error({"run", "-m", m, "-t", "1", "-c", "8", "-p", "the quick brown fox jumps over the lazy dog"},
                 {"the prompt is", "context holds 8", "-c"});
    expect_error({"run", "-m", m, "-t", "1", "-c", "1000", "-p", "hi"}, {"context 1000", "training context 256"});
}

TEST_F(CliErrors, TokenizeJsonlErrors) {
    const std::string m = file(test::tiny_llama());
    const std::string bad = test::write_temp_file(
        {'"', 'o', 'k', '"', '\n', '{', 'n', 'o', 't', ' ', 'j', 's', 'o', 'n', '\n'}, "cli-bad.jsonl");
    files_.push_back(bad);
    expect_error({"tokenize", "-m", m, "-t", "1", "--jsonl", bad}, {bad + ":2", "not JSON"});

    const std::string number = test::write_temp_file({'4', '2', '\n'}, "cli-number.jsonl");
    files_.push_back(number);
    expect_error({"tokenize", "-m", m, "-t", "1", "--jsonl", number}, {number + ":1", "expected a JSON string"});

    expect_error({"tokenize", "-m", m, "-t", "1", "--jsonl", "/nonexistent/x.jsonl"}, {"cannot read '/nonexistent/x.jsonl'"});
}

TEST_F(CliErrors, OtherSubcommandsOnBadFiles) {
    Gguf g = tiny();
    g.remove_tensor("blk.1.ffn_down.weight");
    const std::string path = file(g);
    expect_error({"tokenize", "-m", path, "-p", "hi"}, {path, "missing tensor 'blk.1.ffn_down.weight'"});
    expect_error({"bench", "-m", path, "-p", "4", "-n", "4", "-r", "1", "-t", "1"}, {"missing tensor"});
    const std::string text = test::write_temp_file({'h', 'i', '\n'}, "cli-ppl.txt");
    files_.push_back(text);
    expect_error({"perplexity", "-m", path, "-f", text, "-c", "8", "-t", "1"}, {"missing tensor"});
    const std::string good = file(test::tiny_llama());
    expect_error({"perplexity", "-m", good, "-f", "/nonexistent/t.txt", "-c", "8", "-t", "1"},
                 {"cannot read '/nonexistent/t.txt'"});
}

}  // namespace
}  // namespace smolinfer
