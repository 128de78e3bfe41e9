// smolinfer quantize: IN.gguf -> OUT.gguf in one of llama.cpp's type mixes.
// Progress on stderr (one line per tensor, or one line rewritten in place on
// a terminal), then a summary.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "commands.h"
#include "convert/quantize_model.h"
#include "runtime/interrupt_cleanup.h"
#include "runtime/thread_pool.h"
#include "smolinfer/error.h"

namespace smolinfer::cli {

namespace {

struct QuantizeFlags {
    std::string input;
    std::string output;
    std::string type;
    int threads = 0;
};

double mib(uint64_t bytes) { return double(bytes) / (1024.0 * 1024.0); }

int run(const QuantizeFlags& f) {
    const auto mix = convert::parse_mix(f.type);
    if (!mix) {
        throw Error("unknown quantization type '" + f.type + "' (valid: " + convert::mix_names() + ")");
    }
    const bool tty = ::isatty(STDERR_FILENO) == 1;
    bool line_open = false;  // a progress line without its newline (terminal only)
    auto end_line = [&] {
        if (line_open) std::fputc('\n', stderr);
        line_open = false;
    };

    convert::QuantizeOptions o;
    o.mix = *mix;
    o.threads = f.threads > 0 ? f.threads : runtime::default_thread_count();
    o.on_warning = [&](const std::string& w) {
        end_line();
        std::fprintf(stderr, "warning: %s\n", w.c_str());
    };
    o.on_tensor = [&](const convert::TensorProgress& p) {
        const int width = int(std::to_string(p.count).size());
        const std::string from(p.tensor->traits.name);
        const std::string to = p.copied ? "(copied)" : "-> " + std::string(quant::traits(p.to).name);
        std::fprintf(stderr, "%s[%*zu/%zu] %-32s %-5s %-8s %s%s", tty ? "\r\033[K" : "", width, p.index + 1, p.count,
                     p.tensor->name.c_str(), from.c_str(), to.c_str(), p.tensor->shape_string().c_str(),
                     tty ? "" : "\n");
        line_open = tty;
        std::fflush(stderr);
    };

    runtime::remove_temp_files_on_interrupt();  // Ctrl-C leaves no half-written file
    const auto t0 = std::chrono::steady_clock::now();
    convert::QuantizeResult r;
    try {
        r = convert::quantize_file(f.input, f.output, o);
    } catch (...) {
        end_line();  // the error goes on a line of its own
        throw;
    }
    end_line();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double n = std::max(1.0, double(r.n_elements));
    std::fprintf(stderr, "quantized '%s' to %s in %.2f s: %zu tensors, %zu converted, %zu copied, %zu with a fallback type\n",
                 f.output.c_str(), std::string(convert::mix_info(*mix).name).c_str(), secs, r.n_tensors,
                 r.n_converted, r.n_tensors - r.n_converted, r.n_fallback);
    std::fprintf(stderr, "size: %.2f MiB -> %.2f MiB of weights (%.2f -> %.2f bits per weight), file %.2f MiB -> %.2f MiB\n",
                 mib(r.in_tensor_bytes), mib(r.out_tensor_bytes), 8.0 * double(r.in_tensor_bytes) / n,
                 8.0 * double(r.out_tensor_bytes) / n, mib(r.in_file_bytes), mib(r.out_file_bytes));
    return 0;
}

}  // namespace

Action add_quantize(CLI::App& app) {
    auto f = std::make_shared<QuantizeFlags>();
    app.add_option("input", f->input, "GGUF model to quantize")->required();
    app.add_option("output", f->output, "GGUF file to write (replaced only once complete)")->required();
    app.add_option("type", f->type, "type mix: " + convert::mix_names())->required();
    app.add_option("-t,--threads", f->threads, "threads (default: one per hardware thread)")->check(CLI::Range(1, 256));
    return [f] { return run(*f); };
}

}  // namespace smolinfer::cli
