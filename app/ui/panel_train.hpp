#pragma once
// View → Train: a small transformer trained in the app (core/train), its heads watched as
// they learn. The run is a job of the compute layer (train_job.hpp): the panel asks it for
// steps and copies its newest progress, never waiting for a step. The panel runs the probe
// (a few tokens, microseconds) and the held-out set with heads ablated (milliseconds, only
// when the ablation or the timeline moves) itself.
#include <optional>
#include <string>

#include "session_file.hpp"
#include "ui/menus.hpp"
#include "ui/train_state.hpp"
#include "ui/view.hpp"

namespace attn::ui {

struct Context;
class HeatmapTextures;

// The Train tab's content; poll_train takes the worker's newest progress, once a frame before
// anything draws (the tab shown or not: a session saved then holds the run as it is).
void draw_train(MapContext state, TrainPanelState& panel, HeatmapTextures& textures);
void offer_train(MapContext state, TrainPanelState& panel, Offers& offers);  // View → Train
void poll_train(TrainPanelState& panel);
// "Open layer ℓ in the pipeline", asked while the panel drew: carried out after it.
void after_train_drawn(PanelContext state, TrainPanelState& panel);
// Before drawing: an edit of the opened trained layer recomputes the layers after it and the
// probe's predictions (nothing when no trained layer is open).
void update_trained_layer(EditContext state, TrainPanelState& panel);
// In place of the token bar while a trained layer is in the pipeline: the model, the probe
// (its content tokens editable), the truth and the predictions.
void draw_trained_probe(EditContext state, TrainPanelState& panel);
bool trained_layer_open(const TrainPanelState& panel);
// What X of the trained layer in the pipeline is, for its cells' tooltips; empty: none open.
std::string trained_layer_input(const TrainPanelState& panel);
// Layer `layer` (from 0) of the weights shown (the timeline's step, the ablation) on the probe
// becomes the session's scenario, head `head` shown (−1: the head last looked at in the
// panel, else the one whose weights are most concentrated — the head that learned a
// pattern); what Open layer … in the pipeline does.
void open_trained_layer(PanelContext state, TrainPanelState& panel, int layer, int head = -1);
// The run for a session file (nothing before the first Start, Step or Reset), and the run
// from one: paused at its step, its probe, and the layer `scenario_name` opened reattached.
std::optional<session_file::TrainedChoice> trained_choice(const TrainPanelState& panel);
void restore_trained(PanelContext state, TrainPanelState& panel, const session_file::TrainedChoice& choice, const std::string& scenario_name);
// A run from the form's settings, `steps` steps made before this returns (paused after):
// screenshots and tests.
void train_now(TrainPanelState& panel, int steps);
// A run from the form's settings trained as Train does, returning when it stops by itself (the
// target accuracy, or the steps): screenshots.
void train_until_stopped(TrainPanelState& panel);
// The path prompt's Save model / Load model: each a job (the file written, or read and its
// run made ready), landed by land_model_files in a later frame.
void save_trained_model(PanelContext state, TrainPanelState& panel, const std::string& path);
void load_trained_model(PanelContext state, TrainPanelState& panel, const std::string& path);
void land_model_files(PanelContext state, TrainPanelState& panel);

// The Train panel as the window holds it: View → Train, the run's progress and a trained
// layer's edits before each frame, and its part of a session.
class TrainView final : public View {
public:
    TrainPanelState state;
    void start(MapContext shared, const cli::Options& options, const TestHooks& hooks) override;  // the test hooks' runs
    void offer(MapContext shared, Offers& offers) override { offer_train(shared, state, offers); }
    void update(MapContext shared, HeatmapTextures&) override {
        land_model_files(shared, state);      // Save model… or Load model…, done
        update_trained_layer(shared, state);  // an edit of the opened trained layer: the layers after it
        poll_train(state);                    // the worker's newest progress, the Train tab shown or not
    }
    void draw_floating(MapContext shared, HeatmapTextures&) override { after_train_drawn(shared, state); }
    bool busy() const override {
        return (state.open && state.progress.running) || state.evaluating.running() || state.roles_job.running() ||
               state.reading_model.running() || state.writing_model.running();
    }
    // The evaluations and the heads' roles land in the next frame: what it draws (the roles'
    // curves above the probe) does not move under a pointer between two frames.
    void finish_work() override {
        state.evaluating.wait();
        state.roles_job.wait();
        state.reading_model.wait();
        state.writing_model.wait();
    }
    void keep(session_file::ViewChoices&, session_file::Attachments& attached) const override { attached.trained = trained_choice(state); }
    void sign(std::string& signature) const override;
    void show(MapContext, const session_file::ViewChoices& view) override {
        if (view.pane == "train") state.open = true;  // its tab is there to be shown
    }
    void reopen(MapContext shared, const session_file::SessionLoad& load, const std::string& scenario_name) override {
        if (load.attached.trained) restore_trained(shared, state, *load.attached.trained, scenario_name);
    }
};

}  // namespace attn::ui
