// [SECTION] Flags
// [SECTION] Settings from the flags
// [SECTION] The report: curve, final accuracy, probe, every layer's trace
// [SECTION] Training
#include "cli_train.hpp"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <ostream>

#include <CLI/CLI.hpp>

#include "attention/serialize.hpp"
#include "train/model_file.hpp"
#include "train/trainer.hpp"

namespace attn::cli {

namespace {

constexpr int kDefaultSteps = 300;

// The task names, as --help and the messages list them.
std::string task_names() {
    std::string names;
    for (train::TaskKind kind : train::all_tasks()) names += (names.empty() ? "" : ", ") + std::string(train::to_string(kind));
    return names;
}

}  // namespace

// [SECTION] Flags

void add_train_options(CLI::App& app, TrainOptions& t) {
    app.add_option("--train", t.task,
                   "train a small transformer on a task and write its curve, probe and traces (with --export-json): " +
                       task_names());
    app.add_option("--layers", t.layers, "with --train: layers, 1 to 4 (default 1)");
    app.add_option("--d-model", t.d_model, "with --train: model width, 8 to 128 (default 32)");
    app.add_option("--steps", t.steps, "with --train: training steps (default 300)");
    app.add_option("--lr", t.learning_rate, "with --train: AdamW's learning rate after the warm-up (default 0.01)");
    app.add_option("--save-model", t.save_model, "with --train: save the trained model (weights and settings) to this JSON file");
}

bool check_train_options(const CLI::App& app, const Options& o, std::ostream& err) {
    // Flags only training reads.
    const char* training_only[] = {"--layers", "--d-model", "--steps", "--lr", "--save-model"};
    if (o.train.task.empty()) {
        for (const char* flag : training_only)
            if (app.count(flag) > 0) {
                err << flag << " applies only with --train TASK\n";
                return false;
            }
        return true;
    }
    // Flags training would ignore: refused rather than silently dropped.
    const char* ignored[] = {"--list-presets", "--print",  "--check-articles", "--export-scenario", "--preset",
                             "--scenario",     "--restore", "--screenshot",    "--size",            "--softmax",
                             "--scale",        "--masked-fill", "--text",      "--bench-frames",    "--backend",
                             "--block",        "--lesson", "--step",           "--presenter",       "--no-autosave"};
    for (const char* flag : ignored)
        if (app.count(flag) > 0) {
            err << flag << " does not apply to --train (it trains its own model on the CPU)\n";
            return false;
        }
    if (o.export_json.empty() && o.train.save_model.empty()) {
        err << "--train " << o.train.task << ": give --export-json OUT.json (and/or --save-model FILE) to keep the result\n";
        return false;
    }
    return true;
}

// [SECTION] Settings from the flags

namespace {

std::optional<train::TrainSettings> settings_from(const Options& o, std::ostream& err) {
    train::TrainSettings s;
    const std::optional<train::TaskKind> kind = train::task_from_string(o.train.task);
    if (!kind) {
        err << "--train " << o.train.task << ": unknown task (expected one of " << task_names() << ")\n";
        return std::nullopt;
    }
    s.task.kind = *kind;
    // cross-reverse's answer lies in the later source keys: no mask unless one is asked for.
    if (*kind == train::TaskKind::CrossReverse) s.model.mask = MaskKind::None;
    if (o.train.layers) s.model.layers = *o.train.layers;
    if (o.train.d_model) s.model.d_model = *o.train.d_model;
    if (o.heads) s.model.heads = *o.heads;
    if (o.seed) s.seed = *o.seed;
    if (o.train.learning_rate) s.learning_rate = *o.train.learning_rate;
    if (o.positional) {
        const auto pe = positional_from_string(*o.positional);
        if (!pe) {
            err << "--pe " << *o.positional << ": expected none, sinusoidal, learned, rope or alibi\n";
            return std::nullopt;
        }
        s.model.positional = *pe;
    }
    if (o.mask) {
        const auto mask = mask_from_string(*o.mask);
        if (!mask || *mask == MaskKind::Padding || *mask == MaskKind::Custom) {
            err << "--mask " << *o.mask << ": with --train expected none, causal or window\n";
            return std::nullopt;
        }
        s.model.mask = *mask;
    }
    if (o.window) s.model.window = *o.window;
    if (o.train.steps && *o.train.steps < 1) {
        err << "--steps " << *o.train.steps << ": expected a whole number of at least 1\n";
        return std::nullopt;
    }
    const std::vector<std::string> errors = train::validate(s);
    if (!errors.empty()) {
        for (const std::string& e : errors) err << "--train " << o.train.task << ": " << e << "\n";
        return std::nullopt;
    }
    return train::fitted(s);
}

// [SECTION] The report: curve, final accuracy, probe, every layer's trace

nlohmann::json names_of(const std::vector<int>& ids, const std::vector<std::string>& vocabulary) {
    nlohmann::json names = nlohmann::json::array();
    for (int id : ids) names.push_back(vocabulary.at(static_cast<size_t>(id)));
    return names;
}

nlohmann::json evaluation_to_json(const train::Evaluation& e) {
    return {{"step", e.step}, {"loss", e.loss}, {"accuracy", e.accuracy}, {"scored", e.scored}, {"correct", e.correct}};
}

nlohmann::json report_to_json(const train::Trainer& trainer, const train::Evaluation& final_evaluation) {
    using nlohmann::json;
    const std::vector<std::string>& vocabulary = trainer.model().vocabulary;
    json steps = json::array();
    for (const train::StepStats& s : trainer.history())
        steps.push_back({{"step", s.step}, {"loss", s.loss}, {"gradient_norm", s.gradient_norm}, {"learning_rate", s.learning_rate}});
    json evaluations = json::array();
    for (const train::Evaluation& e : trainer.evaluations()) evaluations.push_back(evaluation_to_json(e));
    const train::Example& probe = trainer.probe();
    const train::Prediction prediction = trainer.predict(probe);
    json correct = json::array();
    for (size_t i = 0; i < prediction.predicted.size(); ++i)
        correct.push_back(probe.scored[i] ? json(prediction.predicted[i] == probe.targets[i]) : json(nullptr));
    json probe_json{{"tokens", names_of(probe.input.tokens, vocabulary)},
                    {"targets", names_of(probe.targets, vocabulary)},
                    {"predictions", names_of(prediction.predicted, vocabulary)},
                    {"scored", probe.scored},
                    {"correct", std::move(correct)},
                    {"expected_key", probe.expected_key}};
    if (!probe.input.source.empty()) probe_json["source"] = names_of(probe.input.source, vocabulary);
    json layers = json::array();
    for (const Trace& layer : prediction.forward.layers) layers.push_back(trace_to_json(layer));
    return {{"format", "attnlab-training"},
            {"version", 1},
            {"vocabulary", vocabulary},
            {"model", train::config_to_json(trainer.model().config)},
            {"training", train::training_to_json(trainer.settings())},
            {"steps", trainer.steps_done()},
            {"curve", {{"steps", std::move(steps)}, {"evaluations", std::move(evaluations)}}},
            {"final", evaluation_to_json(final_evaluation)},
            {"probe", std::move(probe_json)},
            {"layers", std::move(layers)}};
}

}  // namespace

// [SECTION] Training

int run_train(const Options& o, std::ostream&, std::ostream& err) {
    const std::optional<train::TrainSettings> settings = settings_from(o, err);
    if (!settings) return 2;
    std::vector<std::string> errors;
    std::optional<train::Trainer> trainer = train::Trainer::create(*settings, errors);
    if (!trainer) {
        for (const std::string& e : errors) err << "--train " << o.train.task << ": " << e << "\n";
        return 2;
    }
    const int steps = o.train.steps.value_or(kDefaultSteps);
    const train::ModelConfig& c = trainer->model().config;
    err << "training " << o.train.task << ": " << c.layers << (c.layers == 1 ? " layer, " : " layers, ") << c.heads
        << (c.heads == 1 ? " head, " : " heads, ") << "d_model " << c.d_model << ", " << to_string(c.positional)
        << " positions, " << to_string(c.mask) << " mask, seed " << settings->seed << ", " << steps << (steps == 1 ? " step\n" : " steps\n");
    const auto start = std::chrono::steady_clock::now();
    size_t evaluations_shown = 0;
    for (int i = 0; i < steps; ++i) {
        const train::StepStats stats = trainer->step();
        if (!std::isfinite(stats.loss)) {
            err << "--train " << o.train.task << ": the training diverged at step " << stats.step
                << " (the loss is not finite); try a smaller --lr\n";
            return 5;
        }
        for (; evaluations_shown < trainer->evaluations().size(); ++evaluations_shown) {
            const train::Evaluation& e = trainer->evaluations()[evaluations_shown];
            err << "step " << std::setw(5) << e.step << "/" << steps << ": training loss " << std::fixed << std::setprecision(4)
                << stats.loss << ", held-out loss " << e.loss << ", accuracy " << e.accuracy << std::defaultfloat << "\n";
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const train::Evaluation final_evaluation = trainer->evaluate();
    if (!o.train.save_model.empty()) {
        std::string error;
        if (!train::save_model_file(o.train.save_model, train::model_file_of(*trainer), &error)) {
            err << error << "\n";
            return 4;
        }
        err << "model saved to " << o.train.save_model << "\n";
    }
    if (!o.export_json.empty()) {
        std::string error;
        if (!write_file_atomic(o.export_json, dump_json(report_to_json(*trainer, final_evaluation), 1) + "\n", &error)) {
            err << error << "\n";
            return 4;
        }
        err << "report written to " << o.export_json << "\n";
    }
    err << "final held-out accuracy " << std::fixed << std::setprecision(4) << final_evaluation.accuracy << " ("
        << final_evaluation.correct << " of " << final_evaluation.scored << (final_evaluation.scored == 1 ? " token) after " : " tokens) after ")
        << trainer->steps_done() << (trainer->steps_done() == 1 ? " step, " : " steps, ") << std::setprecision(2) << seconds << " s\n"
        << std::defaultfloat;
    return 0;
}

}  // namespace attn::cli
