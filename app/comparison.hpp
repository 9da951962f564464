#pragma once
// Compare: A is the trace on screen, B the same scenario with a second set of toggles
// (mask, heads, positional encoding, scaling). The compute layer runs B like any run — on a
// worker, output-only when the size calls for it — and never runs A again: A's trace is the
// session's. Then the difference B − A of every matrix they share. Pure logic: the compare
// panel draws it, tests check it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attention/analysis.hpp"
#include "attention/scenario.hpp"
#include "teaching/toggles.hpp"
#include "attention/trace.hpp"

namespace attn::comparison {

struct Comparison {
    std::string signature;                      // A's trace generation and B's toggles it answers
    bool ready = false;                         // B computed (or refused)
    Trace b;
    std::vector<MatrixDifference> differences;  // compare_traces(a, b): B − A
    std::string error;                          // why B cannot run; empty when it ran
};

// Scenario B: A's scenario with the toggles; nullopt and the reason when they do not fit.
std::optional<Scenario> scenario_b(const Scenario& a, const Toggles& b_toggles, std::string* error);
// The comparison of A's trace with B's.
Comparison compare(const Trace& a, Trace b);

// The difference for one matrix name, or nullptr when A and B do not share it.
const MatrixDifference* find_difference(const Comparison& c, const std::string& name);

}  // namespace attn::comparison
