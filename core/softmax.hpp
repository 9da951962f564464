#pragma once
#include "matrix.hpp"
#include "scenario.hpp"

namespace attn {

// Softmax over each row of scores, skipping nothing: masking is done before, by writing
// the fill value into masked cells.
//
// The fully masked row rule: a row whose every cell is −∞ has no distribution to take;
// its weights are all 0 (so its output is the zero vector) and the row is reported in
// fully_masked_rows. A row masked with a finite fill (e.g. −1e9) is computed as written,
// which is what PyTorch and NumPy do: every cell equal → uniform weights.
struct SoftmaxResult {
    Matrix weights;
    std::vector<int> fully_masked_rows;
    bool overflow = false;  // a non-finite weight came out of finite scores (naive only)
};
SoftmaxResult softmax_rows(const Matrix& scores, SoftmaxKind kind);
// The same, writing into weights (resized; its storage is reused when the shape matches).
void softmax_rows_into(const Matrix& scores, SoftmaxKind kind, Matrix& weights, std::vector<int>& fully_masked_rows,
                       bool& overflow);

}  // namespace attn
