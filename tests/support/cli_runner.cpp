#include "support/cli_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/paths.h"

extern char** environ;

namespace smolinfer::test {


CliResult run_cli(const std::vector<std::string>& args, const CliOptions& options) {
    static std::atomic<int> counter = 0;
    const std::string base = scratch_dir() + "/" + std::to_string(::getpid()) + "-cli-" + std::to_string(counter++);
    const std::string out_path = base + ".out", err_path = base + ".err";

    std::vector<std::string> argv_s;
    if (options.limit_memory) {
        const char* script = kAddressLimit
                                 ? "ulimit -v 1000000 && exec \"$@\""
                                 : "ASAN_OPTIONS=max_allocation_size_mb=1000${ASAN_OPTIONS:+:$ASAN_OPTIONS} exec \"$@\"";
        argv_s = {"/bin/sh", "-c", script, "sh"};
    }
    argv_s.push_back(cli_path());
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    CliResult r;
    if (rc != 0) {
        ADD_FAILURE() << "posix_spawn failed: " << rc;
        return r;
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (std::chrono::steady_clock::now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            ADD_FAILURE() << "smolinfer did not finish within " << options.timeout_seconds << " s";
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    std::filesystem::remove(out_path);
    std::filesystem::remove(err_path);
    return r;
}

}  // namespace smolinfer::test
