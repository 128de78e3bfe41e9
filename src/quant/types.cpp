#include "quant/types.h"

#include <array>
#include <string>

#include "quant/blocks.h"

namespace smolinfer::quant {

namespace {

constexpr std::array kTraits = {
    TypeTraits{Type::F32, "F32", 1, 4},
    TypeTraits{Type::F16, "F16", 1, 2},
    TypeTraits{Type::BF16, "BF16", 1, 2},
    TypeTraits{Type::Q4_0, "Q4_0", kQK32, sizeof(BlockQ4_0)},
    TypeTraits{Type::Q4_1, "Q4_1", kQK32, sizeof(BlockQ4_1)},
    TypeTraits{Type::Q5_0, "Q5_0", kQK32, sizeof(BlockQ5_0)},
    TypeTraits{Type::Q5_1, "Q5_1", kQK32, sizeof(BlockQ5_1)},
    TypeTraits{Type::Q8_0, "Q8_0", kQK32, sizeof(BlockQ8_0)},
    TypeTraits{Type::Q8_1, "Q8_1", kQK32, sizeof(BlockQ8_1)},
    TypeTraits{Type::Q2_K, "Q2_K", kQK256, sizeof(BlockQ2_K)},
    TypeTraits{Type::Q3_K, "Q3_K", kQK256, sizeof(BlockQ3_K)},
    TypeTraits{Type::Q4_K, "Q4_K", kQK256, sizeof(BlockQ4_K)},
    TypeTraits{Type::Q5_K, "Q5_K", kQK256, sizeof(BlockQ5_K)},
    TypeTraits{Type::Q6_K, "Q6_K", kQK256, sizeof(BlockQ6_K)},
    TypeTraits{Type::Q8_K, "Q8_K", kQK256, sizeof(BlockQ8_K)},
};

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t type_id) {
    for (const auto& t : kTraits) {
        if (static_cast<uint32_t>(t.type) == type_id) {
            return t;
        }
    }
    return std::nullopt;
}

const TypeTraits& traits(Type type) {
    for (const auto& t : kTraits) {
        if (t.type == type) {
            return t;
        }
    }
    // Every enumerator is in kTraits; reaching here is a programming error.
    std::abort();
}

std::string type_name(uint32_t type_id) {
    if (auto t = type_traits(type_id)) {
        return std::string(t->name);
    }
    return "id " + std::to_string(type_id);
}

}  // namespace smolinfer::quant
