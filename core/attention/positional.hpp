#pragma once
#include <cstdint>
#include <vector>

#include "tensor/matrix.hpp"
#include "attention/scenario.hpp"

namespace attn {

// (n × d_model): PE(p, 2i) = sin(p / 10000^(2i/d_model)), PE(p, 2i+1) = cos(same angle).
// i counts pairs of dimensions, so dimension 2i and 2i+1 share one frequency.
Matrix sinusoidal_encoding(int n, int d_model);

// (n × d_model): a seeded table, one row per position, N(0, 0.5²).
Matrix learned_encoding(int n, int d_model, std::uint64_t seed);

// The additive encoding for kind (zeros for None, Rotary and ALiBi, which do not add).
Matrix additive_encoding(PositionalEncoding kind, int n, int d_model, std::uint64_t seed);

// RoPE with the default options: rotates each pair (2i, 2i+1) of row p by the angle
// p · 10000^(−2i/d). An odd last column is left as it is.
Matrix apply_rotary(const Matrix& m);
// The same for one row standing at `position`.
Vector rotate_row(const Vector& row, int position);
// cos and sin of that angle for pair (2i, 2i+1) at position p in d dimensions, computed in
// double and rounded to float: the table the default rotation (and training) turns by.
void rotary_cos_sin(int position, int two_i, int d, float& cos_angle, float& sin_angle);

// RoPE as Hugging Face computes it, for any options (scenario.hpp RopeOptions), in float32
// as its rotary embedding does: the inverse frequencies f_i = 1 / θ^(2i/r) for the r rotated
// dimensions (r = rotary_dims or d_k), then scaled (linear: f/factor; llama3: long
// wavelengths f/factor, short ones kept, a smooth blend between; longrope: 1 / (e_i·θ^(2i/r)),
// e the short factors for a text of up to original_max_positions tokens, the long ones for a
// longer text); the angle of pair i at position p is float(p)·f_i, its cos and sin float32,
// each times the attention factor. The pairs are (2i, 2i+1) (interleaved) or (i, i + r/2)
// (rotate_half); dimensions from r on are not turned (nor scaled).
// `length` is the number of tokens of the text the rows belong to: LongRoPE's factors depend
// on it (every row of a pass is turned with the same ones, as transformers' forward does).
std::vector<float> rope_inverse_frequencies(const RopeOptions& rope, int d_k, int length);
// Whether LongRoPE turns a text of `length` tokens with its long factors.
bool long_rope_factors(const RopeOptions& rope, int length);
// YaRN's get_mscale: 0.1·m·ln(scale) + 1, or 1 for a scale of 1 or less. Its attention factor is
// yarn_mscale(factor) (gpt-oss: 1.3466 for 32), or DeepSeek's ratio
// yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim).
double yarn_mscale(double scale, double m = 1.0);
// Whether `rope` is the default rotation (apply_rotary above): interleaved, θ = 10000, every
// dimension, no scaling.
bool default_rope(const RopeOptions& rope);
Matrix apply_rotary(const Matrix& m, const RopeOptions& rope);  // row p at position p, of a text of m.rows() tokens
Vector rotate_row(const Vector& row, int position, const RopeOptions& rope, int length);
// One position's turn, its cos and sin computed once for every row turned to it (every head of
// a decode step): rotate_row(row, turn) is rotate_row(row, position, rope, length), bit for bit.
struct RowTurn {
    std::vector<float> cos, sin;  // one of each a pair; dims past the pairs pass as they are
    bool default_rope = false;    // the default rotation (its table and its arithmetic)
    RopePairing pairing = RopePairing::Interleaved;
};
RowTurn row_turn(const RopeOptions& rope, int d, int position, int length);
Vector rotate_row(const Vector& row, const RowTurn& turn);

// ALiBi slope of head h out of H: 2^(−8(h+1)/H).
float alibi_slope(int head, int heads);
// The bias itself, −slope·|i − j|, is attention_rules' alibi_term (alibi_terms for a matrix).

}  // namespace attn
