// smolinfer split: IN.gguf -> PREFIX-00001-of-0000N.gguf ... in llama.cpp's
// gguf-split layout (the same parts llama-gguf-split --split writes), for
// serving a model in files browsers and CDNs take.
#include <cstdio>
#include <string>

#include "commands.h"
#include "convert/split_model.h"
#include "runtime/interrupt_cleanup.h"
#include "smolinfer/error.h"

namespace smolinfer::cli {

namespace {

struct SplitFlags {
    std::string input;
    std::string prefix;
    uint64_t max_tensors = 0;
    std::string max_size;
    bool no_tensor_first_split = false;
};

// "500M", "2G" (llama-gguf-split's units: 1000^2, 1000^3 bytes), or plain bytes.
uint64_t parse_size(const std::string& s) {
    size_t used = 0;
    unsigned long long v = 0;
    try {
        v = std::stoull(s, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    const std::string unit = s.substr(used);
    uint64_t scale = 0;
    if (unit.empty()) scale = 1;
    if (unit == "M") scale = 1000ull * 1000;
    if (unit == "G") scale = 1000ull * 1000 * 1000;
    if (used == 0 || scale == 0 || v == 0) {
        throw Error("bad --split-max-size '" + s + "' (a number of bytes, or with M or G, e.g. 500M)");
    }
    return uint64_t(v) * scale;
}

int run(const SplitFlags& f) {
    convert::SplitOptions o;
    o.max_tensors = f.max_tensors;
    if (!f.max_size.empty()) o.max_bytes = parse_size(f.max_size);
    if (o.max_tensors == 0 && o.max_bytes == 0) o.max_tensors = 128;  // llama-gguf-split's default
    o.no_tensor_first_split = f.no_tensor_first_split;
    runtime::remove_temp_files_on_interrupt();  // Ctrl-C leaves no half-written part
    const auto paths = convert::split_file(f.input, f.prefix, o);
    for (const auto& p : paths) std::printf("%s\n", p.c_str());
    std::fprintf(stderr, "split '%s' into %zu parts\n", f.input.c_str(), paths.size());
    return 0;
}

}  // namespace

Action add_split(CLI::App& app) {
    auto f = std::make_shared<SplitFlags>();
    app.add_option("input", f->input, "GGUF model to split")->required();
    app.add_option("prefix", f->prefix, "output prefix: writes PREFIX-00001-of-0000N.gguf, ...")->required();
    auto* t = app.add_option("--split-max-tensors", f->max_tensors, "tensors per part (default 128)")
                  ->check(CLI::Range(uint64_t(1), uint64_t(1) << 32));
    auto* s = app.add_option("--split-max-size", f->max_size, "tensor bytes per part, e.g. 500M or 2G");
    t->excludes(s);
    app.add_flag("--no-tensor-first-split", f->no_tensor_first_split, "the first part holds only the metadata");
    return [f] { return run(*f); };
}

}  // namespace smolinfer::cli
