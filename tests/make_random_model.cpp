// Writes one of the random-weight family models (tests/support/random_model.h)
// to a file and prints its sha256: scripts/golden/make-family-golden.mjs runs
// llama.cpp on them. Needs SMOLINFER_LLAMA_SRC (llama.cpp's vocabulary files),
// SMOLINFER_MODEL (SmolLM2's) for the large ones, and
// SMOLINFER_MODEL_GEMMA_3_270M (Gemma 3 270M's vocabulary) for gemma-embedding.
//   make_random_model NAME OUT.gguf
//   make_random_model --list          the family models
//   make_random_model --list-large    SmolLM2-360M and -1.7B shapes
//   make_random_model --list-sources  F16 sources for timing the quantizer
//   make_random_model --list-embedding  the embedding models (scripts/golden/make-embedding-golden.mjs)
//   make_random_model --list-embedding-bench  the same in real dimensions (make bench)
#include <cstdio>
#include <exception>
#include <fstream>

#include "runtime/sha256.h"
#include "support/random_model.h"

int main(int argc, char** argv) {
    using namespace smolinfer;
    try {
        const std::string list = argc == 2 ? argv[1] : "";
        if (list == "--list" || list == "--list-large" || list == "--list-sources" || list == "--list-embedding" ||
            list == "--list-embedding-bench") {
            const auto& specs = list == "--list-large"             ? test::large_model_specs()
                                : list == "--list-sources"         ? test::quantize_source_specs()
                                : list == "--list-embedding"       ? test::embedding_model_specs()
                                : list == "--list-embedding-bench" ? test::embedding_bench_specs()
                                                                   : test::random_model_specs();
            for (const auto& s : specs) {
                std::printf("%s\n", s.name.c_str());
            }
            return 0;
        }
        if (argc != 3) {
            std::fprintf(stderr, "usage: make_random_model NAME OUT.gguf | --list | --list-large | --list-sources | --list-embedding | --list-embedding-bench\n");
            return 2;
        }
        const std::vector<uint8_t> bytes = test::random_model_bytes(argv[1]);
        std::ofstream out(argv[2], std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        out.close();
        if (!out) throw std::runtime_error(std::string("cannot write ") + argv[2]);
        runtime::Sha256 h;
        h.update(bytes);
        std::printf("%s\n", h.finish_hex().c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_random_model: %s\n", e.what());
        return 1;
    }
}
