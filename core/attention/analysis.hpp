#pragma once
// Numbers for the classroom: why scaling matters, comparing two settings, and checking a
// student's hand calculation.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attention/trace.hpp"

namespace attn {

// Softmax sharpness for random unit-variance q and k of width d_k over n_keys keys,
// averaged over samples rows: the largest weight and the entropy (in nats; a uniform row
// has ln n_keys), with and without dividing by √d_k.
struct SharpnessPoint {
    int d_k = 0;
    double max_weight_scaled = 0, max_weight_unscaled = 0;
    double entropy_scaled = 0, entropy_unscaled = 0;
};
std::vector<SharpnessPoint> softmax_sharpness(const std::vector<int>& d_ks, int n_keys, int samples, std::uint64_t seed);

// B − A for every matrix the two traces both have with the same shape.
struct MatrixDifference {
    std::string name;
    Matrix difference;   // B − A
    float max_abs = 0;   // the largest finite |B − A|
    // Float rounding at the operands' size: 16 roundings (2⁻¹⁹) of the largest finite |A| or
    // |B|. Two computations of the same value that differ only in the order of their sums
    // stay below it: a |B − A| at or below it is no difference.
    float noise = 0;
    int non_finite = 0;  // cells where B − A is NaN or ±∞ (one side overflowed, or masked and the other not)
    bool differs() const { return max_abs > noise || non_finite > 0; }
};
std::vector<MatrixDifference> compare_traces(const Trace& a, const Trace& b);

// A student's value for one cell against the engine's, with the step that went wrong when
// the value matches a known intermediate instead (e.g. the score before ÷√d_k).
struct HandCheck {
    bool correct = false;
    double expected = 0;
    double tolerance = 0;    // half a unit in the last digit the student typed
    std::string verdict;     // one or two sentences for the student
};
// decimals: how many digits after the point the student typed.
HandCheck check_hand_value(const Trace& trace, const std::string& matrix, int row, int col, double value, int decimals);

// Every matrix of a trace that holds NaN or ±∞ (a masked score's −∞ fill does not count:
// it is the mask, not a value that went wrong), and where they come from: the first
// non-finite input cell ("X(2,3) is nan"), else the first matrix, in pipeline order, in
// which they appear from finite inputs ("head0.weights: the naive softmax overflowed").
struct NonFiniteReport {
    std::vector<std::string> matrices;   // trace names, pipeline order
    std::string origin;                  // one sentence; empty when every value is finite
    bool contains(const std::string& name) const;
};
// A weight is asked through SharedMatrix::first_non_finite, which scans each content once
// however many traces share it (an edit of X in a GPT-2 layer leaves W_Q … W_2's 6.5 million
// values as they were) and reads a checkpoint's weight where its file stores it.
NonFiniteReport non_finite_report(const Trace& trace);

}  // namespace attn
