#pragma once
// Gated DeltaNet's steps (scenario.hpp's GatedDeltaNet), each a function of its inputs alone, so
// that the engine's pass over a text, a decode step's one row and the tests compute them the
// same way (transformers' torch_recurrent_gated_delta_rule, float32).
//
//   conv   out[t,c] = SiLU(Σ_i taps(c,i)·x[t − (K−1) + i, c])      x[·] = 0 before the text
//   l2     x / √(Σx² + 1e-6) per row                                 (the FLA library's l2norm)
//   rule   S = e^{g_t}·S;  δ = β_t·(v_t − Sᵀk_t);  S += k_t·δᵀ;  o_t = Sᵀq_t
//   A      A[t,j] = β_j·k_jᵀ·u_j, u_t = q_t, u_{j−1} = e^{g_j}(u_j − β_j·k_j·(k_jᵀu_j)):
//          o_t = Σ_j A[t,j]·v_j exactly (v never enters A)
#include "tensor/matrix.hpp"

namespace attn::linear {

// The causal depthwise convolution of each column of `mixed` (n × C) with its row of `taps`
// (C × K, oldest first), then SiLU. `history` (K−1 × C, oldest first), when given, holds the
// rows before the text (a decode step's conv state); else they are 0.
Matrix causal_conv_silu(const Matrix& mixed, const Matrix& taps, const Matrix* history = nullptr);
// Each row over each run of `width` columns, x·(1/√(Σx² + 1e-6)).
Matrix l2_normalized(const Matrix& x, int width);
// softplus(x) = ln(1 + eˣ), as torch computes it (x above 20: x itself).
float softplus(float x);
// One head's recurrence over its rows from `state` (d_k × d_v; zeros for a text's start), which
// it leaves at the last token's: the output o (n × d_v). q already × 1/√d_k.
Matrix delta_rule(const Matrix& q, const Matrix& k, const Matrix& v, const Vector& beta, const Vector& decay, Matrix& state);
// One head's implied attention matrix A (n × n, zero above the diagonal) over a text that
// starts from a zero state: A·V is delta_rule's output.
Matrix implied_weights(const Matrix& q, const Matrix& k, const Vector& beta, const Vector& decay);

}  // namespace attn::linear
