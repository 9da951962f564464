#pragma once
// A model's attention compared, whatever its family (model_pass.hpp): head A's weights against head B's, both on one sentence
// (two heads) or one head on two sentences, and B − A where it is defined. A difference is
// taken cell by cell, position against position; it needs the same number of tokens.
#include <string>
#include <vector>

#include "model/model_pass.hpp"

namespace attn {

struct WeightsComparison {
    bool ok = false;            // A and B both exist
    std::string error;          // why not: a pass not run, a layer or head it does not have
    const Matrix* a = nullptr;  // A's weights (n_A × n_A), in its pass; a Gated DeltaNet head's implied weights
    const Matrix* b = nullptr;  // B's weights (n_B × n_B)
    bool a_implied = false, b_implied = false;  // a Gated DeltaNet head's: no softmax (B − A only between two of one kind)
    // B − A, defined when n_A = n_B; else `message` says why there is none.
    bool has_difference = false;
    Matrix difference;          // (n × n)
    float max_abs = 0;          // largest |B − A|
    int max_row = -1, max_col = -1;  // where it is (from 0)
    std::string message;        // "A has 11 tokens, B has 12: B − A needs the same tokens"
    // The difference's axis labels: the token where A and B agree, "a | b" where they differ.
    std::vector<std::string> tokens;
    int differing_tokens = 0;   // positions whose tokens differ
};

// Head `head_a` of pass `a` against head `head_b` of pass `b` (they may be one pass). The
// result points into the passes: it lives as long as they are not run again.
WeightsComparison compare_weights(const ModelPass& a, stack::HeadId head_a, const ModelPass& b, stack::HeadId head_b);

}  // namespace attn
