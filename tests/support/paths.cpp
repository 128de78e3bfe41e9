#include "support/paths.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace smolinfer::test {

std::string golden_path(const std::string& name) { return std::string(SMOLINFER_GOLDEN_DIR) + "/" + name; }

nlohmann::json load_golden(const std::string& name) {
    std::ifstream in(golden_path(name));
    if (!in) throw std::runtime_error("cannot read golden file " + golden_path(name));
    return nlohmann::json::parse(in);
}

std::string model_path() {
    const char* p = std::getenv("SMOLINFER_MODEL");
    if (p == nullptr || *p == '\0') {
        throw std::runtime_error("SMOLINFER_MODEL is not set: run the tests with 'make test', which fetches the model");
    }
    if (!std::ifstream(p)) throw std::runtime_error(std::string("SMOLINFER_MODEL=") + p + " does not exist");
    return p;
}

std::string cli_path() { return SMOLINFER_CLI_PATH; }

}  // namespace smolinfer::test
