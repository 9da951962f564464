// The tile-wide fast paths of attention_rules.hpp: each applies the per-cell rule to a whole
// tile at once and is tested cell for cell against it.
#include "attention/attention_rules.hpp"

#include <algorithm>

namespace attn {

ScoreRule score_rule(const Scenario& s, float scale, float alibi_slope, int n_keys, float sink) {
    ScoreRule rule;
    rule.sink = sink;
    rule.scale = scale;
    rule.softcap = s.softcap;
    rule.alibi_slope = alibi_slope;
    rule.masked_fill = s.masked_fill;
    rule.mask = mask_rule(s, n_keys);
    return rule;
}

void scale_scores(const ScoreRule& rule, int i0, int j0, Matrix& tile) {
    tile *= rule.scale;  // ÷√d_k keeps the variance near 1
    if (rule.alibi_slope == 0.0f) return;  // alibi_term is −0: adding it changes nothing
    for (Eigen::Index r = 0; r < tile.rows(); ++r) {
        float* row = tile.row(r).data();
        const int i = i0 + static_cast<int>(r);
        for (Eigen::Index c = 0; c < tile.cols(); ++c) row[c] += alibi_term(rule.alibi_slope, i, j0 + static_cast<int>(c));
    }
}

void cap_scores(const ScoreRule& rule, Matrix& tile) {
    if (rule.softcap <= 0.0f) return;
    tile = tile.unaryExpr([&rule](float s) { return capped_score(rule, s); });  // std::tanh, as every other path
}

void mask_scores(const ScoreRule& rule, int i0, int j0, Matrix& tile) {
    const int rows = static_cast<int>(tile.rows()), cols = static_cast<int>(tile.cols());
    switch (rule.mask.kind) {
        case MaskKind::None: return;
        case MaskKind::Causal:
        case MaskKind::SlidingWindow:
        case MaskKind::Chunked:
        case MaskKind::Band:
            // Visible keys form one run per row: fill what lies outside it.
            for (int r = 0; r < rows; ++r) {
                int run_first = 0, run_last = 0;
                rule.mask.visible_run(i0 + r, run_first, run_last);
                const int first = std::clamp(run_first - j0, 0, cols), last = std::clamp(run_last - j0, first, cols);
                tile.row(r).head(first).setConstant(rule.masked_fill);
                tile.row(r).tail(cols - last).setConstant(rule.masked_fill);
            }
            return;
        default:
            for (int r = 0; r < rows; ++r) {
                float* row = tile.row(r).data();
                for (int c = 0; c < cols; ++c)
                    if (!rule.mask.visible(i0 + r, j0 + c)) row[c] = rule.masked_fill;
            }
    }
}

Matrix alibi_terms(float slope, int n_queries, int n_keys) {
    Matrix bias(n_queries, n_keys);
    for (int i = 0; i < n_queries; ++i)
        for (int j = 0; j < n_keys; ++j) bias(i, j) = alibi_term(slope, i, j);
    return bias;
}

void cell_exp_row(const float* scores, float* out, int n, float shift) {
    // Eigen's exp is vectorised only in an expression without select(), and it clamps its
    // argument (exp(−∞) would come out as 4e−39): the cells below the flush bound are
    // remembered first and zeroed after, in loops the compiler vectorises.
    constexpr int kChunk = 256;
    float keep[kChunk];
    for (int c0 = 0; c0 < n; c0 += kChunk) {
        const int m = std::min(kChunk, n - c0);
        const float* s = scores + c0;
        float* p = out + c0;
        for (int c = 0; c < m; ++c) keep[c] = s[c] - shift < kExpFlushBelow ? 0.0f : 1.0f;  // −∞ included
        Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>>(p, m) = (Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>>(s, m) - shift).exp();
        for (int c = 0; c < m; ++c) p[c] *= keep[c];
    }
}

void weights_from_exp_row(const float* scores, float* p, int n, float l) {
    switch (row_sum_kind(l)) {
        case RowSum::Nothing:
            std::fill(p, p + n, 0.0f);
            return;
        case RowSum::Overflowed:
            for (int c = 0; c < n; ++c) p[c] = scores[c] == kMinusInfinity ? 0.0f : std::numeric_limits<float>::quiet_NaN();
            return;
        case RowSum::Weighs: {
            Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>> w(p, n);
            w /= l;
            return;
        }
    }
}

}  // namespace attn
