#pragma once
// A checkpoint's pass on a sentence, whatever its family: the stack's pass (stack.hpp: every
// layer's trace, the final norm, the logits, the heads ablated) with the sentence's tokens and
// what the model predicts from it. The family table's passes (model/hf/model.hpp) fill it, for
// every family GPT-2's included, so the model view, its jobs, Compare and the exports read one
// kind of pass.
#include <string>
#include <vector>

#include "model/stack.hpp"

namespace attn {

struct TokenProbability {
    int id = 0;
    std::string token;        // as the token strip shows it: "␣cat", "<0xA9>, completes \"café\""
    float probability = 0.0f;
};

// BERT: the top tokens at one [MASK] of the sentence.
struct MaskedPrediction {
    int position = 0;         // the [MASK] token's index in the ids (from 0)
    std::vector<TokenProbability> top;
};

// Where NaN or ±∞ first arose in a pass, in pipeline order: the residual stream leaving a
// layer (only its output is checked: the layer's trace says the rest), the final norm, the
// logits, the softmax over them. The command line exits 5 with it and the model view marks
// the prediction with it: after one non-finite logit no probability means anything, even one
// that prints as a number.
struct NonFiniteOrigin {
    std::string stage;    // "layer 2", "ln_f", "the logits", "the softmax"; empty: every value is finite
    std::string origin;   // where in it and from what: "ln_f.weight (γ) column 3 is nan"
    bool any() const { return !stage.empty(); }
    std::string sentence() const { return stage + ": " + origin; }
};

struct ModelPass : stack::Pass {
    std::vector<int> token_ids;
    std::vector<std::string> tokens;                   // each id as the token strip shows it: the traces' labels
    std::vector<TokenProbability> next_token_top5;     // a causal LM's, from softmax(logits), best first
    std::vector<MaskedPrediction> masked_predictions;  // a masked LM's (BERT): one per [MASK]
    NonFiniteOrigin non_finite;                        // set with the prediction, by every run
};

// A value for a message: "nan" (never "-nan": the sign of a NaN means nothing), "inf", "3e+38".
std::string value_text(float value);

// The first stage of a pass where NaN or ±∞ appears, named generically: a layer's output
// (with what its trace says of the origin), `final_norm` (the final norm's name), the logits,
// then `probabilities` (the softmax of the logits, when the caller made it). Empty when every
// value is finite.
NonFiniteOrigin find_non_finite(const stack::Pass& pass, const std::string& final_norm, const Matrix* probabilities = nullptr);

}  // namespace attn
