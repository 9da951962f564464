#pragma once
// Compare: configuration A is a scenario, B the same scenario with a second set of toggles
// (mask, heads, positional encoding, scaling). Both run on the CPU engine; the difference
// B − A of every matrix they share. Pure logic: the compare panel draws it, tests check it.
#include <string>
#include <vector>

#include "analysis.hpp"
#include "scenario.hpp"
#include "toggles.hpp"
#include "trace.hpp"

namespace attn::comparison {

struct Comparison {
    Trace a, b;
    std::vector<MatrixDifference> differences;  // compare_traces(a, b): B − A
    std::string error;                          // why B (or A) cannot run; empty when both ran
};

Comparison compare_with(const Scenario& a, const Toggles& b_toggles);

// The difference for one matrix name, or nullptr when A and B do not share it.
const MatrixDifference* find_difference(const Comparison& c, const std::string& name);

}  // namespace attn::comparison
