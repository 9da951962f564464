#pragma once
// Attention without the (n_q × n_k) matrix: queries in blocks, keys streamed in blocks with
// an online softmax (a running max m and sum l per query row, FlashAttention-style), so
// memory is O(n·d). The GPU shaders do the same computation; this is its CPU twin.
#include <vector>

#include "matrix.hpp"
#include "scenario.hpp"
#include "trace.hpp"

namespace attn {

// Which keys a query sees, evaluated per cell instead of stored as a matrix.
struct MaskRule {
    MaskKind kind = MaskKind::None;
    int window = 1;
    const std::vector<bool>* key_is_padding = nullptr;
    const MaskMatrix* custom = nullptr;

    bool visible(int i, int j) const;
    // True when no query in [i0, i1) sees any key in [j0, j1) (a block that can be skipped).
    bool block_hidden(int i0, int i1, int j0, int j1) const;
    // True when every query in [i0, i1) sees every key in [j0, j1) (false when unsure).
    bool block_visible(int i0, int i1, int j0, int j1) const;
};

struct StreamingHead {
    Matrix output;    // (n_q × d_v)
    Vector row_max;   // m_i: the largest visible scaled score of row i (0 for the naive softmax)
    Vector row_sum;   // l_i: Σ_j exp(s_ij − m_i)
};

struct StreamingInputs {
    const Matrix* q = nullptr;  // (n_q × d_k), after RoPE
    const Matrix* k = nullptr;  // (n_k × d_k)
    const Matrix* v = nullptr;  // (n_k × d_v)
    float scale = 1.0f;
    float alibi_slope = 0.0f;   // 0 = no ALiBi
    float masked_fill = 0.0f;
    SoftmaxKind softmax = SoftmaxKind::Stable;
    MaskRule mask;
};

StreamingHead streaming_attention(const StreamingInputs& in);

// The weights of a region, max-pooled, from the row max and sum of the output pass:
// w_ij = exp(s_ij − m_i) / l_i, recomputed block by block, never stored whole.
PooledWeights pooled_weights(const StreamingInputs& in, const StreamingHead& head, int row_begin, int row_end,
                             int col_begin, int col_end, int bins_rows, int bins_cols);

}  // namespace attn
