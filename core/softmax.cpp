#include "softmax.hpp"

#include <cmath>
#include <limits>

namespace attn {

SoftmaxResult softmax_rows(const Matrix& scores, SoftmaxKind kind) {
    SoftmaxResult result;
    result.weights.resize(scores.rows(), scores.cols());
    constexpr float minus_inf = -std::numeric_limits<float>::infinity();
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        auto row = scores.row(i).array();
        auto out = result.weights.row(i).array();
        if (scores.cols() == 0 || (row == minus_inf).all()) {
            out.setZero();  // the fully masked row rule (softmax.hpp)
            result.fully_masked_rows.push_back(static_cast<int>(i));
            continue;
        }
        // (1, n_k): exponentials, shifted by the row max when stable so the largest is e⁰ = 1
        const float shift = kind == SoftmaxKind::Stable ? row.maxCoeff() : 0.0f;
        // Eigen's vectorised exp clamps its argument, so exp(−∞) would come out as a tiny
        // positive number: masked cells are set to exactly 0 instead.
        out = (row == minus_inf).select(0.0f, (row - shift).exp());
        out /= out.sum();
        const bool finite_scores = (row.isFinite() || row == minus_inf).all();
        if (finite_scores && !out.isFinite().all()) result.overflow = true;
    }
    return result;
}

}  // namespace attn
