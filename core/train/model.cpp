// The trainable model: parameters, their initialisation, and the forward pass through the
// engine.
//
// [SECTION] Config and input validation
// [SECTION] Parameters as named tensors
// [SECTION] Initialisation
// [SECTION] Forward: one scenario per layer, run by the engine
#include "train/model.hpp"

#include <utility>

#include "attention/engine.hpp"
#include "attention/positional.hpp"
#include "tensor/random.hpp"

namespace attn::train {

// [SECTION] Config and input validation

std::vector<std::string> validate(const ModelConfig& c) {
    std::vector<std::string> errors;
    auto out_of = [&](const char* name, int value, int lo, int hi) {
        if (value < lo || value > hi)
            errors.push_back(std::string(name) + " is " + std::to_string(value) + ": expected " + std::to_string(lo) +
                             " to " + std::to_string(hi));
    };
    out_of("vocab_size", c.vocab_size, 2, 4096);
    out_of("max_positions", c.max_positions, 1, kMaxPositions);
    out_of("d_model", c.d_model, kMinDModel, kMaxDModel);
    out_of("heads", c.heads, 1, kMaxHeads);
    out_of("layers", c.layers, 1, kMaxLayers);
    if (c.heads >= 1 && c.d_model % c.heads != 0)
        errors.push_back("d_model " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(c.heads) +
                         " heads: each head needs d_k = d_model / heads columns");
    if (c.mask == MaskKind::SlidingWindow) out_of("window", c.window, 1, kMaxPositions);
    if (c.feed_forward) out_of("d_ff", c.d_ff, 0, 8 * kMaxDModel);
    // The backward pass (backward.cpp) differentiates these two activations only; the engine's
    // others (the exact GELU, SiLU) run in the pipeline but cannot be trained here.
    if (c.activation != Activation::ReLU && c.activation != Activation::GeluTanh)
        errors.push_back(std::string("activation is ") + to_string(c.activation) +
                         ": training differentiates relu and gelu (the tanh form) only");
    return errors;
}

std::vector<std::string> validate(const Model& model, const ModelInput& in) {
    std::vector<std::string> errors;
    const ModelConfig& c = model.config;
    const bool cross = c.attention == AttentionKind::Cross;
    auto check_ids = [&](const char* which, const std::vector<int>& ids) {
        if (ids.empty()) errors.push_back(std::string(which) + " sequence is empty: the model needs at least one token");
        if (static_cast<int>(ids.size()) > c.max_positions)
            errors.push_back(std::string(which) + " sequence has " + std::to_string(ids.size()) +
                             " tokens; the model reads at most " + std::to_string(c.max_positions));
        for (size_t i = 0; i < ids.size(); ++i)
            if (ids[i] < 0 || ids[i] >= c.vocab_size) {
                errors.push_back(std::string(which) + " token " + std::to_string(i + 1) + " has id " +
                                 std::to_string(ids[i]) + ", outside the vocabulary of " + std::to_string(c.vocab_size));
                break;
            }
    };
    check_ids("target", in.tokens);
    if (cross) check_ids("source", in.source);
    else if (!in.source.empty()) errors.push_back("a source sequence is given, but the model uses self-attention");
    return errors;  // padding and custom masks are checked by the engine, which says where
}

// [SECTION] Parameters as named tensors

namespace {

// Calls f(name, tensor) for every tensor (empty ones included), always in one order.
template <class Params, class F>
void visit(Params& p, F&& f) {
    f("token_embedding", p.token_embedding);
    f("position_embedding", p.position_embedding);
    for (size_t l = 0; l < p.layers.size(); ++l) {
        auto& layer = p.layers[l];
        const std::string prefix = "layer" + std::to_string(l) + ".";
        f(prefix + "w_q", layer.w_q);
        f(prefix + "w_k", layer.w_k);
        f(prefix + "w_v", layer.w_v);
        f(prefix + "w_o", layer.w_o);
        f(prefix + "b_q", layer.b_q);
        f(prefix + "b_k", layer.b_k);
        f(prefix + "b_v", layer.b_v);
        f(prefix + "b_o", layer.b_o);
        f(prefix + "gamma_1", layer.gamma_1);
        f(prefix + "beta_1", layer.beta_1);
        f(prefix + "gamma_2", layer.gamma_2);
        f(prefix + "beta_2", layer.beta_2);
        f(prefix + "w_1", layer.w_1);
        f(prefix + "b_1", layer.b_1);
        f(prefix + "w_2", layer.w_2);
        f(prefix + "b_2", layer.b_2);
    }
    f("final_gamma", p.final_gamma);
    f("final_beta", p.final_beta);
    f("unembedding", p.unembedding);
    f("unembedding_bias", p.unembedding_bias);
}

}  // namespace

std::vector<ParamView> parameter_views(ModelParams& params) {
    std::vector<ParamView> views;
    visit(params, [&](const std::string& name, auto& m) {
        if (m.size() != 0) views.push_back({name, m.data(), m.rows(), m.cols()});
    });
    return views;
}

std::vector<ParamView> parameter_views(const ModelParams& params) {
    return parameter_views(const_cast<ModelParams&>(params));
}

Eigen::Index parameter_count(const ModelParams& params) {
    Eigen::Index n = 0;
    for (const ParamView& v : parameter_views(params)) n += v.size();
    return n;
}

ModelParams zeros_like(const ModelParams& params) {
    ModelParams zeros = params;
    for (ParamView& v : parameter_views(zeros)) v.map().setZero();
    return zeros;
}

// [SECTION] Initialisation

Model init_model(const ModelConfig& c, const std::vector<std::string>& vocabulary, std::uint64_t seed) {
    Model model;
    model.config = c;
    model.config.vocab_size = static_cast<int>(vocabulary.size());
    model.vocabulary = vocabulary;
    const int d = c.d_model, v = model.config.vocab_size, d_ff = c.resolved_d_ff();
    // One stream per tensor, so adding a tensor never changes another's values.
    auto stream = [&](int layer, int which) { return seed * 0x9E3779B97F4A7C15ull + 1000u * (layer + 1) + which; };
    ModelParams& p = model.params;
    p.token_embedding = normal_matrix(v, d, stream(-1, 0));
    if (c.positional == PositionalEncoding::Learned) p.position_embedding = learned_encoding(c.max_positions, d, seed);
    p.layers.resize(static_cast<size_t>(c.layers));
    for (int l = 0; l < c.layers; ++l) {
        LayerParams& layer = p.layers[static_cast<size_t>(l)];
        layer.w_q = xavier_uniform(d, d, stream(l, 1));
        layer.w_k = xavier_uniform(d, d, stream(l, 2));
        layer.w_v = xavier_uniform(d, d, stream(l, 3));
        layer.w_o = xavier_uniform(d, d, stream(l, 4));
        if (c.biases) layer.b_q = layer.b_k = layer.b_v = layer.b_o = Vector::Zero(d);
        if (c.layer_norm) {
            layer.gamma_1 = Vector::Ones(d);
            layer.beta_1 = Vector::Zero(d);
        }
        if (c.layer_norm && c.feed_forward) {  // LN₂ stands around the feed-forward
            layer.gamma_2 = Vector::Ones(d);
            layer.beta_2 = Vector::Zero(d);
        }
        if (c.feed_forward) {
            layer.w_1 = xavier_uniform(d, d_ff, stream(l, 5));
            layer.w_2 = xavier_uniform(d_ff, d, stream(l, 6));
            layer.b_1 = Vector::Zero(d_ff);
            layer.b_2 = Vector::Zero(d);
        }
    }
    if (c.final_norm()) {
        p.final_gamma = Vector::Ones(d);
        p.final_beta = Vector::Zero(d);
    }
    p.unembedding = normal_matrix(d, v, stream(-1, 7), 1.0f / std::sqrt(static_cast<float>(d)));
    p.unembedding_bias = Vector::Zero(v);
    return model;
}

// [SECTION] Forward: one scenario per layer, run by the engine

namespace {

std::vector<std::string> names_of(const Model& model, const std::vector<int>& ids) {
    std::vector<std::string> names;
    names.reserve(ids.size());
    for (int id : ids) names.push_back(model.vocabulary[static_cast<size_t>(id)]);
    return names;
}

// E[ids] (+ P[0..n) for a learned table): (n × d).
Matrix embed(const Model& model, const std::vector<int>& ids, bool with_learned_positions) {
    const Eigen::Index n = static_cast<Eigen::Index>(ids.size());
    Matrix x(n, model.config.d_model);
    for (Eigen::Index i = 0; i < n; ++i) x.row(i) = model.params.token_embedding.row(ids[static_cast<size_t>(i)]);
    if (with_learned_positions) x += model.params.position_embedding.topRows(n);
    return x;
}

}  // namespace

Scenario layer_scenario(const Model& model, const ModelInput& in, int l, const Matrix& layer_input,
                        const Matrix* source_memory) {
    const ModelConfig& c = model.config;
    const LayerParams& p = model.params.layers[static_cast<size_t>(l)];
    const bool cross = c.attention == AttentionKind::Cross;
    Scenario s;
    s.name = "layer " + std::to_string(l + 1);
    s.input = InputMode::Embeddings;
    s.attention = c.attention;
    s.d_model = c.d_model;
    s.heads = c.heads;
    s.target.tokens = names_of(model, in.tokens);
    s.target.embeddings = layer_input;
    if (cross) {
        s.source.tokens = names_of(model, in.source);
        s.source.embeddings = *source_memory;
        s.source.padding = in.padding;
    } else {
        s.target.padding = in.padding;
    }
    // Additive encodings enter once, before layer 1 (a learned table is already in the
    // input); RoPE and ALiBi act inside every layer's attention.
    const bool additive = c.positional == PositionalEncoding::Sinusoidal || c.positional == PositionalEncoding::Learned;
    s.positional = additive ? (l == 0 && c.positional == PositionalEncoding::Sinusoidal ? c.positional : PositionalEncoding::None)
                            : c.positional;
    s.mask = c.mask;
    s.window = c.window;
    s.custom_mask = in.custom_mask;
    s.scale = c.scale;
    s.w_q = p.w_q;
    s.w_k = p.w_k;
    s.w_v = p.w_v;
    s.w_o = p.w_o;
    s.b_q = p.b_q;
    s.b_k = p.b_k;
    s.b_v = p.b_v;
    s.b_o = p.b_o;
    BlockOptions& b = s.block;
    b.residual = c.residual;
    b.layer_norm = c.layer_norm;
    b.feed_forward = c.feed_forward;
    b.d_ff = c.resolved_d_ff();
    b.norm = c.norm;
    b.activation = c.activation;
    b.norm_1 = {p.gamma_1, p.beta_1};
    b.norm_2 = {p.gamma_2, p.beta_2};
    b.w_1 = p.w_1;
    b.w_2 = p.w_2;
    b.b_1 = p.b_1;
    b.b_2 = p.b_2;
    return s;
}

Scenario trained_layer_scenario(const Model& model, const ModelInput& in, const ForwardPass& pass, int l) {
    const bool learned = model.config.positional == PositionalEncoding::Learned;
    const bool cross = model.config.attention == AttentionKind::Cross;
    const Trace& first = pass.layers.front();
    // Layer 1 reads E[tokens] (+ P, learned); a later layer the previous layer's output.
    const Matrix input = l == 0 ? (learned ? first.x_pe : first.x) : layer_output(pass.layers[static_cast<size_t>(l - 1)]);
    // The memory: E[source] (+ P) for layer 1, the first layer's X + PE of the source after it.
    Matrix memory;
    if (cross) memory = l == 0 && !learned ? first.source_x : first.source_x_pe;
    Scenario s = layer_scenario(model, in, l, input, cross ? &memory : nullptr);
    s.name = "trained layer " + std::to_string(l + 1) + " of " + std::to_string(model.config.layers);
    return s;
}

std::vector<std::string> layer_scenario_faults(const Model& model, int l, const Scenario& s) {
    const ModelConfig& c = model.config;
    const std::string theirs = ", but the scenario's layer has ";
    if (l < 0 || l >= c.layers)
        return {"layer " + std::to_string(l + 1) + " is not one of the model's layers 1 to " + std::to_string(c.layers)};
    if (s.input != InputMode::Embeddings) return {"a layer reads embeddings" + theirs + "Q, K and V given directly"};
    std::vector<std::string> faults;
    if (s.attention != c.attention) faults.push_back(std::string(to_string(c.attention)) + "-attention" + theirs + to_string(s.attention) + "-attention");
    if (s.d_model != c.d_model) faults.push_back("d_model " + std::to_string(c.d_model) + theirs + "d_model " + std::to_string(s.d_model));
    if (s.heads != c.heads) faults.push_back(std::to_string(c.heads) + " heads" + theirs + std::to_string(s.heads));
    auto sequence = [&](const char* which, const Sequence& q) {
        const int n = static_cast<int>(q.tokens.size());
        if (n < 1 || n > c.max_positions) {
            faults.push_back("at most " + std::to_string(c.max_positions) + " " + which + " tokens" + theirs + std::to_string(n));
            return;
        }
        std::string unknown;
        token_ids(model, q.tokens, &unknown);
        if (!unknown.empty()) faults.push_back(std::string(which) + " " + unknown);
        // X: one row of d_model per token (the trained layer's input, never derived from text).
        if (q.embeddings.rows() != n || q.embeddings.cols() != c.d_model)
            faults.push_back(std::string(which) + " input X of " + std::to_string(n) + " × " + std::to_string(c.d_model) + theirs +
                             std::to_string(q.embeddings.rows()) + " × " + std::to_string(q.embeddings.cols()));
    };
    sequence("target", s.target);
    if (c.attention == AttentionKind::Cross && s.attention == AttentionKind::Cross) sequence("source", s.source);
    return faults;
}

stack::Stack make_stack(const Model& model, const ModelInput& in) {
    const ModelConfig& c = model.config;
    stack::Stack s;
    s.layers = c.layers;
    s.d_model = c.d_model;
    s.heads = c.heads;
    s.cross = c.attention == AttentionKind::Cross;
    s.layer_scenario = [&model, &in](int l, const Matrix& input, const Matrix* memory) {
        return layer_scenario(model, in, l, input, memory);
    };
    if (c.positional == PositionalEncoding::Learned)
        s.label_first_layer = [&model, &in](Trace& t) {
            // Labelled as the engine labels an added encoding: x_pe = x + pe, as given.
            t.settings.positional = PositionalEncoding::Learned;
            t.x = embed(model, in.tokens, false);
            t.pe = model.params.position_embedding.topRows(t.x.rows());
            if (model.config.attention == AttentionKind::Cross) {
                t.source_x = embed(model, in.source, false);
                t.source_pe = model.params.position_embedding.topRows(t.source_x.rows());
            }
        };
    s.head.final_norm = c.final_norm();              // pre-norm blocks end unnormalised
    s.head.norm = {model.params.final_gamma, model.params.final_beta};
    s.head.unembedding = model.params.unembedding;  // (n, d)·(d, V) → (n, V), a toy's copy
    s.head.bias = &model.params.unembedding_bias;
    return s;
}

ForwardPass forward(const Model& model, const ModelInput& in, const HeadSet& ablated) {
    ForwardPass f;
    f.ablated = ablated;
    f.errors = validate(model.config);
    if (f.errors.empty()) f.errors = validate(model, in);
    if (!f.errors.empty()) return f;
    const bool learned = model.config.positional == PositionalEncoding::Learned;
    Matrix memory;  // (n_s × d): E[source] (+ P)
    if (model.config.attention == AttentionKind::Cross) memory = embed(model, in.source, learned);
    stack::forward_into(make_stack(model, in), embed(model, in.tokens, learned), std::move(memory), f);  // x₀ = E[tokens] (+ P)
    return f;
}

bool recompute_from(const Model& model, const ModelInput& in, int l, const Scenario& edited, ForwardPass& pass) {
    // The edited scenario is what layer ℓ reads; its rows are the tokens, which the later
    // layers and the logits keep.
    if (edited.target.tokens.size() != in.tokens.size()) {
        pass.ok = false;
        pass.errors = {"layer " + std::to_string(l + 1) + " has " + std::to_string(edited.target.tokens.size()) +
                       " tokens; the model's input has " + std::to_string(in.tokens.size()) + ": a token is added or removed on the probe, not in a layer"};
        return false;
    }
    if (std::vector<std::string> faults = layer_scenario_faults(model, l, edited); !faults.empty()) {
        pass.ok = false;
        pass.errors.clear();
        for (const std::string& fault : faults) pass.errors.push_back("layer " + std::to_string(l + 1) + ": " + fault);
        return false;
    }
    return stack::recompute_from(make_stack(model, in), l, pass, &edited);
}

std::vector<int> token_ids(const Model& model, const std::vector<std::string>& names, std::string* error) {
    std::vector<int> ids;
    for (size_t i = 0; i < names.size(); ++i) {
        int id = -1;
        for (size_t t = 0; t < model.vocabulary.size(); ++t)
            if (model.vocabulary[t] == names[i]) id = static_cast<int>(t);
        if (id < 0) {
            if (error) *error = "token " + std::to_string(i + 1) + " '" + names[i] + "' is not in the model's vocabulary";
            return {};
        }
        ids.push_back(id);
    }
    return ids;
}

}  // namespace attn::train
