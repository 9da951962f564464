#pragma once
// The classroom's views: the menu bar and shortcuts, files and exports, autosave, lessons and
// the focused stage view, article checks, compare, hand checks. Each panel_*.cpp owns its
// part; this header is their shared surface. No GL in here.
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <imgui.h>

#include "options.hpp"
#include "session_file.hpp"
#include "ui/heatmap.hpp"
#include "ui/menus.hpp"
#include "ui/view.hpp"
#include "ui/view_states.hpp"

namespace attn::ui {

// panel_menu.cpp: the menu bar of the views' offers (menus.hpp), their keys, the notices.
// The menu bar: the menus the views offer, by position (File, Edit, Lessons, View, Export),
// View's first item presenter mode's. The shortcuts: the views' keys, in the order offered.
void draw_menu_bar(PanelContext state, const Offers& offers);
void handle_shortcuts(const Offers& offers);
void draw_notices(const std::vector<Notice>& notices, bool presenter, const LessonState& lesson);  // and the lessons that could not be read
// The lines the status area's notices take, wrapped at `wrap_width` pixels.
int notice_lines(const std::vector<Notice>& notices, bool presenter, const LessonState& lesson, float wrap_width);
void add_notice(PanelContext state, std::string text, bool error, std::string attempt = {});

// panel_files.cpp: File and Export, the path popup, the quit question.
class FilesView final : public View {
public:
    FilesState state;
    // The user's work, what a quit would lose: the window's scenario, or the one a lesson
    // stands in for.
    std::function<const Scenario&()> work;

    void offer(MapContext shared, Offers& offers) override;
    void update(MapContext shared, HeatmapTextures& textures) override;
    // The path popup and the quit question (drawn right after the menu bar).
    void draw_prompts(EditContext shared);
    void ask(AskForPath ask);
    // A session file opened or saved: the title names it, a quit has nothing more to ask.
    void opened(const std::string& path, const Scenario& scenario);
    // A session file opened whose scenario is its model's layer: the file's scenario is the one
    // layer_made gives, once the model is open (a session restored from an autosave is not on
    // disk: it waits for nothing).
    void opened_awaiting_layer(const std::string& path);
    void layer_made(const Scenario& scenario);
    void saved(PanelContext shared, const std::string& path, const Scenario& scenario, const std::string& error);
    // True when the user's work differs from what was last saved or opened and is not an
    // unedited preset. `shown`: the window's scenario (a lesson's counts as the user's own one
    // it stands in for).
    bool has_unsaved_work(const Scenario& shown) const;
    // "Attention Lab — animal-was-tired", "Attention Lab — lesson.json (edited)": what is on
    // screen, from the file opened or saved when its scenario is still the one shown, else the
    // scenario's name; "(edited)" while there is work a quit would ask about.
    std::string title(const Scenario& shown) const;
    // The window's close button or File → Quit: true when the loop may end now; otherwise the
    // Save / Discard / Cancel dialog opens and a later frame confirms (state.quit_confirmed).
    bool request_quit(const Scenario& shown);

private:
    void draw_unsaved_prompt(PanelContext shared);
};

// panel_recovery.cpp: autosave, and the offer to restore what a run that died left.
class Recovery {
public:
    RecoveryState state;
    // `directory` empty: neither. `save` false (screenshots): the autosaves of dead runs are
    // offered, nothing is written. The orphans are looked for before this run's own file exists.
    void start(PanelContext shared, const std::string& directory, std::chrono::milliseconds interval, bool save);
    // Every frame, after the edits were applied: `signature` changes whenever what an autosave
    // holds does; `contents` makes the writer of one, called only when a write starts.
    void tick(PanelContext shared, const std::string& signature, const std::function<autosave::Autosaver::Contents()>& contents);
    void finish();  // a clean exit: this run's autosave goes
    // Orphan `index` read back (null, with notices, when it cannot be read: it is kept aside),
    // for the window to put on screen; then, once it is, `restored`.
    std::optional<session_file::SessionLoad> take(PanelContext shared, size_t index);
    void restored(PanelContext shared);
    void discard(size_t index);
    // The restore question; what was chosen is carried out by the window (it replaces the session).
    enum class Choice { None, Restore, Discard };
    Choice draw_prompt(PanelContext shared);
};

// panel_lesson.cpp
void ensure_lessons_loaded(LessonState& lesson);
bool open_lesson(MapContext state, LessonState& lesson, int index, int step);
bool open_lesson_named(MapContext state, LessonState& lesson, const std::string& file_or_name, int step);
void lesson_next(MapContext state, LessonState& lesson);
void lesson_previous(MapContext state, LessonState& lesson);
void leave_lesson(EditContext state, LessonState& lesson);
const LessonStep* current_step(const LessonState& lesson);
// The Lessons menu, the clicker's keys (→, Space, Page Down; ←, Page Up; Esc leaves) and the
// "lesson mode" note.
void offer_lessons(MapContext state, LessonState& lesson, Offers& offers);
// What the lesson text's buttons ask for; the frame carries it out (it changes the session).
enum class LessonRequest { None, Previous, Next, Leave };
LessonRequest draw_lesson_text(PanelContext state, const LessonState& lesson);
// The stage with its inputs, large (lesson mode, presenter mode).
void draw_stage_view(MapContext state, LessonState& lesson, HeatmapTextures& textures, Stage stage);
void draw_scaling_plot(PanelContext state, LessonState& lesson, ImVec2 avail);

class LessonView final : public View {
public:
    LessonState state;
    void start(MapContext shared, const cli::Options& options, const TestHooks& hooks) override;  // --lesson, --step
    void offer(MapContext shared, Offers& offers) override { offer_lessons(shared, state, offers); }
    void keep(session_file::ViewChoices& view, session_file::Attachments& attached) const override;
    void sign(std::string& signature) const override;
    void leave(MapContext shared) override { leave_lesson(shared, state); }
    void show(MapContext shared, const session_file::ViewChoices& view) override;
    const Scenario* stands_in_for() const override { return state.saved ? &state.saved->scenario : nullptr; }
};

// panel_articles.cpp: View → Article checks.
void draw_articles(PanelContext state, ArticlesState& articles);
void offer_articles(ArticlesState& articles, Offers& offers);  // View → Article checks
class ArticlesView final : public View {
public:
    ArticlesState state;
    void start(MapContext, const cli::Options&, const TestHooks& hooks) override { state.open = state.open || hooks.open_articles; }
    void offer(MapContext, Offers& offers) override { offer_articles(state, offers); }
    void draw_floating(MapContext shared, HeatmapTextures&) override { draw_articles(shared, state); }
};

// panel_compare.cpp: View → Compare. prepare_compare runs before anything draws (a new B
// drops the heatmap textures).
void prepare_compare(EditContext state, CompareState& compare, HeatmapTextures& textures);
void draw_compare(MapContext state, CompareState& compare, HeatmapTextures& textures);
void offer_compare(CompareState& compare, Offers& offers);  // View → Compare; Esc closes it
class CompareView final : public View {
public:
    CompareState state;
    void start(MapContext shared, const cli::Options& options, const TestHooks& hooks) override;
    void offer(MapContext, Offers& offers) override { offer_compare(state, offers); }
    void update(MapContext shared, HeatmapTextures& textures) override { prepare_compare(shared, state, textures); }
    void draw_floating(MapContext shared, HeatmapTextures& textures) override { draw_compare(shared, state, textures); }
};

// panel_hand_check.cpp: right-click a cell → "Check my value".
void handle_hand_check_click(MapContext state, HandCheckState& check);
void draw_hand_check(EditContext state, HandCheckState& check);
void offer_hand_check(HandCheckState& check, Offers& offers);  // Esc closes it
class HandCheckView final : public View {
public:
    HandCheckState state;
    void offer(MapContext, Offers& offers) override { offer_hand_check(state, offers); }
    void draw_floating(MapContext shared, HeatmapTextures&) override {
        handle_hand_check_click(shared, state);
        draw_hand_check(shared, state);
    }
};

}  // namespace attn::ui
