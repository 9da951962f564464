#pragma once
// What the Train panel keeps between frames (panel_train.hpp draws it): the form, the run's
// progress as the training job (train_job.hpp) hands it over, what is shown, and a trained
// layer opened in the pipeline.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <map>

#include "interpret/head_roles.hpp"
#include "job.hpp"
#include "attention/scenario.hpp"
#include "train/model.hpp"
#include "train/trainer.hpp"
#include "train_job.hpp"

namespace attn::ui {

// A trained layer opened in the pipeline (Open layer … in the pipeline): the session's
// scenario is layer `layer` of `model` on `probe`. An edit of it there runs that layer as
// edited and the layers after it (train::recompute_from); a probe token changed in the bar
// above the pipeline gives the layer its new input, keeping the edits of its weights. The
// probe follows the scenario's tokens, so undo brings both back together.
struct TrainedLayerState {
    int layer = -1;            // -1: none open
    std::string name;          // the scenario's name: another scenario opened detaches
    int step = 0;              // the weights' training step
    train::Model model;        // the weights it was opened with (timeline step, ablation)
    train::TrainSettings settings;
    train::Example probe;      // the input; its truth when `truth` (a task example)
    bool truth = true;
    train::ForwardPass pass;   // every layer on the probe, layer `layer` as edited
    std::vector<int> predicted;
    Scenario applied;          // what layer `layer` of `pass` was computed from
    std::uint64_t seen_revision = ~0ull;
};

// What the Train panel keeps between frames.
struct TrainPanelState {
    bool open = false;
    // The form: the settings Reset trains with (its widgets edit the task, the model's shape,
    // the encoding, the mask, the rate and the seed; a loaded model's settings come whole).
    train::TrainSettings form;
    std::vector<std::string> errors;  // the form's settings cannot train
    std::string model_path = "model.json";  // what Save model… and Load model… offer

    std::unique_ptr<compute::TrainWorker> worker;  // made by the first Start, Step or Reset
    compute::TrainProgress progress;               // the last copy from the worker
    std::uint64_t seen = 0;
    train::TrainSettings settings;        // of the run under way
    train::Example probe;                 // its probe (tokens edited in the panel) and held-out set
    train::Example run_probe;             // the probe the run was made with (copied once per run)
    std::vector<train::Example> held_out;
    train::Evaluation start_evaluation;   // the held-out set before the run's first step

    // The timeline: a snapshot index, or follow the newest weights.
    bool follow = true;
    int timeline = 0;
    // Ablation: the heads whose W_O rows are zeroed, as (layer, head) from 0; any set of them.
    train::HeadSet ablated_heads;
    // Train stops by itself at this held-out accuracy (percent) or after this many more steps.
    float stop_accuracy = 99.0f;
    int stop_after = 2000;
    // Per layer, the head the pointer was last over: Open layer … in the pipeline shows it.
    std::vector<int> looked_at;

    // What is drawn: the probe through the weights the timeline and the ablation choose.
    std::string shown_key;  // generation, timeline step and ablation it was computed for
    int shown_step = 0;
    train::Model shown_model;
    train::ForwardPass shown;
    std::vector<int> shown_predicted;
    std::string ablation_key;  // what `ablated` and `intact` were computed for (a shown_key)
    train::Evaluation ablated, intact;
    // Save model… and Load model…: the file written, or read and its run made ready to train
    // on, off the window's thread; each lands in a later frame (land_model_files).
    struct ModelFileRead {
        std::string path;
        std::optional<train::ModelFile> file;
        std::optional<train::Trainer> trainer;
        std::vector<std::string> errors;  // reading it, or (with `file`) training on it
    };
    struct ModelFileWritten {
        std::string path;
        int steps = 0;
        std::string error;
    };
    compute::Job<ModelFileRead> reading_model;
    compute::Job<ModelFileWritten> writing_model;
    // The two evaluations under way off the window's thread, and the shown_key they are for.
    compute::Job<std::pair<train::Evaluation, train::Evaluation>> evaluating;
    std::string evaluating_key;
    bool hold_evaluations = false;  // tests: a result is not taken while set, to see the frames before it lands
    std::vector<std::pair<int, float>> loss_curve, accuracy_curve;  // (step, value), rebuilt per publish

    // What each head does over the run (core/interpret): every head's role scores on the task's
    // probe of repeated letters, at each snapshot and the newest weights, scored as a job when
    // the worker publishes; the curves of the best previous-token score in layer 1 and the best
    // induction score after it, and each card's badge at the step shown.
    using RolesByStep = std::map<int, std::vector<interpret::HeadRoles>>;
    RolesByStep roles_by_step;
    compute::Job<RolesByStep> roles_job;
    std::uint64_t roles_generation = ~0ull;  // the progress generation the last job started from
    std::vector<std::pair<int, float>> previous_token_curve, induction_curve;

    // Writing (core/generate): the weights shown (the timeline's step, the heads ablated) write
    // after a prompt of the task's tokens; what they wrote, step by step.
    struct Writing {
        std::string prompt;        // the task's tokens separated by spaces; empty: the probe's up to its separator
        bool greedy = true;
        float temperature = 1.0f;
        int seed = 1;
        std::vector<std::string> lines;  // what writing computed (generate::write_after)
        std::string key;           // the shown weights and settings the lines are for
    } writing;

    TrainedLayerState opened;  // a layer opened in the pipeline
    std::optional<int> open_layer_asked;  // "Open layer ℓ in the pipeline" (from 0), once the panel has drawn
};

}  // namespace attn::ui
