// main() for the kernel suites compiled to WebAssembly (web/wasm/CMakeLists.txt).
// Without arguments on purpose: clang 19 names main(argc, argv) in a way
// Emscripten 3.1.6 does not call. GoogleTest still reads GTEST_FILTER etc.
// from the environment.
#include <gtest/gtest.h>

int main() {
    testing::InitGoogleTest();
    return RUN_ALL_TESTS();
}
