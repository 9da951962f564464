#pragma once
// Updating a full trace after an edit of a few token embeddings, recomputing only what the
// edit reaches: the edited rows of Q, K, V; row and column r of the scores; the softmax
// rows that see key r; their outputs; and those rows of the concatenation and W_O output.
// Every recomputed value is computed by the same formula as a full run, so the result
// equals a full run up to float rounding (the tests check 1e-5).
#include "attention/scenario.hpp"
#include "attention/trace.hpp"

namespace attn {

// `trace` must be the full trace of `before`. When `after` differs from `before` only in
// some rows of the target embeddings (self-attention, embedding input, finite values, no
// block), updates `trace` to the trace of `after` and returns true; otherwise returns false
// and leaves `trace` unchanged (the caller then runs the engine in full).
bool update_after_embedding_edit(const Scenario& before, const Scenario& after, Trace& trace);

}  // namespace attn
