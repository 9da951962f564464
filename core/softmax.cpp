#include "softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn {

Matrix softmax_rows(const Matrix& scores, SoftmaxKind kind) {
    Matrix weights;
    softmax_rows_into(scores, kind, weights);
    return weights;
}

void softmax_rows_into(const Matrix& scores, SoftmaxKind kind, Matrix& weights) {
    weights.resize(scores.rows(), scores.cols());
    constexpr float minus_inf = -std::numeric_limits<float>::infinity();
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        auto row = scores.row(i).array();
        auto out = weights.row(i).array();
        if (scores.cols() == 0 || (row == minus_inf).all()) {
            out.setZero();  // nothing visible: the zero row (softmax.hpp)
            continue;
        }
        const float shift = kind == SoftmaxKind::Stable ? row.maxCoeff() : 0.0f;
        // (1, n_k): exponentials, shifted by the row max when stable so the largest is e⁰ = 1.
        // Eigen's exp is vectorised only without select() and clamps its argument, so
        // exp(−∞) would be 4e−39: masked cells are zeroed after, in a vectorisable loop.
        out = (row - shift).exp();
        const float* in = scores.row(i).data();
        float* w = weights.row(i).data();
        for (Eigen::Index j = 0; j < scores.cols(); ++j) w[j] = in[j] == minus_inf ? 0.0f : w[j];
        const float sum = out.sum();
        if (!std::isfinite(sum)) out.setConstant(std::numeric_limits<float>::quiet_NaN());  // overflowed: inf/inf
        else out /= sum;
        for (Eigen::Index j = 0; j < scores.cols(); ++j) w[j] = in[j] == minus_inf ? 0.0f : w[j];  // masked cells stay 0
    }
}

bool naive_row_far_from_overflow(float max_score, int n_keys) {
    const double limit = std::log(static_cast<double>(std::numeric_limits<float>::max())) - std::log(std::max(1, n_keys)) - 1.0;
    return max_score < limit;
}

}  // namespace attn
