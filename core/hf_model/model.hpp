#pragma once
// A Hugging Face checkpoint of a modern family (spec.hpp, weights.hpp) run on the one stack of
// layers (stack.hpp): each layer becomes a scenario of the engine that holds the family's
// weights (shared, not copied) and its settings — grouped-query attention, RoPE's variant and
// base, the layer's window, the attention scale and soft-cap, RMSNorm and Gemma's (1 + w),
// the gated MLP, the parallel residual, the sandwich norms, BERT's post-norm — so that every
// step of every layer is the engine's own trace, drawn and explained as any other.
//
//   x₀ = E[ids]·embedding_scale                 Llama, Qwen, Gemma (√d), GPT-NeoX
//   x₀ = LN(E[ids] + P[positions] + T[types])   BERT
//   layer ℓ: the engine on layer_scenario(ℓ, xₗ)
//   causal LM: h = norm_f(x_L); logits = h_last·Uᵀ (U = E when tied), Gemma 2's final
//              soft-cap c·tanh(logits/c); the next token's top 5
//   BERT:      for each [MASK]: t = LN(act(h·W_d + b_d)); logits = t·Eᵀ + b; its top 5
//
// GPT-2 checkpoints keep their own reader (core/gpt2), on the same stack.
#include <optional>
#include <string>
#include <vector>

#include "hf_model/spec.hpp"
#include "hf_model/weights.hpp"
#include "stack.hpp"
#include "tokenizer/tokenizer_json.hpp"

namespace attn::hf {

struct OpenedModel {
    std::string folder;
    ModelSpec spec;
    Weights weights;
    std::optional<tok::TokenizerJson> tokenizer;  // tokenizer.json; none: only ids can be run
};

struct OpenedModelLoad {
    std::optional<OpenedModel> model;
    std::vector<std::string> errors;   // each names the file and what is wrong
    std::vector<std::string> ignored;  // tensors read past
};
// config.json, the weights and tokenizer.json of a folder (`with_tokenizer` false: without
// one, for ids given as they are); a family or a setting the engine does not compute yet is
// refused, naming it.
OpenedModelLoad open_model(const std::string& folder, bool with_tokenizer = true);

// The next token's (or a masked position's) most probable tokens.
struct Prediction {
    int id = 0;
    std::string token;      // as the tokenizer shows it (" cat")
    float probability = 0;
};
struct MaskedPrediction {
    int position = 0;       // the [MASK] token's index in the ids
    std::vector<Prediction> top;
};

struct ModelPass {
    bool ok = false;
    std::vector<std::string> errors;
    std::vector<int> token_ids;
    std::vector<std::string> tokens;    // each id's piece, as the token strip shows it
    stack::Pass pass;                   // every layer's trace
    std::vector<Prediction> next_token_top5;          // causal LM
    std::vector<MaskedPrediction> masked_predictions;  // BERT: one per [MASK]
};

// The family's stack: how each layer's scenario is made from its weights.
stack::Stack model_stack(const OpenedModel& model);
// The sentence tokenised as tokenizer(text)["input_ids"] gives it, run through every layer.
ModelPass forward_text(const OpenedModel& model, const std::string& text);
// Ids as they are (token type 0 for BERT).
ModelPass forward_ids(const OpenedModel& model, std::vector<int> ids);
// The same into an existing pass, reusing its traces' storage (run_into): a sentence run again
// allocates and page-faults little. False with pass.errors.
bool forward_ids_into(const OpenedModel& model, std::vector<int> ids, ModelPass& pass);

}  // namespace attn::hf
