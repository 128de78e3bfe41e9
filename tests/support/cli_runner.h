// Runs the smolinfer command-line tool as a child process for the CLI tests:
// stdin from /dev/null, stdout and stderr captured, a deadline, and
// optionally a 1 GB address-space limit so that an allocation driven by a
// file's claims fails instead of quietly succeeding on a big machine.
#pragma once

#include <string>
#include <vector>

namespace smolinfer::test {

// Whether an address-space limit can be set: AddressSanitizer reserves
// terabytes of address space, so under it the runner asks ASan to refuse
// single allocations over 1000 MB instead.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressLimit = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressLimit = false;
#else
inline constexpr bool kAddressLimit = true;
#endif
#else
inline constexpr bool kAddressLimit = true;
#endif

struct CliResult {
    int exit_code = -1;  // -1: did not exit normally
    int signal = 0;      // the signal that ended it, if one did
    std::string out;
    std::string err;
};

struct CliOptions {
    bool limit_memory = true;  // 1 GB address space (see kAddressLimit)
    int timeout_seconds = 60;  // then SIGKILL and a test failure
};

// `smolinfer args...`.
CliResult run_cli(const std::vector<std::string>& args, const CliOptions& options = {});

}  // namespace smolinfer::test
#include "support/files.h"
