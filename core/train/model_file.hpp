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

}  // namespace attn::train
