#pragma once
#include "scenario.hpp"
#include "trace.hpp"

namespace attn {

// Computes every step of the scenario. Never throws for bad input: an impossible
// scenario returns a Trace with ok = false and errors naming what and where.
Trace run(const Scenario& scenario);

// The problems that make a scenario impossible (empty when it can run).
std::vector<std::string> validate(const Scenario& scenario);

// The matrices the engine would use when the scenario leaves them empty: derived
// embeddings and seeded weights. The UI calls this before the first in-place edit.
Matrix resolved_embeddings(const Sequence& sequence, int d_model);
Matrix resolved_weight(const Matrix& given, int rows, int cols, std::uint64_t seed, int which);

// Row-wise LayerNorm without learned gain and bias: (x − mean) / √(var + ε).
Matrix layer_norm(const Matrix& x, float epsilon = 1e-5f);

}  // namespace attn
