// The message of the smolinfer::Error a call throws, for tests that check
// what a user is told.
#pragma once

#include <functional>
#include <string>

#include "smolinfer/error.h"

namespace smolinfer::test {

// The Error's what(), or "(no error)" when the call returns.
inline std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace smolinfer::test
