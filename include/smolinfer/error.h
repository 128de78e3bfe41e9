// The one exception type smolinfer throws for bad input (files, text, options).
// Its message is a single line that says what is wrong and where.
#pragma once

#include <stdexcept>
#include <string>

namespace smolinfer {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace smolinfer
