#pragma once
// A saved session: the scenario (with every toggle applied to it) and the view choices,
// as {"format": "attnlab-session", "version": 2, "scenario": {...}, "view": {...}}, and,
// when the window had them, the models beside the scenario. "view": {"shown_head", "all_heads",
// "presenter", "pane", "lesson", "step", "pipeline_step", "focus_step"}: the head and tab shown,
// the lesson step, the pipeline's step at the view's top-left ("softmax", as its strip names
// it) and the step drawn large with its numbers (absent: the weights).
//
//   "model":   {"folder": "…/gpt2", "files": [{"name": "model.safetensors", "bytes": 548105171,
//              "modified_ns": 1764342131000000000}, …], "sentence": "…", "layer": 5, "head": 2,
//              "ablated": [[5, 1], …], "ablated_experts": [[2, 7], …],
//              "layer_edits": {"cells": {…}, "settings": {…}}}
//              a checkpoint folder the model view had open (GPT-2, Llama, Qwen, Gemma, GPT-NeoX,
//              BERT; not copied: opened again from the folder, and known again by its files'
//              sizes and modification times; "layer" and "head" count from 1, 0 when none was
//              opened), the heads ablated, [layer, head] from 1, and the experts of a mixture
//              ablated, [layer, expert] from 1 (written only when there are). With a layer opened in the
//              pipeline, the session's scenario is that layer: the file has no "scenario" but
//              "layer_edits", what the user changed in it (scenario_edits.hpp: the cells of
//              the weights and of X edited, the settings toggled), and the layer is made again
//              from the model when it is open. So the file stays small (kilobytes) whatever
//              the model's size, and holds none of its weights.
//   "trained": {"model": {model file}, "probe": {"tokens": [ids], "source": [ids]},
//              "layer": 1, "opened": {model file}, "history": {run history}}
//              the Train panel's model (train/model_file.hpp: weights, settings, optimiser),
//              its probe as edited, the trained layer opened in the pipeline (from 1, 0
//              when none) with the weights it was opened with (a timeline step, an ablation),
//              and the run's history (train/model_file.hpp's history_to_json: the curves the
//              panel plots and the snapshots its timeline replays; none in older files)
// Version 1 (every scenario written whole, a model's layer with its weights) is still read.
// Pure logic: no window, no GL; the GUI reads and writes it, the tests check it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/language_model.hpp"
#include "attention/scenario.hpp"
#include "train/model_file.hpp"

namespace attn::session_file {

// What the window showed, beside the scenario.
struct ViewChoices {
    int shown_head = 0;
    bool all_heads = false;
    bool presenter = false;
    std::string lesson;   // lesson file name (e.g. "03-masks.json"), empty in free mode
    int step = 0;         // the lesson step shown
    std::string pane = "pipeline";  // the main area's tab: "pipeline", "model" or "train"
    // The pipeline's step at the view's top-left, as its strip names it ("softmax"): the
    // session reopens scrolled there. Empty: at the pipeline's start.
    std::string pipeline_step;
    // The step drawn large with its numbers, chosen in the strip ("Q K V"). Empty: the weights.
    std::string focus_step;
};

// One file of a model's folder as it was when the model was opened: the model is known again
// by these (a file replaced, rewritten or touched changes its time; one gone or new is seen).
struct FileStamp {
    std::string name;          // in the folder: "model.safetensors"
    std::uintmax_t bytes = 0;
    std::int64_t modified_ns = 0;  // modification time, nanoseconds since 1970-01-01 UTC
    bool operator==(const FileStamp& o) const { return name == o.name && bytes == o.bytes && modified_ns == o.modified_ns; }
};
// The files of `folder` a model is read from (*.json, *.safetensors, *.txt; a symbolic link,
// as the Hugging Face cache's snapshots hold, by the file it names), sorted by name.
std::vector<FileStamp> model_files(const std::string& folder);
// What differs between the files as saved and as they are now, in words ("model.safetensors:
// 548105171 bytes, modified 2026-11-28 15:02:11; it was 548105171 bytes, modified 2026-11-20
// 09:12:45"; "vocab.json is gone"); empty when they agree.
std::string files_changed(const std::vector<FileStamp>& saved, const std::vector<FileStamp>& now);

struct ModelChoice {
    std::string folder;
    std::string sentence;
    int layer = -1, head = 0;  // from 0; layer −1: none opened in the pipeline
    std::vector<std::pair<int, int>> ablated;  // (layer, head) from 0
    std::string source;   // the session file it was read from: what a notice about it names
    std::vector<FileStamp> files;  // the folder's files when the model was opened (none in a version-1 file)
    // The layer opened in the pipeline, kept by reference. Saving: the layer as the model made it
    // (the session's scenario is it, edited; when the scenario is another, it is written whole).
    // Read: the edits that make the session's scenario from the layer again (scenario_edits.hpp).
    std::optional<Scenario> layer_base;
    std::optional<nlohmann::json> layer_edits;
    // The text's token ids, when the model wrote tokens after the sentence: what the pass read,
    // which the tokenizer need not make of the text again (a written token can be a piece of a
    // character, or split where the tokenizer would not); checked against the model once it is
    // open. Empty: the sentence's own tokens.
    std::vector<int> ids;
    std::vector<std::pair<int, int>> ablated_experts;  // (layer, expert) from 0: a mixture's experts dropped
};

struct TrainedChoice {
    train::ModelFile file;                        // the run's newest weights
    std::vector<int> probe_tokens, probe_source;  // the probe as shown (ids)
    int layer = -1;                               // opened in the pipeline (from 0), −1 none
    std::optional<train::ModelFile> opened;       // the weights that layer was opened with
    std::optional<train::RunHistory> history;     // the curves and the timeline's snapshots
};

// What the session keeps beside the scenario and the view.
struct Attachments {
    std::optional<ModelChoice> model;
    std::optional<TrainedChoice> trained;
};

struct SessionLoad {
    std::optional<Scenario> scenario;
    // The file keeps its scenario by reference: it is attached.model's layer with its
    // layer_edits, made once the model is open (reopen_layer). `scenario` is then empty, and the
    // session is read all the same (errors empty).
    bool scenario_in_model = false;
    ViewChoices view;
    Attachments attached;
    std::vector<std::string> errors;    // "FILE: key 'view.step': expected an integer": nothing is loaded
    std::vector<std::string> warnings;  // an attachment that cannot be read: the rest loads without it
};

nlohmann::json session_to_json(const Scenario& scenario, const ViewChoices& view, const Attachments& attached = {});
SessionLoad session_from_json(const nlohmann::json& j, const std::string& source_name);
SessionLoad session_from_text(const std::string& text, const std::string& source_name);

// The file's text: a row of each matrix on a line of its own.
std::string session_text(const Scenario& scenario, const ViewChoices& view, const Attachments& attached = {});
// Written with write_file_atomic; false with *error set when it cannot be written.
bool save_session(const std::string& path, const Scenario& scenario, const ViewChoices& view, std::string* error,
                  const Attachments& attached = {});
SessionLoad load_session(const std::string& path);
// A session file, or a scenario file (no "format": "attnlab-session"), with the default view.
SessionLoad load_session_or_scenario(const std::string& path);

// What of a session's model choice fits the checkpoint it names, once that is open: the
// heads and experts to ablate, the layer to open (−1: none) and its head, and a notice for every piece
// left out ("FILE: key 'model.head': 99, but the model's heads are 1 to 4: not used").
// `pass` is the sentence's pass without ablations; `scenario` the session's, which must be
// that layer to be opened as it.
struct ModelRestore {
    stack::Ablation ablated;
    int layer = -1, head = 0;
    std::vector<std::string> notices;
};
ModelRestore check_model_choice(const ModelChoice& choice, const lm::Model& model, const std::string& sentence, const ModelPass& pass,
                                const Scenario& scenario);
// The session's scenario kept by reference (choice.layer_edits): layer choice.layer of `model`
// for the sentence's `pass` (its heads ablated), each weight in a holder of its own
// (own_weight_holders), then the edits applied. A layer the model does not have, a sentence
// that did not run, or edits that do not fit it are notices naming the file and the key, and
// no scenario: the model opens, the layer does not.
struct LayerReopen {
    std::optional<Scenario> base;      // the layer as the model makes it
    std::optional<Scenario> scenario;  // with the session's edits
    std::vector<std::string> notices;
};
LayerReopen reopen_layer(const ModelChoice& choice, const lm::Model& model, const ModelPass& pass);
// Layer ℓ of `model` for `pass`, as the pipeline shows it (its weights in holders of its own).
Scenario model_layer(const lm::Model& model, const ModelPass& pass, int layer);

// Why `scenario` is not a layer of `checkpoint` on a sentence of n_tokens tokens ("" when it
// can be): its input mode, d_model, heads, tokens and X.
std::string layer_mismatch(const lm::Shape& shape, int n_tokens, const Scenario& scenario);

}  // namespace attn::session_file
