#pragma once
// View → Train: a small transformer trained in the app (core/train), its heads watched as
// they learn.
//
//   UI thread                         worker thread (TrainWorker)
//   Train / Pause / Step / Reset ──▶  commands under the mutex
//                                     Trainer::step() (outside the mutex: only the worker
//                                     touches the trainer), then every 30 ms it publishes
//   TrainProgress (copies) ◀────────  the stats, evaluations, snapshots and the model file
//
// The UI never waits for a step: it copies the newest TrainProgress when there is one, and
// runs the probe (a few tokens, microseconds) and the held-out set with a head ablated
// (milliseconds, only when the ablation or the timeline moves) itself. Pausing is not
// stepping, so a paused and resumed run is the uninterrupted run, bit for bit.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "session_file.hpp"
#include "train/model_file.hpp"
#include "train/trainer.hpp"

namespace attn::ui {

struct AppState;
struct Context;
class HeatmapTextures;

// What the worker hands the UI: copies and shared immutable snapshots, never a reference
// into the trainer.
struct TrainProgress {
    std::uint64_t generation = 0;  // bumped at every publish
    bool running = false;
    int steps_done = 0;
    std::vector<train::StepStats> history;
    std::vector<train::Evaluation> evaluations;
    std::vector<std::shared_ptr<const train::Snapshot>> snapshots;  // the timeline, oldest first
    std::shared_ptr<const train::ModelFile> latest;                 // weights, settings, optimiser now
    std::string error;                                              // the run stopped (a loss not finite)
    std::string stopped;  // the run stopped where it was asked to: the target accuracy, or the steps done
};

// Where a run set running stops by itself: after `steps` more steps (0: never), or at the
// first evaluation whose held-out accuracy reaches `accuracy` (0: never; a run already there
// when it starts goes on to its steps).
struct StopAt {
    int steps = 0;
    double accuracy = 0.0;
};

class TrainWorker {
public:
    TrainWorker();
    ~TrainWorker();  // stops and joins the thread
    TrainWorker(const TrainWorker&) = delete;
    TrainWorker& operator=(const TrainWorker&) = delete;

    // Replaces the run with this trainer, paused; it publishes at once.
    void replace(train::Trainer trainer);
    void set_running(bool running, StopAt stop = {});
    void step_once();  // one step, when paused
    // The newest progress if it is newer than `seen` (copied into `into`), else false.
    bool poll(std::uint64_t seen, TrainProgress& into) const;
    // Blocks until the worker has nothing left to do (no step asked for, not running); for tests.
    void wait_idle() const;

private:
    void loop();
    void publish_locked();

    mutable std::mutex mutex_;
    mutable std::condition_variable wake_, idle_;
    std::optional<train::Trainer> pending_;  // handed over by replace(), taken by the worker
    std::optional<train::Trainer> trainer_;  // the worker's alone
    bool running_ = false, quit_ = false, stepping_ = false;
    int steps_requested_ = 0;
    StopAt stop_;
    int stop_step_ = -1;  // stop_ as the step it ends at, fixed when the first step of the run is taken (−1: not yet)
    std::chrono::steady_clock::time_point last_publish_;
    TrainProgress progress_;
    std::map<int, std::shared_ptr<const train::Snapshot>> snapshot_cache_;  // by step
    std::thread thread_;
};

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

// What the panel's buttons ask of the rest of the window (the session, the file prompt): set
// while it draws, carried out by carry_out_train_request after the frame's views.
struct TrainRequest {
    enum Kind { None, OpenLayer, SaveModel, LoadModel } kind = None;
    int layer = -1;  // OpenLayer: from 0
};

// What the Train panel keeps between frames.
struct TrainPanelState {
    bool open = false;
    // The form: what Train / Reset build.
    int task = 1;  // index into train::all_tasks(): reverse
    int layers = 1, heads = 2, d_model = 32;
    int positional = 2;  // index into the encodings: learned
    int mask = 1;        // none, causal, window: causal
    float learning_rate = 1e-2f;
    int seed = 1;
    std::vector<std::string> errors;  // the form's settings cannot train
    std::string model_path = "model.json";  // what Save model… and Load model… offer

    std::unique_ptr<TrainWorker> worker;  // made by the first Start, Step or Reset
    TrainProgress progress;               // the last copy from the worker
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
    std::set<std::pair<int, int>> ablated_heads;
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
    std::string ablation_key;  // what `ablated` and `intact` were computed for
    train::Evaluation ablated, intact;
    std::vector<std::pair<int, float>> loss_curve, accuracy_curve;  // (step, value), rebuilt per publish

    TrainedLayerState opened;  // a layer opened in the pipeline
    TrainRequest request;      // this frame's, until carried out
};

// The Train tab's content; poll_train takes the worker's newest progress, once a frame before
// anything draws (the tab shown or not: a session saved then holds the run as it is).
void draw_train(Context& state, TrainPanelState& panel, HeatmapTextures& textures);
void poll_train(TrainPanelState& panel);
void carry_out_train_request(AppState& state);
// Before drawing: an edit of the opened trained layer recomputes the layers after it and the
// probe's predictions (nothing when no trained layer is open).
void update_trained_layer(Context& state, TrainPanelState& panel);
// In place of the token bar while a trained layer is in the pipeline: the model, the probe
// (its content tokens editable), the truth and the predictions.
void draw_trained_probe(Context& state, TrainPanelState& panel);
bool trained_layer_open(const TrainPanelState& panel);
// Layer `layer` (from 0) of the weights shown (the timeline's step, the ablation) on the probe
// becomes the session's scenario, head `head` shown (−1: the head last looked at in the
// panel, else the one whose weights are most concentrated — the head that learned a
// pattern); what Open layer … in the pipeline does.
void open_trained_layer(AppState& state, int layer, int head = -1);
// The run for a session file (nothing before the first Start, Step or Reset), and the run
// from one: paused at its step, its probe, and the layer `scenario_name` opened reattached.
std::optional<session_file::TrainedChoice> trained_choice(const TrainPanelState& panel);
void restore_trained(Context& state, TrainPanelState& panel, const session_file::TrainedChoice& choice, const std::string& scenario_name);
// A run from the form's settings, `steps` steps made before this returns (paused after):
// screenshots and tests.
void train_now(TrainPanelState& panel, int steps);
// The path prompt's Save model / Load model (panel_menu.cpp calls these).
void save_trained_model(Context& state, TrainPanelState& panel, const std::string& path);
void load_trained_model(Context& state, TrainPanelState& panel, const std::string& path);

}  // namespace attn::ui
