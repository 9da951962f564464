#pragma once
#include <cstdint>

#include "matrix.hpp"
#include "scenario.hpp"

namespace attn {

// (n × d_model): PE(p, 2i) = sin(p / 10000^(2i/d_model)), PE(p, 2i+1) = cos(same angle).
// i counts pairs of dimensions, so dimension 2i and 2i+1 share one frequency.
Matrix sinusoidal_encoding(int n, int d_model);

// (n × d_model): a seeded table, one row per position, N(0, 0.5²).
Matrix learned_encoding(int n, int d_model, std::uint64_t seed);

// The additive encoding for kind (zeros for None, Rotary and ALiBi, which do not add).
Matrix additive_encoding(PositionalEncoding kind, int n, int d_model, std::uint64_t seed);

// RoPE: rotates each pair (2i, 2i+1) of row p by the angle p · 10000^(−2i/d).
// An odd last column is left as it is.
Matrix apply_rotary(const Matrix& m);
// The same for one row standing at `position`.
Vector rotate_row(const Vector& row, int position);
// cos and sin of RoPE's angle for pair (2i, 2i+1) at position p in d dimensions, computed
// in double and rounded to float: the one table every path rotates by.
void rotary_cos_sin(int position, int two_i, int d, float& cos_angle, float& sin_angle);

// ALiBi slope of head h out of H: 2^(−8(h+1)/H).
float alibi_slope(int head, int heads);
// The bias itself, −slope·|i − j|, is attention_rules' alibi_term (alibi_terms for a matrix).

}  // namespace attn
