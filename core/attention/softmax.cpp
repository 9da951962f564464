#include "attention/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention/attention_rules.hpp"

namespace attn {

Matrix softmax_rows(const Matrix& scores, SoftmaxKind kind) {
    Matrix weights;
    softmax_rows_into(scores, kind, weights);
    return weights;
}

namespace {

// Row by row, with a sink b (−∞: none); sink_weights, when given, gets its share of each row.
void softmax_rows(const Matrix& scores, SoftmaxKind kind, float sink, Matrix& weights, Matrix* sink_weights) {
    weights.resize(scores.rows(), scores.cols());
    if (sink_weights != nullptr) sink_weights->resize(scores.rows(), 1);
    const int n = static_cast<int>(scores.cols());
    if (n == 0) return;
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        const float* s = scores.row(i).data();
        float* p = weights.row(i).data();
        // (1, n_k): the row's exponentials against its shift (attention_rules.hpp), so the
        // stable softmax's largest is e⁰ = 1; then the row's weights by the rule of its sum.
        // A sink is one more cell of the row: in its max and its sum, not in its weights.
        const RowStart start = row_start(kind, sink);
        const float shift = row_shift(kind, kind == SoftmaxKind::Stable ? row_max_with_sink(scores.row(i).maxCoeff(), start.max) : 0.0f);
        cell_exp_row(s, p, n, shift);
        const float l = cell_exp(sink, shift) + weights.row(i).sum();
        weights_from_exp_row(s, p, n, l);
        if (sink_weights != nullptr) (*sink_weights)(i, 0) = row_weight(sink, shift, l);
    }
}

}  // namespace

void softmax_rows_into(const Matrix& scores, SoftmaxKind kind, Matrix& weights) {
    softmax_rows(scores, kind, kMinusInfinity, weights, nullptr);
}

void softmax_rows_into(const Matrix& scores, SoftmaxKind kind, float sink, Matrix& weights, Matrix& sink_weights) {
    softmax_rows(scores, kind, sink, weights, &sink_weights);
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
