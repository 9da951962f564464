#include "attention/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>

#include "tensor/random.hpp"
#include "attention/registry.hpp"   // parse_matrix_name, sibling_of, display_name

namespace attn {

std::vector<SharpnessPoint> softmax_sharpness(const std::vector<int>& d_ks, int n_keys, int samples, std::uint64_t seed) {
    std::vector<SharpnessPoint> points;
    for (int d_k : d_ks) {
        SharpnessPoint p;
        p.d_k = d_k;
        const Matrix q = normal_matrix(samples, d_k, seed * 31 + static_cast<std::uint64_t>(d_k));
        const Matrix k = normal_matrix(n_keys, d_k, seed * 37 + static_cast<std::uint64_t>(d_k));
        const Matrix scores = q * k.transpose();  // (samples, d_k)·(d_k, n_keys)
        for (int scaled = 0; scaled < 2; ++scaled) {
            const double factor = scaled ? 1.0 / std::sqrt(static_cast<double>(d_k)) : 1.0;
            double max_sum = 0, entropy_sum = 0;
            for (int i = 0; i < samples; ++i) {
                const Eigen::ArrayXf row = scores.row(i).array() * static_cast<float>(factor);
                const Eigen::ArrayXf w = (row - row.maxCoeff()).exp() / (row - row.maxCoeff()).exp().sum();
                max_sum += w.maxCoeff();
                entropy_sum += -(w * (w + 1e-30f).log()).sum();
            }
            (scaled ? p.max_weight_scaled : p.max_weight_unscaled) = max_sum / samples;
            (scaled ? p.entropy_scaled : p.entropy_unscaled) = entropy_sum / samples;
        }
        points.push_back(p);
    }
    return points;
}

std::vector<MatrixDifference> compare_traces(const Trace& a, const Trace& b) {
    std::vector<MatrixDifference> out;
    for (const std::string& name : matrix_names(a)) {
        const Matrix* ma = find_matrix(a, name);
        const Matrix* mb = find_matrix(b, name);
        if (!ma || !mb || ma->rows() != mb->rows() || ma->cols() != mb->cols()) continue;
        MatrixDifference d;
        d.name = name;
        d.difference = *mb - *ma;
        // −∞ − (−∞) is NaN: two cells masked alike do not differ.
        for (Eigen::Index i = 0; i < d.difference.size(); ++i)
            if (std::isnan(d.difference.data()[i]) && ma->data()[i] == mb->data()[i]) d.difference.data()[i] = 0.0f;
        float magnitude = 0.0f;
        for (Eigen::Index i = 0; i < d.difference.size(); ++i) {
            const float x = d.difference.data()[i], from_a = ma->data()[i], from_b = mb->data()[i];
            if (std::isfinite(x)) d.max_abs = std::max(d.max_abs, std::fabs(x));
            else ++d.non_finite;
            if (std::isfinite(from_a)) magnitude = std::max(magnitude, std::fabs(from_a));
            if (std::isfinite(from_b)) magnitude = std::max(magnitude, std::fabs(from_b));
        }
        d.noise = 16.0f * std::numeric_limits<float>::epsilon() * magnitude;
        out.push_back(std::move(d));
    }
    return out;
}

namespace {

std::string fixed(double x, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
    return buf;
}

}  // namespace

HandCheck check_hand_value(const Trace& t, const std::string& name, int row, int col, double value, int decimals) {
    HandCheck check;
    const std::optional<MatrixRef> ref = parse_matrix_name(name);
    const Matrix* m = ref ? matrix_of(t, *ref) : nullptr;
    if (!m || row < 0 || col < 0 || row >= m->rows() || col >= m->cols()) {
        check.verdict = "There is no cell (" + std::to_string(row + 1) + ", " + std::to_string(col + 1) + ") in " + display_name(name) + ".";
        return check;
    }
    check.expected = (*m)(row, col);
    check.tolerance = 0.5 * std::pow(10.0, -std::max(0, decimals)) + 1e-6;
    const int shown = std::max(decimals, 2) + 1;
    // The tolerance said as it was judged: half a unit of the last decimal typed.
    const std::string places = std::to_string(std::max(0, decimals)) + (decimals == 1 ? " decimal" : " decimals");
    const std::string within = fixed(0.5 * std::pow(10.0, -std::max(0, decimals)), std::max(0, decimals) + 1);
    if (std::fabs(value - check.expected) <= check.tolerance) {
        check.correct = true;
        check.verdict = "Right to " + places + ": the value is " + fixed(check.expected, shown) + ", and " + fixed(value, decimals) +
                        " is within \xC2\xB1" + within + " of it.";
        return check;
    }
    check.verdict = "Not quite: the value is " + fixed(check.expected, shown) + ", you have " + fixed(value, decimals) +
                    " (judged to " + places + ": within \xC2\xB1" + within + ").";
    // Known slips: a value that matches another step of the same cell says which step was missed
    // (the steps named by the registry, of the same head).
    const Arithmetic step = ref->entry->arithmetic;
    auto sibling = [&](const std::string& key) { return sibling_of(t, *ref, key); };
    auto cell_of = [&](const std::string& other) -> std::optional<double> {
        const Matrix* o = sibling(other);
        if (!o || row >= o->rows() || col >= o->cols()) return std::nullopt;
        return (*o)(row, col);
    };
    auto near = [&](std::optional<double> x) { return x && std::fabs(value - *x) <= check.tolerance; };
    if (step == Arithmetic::ScaledScore && near(cell_of("scores")))
        check.verdict += " You have the raw score Q·Kᵀ: divide it by √d_k = " + fixed(std::sqrt(static_cast<double>(t.d_k)), 3) + ".";
    else if (step == Arithmetic::ScaledScore && cell_of("scores") && std::fabs(value - *cell_of("scores") / t.d_k) <= check.tolerance)
        check.verdict += " It looks like you divided by d_k = " + std::to_string(t.d_k) + " instead of √d_k.";
    else if (step == Arithmetic::Softmax) {
        const Matrix* s = sibling("masked_scores");
        if (s && row < s->rows()) {
            // The row's steps, in double: e^s, Σ e^s, and the shifted versions.
            double max = -INFINITY, sum = 0, shifted_sum = 0, score_sum = 0;
            for (Eigen::Index j = 0; j < s->cols(); ++j) max = std::max(max, static_cast<double>((*s)(row, j)));
            for (Eigen::Index j = 0; j < s->cols(); ++j) {
                const double x = (*s)(row, j);
                sum += std::exp(x);
                shifted_sum += std::exp(x - max);
                score_sum += x;
            }
            const double score = (*s)(row, col), numerator = std::exp(score);
            if (std::fabs(value - numerator) <= check.tolerance)
                check.verdict += " You have the exponential e^" + fixed(score, 3) + "; divide it by the row's sum " + fixed(sum, 3) + ".";
            else if (std::fabs(value - std::exp(score - max)) <= check.tolerance)
                check.verdict += " You have e^(s − max) = " + fixed(std::exp(score - max), 3) +
                                 "; divide it by the shifted sum " + fixed(shifted_sum, 3) + ".";
            else if (near(cell_of("masked_scores")))
                check.verdict += " You have the score itself: the weight is its softmax, e^s / Σ e^s over the row.";
            else if (std::fabs(value - score / score_sum) <= check.tolerance)
                check.verdict += " You divided the score by the row's sum of scores; the softmax divides exponentials: e^s / Σ e^s.";
        }
    } else if (step == Arithmetic::HeadOutput) {
        const Matrix* w = sibling("weights");
        const Matrix* v = sibling("v");
        if (w && v) {
            check.verdict += " The output is Σ_j weight(" + std::to_string(row + 1) + ", j) · V(j, " + std::to_string(col + 1) + "):";
            for (Eigen::Index j = 0; j < w->cols() && j < 8; ++j)
                check.verdict += (j ? " + " : " ") + fixed((*w)(row, j), 3) + "·" + fixed((*v)(j, col), 3);
            check.verdict += ".";
        }
    }
    return check;
}

// Non-finite values

bool NonFiniteReport::contains(const std::string& name) const {
    return std::find(matrices.begin(), matrices.end(), name) != matrices.end();
}

NonFiniteReport non_finite_report(const Trace& trace) {
    NonFiniteReport report;
    if (!trace.ok) return report;
    for (const std::string& name : matrix_names(trace)) {
        const auto ref = parse_matrix_name(name);
        if (const SharedMatrix* weight = ref ? weight_of(trace, *ref->entry) : nullptr) {
            if (weight->first_non_finite().valid()) report.matrices.push_back(name);
            continue;
        }
        const Matrix* m = find_matrix(trace, name);
        if (m == nullptr || m->allFinite()) continue;
        const bool masked_scores = ref && ref->entry->arithmetic == Arithmetic::MaskedScore;
        if (masked_scores && trace.visible.rows() == m->rows() && trace.visible.cols() == m->cols()) {
            bool hidden_only = true;  // only the fill of hidden cells is non-finite
            for (Eigen::Index r = 0; r < m->rows() && hidden_only; ++r)
                for (Eigen::Index c = 0; c < m->cols() && hidden_only; ++c)
                    hidden_only = std::isfinite((*m)(r, c)) || !trace.visible(r, c);
            if (hidden_only) continue;
        }
        report.matrices.push_back(name);
    }
    if (report.matrices.empty()) return report;
    if (!trace.non_finite_inputs.empty()) {
        // Cells as the user counts them: row and column from 1.
        auto cell = [](const NonFinite& n) {
            return n.matrix + "(" + std::to_string(n.cell.row + 1) + "," + std::to_string(n.cell.col + 1) + ")";
        };
        std::string cells;
        for (const NonFinite& n : trace.non_finite_inputs) cells += (cells.empty() ? "" : ", ") + cell(n);
        report.origin = "from the input " + cells + (trace.non_finite_inputs.size() > 1 ? " (the first non-finite cell of each)" : "") +
                        ": every value computed from " +
                        (trace.non_finite_inputs.size() > 1 ? std::string("them") : cell(trace.non_finite_inputs.front())) + " carries it";
        return report;
    }
    const std::string& first = report.matrices.front();
    bool overflow = false;
    for (const HeadTrace& h : trace.head) overflow = overflow || h.softmax_overflow;
    report.origin = "first appears in " + display_name(first) + " from finite inputs: " +
                    (overflow ? std::string("the naive softmax overflowed (exp of a large score is ∞; the stable softmax subtracts the row maximum first)")
                              : std::string("a value beyond the float range (about ±3.4e38) overflowed to ±∞"));
    return report;
}

}  // namespace attn
