#include "attention/positional.hpp"

#include <algorithm>
#include <cmath>

#include "tensor/random.hpp"

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

bool default_rope(const RopeOptions& rope) {
    return rope.pairing == RopePairing::Interleaved && rope.theta == 10000.0f && rope.rotary_dims == 0 &&
           rope.scaling == RopeScalingKind::None && rope.attention_factor == 1.0f;
}

bool long_rope_factors(const RopeOptions& rope, int length) {
    return rope.scaling == RopeScalingKind::LongRope && length > rope.original_max_positions;
}

double yarn_mscale(double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; }

std::vector<float> rope_inverse_frequencies(const RopeOptions& rope, int d_k, int length) {
    const int r = rope.rotary_dims > 0 ? std::min(rope.rotary_dims, d_k) : d_k;
    std::vector<float> inv_freq(static_cast<std::size_t>(r / 2));
    // 1.0 / (base ** (arange(0, r, 2).float() / r)): float32 throughout
    for (int i = 0; i < r / 2; ++i) {
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(r);
        inv_freq[static_cast<std::size_t>(i)] = 1.0f / std::pow(rope.theta, exponent);
    }
    if (rope.scaling == RopeScalingKind::Linear) {
        for (float& f : inv_freq) f = f / rope.factor;
    } else if (rope.scaling == RopeScalingKind::Llama3) {
        // _compute_llama3_parameters: wavelengths beyond the low band ÷ factor, below the high
        // band as they are, in between a smooth blend
        const double old_context = rope.original_max_positions;
        const double low_freq_wavelen = old_context / rope.low_freq_factor;
        const double high_freq_wavelen = old_context / rope.high_freq_factor;
        for (float& f : inv_freq) {
            const float wavelen = static_cast<float>(2 * M_PI) / f;
            float scaled = wavelen > low_freq_wavelen ? f / rope.factor : f;
            const float smooth = (static_cast<float>(old_context) / wavelen - rope.low_freq_factor) /
                                 (rope.high_freq_factor - rope.low_freq_factor);
            const float smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled;
            const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
            if (medium) scaled = smoothed;
            f = scaled;
        }
    } else if (rope.scaling == RopeScalingKind::LongRope) {
        // _compute_longrope_parameters: 1.0 / (ext_factors * base**(arange(0, r, 2) / r)), float32
        const Vector& ext = long_rope_factors(rope, length) ? rope.long_factor : rope.short_factor;
        for (int i = 0; i < r / 2; ++i) {
            const float exponent = static_cast<float>(2 * i) / static_cast<float>(r);
            const float e = i < ext.size() ? ext(i) : 1.0f;  // the engine's check refuses a list of another length
            inv_freq[static_cast<std::size_t>(i)] = 1.0f / (e * std::pow(rope.theta, exponent));
        }
    } else if (rope.scaling == RopeScalingKind::Yarn) {
        // _compute_yarn_parameters: the dims (in pairs) that turn more than beta_fast times within
        // original_max_position_embeddings keep their frequency (extrapolation), those that turn
        // fewer than beta_slow times are divided by factor (interpolation), a linear ramp between.
        // The ramp's ends in float64 (Python's math), the blend in float32 (torch's).
        const double base = rope.theta;
        const auto correction_dim = [&](double turns) {
            return (r * std::log(rope.original_max_positions / (turns * 2 * M_PI))) / (2 * std::log(base));
        };
        double low = correction_dim(rope.beta_fast), high = correction_dim(rope.beta_slow);
        if (rope.truncate) low = std::floor(low), high = std::ceil(high);
        low = std::max(low, 0.0), high = std::min(high, static_cast<double>(r - 1));
        if (low == high) high += 0.001;  // "Prevent singularity"
        for (int i = 0; i < r / 2; ++i) {
            const float exponent = static_cast<float>(2 * i) / static_cast<float>(r);
            const float pos_freq = std::pow(rope.theta, exponent);
            const float extrapolation = 1.0f / pos_freq, interpolation = 1.0f / (rope.factor * pos_freq);
            const float ramp = std::clamp((static_cast<float>(i) - static_cast<float>(low)) / static_cast<float>(high - low), 0.0f, 1.0f);
            const float kept = 1.0f - ramp;  // inv_freq_extrapolation_factor
            inv_freq[static_cast<std::size_t>(i)] = interpolation * (1.0f - kept) + extrapolation * kept;
        }
    }
    return inv_freq;
}

namespace {

// cos and sin of each pair's angle at `position`: float(p)·f_i in float32, each × the attention
// factor, as Hugging Face's rotary embedding computes them.
void fill_turn(RowTurn& turn, const std::vector<float>& inv_freq, int position, float attention_factor) {
    turn.cos.resize(inv_freq.size());
    turn.sin.resize(inv_freq.size());
    for (std::size_t i = 0; i < inv_freq.size(); ++i) {
        const float angle = static_cast<float>(position) * inv_freq[i];
        turn.cos[i] = static_cast<float>(std::cos(angle)) * attention_factor;
        turn.sin[i] = static_cast<float>(std::sin(angle)) * attention_factor;
    }
}

}  // namespace

Matrix apply_rotary(const Matrix& m, const RopeOptions& rope) {
    if (default_rope(rope)) return apply_rotary(m);
    const std::vector<float> inv_freq = rope_inverse_frequencies(rope, static_cast<int>(m.cols()), static_cast<int>(m.rows()));
    Matrix out(m.rows(), m.cols());
    RowTurn turn;
    turn.pairing = rope.pairing;
    for (Eigen::Index p = 0; p < m.rows(); ++p) {
        fill_turn(turn, inv_freq, static_cast<int>(p), rope.attention_factor);
        out.row(p) = rotate_row(m.row(p), turn);
    }
    return out;
}

Vector rotate_row(const Vector& row, int position, const RopeOptions& rope, int length) {
    return rotate_row(row, row_turn(rope, static_cast<int>(row.cols()), position, length));
}

RowTurn row_turn(const RopeOptions& rope, int d, int position, int length) {
    RowTurn turn;
    turn.default_rope = default_rope(rope);
    turn.pairing = turn.default_rope ? RopePairing::Interleaved : rope.pairing;
    if (turn.default_rope) {  // as rotate_row(row, position)
        for (int two_i = 0; two_i + 1 < d; two_i += 2) {
            float c = 0.0f, s = 0.0f;
            rotary_cos_sin(position, two_i, d, c, s);
            turn.cos.push_back(c);
            turn.sin.push_back(s);
        }
        return turn;
    }
    fill_turn(turn, rope_inverse_frequencies(rope, d, length), position, rope.attention_factor);
    return turn;
}

Vector rotate_row(const Vector& row, const RowTurn& turn) {
    Vector out = row;
    const int pairs = static_cast<int>(turn.cos.size());
    for (int i = 0; i < pairs; ++i) {
        const float c = turn.cos[static_cast<std::size_t>(i)], s = turn.sin[static_cast<std::size_t>(i)];
        const int a = turn.pairing == RopePairing::Interleaved ? 2 * i : i;
        const int b = turn.pairing == RopePairing::Interleaved ? 2 * i + 1 : i + pairs;
        const float x0 = row(a), x1 = row(b);
        // each form as the rotation it stands for writes it (a contracted multiply-add rounds
        // by the order of its terms)
        out(a) = x0 * c - x1 * s;
        out(b) = turn.default_rope ? x0 * s + x1 * c : x1 * c + x0 * s;
    }
    return out;
}

float alibi_slope(int head, int heads) {
    return std::pow(2.0f, -8.0f * static_cast<float>(head + 1) / static_cast<float>(heads));
}

}  // namespace attn
