// Prints llama.cpp's exact results for the matmul cases of
// tests/support/matmul_cases.h, as JSON, computed by ggml's CPU backend the
// way llama.cpp runs a model: weights in the CPU backend's extra
// ("repack") buffer type whenever it accepts them, activations as float32
// rows, one ggml_mul_mat. Built and run by scripts/gen-matmul-golden against a
// llama.cpp build; not part of smolinfer.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "support/matmul_cases.h"

namespace mc = smolinfer::test::matmul_cases;

static ggml_type type_of(const std::string& name) {
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char* n = ggml_type_name(ggml_type(t));
        if (n && name == n) return ggml_type(t);
    }
    std::fprintf(stderr, "oracle: unknown type %s\n", name.c_str());
    std::exit(1);
}

// The extra buffer type that accepts this mul_mat, as llama.cpp picks it; null if none.
static ggml_backend_buffer_type_t repack_buft(ggml_backend_t backend, ggml_tensor* mul_mat) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    auto get = (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    if (!get) return nullptr;
    for (ggml_backend_buffer_type_t* b = get(dev); b && *b; ++b) {
        // Ask the device whether this buffer type serves the op, as llama.cpp does.
        ggml_tensor* w = mul_mat->src[0];
        ggml_backend_buffer_t probe = ggml_backend_buft_alloc_buffer(*b, 0);
        w->buffer = probe;
        const bool ok = ggml_backend_dev_supports_op(dev, mul_mat);
        w->buffer = nullptr;
        ggml_backend_buffer_free(probe);
        if (ok) return *b;
    }
    return nullptr;
}

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
    ggml_backend_t backend = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(backend, threads);

    std::printf("{\n  \"generator\": \"scripts/gen-matmul-golden (ggml CPU backend)\",\n  \"cases\": [\n");
    const auto cases = mc::all_cases();
    for (size_t ci = 0; ci < cases.size(); ++ci) {
        const mc::Case& c = cases[ci];
        const mc::Layout& l = *mc::find_layout(c.type);
        const std::vector<uint8_t> w = mc::weights(l, c);
        const std::vector<float> x = mc::activations(c);

        ggml_init_params p = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
        ggml_context* ctx_w = ggml_init(p);
        ggml_context* ctx = ggml_init(p);
        ggml_tensor* W = ggml_new_tensor_2d(ctx_w, type_of(c.type), c.cols, c.rows);
        ggml_tensor* X = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c.cols, c.tokens);
        ggml_tensor* Y = ggml_mul_mat(ctx, W, X);

        ggml_backend_buffer_type_t buft = repack_buft(backend, Y);
        const bool repacked = buft != nullptr;
        if (!buft) buft = ggml_backend_get_default_buffer_type(backend);
        ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(ctx_w, buft);
        ggml_backend_tensor_set(W, w.data(), 0, w.size());

        ggml_cgraph* gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, Y);
        ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
        ggml_backend_tensor_set(X, x.data(), 0, x.size() * sizeof(float));
        if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) {
            std::fprintf(stderr, "oracle: compute failed\n");
            return 1;
        }
        std::vector<float> y(size_t(c.rows) * size_t(c.tokens));
        ggml_backend_tensor_get(Y, y.data(), 0, y.size() * sizeof(float));

        std::printf("    {\"type\": \"%s\", \"rows\": %d, \"cols\": %d, \"tokens\": %d, \"seed\": %llu, \"repacked\": %s,\n      \"y\": [",
                    c.type, c.rows, c.cols, c.tokens, (unsigned long long)c.seed, repacked ? "true" : "false");
        for (size_t i = 0; i < y.size(); ++i) {
            uint32_t bits;
            std::memcpy(&bits, &y[i], 4);
            std::printf("%s\"%08x\"", i ? ", " : "", bits);
        }
        std::printf("]}%s\n", ci + 1 < cases.size() ? "," : "");
        ggml_backend_buffer_free(buf);
        ggml_backend_buffer_free(wbuf);
        ggml_free(ctx);
        ggml_free(ctx_w);
    }
    std::printf("  ]\n}\n");
    ggml_backend_free(backend);
    return 0;
}
