#pragma once
// A tiny decoder trained in the app: token embedding, the engine's positional encodings,
// 1 to 4 layers of multi-head attention (each optionally with a feed-forward and LayerNorm,
// pre- or post-norm) and an unembedding to logits.
//
// The forward pass IS the engine: each layer is an attn::Scenario in embedding mode whose
// weights are the model's, and attn::run turns it into the attn::Trace the panels draw.
// The backward pass (backward.hpp) reads those traces; nothing recomputes attention.
//
//   x₀ = E[tokens] + PE                    (n × d)   PE: sinusoidal or learned, else 0
//   xₗ₊₁ = layer output of run(scenarioₗ(xₗ))         RoPE and ALiBi act inside every layer
//   h = LN_f(x_L) (pre-norm with LayerNorm), else x_L
//   logits = h·W_U + b_U                   (n × V)
//
// A learned position table is the model's own parameter, not the engine's seeded one: the
// first layer's scenario is given X = E[tokens] + P[positions] with no encoding of its own,
// and its trace is then labelled as the engine would label it (x = E[tokens], pe = P, the
// positional setting "learned"); x_pe is exactly the X the engine used.
//
// Cross-attention (the cross task): every layer's queries come from the target stream and
// its keys and values from the source memory m = E[source] + PE (positions from 0), the
// same memory in every layer, as a decoder reads its encoder's output. Pre-norm normalises
// the target stream only (engine.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/matrix.hpp"
#include "attention/scenario.hpp"
#include "model/stack.hpp"
#include "attention/trace.hpp"

namespace attn::train {

constexpr int kMinDModel = 8, kMaxDModel = 128;
constexpr int kMaxLayers = 4, kMaxHeads = 8;
constexpr int kMaxPositions = 256;

struct ModelConfig {
    int vocab_size = 0;        // V: set from the task's vocabulary
    int max_positions = 0;     // the longest sequence (target or source) the model reads
    int d_model = 32;          // 8 … 128
    int heads = 2;             // 1 … 8, dividing d_model
    int layers = 1;            // 1 … 4
    // Learned by default: with it one head of a 1-layer model becomes a sharp reverse or copy
    // head within ~100 steps; the sinusoid learns the tasks too, with a blurred diagonal.
    PositionalEncoding positional = PositionalEncoding::Learned;
    MaskKind mask = MaskKind::Causal;
    int window = 2;            // sliding window size
    AttentionKind attention = AttentionKind::Self;
    bool scale = true;         // ÷√d_k
    bool biases = true;        // b_q, b_k, b_v, b_o
    bool residual = true;
    bool layer_norm = false;
    NormPlacement norm = NormPlacement::Pre;
    bool feed_forward = false;
    int d_ff = 0;              // 0 → 4·d_model
    Activation activation = Activation::GeluTanh;

    int resolved_d_ff() const { return d_ff > 0 ? d_ff : 4 * d_model; }
    // LN_f before the unembedding: pre-norm blocks end unnormalised (as GPT-2).
    bool final_norm() const { return layer_norm && norm == NormPlacement::Pre; }
};

// Every reason the config cannot build a model ("heads is 3: d_model 32 is not divisible").
std::vector<std::string> validate(const ModelConfig& config);

struct LayerParams {
    Matrix w_q, w_k, w_v, w_o;           // (d × d); head h owns columns [h·d_k, (h+1)·d_k)
    Vector b_q, b_k, b_v, b_o;           // (1 × d), empty without biases
    Vector gamma_1, beta_1;              // (1 × d), empty without LayerNorm
    Vector gamma_2, beta_2;              // (1 × d), empty without LayerNorm or without feed-forward
    Matrix w_1, w_2;                     // (d × d_ff), (d_ff × d), empty without feed-forward
    Vector b_1, b_2;                     // (1 × d_ff), (1 × d)
};

// The parameters; gradients and the optimiser's moments have the same layout.
struct ModelParams {
    Matrix token_embedding;              // (V × d): row t is token t's vector
    Matrix position_embedding;           // (max_positions × d), learned encoding only
    std::vector<LayerParams> layers;
    Vector final_gamma, final_beta;      // (1 × d), pre-norm with LayerNorm only
    Matrix unembedding;                  // (d × V)
    Vector unembedding_bias;             // (1 × V)
};

// One parameter tensor seen as rows × cols floats, row-major. Names are stable (files use
// them): "token_embedding", "layer0.w_q", "layer1.gamma_2", "final_gamma", "unembedding".
struct ParamView {
    std::string name;
    float* data = nullptr;
    Eigen::Index rows = 0, cols = 0;
    Eigen::Index size() const { return rows * cols; }
    Eigen::Map<Matrix> map() const { return Eigen::Map<Matrix>(data, rows, cols); }
};
// The non-empty tensors, always in the same order.
std::vector<ParamView> parameter_views(ModelParams& params);
std::vector<ParamView> parameter_views(const ModelParams& params);  // data must not be written through
Eigen::Index parameter_count(const ModelParams& params);
// The same layout filled with zeros.
ModelParams zeros_like(const ModelParams& params);

struct Model {
    ModelConfig config;
    std::vector<std::string> vocabulary;  // V names; token t is drawn as vocabulary[t]
    ModelParams params;
};

// A fresh model: E ~ N(0, 1), P the engine's learned table for the seed, the projections and
// the feed-forward Xavier-uniform, W_U ~ N(0, 1/d), biases 0, γ = 1, β = 0. The same config,
// vocabulary and seed give the same model.
Model init_model(const ModelConfig& config, const std::vector<std::string>& vocabulary, std::uint64_t seed);

// One input: target token ids (and source ids in cross-attention), and what the padding and
// custom masks need.
struct ModelInput {
    std::vector<int> tokens;         // the target (queries') sequence, ids in [0, V)
    std::vector<int> source;         // cross-attention: the keys' and values' sequence
    std::vector<bool> padding;       // mask Padding: one flag per key (source in cross), true = hidden
    MaskMatrix custom_mask;          // mask Custom: (n_q × n_k), true = visible
};

// Reasons the input cannot be run by this model (empty when it can).
std::vector<std::string> validate(const Model& model, const ModelInput& input);

// The stack's pass: every layer's trace, x_L, LN_f(x_L) or x_L, the logits (n × V), and the
// heads ablated to zero.
using ForwardPass = stack::Pass;
using stack::HeadSet;
using stack::layer_output;

// The model as a stack (stack.hpp runs it): its layers' scenarios from its parameters, its
// learned table labelled in layer 1's trace, LN_f (pre-norm with LayerNorm) and W_U, b_U.
stack::Stack make_stack(const Model& model, const ModelInput& input);

// The scenario of layer ℓ for a given layer input (n × d) and, in cross-attention, the
// source memory (n_s × d). Layer 0 adds the sinusoidal encoding itself (engine); a learned
// table is already in `input` (see above).
Scenario layer_scenario(const Model& model, const ModelInput& input, int layer, const Matrix& layer_input,
                        const Matrix* source_memory);
// Runs the model through the engine, keeping every layer's trace; the heads of `ablated`
// contribute nothing.
ForwardPass forward(const Model& model, const ModelInput& input, const HeadSet& ablated = {});
// Layer ℓ of a forward pass as a scenario the pipeline view opens: its input is what the
// forward pass gave that layer (layer 1: E[tokens] + P with a learned table, already
// added; E[tokens] with the sinusoid, which the scenario adds itself), so run() on it gives
// that layer's trace again. `pass` must be forward(model, input) and ok.
Scenario trained_layer_scenario(const Model& model, const ModelInput& input, const ForwardPass& pass, int layer);
// After an edit of layer ℓ's scenario (as trained_layer_scenario gave it, then edited in the
// pipeline): layer ℓ runs `edited` as it is, then layers ℓ+1 … L−1, LN_f and the logits from
// its output; layers before ℓ are kept, pass.ablated applies. `pass` must be forward(model, input). The edited
// scenario must keep one row per token and the layer's shape (layer_scenario_faults). False
// with pass.errors when a layer cannot run.
bool recompute_from(const Model& model, const ModelInput& input, int layer, const Scenario& edited, ForwardPass& pass);
// Why `scenario` cannot be run as layer ℓ of the model (empty when it can): ℓ not one of
// its layers, or the scenario not a trained layer of this shape: direct mode, another
// attention kind, d_model or head count, a token count the model cannot read, a token not
// in its vocabulary, an input X that is not one row of d_model per token. Each reason says
// the model's side first: "d_model 8, but the scenario's layer has d_model 32".
std::vector<std::string> layer_scenario_faults(const Model& model, int layer, const Scenario& scenario);

// Token ids of the model's vocabulary; names not in it are reported in *error.
std::vector<int> token_ids(const Model& model, const std::vector<std::string>& names, std::string* error);

}  // namespace attn::train
