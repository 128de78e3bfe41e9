// Files and scratch directories for the tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace smolinfer::test {

// A file's whole contents ("" if it cannot be read).
std::string slurp(const std::string& path);
std::vector<uint8_t> slurp_bytes(const std::string& path);

// A file's whole contents; throws naming the file if it cannot be read.
std::string read_file(const std::string& path);

// A directory for the tests' scratch files (created if missing).
std::string scratch_dir();

// An empty directory of its own under scratch_dir(), for this process and `name`.
std::string fresh_dir(const std::string& name);

// The names in a directory, sorted, each followed by a space.
std::string listing(const std::string& dir);

}  // namespace smolinfer::test
