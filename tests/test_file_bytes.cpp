// A model file's bytes, mapped in place or read into private memory: the
// same bytes either way, and an error that names the path when the file
// cannot be had.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "runtime/file_bytes.h"
#include "support/error_text.h"

namespace smolinfer {
namespace {

std::string temp_path(const std::string& name) { return (std::filesystem::path(testing::TempDir()) / name).string(); }

std::string write_bytes(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string path = temp_path(name);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return path;
}

using test::error_of;

// Past a 2 MiB huge page and not a whole number of pages, so that the
// read's rounding up is exercised; random, so that a misplaced chunk shows.
TEST(FileBytes, ReadAndMapGiveTheFilesBytes) {
    std::vector<uint8_t> bytes((size_t(5) << 20) + 4099);
    std::mt19937 rng(3);
    for (auto& b : bytes) b = uint8_t(rng());
    const std::string path = write_bytes("file-bytes.bin", bytes);
    for (const auto& file : {runtime::FileBytes::read(path), runtime::FileBytes::map(path)}) {
        const auto got = file->bytes();
        ASSERT_EQ(got.size(), bytes.size());
        EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes.begin()));
    }
    std::filesystem::remove(path);
}

TEST(FileBytes, EmptyFileHasNoBytes) {
    const std::string path = write_bytes("file-bytes-empty.bin", {});
    EXPECT_TRUE(runtime::FileBytes::read(path)->bytes().empty());
    EXPECT_TRUE(runtime::FileBytes::map(path)->bytes().empty());
    std::filesystem::remove(path);
}

TEST(FileBytes, ErrorsNameThePath) {
    const std::string missing = temp_path("no-such-model.gguf");
    EXPECT_EQ(error_of([&] { runtime::FileBytes::read(missing); }),
              "cannot open '" + missing + "': No such file or directory");
    EXPECT_EQ(error_of([&] { runtime::FileBytes::map(missing); }),
              "cannot open '" + missing + "': No such file or directory");
    const std::string dir = testing::TempDir();
    EXPECT_EQ(error_of([&] { runtime::FileBytes::read(dir); }), "'" + dir + "' is not a regular file");
}

}  // namespace
}  // namespace smolinfer
