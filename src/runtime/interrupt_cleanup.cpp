#include "runtime/interrupt_cleanup.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace smolinfer::runtime {

namespace {

// Fixed storage: a signal handler may only read memory and call
// async-signal-safe functions (unlink, signal, raise). A slot is claimed
// first and shown to the handler only once its path is complete.
constexpr int kSlots = 8;
constexpr size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
std::atomic<bool> g_claimed[kSlots];
std::atomic<bool> g_live[kSlots];

extern "C" void remove_and_reraise(int sig) {
    for (int i = 0; i < kSlots; ++i) {
        if (g_live[i].load()) ::unlink(g_paths[i]);
    }
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

}  // namespace

void remove_temp_files_on_interrupt() {
    struct sigaction sa {};
    sa.sa_handler = remove_and_reraise;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
}

TempFileRegistration::TempFileRegistration(const std::string& path) {
    if (path.size() >= kPathMax) return;
    for (int i = 0; i < kSlots; ++i) {
        bool expected = false;
        if (!g_claimed[i].compare_exchange_strong(expected, true)) continue;
        std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
        g_live[i].store(true);
        slot_ = i;
        return;
    }
}

TempFileRegistration::~TempFileRegistration() {
    if (slot_ < 0) return;
    g_live[slot_].store(false);
    g_claimed[slot_].store(false);
}

}  // namespace smolinfer::runtime
