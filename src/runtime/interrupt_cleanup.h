// Temporary files that must not outlive an interrupted process. Writers
// register their temporary file for as long as it exists; a program that
// wants Ctrl-C (SIGINT) and SIGTERM to remove them calls
// remove_temp_files_on_interrupt() once (the library never installs signal
// handlers by itself).
#pragma once

#include <string>

namespace smolinfer::runtime {

void remove_temp_files_on_interrupt();

// Registers `path` while alive. At most a handful are live at once; beyond
// that a path simply is not cleaned up on interrupt.
class TempFileRegistration {
public:
    explicit TempFileRegistration(const std::string& path);
    ~TempFileRegistration();
    TempFileRegistration(const TempFileRegistration&) = delete;
    TempFileRegistration& operator=(const TempFileRegistration&) = delete;

private:
    int slot_ = -1;
};

}  // namespace smolinfer::runtime
