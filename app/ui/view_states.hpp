#pragma once
// What each view of the window keeps between frames (no function-local statics), one struct
// per view; the view's class (view.hpp) owns it. The model view's and the Train panel's are
// in model_state.hpp and train_state.hpp. No GL in here.
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autosave.hpp"
#include "teaching/articles.hpp"
#include "comparison.hpp"
#include "teaching/lesson.hpp"
#include "ui/context.hpp"

namespace attn::ui {

struct TokenEditor {
    std::string sentence;          // the sentence box (target)
    std::string source_sentence;   // the sentence box (source, cross-attention)
    std::uint64_t synced_generation = ~0ull;  // sentences refreshed from the scenario after this
    int editing = -1;              // chip being renamed
    edits::Side editing_side = edits::Side::Target;
    std::string editing_text;
    bool focus_pending = false;
};

// The pipeline's fitted layout, kept while the cards and the window stay the same, and where
// its steps were drawn.
struct PipelineLayout {
    std::string signature;            // cards, shapes, area and view options it was fitted for
    float cell = 0;
    int variant = 0;                  // which columns lie side by side
    std::vector<size_t> row_starts;   // first column of each row
    float fill_height = 0;            // one row: how tall its slots may be
    float weights_emphasis = 2.0f;    // all heads side by side: how much the weights' cells grow
    float scores_emphasis = 3.0f;     // how much the score maps of a few tokens may grow
    float taught_emphasis = 1.0f;     // the shown head's weights grown into the room left
    // Last frame's steps, each at its top-left corner from the pipeline's start, in pipeline
    // order; and the step at the view's top-left with how far into it the view was (kept in view
    // when another head or layer is shown, or the window resized).
    struct StageMark {
        attn::Column stage;
        float x = 0, y = 0;
    };
    std::vector<StageMark> stage_tops;
    std::optional<attn::Column> anchor;
    float anchor_dx = 0, anchor_dy = 0;
    std::optional<attn::Column> jump;  // a step asked for, scrolled to for jump_frames more frames
    int jump_frames = 0;
    // A step to scroll to once the scenario queued with it has run (a head opened at its weights,
    // a session's step; ShowView::step); then it is `jump`.
    std::optional<attn::Column> jump_to;
    // The step drawn large with its numbers (one head shown): the one last chosen in the step
    // strip; none: the weights, the step each preset teaches.
    std::optional<attn::Column> focus_step;
};

// [SECTION] Classroom: lessons, presenter mode, article checks, files, compare

// Lesson mode: the lessons found in assets/lessons, and the one being taught.
struct LessonState {
    bool loaded = false;                     // the folder was read (once, when first needed)
    std::vector<Lesson> lessons;
    std::vector<std::string> load_errors;    // malformed lesson files: "FILE: line L: ..."
    int active = -1;                         // index into lessons; -1 in free mode
    int step = 0;
    std::vector<SharpnessPoint> sharpness;   // computed when a scaling-plot step opens
    LessonFacts facts;                       // what a trained step computed (its accuracy, ablation, roles)
    bool has_facts = false;
    TrainedLessonModel trained;              // the last trained step's model: the next step training the same way reuses it
    // The user's own scenario and undo history when the lesson was entered: put back on
    // leaving it, so a lesson never costs the user their work.
    std::optional<edits::Session::Restore> saved;
};

// The path popup shared by Save, Open, the exports and the views' own files: what it was
// asked for (context.hpp), and the path as typed.
enum class MatrixFormat { Csv, Markdown, Latex };
struct FilePrompt {
    AskForPath ask;                          // kept once closed: open_requested shows it again
    FileAction action = FileAction::None;    // ask.action while the popup is open; None once it closed
    bool open_requested = false;             // open the popup next frame
    std::string path;
    MatrixFormat format = MatrixFormat::Csv;
    std::string matrix;                      // the matrix an export writes (trace name)
};

struct ArticlesState {
    bool open = false;
    bool computed = false;
    std::vector<Verdict> verdicts;
};

// Compare: configuration B is the current scenario with these toggles on top.
struct CompareState {
    bool open = false;
    Toggles toggles_b;
    std::string matrix = "head0.weights";    // which matrix the three panes show
    std::string shown;                       // the comparison's signature whose textures are loaded
};

// Checking a student's hand-computed value of one cell.
struct HandCheckState {
    // A right click opens the check only once it cannot become a double click (which resets
    // the zoom): the cell waits here for the double-click time.
    struct Pending { std::string matrix; int row = -1, col = -1; double since = 0.0; };
    std::optional<Pending> pending;
    bool ignore_release = false;  // the release that ends a double click
    bool open_requested = false;
    std::string matrix;
    int row = -1, col = -1;
    std::string text;
    bool checked = false;
    HandCheck result;
};

// File and Export: the path popup, the document, the quit question.
struct FilesState {
    FilePrompt prompt;
    std::string png_request;                 // Export → PNG: write a frame to this file
    int png_delay = 0;                       // frames to wait first (the path popup must be gone)
    // What Export → Matrix pre-chooses in its list: the last matrix clicked (a click is a
    // choice; the maps the pointer crosses on its way to the menu are not), else the last
    // hovered. The dialog names the matrix and lets the user pick another before writing.
    std::string clicked_matrix, hovered_matrix;
    // Quitting: the window's close button and File → Quit ask first when the work is not
    // saved (Save / Discard / Cancel). `baseline` is the scenario last saved or opened (or
    // the one the app started with); a scenario that is an unedited preset has nothing to lose.
    std::optional<Scenario> baseline;
    // The session or scenario file last opened or saved, and the name its scenario had then:
    // the window's title names the file while that scenario is on screen.
    std::string document, document_scenario;
    // The file opened keeps its scenario as a model's layer: it is the file's once the model
    // view has made it (layer_made), not the work on screen while the model opens.
    bool awaiting_layer = false;
    bool quit_requested = false;             // File → Quit, or the window's close button
    bool quit_confirmed = false;             // the loop may end now
    bool ask_unsaved = false;                // open the Save / Discard / Cancel dialog
    bool quit_after_save = false;            // the dialog's Save: quit once the save worked
};

// Autosave and the offer to restore what a run that died left behind (panel_recovery.cpp).
struct RecoveryState {
    std::unique_ptr<autosave::Autosaver> saver;   // null: autosave off (--no-autosave, screenshots)
    std::vector<autosave::Orphan> orphans;        // left by runs that died, newest first
    bool prompt = false;                          // the restore question is on screen
    autosave::Orphan taken;                       // the orphan last read back to be restored
    std::optional<autosave::Orphan> restored;     // removed once this run's autosave holds it
    std::uint64_t writes_at_restore = 0;
    bool baseline_set = false;                    // what the app opened with is not autosaved
};

}  // namespace attn::ui
