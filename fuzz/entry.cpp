// The libFuzzer entry point of one target; CMake compiles this file once per
// target with SMOLINFER_FUZZ_HARNESS set to the harness function (harness.h).
#include <cstddef>
#include <cstdint>

#include "harness.h"

#ifndef SMOLINFER_FUZZ_HARNESS
#error "define SMOLINFER_FUZZ_HARNESS to one of the functions in harness.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Anything but smolinfer::Error escapes the harness: an uncaught
    // exception aborts, which libFuzzer reports as a crash with the message.
    smolinfer::fuzz::SMOLINFER_FUZZ_HARNESS({data, size});
    return 0;
}
