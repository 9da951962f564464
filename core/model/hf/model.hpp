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
// GPT-2 checkpoints keep their own reader (core/model/gpt2), on the same stack.
#include <optional>
#include <string>
#include <vector>

#include "model/hf/spec.hpp"
#include "model/hf/weights.hpp"
#include "model/model_pass.hpp"
#include "model/stack.hpp"
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
    std::vector<std::string> inside;   // a folder that holds no checkpoint: the checkpoint folders one level down
};
// config.json, the weights, tokenizer.json (or GPT-2's vocab.json and merges.txt, where there is
// no tokenizer.json) and tokenizer_config.json (where it changes the
// special tokens: Llama's, Gemma's and GPT-NeoX's add_bos_token, add_eos_token) of a folder
// (`with_tokenizer` false: without one, for ids given as they are); a family or a setting the
// engine does not compute yet is refused, naming it.
OpenedModelLoad open_model(const std::string& folder, bool with_tokenizer = true);

// The family's stack: how each layer's scenario is made from its weights; `tokens` (which
// must outlive the stack) label the layers' traces. With learned positions added to the
// embedding (GPT-2), layer 1's trace is labelled X + PE from the tables' rows for `ids` (read
// when a pass runs, so they may change after the stack is made).
stack::Stack model_stack(const OpenedModel& model, const std::vector<std::string>* tokens = nullptr, const std::vector<int>* ids = nullptr);
// Layer ℓ's scenario for its input (n × d), labelled with `tokens`, the rows of W_O of the
// heads of `ablated` in layer ℓ zeroed (in the scenario's own copy).
Scenario layer_scenario(const OpenedModel& model, const std::vector<std::string>& tokens, int layer, const Matrix& input,
                        const stack::Ablation& ablated = {});

// x₀'s rows for `ids` standing at positions first_position, first_position + 1, …: the
// embedding rows scaled, the learned positions and token type 0 with their norm (BERT). The
// ids must be within the embedding and the positions within its table (validate).
Matrix embed(const OpenedModel& model, const std::vector<int>& ids, int first_position);
// The sentence tokenised as tokenizer(text)["input_ids"] gives it, run through every layer,
// the heads of `ablated` contributing nothing: the pass (model_pass.hpp) with the next token's
// top 5 (a causal LM) or each [MASK]'s (BERT), and where NaN or ±∞ first arose.
// The tokenizer's ids of text; none, with "FOLDER/tokenizer.json cannot encode the text: …" in
// errors, when it cannot encode it faithfully (tok::EncodeError) or the model has no tokenizer.
std::vector<int> encode_text(const OpenedModel& model, const std::string& text, std::vector<std::string>& errors);
ModelPass forward_text(const OpenedModel& model, const std::string& text, const stack::Ablation& ablated = {});
// Ids as they are (token type 0 for BERT).
ModelPass forward_ids(const OpenedModel& model, std::vector<int> ids, const stack::Ablation& ablated = {});
// Reasons the ids cannot be run (empty when they can): no token, more than the learned
// positions, an id outside the embedding.
std::vector<std::string> validate(const OpenedModel& model, const std::vector<int>& ids);
// The first of `text`'s ids (its encoding) the embedding has no row for, said with its token
// and where the text holds it ("token 262144 `<image_soft_token>` at character 12 of the
// sentence is beyond the model's embedding of 262144 rows"); empty when every id has its row.
// A tokenizer.json may hold more tokens than the embedding has rows (Gemma 3's 262,145 for a
// text model of 262,144: the last is the multimodal model's image token, as transformers opens
// it): only a text that produces one is refused.
std::string token_beyond_embedding(const OpenedModel& model, const std::string& text, const std::vector<int>& ids);
// After an edit in layer ℓ (or of pass.ablated): layers ℓ … L−1 and the head again, and the
// prediction (stack::recompute_from: `edited`, the session's scenario of layer ℓ). False with
// pass.errors.
bool recompute_from(const OpenedModel& model, int layer, ModelPass& pass, const Scenario* edited = nullptr);
// An id as the token strip shows it: the tokenizer's piece, a space as ␣, a newline as ↵, a
// tab as ⇥, a byte that is no whole character or a control character that draws nothing as
// <0xNN>, a WordPiece continuation with its "##"; "#id" without a tokenizer.
std::string token_label(const OpenedModel& model, int id);
// token_label, and for a piece that is no whole characters what it does after `before` (the
// ids the model read): "<0xA9>, completes \"café\"", "<0xC3>, the first byte of a character",
// "<0xA9>, part of a character", "<0xFF>, never part of UTF-8 text". The top 5 of a causal
// model reads it.
std::string token_description(const OpenedModel& model, int id, const std::vector<int>& before);
// The same into an existing pass, reusing its traces' storage (stack::forward_into): a sentence
// run again allocates and page-faults little. pass.ablated applies. False with pass.errors
// (and no trace of the sentence before kept).
bool forward_ids_into(const OpenedModel& model, std::vector<int> ids, ModelPass& pass);

}  // namespace attn::hf
