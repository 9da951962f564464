#include "softmax.hpp"

#include <cmath>
#include <limits>

namespace attn {

SoftmaxResult softmax_rows(const Matrix& scores, SoftmaxKind kind) {
    SoftmaxResult result;
    softmax_rows_into(scores, kind, result.weights, result.fully_masked_rows, result.overflow);
    return result;
}

void softmax_rows_into(const Matrix& scores, SoftmaxKind kind, Matrix& weights, std::vector<int>& fully_masked_rows,
                       bool& overflow) {
    weights.resize(scores.rows(), scores.cols());
    fully_masked_rows.clear();
    overflow = false;
    constexpr float minus_inf = -std::numeric_limits<float>::infinity();
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        auto row = scores.row(i).array();
        auto out = weights.row(i).array();
        if (scores.cols() == 0 || (row == minus_inf).all()) {
            out.setZero();  // the fully masked row rule (softmax.hpp)
            fully_masked_rows.push_back(static_cast<int>(i));
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
        out /= out.sum();
        if (kind == SoftmaxKind::Naive && !out.allFinite() && (row.isFinite() || row == minus_inf).all())
            overflow = true;  // finite scores, non-finite weights: exp overflowed
    }
}

}  // namespace attn
