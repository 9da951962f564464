#pragma once
// The logit lens (nostalgebraist 2020): what the model would predict after each layer, read
// by its own head from the residual stream as it stands there.
//
//   x_{ℓ+1}                                  (n × d): the stream leaving layer ℓ
//   lens_ℓ = softmax(norm_f(x_{ℓ+1})·W_U + b_U)  (n × V): the final norm and the unembedding
//                                            (soft-capped where the family caps), every row
//   each row's top k                         best first
//
// The last layer's lens is the model's own prediction: x_L is what the head reads.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/stack.hpp"

namespace attn::interpret {

struct LensCell {
    std::vector<int> ids;              // the top k, best first (ties: the smaller id)
    std::vector<float> probabilities;  // of softmax over the whole vocabulary
};

struct LogitLens {
    int top_k = 0;
    std::vector<std::vector<LensCell>> layers;  // [ℓ][position]: after layer ℓ + 1, at each token
};

// Every layer of a pass of the stack, at every position. None, with why, when the stack has
// no unembedding (BERT: its masked-token head reads h) or the pass is not whole. `keep_going`
// (may be empty) is asked after each layer: false stops with none and why "cancelled".
std::optional<LogitLens> logit_lens(const stack::Stack& stack, const stack::Pass& pass, int top_k, std::string* why,
                                    const std::function<bool(int done, int total)>& keep_going = {});

}  // namespace attn::interpret
