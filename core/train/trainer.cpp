// [SECTION] Settings
// [SECTION] AdamW
// [SECTION] Trainer
#include "train/trainer.hpp"

#include <cmath>

#include "train/backward.hpp"

namespace attn::train {

// [SECTION] Settings

namespace {

// How many different examples the task can draw (in double: k^m overflows integers).
double distinct_examples(const TaskOptions& o) {
    double count = 1.0;
    for (int i = 0; i < o.length; ++i) count *= o.kind == TaskKind::Induction ? o.symbols - i : o.symbols;
    if (o.kind == TaskKind::Induction) count *= o.length;  // and the gap's length (its letters counted as none: a bound below)
    return count;
}

}  // namespace

TrainSettings fitted(TrainSettings s) {
    fit_model_to_task(s.task, s.model);
    return s;
}

std::vector<std::string> validate(const TrainSettings& given) {
    const TrainSettings s = fitted(given);
    std::vector<std::string> errors = validate(s.task);
    for (const std::string& e : validate(s.model)) errors.push_back(e);
    auto positive = [&](const char* name, double value) {
        if (!(value > 0.0) || !std::isfinite(value))
            errors.push_back(std::string(name) + " is " + std::to_string(value) + ": expected a positive number");
    };
    auto non_negative = [&](const char* name, double value) {
        if (!(value >= 0.0) || !std::isfinite(value))
            errors.push_back(std::string(name) + " is " + std::to_string(value) + ": expected 0 or more");
    };
    if (s.batch_size < 1 || s.batch_size > 4096)
        errors.push_back("batch_size is " + std::to_string(s.batch_size) + ": expected 1 to 4096");
    positive("learning_rate", s.learning_rate);
    positive("adam_epsilon", s.adam_epsilon);
    non_negative("weight_decay", s.weight_decay);
    non_negative("clip_norm", s.clip_norm);
    non_negative("warmup_steps", s.warmup_steps);
    non_negative("evaluate_every", s.evaluate_every);
    if (!(s.beta1 >= 0.0f && s.beta1 < 1.0f)) errors.push_back("beta1 is " + std::to_string(s.beta1) + ": expected 0 ≤ β₁ < 1");
    if (!(s.beta2 >= 0.0f && s.beta2 < 1.0f)) errors.push_back("beta2 is " + std::to_string(s.beta2) + ": expected 0 ≤ β₂ < 1");
    if (s.held_out_size < 1 || s.held_out_size > 100000)
        errors.push_back("held_out_size is " + std::to_string(s.held_out_size) + ": expected 1 to 100000");
    if (s.snapshot_every < 1) errors.push_back("snapshot_every is " + std::to_string(s.snapshot_every) + ": expected at least 1");
    if (errors.empty() && s.held_out_size * 4.0 > distinct_examples(s.task))
        errors.push_back("the task has only " + std::to_string(static_cast<long long>(distinct_examples(s.task))) +
                         " distinct examples: a held-out set of " + std::to_string(s.held_out_size) +
                         " would leave too few to train on (at most a quarter may be held out)");
    return errors;
}

// [SECTION] AdamW

AdamW::AdamW(const ModelParams& like) : m_(zeros_like(like)), v_(zeros_like(like)) {}

void AdamW::update(ModelParams& params, const ModelParams& grads, float learning_rate, const TrainSettings& s) {
    ++steps_;
    const double correction1 = 1.0 - std::pow(static_cast<double>(s.beta1), steps_);
    const double correction2 = 1.0 - std::pow(static_cast<double>(s.beta2), steps_);
    std::vector<ParamView> p = parameter_views(params), g = parameter_views(grads), m = parameter_views(m_),
                           v = parameter_views(v_);
    for (size_t t = 0; t < p.size(); ++t) {
        const float decay = p[t].rows > 1 ? s.weight_decay : 0.0f;  // matrices, not biases, γ or β
        for (Eigen::Index i = 0; i < p[t].size(); ++i) {
            const float grad = g[t].data[i];
            m[t].data[i] = s.beta1 * m[t].data[i] + (1.0f - s.beta1) * grad;
            v[t].data[i] = s.beta2 * v[t].data[i] + (1.0f - s.beta2) * grad * grad;
            const float m_hat = static_cast<float>(m[t].data[i] / correction1);
            const float v_hat = static_cast<float>(v[t].data[i] / correction2);
            p[t].data[i] -= learning_rate * (m_hat / (std::sqrt(v_hat) + s.adam_epsilon) + decay * p[t].data[i]);
        }
    }
}

double clip_gradient(ModelParams& grads, float max_norm) {
    double norm2 = 0.0;
    for (const ParamView& g : parameter_views(grads)) norm2 += g.map().cast<double>().squaredNorm();
    const double norm = std::sqrt(norm2);
    // Every tensor scaled by one factor: the gradient keeps its direction.
    if (max_norm > 0.0f && norm > max_norm) {
        const float factor = static_cast<float>(max_norm / norm);
        for (ParamView& g : parameter_views(grads)) g.map() *= factor;
    }
    return norm;
}

// [SECTION] Trainer

std::vector<int> argmax_rows(const Matrix& logits) {
    std::vector<int> out(static_cast<size_t>(logits.rows()));
    for (Eigen::Index i = 0; i < logits.rows(); ++i) {
        Eigen::Index best = 0;
        logits.row(i).maxCoeff(&best);
        out[static_cast<size_t>(i)] = static_cast<int>(best);
    }
    return out;
}

Trainer::Trainer(const TrainSettings& settings, Model model, int steps_done, const AdamWState* optimiser)
    : settings_(settings),
      model_(std::move(model)),
      optimiser_(optimiser ? AdamW(*optimiser) : AdamW(model_.params)),
      held_out_(make_held_out(settings.task, settings.held_out_size, settings.seed)),
      steps_done_(steps_done),
      snapshot_interval_(settings.snapshot_every) {
    take_snapshot();
}

Rng batch_stream(std::uint64_t seed, int step) {
    // Rng(x).next_u64() mixes x into an unrelated 64-bit number; x is a bijection of the step
    // for a seed (an odd multiplier, then xor), so no two steps share a generator.
    Rng mixer((seed * 0x2545F4914F6CDD1Dull + 0x7A11u) ^ (static_cast<std::uint64_t>(step) * 0xD6E8FEB86659FD93ull));
    return Rng(mixer.next_u64());
}

namespace {

// The same tensors, by name and shape, in the same order.
bool same_layout(const ModelParams& a, const ModelParams& b) {
    const std::vector<ParamView> x = parameter_views(a), y = parameter_views(b);
    bool same = x.size() == y.size();
    for (size_t t = 0; same && t < x.size(); ++t) same = x[t].name == y[t].name && x[t].rows == y[t].rows && x[t].cols == y[t].cols;
    return same;
}

}  // namespace

std::optional<Trainer> Trainer::create(const TrainSettings& given, std::vector<std::string>& errors) {
    const TrainSettings s = fitted(given);
    errors = validate(s);
    if (!errors.empty()) return std::nullopt;
    return Trainer(s, init_model(s.model, task_vocabulary(s.task), s.seed), 0, nullptr);
}

std::optional<Trainer> Trainer::create(const TrainSettings& given, const Model& model, int steps_done,
                                       std::vector<std::string>& errors, const AdamWState* optimiser) {
    const TrainSettings s = fitted(given);
    errors = validate(s);
    if (errors.empty() && model.vocabulary != task_vocabulary(s.task))
        errors.push_back("the model's vocabulary is not the task's (" + std::to_string(model.vocabulary.size()) + " tokens, the task has " +
                         std::to_string(task_vocabulary(s.task).size()) + ")");
    if (errors.empty() && optimiser) {
        if (!same_layout(optimiser->m, model.params) || !same_layout(optimiser->v, model.params))
            errors.push_back("the optimiser's moments do not have the model's tensors and shapes");
        if (optimiser->steps < 0) errors.push_back("the optimiser's step count is negative");
    }
    if (steps_done < 0) errors.push_back("steps_done is " + std::to_string(steps_done) + ": expected 0 or more");
    if (!errors.empty()) return std::nullopt;
    return Trainer(s, model, steps_done, optimiser);
}

std::string Trainer::restore(RunHistory history) {
    const std::string done = std::to_string(steps_done_);
    int previous = 0;
    for (const StepStats& s : history.steps) {
        if (s.step <= previous || s.step > steps_done_)
            return "step " + std::to_string(s.step) + " of the history is not after the step before it and at most " + done;
        previous = s.step;
    }
    previous = -1;
    for (const Evaluation& e : history.evaluations) {
        if (e.step <= previous || e.step > steps_done_)
            return "the evaluation at step " + std::to_string(e.step) + " is not after the one before it and at most " + done;
        previous = e.step;
    }
    previous = -1;
    for (const Snapshot& s : history.snapshots) {
        if (s.step <= previous || s.step > steps_done_)
            return "the snapshot at step " + std::to_string(s.step) + " is not after the one before it and at most " + done;
        if (!same_layout(s.params, model_.params)) return "the snapshot at step " + std::to_string(s.step) + " is not in the model's layout";
        previous = s.step;
    }
    if (history.snapshot_interval < 1) return "the snapshot interval is " + std::to_string(history.snapshot_interval) + ": expected at least 1";
    history_ = std::move(history.steps);
    evaluations_ = std::move(history.evaluations);
    if (!history.snapshots.empty()) snapshots_ = std::move(history.snapshots);
    snapshot_interval_ = history.snapshot_interval;
    return {};
}

Example Trainer::next_training_example(Rng& stream) const {
    // Never a held-out example: redraw (validate() keeps the held-out set under a quarter of
    // the task's examples, so a redraw succeeds at least three times in four).
    for (;;) {
        Example e = make_example(settings_.task, stream);
        if (!held_out_.contains(e)) return e;
    }
}

StepStats Trainer::step() {
    std::vector<Example> batch;
    int scored = 0;
    Rng stream = batch_stream(settings_.seed, steps_done_);
    for (int b = 0; b < settings_.batch_size; ++b) {
        batch.push_back(next_training_example(stream));
        for (bool counted : batch.back().scored) scored += counted;
    }
    const float weight = 1.0f / static_cast<float>(std::max(1, scored));  // the batch's mean
    ModelParams grads = zeros_like(model_.params);
    double loss = 0.0;
    for (const Example& e : batch) {
        const ForwardPass f = forward(model_, e.input);
        Matrix dlogits = Matrix::Zero(f.logits.rows(), f.logits.cols());
        loss += cross_entropy(f.logits, e.targets, e.scored, weight, &dlogits);
        backward(model_, e.input, f, dlogits, grads);
    }
    const double norm = clip_gradient(grads, settings_.clip_norm);
    // Linear warm-up: lr·(step+1)/warmup for the first `warmup` steps.
    const int index = steps_done_;
    const float rate = settings_.warmup_steps > 0 && index < settings_.warmup_steps
                           ? settings_.learning_rate * static_cast<float>(index + 1) / static_cast<float>(settings_.warmup_steps)
                           : settings_.learning_rate;
    optimiser_.update(model_.params, grads, rate, settings_);
    ++steps_done_;
    StepStats stats{steps_done_, loss / std::max(1, scored), norm, rate};
    history_.push_back(stats);
    if (settings_.evaluate_every > 0 && steps_done_ % settings_.evaluate_every == 0) evaluations_.push_back(evaluate());
    if (steps_done_ % snapshot_interval_ == 0) take_snapshot();
    return stats;
}

void Trainer::run(int steps) {
    for (int i = 0; i < steps; ++i) step();
}

Prediction Trainer::predict(const Example& e) const { return predict(e, model_.params); }

Prediction Trainer::predict(const Example& e, const ModelParams& params) const {
    Prediction p;
    const Model* model = &model_;
    Model other;
    if (&params != &model_.params) {
        other = model_;
        other.params = params;
        model = &other;
    }
    p.forward = forward(*model, e.input);
    if (p.forward.ok) p.predicted = argmax_rows(p.forward.logits);
    p.targets = e.targets;
    p.scored = e.scored;
    return p;
}

Evaluation Trainer::evaluate() const { return train::evaluate(model_, held_out_.examples, steps_done_); }

Evaluation evaluate(const Model& model, const std::vector<Example>& examples, int step, const HeadSet& ablated) {
    Evaluation ev;
    ev.step = step;
    for (const Example& e : examples) {
        const ForwardPass f = forward(model, e.input, ablated);
        if (!f.ok) continue;
        ev.loss += cross_entropy(f.logits, e.targets, e.scored, 1.0f, nullptr);
        const std::vector<int> predicted = argmax_rows(f.logits);
        for (size_t i = 0; i < predicted.size(); ++i) {
            if (!e.scored[i]) continue;
            ++ev.scored;
            ev.correct += predicted[i] == e.targets[i];
        }
    }
    ev.loss /= std::max(1, ev.scored);
    ev.accuracy = ev.scored > 0 ? static_cast<double>(ev.correct) / ev.scored : 0.0;
    return ev;
}

void Trainer::take_snapshot() {
    snapshots_.push_back({steps_done_, model_.params});
    const std::size_t bytes_each = static_cast<std::size_t>(parameter_count(model_.params)) * sizeof(float);
    // Over the budget: keep every other snapshot (the first and the newest stay) and take
    // them half as often from now on, so the timeline still spans the whole run.
    while (snapshots_.size() > 2 && snapshots_.size() * bytes_each > settings_.snapshot_budget_bytes) {
        std::deque<Snapshot> kept;
        for (size_t i = 0; i < snapshots_.size(); ++i)
            if (i % 2 == 0 || i + 1 == snapshots_.size()) kept.push_back(std::move(snapshots_[i]));
        snapshots_ = std::move(kept);
        snapshot_interval_ *= 2;
    }
}

}  // namespace attn::train
