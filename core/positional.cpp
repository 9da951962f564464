#include "positional.hpp"

#include <cmath>

#include "random.hpp"

namespace attn {

Matrix sinusoidal_encoding(int n, int d_model) {
    Matrix pe(n, d_model);
    for (int p = 0; p < n; ++p) {
        for (int j = 0; j < d_model; ++j) {
            const int two_i = j - (j % 2);  // dimensions 2i and 2i+1 share one frequency
            const double angle = p / std::pow(10000.0, static_cast<double>(two_i) / d_model);
            pe(p, j) = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
        }
    }
    return pe;
}

Matrix learned_encoding(int n, int d_model, std::uint64_t seed) {
    // One stream per position, so growing the sequence never changes earlier rows.
    Matrix pe(n, d_model);
    for (int p = 0; p < n; ++p) pe.row(p) = normal_matrix(1, d_model, seed * 1000003ull + 0x1ea4edull + p, 0.5f);
    return pe;
}

Matrix additive_encoding(PositionalEncoding kind, int n, int d_model, std::uint64_t seed) {
    switch (kind) {
        case PositionalEncoding::Sinusoidal: return sinusoidal_encoding(n, d_model);
        case PositionalEncoding::Learned: return learned_encoding(n, d_model, seed);
        default: return Matrix::Zero(n, d_model);
    }
}

void rotary_cos_sin(int position, int two_i, int d, float& cos_angle, float& sin_angle) {
    const double angle = position * std::pow(10000.0, -static_cast<double>(two_i) / d);
    cos_angle = static_cast<float>(std::cos(angle));
    sin_angle = static_cast<float>(std::sin(angle));
}

Vector rotate_row(const Vector& row, int position) {
    Vector out = row;
    const int d = static_cast<int>(row.cols());
    for (int two_i = 0; two_i + 1 < d; two_i += 2) {
        float c = 0.0f, s = 0.0f;
        rotary_cos_sin(position, two_i, d, c, s);
        const float x0 = row(two_i), x1 = row(two_i + 1);
        out(two_i) = x0 * c - x1 * s;
        out(two_i + 1) = x0 * s + x1 * c;
    }
    return out;
}

Matrix apply_rotary(const Matrix& m) {
    Matrix out(m.rows(), m.cols());
    for (Eigen::Index p = 0; p < m.rows(); ++p) out.row(p) = rotate_row(m.row(p), static_cast<int>(p));
    return out;
}

float alibi_slope(int head, int heads) {
    return std::pow(2.0f, -8.0f * static_cast<float>(head + 1) / static_cast<float>(heads));
}

}  // namespace attn
