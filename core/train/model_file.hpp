#pragma once
// A trained model as a JSON file: its weights and the settings it was trained with.
//
//   {
//     "format": "attnlab-model", "version": 1,
//     "vocabulary": ["a", "b", …, "|"],
//     "model":      {"d_model": 32, "heads": 2, "layers": 1, "positional": "sinusoidal", "mask": "causal",
//                    "window": 2, "attention": "self", "scale": true, "biases": true, "residual": true,
//                    "layer_norm": false, "norm": "pre", "feed_forward": false, "d_ff": 0,
//                    "activation": "gelu", "max_positions": 12},
//     "training":   {"task": "reverse", "length": 6, "symbols": 8, "seed": 1, "batch_size": 16, …},
//     "steps": 150,
//     "parameters": {"token_embedding": [[…], …], "layer0.w_q": [[…], …], …},
//     "optimiser":  {"steps": 150, "m": {…}, "v": {…}}                       (optional)
//   }
//
// "optimiser" is AdamW's state: its update count and both moments, each an object of tensors
// with the names and shapes of "parameters". With it (and the "training" settings), loading
// and training on gives, bit for bit, the run that was never saved; without it (files written
// before it existed) the optimiser starts afresh.
//
// Every tensor is an array of rows (a 1 × n vector is one row), with the names and shapes of
// parameter_views for the model's config. Floats are written so that they read back to the
// same bits: a loaded model predicts exactly what the saved one did.
//
// Reading never throws and never guesses: every key of "model" and every tensor the config
// needs must be there, unknown keys are refused, and each problem is a message naming the
// file and the key ("m.json: key 'parameters.layer0.w_q' row 3: expected 32 numbers, found 31").
// "training" may leave keys out (their defaults are used): they say how the model was made,
// not what it computes.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/model.hpp"
#include "train/trainer.hpp"

namespace attn::train {

struct ModelFile {
    Model model;
    TrainSettings settings;
    int steps = 0;  // training steps the weights have had
    std::optional<AdamWState> optimiser;  // AdamW's moments, when the file keeps them
};

struct ModelFileLoad {
    std::optional<ModelFile> file;
    std::vector<std::string> errors;
};

constexpr std::uintmax_t kMaxModelFileBytes = 256u * 1024 * 1024;

nlohmann::json model_to_json(const ModelFile& file);
// What a trainer has done, ready to save: its model, settings, steps and optimiser state.
ModelFile model_file_of(const Trainer& trainer);
// The file's "model" and "training" objects (also written by the command line's training report).
nlohmann::json config_to_json(const ModelConfig& config);
nlohmann::json training_to_json(const TrainSettings& settings);
ModelFileLoad model_from_json(const nlohmann::json& j, const std::string& source_name);
ModelFileLoad model_from_text(const std::string& text, const std::string& source_name);
ModelFileLoad load_model_file(const std::string& path);
// Written atomically. False with *error when a weight is not finite or the write fails.
bool save_model_file(const std::string& path, const ModelFile& file, std::string* error);

// A run's history (trainer.hpp's RunHistory) beside the model file it is the history of, as a
// session keeps it:
//
//   {"steps":       {"step": [1, 2, …], "loss": […], "gradient_norm": […], "learning_rate": […]},
//    "evaluations": {"step": [25, 50, …], "loss": […], "correct": […], "scored": […]},
//    "start":       {"step": 0, "loss": 2.08, "correct": 190, "scored": 1536},
//    "snapshot_interval": 25,
//    "snapshots":   [{"step": 0, "parameters": {…}}, …, {"step": 150}]}
//
// Each curve is one array per field, all of one length; its numbers are written as float32
// (what the plot draws) in the fewest digits that read back to the same float. An accuracy is
// correct / scored, as the evaluation computed it. Snapshots hold "parameters" in the model
// file's layout; one at the model's own step whose weights are the model's is written without
// them. A long run is thinned to fit the bounds below, as the trainer thins its snapshots: every
// other point (the first and the newest stay), and the snapshot interval doubled.
constexpr int kMaxHistoryPoints = 20000;      // steps, and evaluations
constexpr int kMaxHistorySnapshots = 32;
constexpr long long kMaxSnapshotNumbers = 1 << 21;  // every snapshot's parameters together
nlohmann::json history_to_json(const RunHistory& history, const ModelFile& file);
// Read against the model file it belongs to: every key required and none unknown, steps whole,
// ascending and at most the file's steps, curves of one length, numbers finite, snapshots in
// the model's layout, the bounds above kept. Nullopt with messages naming the source and the
// key ("s.json: key 'trained.history.steps.loss': expected 150 numbers (as many as
// 'trained.history.steps.step'), found 149").
std::optional<RunHistory> history_from_json(const nlohmann::json& j, const ModelFile& file, const std::string& source_name,
                                            const std::string& key, std::vector<std::string>& errors);

}  // namespace attn::train
