#pragma once
// The rules of attention for one cell and one row, written once. The full engine, the
// output-only (streaming) pass and the incremental update all apply them; shaders/scores.glsl
// is their GLSL copy, function for function, and tests/attention_cases.hpp runs one table of
// cases on every backend (the GPU kernels included) against the full engine.
//
//   scaled_score(q·k, i, j) = q·k·scale + alibi_term(i, j)
//   capped_score(s)         = c·tanh(s / c) with a soft-cap c > 0 (Gemma 2), else s
//   masked_score(q·k, i, j) = capped_score(scaled_score(q·k, i, j)), or the fill where key j is hidden
//   row_shift(m)            = what a row's exponentials are taken against: m (stable) or 0 (naive)
//   sink b (attention sinks, gpt-oss): the head's logit joins the row as one more cell that is
//   never drawn: m = max(b, max_j s_j) and l starts from cell_exp(b, shift) (row_start), so
//   sink_weight = row_weight(b, shift, l) and the row's weights sum to 1 − sink_weight. No
//   sink is b = −∞, which changes nothing.
//   cell_exp(s, shift)      = exp(s − shift), exactly 0 where that is below the smallest normal
//                             float (a masked −∞ cell included)
//   l                       = Σ_j cell_exp(s_j, shift), the row's sum
//   row_output(acc, l)      = 0 when l = 0, NaN when l is not finite, else acc / l,
//                             acc = Σ_j cell_exp(s_j, shift)·v_j
//   row_weight(s, shift, l) = 0 when s = −∞ or l = 0, NaN when l is not finite, else
//                             cell_exp(s, shift) / l
//
// A row with l = 0 is one where nothing weighs anything: the fully masked row under a −∞
// fill, or a naive softmax row whose every exponential underflows. Its weights are 0 and its
// output the zero vector, on every backend. A row with l = ∞ is the naive softmax's overflow:
// inf/inf, NaN.
//
// With a sink the fully masked row under −∞ is no longer empty: the sink is its only cell, so
// m = b, l = 1, the sink takes all of the weight, the keys' weights are 0 and the output is
// the zero vector. A finite fill f weighs exp(f − m) per hidden key beside the sink's exp(b − m).
//
// The per-cell functions define the rule; a fast path may apply it to a whole tile (Eigen's
// products, the run fill of causal and sliding-window masks, vectorised exponentials) and is
// tested cell for cell against them (tests/test_streaming.cpp, "[rules]").
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "attention/mask.hpp"
#include "tensor/matrix.hpp"
#include "attention/scenario.hpp"

namespace attn {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
// ln(FLT_MIN): below it exp(x) is subnormal, which GPUs flush to 0; every backend takes it as 0.
constexpr float kExpFlushBelow = -87.33654475f;

// What one head's scores are made with.
struct ScoreRule {
    float scale = 1.0f;                  // 1/√d_k, a custom scale, or 1
    float softcap = 0.0f;                // c > 0: s → c·tanh(s/c); 0: none
    float alibi_slope = 0.0f;            // m_h; 0 = no ALiBi
    float masked_fill = kMinusInfinity;  // written into the cells the mask hides
    float sink = kMinusInfinity;         // the head's sink logit b_h; −∞: no sink
    MaskRule mask;
};

// The scenario's rule for one head: scale, that head's ALiBi slope, the fill and the mask of
// n_keys keys (the mask points into the scenario: keep it alive); sink: the head's sink
// logit (head_sink).
ScoreRule score_rule(const Scenario& s, float scale, float alibi_slope, int n_keys, float sink = kMinusInfinity);
// Head h's sink logit b_h, or −∞ when the scenario has no sinks.
inline float head_sink(const Scenario& s, int h) {
    return h >= 0 && h < s.sinks.size() ? s.sinks(h) : kMinusInfinity;
}

inline bool fill_is_minus_inf(float fill) { return std::isinf(fill) && fill < 0.0f; }

// ALiBi: farther keys lose −m_h·|i − j|.
inline float alibi_term(float slope, int i, int j) { return -slope * static_cast<float>(std::abs(i - j)); }

// q·k → q·k·scale − m_h·|i − j|.
inline float scaled_score(const ScoreRule& rule, float q_dot_k, int i, int j) {
    return q_dot_k * rule.scale + alibi_term(rule.alibi_slope, i, j);
}

// Logit soft-capping: scores squeezed smoothly into (−c, c), near the identity for |s| ≪ c.
inline float capped_score(const ScoreRule& rule, float s) { return rule.softcap > 0.0f ? rule.softcap * std::tanh(s / rule.softcap) : s; }

// The scaled (and capped) score, or the fill value when key j is hidden from query i.
inline float masked_score(const ScoreRule& rule, float q_dot_k, int i, int j) {
    return rule.mask.visible(i, j) ? capped_score(rule, scaled_score(rule, q_dot_k, i, j)) : rule.masked_fill;
}

// The stable softmax subtracts the row's max, the naive one nothing; a row with nothing
// visible yet (max −∞) takes 0, so that each of its exponentials is exp(−∞) = 0.
inline float row_shift(SoftmaxKind kind, float row_max) {
    return kind == SoftmaxKind::Stable && row_max != kMinusInfinity ? row_max : 0.0f;
}

inline float cell_exp(float s, float shift) {
    const float x = s - shift;
    return x < kExpFlushBelow ? 0.0f : std::exp(x);  // NaN stays NaN
}

// Where a row's running max and sum start before any key: the sink's own cell, or (no sink,
// b = −∞) m = −∞ (0 under the naive softmax, which shifts by nothing) and l = 0.
struct RowStart {
    float max;  // m₀ = b (stable), 0 (naive)
    float sum;  // l₀ = cell_exp(b, row_shift(m₀))
};
inline RowStart row_start(SoftmaxKind kind, float sink) {
    const float max = kind == SoftmaxKind::Stable ? sink : 0.0f;
    return {max, cell_exp(sink, row_shift(kind, max))};
}
// A row's max with its sink: max(b, max_j s_j).
inline float row_max_with_sink(float row_max, float sink) { return std::max(row_max, sink); }

// How a row ends, from its sum l.
enum class RowSum { Nothing, Overflowed, Weighs };
inline RowSum row_sum_kind(float l) {
    if (l == 0.0f) return RowSum::Nothing;                  // nothing weighs anything
    if (!std::isfinite(l)) return RowSum::Overflowed;       // the naive sum overflowed: inf/inf
    return RowSum::Weighs;
}

inline float row_output(float acc, float l) {
    switch (row_sum_kind(l)) {
        case RowSum::Nothing: return 0.0f;
        case RowSum::Overflowed: return std::numeric_limits<float>::quiet_NaN();
        case RowSum::Weighs: break;
    }
    return acc / l;
}

inline float row_weight(float s, float shift, float l) {
    if (s == kMinusInfinity || l == 0.0f) return 0.0f;
    if (row_sum_kind(l) == RowSum::Overflowed) return std::numeric_limits<float>::quiet_NaN();
    return cell_exp(s, shift) / l;
}

// [SECTION] The same rules over a tile: the fast paths

// tile(r, c) ← scaled_score(tile(r, c), i0 + r, j0 + c): a tile of q·k products scaled and biased.
void scale_scores(const ScoreRule& rule, int i0, int j0, Matrix& tile);
// tile(r, c) ← capped_score(tile(r, c)): nothing without a soft-cap.
void cap_scores(const ScoreRule& rule, Matrix& tile);
// tile(r, c) ← the fill where key j0 + c is hidden from query i0 + r (masked_score on scaled scores).
void mask_scores(const ScoreRule& rule, int i0, int j0, Matrix& tile);
// (n_q × n_k) of alibi_term: the trace's position bias.
Matrix alibi_terms(float slope, int n_queries, int n_keys);
// out[c] ← cell_exp(scores[c], shift) for c < n, vectorised; out may be scores itself.
void cell_exp_row(const float* scores, float* out, int n, float shift);
// A row of exponentials p = cell_exp(s, shift) with sum l → its weights by row_weight:
// p / l, 0 when l = 0, NaN when l overflowed (0 where s = −∞: only then is scores read,
// and it may be p itself, the exponentials not yet taken).
void weights_from_exp_row(const float* scores, float* p, int n, float l);

}  // namespace attn
