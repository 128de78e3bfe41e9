// A tiny front for llama.cpp's own llama_tokenize and llama_detokenize, for
// what node-llama-cpp cannot ask them: add_special = true (its tokenize
// always passes false) and text that is not valid UTF-8 (a JavaScript string
// cannot carry it). make-vocab-golden.mjs compiles it against llama.h of
// llama.cpp's source tree ($SMOLINFER_LLAMA_SRC) and links it with the very
// libllama node-llama-cpp loads (its prebuilt binaries), so both answer with
// the same code.
//
// Usage: llama-tokenize-tool VOCAB.gguf
// Reads requests on stdin, each a line "ADD_SPECIAL PARSE_SPECIAL N" (0/1,
// 0/1, byte count) followed by N bytes of text. Answers each with one line:
//   ok IDS|DETOKENIZED_HEX|DETOKENIZED_SPECIAL_HEX
// (IDS space-separated; the text of llama_detokenize(ids, remove_special =
// false, unparse_special = false, then true), in hex), or
//   error MESSAGE
// when llama_tokenize throws.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

std::string hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (const unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::string detokenize(const llama_vocab* vocab, const std::vector<llama_token>& ids, bool unparse_special) {
    std::string text(ids.size() * 8 + 16, '\0');
    int32_t n = llama_detokenize(vocab, ids.data(), int32_t(ids.size()), text.data(), int32_t(text.size()), false,
                                 unparse_special);
    if (n < 0) {
        text.resize(size_t(-n));
        n = llama_detokenize(vocab, ids.data(), int32_t(ids.size()), text.data(), int32_t(text.size()), false,
                             unparse_special);
    }
    text.resize(size_t(n));
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s VOCAB.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_backend_init();
    llama_model_params params = llama_model_default_params();
    params.vocab_only = true;
    llama_model* model = llama_model_load_from_file(argv[1], params);
    if (model == nullptr) {
        std::fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);

    int add_special = 0, parse_special = 0;
    size_t n = 0;
    while (std::cin >> add_special >> parse_special >> n) {
        std::cin.get();  // the newline
        std::string text(n, '\0');
        std::cin.read(text.data(), std::streamsize(n));
        std::vector<llama_token> ids(n + 8);
        try {
            int32_t count = llama_tokenize(vocab, text.data(), int32_t(n), ids.data(), int32_t(ids.size()),
                                           add_special != 0, parse_special != 0);
            if (count < 0) {
                ids.resize(size_t(-count));
                count = llama_tokenize(vocab, text.data(), int32_t(n), ids.data(), int32_t(ids.size()),
                                       add_special != 0, parse_special != 0);
            }
            ids.resize(size_t(count));
        } catch (const std::exception& e) {
            std::cout << "error " << e.what() << "\n" << std::flush;
            continue;
        }
        std::cout << "ok ";
        for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
        std::cout << "|" << hex(detokenize(vocab, ids, false)) << "|" << hex(detokenize(vocab, ids, true)) << "\n"
                  << std::flush;
    }
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
