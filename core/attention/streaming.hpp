#pragma once
// Attention without the (n_q × n_k) matrix: queries in blocks, keys streamed in blocks with
// an online softmax (a running max m and sum l per query row, FlashAttention-style), so
// memory is O(n·d). The GPU shaders do the same computation; this is its CPU twin. Both
// apply the rules of attention_rules.hpp (masked_score, row_output, row_weight).
#include <atomic>
#include <vector>

#include "attention/attention_rules.hpp"
#include "tensor/matrix.hpp"
#include "attention/scenario.hpp"
#include "attention/trace.hpp"

namespace attn {

struct StreamingHead {
    Matrix output;    // (n_q × d_v)
    Vector row_max;   // m_i: the largest masked score of row i (−∞ when every cell is; 0 for the naive softmax)
    Vector row_sum;   // l_i: Σ_j exp(s_ij − m_i)
};

struct StreamingInputs {
    const Matrix* q = nullptr;  // (n_q × d_k), after RoPE
    const Matrix* k = nullptr;  // (n_k × d_k)
    const Matrix* v = nullptr;  // (n_k × d_v)
    ScoreRule rule;             // scale, ALiBi, fill and mask of the head's scores
    SoftmaxKind softmax = SoftmaxKind::Stable;
    // Set from another thread to stop: the remaining blocks are skipped and the result is
    // incomplete (the caller, who set it, discards it).
    const std::atomic<bool>* cancel = nullptr;
    bool cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
};

StreamingHead streaming_attention(const StreamingInputs& in);

// The weights of a region, max-pooled, from the row max and sum of the output pass:
// w_ij = exp(s_ij − m_i) / l_i, recomputed block by block, never stored whole.
PooledWeights pooled_weights(const StreamingInputs& in, const StreamingHead& head, const PooledGrid& grid);
// Fills pooled.visible from the mask when its bins are single tokens (else leaves it empty).
void mark_visible(PooledWeights& pooled, const MaskRule& mask);

}  // namespace attn
