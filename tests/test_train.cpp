// The trainable model: the backward pass against finite differences, the tasks, the
// trainer (accuracy, learned patterns, pause and resume), and model files.
//
// [SECTION] Gradient check
// [SECTION] Tasks
// [SECTION] Training: accuracy and the patterns the heads learn
// [SECTION] Pause, resume, determinism, snapshots
// [SECTION] Model files
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/engine.hpp"
#include "fuzz/fuzz_model.hpp"
#include "tensor/random.hpp"
#include "attention/serialize.hpp"
#include "train/backward.hpp"
#include "train/model.hpp"
#include "train/model_file.hpp"
#include "train/tasks.hpp"
#include "train/trainer.hpp"
#include "train_fixtures.hpp"

using namespace attn;
using namespace attn::train;
using attn::testing::same_bits;

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

// [SECTION] Tasks

TEST_CASE("tasks / every task's examples have the stated shape, targets and expected keys") {
    for (TaskKind kind : all_tasks()) {
        TaskOptions o;
        o.kind = kind;
        o.length = 5;
        o.symbols = 7;
        INFO(to_string(kind));
        REQUIRE(validate(o).empty());
        Rng rng(4);
        for (int trial = 0; trial < 20; ++trial) {
            const Example e = make_example(o, rng);
            const int n = static_cast<int>(e.input.tokens.size());
            if (kind == TaskKind::Induction) REQUIRE(n <= target_length(o));  // the gap varies
            else REQUIRE(n == target_length(o));
            REQUIRE(static_cast<int>(e.input.source.size()) == source_length(o));
            REQUIRE(static_cast<int>(e.targets.size()) == n);
            REQUIRE(static_cast<int>(e.scored.size()) == n);
            REQUIRE(static_cast<int>(e.expected_key.size()) == n);
            int scored = 0;
            for (int i = 0; i < n; ++i) {
                if (!e.scored[static_cast<size_t>(i)]) continue;
                ++scored;
                const int key = e.expected_key[static_cast<size_t>(i)];
                const std::vector<int>& keys = kind == TaskKind::CrossReverse ? e.input.source : e.input.tokens;
                REQUIRE(key >= 0);
                REQUIRE(key < static_cast<int>(keys.size()));
                // The expected key holds the answer, except for induction, where it is the
                // token after the previous occurrence: also the answer.
                CHECK(keys[static_cast<size_t>(key)] == e.targets[static_cast<size_t>(i)]);
                if (kind != TaskKind::CrossReverse) CHECK(key <= i);  // a causal mask lets the row see it
            }
            CHECK(scored == (kind == TaskKind::Induction || kind == TaskKind::PreviousToken ? 4 : 5));
        }
    }
}

TEST_CASE("tasks / reverse reads s | reverse(s) and scores the second half") {
    TaskOptions o;
    o.kind = TaskKind::Reverse;
    o.length = 3;
    Rng rng(1);
    const Example e = make_example(o, rng);
    const std::vector<int>& t = e.input.tokens;  // s0 s1 s2 | s2 s1
    CHECK(t[3] == separator_id(o));
    CHECK(t[4] == t[2]);
    CHECK(t[5] == t[1]);
    CHECK(e.targets == std::vector<int>{t[1], t[2], separator_id(o), t[2], t[1], t[0]});
    CHECK(e.scored == std::vector<bool>{false, false, false, true, true, true});
    CHECK(e.expected_key == std::vector<int>{-1, -1, -1, 2, 1, 0});
}

TEST_CASE("tasks / a probe's content token edited: the answer half, the truth and the keys follow") {
    TaskOptions o;
    o.kind = TaskKind::Reverse;
    o.length = 3;
    o.symbols = 5;
    Rng rng(2);
    const Example e = make_example(o, rng);
    const int changed = (e.input.tokens[0] + 1) % o.symbols;
    std::string why;
    const std::optional<Example> edited = edit_content(o, e, false, 0, changed, &why);
    REQUIRE(edited);
    const std::vector<int>& t = edited->input.tokens;  // s0' s1 s2 | s2 s1, and row 5 predicts s0'
    CHECK(t[0] == changed);
    CHECK(t[1] == e.input.tokens[1]);
    CHECK(t[4] == t[2]);
    CHECK(edited->targets.back() == changed);
    CHECK(edited->scored == e.scored);
    CHECK(edited->expected_key == e.expected_key);
    // The separator and the answer half follow from the content: refused, saying so.
    CHECK_FALSE(edit_content(o, e, false, 3, 1, &why));
    CHECK(why.find("follows from the content") != std::string::npos);
    CHECK_FALSE(edit_content(o, e, false, 4, 1, &why));
    CHECK_FALSE(edit_content(o, e, false, 0, o.symbols, &why));  // the separator is not a content letter

    // Induction: the first half is distinct and apart from the gap.
    o.kind = TaskKind::Induction;
    o.length = 4;
    o.symbols = 8;
    Rng rng2(5);
    Example r = make_example(o, rng2);
    for (int trial = 0; trial < 50 && r.input.tokens.size() == 7; ++trial) r = make_example(o, rng2);  // one with a gap
    REQUIRE(r.input.tokens.size() > 7);
    CHECK_FALSE(edit_content(o, r, false, 0, r.input.tokens[1], &why));
    CHECK(why.find("distinct") != std::string::npos);
    CHECK_FALSE(edit_content(o, r, false, 0, r.input.tokens[4], &why));  // a letter of the gap
    CHECK(why.find("gap") != std::string::npos);
    int unused = 0;  // a letter neither in r nor in the gap
    while (std::find(r.input.tokens.begin(), r.input.tokens.end(), unused) != r.input.tokens.end()) ++unused;
    const std::optional<Example> ri = edit_content(o, r, false, 2, unused, &why);
    REQUIRE(ri);
    const size_t gap = r.input.tokens.size() - 7;
    CHECK(ri->input.tokens[4 + gap + 2] == unused);        // the repeat carries the new letter too
    CHECK(ri->targets[4 + gap + 1] == unused);             // and the row after r₁'s repeat predicts it
    // Cross-reverse: the content is the source.
    o.kind = TaskKind::CrossReverse;
    o.length = 3;
    o.symbols = 5;
    const Example c = make_example(o, rng);
    CHECK_FALSE(edit_content(o, c, false, 0, 1, &why));
    const std::optional<Example> ci = edit_content(o, c, true, 0, (c.input.source[0] + 1) % 5, &why);
    REQUIRE(ci);
    CHECK(ci->targets.back() == (c.input.source[0] + 1) % 5);
}

TEST_CASE("tasks / every example is recognised from its input, and an input the task cannot make is not") {
    for (TaskKind kind : all_tasks()) {
        TaskOptions o;
        o.kind = kind;
        o.length = 4;
        o.symbols = 7;
        INFO(to_string(kind));
        Rng rng(9);
        for (int trial = 0; trial < 10; ++trial) {
            const Example e = make_example(o, rng);
            const std::optional<Example> back = example_from_input(o, e.input);
            REQUIRE(back);
            CHECK(back->targets == e.targets);
            CHECK(back->scored == e.scored);
            CHECK(back->expected_key == e.expected_key);
            if (kind == TaskKind::PreviousToken) continue;  // every input is one
            ModelInput spoiled = e.input;
            int& last = spoiled.tokens.back();
            last = (last + 1) % o.symbols;  // an answer that does not follow (cross-reverse: a target that is not "|")
            CHECK_FALSE(example_from_input(o, spoiled));
        }
    }
}

TEST_CASE("tasks / the held-out set is distinct, and one too large for the task is refused") {
    TrainSettings s;
    s.task.kind = TaskKind::Copy;
    s.task.length = 3;
    s.task.symbols = 4;  // 64 possible examples
    s.held_out_size = 16;
    s.batch_size = 8;
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    REQUIRE(trainer);
    CHECK(trainer->held_out().size() == 16);
    std::set<std::vector<int>> contents;
    for (const Example& e : trainer->held_out()) contents.insert(example_content(e));
    CHECK(contents.size() == 16);
    s.held_out_size = 17;  // more than a quarter of 64
    CHECK_FALSE(Trainer::create(s, errors));
    REQUIRE(!errors.empty());
    CHECK_THAT(errors[0], Catch::Contains("only 64 distinct examples"));
}

// [SECTION] Training: accuracy and the patterns the heads learn

namespace {

// 1 layer, 2 heads, d_model 32, otherwise ModelConfig's defaults (learned positions, causal
// mask): a model that learns each task within a few hundred steps.
TrainSettings small_settings(TaskKind kind) {
    TrainSettings s;
    s.task.kind = kind;
    s.model.d_model = 32;
    s.model.heads = 2;
    s.model.layers = 1;
    s.seed = 1;
    s.evaluate_every = 0;
    return s;
}

// The largest, over the layer's heads, of the mean weight the probe's scored rows put on their
// expected key.
double best_head_mass(const Trainer& trainer, const Example& example, int layer, int* best_head = nullptr) {
    const Prediction p = trainer.predict(example);
    REQUIRE(p.forward.ok);
    const Trace& t = p.forward.layers[static_cast<size_t>(layer)];
    double best = 0.0;
    for (int h = 0; h < t.heads; ++h) {
        double mass = 0.0;
        int rows = 0;
        for (size_t i = 0; i < example.scored.size(); ++i) {
            if (!example.scored[i]) continue;
            mass += t.head[static_cast<size_t>(h)].weights(static_cast<Eigen::Index>(i), example.expected_key[i]);
            ++rows;
        }
        mass /= std::max(1, rows);
        if (mass > best) {
            best = mass;
            if (best_head) *best_head = h;
        }
    }
    return best;
}

}  // namespace

TEST_CASE("training / reverse and copy reach 99% held-out accuracy, and a head attends to the expected key") {
    // With a learned position table one head of the two becomes the reverse (or copy) head.
    // With the sinusoid the task is learned as well, but the anti-diagonal stays blurred over
    // neighbouring keys (≈ 0.75 on the key itself) and the two heads share the rows, so
    // there only the accuracy is checked; it also learns more slowly, and at 300 steps sits at
    // the edge of 99% (98.6% or 99.2% as the float rounding of one build or another goes).
    struct Case {
        TaskKind kind;
        PositionalEncoding positional;
        int steps;
        bool pattern;
    };
    const Case c = GENERATE(Case{TaskKind::Reverse, PositionalEncoding::Learned, 200, true},
                            Case{TaskKind::Copy, PositionalEncoding::Learned, 200, true},
                            Case{TaskKind::Reverse, PositionalEncoding::Sinusoidal, 500, false},
                            Case{TaskKind::Copy, PositionalEncoding::Sinusoidal, 500, false});
    INFO(to_string(c.kind) << ", " << to_string(c.positional) << " positions, " << c.steps << " steps");
    TrainSettings s = small_settings(c.kind);
    s.model.positional = c.positional;
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    REQUIRE(trainer);
    const Evaluation before = trainer->evaluate();
    const auto start = std::chrono::steady_clock::now();
    trainer->run(c.steps);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Evaluation after = trainer->evaluate();
    INFO("held-out accuracy " << before.accuracy << " → " << after.accuracy << " in " << seconds << " s");
    CHECK(before.accuracy < 0.5);
    CHECK(after.accuracy >= 0.99);
    if (!c.pattern) return;
    // For reverse row m+j looks at key m−1−j (the anti-diagonal), for copy at key j.
    int head = -1;
    const double mass = best_head_mass(*trainer, trainer->probe(), 0, &head);
    INFO("head " << head + 1 << " puts " << mass << " of its weight on the expected keys");
    CHECK(mass >= 0.9);
}

TEST_CASE("training / the other tasks learn: sort, previous-token, cross-reverse") {
    struct Case {
        TaskKind kind;
        int layers;
        int steps;
        double accuracy;
    };
    const Case c = GENERATE(Case{TaskKind::PreviousToken, 1, 300, 0.99}, Case{TaskKind::CrossReverse, 1, 300, 0.99},
                            Case{TaskKind::Sort, 1, 600, 0.9});
    TrainSettings s = small_settings(c.kind);
    s.model.layers = c.layers;
    if (c.kind == TaskKind::CrossReverse) s.model.mask = MaskKind::None;  // the answer's key lies ahead
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    REQUIRE(trainer);
    trainer->run(c.steps);
    const Evaluation e = trainer->evaluate();
    INFO(to_string(c.kind) << ": held-out accuracy " << e.accuracy << " after " << c.steps << " steps");
    CHECK(e.accuracy >= c.accuracy);
}

TEST_CASE("training / induction with 2 layers: a previous-token head in layer 1, an induction head in layer 2") {
    TrainSettings s = small_settings(TaskKind::Induction);
    s.model.layers = 2;
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    REQUIRE(trainer);
    trainer->run(300);
    const Evaluation e = trainer->evaluate();
    INFO("held-out accuracy on the predictable half " << e.accuracy);
    CHECK(e.accuracy >= 0.95);
    // Layer 2: row m+g+j (r_j seen again) reads key j+1, the token after r_j's first occurrence.
    const Example& probe = trainer->probe();
    int head = -1;
    const double induction = best_head_mass(*trainer, probe, 1, &head);
    INFO("layer 2, head " << head + 1 << ": " << induction << " of the weight on the token after the previous occurrence");
    CHECK(induction >= 0.8);
    // Layer 1: the keys that head reads, positions 1 … m−1, look at their previous token, so
    // each key carries the token before it (what the induction head matches against).
    Example previous = probe;
    const int m = s.task.length;
    std::fill(previous.scored.begin(), previous.scored.end(), false);
    for (int i = 1; i < m; ++i) {
        previous.scored[static_cast<size_t>(i)] = true;
        previous.expected_key[static_cast<size_t>(i)] = i - 1;
    }
    const double previous_token = best_head_mass(*trainer, previous, 0, &head);
    INFO("layer 1, head " << head + 1 << ": " << previous_token << " of the weight on the previous token");
    CHECK(previous_token > 0.5);
}

// [SECTION] Pause, resume, determinism, snapshots

TEST_CASE("trainer / pausing and resuming gives the uninterrupted run bit for bit") {
    TrainSettings s = small_settings(TaskKind::Reverse);
    s.model.layer_norm = true;
    s.model.feed_forward = true;
    s.evaluate_every = 10;
    std::vector<std::string> errors;
    auto straight = Trainer::create(s, errors);
    auto paused = Trainer::create(s, errors);
    REQUIRE(straight);
    REQUIRE(paused);
    straight->run(40);
    paused->run(13);            // run, pause …
    (void)paused->evaluate();   // … look at it while paused (the UI does) …
    paused->step();             // … single-step …
    paused->run(26);            // … and resume
    CHECK(paused->steps_done() == 40);
    CHECK(same_bits(straight->model().params, paused->model().params));
    REQUIRE(straight->history().size() == paused->history().size());
    for (size_t i = 0; i < straight->history().size(); ++i) CHECK(straight->history()[i].loss == paused->history()[i].loss);
    CHECK(straight->evaluations().size() == 4);
    CHECK(straight->evaluate().accuracy == paused->evaluate().accuracy);
}

TEST_CASE("trainer / the same seed gives the same run, another seed another") {
    TrainSettings s = small_settings(TaskKind::Copy);
    std::vector<std::string> errors;
    auto a = Trainer::create(s, errors), b = Trainer::create(s, errors);
    s.seed = 2;
    auto c = Trainer::create(s, errors);
    a->run(5);
    b->run(5);
    c->run(5);
    CHECK(same_bits(a->model().params, b->model().params));
    CHECK_FALSE(same_bits(a->model().params, c->model().params));
}

TEST_CASE("trainer / warm-up, clipping and weight decay do what they say") {
    TrainSettings s = small_settings(TaskKind::Reverse);
    s.warmup_steps = 4;
    s.clip_norm = 0.5f;
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    REQUIRE(trainer);
    for (int i = 1; i <= 6; ++i) CHECK(trainer->step().learning_rate == Approx(s.learning_rate * std::min(i, 4) / 4.0f));
    // The norm is recorded before clipping: the first steps' gradients are above the 0.5 limit.
    CHECK(trainer->history().front().gradient_norm > 0.5);
    // Clipping scales the whole gradient to the limit, keeping its direction; below it, nothing changes.
    ModelParams grads = zeros_like(trainer->model().params);
    grads.unembedding(0, 0) = 3.0f;
    grads.layers[0].b_v(1) = 4.0f;
    CHECK(clip_gradient(grads, 0.5f) == Approx(5.0));
    CHECK(grads.unembedding(0, 0) == Approx(0.3f));
    CHECK(grads.layers[0].b_v(1) == Approx(0.4f));
    CHECK(clip_gradient(grads, 1.0f) == Approx(0.5));
    CHECK(grads.layers[0].b_v(1) == Approx(0.4f));
    // Decay alone (no gradient: lr·λ·θ) shrinks a matrix and leaves a bias.
    ModelParams params = trainer->model().params;
    ModelParams zero = zeros_like(params);
    TrainSettings decay_only = s;
    decay_only.weight_decay = 0.5f;
    AdamW adam(params);
    const float w = params.layers[0].w_q(0, 0), b = params.layers[0].b_q(0);
    adam.update(params, zero, 0.1f, decay_only);
    CHECK(params.layers[0].w_q(0, 0) == Approx(w * (1.0f - 0.1f * 0.5f)));
    CHECK(params.layers[0].b_q(0) == b);
}

TEST_CASE("trainer / snapshots stay within their memory budget and span the run") {
    TrainSettings s = small_settings(TaskKind::Reverse);
    s.snapshot_every = 1;
    std::vector<std::string> errors;
    auto probe = Trainer::create(s, errors);
    REQUIRE(probe);
    const std::size_t each = static_cast<std::size_t>(parameter_count(probe->model().params)) * sizeof(float);
    s.snapshot_budget_bytes = 6 * each;
    auto trainer = Trainer::create(s, errors);
    trainer->run(50);
    const auto& snapshots = trainer->snapshots();
    CHECK(snapshots.size() <= 6);
    CHECK(snapshots.size() >= 3);
    CHECK(snapshots.front().step == 0);
    CHECK(snapshots.back().step >= 50 - trainer->snapshot_interval());
    CHECK(trainer->snapshot_interval() > 1);
    for (size_t i = 1; i < snapshots.size(); ++i) CHECK(snapshots[i].step > snapshots[i - 1].step);
    // A snapshot predicts with its own weights: the first one is the untrained model.
    const Prediction first = trainer->predict(trainer->probe(), snapshots.front().params);
    const Prediction untrained = probe->predict(probe->probe());
    CHECK(first.forward.logits == untrained.forward.logits);
}

// [SECTION] Model files

namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("attnlab_test_train_" + name)).string();
}

}  // namespace

TEST_CASE("model files / save then load gives identical predictions and traces") {
    TrainSettings s = small_settings(TaskKind::Reverse);
    s.model.positional = GENERATE(PositionalEncoding::Learned, PositionalEncoding::Rotary);
    s.model.layers = 2;
    s.model.layer_norm = true;
    s.model.feed_forward = true;
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    REQUIRE(trainer);
    trainer->run(20);
    const std::string path = temp_path("model.json");
    std::string error;
    REQUIRE(save_model_file(path, model_file_of(*trainer), &error));
    const ModelFileLoad load = load_model_file(path);
    INFO((load.errors.empty() ? std::string() : load.errors[0]));
    REQUIRE(load.file);
    CHECK(load.file->steps == 20);
    CHECK(load.file->settings.task.kind == TaskKind::Reverse);
    CHECK(load.file->model.vocabulary == trainer->model().vocabulary);
    CHECK(same_bits(load.file->model.params, trainer->model().params));
    for (size_t k = 0; k < 32; ++k) {
        const Example& e = trainer->held_out()[k];
        const ForwardPass a = forward(trainer->model(), e.input), b = forward(load.file->model, e.input);
        REQUIRE(a.ok);
        REQUIRE(b.ok);
        CHECK(a.logits == b.logits);
        for (size_t l = 0; l < a.layers.size(); ++l)
            for (size_t h = 0; h < a.layers[l].head.size(); ++h)
                CHECK(a.layers[l].head[h].weights == b.layers[l].head[h].weights);
        if (k < 4) CHECK(attn::dump_json(attn::trace_to_json(a.layers[1])) == attn::dump_json(attn::trace_to_json(b.layers[1])));
    }
    // A loaded model trains on from where it was.
    REQUIRE(load.file->optimiser);
    auto resumed = Trainer::create(load.file->settings, load.file->model, load.file->steps, errors, &*load.file->optimiser);
    REQUIRE(resumed);
    CHECK(resumed->steps_done() == 20);
    resumed->step();
    std::filesystem::remove(path);
}

TEST_CASE("model files / save, load and train on is bit for bit the run that was never saved") {
    TrainSettings s = small_settings(TaskKind::Reverse);
    s.model.layer_norm = true;
    s.model.feed_forward = true;
    s.evaluate_every = 10;
    s.warmup_steps = 40;  // the save falls inside the warm-up: the rate must resume where it was
    std::vector<std::string> errors;
    auto uninterrupted = Trainer::create(s, errors);
    auto first_half = Trainer::create(s, errors);
    REQUIRE(uninterrupted);
    REQUIRE(first_half);
    uninterrupted->run(50);
    first_half->run(30);
    const std::string path = temp_path("resume.json");
    std::string error;
    REQUIRE(save_model_file(path, model_file_of(*first_half), &error));
    const ModelFileLoad load = load_model_file(path);
    INFO((load.errors.empty() ? std::string() : load.errors[0]));
    REQUIRE(load.file);
    REQUIRE(load.file->optimiser);
    CHECK(load.file->optimiser->steps == 30);
    CHECK(same_bits(load.file->optimiser->m, first_half->optimiser().state().m));
    CHECK(same_bits(load.file->optimiser->v, first_half->optimiser().state().v));
    auto resumed = Trainer::create(load.file->settings, load.file->model, load.file->steps, errors, &*load.file->optimiser);
    REQUIRE(resumed);
    std::vector<StepStats> tail;
    for (int i = 0; i < 20; ++i) tail.push_back(resumed->step());
    CHECK(resumed->steps_done() == 50);
    CHECK(resumed->optimiser().steps() == 50);
    CHECK(same_bits(resumed->model().params, uninterrupted->model().params));
    for (size_t i = 0; i < tail.size(); ++i) {
        CHECK(tail[i].step == uninterrupted->history()[30 + i].step);
        CHECK(tail[i].loss == uninterrupted->history()[30 + i].loss);
        CHECK(tail[i].learning_rate == uninterrupted->history()[30 + i].learning_rate);
    }
    CHECK(resumed->evaluate().loss == uninterrupted->evaluate().loss);

    SECTION("a file without the optimiser (written before it was kept) loads; training on starts AdamW afresh") {
        nlohmann::json j = model_to_json(model_file_of(*first_half));
        j.erase("optimiser");
        const ModelFileLoad older = model_from_json(j, "older.json");
        REQUIRE(older.file);
        CHECK_FALSE(older.file->optimiser);
        auto afresh = Trainer::create(older.file->settings, older.file->model, older.file->steps, errors);
        REQUIRE(afresh);
        CHECK(afresh->optimiser().steps() == 0);
        afresh->run(20);
        CHECK_FALSE(same_bits(afresh->model().params, uninterrupted->model().params));
    }
    SECTION("moments of another layout are refused") {
        TrainSettings other = s;
        other.model.feed_forward = false;
        auto small = Trainer::create(other, errors);
        REQUIRE(small);
        const AdamWState wrong = small->optimiser().state();
        CHECK_FALSE(Trainer::create(load.file->settings, load.file->model, 30, errors, &wrong));
        REQUIRE_FALSE(errors.empty());
        CHECK_THAT(errors[0], Catch::Contains("the optimiser's moments do not have the model's tensors"));
    }
    std::filesystem::remove(path);
}

TEST_CASE("model files / a file at step 2^30 opens and trains on at once: the example stream is not replayed") {
    // Each step draws from its own generator (batch_stream), so continuing at step k costs
    // nothing; replaying k × batch examples to reach it took hours at the largest step count
    // a file may hold.
    TrainSettings s = small_settings(TaskKind::Reverse);
    std::vector<std::string> errors;
    auto fresh = Trainer::create(s, errors);
    REQUIRE(fresh);
    nlohmann::json j = model_to_json(model_file_of(*fresh));
    j["steps"] = 1 << 30;
    const ModelFileLoad load = model_from_json(j, "late.json");
    REQUIRE(load.file);
    REQUIRE(load.file->steps == 1 << 30);
    auto late = Trainer::create(load.file->settings, load.file->model, load.file->steps, errors);
    REQUIRE(late);
    CHECK(late->steps_done() == 1 << 30);
    const StepStats stats = late->step();
    CHECK(stats.step == (1 << 30) + 1);
    CHECK(stats.learning_rate == late->settings().learning_rate);  // long past the warm-up
    CHECK(std::isfinite(stats.loss));
}

TEST_CASE("trainer / each step has its own batch generator: the same step draws the same batch, another step another") {
    const TrainSettings s = fitted(small_settings(TaskKind::Reverse));
    std::set<std::vector<int>> firsts;
    for (int step : {0, 1, 2, 1000, 1 << 30}) {
        Rng a = batch_stream(s.seed, step), b = batch_stream(s.seed, step);
        CHECK(a.next_u64() == b.next_u64());  // the same step, the same batch
        Rng c = batch_stream(s.seed, step);
        std::vector<int> first;
        for (int k = 0; k < 4; ++k) {
            const std::vector<int> content = example_content(make_example(s.task, c));
            first.insert(first.end(), content.begin(), content.end());
        }
        firsts.insert(first);
    }
    CHECK(firsts.size() == 5);
    CHECK(batch_stream(1, 7).next_u64() != batch_stream(2, 7).next_u64());  // another seed, another stream
}

TEST_CASE("model files / a bad file is refused with a message naming what and where") {
    TrainSettings s = small_settings(TaskKind::Reverse);
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    REQUIRE(trainer);
    trainer->run(2);  // moments that are not all zero
    const nlohmann::json good = model_to_json(model_file_of(*trainer));
    REQUIRE(model_from_json(good, "good.json").file);

    struct Bad {
        const char* item;
        std::function<void(nlohmann::json&)> spoil;
        const char* says;
    };
    const std::vector<Bad> catalogue{
        {"not an object", [](nlohmann::json& j) { j = nlohmann::json::array(); }, "expected a JSON object"},
        {"another format", [](nlohmann::json& j) { j["format"] = "attnlab-session"; }, "not a model file"},
        {"no format", [](nlohmann::json& j) { j.erase("format"); }, "key 'format'"},
        {"a newer version", [](nlohmann::json& j) { j["version"] = 2; }, "reads version 1"},
        {"an unknown key", [](nlohmann::json& j) { j["extra"] = 1; }, "key 'extra': unknown key"},
        {"no parameters", [](nlohmann::json& j) { j.erase("parameters"); }, "key 'parameters': missing"},
        {"an unknown model key", [](nlohmann::json& j) { j["model"]["depth"] = 3; }, "key 'model.depth': unknown key"},
        {"a missing model key", [](nlohmann::json& j) { j["model"].erase("heads"); }, "key 'model.heads': missing"},
        {"heads not a number", [](nlohmann::json& j) { j["model"]["heads"] = "two"; }, "key 'model.heads': expected an integer"},
        {"heads out of range", [](nlohmann::json& j) { j["model"]["heads"] = 9; }, "key 'model.heads': expected 1 to 8"},
        {"heads not dividing d_model", [](nlohmann::json& j) { j["model"]["heads"] = 3; }, "not divisible by 3 heads"},
        {"an unknown encoding", [](nlohmann::json& j) { j["model"]["positional"] = "spiral"; }, "key 'model.positional': expected one of"},
        {"a duplicated token", [](nlohmann::json& j) { j["vocabulary"][1] = "a"; }, "key 'vocabulary' entry 2"},
        {"a vocabulary the task does not have", [](nlohmann::json& j) { j["vocabulary"][1] = "z"; }, "does not fit the model"},
        {"an unknown task", [](nlohmann::json& j) { j["training"]["task"] = "fly"; }, "key 'training.task'"},
        {"an unknown training key", [](nlohmann::json& j) { j["training"]["lr"] = 0.1; }, "key 'training.lr': unknown key"},
        {"a missing tensor", [](nlohmann::json& j) { j["parameters"].erase("layer0.w_q"); }, "key 'parameters.layer0.w_q': missing"},
        {"an unknown tensor", [](nlohmann::json& j) { j["parameters"]["layer3.w_q"] = j["parameters"]["layer0.w_q"]; },
         "key 'parameters.layer3.w_q': unknown tensor"},
        {"a short row", [](nlohmann::json& j) { j["parameters"]["layer0.w_k"][2].erase(0); },
         "key 'parameters.layer0.w_k' row 3: expected 32 numbers, found 31"},
        {"a missing row", [](nlohmann::json& j) { j["parameters"]["unembedding"].erase(0); }, "key 'parameters.unembedding': expected 32 rows"},
        {"a string for a weight", [](nlohmann::json& j) { j["parameters"]["layer0.b_v"][0][4] = "x"; },
         "key 'parameters.layer0.b_v' row 1 column 5: expected a finite number"},
        {"an overflowing weight", [](nlohmann::json& j) { j["parameters"]["layer0.w_o"][0][0] = 1e300; },
         "key 'parameters.layer0.w_o' row 1 column 1: expected a finite number"},
        {"an optimiser without its second moment", [](nlohmann::json& j) { j["optimiser"].erase("v"); }, "key 'optimiser.v': missing"},
        {"an unknown optimiser key", [](nlohmann::json& j) { j["optimiser"]["beta"] = 0.9; }, "key 'optimiser.beta': unknown key"},
        {"a negative optimiser step count", [](nlohmann::json& j) { j["optimiser"]["steps"] = -1; },
         "key 'optimiser.steps': expected 0 to"},
        {"an optimiser moment that is not an object", [](nlohmann::json& j) { j["optimiser"]["m"] = 0; },
         "key 'optimiser.m': expected an object of named tensors"},
        {"a moment's short row", [](nlohmann::json& j) { j["optimiser"]["m"]["layer0.w_q"][1].erase(0); },
         "key 'optimiser.m.layer0.w_q' row 2: expected 32 numbers, found 31"},
        {"a moment's missing tensor", [](nlohmann::json& j) { j["optimiser"]["v"].erase("unembedding"); },
         "key 'optimiser.v.unembedding': missing"},
        {"a negative second moment", [](nlohmann::json& j) { j["optimiser"]["v"]["layer0.w_k"][0][2] = -0.5; },
         "key 'optimiser.v.layer0.w_k' row 1 column 3: a second moment is a mean of squares"},
    };
    for (const Bad& bad : catalogue) {
        INFO(bad.item);
        nlohmann::json j = good;
        bad.spoil(j);
        const ModelFileLoad load = model_from_text(attn::dump_json(j), "bad.json");
        CHECK_FALSE(load.file);
        REQUIRE_FALSE(load.errors.empty());
        bool found = false;
        for (const std::string& e : load.errors) found = found || (e.find(bad.says) != std::string::npos && e.rfind("bad.json: ", 0) == 0);
        INFO("first message: " << load.errors[0]);
        CHECK(found);
    }
    SECTION("not JSON, a missing file, a truncated file") {
        CHECK_THAT(model_from_text("{\"format\": ", "cut.json").errors.at(0), Catch::Contains("cut.json: line 1"));
        const ModelFileLoad missing = load_model_file(temp_path("no_such_model.json"));
        CHECK_FALSE(missing.file);
        CHECK_THAT(missing.errors.at(0), Catch::Contains("no_such_model.json"));
    }
    SECTION("a diverged model is not saved") {
        ModelFile file = model_file_of(*trainer);
        file.model.params.layers[0].w_v(1, 2) = std::nanf("");
        std::string error;
        CHECK_FALSE(save_model_file(temp_path("nan.json"), file, &error));
        CHECK_THAT(error, Catch::Contains("'layer0.w_v' row 2 column 3 is not finite"));
        file = model_file_of(*trainer);
        file.optimiser->v.unembedding(0, 1) = std::numeric_limits<float>::infinity();
        CHECK_FALSE(save_model_file(temp_path("nan.json"), file, &error));
        CHECK_THAT(error, Catch::Contains("second moment of 'unembedding' row 1 column 2 is not finite"));
        CHECK_FALSE(std::filesystem::exists(temp_path("nan.json")));
    }
}

// [SECTION] The trained model in the pipeline view, ablation

namespace {

// A 2-layer model of the task (cross-reverse unmasked: its answers lie in later source keys)
// after 10 steps.
std::optional<Trainer> two_layers_after_10_steps(TaskKind kind, PositionalEncoding positional) {
    TrainSettings s = small_settings(kind);
    s.model.layers = 2;
    s.model.positional = positional;
    if (kind == TaskKind::CrossReverse) s.model.mask = MaskKind::None;
    std::vector<std::string> errors;
    std::optional<Trainer> trainer = Trainer::create(s, errors);
    if (trainer) trainer->run(10);
    return trainer;
}

}  // namespace

TEST_CASE("model / each trained layer opens as a scenario whose trace is the forward pass's layer") {
    struct Case {
        TaskKind kind;
        PositionalEncoding positional;
    };
    const Case c = GENERATE(Case{TaskKind::Reverse, PositionalEncoding::Learned}, Case{TaskKind::Reverse, PositionalEncoding::Sinusoidal},
                            Case{TaskKind::Induction, PositionalEncoding::Rotary}, Case{TaskKind::CrossReverse, PositionalEncoding::Learned},
                            Case{TaskKind::CrossReverse, PositionalEncoding::Sinusoidal});
    INFO(to_string(c.kind) << ", " << to_string(c.positional));
    std::optional<Trainer> trainer = two_layers_after_10_steps(c.kind, c.positional);
    REQUIRE(trainer);
    const Example& probe = trainer->probe();
    const ForwardPass f = forward(trainer->model(), probe.input);
    REQUIRE(f.ok);
    for (int l = 0; l < 2; ++l) {
        INFO("layer " << l + 1);
        const Scenario scenario = trained_layer_scenario(trainer->model(), probe.input, f, l);
        const Trace t = attn::run(scenario);
        REQUIRE(t.ok);
        const Trace& expected = f.layers[static_cast<size_t>(l)];
        REQUIRE(t.heads == expected.heads);
        for (int h = 0; h < t.heads; ++h) CHECK(t.head[static_cast<size_t>(h)].weights == expected.head[static_cast<size_t>(h)].weights);
        CHECK(layer_output(t) == layer_output(expected));
        CHECK(t.query_tokens == expected.query_tokens);
    }
}

TEST_CASE("model / an edited layer recomputes the layers after it as a model with that weight would") {
    struct Case {
        TaskKind kind;
        PositionalEncoding positional;
        int layer;
    };
    const Case c = GENERATE(Case{TaskKind::Reverse, PositionalEncoding::Learned, 0}, Case{TaskKind::Reverse, PositionalEncoding::Learned, 1},
                            Case{TaskKind::Reverse, PositionalEncoding::Sinusoidal, 0}, Case{TaskKind::Induction, PositionalEncoding::Rotary, 1},
                            Case{TaskKind::CrossReverse, PositionalEncoding::Learned, 1});
    INFO(to_string(c.kind) << ", " << to_string(c.positional) << ", layer " << c.layer + 1);
    std::optional<Trainer> trainer = two_layers_after_10_steps(c.kind, c.positional);
    REQUIRE(trainer);
    const Model& model = trainer->model();
    const Example& probe = trainer->probe();
    ForwardPass pass = forward(model, probe.input);
    REQUIRE(pass.ok);
    const Matrix before = pass.logits;
    // The edit: one weight of W_V and one of W_O in the opened layer's scenario.
    Scenario edited = trained_layer_scenario(model, probe.input, pass, c.layer);
    edited.w_v.edit()(1, 2) += 0.75f;
    edited.w_o.edit()(0, 3) -= 0.5f;
    REQUIRE(recompute_from(model, probe.input, c.layer, edited, pass));
    // Independently: the same weights changed in a copy of the model, run from scratch.
    Model changed = model;
    changed.params.layers[static_cast<size_t>(c.layer)].w_v(1, 2) += 0.75f;
    changed.params.layers[static_cast<size_t>(c.layer)].w_o(0, 3) -= 0.5f;
    const ForwardPass expected = forward(changed, probe.input);
    REQUIRE(expected.ok);
    CHECK((pass.logits - before).cwiseAbs().maxCoeff() > 1e-3f);  // the edit reaches the logits
    CHECK((pass.logits - expected.logits).cwiseAbs().maxCoeff() < 1e-5f);
    for (int l = c.layer; l < 2; ++l) {
        INFO("layer " << l + 1);
        CHECK((layer_output(pass.layers[static_cast<size_t>(l)]) - layer_output(expected.layers[static_cast<size_t>(l)])).cwiseAbs().maxCoeff() < 1e-5f);
    }
    // A layer given another token count is refused, saying where tokens change.
    Scenario shorter = edited;
    shorter.target.tokens.pop_back();
    shorter.target.embeddings.conservativeResize(shorter.target.embeddings.rows() - 1, Eigen::NoChange);
    CHECK_FALSE(recompute_from(model, probe.input, c.layer, shorter, pass));
    REQUIRE_FALSE(pass.errors.empty());
    CHECK(pass.errors.front().find("probe") != std::string::npos);
}

TEST_CASE("model / a layer scenario of another shape is refused by recompute_from, not run") {
    std::optional<Trainer> trainer = two_layers_after_10_steps(TaskKind::Reverse, PositionalEncoding::Learned);
    REQUIRE(trainer);
    const Model& model = trainer->model();
    const Example& probe = trainer->probe();
    ForwardPass pass = forward(model, probe.input);
    REQUIRE(pass.ok);
    const Scenario layer = trained_layer_scenario(model, probe.input, pass, 0);
    CHECK(layer_scenario_faults(model, 0, layer).empty());
    // Layer 1 of a narrower model (d_model 16): its output could not enter layer 2's d_model 32.
    Model narrower = init_model([&] {
        ModelConfig c = model.config;
        c.d_model = 16;
        return c;
    }(), model.vocabulary, 3);
    const ForwardPass narrow_pass = forward(narrower, probe.input);
    REQUIRE(narrow_pass.ok);
    const Scenario narrow = trained_layer_scenario(narrower, probe.input, narrow_pass, 0);
    CHECK_FALSE(recompute_from(model, probe.input, 0, narrow, pass));
    REQUIRE_FALSE(pass.errors.empty());
    CHECK(pass.errors.front() == "layer 1: d_model " + std::to_string(model.config.d_model) + ", but the scenario's layer has d_model 16");
    // Other faults, each named.
    auto faults = [&](const std::function<void(Scenario&)>& spoil) {
        Scenario s = layer;
        spoil(s);
        const std::vector<std::string> f = layer_scenario_faults(model, 0, s);
        return f.empty() ? std::string() : f.front();
    };
    CHECK(faults([](Scenario& s) { s.heads = 4; }) == "2 heads, but the scenario's layer has 4");
    CHECK(faults([](Scenario& s) { s.target.tokens.back() = "zz"; }) ==
          "target token " + std::to_string(probe.input.tokens.size()) + " 'zz' is not in the model's vocabulary");
    CHECK(faults([](Scenario& s) { s.target.embeddings = Matrix(); }).find("target input X of ") == 0);
    CHECK(faults([](Scenario& s) { s.input = InputMode::Direct; }) == "a layer reads embeddings, but the scenario's layer has Q, K and V given directly");
    CHECK(layer_scenario_faults(model, 2, layer).front() == "layer 3 is not one of the model's layers 1 to 2");
}

TEST_CASE("model / an ablated head reaches nothing downstream, and reverse's accuracy drops without its reverse head") {
    TrainSettings s = small_settings(TaskKind::Reverse);
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    REQUIRE(trainer);
    trainer->run(200);
    int head = -1;
    best_head_mass(*trainer, trainer->probe(), 0, &head);
    REQUIRE(head >= 0);
    const double before = trainer->evaluate().accuracy;
    const HeadSet ablation{{0, head}};
    const double after = evaluate(trainer->model(), trainer->held_out(), 200, ablation).accuracy;
    INFO("held-out accuracy " << before << " → " << after << " with head " << head + 1 << " ablated");
    CHECK(before >= 0.99);
    CHECK(after < 0.9);  // the other head shares some rows: a drop, not to chance
    CHECK(evaluate(trainer->model(), trainer->held_out(), 200).accuracy == before);  // the free function is the trainer's
    // The ablated head's values no longer matter: change its W_V columns, the logits stay.
    Model changed = trainer->model();
    const int d_k = s.model.d_model / s.model.heads;
    changed.params.layers[0].w_v.middleCols(head * d_k, d_k).setConstant(3.0f);
    const ForwardPass a = forward(trainer->model(), trainer->probe().input, ablation),
                      b = forward(changed, trainer->probe().input, ablation);
    REQUIRE(a.ok);
    REQUIRE(b.ok);
    CHECK(a.logits == b.logits);
    // And the other head's do.
    changed = trainer->model();
    changed.params.layers[0].w_v.middleCols((1 - head) * d_k, d_k).setConstant(3.0f);
    CHECK_FALSE(forward(changed, trainer->probe().input, ablation).logits == a.logits);
    // The pass used W_O with the head's rows zeroed; the model's own weights are untouched.
    CHECK(a.layers[0].w_o->middleRows(head * d_k, d_k).isZero(0.0f));
    CHECK_FALSE(trainer->model().params.layers[0].w_o.middleRows(head * d_k, d_k).isZero(0.0f));
}

// [SECTION] The model-file fuzz target's work

TEST_CASE("model files / a saved file, every truncation of it and a few spoiled bytes are read without a crash") {
    TrainSettings s = small_settings(TaskKind::Reverse);
    s.model.d_model = 8;
    s.model.heads = 1;
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    REQUIRE(trainer);
    trainer->run(3);
    const std::string text = attn::dump_json(model_to_json(model_file_of(*trainer)));
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(text.data());
    CHECK(attn::fuzz::exercise_model_file(bytes, text.size()));  // loads, runs, reads back, trains a step
    int refused = 0;
    for (size_t cut = 0; cut < text.size(); cut += 97) {
        INFO("cut at " << cut);
        CHECK(attn::fuzz::exercise_model_file(bytes, cut));
        refused += !model_from_text(text.substr(0, cut), "cut.json").file;
    }
    CHECK(refused == static_cast<int>((text.size() + 96) / 97));  // a truncated file never loads
    for (size_t at = 1; at < text.size(); at += 211) {
        std::string spoiled = text;
        spoiled[at] = spoiled[at] == '9' ? '-' : '9';
        CHECK(attn::fuzz::exercise_model_file(reinterpret_cast<const std::uint8_t*>(spoiled.data()), spoiled.size()));
    }
}

TEST_CASE("model files / every input the model-file fuzzer crashed on is read without a crash") {
    namespace fs = std::filesystem;
    for (const auto& entry : fs::directory_iterator(fs::path(ATTNLAB_FUZZ_REGRESSIONS) / "model")) {
        if (entry.path().filename() == "README.md") continue;
        INFO(entry.path().string());
        std::ifstream in(entry.path(), std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CHECK(attn::fuzz::exercise_model_file(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    }
}

TEST_CASE("run history / a long run is thinned to a session's bounds as the trainer thins, and a trainer takes back what was written") {
    train::TrainSettings s;
    s.model.d_model = 8;
    s.model.heads = 1;
    s.evaluate_every = 0;
    s.snapshot_every = 1;
    std::vector<std::string> errors;
    auto trainer = train::Trainer::create(s, errors);
    REQUIRE(trainer);
    train::RunHistory history;
    history.start = trainer->evaluate();
    trainer->run(40);
    REQUIRE(trainer->snapshots().size() == 41);
    const train::ModelFile file = train::model_file_of(*trainer);
    history.steps = trainer->history();
    history.snapshots = trainer->snapshots();
    history.snapshot_interval = trainer->snapshot_interval();

    // 41 snapshots are more than 32: every other one kept (steps 0, 2, …, 40), taken every 2 steps from now on.
    const nlohmann::json j = train::history_to_json(history, file);
    REQUIRE(j["snapshots"].size() == 21);
    CHECK(j["snapshots"][1]["step"] == 2);
    CHECK(j["snapshot_interval"] == 2);
    CHECK_FALSE(j["snapshots"][20].contains("parameters"));  // step 40: the model's own weights
    std::vector<std::string> faults;
    const std::optional<train::RunHistory> read = train::history_from_json(j, file, "h.json", "history", faults);
    REQUIRE(read);
    CHECK(faults.empty());
    CHECK(read->steps.size() == 40);
    CHECK(read->steps[39].loss == static_cast<double>(static_cast<float>(history.steps[39].loss)));
    CHECK(same_bits(read->snapshots[1].params, history.snapshots[2].params));

    auto again = train::Trainer::create(file.settings, file.model, file.steps, errors, &*file.optimiser);
    REQUIRE(again);
    CHECK(again->restore(*read).empty());
    CHECK(again->history().size() == 40);
    CHECK(again->snapshots().size() == 21);
    again->run(2);
    CHECK(again->snapshots().back().step == 42);

    // A history that is not this run's is refused, and the trainer is left as it was.
    auto fresh = train::Trainer::create(file.settings, file.model, 10, errors, &*file.optimiser);
    REQUIRE(fresh);
    CHECK(fresh->restore(*read) == "step 11 of the history is not after the step before it and at most 10");
    CHECK(fresh->history().empty());
    CHECK(fresh->snapshots().size() == 1);
}
