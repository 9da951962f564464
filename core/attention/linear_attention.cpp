#include "attention/linear_attention.hpp"

#include <cmath>

namespace attn::linear {

Matrix causal_conv_silu(const Matrix& mixed, const Matrix& taps, const Matrix* history) {
    const Eigen::Index n = mixed.rows(), channels = mixed.cols(), kernel = taps.cols();
    Matrix out(n, channels);
    for (Eigen::Index t = 0; t < n; ++t) {
        for (Eigen::Index c = 0; c < channels; ++c) {
            float sum = 0.0f;
            for (Eigen::Index i = 0; i < kernel; ++i) {
                const Eigen::Index row = t - (kernel - 1) + i;  // the tap i reads this row of the text
                float x = 0.0f;
                if (row >= 0) x = mixed(row, c);
                else if (history != nullptr && history->rows() + row >= 0) x = (*history)(history->rows() + row, c);
                sum += taps(c, i) * x;
            }
            out(t, c) = sum / (1.0f + std::exp(-sum));  // SiLU
        }
    }
    return out;
}

Matrix l2_normalized(const Matrix& x, int width) {
    Matrix out = x;
    for (Eigen::Index r = 0; r < x.rows(); ++r)
        for (Eigen::Index c = 0; c + width <= x.cols(); c += width) {
            auto run = out.row(r).segment(c, width);
            run *= 1.0f / std::sqrt(run.squaredNorm() + 1e-6f);
        }
    return out;
}

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

Matrix delta_rule(const Matrix& q, const Matrix& k, const Matrix& v, const Vector& beta, const Vector& decay, Matrix& state) {
    const Eigen::Index n = q.rows();
    Matrix out(n, v.cols());
    for (Eigen::Index t = 0; t < n; ++t) {
        state *= std::exp(decay(t));                                       // S = e^{g_t}·S
        const Vector remembered = k.row(t) * state;                        // Sᵀk_t (1 × d_v): what S holds for k_t
        const Vector delta = beta(t) * (v.row(t) - remembered);            // δ = β_t·(v_t − Sᵀk_t)
        state.noalias() += k.row(t).transpose() * delta;                   // S += k_t·δᵀ
        out.row(t).noalias() = q.row(t) * state;                           // o_t = Sᵀq_t
    }
    return out;
}

Matrix implied_weights(const Matrix& q, const Matrix& k, const Vector& beta, const Vector& decay) {
    const Eigen::Index n = q.rows();
    Matrix a = Matrix::Zero(n, n);
    Vector u;
    for (Eigen::Index t = 0; t < n; ++t) {
        u = q.row(t);  // u_t = q_t, then back through each earlier token's decay and correction
        for (Eigen::Index j = t; j >= 0; --j) {
            const float ku = k.row(j).dot(u);
            a(t, j) = beta(j) * ku;
            if (j > 0) u = std::exp(decay(j)) * (u - beta(j) * ku * k.row(j));  // u_{j−1} = e^{g_j}(I − β_j k_j k_jᵀ)u_j
        }
    }
    return a;
}

}  // namespace attn::linear
