#pragma once
#include <string>
#include <vector>

#include "matrix.hpp"
#include "scenario.hpp"

namespace attn {

// (n_q × n_k), true = visible. padding has one flag per key (missing flags = not padding).
MaskMatrix causal_mask(int n_queries, int n_keys);
MaskMatrix padding_mask(int n_queries, const std::vector<bool>& key_is_padding, int n_keys);
MaskMatrix sliding_window_mask(int n_queries, int n_keys, int window);

// The mask the scenario asks for. custom must be (n_q × n_k) when kind is Custom.
MaskMatrix build_mask(MaskKind kind, int n_queries, int n_keys, int window,
                      const std::vector<bool>& key_is_padding, const MaskMatrix& custom);

}  // namespace attn
