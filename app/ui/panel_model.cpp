// The model view: a checkpoint opened with File → Open model… (GPT-2, or a Hugging Face family:
// Llama, Qwen, Gemma, GPT-NeoX, BERT), its sentence as token chips, the top 5 next tokens (or
// each [MASK]'s), and every layer × head's attention weights as a small map (BertViz's model
// view: panel_model_grid.cpp). Clicking a map opens that layer in the pipeline (the session's
// scenario becomes the layer's scenario, the head shown); edits there recompute the layers
// after it, the maps and the prediction. A right-click on a map ablates its head (its rows of
// W_O zeroed: it contributes nothing) or restores it; the layers from it on are recomputed.
// The Compare tab (panel_model_compare.cpp) sets two heads or two sentences side by side.
//
// Index
// [SECTION] Opening a model and a layer
// [SECTION] Keeping the pass in step with the session
// [SECTION] Drawing
#include "ui/panel_model.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <imgui.h>

#include "teaching/presets.hpp"
#include "attention/registry.hpp"
#include "tensor/reflect.hpp"
#include "ui/classroom.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

constexpr const char* kDefaultSentence = "The animal did not cross the road because it was tired";

// The status line while a model opens, replaced once it lands.
std::string opening_text(const std::string& folder) {
    return "Opening the model " + folder + "\xE2\x80\xA6 (what is on screen stays until it opens)";
}

}  // namespace

std::vector<std::string> article_sentences() {
    std::vector<std::string> sentences;
    for (const Preset& p : presets()) {
        if (p.title.size() < 3 || p.title[0] != '"') continue;
        const size_t end = p.title.find('"', 1);
        if (end == std::string::npos) continue;
        const std::string s = p.title.substr(1, end - 1);
        if (std::find(sentences.begin(), sentences.end(), s) == sentences.end()) sentences.push_back(s);
    }
    return sentences;
}

namespace {

// The session shows layer `layer` of the current pass (its ablated heads' rows of W_O zero).
// `navigation`: shown again because its input or its heads changed, not an edit of the user's:
// the undo history starts from it (undo never brings back a layer the model no longer runs).
void show_layer(EditContext state, ModelViewState& m, int layer, bool navigation = false) {
    Scenario s = session_file::model_layer(*m.model, m.pass, layer);  // its weights widened for the pipeline alone
    m.layer = layer;
    m.layer_name = s.name;
    m.layer_base = s;
    m.applied = s;
    state.push(edits::ReplaceScenario{std::move(s), navigation});
}

// The model view's jobs, made when first needed.
compute::ModelJobs& jobs_of(ModelViewState& m) {
    if (!m.jobs) m.jobs = std::make_unique<compute::ModelJobs>();
    return *m.jobs;
}

// After a recompute that failed: the sentence run again from its first layer with these heads
// and experts ablated, as a job that supersedes any waiting (the pass on screen is said to be stale).
void rerun_sentence(ModelViewState& m, stack::Ablation ablated) {
    m.reshaping = true;
    m.job_text = "Running the sentence again on the unedited model: the maps and the next token below are not its until it ends.";
    ModelPass base;
    base.ablated = std::move(ablated);
    jobs_of(m).submit(compute::ModelRecompute{m.model, std::move(base), 0, std::nullopt, m.computed_sentence, std::nullopt});
}

// A pass run whole (a sentence, or the text the model wrote) becomes the one on screen; false,
// each error said after `failed`, when it could not run.
bool install_whole_pass(PanelContext state, ModelViewState& m, compute::ModelResult& r, const char* failed) {
    m.reshaping = false;
    if (!r.ok) {
        for (const std::string& e : r.pass.errors) add_notice(state, failed + e, true);
        return false;
    }
    m.pass = std::move(r.pass);
    m.forward_ms = r.milliseconds;
    ++m.revision;
    return true;
}

// Installs what the jobs finished, oldest first: the pass on screen becomes the one computed
// from the latest request that reached it. A new sentence or a change of the heads ablated
// shows the open layer again from its new input.
void collect_recomputes(EditContext state, ModelViewState& m) {
    if (!m.jobs) return;
    for (compute::ModelResult& r : m.jobs->poll()) {
        if (!m.model || r.model != m.model) continue;  // computed on a model replaced since
        if (r.sentence) {  // a new sentence
            m.computed_sentence = *r.sentence;  // not retried every frame when it cannot run
            if (!install_whole_pass(state, m, r, "The model cannot run this sentence: ")) continue;
            forget_written(m);  // what was written continued the sentence before
            if (m.layer >= 0) show_layer(state, m, m.layer);  // the opened layer follows the sentence
            continue;
        }
        if (r.ids) {  // the text the model wrote, run whole: an edited layer open carried to it
            if (!install_whole_pass(state, m, r, "The written text was not run whole: ")) continue;
            if (m.layer >= 0 && r.edited) {
                m.applied = *r.edited;
                m.layer_base = session_file::model_layer(*m.model, m.pass, m.layer);
                m.submitted = m.applied;
                state.push(edits::ReplaceScenario{*r.edited, true});
                m.seen_revision = state.session.revision;
            } else if (m.layer >= 0) {
                show_layer(state, m, m.layer, true);  // the opened layer follows the text
            }
            continue;
        }
        if (!r.edited) {  // heads or experts ablated or restored: the layers from the lowest changed one
            m.reshaping = false;
            if (!r.ok) {
                for (const std::string& e : r.pass.errors) add_notice(state, "The model was not recomputed with what is ablated: " + e, true);
                m.layer = -1;
                rerun_sentence(m, {});  // the intact model, in step again
            } else {
                compute::install_result(m.pass, std::move(r.pass), r.layer);
                m.forward_ms = r.milliseconds;
                if (m.layer >= r.layer) show_layer(state, m, m.layer, true);
                m.write.refill_from = std::min(m.write.refill_from.value_or(r.layer), r.layer);  // the caches from that layer on
            }
            ++m.revision;
            continue;
        }
        if (r.layer != m.layer) continue;  // an edit's: the layer was closed or another opened since
        if (!r.ok) {
            for (const std::string& e : r.pass.errors) add_notice(state, "The model's layers after the edit were not recomputed: " + e, true);
            m.layer = -1;
            rerun_sentence(m, m.pass.ablated);  // the unedited model, in step again
            continue;
        }
        compute::install_result(m.pass, std::move(r.pass), r.layer);
        m.applied = std::move(*r.edited);
        m.forward_ms = r.milliseconds;
        m.write.refill_from = std::min(m.write.refill_from.value_or(r.layer), r.layer);  // the caches from the edited layer on
        ++m.revision;
    }
}


}  // namespace

bool model_work_under_way(const ModelViewState& m) {
    return (m.jobs && m.jobs->busy()) || (m.layer_asked && m.model) || m.opening.running() || m.compare.running_b.running() || m.compare.opening_b.running() ||
           model_heads_busy(m) || model_write_busy(m);
}

void finish_model_work(ModelViewState& m) {
    if (m.jobs) m.jobs->finish();  // the results stay for the next frame's update_model_view
    m.opening.wait();
    m.compare.running_b.wait();
    m.compare.opening_b.wait();
    finish_model_heads(m);
    finish_model_write(m);
}

void submit_written_text(ModelViewState& m, std::vector<int> ids) {
    m.reshaping = true;
    m.job_text = "Running the written text whole: until it ends, each written token's row is shown as it was written.";
    ModelPass base;
    base.ablated = m.pass.ablated;
    std::optional<Scenario> edited;
    if (m.layer >= 0) edited = m.applied;
    jobs_of(m).submit(compute::ModelRecompute{m.model, std::move(base), std::max(m.layer, 0), std::move(edited), std::nullopt, std::move(ids)});
}

namespace {

// A sentence typed: run as a job; the pass on screen stays until it lands. Nothing is submitted
// while a job runs (the sentence is asked for again next frame), so that no edit's recompute of
// the old sentence lands on the new one.
void submit_sentence(ModelViewState& m, const std::string& sentence) {
    if (jobs_of(m).busy()) return;
    m.reshaping = true;
    m.job_text = "Running the new sentence: the maps and the next token below are the previous sentence's until it ends.";
    ModelPass base;
    base.ablated = m.pass.ablated;
    jobs_of(m).submit(compute::ModelRecompute{m.model, std::move(base), 0, std::nullopt, sentence, std::nullopt});
}

}  // namespace

// [SECTION] Opening a model and a layer

namespace {

// The checkpoint opened takes the place of the one on screen, with its first pass: one that
// could not run is said (a sentence typed since it started runs as a job next frame).
void install_model(MapContext state, ModelViewState& m, compute::ModelOpened opened) {
    // The jobs of the model it replaces are dropped, never waited for: each keeps the model it
    // reads alive until it ends, and a result of it that lands is not installed (collect_recomputes).
    if (m.jobs) m.jobs->cancel();
    m.reshaping = false;
    m.layer_asked.reset();
    m.compare.running_b.cancel();  // B of the model it replaces
    forget_model_heads(m);  // its heads' roles, lens and sweep were the replaced model's
    forget_model_write(m);  // what it wrote and its caches too
    // The pipeline still showing a layer of the model being replaced: its weights, window and
    // norms must not stay on screen under the new model's name (below).
    const int replaced_layer = m.layer >= 0 && m.model && state.session.scenario.name == m.layer_name ? m.layer : -1;
    m.model = std::make_shared<const lm::Model>(std::move(*opened.load.model));
    m.model_files = session_file::model_files(m.model->folder());
    m.open = true;
    state.requests.push_back(ShowView{Pane::Model, {}, {}});
    m.layer = -1;
    m.pass = ModelPass{};  // no head ablated but those the opening ran with
    ++m.revision;
    m.ablation_toggles.clear();
    m.restore_all_heads = false;
    m.compare.pass_b = ModelPass{};
    m.compare.computed_b.clear();
    if (m.sentence.empty()) m.sentence = opened.sentence;
    const lm::Shape& c = m.model->shape();
    add_notice(state, "Opened the " + m.model->family() + " model " + opened.folder + ": " + std::to_string(c.layers) + " layers \xC3\x97 " +
                          std::to_string(c.heads) + " heads" + (c.kv_heads < c.heads ? " on " + std::to_string(c.kv_heads) + " K/V heads" : "") +
                          ", d_model " + std::to_string(c.d_model) + "; " + m.model->held_weights().sentence() +
                          (opened.load.ignored.empty() ? "" : "; " + opened.load.ignored) +
                          (m.model->tokens_beyond_embedding().empty() ? "" : "; " + m.model->tokens_beyond_embedding()),
               false, "open a model");
    m.computed_sentence = opened.sentence;  // not retried every frame when it cannot run
    if (!opened.pass.ok) {
        for (const std::string& e : opened.pass.errors) add_notice(state, "The model cannot run this sentence: " + e, true);
        if (replaced_layer >= 0) {  // no layer of the new model to show: the default preset, said
            state.push(edits::ReplaceScenario{find_preset(default_preset_name())->scenario, true});
            add_notice(state, "The pipeline showed layer " + std::to_string(replaced_layer + 1) +
                                  " of the model replaced: it shows the default preset until a layer of this one opens", false);
        }
        return;
    }
    m.pass = std::move(opened.pass);
    m.forward_ms = opened.milliseconds;
    ++m.revision;
    // The same layer of the new model (its last, when it has fewer) takes the replaced one's place.
    if (replaced_layer >= 0) show_layer(state, m, std::min(replaced_layer, m.model->shape().layers - 1), true);
}

// What open_model_folder read, shown: a folder that held one checkpoint inside it said, a
// folder that cannot be opened said fault by fault (the work and any model open are kept),
// else the checkpoint installed with its first pass. False when nothing opened.
bool install_opened(MapContext state, ModelViewState& m, compute::ModelOpened opened) {
    if (!opened.from_cache.empty())
        add_notice(state, opened.asked + ": the Hugging Face cache's snapshot, " + opened.folder, false);
    else if (opened.folder != opened.asked)
        add_notice(state, opened.asked + " holds no checkpoint itself: opening the one inside it, " + opened.folder, false);
    if (!opened.load.model) {
        for (const std::string& e : opened.load.errors) add_notice(state, "Cannot open the model: " + e, true, "open a model");
        return false;
    }
    install_model(state, m, std::move(opened));
    return true;
}

// The session's scenario once its queued edits are applied: what a session being opened shows.
Scenario queued_scenario(const edits::Session& session) {
    Scenario s = session.scenario;
    for (const edits::Edit& e : session.pending) edits::apply(e, s);
    return s;
}

// A session's model choice on the checkpoint its opening installed. Every piece is checked
// against this checkpoint before it is used; one that does not fit is said (the file, the key,
// the value, the model's range) and left out. The heads ablated ran in the opening's pass. A
// folder whose files changed since the session was saved is said, and the session's layer and
// edits are applied to the model as it is now.
void restore_session_model(EditContext state, ModelViewState& m, const session_file::ModelChoice& choice, const std::string& scenario_name) {
    const std::string changed = choice.files.empty() ? std::string() : session_file::files_changed(choice.files, m.model_files);
    if (!changed.empty())
        add_notice(state, "The session's model folder " + choice.folder + " has changed since the session was saved (" + changed +
                              "): its layer, edits and ablated heads are applied to the model as it is now", true);
    // The session's scenario is the layer (kept by reference, made again here), or the file's own.
    std::optional<Scenario> layer, base;
    if (choice.layer_edits) {
        session_file::LayerReopen reopened = session_file::reopen_layer(choice, *m.model, m.pass);
        for (const std::string& notice : reopened.notices) add_notice(state, notice, true);
        layer = std::move(reopened.scenario);
        base = std::move(reopened.base);
    }
    session_file::ModelChoice checked = choice;
    if (choice.layer_edits && !layer) checked.layer = -1;  // said above: the ablations are still checked
    const session_file::ModelRestore restore =
        session_file::check_model_choice(checked, *m.model, m.computed_sentence, m.pass, layer ? *layer : queued_scenario(state.session));
    for (const std::string& notice : restore.notices) add_notice(state, notice, true);
    if (restore.layer < 0) return;
    // The session's scenario is that layer (with its edits): the next update recomputes the
    // layers after it from it.
    m.layer = restore.layer;
    m.head = restore.head;
    m.layer_base = base ? std::move(*base) : session_file::model_layer(*m.model, m.pass, restore.layer);
    m.applied = Scenario{};
    m.seen_revision = ~0ull;
    if (layer) {
        m.layer_name = layer->name;
        state.requests.push_back(SessionLayerMade{*layer});  // the file's scenario, once made: not unsaved work
        state.push(edits::ReplaceScenario{std::move(*layer)});
    } else {
        m.layer_name = scenario_name;
    }
}

// What follows an opening (model_state.hpp), once it has landed: `opened` false when nothing
// could be opened (the errors were said).
void carry_out(MapContext state, ModelViewState& m, AfterOpening after, bool opened) {
    if (!opened) {
        if (after.session)
            add_notice(state, "The session's model folder " + after.session->folder + " cannot be opened: the rest of the session is open without it" +
                                  (after.session->layer_edits ? " (its scenario, layer " + std::to_string(after.session->layer + 1) +
                                                                    " of that model with the session's edits, is the model's: the pipeline keeps what it showed)"
                                                              : ""),
                       true);
        return;
    }
    m.ablation_toggles = std::move(after.toggles);
    if (after.layer_head) {
        const auto [layer, head] = *after.layer_head;
        const lm::Shape& c = m.model->shape();
        if (layer >= c.layers || head >= c.heads) {
            add_notice(state, "--layer " + std::to_string(layer + 1) + " --head " + std::to_string(head + 1) +
                                  " does not exist: the model has " + std::to_string(c.layers) + " layers of " +
                                  std::to_string(c.heads) + " heads", true);
        } else {
            open_model_layer(state, m, layer, head);
        }
    }
    if (after.session) restore_session_model(state, m, *after.session, after.scenario_name);
    if (after.pane) state.requests.push_back(ShowView{*after.pane, {}, {}});
}

// The sentence a model just opened runs first: the box's, or the articles' animal sentence.
std::string first_sentence(const ModelViewState& m) { return m.sentence.empty() ? std::string(kDefaultSentence) : m.sentence; }

// The opening under way, once it has landed: its "Opening…" line replaced by what came of it.
void collect_opened_model(MapContext state, ModelViewState& m) {
    std::optional<compute::ModelOpened> landed = m.opening.take();
    if (!landed) return;
    compute::ModelOpened opened = std::move(*landed);
    const std::string said = opening_text(opened.asked);
    state.notices.erase(std::remove_if(state.notices.begin(), state.notices.end(), [&](const Notice& n) { return n.text == said; }),
                        state.notices.end());
    std::optional<AfterOpening> after = std::exchange(m.after_opening, std::nullopt);
    const bool ok = install_opened(state, m, std::move(opened));
    if (after) carry_out(state, m, std::move(*after), ok);
}

// Starts opening `folder` on a worker, `after` to follow; refused (said) while one is under way.
void start_opening(PanelContext state, ModelViewState& m, const std::string& folder, AfterOpening after, const stack::Ablation& ablated = {},
                   const std::vector<int>& ids = {}) {
    if (m.opening.running()) {
        add_notice(state, "A model is being opened already: " + folder + " was not opened", true);
        return;
    }
    add_notice(state, opening_text(folder), false);
    m.after_opening = std::move(after);
    m.opening.start("opening " + folder, [folder, sentence = first_sentence(m), ablated, ids](compute::JobProgress&) {
        return compute::open_model_folder(folder, sentence, ablated, ids);
    });
}

}  // namespace

void open_model_job(PanelContext state, ModelViewState& m, const std::string& folder) { start_opening(state, m, folder, AfterOpening{}); }

void start_model(PanelContext state, ModelViewState& m, const cli::Options& options) {
    if (options.model.path.empty()) return;
    if (options.text) m.sentence = *options.text;
    AfterOpening after;
    if (options.model.layer) after.layer_head = std::pair{*options.model.layer - 1, *options.model.head - 1};
    start_opening(state, m, options.model.path, std::move(after));
}

void restore_model(PanelContext state, ModelViewState& m, const session_file::ModelChoice& choice, const std::string& scenario_name,
                   std::optional<Pane> pane) {
    if (!choice.sentence.empty()) m.sentence = choice.sentence;
    stack::Ablation ablated;  // those the model does not have are said once it is open
    for (const auto& [layer, head] : choice.ablated) ablated.heads.insert(stack::HeadId{layer, head});
    for (const auto& [layer, expert] : choice.ablated_experts) ablated.experts.insert(stack::ExpertId{layer, expert});
    start_opening(state, m, choice.folder, AfterOpening{std::nullopt, {}, choice, scenario_name, pane}, ablated, choice.ids);
}

void open_model_layer(MapContext state, ModelViewState& m, int layer, int head) {
    if (m.jobs && m.jobs->busy()) {  // the pass on screen is about to change: opened once it has (update_model_view)
        m.layer_asked = std::pair{layer, head};
        return;
    }
    m.layer_asked.reset();
    if (!m.model || !m.pass.ok || layer < 0 || layer >= static_cast<int>(m.pass.layers.size())) return;
    m.head = head;
    m.sidebar_pick = {layer + 1, head + 1};  // the side bar's pickers start at what is open
    // The layer's every step, where the user looks, the head alone; the first layer opened shows
    // its weights, another one after it keeps the step in view.
    const std::optional<attn::Column> step = m.layer < 0 ? std::optional(attn::Column::Softmax) : std::nullopt;
    show_layer(state, m, layer);
    state.requests.push_back(ShowView{Pane::Pipeline, head, step});
}

// [SECTION] Keeping the pass in step with the session

namespace {

// The toggles of the grid (heads) and of the Routing tab (experts): the pass's sets changed,
// then the layers from the lowest changed one recomputed. A layer open in the pipeline at or
// after it is shown again (its input or its heads changed); one before it keeps its edits (the
// stream after it is what changed).
void apply_ablation(MapContext state, ModelViewState& m) {
    if (m.ablation_toggles.empty() && m.expert_toggles.empty() && !m.restore_all_heads && !m.restore_all_experts) return;
    collect_recomputes(state, m);
    if (jobs_of(m).busy() || model_write_ahead(m)) return;  // the toggles wait for the job under way: the heads change on the pass it leaves
    const int layers = m.model->shape().layers, heads = m.model->shape().heads;
    stack::Ablation ablated = m.pass.ablated;
    int from = layers;
    if (m.restore_all_heads) {
        if (!ablated.heads.empty()) from = std::min(from, ablated.heads.begin()->layer);
        ablated.heads.clear();
    }
    if (m.restore_all_experts) {
        if (!ablated.experts.empty()) from = std::min(from, ablated.experts.begin()->layer);
        ablated.experts.clear();
    }
    for (const stack::HeadId& id : m.ablation_toggles) {
        if (!id.within(layers, heads)) continue;
        if (!ablated.heads.erase(id)) ablated.heads.insert(id);
        from = std::min(from, id.layer);
    }
    for (const stack::ExpertId& id : m.expert_toggles) {  // the Routing tab offers only the experts a layer has
        if (id.layer < 0 || id.layer >= layers || id.expert < 0) continue;
        if (!ablated.experts.erase(id)) ablated.experts.insert(id);
        from = std::min(from, id.layer);
    }
    const bool heads_changed = !m.ablation_toggles.empty() || m.restore_all_heads;
    const bool experts_changed = !m.expert_toggles.empty() || m.restore_all_experts;
    const char* what = heads_changed && experts_changed ? " with the heads and experts ablated" : heads_changed ? " with the heads ablated" : " with the experts ablated";
    m.ablation_toggles.clear();
    m.expert_toggles.clear();
    m.restore_all_heads = m.restore_all_experts = false;
    if (from >= layers || !m.pass.ok) {
        m.pass.ablated = std::move(ablated);
        return;
    }
    // The layers from `from` on, as a job: the pass on screen keeps its heads until it lands.
    ModelPass pass = compute::pass_for_job(m.pass, from);
    pass.ablated = std::move(ablated);
    m.reshaping = true;
    m.job_text = "Recomputing layers " + std::to_string(from + 1) + "\xE2\x80\x93" + std::to_string(layers) +
                 what + ": the maps and the next token below are the model before it until it ends.";
    jobs_of(m).submit(compute::ModelRecompute{m.model, std::move(pass), from, std::nullopt, std::nullopt, std::nullopt});
}

// An edit of the layer opened in the pipeline: that layer and every one after it, as a job
// off the window's thread (model_job.hpp); its result is installed by collect_recomputes.
void follow_session(EditContext state, ModelViewState& m) {
    compute::ModelJobs& jobs = jobs_of(m);
    collect_recomputes(state, m);
    const edits::Session& session = state.session;
    if (m.layer < 0 || m.reshaping || session.revision == m.seen_revision || !session.pending.empty() || model_write_ahead(m)) return;
    m.seen_revision = session.revision;
    if (session.scenario.name != m.layer_name) {  // another scenario opened: the model view stays, detached
        m.layer = -1;
        return;
    }
    // What the screen shows once the jobs under way finish: an edit back to it needs no job.
    if (reflect::equal(session.scenario, jobs.busy() ? m.submitted : m.applied)) return;
    // An edit in layer ℓ: ℓ and every layer after it, the maps and the prediction. The job
    // gets what it reads of the pass on screen: the stream entering ℓ (the weights are shared).
    m.submitted = session.scenario;
    m.job_text = "Recomputing layers " + std::to_string(m.layer + 1) + "\xE2\x80\x93" + std::to_string(m.model->shape().layers) +
                 " after the edit: the maps and the next token below are the model before it until it ends.";
    jobs.submit(compute::ModelRecompute{m.model, compute::pass_for_job(m.pass, m.layer), m.layer, session.scenario, std::nullopt, std::nullopt});
}

}  // namespace

void update_model_view(MapContext state, ModelViewState& m) {
    collect_opened_model(state, m);
    if (!m.model) return;
    if (m.jobs) collect_recomputes(state, m);
    if (m.layer_asked && !(m.jobs && m.jobs->busy())) open_model_layer(state, m, m.layer_asked->first, m.layer_asked->second);
    if (m.sentence != m.computed_sentence && !m.reshaping && !ImGui::GetIO().WantTextInput) submit_sentence(m, m.sentence);
    apply_ablation(state, m);
    follow_session(state, m);
    update_model_write(m);
    update_model_heads(m);
    update_model_compare(m);  // last: its comparison points into the passes as they now are
}

// [SECTION] Drawing

namespace {

// While an edit's recompute runs, the maps and the prediction are the model before it: said
// in the warning colour wherever they are shown, never left to pass for the edited model's.
// Its lines are kept whether a job runs or not, so the line coming and going never moves the
// maps under the pointer: the room of the longest such text, wrapped at this width.
void draw_recompute_under_way(PanelContext state, const ModelViewState& m) {
    static const char* const kLongest[] = {
        "Running the sentence again on the unedited model: the maps and the next token below are not its until it ends.",
        "Recomputing layers 100\xE2\x80\x93" "100 with the heads ablated: the maps and the next token below are the model before it until it ends.",
    };
    const float wrap = ImGui::GetContentRegionAvail().x;
    float room = 0.0f;
    for (const char* text : kLongest) room = std::max(room, ImGui::CalcTextSize(text, nullptr, false, wrap).y);
    const bool busy = m.jobs && m.jobs->busy();
    if (busy) room = std::max(room, ImGui::CalcTextSize(m.job_text.c_str(), nullptr, false, wrap).y);
    const ImVec2 start = ImGui::GetCursorScreenPos();
    if (busy) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 200, 60, 255));
        ImGui::TextWrapped("%s", m.job_text.c_str());
        ImGui::PopStyleColor();
        record_item(state, "model.recomputing", m.job_text);
    }
    ImGui::SetCursorScreenPos(start);
    ImGui::Dummy(ImVec2(1.0f, room));
}

}  // namespace

namespace {

// What X of the layer opened in the pipeline is, and what its attention reads of it.
std::string layer_input_text(const lm::Model& model, int layer) {
    const hf::ModelSpec& spec = model.opened().spec;
    std::string x;
    if (layer > 0) x = "X is the residual stream entering the layer (the previous block's output)";
    else if (spec.layout == hf::BlockLayout::post_norm) x = "X = LayerNorm(E[tokens] + P[positions] + T[type 0]), BERT's embeddings";
    else if (spec.embedding_norm) x = "X = LayerNorm(E[tokens]), the token embeddings normalised (ModernBERT's embeddings.norm)";
    else if (spec.embedding_scale != 1.0f) x = "X = E[tokens]\xC2\xB7\xE2\x88\x9A" "d_model, the token embeddings scaled as Gemma scales them";
    else if (spec.positions == hf::PositionKind::learned_absolute)  // GPT-2: the position table is added in x₀, so the sum is X
        x = "X = E[tokens] + P[positions], the token and position embeddings added";
    else x = "X = E[tokens], the token embeddings";
    const bool linear = layer >= 0 && layer < static_cast<int>(spec.layers.size()) && spec.layers[static_cast<size_t>(layer)].linear;
    if (linear) x += "; no position is added or turned: this Gated DeltaNet layer reads order through its causal convolution and its recurrence";
    else if (spec.positions == hf::PositionKind::rope) x += "; no position is added: RoPE rotates q and k inside attention";
    if (linear) {
        const char* norm = spec.norm.one_plus_weight ? "RMSNorm\xE2\x82\x81(X) with (1 + \xCE\xB3)" : "RMSNorm\xE2\x82\x81(X)";
        return x + "; its projections read " + norm + ".";
    }
    const char* norm = spec.norm.kind == hf::NormKind::rms_norm ? (spec.norm.one_plus_weight ? "RMSNorm\xE2\x82\x81(X) with (1 + \xCE\xB3)" : "RMSNorm\xE2\x82\x81(X)")
                                                                 : "LN\xE2\x82\x81(X)";
    if (spec.layout == hf::BlockLayout::post_norm) return x + "; attention reads X itself (the norms come after each sublayer).";
    if (spec.layout == hf::BlockLayout::after_sublayers)
        return x + "; attention reads X itself: OLMo 2 normalises each sublayer's output, before the residual adds it.";
    if (layer >= 0 && layer < static_cast<int>(spec.layers.size()) && !spec.layers[static_cast<size_t>(layer)].attn_norm)
        return x + "; attention reads X itself: this layer has no norm before attention (ModernBERT's first), only LN\xE2\x82\x82 before the feed-forward.";
    return x + "; attention reads " + norm + ".";
}

}  // namespace

// The side bar while the model view is in front: the model's own controls (its sentence, the
// layer and head to open in the pipeline, the heads ablated), not the preset's.
void draw_model_sidebar(PanelContext state, ModelViewState& m) {
    ImGui::PushFont(state.fonts.title);
    ImGui::TextUnformatted("Model");
    ImGui::PopFont();
    ImGui::Separator();
    const lm::Shape& shape = m.model->shape();
    ImGui::TextWrapped("%s, %d layers \xC3\x97 %d heads", m.model->family().c_str(), shape.layers, shape.heads);
    ImGui::TextDisabled("%s", m.model->folder().c_str());
    record_item(state, "sidebar.model", m.model->family());
    ImGui::Separator();
    ImGui::TextUnformatted("Sentence (Enter runs it)");
    ImGui::SetNextItemWidth(-1.0f);
    input_line("##sidebar.model.sentence", m.sentence);
    ImGui::TextDisabled("%zu tokens", m.pass.tokens.size());
    ImGui::Separator();
    // The layer and head the pipeline shows every step of: a map click in the grid does the same.
    int& layer = m.sidebar_pick.first;
    int& head = m.sidebar_pick.second;
    if (m.layer >= 0) {
        ImGui::Text("In the pipeline: layer %d, head %d", m.layer + 1, m.head + 1);
        record_item(state, "sidebar.model.layer", std::to_string(m.layer + 1) + "," + std::to_string(m.head + 1));
    }
    layer = std::clamp(layer, 1, std::max(1, shape.layers));
    head = std::clamp(head, 1, std::max(1, shape.heads));
    ImGui::SetNextItemWidth(-1.0f);
    ImGui::SliderInt("##sidebar.model.layer", &layer, 1, std::max(1, shape.layers), "layer %d");
    ImGui::SetNextItemWidth(-1.0f);
    ImGui::SliderInt("##sidebar.model.head", &head, 1, std::max(1, shape.heads), "head %d");
    if (ImGui::Button("Open in the pipeline") && m.pass.ok) m.layer_asked = std::pair{layer - 1, head - 1};  // opened by the next update
    ImGui::Separator();
    const size_t ablated = m.pass.ablated.heads.size();
    ImGui::Text("%zu head%s ablated", ablated, ablated == 1 ? "" : "s");
    if (ablated > 0 && ImGui::SmallButton("restore all heads")) m.restore_all_heads = true;
    if (const size_t experts = m.pass.ablated.experts.size(); experts > 0) {
        ImGui::Text("%zu expert%s ablated", experts, experts == 1 ? "" : "s");
        if (ImGui::SmallButton("restore all experts")) m.restore_all_experts = true;
    }
    ImGui::Separator();
    hint_text("The preset's controls come back with the Pipeline tab.");
}

// In place of the token bar while the model view is in front: the model and its sentence.
void draw_model_bar(PanelContext state, const ModelViewState& m) {
    // One line: a long sentence is cut (the model view shows it whole, as chips).
    constexpr size_t kShownBytes = 60;
    std::string sentence = m.computed_sentence;
    if (sentence.size() > kShownBytes) {
        size_t cut = kShownBytes;
        while (cut > 0 && (static_cast<unsigned char>(sentence[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
        sentence = sentence.substr(0, cut) + "\xE2\x80\xA6";
    }
    const std::string text = "Model view: " + m.model->family() + " on \"" + sentence + "\" (" +
                             std::to_string(m.pass.tokens.size()) + " tokens)" +
                             (m.layer >= 0 ? "; layer " + std::to_string(m.layer + 1) + ", head " + std::to_string(m.head + 1) +
                                                 " open in the pipeline"
                                           : "");
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(text.c_str());
    record_item(state, "model.bar", text);
}

std::string model_layer_input(const ModelViewState& m) {
    if (m.layer < 0 || !m.model) return {};
    if (m.layer > 0)
        return "the residual stream entering layer " + std::to_string(m.layer + 1) + " of the model: layer " +
               std::to_string(m.layer) + "'s output, not an embedding";
    const std::string text = layer_input_text(*m.model, 0);
    return text.substr(0, text.find(';'));  // what X is, without what attention reads of it
}

void draw_model_sentence(MapContext state, ModelViewState& m) {
    const std::string text = m.model->family() + " layer " + std::to_string(m.layer + 1) + " of " + m.model->folder() + " on \"" +
                             m.computed_sentence + "\" (" + std::to_string(m.pass.tokens.size()) + " tokens)";
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(text.c_str());
    record_item(state, "model.pipeline_sentence", text);
    ImGui::SameLine();
    if (ImGui::SmallButton("edit the sentence in the model view")) {
        m.open = true;
        state.requests.push_back(ShowView{Pane::Model, {}, {}});
    }
    draw_recompute_under_way(state, m);  // under the sentence line, the button staying beside it
    const std::string input = layer_input_text(*m.model, m.layer);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s An edit here recomputes the layers after it, the model view's maps and the prediction.", input.c_str());
    ImGui::PopStyleColor();
    record_item(state, "model.pipeline_input", input);
    if (stack::ablated_in_layer(m.pass.ablated.heads, m.layer) > 0) {
        std::string heads;
        for (const stack::HeadId& id : m.pass.ablated.heads)
            if (id.layer == m.layer) heads += (heads.empty() ? "" : ", ") + std::to_string(id.head + 1);
        const std::string text = "Ablated in this layer: head " + heads +
                                 ". Their rows of W_O are zero, so they add nothing to the output (the model keeps them zero "
                                 "whatever is edited here; restore them in the model view).";
        ImGui::TextDisabled("%s", text.c_str());
        record_item(state, "model.pipeline_ablated", text);
    }
    if (const std::vector<int> experts = stack::experts_ablated_in_layer(m.pass.ablated.experts, m.layer); !experts.empty()) {
        std::string which;
        for (int e : experts) which += (which.empty() ? "" : ", ") + std::to_string(e + 1);
        const std::string text = "Ablated in this layer's mixture: expert " + which +
                                 ". The router still scores and keeps them, but their outputs are dropped (restore them in the "
                                 "model view's Routing tab).";
        ImGui::TextDisabled("%s", text.c_str());
        record_item(state, "model.pipeline_ablated_experts", text);
    }
}

std::optional<session_file::ModelChoice> model_choice(const ModelViewState& m) {
    if (!m.model) return std::nullopt;
    std::error_code ec;
    const std::filesystem::path folder = std::filesystem::absolute(m.model->folder(), ec);
    session_file::ModelChoice choice;
    choice.folder = ec ? m.model->folder() : folder.lexically_normal().string();
    choice.sentence = written_sentence(m);  // the text the model wrote after it kept too
    // The ids the pass read, with the tokens written after them, kept when the tokenizer would
    // not make them of the text again: reopened, the text is what was on screen, token for token.
    const std::vector<int> ids = m.write.written.empty() ? m.pass.token_ids : written_text_ids(m);
    std::vector<std::string> why;
    if (!ids.empty() && m.model->encode(choice.sentence, why) != ids) choice.ids = ids;
    choice.layer = m.layer;
    choice.head = m.head;
    for (const stack::HeadId& id : m.pass.ablated.heads) choice.ablated.emplace_back(id.layer, id.head);
    for (const stack::ExpertId& id : m.pass.ablated.experts) choice.ablated_experts.emplace_back(id.layer, id.expert);
    choice.files = m.model_files;
    if (m.layer >= 0) choice.layer_base = m.layer_base;  // the session's scenario is kept as its edits of this
    return choice;
}

namespace {

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

std::string model_shape_text(const lm::Model& model) {
    const lm::Shape& c = model.shape();
    std::string text = plural(c.layers, "layer", "layers") + " \xC3\x97 " + plural(c.heads, "head", "heads");
    if (c.kv_heads < c.heads) {
        const int group = c.heads / c.kv_heads;
        text += " on " + plural(c.kv_heads, "K/V head", "K/V heads") + " (" + (c.kv_heads == 1 ? "multi-query" : "grouped-query") +
                " attention: " + std::to_string(group) + " query heads share each, the K/V cache is 1/" + std::to_string(group) +
                " of multi-head attention's)";
    }
    text += ", head_dim " + std::to_string(c.head_dim) + ", d_model " + std::to_string(c.d_model) + ", vocabulary " + std::to_string(c.vocab_size);
    text += c.max_positions > 0 ? ", at most " + std::to_string(c.max_positions) + " tokens" : std::string();
    const hf::ModelSpec& spec = model.opened().spec;
    int local = 0, window = 0;
    bool band = false;  // ModernBERT's local layers: keys on both sides of the query
    for (int l = 0; l < c.layers; ++l)
        if (model.window(l) > 0) {
            ++local;
            window = model.window(l);
            band = band || (l < static_cast<int>(spec.layers.size()) && !spec.layers[static_cast<std::size_t>(l)].causal);
        }
    if (local > 0)
        text += "; " + std::to_string(local) + " local layers (" + (band ? "band \xC2\xB1" : "window ") + std::to_string(window) + ") and " +
                std::to_string(c.layers - local) + " global";
    // Llama 4: chunked layers, a query temperature on the global NoPE ones
    int chunked = 0, chunk = 0;
    bool tempered = false;
    for (const hf::LayerSpec& layer : spec.layers) {
        if (layer.chunk > 0) ++chunked, chunk = layer.chunk;
        tempered |= layer.temperature;
    }
    if (chunked > 0)
        text += "; " + std::to_string(chunked) + " chunked layers (a query sees its own chunk of " + std::to_string(chunk) + " tokens) and " +
                std::to_string(c.layers - chunked) + " global";
    if (tempered) text += ", queries \xC3\x97 a temperature growing with position on the NoPE layers";
    if (spec.differential && c.heads >= 2)  // DiffLlama: each pair's output is the difference of its two maps
        text += "; differential attention: head p pairs with head p + " + std::to_string(c.heads / 2) +
                " (the second map, \xC3\x97 \xCE\xBB, is taken from the first; " + std::to_string(c.heads / 2) + " outputs a layer)";
    int linear = 0;
    for (const hf::LayerSpec& layer : spec.layers) linear += layer.linear ? 1 : 0;
    if (linear > 0) {  // Qwen3-Next: Gated DeltaNet layers beside gated softmax ones
        const hf::LinearSpec& n = spec.linear;
        text += "; " + std::to_string(linear) + " linear layers (Gated DeltaNet: " + std::to_string(n.value_heads) + " heads on " +
                std::to_string(n.key_heads) + " key heads, a state of " + std::to_string(n.key_dim) + " \xC3\x97 " + std::to_string(n.value_dim) +
                " per head whatever the length, no softmax) and " + std::to_string(c.layers - linear) + " full";
    }
    if (spec.output_gate) text += ", each softmax head's output \xC3\x97 \xCF\x83(its gate) before W_O";
    if (spec.positions == hf::PositionKind::rope) {
        text += "; RoPE";
        if (spec.latent.kv_rank > 0)  // latent attention: the last d_rope of each head's q and k, k's shared
            text += " on the last " + std::to_string(spec.latent.rope_dim) + " of each head's " + std::to_string(spec.head_dim) + " dims";
        else if (spec.rotary_dim > 0 && spec.rotary_dim < spec.head_dim)
            text += " on " + std::to_string(spec.rotary_dim) + " of " + std::to_string(spec.head_dim) + " dims";
        const hf::RopeScaling& scaling = spec.layers.empty() ? hf::RopeScaling{} : spec.layers.front().rope_scaling;
        if (scaling.kind == hf::RopeScalingKind::longrope)
            text += " (LongRoPE: short factors up to " + std::to_string(scaling.original_max_position_embeddings) +
                    " tokens, long ones beyond; cos and sin \xC3\x97 " + attn::format_value(static_cast<float>(scaling.attention_factor), 4) + ")";
        if (scaling.kind == hf::RopeScalingKind::yarn)
            text += " (YaRN \xC3\x97" + attn::format_value(static_cast<float>(scaling.factor), 2) + " beyond " +
                    std::to_string(scaling.original_max_position_embeddings) + " tokens; cos and sin \xC3\x97 " +
                    attn::format_value(static_cast<float>(scaling.attention_factor), 4) + ")";
    }
    if (spec.latent.kv_rank > 0) {  // DeepSeek-V3: what a latent cache keeps beside each head's k and v
        const hf::LatentSpec& l = spec.latent;
        text += "; multi-head latent attention: every head's k and v from a latent of " + std::to_string(l.kv_rank) +
                " and a rotary key of " + std::to_string(l.rope_dim) + " shared by the heads (" + std::to_string(l.kv_rank + l.rope_dim) +
                " numbers a token to cache, against " + std::to_string(c.heads * (l.nope_dim + l.rope_dim + l.v_dim)) + "), d_v " +
                std::to_string(l.v_dim) + (l.q_rank > 0 ? ", queries through a rank-" + std::to_string(l.q_rank) + " path" : "");
    }
    if (spec.tensors == hf::TensorLayout::gpt_oss) text += ", the experts read from fused tensors";
    if (spec.tensors == hf::TensorLayout::phi3) text += ", Q, K, V and gate, up read from fused tensors";
    std::string nope;
    for (int l = 0; l < static_cast<int>(spec.layers.size()); ++l)
        if (!spec.layers[static_cast<size_t>(l)].rope) nope += (nope.empty() ? "" : ", ") + std::to_string(l + 1);
    if (spec.positions == hf::PositionKind::rope && !nope.empty()) text += ", NoPE (no rotation) on layer" + std::string(nope.find(',') != std::string::npos ? "s " : " ") + nope;
    if (spec.qk_norm) text += spec.qk_norm_whole ? ", QK-norm over all heads at once" : ", QK-norm";
    if (!spec.layers.empty() && spec.layers.front().qk_norm) text += ", QK-norm without a weight on the RoPE layers";
    if (spec.attn_logit_softcap > 0) text += ", scores soft-capped at " + std::to_string(static_cast<int>(spec.attn_logit_softcap));
    if (spec.sinks) text += ", a learned sink per head";
    if (spec.norm.kind == hf::NormKind::rms_norm) text += spec.norm.one_plus_weight ? ", RMSNorm (1 + \xCE\xB3)" : ", RMSNorm";
    std::string mixture;  // the layers whose MLP is a mixture of experts, from 1
    int mixtures = 0;
    for (int l = 0; l < static_cast<int>(spec.layers.size()); ++l)
        if (spec.layers[static_cast<size_t>(l)].moe) mixture += (mixtures++ == 0 ? "" : ", ") + std::to_string(l + 1);
    if (mixtures > 0) {
        const bool all = mixtures == c.layers;
        const std::string how = spec.experts.top_k_then_softmax ? ", softmax over their logits only"
                                : spec.experts.top_k_then_sigmoid ? ", the top logits, each kept expert weighed by its own \xCF\x83, scaling what it reads"
                                : spec.experts.sigmoid_grouped
                                    ? ", σ scores, the best " + std::to_string(spec.experts.top_groups) + " of " +
                                          std::to_string(spec.experts.groups) + " groups first, weights × " +
                                          attn::format_value(static_cast<float>(spec.experts.routed_scale), 3)
                                : spec.experts.normalize_top_k ? ", renormalised" : "";
        text += ", a mixture of " + std::to_string(spec.experts.experts) + " experts in place of the MLP (" +
                std::to_string(spec.experts.experts_per_token) + " per token" + how + ") " +
                (all ? std::string("on every layer") : (mixtures > 1 ? "on layers " : "on layer ") + mixture);
        if (spec.experts.shared_d_ff > 0)
            text += std::string(", beside them a shared expert on every token") + (spec.experts.shared_gate ? " scaled by its gate \xCF\x83(x\xC2\xB7g)" : " (no gate)");
        if (!all && spec.mlp == hf::MlpKind::gated) text += ", a gated MLP on the others";
    } else if (spec.mlp == hf::MlpKind::gated) {
        text += ", gated MLP";
    }
    if (spec.layout == hf::BlockLayout::parallel_residual) text += ", parallel residual";
    if (spec.layout == hf::BlockLayout::sandwich) text += ", sandwich norms";
    if (spec.layout == hf::BlockLayout::post_norm) text += ", bidirectional, post-norm";
    if (spec.layout == hf::BlockLayout::after_sublayers) text += ", norms after each sublayer only";
    return text;
}

namespace {

// NaN or ±∞ reached the prediction (model_pass.hpp: where it arose): a red mark on the line,
// as a matrix's title gets one, its tooltip saying where.
void draw_non_finite_mark(PanelContext state, const NonFiniteOrigin& non_finite, const char* whose) {
    if (!non_finite.any()) return;
    const char* mark = " NaN/\xE2\x88\x9E ";
    ImGui::SameLine();
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const ImVec2 size(ImGui::CalcTextSize(mark).x, ImGui::GetTextLineHeight() + 2.0f);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->AddRectFilled(at, ImVec2(at.x + size.x, at.y + size.y), IM_COL32(150, 40, 30, 255), 3.0f);
    draw->AddText(ImVec2(at.x, at.y + 1.0f), IM_COL32(255, 235, 230, 255), mark);
    ImGui::Dummy(size);
    const std::string where = "NaN or \xC2\xB1\xE2\x88\x9E reached " + std::string(whose) + " probabilities, first in " +
                              non_finite.sentence() + ". The ranking below means nothing.";
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 32.0f);
        ImGui::TextWrapped("%s", where.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    record_item(state, "model.top5_non_finite", where);
}

// The top tokens on the current line, best first; no probability shown as a number after
// NaN or ±∞ reached them. Returns them as "token=probability …" for the test record.
std::string draw_top_tokens(const std::vector<TokenProbability>& top, bool non_finite) {
    std::string record;
    for (const TokenProbability& t : top) {
        ImGui::SameLine();
        // Below 0.1 % a percentage with one decimal would read 0.0 %: the probability itself, in
        // short scientific notation.
        // An id the vocabulary does not use (a padding row of wte) has no text: its id instead.
        const std::string token = t.token.empty() ? "#" + std::to_string(t.id) : t.token;
        char p[32];
        if (non_finite) {
            ImGui::TextDisabled("  %s", token.c_str());
            ImGui::SameLine(0.0f, 4.0f);
            ImGui::TextColored(ImVec4(1.0f, 0.43f, 0.39f, 1.0f), "NaN/\xE2\x88\x9E");
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("id %d: no probability (see the red mark)", t.id);
            std::snprintf(p, sizeof p, "NaN/\xE2\x88\x9E");
        } else {
            if (t.probability >= 1e-3f) ImGui::Text("  %s %.1f%%", token.c_str(), 100.0 * t.probability);
            else ImGui::Text("  %s %.1e", token.c_str(), static_cast<double>(t.probability));
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("id %d, probability %.6f", t.id, static_cast<double>(t.probability));
            std::snprintf(p, sizeof p, "%.4f", static_cast<double>(t.probability));
        }
        record += (record.empty() ? "" : " ") + t.token + "=" + p;
    }
    return record;
}

// The sentence box, the tokens as chips, the top 5 next tokens and the ablated heads; false
// (nothing more to draw) when the sentence has no pass.
bool draw_sentence_and_prediction(PanelContext state, ModelViewState& m) {
    const float scale = state.fonts.scale;
    // The sentence, re-tokenised by GPT-2's tokenizer when Enter is pressed or the box is left.
    ImGui::SetNextItemWidth(-1.0f);
    input_line("##model.sentence", m.sentence);
    record_item(state, "model.sentence", m.sentence);
    ImGui::TextDisabled("Sentences from the articles:");
    for (const std::string& s : article_sentences()) {
        ImGui::SameLine();
        const std::string label = s.size() > 28 ? s.substr(0, 26) + "\xE2\x80\xA6" : s;
        // On the next line when this one has no room left for the whole button.
        if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize(label.c_str()).x + 2.0f * ImGui::GetStyle().FramePadding.x)
            ImGui::NewLine();
        if (ImGui::SmallButton((label + "##pick" + s).c_str())) m.sentence = s;
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", s.c_str());
        record_item(state, "model.article_sentence", label);
    }
    const ModelPass& pass = m.pass;
    if (!pass.ok) {
        ImGui::TextWrapped("No pass to show: see the status area.");
        return false;
    }
    draw_recompute_under_way(state, m);

    // The tokens as chips: the readable token, its id below. A long sentence's chips scroll in a
    // box of four rows, so that the maps keep their room.
    const float chip_row = ImGui::GetFrameHeightWithSpacing() + ImGui::GetTextLineHeight();
    // The text: the sentence's tokens, then those the model wrote after it (lit), the newest
    // possibly not in the pass yet.
    const std::vector<int> text_ids = written_text_ids(m);
    const size_t sentence_tokens = static_cast<size_t>(m.write.sentence_length);
    const bool boxed = text_ids.size() > 40;
    if (boxed) ImGui::BeginChild("model.chips", ImVec2(0.0f, 4.0f * chip_row + ImGui::GetStyle().WindowPadding.y), false);
    std::string chips;
    for (size_t i = 0; i < text_ids.size(); ++i) {
        if (i > 0) ImGui::SameLine();
        if (ImGui::GetContentRegionAvail().x < 60.0f * scale) ImGui::NewLine();
        ImGui::BeginGroup();
        ImGui::PushStyleVar(ImGuiStyleVar_FrameRounding, 6.0f);
        const bool written = i >= sentence_tokens;
        if (written) ImGui::PushStyleColor(ImGuiCol_Button, i + 1 == text_ids.size() ? IM_COL32(200, 140, 30, 255) : IM_COL32(120, 90, 40, 255));
        // The token drawn over a button of its size: a label would hide what follows a "##"
        // (WordPiece's "##ing"), which ImGui reads as the start of the button's id.
        const std::string token_text = text_token(m, static_cast<int>(i));
        const char* token = token_text.c_str();
        const ImVec2 padding = ImGui::GetStyle().FramePadding;
        const ImVec2 text = ImGui::CalcTextSize(token);
        const ImVec2 at = ImGui::GetCursorScreenPos();
        ImGui::Button(("##chip" + std::to_string(i)).c_str(), ImVec2(text.x + 2.0f * padding.x, text.y + 2.0f * padding.y));
        ImGui::GetWindowDrawList()->AddText(ImVec2(at.x + padding.x, at.y + padding.y), ImGui::GetColorU32(ImGuiCol_Text), token);
        if (written) ImGui::PopStyleColor();
        ImGui::PopStyleVar();
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("token %zu: id %d, \"%s\" in the vocabulary (\xE2\x90\xA3 is a leading space, written \xC4\xA0 or \xE2\x96\x81 there)%s",
                              i + 1, text_ids[i], m.model->vocabulary_token(text_ids[i]).c_str(), written ? "\nwritten by the model" : "");
        ImGui::PushFont(state.fonts.mono_small);
        ImGui::TextDisabled("%d", text_ids[i]);
        ImGui::PopFont();
        ImGui::EndGroup();
        chips += (i ? " " : "") + token_text + "/" + std::to_string(text_ids[i]) + (written ? "*" : "");
    }
    record_item(state, "model.tokens", chips);
    if (boxed) ImGui::EndChild();

    // The prediction: the next token's top 5, or (BERT) each [MASK]'s.
    const NonFiniteOrigin& non_finite = pass.non_finite;
    if (!m.model->masked_lm()) {
        draw_write_control(state, m);
        const int beyond = written_beyond_pass(m);
        if (beyond > 0) ImGui::TextUnformatted(("Next token after token " + std::to_string(pass.tokens.size()) + " (the pass of the text before the last " +
                                                std::to_string(beyond) + " written; the Write tab shows the newest):").c_str());
        else ImGui::TextUnformatted("Next token:");
        draw_non_finite_mark(state, non_finite, "the next token's");
        record_item(state, "model.top5", draw_top_tokens(pass.next_token_top5, non_finite.any()));
    } else if (pass.masked_predictions.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("BERT fills in masked words: write [MASK] in the sentence, and the model view lists the 5 most probable "
                           "tokens for each, read from every token on both sides.");
        ImGui::PopStyleColor();
        record_item(state, "model.masked", "none");
    } else {
        draw_non_finite_mark(state, non_finite, "the masked tokens'");
        for (const MaskedPrediction& p : pass.masked_predictions) {
            ImGui::Text("[MASK] at token %d:", p.position + 1);
            record_item(state, ("model.masked." + std::to_string(p.position + 1)).c_str(), draw_top_tokens(p.top, non_finite.any()));
        }
    }
    if (const int experts = static_cast<int>(pass.ablated.experts.size()); experts > 0) {
        std::string which;
        for (const stack::ExpertId& id : pass.ablated.experts)
            which += (which.empty() ? "" : ", ") + std::to_string(id.expert + 1) + " of layer " + std::to_string(id.layer + 1);
        const std::string text = (experts == 1 ? "expert " : "experts ") + which + " ablated (Routing tab): the prediction is the model's without " +
                                 (experts == 1 ? "its" : "their") + " outputs, the routing unchanged";
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 170, 90, 255));
        ImGui::AlignTextToFramePadding();
        ImGui::TextWrapped("%s", text.c_str());
        ImGui::PopStyleColor();
        record_item(state, "model.ablated_experts", text);
        if (ImGui::SmallButton("Restore all experts")) m.restore_all_experts = true;
        record_item(state, "model.restore_experts", "");
    }
    const int ablated = static_cast<int>(pass.ablated.heads.size());
    if (ablated > 0) {
        const std::string text = std::to_string(ablated) + (ablated == 1 ? " head ablated" : " heads ablated") +
                                 " (crossed out below): the prediction is the model's without " + (ablated == 1 ? "it" : "them");
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 170, 90, 255));
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(text.c_str());
        ImGui::PopStyleColor();
        record_item(state, "model.ablated", text);
        ImGui::SameLine();
        if (ImGui::SmallButton("Restore all heads")) m.restore_all_heads = true;
        record_item(state, "model.restore_heads", "");
    } else {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("Right-click a map to ablate its head (its rows of W_O zeroed: it adds nothing); right-click again to restore it.");
        ImGui::PopStyleColor();
        record_item(state, "model.ablated", "0 heads ablated");
    }
    ImGui::TextDisabled("last recompute %.0f ms%s", m.forward_ms,
                        m.layer >= 0 ? (", layer " + std::to_string(m.layer + 1) + " open in the pipeline: edits there recompute the layers after it").c_str() : "");
    return true;
}

}  // namespace

void draw_model_view(MapContext state, ModelViewState& m, HeatmapTextures& textures) {
    if (!m.open || !m.model) return;
    m.compare.shown = false;
    m.heads.lens_shown = false;
    ImGui::TextUnformatted((m.model->family() + ": " + m.model->folder()).c_str());
    ImGui::SameLine();
    const std::string shape = model_shape_text(*m.model);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", shape.c_str());
    ImGui::PopStyleColor();
    record_item(state, "model.shape", shape);
    if (!draw_sentence_and_prediction(state, m)) return;
    ImGui::Separator();
    if (ImGui::BeginTabBar("model.tabs")) {
        const bool grid = ImGui::BeginTabItem("Layers \xC3\x97 heads");
        record_item(state, "model.tab.grid", "");
        if (grid) {
            draw_grid(state, m);
            ImGui::EndTabItem();
        }
        // A tab of what each head does: selected when asked for (a test hook, a session).
        const auto heads_tab = [&](const char* label, const char* id, HeadsTab tab, void (*draw)(PanelContext, ModelViewState&)) {
            const bool open = ImGui::BeginTabItem(label, nullptr, m.heads.select == tab ? ImGuiTabItemFlags_SetSelected : 0);
            record_item(state, id, "");
            if (!open) return;
            draw(state, m);
            ImGui::EndTabItem();
        };
        if (!m.model->masked_lm()) {
            const bool write = ImGui::BeginTabItem("Write", nullptr, m.write.select ? ImGuiTabItemFlags_SetSelected : 0);
            record_item(state, "model.tab.write", "");
            m.write.select = false;
            if (write) {
                draw_write_tab(state, m);
                ImGui::EndTabItem();
            }
        }
        if (!mixture_layers(m.pass).empty()) {
            const bool routing = ImGui::BeginTabItem("Routing", nullptr, m.routing.select ? ImGuiTabItemFlags_SetSelected : 0);
            record_item(state, "model.tab.routing", "");
            m.routing.select = false;
            if (routing) {
                draw_model_routing(state, m, textures);
                ImGui::EndTabItem();
            }
        }
        heads_tab("Head roles", "model.tab.roles", HeadsTab::Roles, draw_head_roles);
        heads_tab("Logit lens", "model.tab.lens", HeadsTab::Lens, draw_logit_lens);
        heads_tab("Ablation sweep", "model.tab.sweep", HeadsTab::Sweep, draw_ablation_sweep);
        m.heads.select = HeadsTab::None;
        const bool compare = ImGui::BeginTabItem("Compare", nullptr, m.compare.select ? ImGuiTabItemFlags_SetSelected : 0);
        record_item(state, "model.tab.compare", "");
        m.compare.select = false;
        if (compare) {
            m.compare.shown = true;
            draw_model_compare(state, m, textures);
            ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
    }
}

void offer_model(MapContext state, ModelViewState& m, Offers& offers) {
    // A tab beside the pipeline while a model is open: choosing it shows it, again closes it.
    offers.sections.push_back({"View", [state, &m] {
        return std::vector<MenuItem>{{"Model view", "", m.open, m.model != nullptr,
                                      [state, &m] {
                                          m.open = !m.open;
                                          state.requests.push_back(ShowView{m.open ? Pane::Model : Pane::Pipeline, {}, {}});
                                      },
                                      "menu.view.model", "", false}};
    }});
}

// [SECTION] The model view as a view

void ModelView::start(MapContext shared, const cli::Options& options, const TestHooks& hooks) {
    start_model(shared, state, options);  // attnlab --model DIR: the model view open
    // Toggled on the model once it has opened (an opening carries them), else now.
    std::vector<stack::HeadId>& toggles = state.after_opening ? state.after_opening->toggles : state.ablation_toggles;
    for (const auto& [layer, head] : hooks.model_ablate) toggles.push_back({layer - 1, head - 1});
    if (!hooks.model_compare.empty()) {
        state.compare.select = true;
        state.compare.mode = hooks.model_compare == "heads" ? CompareMode::Heads : hooks.model_compare == "models" ? CompareMode::Models : CompareMode::Sentences;
        if (!hooks.model_compare_b.empty()) open_compare_model(state, hooks.model_compare_b);
    }
    if (!hooks.model_write.empty()) {  // N[:T[:P[:K]]]
        float values[4] = {0, 0, 1, 0};
        std::sscanf(hooks.model_write.c_str(), "%f:%f:%f:%f", &values[0], &values[1], &values[2], &values[3]);
        state.write.run_when_open = std::max(1, static_cast<int>(values[0]));
        state.write.run_count = state.write.run_when_open;
        state.write.greedy = values[1] <= 0.0f;
        if (!state.write.greedy) state.write.temperature = values[1];
        state.write.sampler.top_p = std::clamp(values[2], 0.01f, 1.0f);
        state.write.sampler.top_k = std::max(0, static_cast<int>(values[3]));
        state.write.select = hooks.model_tab != "grid";  // grid: the maps growing by the written rows
    }
    if (hooks.model_tab == "routing") {
        state.routing.select = true;
    } else if (!hooks.model_tab.empty() && hooks.model_tab != "grid") {
        state.heads.select = hooks.model_tab == "roles" ? HeadsTab::Roles : hooks.model_tab == "lens" ? HeadsTab::Lens : HeadsTab::Sweep;
        state.heads.run_when_open = true;
    }
}

void ModelView::offer(MapContext shared, Offers& offers) {
    offer_model(shared, state, offers);
    std::vector<Request>* requests = &shared.requests;  // the window's: alive while the offers are
    offers.sections.push_back({"File", [this, requests] {
        return std::vector<MenuItem>{{"Open model\xE2\x80\xA6", "", false, true, [this, requests] {
                                          // The cache is looked at off the window's thread while the popup opens.
                                          state.cached.reset();
                                          if (!state.scanning.running())
                                              state.scanning.start("looking in the Hugging Face cache", [cache = hf::hub_cache_folder()](compute::JobProgress&) {
                                                  return hf::cached_models(cache);
                                              });
                                          AskForPath ask{FileAction::OpenCheckpoint, "Open model (" + hf::family_names() + ")", "gpt2",
                                                         "A checkpoint folder, or the name of a model in the Hugging Face cache (org/name):",
                                                         [this](EditContext c, const std::string& path) { open_model_job(c, state, path); },
                                                         [this](PanelContext c, std::string& path) {
                                                             const bool cached = draw_cached_models(c, state, path);
                                                             return draw_download(c, state, path) || cached;
                                                         },
                                                         [this] {  // the popup's Cancel: a download under way too
                                                             if (state.download) state.download->cancel();
                                                         }};
                                          requests->push_back(std::move(ask));
                                      },
                                      "menu.open_model", "", false}};
    }, 10});
}

void ModelView::update(MapContext shared, HeatmapTextures&) {
    // A download that ended while the popup was not there to show it: said, and the model opened.
    if (!state.in_popup && state.download && state.download->done()) {
        const hf::RepoId repo = state.download->repo();
        const hf::DownloadResult r = state.download->take();
        state.download.reset();
        if (say_download(shared, state, repo, r)) open_model_job(shared, state, r.folder);
    }
    state.in_popup = false;
    update_model_view(shared, state);
}

bool ModelView::busy() const { return model_work_under_way(state) || state.download != nullptr; }

void ModelView::finish_work() {
    finish_model_work(state);
    if (state.download) state.download->wait();
    state.scanning.wait();  // and Open model…'s look at the cache
}

void ModelView::sign(std::string& signature) const {
    signature += "|" + (state.model ? state.model->folder() : std::string()) + "|" + state.computed_sentence + "|" +
                 std::to_string(state.layer);
}

void ModelView::reopen(MapContext shared, const session_file::SessionLoad& load, const std::string& scenario_name) {
    if (!load.attached.model) return;
    // The tab the session showed, not the one a model opening asks for (the model's opening
    // shows it again when it lands).
    const Pane pane = load.view.pane == "model" ? Pane::Model : load.view.pane == "train" ? Pane::Train : Pane::Pipeline;
    restore_model(shared, state, *load.attached.model, scenario_name, pane);
}

}  // namespace attn::ui
