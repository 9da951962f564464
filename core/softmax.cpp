#include "softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention_rules.hpp"

namespace attn {

Matrix softmax_rows(const Matrix& scores, SoftmaxKind kind) {
    Matrix weights;
    softmax_rows_into(scores, kind, weights);
    return weights;
}

void softmax_rows_into(const Matrix& scores, SoftmaxKind kind, Matrix& weights) {
    weights.resize(scores.rows(), scores.cols());
    const int n = static_cast<int>(scores.cols());
    if (n == 0) return;
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        const float* s = scores.row(i).data();
        float* p = weights.row(i).data();
        // (1, n_k): the row's exponentials against its shift (attention_rules.hpp), so the
        // stable softmax's largest is e⁰ = 1; then the row's weights by the rule of its sum.
        const float shift = row_shift(kind, kind == SoftmaxKind::Stable ? scores.row(i).maxCoeff() : 0.0f);
        cell_exp_row(s, p, n, shift);
        const float l = weights.row(i).sum();
        weights_from_exp_row(s, p, n, l);
    }
}

bool naive_row_far_from_overflow(float max_score, int n_keys) {
    const double limit = std::log(static_cast<double>(std::numeric_limits<float>::max())) - std::log(std::max(1, n_keys)) - 1.0;
    return max_score < limit;
}

bool naive_row_far_from_underflow(float max_score, int n_keys) {
    // Every exponential is 0 (below the smallest subnormal, e^−103.3, by a factor e), or the
    // largest is so far above the flush bound that the cells a GPU keeps as subnormals and
    // the CPU flushes (each below FLT_MIN) add less than 1e-6 of the row's sum.
    const double none = std::log(static_cast<double>(std::numeric_limits<float>::denorm_min())) - 1.0;
    const double far = kExpFlushBelow + std::log(std::max(1, n_keys)) + std::log(1e6);
    return max_score < none || max_score > far;
}

}  // namespace attn
