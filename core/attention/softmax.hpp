#pragma once
#include "tensor/matrix.hpp"
#include "attention/scenario.hpp"

namespace attn {

// Softmax over each row of scores, skipping nothing: masking is done before, by writing
// the fill value into masked cells. The rules are attention_rules.hpp's, applied to whole
// rows: each exponential is cell_exp(s, row_shift(max)), and the row's sum l decides the rest.
//
// l = 0, nothing weighs anything: the weights are all 0, so the output is the zero vector.
// That is the fully masked row under a −∞ fill (which rows those are is the mask's to say,
// core/attention/mask.hpp), and a naive softmax row whose every exponential underflows (every score
// below ln FLT_MIN ≈ −87.3). A row masked with a finite fill (e.g. −1e9) under the stable
// softmax is computed as written, which is what PyTorch and NumPy do: every cell equal →
// uniform weights.
//
// The naive softmax overflows when Σ_j exp(s_j) exceeds the float range (3.4e38): the row's
// weights are then inf/inf = NaN and its output NaN, on every backend, and the trace flags
// the head (the overflow rule, engine.hpp). Where the largest exponent comes within reach of
// the limit, float rounding decides whether the sum overflows, and exp is rounded
// differently on a GPU (GLSL allows 3 + 2·|x| ULP) than on the CPU: backends agree on a row
// only when it is far from the limit (naive_row_far_from_overflow), and likewise far from
// the underflow bound (naive_row_far_from_underflow).
Matrix softmax_rows(const Matrix& scores, SoftmaxKind kind);
// The same, writing into weights (resized; its storage is reused when the shape matches).
void softmax_rows_into(const Matrix& scores, SoftmaxKind kind, Matrix& weights);
// With an attention sink b (attention_rules.hpp: row_start): each row's shift is taken over
// max(b, max_j s_j) and its sum starts from the sink's exponential; sink_weights (n × 1) gets
// the sink's share of each row, what its weights fall short of 1. b = −∞ is the plain softmax.
void softmax_rows_into(const Matrix& scores, SoftmaxKind kind, float sink, Matrix& weights, Matrix& sink_weights);

// True when a naive softmax row of n_keys scores whose largest is max_score cannot overflow
// on any backend: n_keys · e^max_score stays a factor e below the float range, i.e.
// max_score < ln(FLT_MAX) − ln(n_keys) − 1 (≈ 87.7 − ln n_keys).
bool naive_row_far_from_overflow(float max_score, int n_keys);
// True when a naive softmax row of n_keys scores whose largest is max_score is far from the
// underflow bound (cell_exp flushes below ln FLT_MIN; a GPU may keep subnormals): either every
// exponential is 0 on any backend, or the flushed cells weigh less than 1e-6 of the row.
bool naive_row_far_from_underflow(float max_score, int n_keys);

}  // namespace attn
