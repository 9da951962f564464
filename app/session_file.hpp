#pragma once
// A saved session: the scenario (with every toggle applied to it) and the view choices,
// as {"format": "attnlab-session", "version": 1, "scenario": {...}, "view": {...}}, and,
// when the window had them, the models beside the scenario:
//
//   "model":   {"folder": "…/gpt2", "sentence": "…", "layer": 5, "head": 2, "ablated": [[5, 1], …]}
//              a checkpoint folder the model view had open (GPT-2, Llama, Qwen, Gemma, GPT-NeoX,
//              BERT; not copied: opened again from the folder; "layer" and "head" count
//              from 1, 0 when none was opened) and the heads ablated, [layer, head] from 1
//   "trained": {"model": {model file}, "probe": {"tokens": [ids], "source": [ids]},
//              "layer": 1, "opened": {model file}}
//              the Train panel's model (train/model_file.hpp: weights, settings, optimiser),
//              its probe as edited, and the trained layer opened in the pipeline (from 1, 0
//              when none) with the weights it was opened with (a timeline step, an ablation)
// Pure logic: no window, no GL; the GUI reads and writes it, the tests check it.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "language_model.hpp"
#include "scenario.hpp"
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
};

struct ModelChoice {
    std::string folder;
    std::string sentence;
    int layer = -1, head = 0;  // from 0; layer −1: none opened in the pipeline
    std::vector<std::pair<int, int>> ablated;  // (layer, head) from 0
    std::string source;   // the session file it was read from: what a notice about it names
};

struct TrainedChoice {
    train::ModelFile file;                        // the run's newest weights
    std::vector<int> probe_tokens, probe_source;  // the probe as shown (ids)
    int layer = -1;                               // opened in the pipeline (from 0), −1 none
    std::optional<train::ModelFile> opened;       // the weights that layer was opened with
};

// What the session keeps beside the scenario and the view.
struct Attachments {
    std::optional<ModelChoice> model;
    std::optional<TrainedChoice> trained;
};

struct SessionLoad {
    std::optional<Scenario> scenario;
    ViewChoices view;
    Attachments attached;
    std::vector<std::string> errors;    // "FILE: key 'view.step': expected an integer": nothing is loaded
    std::vector<std::string> warnings;  // an attachment that cannot be read: the rest loads without it
};

nlohmann::json session_to_json(const Scenario& scenario, const ViewChoices& view, const Attachments& attached = {});
SessionLoad session_from_json(const nlohmann::json& j, const std::string& source_name);
SessionLoad session_from_text(const std::string& text, const std::string& source_name);

// Written with write_file_atomic; false with *error set when it cannot be written.
bool save_session(const std::string& path, const Scenario& scenario, const ViewChoices& view, std::string* error,
                  const Attachments& attached = {});
SessionLoad load_session(const std::string& path);
// A session file, or a scenario file (no "format": "attnlab-session"), with the default view.
SessionLoad load_session_or_scenario(const std::string& path);

// What of a session's model choice fits the checkpoint it names, once that is open: the
// heads to ablate, the layer to open (−1: none) and its head, and a notice for every piece
// left out ("FILE: key 'model.head': 99, but the model's heads are 1 to 4: not used").
// `pass` is the sentence's pass without ablations; `scenario` the session's, which must be
// that layer to be opened as it.
struct ModelRestore {
    stack::HeadSet ablated;
    int layer = -1, head = 0;
    std::vector<std::string> notices;
};
ModelRestore check_model_choice(const ModelChoice& choice, const lm::Model& model, const std::string& sentence, const ModelPass& pass,
                                const Scenario& scenario);
// Why `scenario` is not a layer of `checkpoint` on a sentence of n_tokens tokens ("" when it
// can be): its input mode, d_model, heads, tokens and X.
std::string layer_mismatch(const lm::Shape& shape, int n_tokens, const Scenario& scenario);

}  // namespace attn::session_file
