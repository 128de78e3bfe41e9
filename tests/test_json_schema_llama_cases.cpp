// llama.cpp's own unit tests of its JSON-schema converter
// (tests/test-json-schema-to-grammar.cpp in $SMOLINFER_LLAMA_SRC, read at
// run time, never copied): every case it expects to convert gives the same
// grammar text with ours, except the few where llama.cpp leaves a keyword
// unenforced and we refuse instead (listed below with the reason, and
// checked to be refused); every case it expects to fail fails with ours.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/json_schema_to_gbnf.h"
#include "smolinfer/error.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

struct LlamaCase {
    bool success;
    std::string name;
    std::string schema;
    std::string grammar;
};

// Each case is test({STATUS, "name", R"""(schema)""", R"""(grammar)"""}).
std::vector<LlamaCase> llama_cases() {
    std::ifstream in(test::llama_source_path("tests/test-json-schema-to-grammar.cpp"));
    std::ostringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    static const std::regex one_case(
        R"re(test\(\{\s*(SUCCESS|FAILURE),\s*"([^"]*)",\s*R"""\(([\s\S]*?)\)""",\s*R"""\(([\s\S]*?)\)"""\s*\}\);)re");
    std::vector<LlamaCase> cases;
    for (auto it = std::sregex_iterator(source.begin(), source.end(), one_case); it != std::sregex_iterator(); ++it) {
        cases.push_back({(*it)[1] == "SUCCESS", (*it)[2], (*it)[3], (*it)[4]});
    }
    return cases;
}

// As llama.cpp's test compares: outer whitespace and each line's indentation dropped.
std::string trimmed(const std::string& s) {
    const size_t first = s.find_first_not_of(" \n\r\t");
    if (first == std::string::npos) return "";
    const size_t last = s.find_last_not_of(" \n\r\t");
    static const std::regex indentation("(^|\n)[ \t]+");
    return std::regex_replace(s.substr(first, last - first + 1), indentation, "$1");
}

// Cases llama.cpp converts while leaving part of the schema unenforced,
// which we refuse: the reason each is refused.
const std::map<std::string, std::string>& refused_by_us() {
    static const std::map<std::string, std::string> refused = {
        // llama.cpp takes "items" and ignores "prefixItems" (here not even an array).
        {"array with empty items and prefixItems", "unsupported keyword 'prefixItems' (together with 'items')"},
    };
    return refused;
}

TEST(JsonSchemaLlamaCases, SameGrammarsAsLlamaCppsOwnTests) {
    const auto cases = llama_cases();
    ASSERT_GE(cases.size(), 50u) << "the case format of llama.cpp's test file changed";
    int compared = 0;
    for (const LlamaCase& c : cases) {
        SCOPED_TRACE(c.name);
        if (!c.success) {
            EXPECT_THROW(grammar::json_schema_to_gbnf(c.schema), Error);
            continue;
        }
        const auto refused = refused_by_us().find(c.name);
        if (refused != refused_by_us().end()) {
            try {
                grammar::json_schema_to_gbnf(c.schema);
                ADD_FAILURE() << "expected a refusal: " << refused->second;
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find(refused->second), std::string::npos) << e.what();
            }
            continue;
        }
        std::string ours;
        try {
            ours = grammar::json_schema_to_gbnf(c.schema);
        } catch (const Error& e) {
            ADD_FAILURE() << "refused: " << e.what();
            continue;
        }
        EXPECT_EQ(trimmed(ours), trimmed(c.grammar));
        ++compared;
    }
    EXPECT_GE(compared, 40);
}

}  // namespace
}  // namespace smolinfer
