// The window: its views called at the same points of each frame, the main area laid out
// (the menu bar, the side bar, the tokens, the main area's tabs — the pipeline or a lesson's
// stage, the model view, the Train panel — the status area, then the floating windows:
// Compare, Check my value, article checks), and what spans views: the requests, sessions
// opened, saved and restored.
//
// Index
// [SECTION] Start-up
// [SECTION] The frame
// [SECTION] Requests and sessions
// [SECTION] Autosave
#define GLFW_INCLUDE_NONE  // key codes only: the GLFW backend indexes io.KeysDown by GLFW key
#include <GLFW/glfw3.h>

#include "ui/window.hpp"

#include <algorithm>
#include <utility>

#include <imgui.h>

#include "attention/serialize.hpp"
#include "io/json_write.hpp"

namespace attn::ui {

// [SECTION] Start-up

Window::Window() : views_{&files, &hand_check, &articles, &compare, &lesson, &train, &model} {
    files.work = [this]() -> const Scenario& {
        for (const View* view : views_)
            if (const Scenario* own = view->stands_in_for()) return *own;
        return shared.session.scenario;
    };
}

void Window::set_fonts(const UiFonts& normal, const UiFonts& presenter) {
    normal_fonts_ = normal;
    presenter_fonts_ = presenter;
    shared.fonts = shared.presenter ? presenter_fonts_ : normal_fonts_;
}

void Window::start(const cli::Options& options, const session_file::SessionLoad& session) {
    session_file::ViewChoices view = session.view;
    if (!options.lesson.empty()) view.lesson.clear();  // --lesson replaces the session's
    // A lesson step queues its own scenario; the session's (which may have edits) replaces it.
    Scenario saved = shared.session.scenario;
    for (View* v : views_) v->show(shared, view);
    if (!shared.session.pending.empty()) shared.session.push(edits::ReplaceScenario{std::move(saved)});
    apply_view(view, session.scenario_in_model);
    shared.presenter = options.presenter || view.presenter;
    const TestHooks hooks = test_hooks();
    for (View* v : views_) v->start(shared, options, hooks);
    apply_attachments(session, shared.session.scenario.name);  // a session file's models, if it kept any
}

// [SECTION] The frame

void Window::offer(Offers& offers) {
    Context* s = &shared;
    offers.sections.push_back({"Edit", [s] {
        const History& history = s->session.history;
        const std::string undo = history.can_undo() && !history.undo_action().empty() ? "Undo " + history.undo_action() : "Undo";
        const std::string redo = history.can_redo() && !history.redo_action().empty() ? "Redo " + history.redo_action() : "Redo";
        return std::vector<MenuItem>{
            {undo, "Ctrl+Z", false, history.can_undo(), [s] { s->session.request_undo(); }, "menu.undo", "", false},
            {redo, "Ctrl+Y", false, history.can_redo(), [s] { s->session.request_redo(); }, "menu.redo", "", false}};
    }});
    offers.sections.push_back({"View", [s] {
        return std::vector<MenuItem>{{"Presenter mode", "F5", s->presenter, true, [s] { s->presenter = !s->presenter; }, "", "", false}};
    }, 0});
    offers.keys.push_back([s] {
        const ImGuiIO& io = ImGui::GetIO();
        if (io.KeyCtrl && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Z), false)) {
            if (io.KeyShift) s->session.request_redo();
            else s->session.request_undo();
        }
        if (io.KeyCtrl && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Y), false)) s->session.request_redo();
        if (ImGui::IsKeyPressed(GLFW_KEY_F5, false)) s->presenter = !s->presenter;
        return false;
    });
    if (shared.presenter) offers.notes.push_back("  presenter (F5 leaves)");
}

// The tab bar over the main area, while a model or the Train panel is open; the tab shown.
// A tab asked for (show_pane) is selected; a tab closed with its × closes its view.
Pane Window::draw_pane_tabs() {
    ViewOptions& view = shared.view;
    const bool model_tab = model.state.open && model.state.model != nullptr;
    const bool train_tab = train.state.open;
    // A view just opened comes to the front, unless a tab was asked for by name.
    if (!view.pane_requested && model_tab && !view.had_model_tab) show_pane(view, Pane::Model);
    if (!view.pane_requested && train_tab && !view.had_train_tab) show_pane(view, Pane::Train);
    view.had_model_tab = model_tab;
    view.had_train_tab = train_tab;
    if ((view.pane == Pane::Model && !model_tab) || (view.pane == Pane::Train && !train_tab)) view.pane = Pane::Pipeline;
    if (!model_tab && !train_tab) {
        view.pane_requested = false;
        return Pane::Pipeline;
    }
    Pane shown = view.pane;
    if (ImGui::BeginTabBar("panes")) {
        const auto tab = [&](const char* label, const char* id, Pane pane, bool* open) {
            const ImGuiTabItemFlags flags = view.pane_requested && view.pane == pane ? ImGuiTabItemFlags_SetSelected : 0;
            const bool selected = ImGui::BeginTabItem(label, open, flags);
            record_item(shared, id, label);
            if (!selected) return;
            shown = pane;
            ImGui::EndTabItem();
        };
        tab("Pipeline", "pane.pipeline", Pane::Pipeline, nullptr);
        if (model_tab) tab("Model view", "pane.model", Pane::Model, &model.state.open);
        if (train_tab) tab("Train", "pane.train", Pane::Train, &train.state.open);
        ImGui::EndTabBar();
    }
    // A tab asked for is selected from the next frame on: until then it is what the view keeps.
    if (view.pane_requested) shown = view.pane;
    else view.pane = shown;
    view.pane_requested = false;
    return shown;
}

void Window::draw_frame(HeatmapTextures& textures) {
    textures.begin_frame(shared.screenshot_mode ? 0 : HeatmapTextures::kTexelsPerFrame);  // a picture waits for every texture
    // What each view offers the menu bar and the keyboard (menus.hpp); the keys go in this order.
    Offers offers;
    offer(offers);
    for (View* v : views_) v->offer(shared, offers);
    handle_shortcuts(offers);  // the keys of the last input: undo, files, F5, then the views' (the lesson clicker)
    land_files();              // a session read by now replaces the work before the views update
    if (normal_fonts_.ui != nullptr) shared.fonts = shared.presenter ? presenter_fonts_ : normal_fonts_;
    // Before anything draws: Compare's new B (it drops textures), a model's or a trained
    // layer's edit (the layers after it), the training's newest progress.
    // The compute layer runs Compare's B while Compare is open (no view reaches its settings).
    shared.compute.settings.compare_b = compare.state.open ? std::optional<Toggles>(compare.state.toggles_b) : std::nullopt;
    for (View* v : views_) v->update(shared, textures);
    const bool presenter = shared.presenter;
    ImGui::PushFont(shared.fonts.ui);
    int colours = 0;
    if (presenter) {  // high contrast for a projector: black ground, white text
        ImGui::PushStyleColor(ImGuiCol_WindowBg, IM_COL32(0, 0, 0, 255));
        ImGui::PushStyleColor(ImGuiCol_ChildBg, IM_COL32(0, 0, 0, 255));
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 255, 255, 255));
        ImGui::PushStyleColor(ImGuiCol_TextDisabled, IM_COL32(200, 200, 200, 255));
        ImGui::PushStyleColor(ImGuiCol_MenuBarBg, IM_COL32(20, 20, 24, 255));
        colours = 5;
    }
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(io.DisplaySize);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0.0f);
    ImGui::Begin("Attention Lab", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                     ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_MenuBar);
    ImGui::PopStyleVar();
    draw_menu_bar(shared, offers);
    files.draw_prompts(shared);
    const float scale = shared.fonts.scale;
    const LessonStep* step = current_step(lesson.state);
    const edits::Session& session = shared.session;
    const size_t messages = session.errors.size() + (session.errors.empty() ? session.trace.warnings.size() : 0) +
                            (shared.compute.status.notice.empty() ? 0 : 1);  // the GPU fallback notice
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const float status_h =
        line * static_cast<float>(1 + std::min<size_t>(messages, 4) +
                                  static_cast<size_t>(notice_lines(shared.notices, shared.presenter, lesson.state, ImGui::GetContentRegionAvail().x -
                                                                                             (presenter ? 0.0f : 300.0f * scale)))) + 8.0f;
    // The model view in front (its tab, last frame): the side bar and the bar above the tabs
    // are the model's, not the preset's.
    const bool model_in_front = shared.view.pane == Pane::Model && model.state.open && model.state.model != nullptr;
    if (!presenter) {
        ImGui::BeginChild("controls", ImVec2(290.0f * scale, 0), true);
        if (model_in_front) draw_model_sidebar(shared, model.state);
        else draw_controls(shared);
        ImGui::EndChild();
        ImGui::SameLine();
    }
    ImGui::BeginGroup();
    shared.view.x_meaning = model.state.layer >= 0 ? model_layer_input(model.state) : trained_layer_input(train.state);
    if (!presenter) {
        if (model_in_front) draw_model_bar(shared, model.state);
        else if (model.state.layer >= 0) draw_model_sentence(shared, model.state);  // the model's sentence is edited in the model view
        else if (trained_layer_open(train.state)) draw_trained_probe(shared, train.state);
        else tokens.draw(shared);
        ImGui::Separator();
    }
    if (step != nullptr) {
        switch (draw_lesson_text(shared, lesson.state)) {  // carried out after this frame's lesson text
            case LessonRequest::Previous: lesson_previous(shared, lesson.state); break;
            case LessonRequest::Next: lesson_next(shared, lesson.state); break;
            case LessonRequest::Leave: leave_lesson(shared, lesson.state); break;
            case LessonRequest::None: break;
        }
        ImGui::Separator();
    }
    // The main area: the pipeline, and beside it as tabs the model view and the Train panel
    // while they are open. Tabs keep their place: none can be lost off the screen, fold away or
    // hide another.
    carry_out_leading_views();  // a tab asked for by a key, a menu, a model landed or a lesson's step: selected now
    const Pane shown = draw_pane_tabs();
    if (shown == Pane::Model) {
        ImGui::BeginChild("model", ImVec2(0, -status_h), false);
        draw_model_view(shared, model.state, textures);
        ImGui::EndChild();
    } else if (shown == Pane::Train) {
        ImGui::BeginChild("train", ImVec2(0, -status_h), false);
        draw_train(shared, train.state, textures);
        ImGui::EndChild();
    } else {
        ImGui::BeginChild("pipeline", ImVec2(0, -status_h), false, ImGuiWindowFlags_HorizontalScrollbar);
        // Lesson mode: the step's stage and its inputs; presenter mode in free mode: weights and output.
        if (step != nullptr) draw_stage_view(shared, lesson.state, textures, step->stage);
        else if (presenter) draw_stage_view(shared, lesson.state, textures, Stage::Output);
        else pipeline.draw(shared, textures);
        ImGui::EndChild();
    }
    ImGui::BeginChild("status", ImVec2(0, 0), false);
    draw_status(shared);
    draw_notices(shared.notices, shared.presenter, lesson.state);
    ImGui::EndChild();
    ImGui::EndGroup();
    ImGui::End();
    for (View* v : views_) v->draw_floating(shared, textures);
    carry_out_requests();
    switch (recovery.draw_prompt(shared)) {
        case Recovery::Choice::Restore: restore_orphan(0); break;
        case Recovery::Choice::Discard: discard_orphan(0); break;
        case Recovery::Choice::None: break;
    }
    ImGui::PopStyleColor(colours);
    ImGui::PopFont();
}

void Window::end_frame() {
    shared.hover = std::move(shared.hover_next);
    shared.hover_next = HoverState{};
    shared.layout.swap(shared.layout_next);
    shared.layout_next.clear();
    shared.widgets.swap(shared.widgets_next);
    shared.widgets_next.clear();
}

bool Window::busy() const {
    return reading_.running() || writing_.running() || std::any_of(views_.begin(), views_.end(), [](const View* v) { return v->busy(); });
}

// The files first: a session opened starts its models' openings, which the views then wait for.
void Window::finish_work() {
    reading_.wait();
    writing_.wait();
    land_files();
    for (View* v : views_) v->finish_work();
}

// [SECTION] Requests and sessions

// What the views asked this frame that spans views (context.hpp), in the order asked.
void Window::carry_out_requests() {
    std::vector<Request> requests = std::exchange(shared.requests, {});
    for (Request& request : requests) {
        if (ShowInPipeline* show = std::get_if<ShowInPipeline>(&request)) {
            session_file::ViewChoices view = view_choices();
            view.lesson.clear();
            view.step = 0;
            view.all_heads = false;
            view.shown_head = show->head;
            view.pane = "pipeline";
            if (show->outlined_cells) {
                shared.view.outlined_scenario = show->scenario.name;
                shared.view.outlined_head = show->head;
                shared.view.outlined_cells = std::move(*show->outlined_cells);
            }
            apply_session(std::move(show->scenario), view);
            if (show->at_weights) {
                pipeline.state.jump_to = attn::Column::Softmax;
                pipeline.state.focus_step.reset();  // the weights drawn large
            }
        } else if (AskForPath* ask = std::get_if<AskForPath>(&request)) {
            files.ask(std::move(*ask));
        } else if (const OpenSession* open = std::get_if<OpenSession>(&request)) {
            open_file(open->path);
        } else if (const SaveSession* save = std::get_if<SaveSession>(&request)) {
            save_session(save->path);
        } else if (const SessionLayerMade* made = std::get_if<SessionLayerMade>(&request)) {
            files.layer_made(made->scenario);
            if (step_awaited_) pipeline.state.jump_to = std::exchange(step_awaited_, std::nullopt);
        } else if (const ShowView* show = std::get_if<ShowView>(&request)) {
            show_view(*show);
        }
    }
}

void Window::carry_out_leading_views() {
    std::vector<Request>& requests = shared.requests;
    size_t views = 0;
    for (; views < requests.size() && std::holds_alternative<ShowView>(requests[views]); ++views) show_view(std::get<ShowView>(requests[views]));
    requests.erase(requests.begin(), requests.begin() + static_cast<std::ptrdiff_t>(views));
}

void Window::show_view(const ShowView& show) {
    if (show.pane) show_pane(shared.view, *show.pane);
    if (show.head) {
        shared.view.all_heads = false;
        shared.view.shown_head = *show.head;
    }
    if (show.step) pipeline.state.jump_to = show.step;
}

session_file::ViewChoices Window::view_choices() const {
    session_file::ViewChoices v;
    v.shown_head = shared.view.shown_head;
    v.all_heads = shared.view.all_heads;
    v.presenter = shared.presenter;
    v.pane = shared.view.pane == Pane::Model ? "model" : shared.view.pane == Pane::Train ? "train" : "pipeline";
    // Where the pipeline is scrolled, or will be once it is drawn again (a step asked for while
    // a lesson, presenter mode or another tab hides it, or awaiting a model's layer).
    const std::optional<attn::Column> step = step_awaited_ ? step_awaited_ : pipeline.state.jump_to ? pipeline.state.jump_to : pipeline.state.anchor;
    if (step) v.pipeline_step = column_label(*step);
    if (pipeline.state.focus_step) v.focus_step = column_label(*pipeline.state.focus_step);
    session_file::Attachments unused;
    for (const View* view : views_) view->keep(v, unused);
    return v;
}

session_file::Attachments Window::attachments() const {
    session_file::ViewChoices unused;
    session_file::Attachments a;
    for (const View* view : views_) view->keep(unused, a);
    return a;
}

void Window::apply_session(std::optional<Scenario> scenario, const session_file::ViewChoices& view) {
    for (View* v : views_) v->leave(shared);
    shared.session.restore.reset();  // the session replaces the work, as an undo step (below)
    for (View* v : views_) v->show(shared, view);
    // None: the session's scenario is its model's layer, made once the model is open (the
    // model view pushes it then); until then, or when the model cannot be opened, the
    // pipeline keeps what it showed.
    const bool layer_awaited = !scenario;
    if (scenario) shared.session.push(edits::ReplaceScenario{std::move(*scenario)});
    apply_view(view, layer_awaited);
}

namespace {

Pane pane_named(const std::string& name) { return name == "model" ? Pane::Model : name == "train" ? Pane::Train : Pane::Pipeline; }

}  // namespace

void Window::apply_view(const session_file::ViewChoices& view, bool layer_awaited) {
    // What the views asked of the view before the session (a lesson's step it opened) gives way to it.
    shared.requests.erase(std::remove_if(shared.requests.begin(), shared.requests.end(),
                                         [](const Request& r) { return std::holds_alternative<ShowView>(r); }),
                          shared.requests.end());
    shared.view.shown_head = view.shown_head;
    shared.view.all_heads = view.all_heads;
    shared.presenter = view.presenter;
    pipeline.state.focus_step = column_named(view.focus_step);
    show_pane(shared.view, pane_named(view.pane));
    // The step the pipeline was scrolled to: once the session's scenario runs (a model's layer,
    // once the model view has made it).
    step_awaited_.reset();
    if (const std::optional<attn::Column> step = column_named(view.pipeline_step)) {
        if (layer_awaited) step_awaited_ = step;
        else pipeline.state.jump_to = step;
    }
}

void Window::apply_attachments(const session_file::SessionLoad& load, const std::string& scenario_name) {
    for (const std::string& w : load.warnings) add_notice(shared, "Part of the session was not opened: " + w, true);
    for (View* v : views_) v->reopen(shared, load, scenario_name);
    if (load.attached.model || load.attached.trained) {  // the tab the session showed
        session_file::ViewChoices tab;
        tab.pane = load.view.pane;
        for (View* v : views_) v->show(shared, tab);
        show_pane(shared.view, pane_named(load.view.pane));
    }
}

// A session file, or a plain scenario file (what --export-scenario writes, what students trade),
// read off the window's thread: the work on screen stays until it lands.
void Window::open_file(const std::string& path) {
    reading_.start("reading " + path, [path](compute::JobProgress&) { return FileRead{path, session_file::load_session_or_scenario(path)}; });
}

// The session as it is now, written off the window's thread (its text is made here).
void Window::save_session(const std::string& path) {
    const Scenario& scenario = shared.session.scenario;
    writing_.queue("writing " + path,
                   [path, scenario, text = session_file::session_text(scenario, view_choices(), attachments())](compute::JobProgress&) {
                       FileWritten written{path, scenario, {}};
                       if (!write_file_atomic(path, text, &written.error) && written.error.empty()) written.error = "not written";
                       return written;
                   },
                   compute::UnderWay::finish);
}

void Window::land_files() {
    if (std::optional<FileWritten> written = writing_.take()) files.saved(shared, written->path, written->scenario, written->error);
    std::optional<FileRead> read = reading_.take();
    if (!read) return;
    const std::string& path = read->path;
    session_file::SessionLoad& load = read->load;
    if (!load.scenario && !load.scenario_in_model) {  // the current state is kept
        for (const std::string& e : load.errors) add_notice(shared, "Cannot open " + path + ": " + e, true, "open a file");
        return;
    }
    if (load.scenario) files.opened(path, *load.scenario);
    else files.opened_awaiting_layer(path);
    const std::string name = load.scenario ? load.scenario->name : std::string();
    apply_session(std::move(load.scenario), load.view);
    add_notice(shared, "Opened " + path, false, "open a file");
    apply_attachments(load, name);
}

// [SECTION] Autosave

std::string Window::signature() const {
    std::string s = std::to_string(shared.session.revision) + "|" + std::to_string(shared.view.shown_head) + "|" +
                    (shared.view.all_heads ? "a" : "-") + (shared.presenter ? "p" : "-");
    for (const View* v : views_) v->sign(s);
    return s;
}

void Window::autosave_tick() {
    recovery.tick(shared, signature(), [this]() -> autosave::Autosaver::Contents {
        return [scenario = shared.session.scenario, view = view_choices(), attached = attachments()] {
            return dump_json(session_file::session_to_json(scenario, view, attached));
        };
    });
}

bool Window::restore_orphan(size_t index) {
    std::optional<session_file::SessionLoad> load = recovery.take(shared, index);
    if (!load) return false;
    const std::string name = load->scenario ? load->scenario->name : std::string();
    apply_session(std::move(load->scenario), load->view);
    apply_attachments(*load, name);
    recovery.restored(shared);
    return true;
}

}  // namespace attn::ui
