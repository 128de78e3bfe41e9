// Every tensor of every golden model, dequantized by smolinfer's reference
// dequantizers, equals the PyPI `gguf` package's dequantization byte for
// byte (tests/golden/<model>/dequant.json, made by
// scripts/gen-dequant-golden.py through scripts/make-golden). For the models
// smolinfer's quantizer writes, this also proves the package reads them.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gguf/gguf.h"
#include "quant/reference.h"
#include "runtime/file_bytes.h"
#include "runtime/sha256.h"
#include "support/paths.h"

namespace smolinfer {
namespace {

class GoldenDequant : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenDequant, EveryTensorEqualsTheGgufPackage) {
    const auto golden = test::load_golden(GetParam() + "/dequant.json");
    const auto bytes = runtime::FileBytes::map(test::model_path(GetParam()));
    const gguf::File file = gguf::File::parse(bytes->bytes());
    ASSERT_EQ(file.tensors().size(), golden["tensors"].size());
    std::vector<float> row;
    for (const auto& g : golden["tensors"]) {
        const std::string name = g["name"];
        const gguf::TensorInfo* t = file.find_tensor(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(std::string(t->traits.name), g["type"].get<std::string>()) << name;
        const auto shape = g["shape"].get<std::vector<uint64_t>>();
        for (size_t d = 0; d < shape.size(); ++d) EXPECT_EQ(t->ne[d], shape[d]) << name << " dim " << d;

        runtime::Sha256 sha;
        row.resize(t->ne[0]);
        for (uint64_t r = 0; r < t->rows(); ++r) {
            quant::ref::dequantize_row(t->type(), t->data + r * t->row_bytes(), row.data(), row.size());
            sha.update({reinterpret_cast<const uint8_t*>(row.data()), row.size() * sizeof(float)});
        }
        EXPECT_EQ(sha.finish_hex(), g["sha256"].get<std::string>()) << name << " (" << g["type"] << ")";
    }
}

INSTANTIATE_TEST_SUITE_P(Model, GoldenDequant, ::testing::ValuesIn(test::smollm2_golden_models()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace smolinfer
