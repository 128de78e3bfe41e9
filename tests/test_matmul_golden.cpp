// Matmul results against llama.cpp's own, bit for bit: every weight format,
// matrices llama.cpp does and does not interleave, 1 to 8 tokens (its
// one-token path, its four-token groups and their remainders). The expected
// floats come from ggml's CPU backend (scripts/gen-matmul-golden); the inputs
// are rebuilt here from the same seeds (tests/support/matmul_cases.h).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

#include "model/matmul.h"
#include "model/weights.h"
#include "quant/kernels.h"
#include "runtime/thread_pool.h"
#include "support/matmul_cases.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

namespace mc = test::matmul_cases;

// ggml spells type names in lower case but for the K ("q4_K").
std::optional<quant::Type> type_named(std::string name) {
    for (char& ch : name) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    for (uint32_t id = 0; id < 64; ++id) {
        const auto t = quant::type_traits(id);
        if (t && t->name == name) return t->type;
    }
    return std::nullopt;
}

class MatmulGolden : public ::testing::TestWithParam<quant::Isa> {};

TEST_P(MatmulGolden, EqualsLlamaCppBitForBit) {
    const quant::Isa isa = GetParam();
    const nlohmann::json golden = test::load_golden("quant/matmul.json");
    const auto cases = mc::all_cases();
    ASSERT_EQ(golden["cases"].size(), cases.size()) << "golden file out of date: run scripts/gen-matmul-golden";
    runtime::ThreadPool pool(1);
    int checked = 0;
    for (size_t ci = 0; ci < cases.size(); ++ci) {
        const mc::Case& c = cases[ci];
        const nlohmann::json& g = golden["cases"][ci];
        ASSERT_EQ(g["type"], c.type);
        ASSERT_EQ(g["rows"], c.rows);
        ASSERT_EQ(g["cols"], c.cols);
        ASSERT_EQ(g["tokens"], c.tokens);
        ASSERT_EQ(g["seed"], c.seed);
        const auto type = type_named(c.type);
        ASSERT_TRUE(type) << c.type;
        const auto kernel = quant::matmul_kernel(*type, c.rows, c.cols, isa);
        ASSERT_TRUE(kernel) << c.type;

        const std::vector<uint8_t> w = mc::weights(*mc::find_layout(c.type), c);
        const std::vector<float> x = mc::activations(c);
        model::Matrix m;
        m.name = c.type;
        m.kernel = *kernel;
        m.data = w.data();
        m.rows = c.rows;
        m.cols = c.cols;
        m.row_bytes = w.size() / size_t(c.rows);
        std::vector<float> y(size_t(c.rows) * size_t(c.tokens));
        model::Matmul matmul(c.tokens, c.cols);
        matmul.run(pool, x.data(), c.tokens, c.cols, {{&m, y.data()}});

        int mismatches = 0;
        std::string first;
        for (size_t i = 0; i < y.size(); ++i) {
            uint32_t bits;
            std::memcpy(&bits, &y[i], 4);
            const uint32_t want = uint32_t(std::stoul(g["y"][i].get<std::string>(), nullptr, 16));
            if (bits == want) continue;
            if (mismatches++ == 0) {
                float wf;
                std::memcpy(&wf, &want, 4);
                char buf[160];
                std::snprintf(buf, sizeof buf, "token %zu row %zu: %.9g, llama.cpp %.9g", i / size_t(c.rows),
                              i % size_t(c.rows), double(y[i]), double(wf));
                first = buf;
            }
        }
        EXPECT_EQ(mismatches, 0) << c.type << " rows " << c.rows << " cols " << c.cols << " tokens " << c.tokens << " ("
                                 << (g["repacked"].get<bool>() ? "interleaved" : "plain") << " in llama.cpp): "
                                 << mismatches << " of " << y.size() << " differ; first: " << first;
        ++checked;
    }
    EXPECT_EQ(checked, int(cases.size()));
}

// Every instruction set this build and CPU can run.
std::vector<quant::Isa> available_isas() {
    std::vector<quant::Isa> isas;
    for (const quant::Isa isa : {quant::Isa::Reference, quant::Isa::Avx2, quant::Isa::Avx512Vnni, quant::Isa::WasmSimd}) {
        if (quant::isa_available(isa)) isas.push_back(isa);
    }
    return isas;
}

INSTANTIATE_TEST_SUITE_P(Isa, MatmulGolden, ::testing::ValuesIn(available_isas()), [](const auto& info) {
    std::string name(quant::isa_name(info.param));
    for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return name;
});

}  // namespace
}  // namespace smolinfer
