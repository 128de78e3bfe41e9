// Ctrl-C during `smolinfer quantize`: nothing is left behind. Needs the real
// model (label "model"), so that the conversion runs long enough to be
// interrupted.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/paths.h"
#include "support/files.h"

extern char** environ;

namespace smolinfer {
namespace {


// The process dies of SIGINT and neither OUT nor its temporary file remains.
TEST(CliQuantizeInterrupt, CtrlCLeavesNoFileBehind) {
    const std::string dir = (std::filesystem::temp_directory_path() / "smolinfer-tests" /
                             (std::to_string(::getpid()) + "-cliq-interrupt")).string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string out = dir + "/out.gguf";
    std::vector<std::string> argv_s = {test::cli_path(), "quantize", test::model_path(), out, "Q8_0", "-t", "1"};
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);

    // Wait for the temporary file, i.e. for writing to be under way.
    bool started = false;
    for (int i = 0; i < 3000 && !started; ++i) {
        for (const auto& e : std::filesystem::directory_iterator(dir)) started = started || e.path() != out;
        if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(started) << "no temporary file appeared";
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_EQ(kill(pid, SIGINT), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << "status " << status;
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "left: " << test::listing(dir);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace smolinfer
