// View → Train (panel_train.hpp): the form, Train / Pause / Step / Reset, the curves, the
// timeline, every head's weights on the probe, the probe's predictions, ablation, Open in
// pipeline, Save and Load.
//
// Index
// [SECTION] The form and the run
// [SECTION] What is shown: the timeline's weights, the ablation
// [SECTION] Drawing
// [SECTION] The trained layer in the pipeline
// [SECTION] Files
#include "ui/panel_train.hpp"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cfloat>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include <imgui.h>

#include "generate/model_writers.hpp"

#include "interpret/model_roles.hpp"
#include "tensor/reflect.hpp"
#include "attention/registry.hpp"
#include "ui/cards.hpp"
#include "ui/classroom.hpp"
#include "ui/heatmap.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

// [SECTION] The form and the run

namespace {

const PositionalEncoding kEncodings[] = {PositionalEncoding::None, PositionalEncoding::Sinusoidal, PositionalEncoding::Learned,
                                         PositionalEncoding::Rotary, PositionalEncoding::ALiBi};
const char* const kEncodingNames[] = {"none", "sinusoidal", "learned", "RoPE", "ALiBi"};
const MaskKind kMasks[] = {MaskKind::None, MaskKind::Causal, MaskKind::SlidingWindow};

// A combo over the values the form offers, editing the enum itself. A value it does not offer
// (from a loaded model) is shown by its own name until another is chosen.
template <typename E, std::size_t N>
void enum_combo(const char* id, E& value, const E (&values)[N], const char* const (&names)[N]) {
    const E* found = std::find(std::begin(values), std::end(values), value);
    const char* preview = found != std::end(values) ? names[found - values] : to_string(value);
    if (!ImGui::BeginCombo(id, preview)) return;
    for (std::size_t i = 0; i < N; ++i)
        if (ImGui::Selectable(names[i], values[i] == value)) value = values[i];
    ImGui::EndCombo();
}

// Hands a new trainer to the worker; the probe and the held-out set are copied once here.
void begin_run(TrainPanelState& p, train::Trainer trainer) {
    if (!p.worker) p.worker = std::make_unique<compute::TrainWorker>();
    p.settings = trainer.settings();
    p.probe = p.run_probe = trainer.probe();
    p.held_out = trainer.held_out();
    // The accuracy before this run's first step: where the curve starts (the trainer
    // evaluates every 25 steps from there).
    p.start_evaluation = trainer.evaluate();
    p.follow = true;
    p.ablated_heads.clear();
    p.looked_at.clear();
    p.shown_key.clear();
    p.ablation_key.clear();
    p.roles_job.cancel();  // the roles of the run it replaces
    p.roles_by_step.clear();
    p.roles_generation = ~0ull;
    p.previous_token_curve.clear();
    p.induction_curve.clear();
    p.worker->replace(std::move(trainer));
}

// A fresh run from the form; false (with the reasons in p.errors) when it cannot train.
bool reset_run(TrainPanelState& p) {
    std::optional<train::Trainer> trainer = train::Trainer::create(p.form, p.errors);
    if (!trainer) return false;
    begin_run(p, std::move(*trainer));
    return true;
}

bool has_run(const TrainPanelState& p) { return p.worker != nullptr && p.progress.latest != nullptr; }

// [SECTION] What is shown: the timeline's weights, the ablation

// "0.1/0.2": the ablated heads, for the keys of what was computed with them.
std::string ablation_key(const train::HeadSet& heads) {
    std::string key;
    for (const auto& [layer, head] : heads) key += std::to_string(layer) + "." + std::to_string(head) + "/";
    return key;
}

// "head 1 of layer 1", "heads 1 and 2 of layer 1, head 3 of layer 2": as the user counts them.
std::string ablated_text(const train::HeadSet& heads) {
    std::map<int, std::vector<int>> by_layer;
    for (const auto& [layer, head] : heads) by_layer[layer].push_back(head + 1);
    std::string text;
    for (const auto& [layer, list] : by_layer) {
        if (!text.empty()) text += ", ";
        text += list.size() == 1 ? "head " : "heads ";
        for (size_t i = 0; i < list.size(); ++i)
            text += (i == 0 ? "" : i + 1 == list.size() ? " and " : ", ") + std::to_string(list[i]);
        text += " of layer " + std::to_string(layer + 1);
    }
    return text;
}

// The head whose weights are most concentrated (the largest mean of each row's largest
// weight): the one that learned a pattern, where the user has not looked at another.
int most_focused_head(const Trace& layer) {
    int best = 0;
    double best_focus = -1.0;
    for (size_t h = 0; h < layer.head.size(); ++h) {
        const Matrix& w = layer.head[h].weights;
        if (w.rows() == 0) continue;
        const double focus = w.rowwise().maxCoeff().cast<double>().mean();
        if (focus > best_focus) {
            best_focus = focus;
            best = static_cast<int>(h);
        }
    }
    return best;
}

// The newest copy from the worker, and the curves drawn from it.
void poll_progress(TrainPanelState& p) {
    if (!p.worker || !p.worker->poll(p.seen, p.progress)) return;
    p.seen = p.progress.generation;
    p.loss_curve.clear();
    for (const train::StepStats& stats : p.progress.history) p.loss_curve.push_back({stats.step, static_cast<float>(stats.loss)});
    p.accuracy_curve.assign(1, {p.start_evaluation.step, static_cast<float>(p.start_evaluation.accuracy)});
    for (const train::Evaluation& e : p.progress.evaluations) p.accuracy_curve.push_back({e.step, static_cast<float>(e.accuracy)});
}

// The probe through the weights at the timeline's step (with the ablation), recomputed only
// when the worker published, the timeline moved or the ablation changed.
void update_shown(TrainPanelState& p) {
    if (!has_run(p)) return;
    const std::vector<std::shared_ptr<const train::Snapshot>>& snaps = p.progress.snapshots;
    // The timeline's last position is the newest weights; the ones before are the snapshots.
    const int last = static_cast<int>(snaps.size());
    if (p.follow) p.timeline = last;
    p.timeline = std::clamp(p.timeline, 0, last);
    const bool newest = p.timeline == last;
    const int step = newest ? p.progress.latest->steps : snaps[static_cast<size_t>(p.timeline)]->step;
    // Heads that no longer exist (a run with fewer) are dropped before anything is computed.
    for (auto it = p.ablated_heads.begin(); it != p.ablated_heads.end();)
        it = it->layer < p.progress.latest->model.config.layers && it->head < p.progress.latest->model.config.heads
                 ? std::next(it)
                 : p.ablated_heads.erase(it);
    const std::string ablation = ablation_key(p.ablated_heads);
    const std::string key = std::to_string(newest ? p.progress.generation : 0) + "/" + std::to_string(step) + "/" + ablation;
    if (key == p.shown_key) return;
    p.shown_key = key;
    p.shown_step = step;
    p.shown_model = p.progress.latest->model;
    if (!newest) p.shown_model.params = snaps[static_cast<size_t>(p.timeline)]->params;
    p.shown = train::forward(p.shown_model, p.probe.input, p.ablated_heads);
    p.shown_predicted = p.shown.ok ? train::argmax_rows(p.shown.logits) : std::vector<int>{};
}

// The held-out accuracy with and without the ablated heads, at the step shown: both run over
// the held-out set as a job off the window's thread, asked again when what is shown changed and
// landing here; the panel says it is being measured until then.
void update_evaluations(TrainPanelState& p) {
    if (!p.hold_evaluations)
        if (std::optional<std::pair<train::Evaluation, train::Evaluation>> done = p.evaluating.take()) {
            p.intact = done->first;
            p.ablated = done->second;
            p.ablation_key = p.evaluating_key;
        }
    if (!has_run(p) || p.ablated_heads.empty() || p.shown_key == p.ablation_key) return;
    if (p.evaluating.running() && p.evaluating_key == p.shown_key) return;  // under way; one for what was shown before is superseded
    p.evaluating_key = p.shown_key;
    p.evaluating.start("measuring the held-out set with and without the ablated heads",
                       [model = p.shown_model, held_out = p.held_out, step = p.shown_step, heads = p.ablated_heads](compute::JobProgress&) {
                           return std::pair{train::evaluate(model, held_out, step), train::evaluate(model, held_out, step, heads)};
                       });
}

// The heads' roles at each snapshot and the newest weights: the steps not scored yet go to a
// job when the worker has published since the last one; what lands is kept by step, and the
// curves are made from it (a self-attention task only: cross-reverse reads two sequences).
void update_roles(TrainPanelState& p) {
    if (std::optional<TrainPanelState::RolesByStep> scored = p.roles_job.take()) {
        for (auto& [step, heads] : *scored) p.roles_by_step[step] = std::move(heads);
        p.previous_token_curve.clear();
        p.induction_curve.clear();
        for (const auto& [step, heads] : p.roles_by_step) {
            float previous = 0.0f, induction = 0.0f;
            const int last_layer = heads.empty() ? 0 : heads.back().head.layer;
            for (const interpret::HeadRoles& h : heads) {
                if (h.head.layer == 0) previous = std::max(previous, h.scores[interpret::Role::PreviousToken]);
                if (h.head.layer > 0 || last_layer == 0) induction = std::max(induction, h.scores[interpret::Role::Induction]);
            }
            p.previous_token_curve.push_back({step, previous});
            p.induction_curve.push_back({step, induction});
        }
    }
    if (!has_run(p) || p.settings.task.kind == train::TaskKind::CrossReverse || p.roles_job.running() ||
        p.roles_generation == p.progress.generation)
        return;
    p.roles_generation = p.progress.generation;
    std::vector<std::pair<int, std::shared_ptr<const train::ModelParams>>> wanted;
    for (const std::shared_ptr<const train::Snapshot>& snap : p.progress.snapshots)
        if (p.roles_by_step.count(snap->step) == 0) wanted.push_back({snap->step, std::shared_ptr<const train::ModelParams>(snap, &snap->params)});
    const std::shared_ptr<const train::ModelFile> latest = p.progress.latest;
    if (p.roles_by_step.count(latest->steps) == 0) wanted.push_back({latest->steps, std::shared_ptr<const train::ModelParams>(latest, &latest->model.params)});
    if (wanted.empty()) return;
    p.roles_job.start("scoring the heads' roles", [wanted, latest, task = p.settings.task](compute::JobProgress& progress) {
        TrainPanelState::RolesByStep scored;
        train::Model model = latest->model;  // its config and vocabulary; each step's parameters in turn
        for (size_t i = 0; i < wanted.size(); ++i) {
            if (!progress.report(static_cast<int>(i), static_cast<int>(wanted.size()))) break;
            model.params = *wanted[i].second;
            if (std::optional<interpret::RolesRun> run = interpret::run_head_roles(model, task, 0, 1, nullptr))
                scored[wanted[i].first] = std::move(run->heads);
        }
        return scored;
    });
}

// The opened layer's pass on its probe, layer `layer` run as `scenario` (its edits kept).
bool recompute_opened(TrainedLayerState& o, const Scenario& scenario) {
    if (!train::recompute_from(o.model, o.probe.input, o.layer, scenario, o.pass)) return false;
    o.predicted = train::argmax_rows(o.pass.logits);
    o.applied = scenario;
    return true;
}

}  // namespace

void open_trained_layer(PanelContext state, TrainPanelState& p, int layer, int head) {
    poll_progress(p);
    update_shown(p);
    update_evaluations(p);
    update_roles(p);
    if (!p.shown.ok || layer < 0 || layer >= static_cast<int>(p.shown.layers.size())) return;
    // The opened weights keep the ablation: the pipeline shows W_O as the pass used it, and a
    // session keeps the layer as it was seen.
    train::Model opened = p.shown_model;
    const int d_k = opened.config.d_model / opened.config.heads;
    for (int l = 0; l < opened.config.layers; ++l)
        stack::ablate_heads(opened.params.layers[static_cast<size_t>(l)].w_o, d_k, p.ablated_heads, l);
    Scenario scenario = train::trained_layer_scenario(opened, p.probe.input, p.shown, layer);
    scenario.name += ", step " + std::to_string(p.shown_step) + (p.ablated_heads.empty() ? std::string() : ", " + ablated_text(p.ablated_heads) + " ablated");
    const Trace& shown = p.shown.layers[static_cast<size_t>(layer)];
    if (head < 0 || head >= static_cast<int>(shown.head.size()))
        head = layer < static_cast<int>(p.looked_at.size()) && p.looked_at[static_cast<size_t>(layer)] >= 0 ? p.looked_at[static_cast<size_t>(layer)]
                                                                                                            : most_focused_head(shown);
    const bool first = !trained_layer_open(p);  // else the step in view is kept
    TrainedLayerState& o = p.opened;
    o.layer = layer;
    o.name = scenario.name;
    o.step = p.shown_step;
    o.model = std::move(opened);
    o.settings = p.settings;
    o.probe = p.probe;
    o.truth = true;
    o.pass = p.shown;
    o.predicted = p.shown_predicted;
    o.applied = scenario;
    // The layer's every step in the pipeline (the Train tab stays beside it), the first one
    // opened at the weights, where the head's pattern is.
    const std::string name = scenario.name;
    state.requests.push_back(ShowInPipeline{std::move(scenario), head, first, std::nullopt});
    o.seen_revision = ~0ull;
    add_notice(state, "Opened " + name + " in the pipeline: change a probe token above it, or edit any number, and the "
                      "prediction follows (View \xE2\x86\x92 Train returns to the training)", false);
}

namespace {

const ImU32 kGood = IM_COL32(90, 200, 120, 255), kBad = IM_COL32(255, 110, 100, 255);

// The probe as a table: its tokens (the content ones buttons that pick another letter), the
// truth of each scored row and the prediction. Returns the edited probe, if a token changed;
// a change the task cannot make is refused with a notice.
std::optional<train::Example> draw_probe_table(PanelContext state, const char* id, const train::TaskOptions& task,
                                               const train::Example& e, bool truth, const std::vector<std::string>& vocabulary,
                                               const std::vector<int>& predicted, int* correct_out, int* scored_out) {
    const int n = static_cast<int>(e.input.tokens.size());
    const int columns = std::max(n, static_cast<int>(e.input.source.size()));
    std::optional<train::Example> edited;
    if (!ImGui::BeginTable(id, columns + 1, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_NoHostExtendX))
        return edited;
    auto row_label = [](const char* text) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("%s", text);
    };
    // One row of input tokens: a content token is a button; a click offers the task's letters.
    auto token_row = [&](const char* label, const std::vector<int>& ids, bool source) {
        row_label(label);
        for (int i = 0; i < static_cast<int>(ids.size()); ++i) {
            ImGui::TableNextColumn();
            const std::string& name = vocabulary[static_cast<size_t>(ids[static_cast<size_t>(i)])];
            const std::string key = std::string(id) + (source ? ".source." : ".token.") + std::to_string(i + 1);
            if (!train::is_content(task, source, i)) {
                ImGui::TextUnformatted(name.c_str());
                record_item(state, key.c_str(), name);
                if (ImGui::IsItemHovered())
                    ImGui::SetTooltip("Follows from the content (the first %d %s): change those", task.length,
                                      task.kind == train::TaskKind::CrossReverse ? "source tokens" : "tokens");
                continue;
            }
            const std::string popup = key + ".pick";
            if (ImGui::SmallButton((name + "##" + key).c_str())) ImGui::OpenPopup(popup.c_str());
            record_item(state, key.c_str(), name);
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("Token %d: click to put another letter here; the prediction follows", i + 1);
            if (ImGui::BeginPopup(popup.c_str())) {
                for (int t = 0; t < task.symbols; ++t) {
                    const std::string& letter = vocabulary[static_cast<size_t>(t)];
                    if (ImGui::Selectable((letter + "##" + popup).c_str(), t == ids[static_cast<size_t>(i)])) {
                        std::string why;
                        edited = train::edit_content(task, e, source, i, t, &why);
                        if (!edited) add_notice(state, "Cannot put '" + letter + "' at token " + std::to_string(i + 1) + ": " + why, true);
                    }
                    record_item(state, (popup + "." + letter).c_str(), letter);
                }
                ImGui::EndPopup();
            }
        }
    };
    if (!e.input.source.empty()) token_row("source", e.input.source, true);
    token_row("reads", e.input.tokens, false);
    row_label("truth");
    for (int i = 0; i < n; ++i) {
        ImGui::TableNextColumn();
        if (truth && e.scored[static_cast<size_t>(i)]) ImGui::TextUnformatted(vocabulary[static_cast<size_t>(e.targets[static_cast<size_t>(i)])].c_str());
        else ImGui::TextDisabled("\xC2\xB7");  // not scored: the answer is not determined
    }
    row_label("predicted");
    int correct = 0, scored = 0;
    std::string predictions;
    for (int i = 0; i < n; ++i) {
        ImGui::TableNextColumn();
        if (i >= static_cast<int>(predicted.size())) continue;
        const int guess = predicted[static_cast<size_t>(i)];
        const char* name = vocabulary[static_cast<size_t>(guess)].c_str();
        predictions += name;
        if (!truth || !e.scored[static_cast<size_t>(i)]) {
            ImGui::TextDisabled("%s", name);
            continue;
        }
        const bool right = guess == e.targets[static_cast<size_t>(i)];
        scored += 1;
        correct += right;
        ImGui::TextColored(ImColor(right ? kGood : kBad), "%s", name);
    }
    ImGui::EndTable();
    record_item(state, (std::string(id) + ".predicted").c_str(), predictions);
    *correct_out = correct;
    *scored_out = scored;
    return edited;
}

// [SECTION] Drawing


void draw_form(PanelContext state, TrainPanelState& p) {
    const float w = ImGui::GetFontSize() * 6.5f;
    auto label = [](const char* text) {
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(text);
        ImGui::SameLine(0.0f, 4.0f);
    };
    auto next = [] { ImGui::SameLine(0.0f, 16.0f); };
    label("task");
    ImGui::SetNextItemWidth(w * 1.4f);
    train::TrainSettings& form = p.form;
    if (ImGui::BeginCombo("##task", train::to_string(form.task.kind))) {
        for (train::TaskKind kind : train::all_tasks())
            if (ImGui::Selectable(train::to_string(kind), kind == form.task.kind)) {
                form.task.kind = kind;
                // cross-reverse's answer lies in the later source keys: no mask.
                if (kind == train::TaskKind::CrossReverse) form.model.mask = MaskKind::None;
            }
        ImGui::EndCombo();
    }
    next();
    label("layers");
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt("##layers", &form.model.layers, 1, train::kMaxLayers);
    next();
    label("heads");
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt("##heads", &form.model.heads, 1, train::kMaxHeads);
    next();
    label("d_model");
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt("##d_model", &form.model.d_model, train::kMinDModel, train::kMaxDModel);
    label("positions");
    ImGui::SetNextItemWidth(w * 1.4f);
    enum_combo("##positions", form.model.positional, kEncodings, kEncodingNames);
    next();
    label("mask");
    ImGui::SetNextItemWidth(w * 1.6f);
    const std::string window = "sliding window (" + std::to_string(form.model.window) + ")";
    const char* const mask_names[] = {"none", "causal", window.c_str()};
    enum_combo("##mask", form.model.mask, kMasks, mask_names);
    next();
    label("learning rate");
    ImGui::SetNextItemWidth(w);
    ImGui::InputFloat("##lr", &form.learning_rate, 0.0f, 0.0f, "%.4g");
    next();
    label("seed");
    ImGui::SetNextItemWidth(w);
    // The seed is 64-bit; the box edits it as a non-negative int, so a larger one (from a loaded
    // file) is shown as it is, read-only, rather than cut down to an int.
    if (form.seed <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
        int seed = static_cast<int>(form.seed);
        if (ImGui::InputInt("##seed", &seed)) form.seed = static_cast<std::uint64_t>(std::max(0, seed));
    } else {
        ImGui::Text("%llu", static_cast<unsigned long long>(form.seed));
    }

    const bool running = has_run(p) && p.progress.running;
    const float button = ImGui::GetFontSize() * 6.0f;
    if (ImGui::Button(running ? "Pause" : "Train", ImVec2(button, 0))) {
        if (running) {
            p.worker->set_running(false);
        } else if (has_run(p) || reset_run(p)) {
            p.follow = true;
            p.worker->set_running(true, compute::StopAt{std::max(1, p.stop_after), p.stop_accuracy / 100.0});
        }
    }
    record_item(state, "train.start", running ? "Pause" : "Train");
    ImGui::SameLine();
    ImGui::BeginDisabled(running);
    if (ImGui::Button("Step", ImVec2(button, 0)) && (has_run(p) || reset_run(p))) p.worker->step_once();
    record_item(state, "train.step", "Step");
    ImGui::EndDisabled();
    ImGui::SameLine();
    if (ImGui::Button("Reset", ImVec2(button, 0))) reset_run(p);
    record_item(state, "train.reset", "Reset");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("A fresh model with the settings above (the run under way is dropped)");
    ImGui::SameLine(0.0f, 32.0f);
    ImGui::BeginDisabled(!has_run(p));
    if (ImGui::Button("Save model\xE2\x80\xA6")) {
        state.requests.push_back(AskForPath{FileAction::SaveModel, "Save the trained model (JSON)", p.model_path, "",
                                            [&p](EditContext c, const std::string& path) { save_trained_model(c, p, path); }, nullptr, nullptr});
    }
    record_item(state, "train.save", "Save model");
    ImGui::EndDisabled();
    ImGui::SameLine();
    if (ImGui::Button("Load model\xE2\x80\xA6")) {
        state.requests.push_back(AskForPath{FileAction::OpenModel, "Load a trained model (JSON)", p.model_path, "",
                                            [&p](EditContext c, const std::string& path) { load_trained_model(c, p, path); }, nullptr, nullptr});
    }
    record_item(state, "train.load", "Load model");
    // Where Train stops by itself: the user presses it again to go on.
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Train stops at");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.0f);
    ImGui::InputFloat("##stop_accuracy", &p.stop_accuracy, 0.0f, 0.0f, "%.1f");
    p.stop_accuracy = std::clamp(std::isfinite(p.stop_accuracy) ? p.stop_accuracy : 99.0f, 0.0f, 100.0f);
    ImGui::SameLine();
    ImGui::TextUnformatted("% held-out accuracy, or after");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.0f);
    ImGui::InputInt("##stop_after", &p.stop_after, 0, 0);
    p.stop_after = std::clamp(p.stop_after, 1, 1000000);
    ImGui::SameLine();
    ImGui::TextUnformatted("more steps");
    record_item(state, "train.stop_after", std::to_string(p.stop_after));
    if (!p.progress.stopped.empty() && !running) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(150, 220, 150, 255));
        ImGui::TextWrapped("%s", p.progress.stopped.c_str());
        ImGui::PopStyleColor();
        record_item(state, "train.stopped", p.progress.stopped);
    }
    if (has_run(p)) {
        // Train and Step go on with the run under way: a changed form applies only on Reset.
        if (!reflect::equal(train::fitted(p.form), p.settings)) {
            ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 200, 60, 255));
            ImGui::TextWrapped("The settings above differ from the run's (below): Train and Step go on with the run; Reset starts "
                               "one with these settings.");
            ImGui::PopStyleColor();
            record_item(state, "train.form_differs", "differs");
        }
    }
    for (const std::string& e : p.errors) {
        ImGui::PushStyleColor(ImGuiCol_Text, kBad);
        ImGui::TextWrapped("Cannot train: %s", e.c_str());
        ImGui::PopStyleColor();
    }
    if (!p.progress.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, kBad);
        ImGui::TextWrapped("%s", p.progress.error.c_str());
        ImGui::PopStyleColor();
    }
}

// Loss and held-out accuracy against the step.
// A curve over the run's steps, its axes labelled: the steps below on a logarithmic scale
// (the first 200 steps of a 7,000-step run take 60% of the width, where most is learned), the
// value's range at the left.
// One or more series over the steps (log scale across), each in its own colour.
struct StepSeries {
    const std::vector<std::pair<int, float>>* points;
    ImU32 colour;
};

void draw_step_plot(const std::vector<StepSeries>& series, float y_max, const std::string& title, const std::string& y_low,
                    const std::string& y_high, float width, float height) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float line = ImGui::GetTextLineHeight();
    const float left = std::max(ImGui::CalcTextSize(y_low.c_str()).x, ImGui::CalcTextSize(y_high.c_str()).x) + 6.0f;
    const ImVec2 p0(origin.x + left, origin.y), p1(origin.x + width, origin.y + height - line - 2.0f);
    draw->AddRectFilled(p0, p1, ImGui::GetColorU32(ImGuiCol_FrameBg));
    int last = 1;
    for (const StepSeries& one : series)
        if (!one.points->empty()) last = std::max(last, one.points->back().first);
    const auto x_of = [&](int step) {
        return p0.x + (p1.x - p0.x) * static_cast<float>(std::log1p(std::max(0, step)) / std::log1p(last));
    };
    const auto y_of = [&](float v) { return p1.y - (p1.y - p0.y) * std::clamp(y_max > 0.0f ? v / y_max : 0.0f, 0.0f, 1.0f); };
    // One point per pixel column (the last value in it): a long run costs its width, not its steps.
    for (const StepSeries& one : series) {
        std::vector<ImVec2> line_points;
        for (const auto& [step, value] : *one.points) {
            if (!std::isfinite(value)) continue;
            const ImVec2 at(std::floor(x_of(step)), y_of(value));
            if (!line_points.empty() && line_points.back().x == at.x) line_points.back() = at;
            else line_points.push_back(at);
        }
        if (line_points.size() >= 2) draw->AddPolyline(line_points.data(), static_cast<int>(line_points.size()), one.colour, 0, 1.5f);
        else if (line_points.size() == 1) draw->AddCircleFilled(line_points[0], 2.0f, one.colour);
    }
    // Ticks at 0, 1, 10, 100, … and the last step.
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    float free_from = p0.x - 1000.0f;
    const auto tick = [&](int step) {
        const float x = x_of(step);
        const std::string label = std::to_string(step);
        const float w = ImGui::CalcTextSize(label.c_str()).x;
        const float at = std::clamp(x - w * 0.5f, p0.x, p1.x - w);
        draw->AddLine(ImVec2(x, p1.y), ImVec2(x, p1.y + 3.0f), text);
        if (at < free_from) return;
        draw->AddText(ImVec2(at, p1.y + 2.0f), text, label.c_str());
        free_from = at + w + 6.0f;
    };
    tick(0);
    for (int step = 1; step < last; step *= 10)
        if (x_of(step) < x_of(last) - 30.0f) tick(step);
    tick(last);
    draw->AddText(ImVec2(origin.x, p0.y), text, y_high.c_str());
    draw->AddText(ImVec2(origin.x, p1.y - line), text, y_low.c_str());
    draw->AddText(ImVec2(p0.x + 4.0f, p0.y + 2.0f), ImGui::GetColorU32(ImGuiCol_Text), title.c_str());
    ImGui::Dummy(ImVec2(width, height));
}

void draw_curves(PanelContext state, TrainPanelState& p, float width) {
    const float height = ImGui::GetFontSize() * 5.5f;
    const std::vector<train::StepStats>& history = p.progress.history;
    const std::vector<train::Evaluation>& evaluations = p.progress.evaluations;
    float largest_loss = 0.0f;
    for (const auto& point : p.loss_curve)
        if (std::isfinite(point.second)) largest_loss = std::max(largest_loss, point.second);
    char title[96];
    std::snprintf(title, sizeof title, "training loss %.4f", history.empty() ? 0.0 : history.back().loss);
    char high[32];
    std::snprintf(high, sizeof high, "%.2f", largest_loss);
    const ImU32 plain = ImGui::GetColorU32(ImGuiCol_PlotLines);
    draw_step_plot({{&p.loss_curve, plain}}, largest_loss, history.empty() ? "training loss (no step yet)" : title, "0", high, width, height);
    const train::Evaluation& newest = evaluations.empty() ? p.start_evaluation : evaluations.back();
    std::snprintf(title, sizeof title, "held-out accuracy %.1f%% (step %d)", 100.0 * newest.accuracy, newest.step);
    draw_step_plot({{&p.accuracy_curve, plain}}, 1.0f, title, "0%", "100%", width, height);
    // The heads' roles over the same steps: when the previous-token head and the induction head
    // form, beside when the accuracy rises.
    if (!p.previous_token_curve.empty()) {
        const ImU32 previous = pack(category_colour(static_cast<int>(interpret::Role::PreviousToken)));
        const ImU32 induction = pack(category_colour(static_cast<int>(interpret::Role::Induction)));
        const bool one_layer = p.progress.latest->model.config.layers == 1;
        std::snprintf(title, sizeof title, "roles: previous-token %.2f, induction %.2f (step %d)", p.previous_token_curve.back().second,
                      p.induction_curve.back().second, p.previous_token_curve.back().first);
        draw_step_plot({{&p.previous_token_curve, previous}, {&p.induction_curve, induction}}, 1.0f, title, "0", "1", width, height);
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("Above: the heads' roles on a probe of the task's letters repeated, the best previous-token score in "
                           "layer 1 (orange) and the best induction score %s (blue). The cards name each head's role at the step shown.",
                           one_layer ? "in it" : "after it");
        ImGui::PopStyleColor();
        record_item(state, "train.roles", std::to_string(p.previous_token_curve.back().second) + " " + std::to_string(p.induction_curve.back().second));
    }
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("Across: steps %d to %d, on a log scale. Above: the training loss (cross-entropy) of every step; below: the "
                       "held-out accuracy every %d steps.",
                       p.start_evaluation.step, p.progress.steps_done, p.settings.evaluate_every);
    ImGui::PopStyleColor();
    record_item(state, "train.accuracy",
                evaluations.empty() ? std::string("none") : std::to_string(evaluations.back().accuracy));
}

// The probe: its tokens (the content editable), the truth of each scored row and the shown
// weights' prediction.
void draw_probe(PanelContext state, TrainPanelState& p) {
    int correct = 0, scored = 0;
    if (std::optional<train::Example> edited = draw_probe_table(state, "train.probe", p.settings.task, p.probe, true,
                                                                p.shown_model.vocabulary, p.shown_predicted, &correct, &scored)) {
        p.probe = std::move(*edited);
        p.shown_key.clear();  // the probe runs again through the shown weights
    }
    record_item(state, "train.probe", std::to_string(correct) + "/" + std::to_string(scored));
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("The probe at step %d: %d of %d scored predictions right (green right, red wrong, grey not scored). "
                       "Click a token of the first half to change it: the answer half and the truth follow.",
                       p.shown_step, correct, scored);
    ImGui::PopStyleColor();
    if (p.probe.input.tokens != p.run_probe.input.tokens || p.probe.input.source != p.run_probe.input.source) {
        if (ImGui::SmallButton("Restore the probe")) {
            p.probe = p.run_probe;
            p.shown_key.clear();
        }
        record_item(state, "train.probe.restore", "restore");
    }
}

// The weights shown write after a prompt (core/generate): one token at a time against their
// KV caches until the model's positions are full. A toy model writes in well under a
// millisecond, so it is written on the window's thread when the prompt, the settings or the
// weights shown change.
void draw_writing(PanelContext state, TrainPanelState& p) {
    TrainPanelState::Writing& w = p.writing;
    const bool open = ImGui::CollapsingHeader("Write after a prompt", ImGuiTreeNodeFlags_DefaultOpen);
    record_item(state, "train.write", open ? "open" : "closed");
    if (!open) return;
    if (w.prompt.empty()) {  // the probe's first half and its separator
        const std::vector<int>& probe = p.probe.input.tokens;
        for (size_t i = 0; i < probe.size(); ++i) {
            const std::string& name = p.shown_model.vocabulary[static_cast<size_t>(probe[i])];
            w.prompt += (w.prompt.empty() ? "" : " ") + name;
            if (name == "|") break;
        }
    }
    ImGui::SetNextItemWidth(-1.0f);
    input_line("##train.write.prompt", w.prompt);
    record_item(state, "train.write.prompt", w.prompt);
    ImGui::Checkbox("Greedy##train.write", &w.greedy);
    if (!w.greedy) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(110.0f * state.fonts.scale);
        ImGui::SliderFloat("##train.write.temperature", &w.temperature, 0.05f, 5.0f, "temperature %.2f");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(70.0f * state.fonts.scale);
        ImGui::InputInt("seed##train.write", &w.seed, 0, 0);
        w.seed = std::max(0, w.seed);
    }
    generate::SamplerSettings sampler;
    sampler.temperature = w.greedy ? 0.0f : w.temperature;
    sampler.seed = static_cast<std::uint64_t>(w.seed);
    const std::string key = p.shown_key + "/" + w.prompt + "/" + std::to_string(sampler.temperature) + "/" + std::to_string(sampler.seed);
    if (key != w.key) {
        w.key = key;
        std::vector<std::string> names;
        std::istringstream words(w.prompt);
        for (std::string word; words >> word;) names.push_back(word);
        const int room = std::max(0, p.shown_model.config.max_positions + 1 - static_cast<int>(names.size()));
        w.lines = generate::write_after(p.shown_model, names, room, sampler, p.ablated_heads).lines;
    }
    std::string said;
    for (const std::string& line : w.lines) said += (said.empty() ? "" : "\n") + line;
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(said.c_str());
    ImGui::PopTextWrapPos();
    record_item(state, "train.write.lines", said);
}

// Every layer's heads on the probe, one weights card each, with its ablate toggle.
void draw_heads(MapContext state, TrainPanelState& p, HeatmapTextures& textures) {
    if (!p.shown.ok) return;
    const int layers = static_cast<int>(p.shown.layers.size());
    const int heads = p.shown_model.config.heads;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float scale = state.fonts.scale;
    const float gap = 24.0f * scale;
    // One cell size for every card: the largest that fits the heads side by side and the
    // layers one under another.
    std::vector<HeatmapSpec> specs;
    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < heads; ++h) {
            const Trace& t = p.shown.layers[static_cast<size_t>(l)];
            const std::string matrix = "head" + std::to_string(h) + ".weights";
            const std::optional<MatrixRef> ref = parse_matrix_name(matrix);
            HeatmapSpec spec = card_spec(t, *ref, t.head[static_cast<size_t>(h)].weights);
            spec.name = "train.layer" + std::to_string(l) + "." + matrix;
            spec.matrix = matrix;
            spec.trace = &t;
            spec.paints_mask = false;  // the session's mask is not this model's
            spec.editable = false;
            spec.title = "layer " + std::to_string(l + 1) + ", head " + std::to_string(h + 1) + ": weights";
            if (p.ablated_heads.count({l, h}) > 0) spec.title += " (ablated)";
            if (const auto roles = p.roles_by_step.find(p.shown_step); roles != p.roles_by_step.end())
                for (const interpret::HeadRoles& r : roles->second)
                    if (r.head == stack::HeadId{l, h})
                        if (const std::optional<interpret::Role> role = interpret::strongest_role(r.scores, 0.4f)) {
                            char said[64];
                            std::snprintf(said, sizeof said, " \xC2\xB7 %s %.2f", interpret::role_name(*role), r.scores[*role]);
                            spec.title += said;
                        }
            specs.push_back(std::move(spec));
        }
    std::vector<CardText> texts;
    for (const HeatmapSpec& s : specs) texts.push_back(measure_text(s, state.fonts));
    // Under each row of cards: the ablate toggles, the Open button and a gap.
    const float toggle_h = ImGui::GetFrameHeightWithSpacing() + 8.0f * scale;
    std::vector<CardMetrics> metrics(specs.size());
    for (float cell = 40.0f * scale; cell >= 6.0f; cell -= 1.0f) {
        float width = 0, height = 0;
        for (int l = 0; l < layers; ++l) {
            float row_w = 0, row_h = 0;
            for (int h = 0; h < heads; ++h) {
                const size_t i = static_cast<size_t>(l * heads + h);
                metrics[i] = measure_card(specs[i], texts[i], cell, cell, state.fonts);
                row_w += metrics[i].width + gap;
                row_h = std::max(row_h, metrics[i].height);
            }
            width = std::max(width, row_w);
            height += row_h + toggle_h + ImGui::GetFrameHeightWithSpacing() + gap * 0.5f + ImGui::GetStyle().ItemSpacing.y;
        }
        if (width <= avail.x && height <= avail.y) break;
    }
    for (int l = 0; l < layers; ++l) {
        const ImVec2 origin = ImGui::GetCursorScreenPos();
        float x = origin.x, row_h = 0;
        for (int h = 0; h < heads; ++h) {
            const size_t i = static_cast<size_t>(l * heads + h);
            ImGui::SetCursorScreenPos(ImVec2(x, origin.y));
            draw_card(specs[i], metrics[i], state, textures);
            // The head looked at in each layer: the one Open layer … shows.
            if (ImGui::IsMouseHoveringRect(ImVec2(x, origin.y), ImVec2(x + metrics[i].width, origin.y + metrics[i].height))) {
                p.looked_at.resize(static_cast<size_t>(layers), -1);
                p.looked_at[static_cast<size_t>(l)] = h;
            }
            ImGui::SetCursorScreenPos(ImVec2(x, origin.y + metrics[i].height + 4.0f * scale));
            bool ablated = p.ablated_heads.count({l, h}) > 0;
            const std::string id = "ablate head " + std::to_string(h + 1) + "##" + std::to_string(l) + "." + std::to_string(h);
            if (ImGui::Checkbox(id.c_str(), &ablated)) {
                if (ablated) p.ablated_heads.insert({l, h});
                else p.ablated_heads.erase({l, h});
            }
            record_item(state, ("train.ablate." + std::to_string(l + 1) + "." + std::to_string(h + 1)).c_str(), ablated ? "on" : "off");
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip("Zero this head's rows of W_O: its output no longer reaches the next layer");
            x += metrics[i].width + gap;
            row_h = std::max(row_h, metrics[i].height);
        }
        ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + row_h + toggle_h));
        const std::string open = "Open layer " + std::to_string(l + 1) + " in the pipeline##" + std::to_string(l);
        if (ImGui::Button(open.c_str())) p.open_layer_asked = l;
        record_item(state, ("train.open." + std::to_string(l + 1)).c_str(), "open");
        const int looked = l < static_cast<int>(p.looked_at.size()) ? p.looked_at[static_cast<size_t>(l)] : -1;
        if (ImGui::IsItemHovered())  // the head it opens, worked out only for the tooltip shown
            ImGui::SetTooltip("This layer with the weights at step %d, on the probe, as the session's scenario, head %d shown\n"
                              "(%s): every step, hover arithmetic and in-place edits",
                              p.shown_step, (looked >= 0 ? looked : most_focused_head(p.shown.layers[static_cast<size_t>(l)])) + 1, looked >= 0 ? "the head last pointed at" : "its most concentrated weights");
        ImGui::Dummy(ImVec2(0, gap * 0.5f));
    }
}

}  // namespace

void poll_train(TrainPanelState& p) { poll_progress(p); }

void draw_train(MapContext state, TrainPanelState& p, HeatmapTextures& textures) {
    if (!p.open) return;
    update_shown(p);
    update_evaluations(p);
    update_roles(p);

    static_assert(sizeof(kEncodingNames) / sizeof(kEncodingNames[0]) == 5, "one name per encoding");
    draw_form(state, p);
    ImGui::Separator();
    if (!has_run(p)) {
        ImGui::TextWrapped("Choose a task and press Train. reverse with 1 layer: one head's weights form the anti-diagonal "
                           "(row m+j reads key m\xE2\x88\x92" "1\xE2\x88\x92j) within a few hundred steps. induction with 2 layers: "
                           "a previous-token head in layer 1, then an induction head in layer 2.");
        return;
    }
    const train::ModelConfig& c = p.progress.latest->model.config;
    ImGui::Text("%s \xC2\xB7 %d layer%s, %d head%s, d_model %d, %s positions, %s mask \xC2\xB7 step %d%s", train::to_string(p.settings.task.kind),
                c.layers, c.layers == 1 ? "" : "s", c.heads, c.heads == 1 ? "" : "s", c.d_model, to_string(c.positional),
                to_string(c.mask), p.progress.steps_done, p.progress.running ? " (training)" : " (paused)");
    record_item(state, "train.status", std::to_string(p.progress.steps_done));

    const float left_w = std::max(320.0f * state.fonts.scale, ImGui::GetContentRegionAvail().x * 0.3f);
    ImGui::BeginChild("train.left", ImVec2(left_w, 0), false);
    draw_curves(state, p, left_w - 8.0f);
    // The timeline: the snapshots, then the newest weights.
    const int last = static_cast<int>(p.progress.snapshots.size());
    ImGui::TextUnformatted("Timeline");
    ImGui::SameLine();
    ImGui::Checkbox("follow the newest", &p.follow);
    ImGui::SetNextItemWidth(left_w - 8.0f);
    // In steps: typing 100 goes to step 100 (the snapshot at or before it), not to the 100th snapshot.
    const int newest_step = p.progress.latest->steps;
    int wanted = p.shown_step;
    if (ImGui::SliderInt("##timeline", &wanted, 0, std::max(1, newest_step), p.timeline == last ? "step %d (newest)" : "step %d")) {
        int position = last;
        if (wanted < newest_step) {
            position = 0;
            for (int i = 0; i < last; ++i)
                if (p.progress.snapshots[static_cast<size_t>(i)]->step <= wanted) position = i;
        }
        p.timeline = position;
        p.follow = position == last;
    }
    record_item(state, "train.timeline", std::to_string(p.shown_step));
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%d snapshots, one every %d steps (thinned to stay within memory); drag to replay the run", last,
                       last > 1 ? p.progress.snapshots[1]->step - p.progress.snapshots[0]->step : p.settings.snapshot_every);
    ImGui::PopStyleColor();
    ImGui::Spacing();
    draw_probe(state, p);
    draw_writing(state, p);
    if (!p.ablated_heads.empty()) {
        ImGui::Spacing();
        std::string said = ablated_text(p.ablated_heads);
        said[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(said[0])));
        if (p.ablation_key == p.shown_key) {
            ImGui::TextWrapped("%s ablated: held-out accuracy %.1f%% (intact %.1f%%) at step %d.", said.c_str(), 100.0 * p.ablated.accuracy,
                               100.0 * p.intact.accuracy, p.shown_step);
            record_item(state, "train.ablated", std::to_string(p.ablated.accuracy));
        } else {  // the numbers of another step or set of heads are never shown for these
            ImGui::TextWrapped("%s ablated: measuring the held-out accuracy at step %d\xE2\x80\xA6", said.c_str(), p.shown_step);
            record_item(state, "train.ablated", "measuring");
        }
    }
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("train.heads", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
    draw_heads(state, p, textures);
    ImGui::EndChild();
}

void train_now(TrainPanelState& p, int steps) {
    if (!reset_run(p)) return;
    for (int i = 0; i < steps; ++i) p.worker->step_once();
    p.worker->wait_idle();
}

void train_until_stopped(TrainPanelState& p) {
    if (!reset_run(p)) return;
    p.follow = true;
    p.worker->set_running(true, compute::StopAt{std::max(1, p.stop_after), p.stop_accuracy / 100.0});
    p.worker->wait_idle();
}

void after_train_drawn(PanelContext state, TrainPanelState& p) {
    if (const std::optional<int> layer = std::exchange(p.open_layer_asked, std::nullopt)) open_trained_layer(state, p, *layer);
}

// [SECTION] The trained layer in the pipeline

bool trained_layer_open(const TrainPanelState& p) { return p.opened.layer >= 0; }

std::string trained_layer_input(const TrainPanelState& p) {
    const int layer = p.opened.layer;
    if (layer < 0) return {};
    if (layer == 0) return "X = E[tokens] (+ positions): the trained model's embeddings";
    return "the residual stream entering layer " + std::to_string(layer + 1) + " of the trained model: layer " +
           std::to_string(layer) + "'s output";
}

void update_trained_layer(EditContext state, TrainPanelState& p) {
    TrainedLayerState& o = p.opened;
    const edits::Session& session = state.session;
    if (o.layer < 0 || session.revision == o.seen_revision || !session.pending.empty()) return;
    o.seen_revision = session.revision;
    const Scenario& s = session.scenario;
    if (s.name != o.name) {  // another scenario opened: the training stays, detached from it
        o.layer = -1;
        return;
    }
    if (reflect::equal(s, o.applied)) return;
    auto detach = [&](const std::string& why) {
        add_notice(state, "The trained model's prediction no longer follows this scenario: " + why, true);
        o.layer = -1;
    };
    // The probe is the scenario's tokens (a probe edit, or its undo, changed them).
    std::string error;
    train::ModelInput input = o.probe.input;
    input.tokens = train::token_ids(o.model, s.target.tokens, &error);
    if (error.empty() && o.model.config.attention == AttentionKind::Cross) input.source = train::token_ids(o.model, s.source.tokens, &error);
    if (!error.empty()) return detach(error);
    if (input.tokens != o.probe.input.tokens || input.source != o.probe.input.source) {
        const std::optional<train::Example> example = train::example_from_input(o.settings.task, input);
        o.truth = example.has_value();
        if (example) o.probe = *example;
        else o.probe.input = input;
        o.pass = train::forward(o.model, o.probe.input);
        if (!o.pass.ok) return detach(o.pass.errors.empty() ? "the model cannot run these tokens" : o.pass.errors.front());
    }
    if (!recompute_opened(o, s)) return detach(o.pass.errors.empty() ? "the layers after it cannot run" : o.pass.errors.front());
}

void draw_trained_probe(EditContext state, TrainPanelState& p) {
    TrainedLayerState& o = p.opened;
    const train::ModelConfig& c = o.model.config;
    const std::string text = "Trained layer " + std::to_string(o.layer + 1) + " of " + std::to_string(c.layers) + " (" +
                             train::to_string(o.settings.task.kind) + ", step " + std::to_string(o.step) + ") on the probe:";
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(text.c_str());
    record_item(state, "trained.title", text);
    ImGui::SameLine();
    if (ImGui::SmallButton("back to the training")) p.open = true;
    int correct = 0, scored = 0;
    const std::optional<train::Example> edited = draw_probe_table(state, "trained.probe", o.settings.task, o.probe, o.truth,
                                                                  o.model.vocabulary, o.predicted, &correct, &scored);
    ImGui::SameLine();
    ImGui::BeginGroup();
    if (o.truth) ImGui::Text("%d of %d right", correct, scored);
    else ImGui::TextDisabled("not a %s example: no truth", train::to_string(o.settings.task.kind));
    record_item(state, "trained.right", std::to_string(correct) + "/" + std::to_string(scored));
    ImGui::TextDisabled("%s", o.layer == 0 ? "X = E[tokens] (+ positions): the model's embeddings"
                                           : "X is the output of the layer before");
    ImGui::EndGroup();
    if (!edited) return;
    // The layer's new input for the edited probe; the scenario's weights, edited or not, stay.
    const train::ForwardPass pass = train::forward(o.model, edited->input);
    if (!pass.ok) {
        for (const std::string& e : pass.errors) add_notice(state, "The trained model cannot run the edited probe: " + e, true);
        return;
    }
    const Scenario fresh = train::trained_layer_scenario(o.model, edited->input, pass, o.layer);
    Scenario s = state.session.scenario;
    s.target.tokens = fresh.target.tokens;
    s.target.embeddings = fresh.target.embeddings;
    s.source.tokens = fresh.source.tokens;
    s.source.embeddings = fresh.source.embeddings;
    state.push(edits::ReplaceScenario{std::move(s)});
}

// [SECTION] Files

void save_trained_model(PanelContext, TrainPanelState& p, const std::string& path) {
    if (!has_run(p)) return;
    p.writing_model.queue("writing " + path,
                          [path, file = p.progress.latest](compute::JobProgress&) {
                              TrainPanelState::ModelFileWritten written{path, file->steps, {}};
                              if (!train::save_model_file(path, *file, &written.error) && written.error.empty()) written.error = "not written";
                              return written;
                          },
                          compute::UnderWay::finish);
}

std::optional<session_file::TrainedChoice> trained_choice(const TrainPanelState& p) {
    if (!has_run(p)) return std::nullopt;
    session_file::TrainedChoice c;
    c.file = *p.progress.latest;
    c.probe_tokens = p.probe.input.tokens;
    c.probe_source = p.probe.input.source;
    const TrainedLayerState& o = p.opened;
    if (o.layer >= 0) {
        c.layer = o.layer;
        c.opened = train::ModelFile{o.model, o.settings, o.step, std::nullopt};  // weights only: nothing trains on from it
    }
    train::RunHistory& h = c.history.emplace();
    h.start = p.start_evaluation;
    h.steps = p.progress.history;
    h.evaluations = p.progress.evaluations;
    for (const std::shared_ptr<const train::Snapshot>& s : p.progress.snapshots) h.snapshots.push_back(*s);
    h.snapshot_interval = p.progress.snapshot_interval;
    return c;
}

void restore_trained(PanelContext state, TrainPanelState& p, const session_file::TrainedChoice& c, const std::string& scenario_name) {
    const train::ModelFile& file = c.file;
    std::vector<std::string> errors;
    std::optional<train::Trainer> trainer = train::Trainer::create(file.settings, file.model, file.steps, errors,
                                                                   file.optimiser ? &*file.optimiser : nullptr);
    if (!trainer) {
        for (const std::string& e : errors) add_notice(state, "The session's trained model cannot be opened: " + e, true);
        return;
    }
    // The run's curves and snapshots, when the session kept them; else it starts at its weights.
    const std::string unfit = c.history ? trainer->restore(*c.history) : std::string();
    if (!unfit.empty())
        add_notice(state, "The session's training history does not fit its model (" + unfit + "): the run opens without it", true);
    p.form = file.settings;
    p.errors.clear();
    begin_run(p, std::move(*trainer));
    if (c.history && unfit.empty()) p.start_evaluation = c.history->start;  // where the accuracy curve began
    // The probe as it was shown, when it is still an example of the task.
    train::ModelInput probe = p.run_probe.input;
    probe.tokens = c.probe_tokens;
    probe.source = c.probe_source;
    if (!c.probe_tokens.empty()) {
        if (std::optional<train::Example> e = train::example_from_input(file.settings.task, probe)) p.probe = std::move(*e);
        else add_notice(state, "The session's probe is not a " + std::string(train::to_string(file.settings.task.kind)) +
                                   " example: the run's own probe is shown", true);
    }
    if (c.layer < 0 || !c.opened) return;
    // The session's scenario is that layer (with its edits): the next update takes the probe
    // from its tokens and recomputes the layers after it.
    TrainedLayerState& o = p.opened;
    o.layer = c.layer;
    o.name = scenario_name;
    o.step = c.opened->steps;
    o.model = c.opened->model;
    o.settings = c.opened->settings;
    o.probe = p.probe;
    o.probe.input.tokens.clear();  // differs from any scenario's: the probe is read from it
    o.truth = false;
    o.applied = Scenario{};
    o.seen_revision = ~0ull;
}

void load_trained_model(PanelContext, TrainPanelState& p, const std::string& path) {
    p.reading_model.start("reading " + path, [path](compute::JobProgress&) {
        TrainPanelState::ModelFileRead read{path, {}, {}, {}};
        train::ModelFileLoad load = train::load_model_file(path);
        read.errors = std::move(load.errors);
        if (!load.file) return read;
        const train::ModelFile& file = *load.file;
        read.trainer = train::Trainer::create(file.settings, file.model, file.steps, read.errors, file.optimiser ? &*file.optimiser : nullptr);
        read.file = std::move(load.file);
        return read;
    });
}

// A model file written or read by now: said, or its run on screen (the run before stays when
// it cannot be read or trained on).
void land_model_files(PanelContext state, TrainPanelState& p) {
    if (std::optional<TrainPanelState::ModelFileWritten> written = p.writing_model.take()) {
        if (!written->error.empty()) {
            add_notice(state, "Cannot save the model: " + written->error, true, "save the trained model");
        } else {
            p.model_path = written->path;
            add_notice(state, "Saved the model (step " + std::to_string(written->steps) + ", with its optimiser state) to " + written->path,
                       false, "save the trained model");
        }
    }
    std::optional<TrainPanelState::ModelFileRead> read = p.reading_model.take();
    if (!read) return;
    const std::string& path = read->path;
    if (!read->file) {
        for (const std::string& e : read->errors) add_notice(state, "Cannot load the model: " + e, true, "load a trained model");
        return;
    }
    if (!read->trainer) {
        for (const std::string& e : read->errors) add_notice(state, "Cannot train on " + path + ": " + e, true, "load a trained model");
        return;
    }
    const train::ModelFile& file = *read->file;
    p.model_path = path;
    p.form = file.settings;
    p.errors.clear();
    begin_run(p, std::move(*read->trainer));
    p.open = true;
    add_notice(state, "Loaded the model " + path + " (step " + std::to_string(file.steps) +
                          (file.optimiser ? ")" : "; no optimiser state in the file: AdamW starts afresh)"),
               false, "load a trained model");
}

void offer_train(MapContext state, TrainPanelState& panel, Offers& offers) {
    // A tab beside the pipeline: choosing it shows it, choosing it again closes it.
    offers.sections.push_back({"View", [state, &panel] {
        return std::vector<MenuItem>{{"Train", "", panel.open, true,
                                      [state, &panel] {
                                          panel.open = !panel.open;
                                          state.requests.push_back(ShowView{panel.open ? Pane::Train : Pane::Pipeline, {}, {}});
                                      },
                                      "menu.view.train", "", false}};
    }});
}

}  // namespace attn::ui

namespace attn::ui {

void TrainView::start(MapContext shared, const cli::Options&, const TestHooks& hooks) {
    // Screenshots of the Train panel (test_hooks.hpp).
    if (hooks.open_train) {
        state.open = true;
        shared.requests.push_back(ShowView{Pane::Train, {}, {}});
    }
    if (hooks.train_steps > 0) train_now(state, hooks.train_steps);
    if (hooks.train_run && state.worker) state.worker->set_running(true);
    if (hooks.train_until_stop) train_until_stopped(state);
    if (hooks.train_open > 0 && state.worker) open_trained_layer(shared, state, hooks.train_open - 1);
}

// The run's newest copy, its probe and opened layer. A run under way is written when it
// pauses, not at each of its copies (a large model's file is megabytes).
void TrainView::sign(std::string& signature) const {
    const TrainPanelState& t = state;
    signature += "|" + (t.progress.running ? std::string("running") : std::to_string(t.seen)) + "|" + std::to_string(t.opened.layer) + "|";
    for (int id : t.probe.input.tokens) signature += std::to_string(id) + ",";
    for (int id : t.opened.probe.input.tokens) signature += std::to_string(id) + ";";
}

}  // namespace attn::ui
