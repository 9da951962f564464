#pragma once
// GPT-2's forward pass through the engine: every layer is an attn::Scenario in embedding
// mode whose weights are the checkpoint's, and attn::run turns it into the attn::Trace the
// panels, tooltips and exports already read (as core/train/model.hpp does for the app's
// own models).
//
//   x₀ = wte[ids] + wpe[0..n)                   (n × d)
//   xₗ₊₁ = the block's output of run(scenarioₗ(xₗ)):
//     a = LN₁(xₗ)                               ln_1's γ, β, layer_norm_epsilon
//     [Q | K | V] = a·c_attn + c_attn_b         (n × d)·(d × 3d) → (n × 3d), Conv1D (in, out) as is
//     head h: softmax(mask(Q_h·K_hᵀ / √d_k))·V_h, causal
//     r = xₗ + concat·c_proj_w + c_proj_b
//     xₗ₊₁ = r + gelu_new(LN₂(r)·c_fc_w + c_fc_b)·mlp_proj_w + mlp_proj_b
//   h = LN_f(x_L)
//   logits = h·wteᵀ                             the LM head is tied to wte: (1 × d)·(d × V) → (1 × V)
// Only the last row's logits are computed: they are the next token's; a row's full (n × V)
// would cost n times the LM head for nothing shown.
//
// Each layer's scenario has no positional encoding of its own: wpe is already in x₀. The
// first layer's trace is then labelled as the engine labels an added encoding (x = wte[ids],
// pe = wpe[0..n), the positional setting "learned"), so its card reads "X + PE"; x_pe is
// exactly the input the engine used, in every layer.
//
// The loop, the recompute after an edit and the ablation of heads are the one stack's
// (stack.hpp): GPT-2 is a configuration of it, its layer scenarios made from the
// checkpoint's weights and its head LN_f and the tied wte, of the last row only.
#include <set>
#include <string>
#include <vector>

#include "model/gpt2/checkpoint.hpp"
#include "model/model_pass.hpp"
#include "attention/scenario.hpp"
#include "model/stack.hpp"
#include "attention/trace.hpp"

namespace attn::gpt2 {

using stack::HeadId;
using stack::HeadSet;
using stack::Ablation;
using stack::ablated_in_layer;
using stack::layer_output;

// The stack's pass (its layers, LN_f(x_L) as final_output, the last row's logits (1 × V),
// the ablated heads) and what GPT-2 reads from it: the top 5 (from softmax(logits), best
// first, Tokenizer::describe after the sentence: "␣cat", "byte 0xA9, …: completes \"café\"")
// and where NaN or ±∞ first arose (stage "layer 2", "ln_f", "the logits", "the softmax").
using ForwardPass = attn::ModelPass;
using attn::NonFiniteOrigin;
using attn::TokenProbability;

// x₀'s rows for `ids` at positions first_position, first_position + 1, …: wte[id] + wpe[position].
Matrix embed(const Checkpoint& checkpoint, const std::vector<int>& ids, int first_position);
// GPT-2 as a stack: its layers from the checkpoint, the tokens labelling them.
stack::Stack make_stack(const Checkpoint& checkpoint, const std::vector<int>& ids, const std::vector<std::string>& tokens);

// Reasons the ids cannot be run (empty when they can): no token, more than n_positions, an
// id outside wte.
std::vector<std::string> validate(const Checkpoint& checkpoint, const std::vector<int>& ids);

// Layer ℓ's scenario for its input (n × d): the residual stream entering the layer, with
// the rows of W_O (c_proj_w) of the heads of `ablated` in layer ℓ zeroed.
Scenario layer_scenario(const Checkpoint& checkpoint, const std::vector<std::string>& tokens, int layer,
                        const Matrix& layer_input, const Ablation& ablated = {});
// The residual stream layer ℓ read: its trace's x_pe (x₀ for layer 0).
const Matrix& layer_input(const Trace& trace);

// All layers, every trace kept, and the next-token prediction, the heads of `ablated`
// contributing nothing.
ForwardPass forward(const Checkpoint& checkpoint, const std::vector<int>& ids, const Ablation& ablated = {});
// The same into an existing pass (its `ablated` applied), reusing its traces' storage:
// running again (a new sentence) then allocates and page-faults little. False with
// pass.errors.
bool forward_into(const Checkpoint& checkpoint, const std::vector<int>& ids, ForwardPass& pass);
// Tokenises text with the checkpoint's tokenizer and runs it.
ForwardPass forward_text(const Checkpoint& checkpoint, const std::string& text, const Ablation& ablated = {});

// After an edit in layer ℓ: recomputes layers ℓ … L−1, LN_f and the prediction from the
// cached input of layer ℓ (pass.layers[ℓ]); layers before ℓ are untouched. With
// `edited_layer`, layer ℓ runs that scenario as it is (the app's session edits it: its X is
// the stream entering the layer, so an edit of X counts like one of a weight; it must keep
// one row per token) instead of the checkpoint's; the ablated heads of layer ℓ are zeroed in
// a copy of it when its rows of W_O are not zero already (an ablated head contributes
// nothing, whatever the edit). pass.ablated applies to every layer run. False with
// pass.errors when a layer cannot run.
bool recompute_from(const Checkpoint& checkpoint, int layer, ForwardPass& pass, const Scenario* edited_layer = nullptr);

// The k most probable ids of softmax(logits), best first (ties: the smaller id; a NaN
// probability ranks below every number).
std::vector<TokenProbability> top_tokens(const Vector& logits, int k, const Tokenizer& tokenizer);

}  // namespace attn::gpt2
