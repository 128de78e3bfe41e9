// A tiny command-line front for llama.cpp's own JSON-schema converter
// (common/json-schema-to-grammar.cpp), so the golden generator can record
// the grammar text llama.cpp writes for each schema.
//
// make-json-schema-golden.mjs compiles it together with two files of
// llama.cpp's source tree ($SMOLINFER_LLAMA_SRC, never copied here):
//   common/json-schema-to-grammar.cpp  the converter
//   common/json.cpp                    its JSON type (nlohmann ordered_json)
// The converter also needs three string helpers of common/common.cpp and
// ggml's abort hook; they are written out below instead of linking all of
// llama.cpp.
//
// Reads one schema (JSON) on stdin, prints the GBNF grammar on stdout, or the
// converter's error on stderr with exit status 1.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "json-schema-to-grammar.h"

std::string string_join(const std::vector<std::string>& values, const std::string& separator) {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i) {
        if (i > 0) out += separator;
        out += values[i];
    }
    return out;
}

std::vector<std::string> string_split(const std::string& text, const std::string& delimiter) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t end = text.find(delimiter); end != std::string::npos; end = text.find(delimiter, start)) {
        parts.push_back(text.substr(start, end - start));
        start = end + delimiter.size();
    }
    parts.push_back(text.substr(start));
    return parts;
}

std::string string_repeat(const std::string& text, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += text;
    return out;
}

extern "C" [[noreturn]] void ggml_abort(const char* file, int line, const char* fmt, ...) {
    std::fprintf(stderr, "llama-json-schema-tool: abort at %s:%d: ", file, line);
    va_list args;
    va_start(args, fmt);
    std::vfprintf(stderr, fmt, args);
    va_end(args);
    std::fputc('\n', stderr);
    std::abort();
}

int main() {
    const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    try {
        std::cout << json_schema_to_grammar(common_json::parse(text), /*force_gbnf=*/true);
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
    return 0;
}
