#include "model/pooling.h"

#include <cmath>

#include "quant/reference.h"

namespace smolinfer::model {

std::vector<float> pool_rows(Pooling pooling, const float* rows, int n, int width) {
    std::vector<float> out(static_cast<size_t>(width));
    if (pooling != Pooling::Mean) {
        const float* row = rows + size_t(pooling == Pooling::Cls ? 0 : n - 1) * size_t(width);
        out.assign(row, row + width);
        return out;
    }
    const std::vector<float> div(size_t(n), 1.0f / float(n));
    std::vector<float> column(static_cast<size_t>(n));
    for (int e = 0; e < width; ++e) {
        for (int t = 0; t < n; ++t) column[size_t(t)] = rows[size_t(t) * size_t(width) + size_t(e)];
        out[size_t(e)] = quant::ref::dot_f32_f32(size_t(n), column.data(), div.data());
    }
    return out;
}

void normalize_l2(std::vector<float>& v) {
    double sum = 0.0;
    for (const float x : v) sum += double(x * x);
    sum = std::sqrt(sum);
    const float norm = sum > 0.0 ? float(1.0 / sum) : 0.0f;
    for (float& x : v) x *= norm;
}

}  // namespace smolinfer::model
