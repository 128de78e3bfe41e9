// `smolinfer quantize IN OUT TYPE` as a user runs it: progress and summary on
// stderr, and on every failure exit code 1 with one "error: ..." line and no
// OUT or temporary file left behind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "support/cli_runner.h"
#include "support/paths.h"
#include "support/small_tmpfs.h"
#include "support/tiny_model.h"
#include "support/files.h"


namespace smolinfer {
namespace {

using Result = test::CliResult;
using test::slurp;


class CliQuantize : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = (std::filesystem::temp_directory_path() / "smolinfer-tests" /
                (std::to_string(::getpid()) + "-cliq-" + info->name()))
                   .string();
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string write(const std::string& name, const std::vector<uint8_t>& bytes) {
        const std::string p = dir_ + "/" + name;
        std::ofstream out(p, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        return p;
    }
    // The tiny model with F32 weights (rows of 64 and 128).
    std::string tiny_f32() {
        test::TinyModelSpec s;
        s.weight_type = quant::Type::F32;
        return write("in.gguf", test::tiny_llama(s));
    }

    Result run(const std::vector<std::string>& args) {
        return test::run_cli(args, {.limit_memory = false, .timeout_seconds = 120});
    }

    // Exit 1, nothing on stdout, and the last stderr line is the only
    // "error: " line and contains every phrase. With `only_line`, it is the
    // only line at all (failures found before any work starts).
    void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& phrases,
                      bool only_line = true) {
        const Result r = run(args);
        std::string cmd = "smolinfer";
        for (const auto& a : args) cmd += " '" + a + "'";
        SCOPED_TRACE(cmd + "\n  stderr: [" + r.err + "]");
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_EQ(r.out, "");
        ASSERT_FALSE(r.err.empty());
        ASSERT_EQ(r.err.back(), '\n');
        const size_t start = r.err.rfind('\n', r.err.size() - 2);
        const std::string last = r.err.substr(start == std::string::npos ? 0 : start + 1);
        EXPECT_EQ(last.rfind("error: ", 0), 0u) << "the last line is not the error";
        size_t n_errors = 0;
        for (size_t at = 0; (at = r.err.find("error: ", at)) != std::string::npos; ++at) ++n_errors;
        EXPECT_EQ(n_errors, 1u);
        if (only_line) {
            EXPECT_EQ(r.err, last) << "more than one line";
        }
        for (const auto& p : phrases) EXPECT_NE(last.find(p), std::string::npos) << "missing phrase: " << p;
    }

    std::string dir_;
};

TEST_F(CliQuantize, Succeeds) {
    const std::string in = tiny_f32();
    const std::string out = dir_ + "/out.gguf";
    const Result r = run({"quantize", in, out, "q8_0", "-t", "2"});
    SCOPED_TRACE(r.err);
    ASSERT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, "");
    // One progress line per tensor (stderr is not a terminal here), then the summary.
    const gguf::File in_f = gguf::File::parse(test::tiny_llama([] {
        test::TinyModelSpec s;
        s.weight_type = quant::Type::F32;
        return s;
    }()));
    const size_t n = in_f.tensors().size();
    std::istringstream lines(r.err);
    std::string line;
    size_t progress = 0;
    std::vector<std::string> rest;
    while (std::getline(lines, line)) {
        if (line.rfind("[", 0) == 0) {
            ++progress;
            EXPECT_EQ(line.find('\r'), std::string::npos);
        } else {
            rest.push_back(line);
        }
    }
    EXPECT_EQ(progress, n);
    EXPECT_NE(r.err.find("[ 1/" + std::to_string(n) + "] token_embd.weight"), std::string::npos);
    EXPECT_NE(r.err.find("blk.0.attn_q.weight              F32   -> Q8_0  [64, 64]"), std::string::npos);
    EXPECT_NE(r.err.find("output_norm.weight               F32   (copied) [64]"), std::string::npos);
    ASSERT_EQ(rest.size(), 2u);
    EXPECT_EQ(rest[0].rfind("quantized '" + out + "' to Q8_0 in ", 0), 0u) << rest[0];
    EXPECT_NE(rest[1].find("bits per weight"), std::string::npos);
    EXPECT_NE(rest[1].find("(32.00 -> 8.5"), std::string::npos) << rest[1];  // Q8_0: 8.5 bits, the F32 norms a little more
    EXPECT_EQ(r.err.find("warning"), std::string::npos);

    const std::string bytes = slurp(out);
    const gguf::File f = gguf::File::parse(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    EXPECT_EQ(f.metadata().get_u32("general.file_type"), 7u);
    EXPECT_EQ(f.find_tensor("blk.1.ffn_down.weight")->type(), quant::Type::Q8_0);
    EXPECT_EQ(test::listing(dir_), "in.gguf out.gguf ");

    // The result runs.
    const Result g = run({"run", "-m", out, "-p", "hello", "-n", "3", "--temp", "0", "-t", "1"});
    EXPECT_EQ(g.exit_code, 0) << g.err;
}

TEST_F(CliQuantize, RequantizingWarns) {
    const std::string in = write("in.gguf", test::tiny_llama());  // Q8_0 weights
    const Result r = run({"quantize", in, dir_ + "/out.gguf", "Q4_0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.rfind("warning: requantizing ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("quality is lost"), std::string::npos);
}

TEST_F(CliQuantize, UnknownType) {
    const std::string in = tiny_f32();
    expect_error({"quantize", in, dir_ + "/out.gguf", "Q9_9"},
                 {"unknown quantization type 'Q9_9'", "valid:", "Q8_0", "Q4_0", "F16"});
    EXPECT_EQ(test::listing(dir_), "in.gguf ");
}

TEST_F(CliQuantize, MissingArguments) {
    expect_error({"quantize", "in.gguf", "out.gguf"}, {"type"});
}

TEST_F(CliQuantize, InputMissingOrNotGguf) {
    expect_error({"quantize", dir_ + "/nope.gguf", dir_ + "/out.gguf", "Q8_0"},
                 {"cannot open '" + dir_ + "/nope.gguf'", "No such file"});
    const std::string text = write("text.gguf", {'h', 'e', 'l', 'l', 'o', '!', '!', '!'});
    expect_error({"quantize", text, dir_ + "/out.gguf", "Q8_0"}, {text + ": not a GGUF file"});
    EXPECT_EQ(test::listing(dir_), "text.gguf ");
}

TEST_F(CliQuantize, OutputIsTheInput) {
    const std::string in = tiny_f32();
    const std::string before = slurp(in);
    expect_error({"quantize", in, in, "Q8_0"}, {"'" + in + "' is the input file"});
    EXPECT_EQ(slurp(in), before);
    EXPECT_EQ(test::listing(dir_), "in.gguf ");
}

TEST_F(CliQuantize, OutputNotWritable) {
    const std::string in = tiny_f32();
    expect_error({"quantize", in, dir_ + "/no/such/dir/out.gguf", "Q8_0"},
                 {"cannot write '" + dir_ + "/no/such/dir/out.gguf'", "No such file or directory"});
    expect_error({"quantize", in, dir_, "Q8_0"}, {"'" + dir_ + "' is a directory"});
    // A read-only file system (a tmpfs mounted read-only; needs root) or, as
    // another user, a directory without write permission.
    test::SmallTmpfs ro("64k", /*read_only=*/true);
    if (ro.mounted()) {
        expect_error({"quantize", in, ro.dir() + "/out.gguf", "Q8_0"},
                     {"cannot write '" + ro.dir() + "/out.gguf'", "Read-only file system"});
        EXPECT_EQ(ro.listing(), "");
    } else if (::geteuid() != 0) {
        const std::string locked = dir_ + "/locked";
        std::filesystem::create_directory(locked);
        std::filesystem::permissions(locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
        expect_error({"quantize", in, locked + "/out.gguf", "Q8_0"},
                     {"cannot write '" + locked + "/out.gguf'", "Permission denied"});
        std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
    }
    EXPECT_EQ(test::listing(dir_), "in.gguf ");
}

// A real full disk: a 128 KB tmpfs (needs root; elsewhere the injected
// failing write of test_quantize_model covers the same path). The progress
// lines come first; the error is the last line and the only error line.
TEST_F(CliQuantize, DiskFull) {
    test::SmallTmpfs fs("128k");
    if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (not root?)";
    const std::string in = tiny_f32();  // ~370 KB of F32 weights: ~190 KB as F16
    const std::string out = fs.dir() + "/out.gguf";
    expect_error({"quantize", in, out, "F16"}, {"cannot write '" + out + "'", "No space left on device"},
                 /*only_line=*/false);
    EXPECT_EQ(fs.listing(), "");
}

}  // namespace
}  // namespace smolinfer
