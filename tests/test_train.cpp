// The trainable model: the backward pass against finite differences, the tasks, the
// trainer (accuracy, learned patterns, pause and resume), and model files.
//
// [SECTION] Gradient check
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "random.hpp"
#include "train/backward.hpp"
#include "train/model.hpp"

using namespace attn;
using namespace attn::train;

namespace {

// [SECTION] Gradient check
//
// Every parameter's analytic gradient against central differences of the float forward
// pass (the engine itself): g ≈ (L(θ + ε) − L(θ − ε)) / 2ε with ε = 5e-3, the loss summed
// in double. Per tensor, over a deterministic sample of its entries, the relative error
// ‖g_analytic − g_numeric‖ / max(‖g_analytic‖, ‖g_numeric‖) must stay below 1e-2 (the worst
// seen is 3.3e-3; ε = 1e-2 gives 5e-3 from truncation, 3e-3 gives 7e-3 from float rounding).
constexpr double kGradEpsilon = 5e-3;
constexpr double kGradTolerance = 1e-2;
constexpr int kEntriesPerTensor = 6;

struct GradProblem {
    Model model;
    ModelInput input;
    std::vector<int> targets;
    std::vector<bool> scored;
};

GradProblem grad_problem(const ModelConfig& base, std::uint64_t seed) {
    ModelConfig config = base;
    config.max_positions = 6;
    const std::vector<std::string> vocabulary{"a", "b", "c", "d", "e"};
    GradProblem problem{init_model(config, vocabulary, seed), {}, {}, {}};
    // Away from the initial values (γ = 1, β = 0, biases 0), so every term of the gradient is generic.
    Rng rng(seed + 99);
    for (ParamView& view : parameter_views(problem.model.params))
        for (Eigen::Index i = 0; i < view.size(); ++i) view.data[i] += 0.3f * rng.normal();
    problem.input.tokens = {0, 1, 2, 3, 4, 2};  // every token, so every embedding row has a gradient
    if (config.attention == AttentionKind::Cross) problem.input.source = {4, 3, 1, 0, 2};
    const size_t n_keys = config.attention == AttentionKind::Cross ? 5 : 6;
    if (config.mask == MaskKind::Padding) {
        problem.input.padding.assign(n_keys, false);
        problem.input.padding[n_keys - 1] = true;
    }
    if (config.mask == MaskKind::Custom) {
        problem.input.custom_mask = MaskMatrix::Constant(6, static_cast<Eigen::Index>(n_keys), true);
        for (Eigen::Index i = 0; i < 6; ++i)
            for (Eigen::Index j = 0; j < static_cast<Eigen::Index>(n_keys); ++j)
                problem.input.custom_mask(i, j) = (i + 2 * j) % 3 != 0;
        problem.input.custom_mask.row(2).setConstant(false);  // a fully masked row: weights 0, no gradient
    }
    problem.targets = {1, 2, 3, 4, 0, 1};
    problem.scored = {false, true, true, true, true, true};
    return problem;
}

double loss_of(const Model& model, const GradProblem& problem) {
    const ForwardPass f = forward(model, problem.input);
    REQUIRE(f.ok);
    return cross_entropy(f.logits, problem.targets, problem.scored, 1.0f, nullptr);
}

struct TensorCheck {
    std::string name;
    double relative_error = 0.0;
    double analytic_norm = 0.0;
};

// The relative error per tensor; `corrupt` scales the analytic gradient of tensor `corrupt_name`.
std::vector<TensorCheck> check_gradients(GradProblem& problem, const std::string& corrupt_name = "", double corrupt = 1.0) {
    const ForwardPass f = forward(problem.model, problem.input);
    REQUIRE(f.ok);
    Matrix dlogits = Matrix::Zero(f.logits.rows(), f.logits.cols());
    cross_entropy(f.logits, problem.targets, problem.scored, 1.0f, &dlogits);
    ModelParams grads = zeros_like(problem.model.params);
    backward(problem.model, problem.input, f, dlogits, grads);
    std::vector<TensorCheck> checks;
    std::vector<ParamView> params = parameter_views(problem.model.params);
    std::vector<ParamView> grad_views = parameter_views(grads);
    REQUIRE(params.size() == grad_views.size());
    for (size_t t = 0; t < params.size(); ++t) {
        ParamView& view = params[t];
        double diff2 = 0.0, analytic2 = 0.0, numeric2 = 0.0;
        const Eigen::Index size = view.size();
        for (int s = 0; s < kEntriesPerTensor && s < size; ++s) {
            const Eigen::Index i = (s * 7919 + 13) % size;  // spread over the tensor
            const float saved = view.data[i];
            view.data[i] = static_cast<float>(saved + kGradEpsilon);
            const double plus = loss_of(problem.model, problem);
            view.data[i] = static_cast<float>(saved - kGradEpsilon);
            const double minus = loss_of(problem.model, problem);
            view.data[i] = saved;
            const double numeric = (plus - minus) / (2.0 * kGradEpsilon);
            double analytic = grad_views[t].data[i];
            if (view.name == corrupt_name) analytic *= corrupt;
            diff2 += (analytic - numeric) * (analytic - numeric);
            analytic2 += analytic * analytic;
            numeric2 += numeric * numeric;
        }
        const double scale = std::max(std::sqrt(analytic2), std::sqrt(numeric2));
        checks.push_back({view.name, scale > 0.0 ? std::sqrt(diff2) / scale : 0.0, std::sqrt(analytic2)});
    }
    return checks;
}

double worst_relative_error = 0.0;  // reported at the end of the run

void require_gradients_match(GradProblem problem) {
    const bool rotary = problem.model.config.positional == PositionalEncoding::Rotary;
    for (const TensorCheck& check : check_gradients(problem)) {
        INFO(check.name << ": relative error " << check.relative_error << ", |g| " << check.analytic_norm);
        const bool key_bias = check.name.size() > 4 && check.name.compare(check.name.size() - 4, 4, ".b_k") == 0;
        if (key_bias && !rotary) {
            // q·b_k is the same for every key of a row and softmax ignores a shift of its row:
            // b_k changes nothing (with RoPE it is rotated differently per key and does).
            CHECK(check.analytic_norm < 1e-5);
            continue;
        }
        CHECK(check.relative_error < kGradTolerance);
        CHECK(check.analytic_norm > 1e-5);  // a gradient that is there to check
        worst_relative_error = std::max(worst_relative_error, check.relative_error);
    }
}

ModelConfig full_config() {
    ModelConfig c;
    c.d_model = 8;
    c.heads = 2;
    c.layers = 2;
    c.biases = true;
    c.residual = true;
    c.layer_norm = true;
    c.norm = NormPlacement::Pre;
    c.feed_forward = true;
    c.d_ff = 12;
    c.activation = Activation::GeluTanh;
    return c;
}

}  // namespace

TEST_CASE("gradient check / every mask with every positional encoding, pre-norm block with feed-forward") {
    const auto positional = GENERATE(PositionalEncoding::None, PositionalEncoding::Sinusoidal, PositionalEncoding::Learned,
                                     PositionalEncoding::Rotary, PositionalEncoding::ALiBi);
    const auto mask = GENERATE(MaskKind::None, MaskKind::Causal, MaskKind::Padding, MaskKind::SlidingWindow, MaskKind::Custom);
    ModelConfig c = full_config();
    c.positional = positional;
    c.mask = mask;
    INFO("positional " << to_string(positional) << ", mask " << to_string(mask));
    require_gradients_match(grad_problem(c, 3));
}

TEST_CASE("gradient check / the block's variants: post-norm, ReLU, no LayerNorm, no feed-forward, no residual, no biases") {
    struct Variant {
        const char* name;
        void (*apply)(ModelConfig&);
    };
    const Variant variant = GENERATE(
        Variant{"post-norm", [](ModelConfig& c) { c.norm = NormPlacement::Post; }},
        Variant{"post-norm, no feed-forward", [](ModelConfig& c) { c.norm = NormPlacement::Post; c.feed_forward = false; }},
        Variant{"ReLU", [](ModelConfig& c) { c.activation = Activation::ReLU; }},
        Variant{"no LayerNorm", [](ModelConfig& c) { c.layer_norm = false; }},
        Variant{"post-norm, no LayerNorm", [](ModelConfig& c) { c.layer_norm = false; c.norm = NormPlacement::Post; }},
        Variant{"no feed-forward", [](ModelConfig& c) { c.feed_forward = false; }},
        Variant{"attention only", [](ModelConfig& c) { c.feed_forward = false; c.layer_norm = false; c.residual = false; }},
        Variant{"no residual", [](ModelConfig& c) { c.residual = false; }},
        Variant{"post-norm, no residual", [](ModelConfig& c) { c.residual = false; c.norm = NormPlacement::Post; }},
        Variant{"no biases, 1 head, 1 layer", [](ModelConfig& c) { c.biases = false; c.heads = 1; c.layers = 1; }},
        Variant{"4 heads, unscaled", [](ModelConfig& c) { c.heads = 4; c.scale = false; }});
    ModelConfig c = full_config();
    c.positional = PositionalEncoding::Sinusoidal;
    c.mask = MaskKind::Causal;
    variant.apply(c);
    INFO(variant.name);
    require_gradients_match(grad_problem(c, 5));
}

TEST_CASE("gradient check / cross-attention: the source memory's gradient reaches the embeddings") {
    const auto positional = GENERATE(PositionalEncoding::Sinusoidal, PositionalEncoding::Learned, PositionalEncoding::Rotary,
                                     PositionalEncoding::ALiBi);
    const auto norm = GENERATE(NormPlacement::Pre, NormPlacement::Post);
    ModelConfig c = full_config();
    c.attention = AttentionKind::Cross;
    c.mask = MaskKind::None;
    c.positional = positional;
    c.norm = norm;
    INFO("positional " << to_string(positional) << ", " << to_string(norm) << "-norm");
    require_gradients_match(grad_problem(c, 7));
}

TEST_CASE("gradient check / the worst relative error seen", "[.report]") {
    WARN("worst relative error over the gradient checks run before: " << worst_relative_error);
}

TEST_CASE("gradient check / a 5% error in one tensor's gradient is caught") {
    ModelConfig c = full_config();
    c.positional = PositionalEncoding::Rotary;
    c.mask = MaskKind::Causal;
    for (const char* name : {"layer0.w_q", "layer1.w_k", "token_embedding", "layer0.gamma_1"}) {
        GradProblem problem = grad_problem(c, 11);
        bool found = false;
        for (const TensorCheck& check : check_gradients(problem, name, 1.05)) {
            if (check.name != name) continue;
            found = true;
            INFO(name << ": relative error " << check.relative_error);
            CHECK(check.relative_error > kGradTolerance);
        }
        CHECK(found);
    }
}
