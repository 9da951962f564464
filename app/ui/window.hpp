#pragma once
// The window: the small shared context (context.hpp) and the views (view.hpp), each owning
// its state. It calls every view at the same points of a frame (offer, update, draw the floating
// windows), places the main area's views (the side bar, the token bar, the pipeline or a
// lesson's stage, the model view and the Train panel as tabs, the status area), and carries out
// what spans views: the requests the views queued, a session opened, saved or restored from an
// autosave. gui.cpp runs it between ImGui::NewFrame and ImGui::Render; the UI tests run it with
// no window at all. No GL in here.
#include <chrono>
#include <string>
#include <vector>

#include "options.hpp"
#include "session_file.hpp"
#include "ui/classroom.hpp"
#include "ui/context.hpp"
#include "ui/panel_model.hpp"
#include "ui/panel_train.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

class Window {
public:
    Context shared;
    TokensView tokens;
    PipelineView pipeline;
    FilesView files;
    HandCheckView hand_check;
    ArticlesView articles;
    CompareView compare;
    LessonView lesson;
    TrainView train;
    ModelView model;
    Recovery recovery;

    Window();
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;

    // The fonts, normal and presenter mode's (F5); the frame's are one of them.
    void set_fonts(const UiFonts& normal, const UiFonts& presenter);
    // Once, before the first frame, on the scenario already in shared.session: a session named
    // by --scenario opens as File → Open opens it (its view, its lesson step, then its models);
    // --lesson, --step and --presenter go on top, and each view starts what the command line
    // asks of it (--model).
    void start(const cli::Options& options, const session_file::SessionLoad& session = {});

    // One frame (between ImGui::NewFrame and ImGui::Render), and after ImGui::Render: what this
    // frame recorded (hover, heatmap and widget layout) becomes what the next frame reads.
    void draw_frame(HeatmapTextures& textures);
    void end_frame();

    // Session files: what one keeps of the view and of the models beside the scenario, a file
    // opened (a session or a plain scenario file; one that cannot be read leaves everything as
    // it was, with a notice per problem), a session written. Each is read or written by a job
    // off the window's thread and lands in a later frame (land_files); a file opened while
    // another is still being read replaces it.
    session_file::ViewChoices view_choices() const;
    session_file::Attachments attachments() const;
    void open_file(const std::string& path);
    void save_session(const std::string& path);
    // A session's scenario and view replace the work (as one undo step; its models are opened
    // by apply_attachments).
    void apply_session(std::optional<Scenario> scenario, const session_file::ViewChoices& view);

    // Autosave, and the autosaves of runs that died (panel_recovery.cpp).
    void start_autosave(const std::string& directory, std::chrono::milliseconds interval, bool save) {
        recovery.start(shared, directory, interval, save);
    }
    void autosave_tick();  // every frame, after the edits were applied
    void finish_autosave() { recovery.finish(); }
    bool restore_orphan(size_t index);  // false (with a notice) when it cannot be read
    void discard_orphan(size_t index) { recovery.discard(index); }

    std::string title() const { return files.title(shared.session.scenario); }
    bool request_quit() { return files.request_quit(shared.session.scenario); }
    // Work under way off the window's thread that will change the picture, and waiting for all
    // of it (screenshots, tests).
    bool busy() const;
    void finish_work();

private:
    struct FileRead {
        std::string path;
        session_file::SessionLoad load;
    };
    struct FileWritten {
        std::string path;
        Scenario scenario;  // as written: the document's baseline once it is on disk
        std::string error;
    };
    compute::Job<FileRead> reading_;
    compute::Job<FileWritten> writing_;
    void land_files();  // a file read or written by now: opened, or said

    std::vector<View*> views_;  // in the order they offer (their keys run in it), update and draw
    UiFonts normal_fonts_, presenter_fonts_;

    void offer(Offers& offers);  // the window's own: Edit (undo, redo), View → Presenter mode, F5
    Pane draw_pane_tabs();
    void carry_out_requests();
    void carry_out_leading_views();        // the ShowView requests asked before any other kind
    void show_view(const ShowView& show);  // the tab, the head, the pipeline's step asked for
    // The head shown, presenter mode, the tab, the pipeline's step; `layer_awaited`: the
    // session's scenario is a model's layer the model view makes later (its step waits for it).
    void apply_view(const session_file::ViewChoices& view, bool layer_awaited);
    std::optional<attn::Column> step_awaited_;
    // A session's models opened again, each failure a notice.
    void apply_attachments(const session_file::SessionLoad& load, const std::string& scenario_name);
    std::string signature() const;  // changes whenever what an autosave would hold does
};

}  // namespace attn::ui
