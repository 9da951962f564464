#pragma once
// Which heads a prediction needs: each head ablated alone (its rows of W_O zeroed, so it
// contributes nothing: stack.hpp), the layers from its own recomputed (stack::recompute_from:
// the layers before it are the pass's), and the change in the log-probability of one token
// at the last position:
//
//   Δ(ℓ, h) = log softmax(logits without head (ℓ, h))[t] − log softmax(logits)[t]
//
// Negative: the head helped predict t; positive: it worked against it. The heads the pass
// already ablates stay ablated in every run; their own Δ is 0.
#include <functional>
#include <optional>
#include <string>

#include "tensor/matrix.hpp"
#include "model/stack.hpp"

namespace attn::interpret {

struct AblationSweep {
    int target = 0;                   // the token id t
    float log_probability = 0.0f;     // log p(t) at the last position, from the pass
    Matrix delta;                     // (layers × heads): Δ(ℓ, h)
};

// log softmax(row)[t], computed stably (max subtracted, the sum in double).
float log_probability(const Matrix& logits_row, int token);

// The sweep over every head of every layer of a pass of the stack (the pass is not changed).
// `keep_going` (may be empty) is told the heads done after each and stops the sweep when it
// says false. None, with why, when the stack has no unembedding, the pass is not whole, t is
// not a token of the vocabulary, a run fails, or the sweep was stopped ("cancelled").
std::optional<AblationSweep> ablation_sweep(const stack::Stack& stack, const stack::Pass& pass, int target, std::string* why,
                                            const std::function<bool(int done, int total)>& keep_going = {});

}  // namespace attn::interpret
