#pragma once
// Training on demand: a Trainer holds the model, the optimiser's state and the example
// stream, and advances one step when asked. A UI worker calls step() in a loop and can
// stop between any two steps: pausing is not calling, so a paused and resumed run is the
// uninterrupted run, bit for bit. Runs are deterministic for a seed.
//
// One step: a batch of fresh examples (never one of the held-out set's) → forward through
// the engine → mean cross-entropy of the scored rows → backward → global-norm clipping →
// AdamW with a linear warm-up of the learning rate.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "tensor/random.hpp"
#include "train/model.hpp"
#include "train/tasks.hpp"

namespace attn::train {

struct TrainSettings {
    TaskOptions task;
    ModelConfig model;             // vocabulary size, positions and attention kind follow the task
    std::uint64_t seed = 1;        // the initial weights, the example stream and the held-out set
    int batch_size = 16;
    float learning_rate = 1e-2f;   // AdamW's, reached after the warm-up
    int warmup_steps = 20;         // the rate rises linearly over these steps: lr·(step+1)/warmup
    float weight_decay = 0.01f;    // decoupled, on the weight matrices only (not biases, γ, β)
    float beta1 = 0.9f, beta2 = 0.99f, adam_epsilon = 1e-8f;
    float clip_norm = 1.0f;        // the gradient's global L2 norm is scaled down to this; 0 = off
    int held_out_size = 256;
    int evaluate_every = 25;       // held-out accuracy every N steps (0 = only when asked)
    int snapshot_every = 25;       // a snapshot every N steps, thinned to fit the budget
    std::size_t snapshot_budget_bytes = 64u << 20;
};

// Every reason the settings cannot train (the model's and the task's included).
std::vector<std::string> validate(const TrainSettings& settings);
// The settings with the model fitted to the task (fit_model_to_task).
TrainSettings fitted(TrainSettings settings);

struct StepStats {
    int step = 0;               // 1 for the first step
    double loss = 0.0;          // mean over the batch's scored rows, before the update
    double gradient_norm = 0.0; // global L2 norm before clipping
    float learning_rate = 0.0f;
};

struct Evaluation {
    int step = 0;               // steps done when evaluated
    double loss = 0.0;          // mean cross-entropy over the held-out scored rows
    double accuracy = 0.0;      // argmax = target over the held-out scored rows
    int scored = 0, correct = 0;
};

struct Prediction {
    std::vector<int> predicted;  // argmax per target row
    std::vector<int> targets;
    std::vector<bool> scored;
    ForwardPass forward;         // every layer's trace
};

struct Snapshot {
    int step = 0;
    ModelParams params;
};

// AdamW (Loshchilov & Hutter): m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g², θ ← θ − lr·(m̂/(√v̂ + ε) + λθ)
// with bias-corrected m̂, v̂; λ only on matrices with more than one row.
// Its state: the moments m, v (the parameters' layout) and the updates made (for the bias
// correction). Kept in model files, so that training continues exactly where it stopped.
struct AdamWState {
    ModelParams m, v;
    int steps = 0;
};

// What a run has done besides its weights: its steps' stats, its held-out evaluations and the
// snapshots its timeline replays. A session keeps it, so that a run opened again shows its
// curves and its timeline, and goes on taking snapshots where the closed one would have.
struct RunHistory {
    Evaluation start;                     // the held-out set before the first of `steps`: where the accuracy curve begins
    std::vector<StepStats> steps;         // by ascending step
    std::vector<Evaluation> evaluations;  // by ascending step
    std::deque<Snapshot> snapshots;       // oldest first, each in the model's layout
    int snapshot_interval = 1;            // steps between snapshots from here on (Trainer::snapshot_interval)
};

class AdamW {
public:
    AdamW() = default;
    explicit AdamW(const ModelParams& like);
    explicit AdamW(AdamWState state) : m_(std::move(state.m)), v_(std::move(state.v)), steps_(state.steps) {}
    void update(ModelParams& params, const ModelParams& grads, float learning_rate, const TrainSettings& settings);
    int steps() const { return steps_; }
    AdamWState state() const { return {m_, v_, steps_}; }
private:
    ModelParams m_, v_;
    int steps_ = 0;
};

class Trainer {
public:
    // nullopt with the reasons when the settings cannot train.
    static std::optional<Trainer> create(const TrainSettings& settings, std::vector<std::string>& errors);
    // Continues from a given model (a loaded file) after `steps_done` steps: the example
    // stream resumes where those steps left it (batch_stream: at once, no step replayed), and
    // the optimiser from `optimiser` when given (its layout must be the model's), else afresh.
    // With the optimiser's state, the run that continues is bit for bit the run that was
    // never interrupted.
    static std::optional<Trainer> create(const TrainSettings& settings, const Model& model, int steps_done,
                                         std::vector<std::string>& errors, const AdamWState* optimiser = nullptr);

    // The history of the run this trainer continues (a session opened again) becomes its own:
    // the steps' stats, the evaluations, the snapshots (when there are any; else the one taken
    // at creation stays) and the interval they are taken at. "" when taken; else why it does
    // not fit (a step after steps_done, steps out of order, a snapshot not in the model's
    // layout), and the trainer is unchanged.
    std::string restore(RunHistory history);

    StepStats step();
    void run(int steps);  // step() that many times
    Evaluation evaluate() const;  // the held-out set, with the current weights

    const Model& model() const { return model_; }
    const AdamW& optimiser() const { return optimiser_; }
    const TrainSettings& settings() const { return settings_; }
    int steps_done() const { return steps_done_; }
    const std::vector<StepStats>& history() const { return history_; }
    const std::vector<Evaluation>& evaluations() const { return evaluations_; }
    const std::deque<Snapshot>& snapshots() const { return snapshots_; }
    int snapshot_interval() const { return snapshot_interval_; }  // doubles when the budget is reached
    const std::vector<Example>& held_out() const { return held_out_.examples; }
    // The fixed probe the UI draws: the first held-out example.
    const Example& probe() const { return held_out_.examples.front(); }
    Prediction predict(const Example& example) const;
    Prediction predict(const Example& example, const ModelParams& params) const;  // e.g. a snapshot's

private:
    Trainer(const TrainSettings& settings, Model model, int steps_done, const AdamWState* optimiser);
    Example next_training_example(Rng& stream) const;
    void take_snapshot();

    TrainSettings settings_;
    Model model_;
    AdamW optimiser_;
    HeldOutSet held_out_;
    int steps_done_ = 0;
    std::vector<StepStats> history_;
    std::vector<Evaluation> evaluations_;
    std::deque<Snapshot> snapshots_;
    int snapshot_interval_ = 25;
};

// The generator of step `step`'s batch (from 0) in a run with this seed. Each step has its
// own, so a run continued at any step draws what the uninterrupted run drew there, and
// restoring the stream costs nothing however many steps were made.
Rng batch_stream(std::uint64_t seed, int step);

// Held-out loss and accuracy of a model over examples (what Trainer::evaluate computes with
// its own weights and held-out set): e.g. a snapshot's weights, or with heads ablated.
Evaluation evaluate(const Model& model, const std::vector<Example>& examples, int step, const HeadSet& ablated = {});

// Scales every tensor of grads by one factor so that their global L2 norm is at most
// max_norm (0: no limit). Returns the norm before.
double clip_gradient(ModelParams& grads, float max_norm);

// The argmax of each row of logits.
std::vector<int> argmax_rows(const Matrix& logits);

}  // namespace attn::train
