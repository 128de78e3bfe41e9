// Where the tests find their inputs.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace smolinfer::test {

// tests/golden/<name>
std::string golden_path(const std::string& name);

// Parsed tests/golden/<name>; fails the calling test if unreadable.
nlohmann::json load_golden(const std::string& name);

// The real SmolLM2 model, from $SMOLINFER_MODEL (make test sets it).
// Throws with a clear message when it is not set or missing, so tests that
// need the model fail loudly rather than skip.
std::string model_path();

// The smolinfer command-line binary of this build.
std::string cli_path();

}  // namespace smolinfer::test
