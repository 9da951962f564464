#pragma once
// The small context every view shares (the window holds it beside its views, window.hpp):
// the session (scenario, trace, undo), the fonts, what the pointer points at and the cards'
// shared interaction state, the compute layer's settings and report, the status area's
// notices, the requests that span views, and where widgets and maps were drawn (the tests and
// a screenshot's layout read those). The whole of it is the window's (and the Backend panel's
// and the status line's, which drive and read the compute layer); a view is handed a part of
// it (MapContext, and the narrower parts below) and its own state, never another view's.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "attention/analysis.hpp"
#include "compute.hpp"
#include "edits.hpp"
#include "job.hpp"
#include "attention/scenario.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {

// A line for the status area (a file that could not be read or written, a save that worked).
// A notice says which attempt it is about ("open a file", "open a model", …): when a later
// attempt of the same kind succeeds, the errors of the earlier ones are no longer true and go.
struct Notice {
    std::string text;
    bool error = false;
    std::string attempt;   // empty: a notice no later success settles
};

// A widget the tests look for, and what it said, where it was drawn in the last frame
// (screen pixels): the layout sidecar of a screenshot lists them beside the heatmaps.
struct WidgetLayout {
    std::string id;    // "sidebar.preset", "sidebar.verdict", …
    std::string text;
    float x = 0, y = 0, w = 0, h = 0;
};

// The backend section: what the panel asks of the compute layer, and what it last reported.
struct ComputeState {
    compute::Settings settings;
    compute::Status status;           // copied from compute::Compute after each update
    compute::Region region_draft;     // the region typed, applied with "zoom"
    int draft_queries = 0, draft_keys = 0;  // the sequence the draft was made for: another one resets it
    double cpu_gflops = 0.0;          // the CPU engine's measured speed, read when a zoom is first estimated
    // The generated sequence's run as "generate" would start it (its options, the mask and
    // the rest on screen), timed at a small length off the window's thread: milliseconds per
    // token² for the estimate said before a long run. `key`: the settings it was timed for.
    struct RunTiming {
        bool wanted = false;   // the length or generate pointed at: timed from then on, not at every start
        std::string key;
        compute::Job<double> job;            // timing it (job.hpp)
        std::optional<double> ms_per_token2;  // what it measured for `key`
    } generate_timing;
};

// Which matrices of the shown trace hold NaN or ±∞, and where they come from: computed
// once per trace (heatmap.cpp), read by every card and tooltip.
struct NonFiniteCache {
    std::uint64_t generation = ~0ull;
    NonFiniteReport report;
};

// What the path popup is asked for (File → Save, Open, the exports, Open model…, the Train
// panel's model files): a tag the tests read, not something the popup dispatches on.
enum class FileAction { None, SaveSession, OpenSession, ExportMatrix, ExportTrace, ExportPng, SaveModel, OpenModel, OpenCheckpoint };

struct Context;
struct PanelContext;
struct EditContext;

// What a view asks of the window that spans views: queued while it draws, carried out by the
// window once every view has drawn (window.cpp). A view writes its own state and the shared
// context, never another view's.
struct ShowInPipeline {          // a layer opened in the pipeline, as one undo step
    Scenario scenario;
    int head = 0;                // the head shown, from 0
    bool at_weights = false;     // scrolled to the weights (the first layer opened)
    // The cells outlined on the head's weights (a head role's score reads them), for this
    // scenario and head; nullopt: the outlines stay as they are.
    std::optional<std::vector<std::pair<int, int>>> outlined_cells;
};
// The path popup (its OK runs `chosen` with the path; a view asking for a path says what to
// do with it, so the popup knows no view).
struct AskForPath {
    FileAction action = FileAction::None;
    std::string title;               // "Save session"
    std::string path;                // proposed
    std::string hint;                // a line above the path field; empty: none
    std::function<void(EditContext, const std::string&)> chosen;
    // Drawn under the path field (Open model…'s cached models); true: chosen at once (a double click).
    std::function<bool(PanelContext, std::string& path)> below;
    std::function<void()> cancelled;  // Cancel (Save… before a quit: no quit)
};
struct OpenSession {             // a session or scenario file replaces the work
    std::string path;
};
struct SaveSession {             // the session (scenario, view, models) written to a file
    std::string path;
};
struct SessionLayerMade {        // a session's scenario kept as a model's layer, made once the model opened
    Scenario scenario;
};
// The tab to bring to the front, the head to show alone, the pipeline's step to scroll to: what
// a view asks of the view options, which the window alone writes (before the tabs are drawn
// when asked before them, else once every view has drawn). A session opened after it in the
// same frame sets its own and drops it.
struct ShowView {
    std::optional<Pane> pane;
    std::optional<int> head;                 // from 0; every head side by side turned off
    std::optional<attn::Column> step;        // scrolled to once the scenario queued with it has run
};
using Request = std::variant<ShowInPipeline, AskForPath, OpenSession, SaveSession, SessionLayerMade, ShowView>;

struct Context {
    edits::Session session;
    UiFonts fonts;                              // the frame's: normal, or presenter mode's
    bool presenter = false;                     // presenter mode (F5): large fonts, stage view
    bool screenshot_mode = false;

    HoverState hover, hover_next;               // last frame's, and this frame's
    ViewOptions view;
    std::map<std::string, HeatmapView> views;   // each map's zoom and pan
    CellEditor editor;
    MaskPainter painter;
    NonFiniteCache non_finite;

    ComputeState compute;
    std::vector<Notice> notices;                // newest last; the status area shows the last few
    std::vector<Request> requests;              // this frame's, carried out after the views
    std::vector<HeatmapLayout> layout, layout_next;
    std::vector<WidgetLayout> widgets, widgets_next;
};

// What most of a view's drawing is handed instead of the whole context: the fonts and the
// number options it draws with, and where it reports: its widgets (for a screenshot's layout
// and the tests), the status area's notices, and requests the window carries out after the
// views. It cannot reach the session, the compute settings or the cards' shared state, so a
// function taking one changes nothing but its own view's state and what it reports. Every
// Context converts to one.
struct PanelContext {
    const UiFonts& fonts;
    const ViewOptions& view;
    bool presenter;
    std::vector<WidgetLayout>& widgets_next;
    std::vector<Notice>& notices;
    std::vector<Request>& requests;
    PanelContext(Context& c)  // NOLINT(google-explicit-constructor): a view's Context is one
        : fonts(c.fonts), view(c.view), presenter(c.presenter), widgets_next(c.widgets_next), notices(c.notices), requests(c.requests) {}
};

// A panel that edits the scenario: the session to read (its scenario, trace, history), and
// `push`, the one way such a view changes it: the edits wait in the session's queue, and the
// window applies them between frames (edits.hpp). Every Context converts to one.
struct EditContext : PanelContext {
    const edits::Session& session;
    EditContext(Context& c)  // NOLINT(google-explicit-constructor): a view's Context is one
        : PanelContext(c), session(c.session), writable_(c.session) {}
    void push(edits::Edit edit) const { writable_.push(std::move(edit)); }
    // A scenario and its undo history put back whole (leaving a lesson), applied as the queue is.
    void restore(edits::Session::Restore whole) const { writable_.restore = std::move(whole); }

private:
    edits::Session& writable_;  // for push alone: the window applies the queue between frames
};

// A panel that draws the session's matrices as cards (cards.hpp): EditContext, and the state
// the cards share: what the pointer pointed at last frame and points at in this one, each
// map's zoom and pan, the cell editor, the mask painter, which matrices hold NaN or ±∞, and
// where each map is drawn this frame. It is what a view is handed (view.hpp): it cannot reach
// the compute settings, and reads the view options without writing them (a view asks for the
// tab, the head and the pipeline's step with a ShowView request). Every Context converts to one.
struct MapContext : EditContext {
    const HoverState& hover;
    HoverState& hover_next;
    std::map<std::string, HeatmapView>& views;
    CellEditor& editor;
    MaskPainter& painter;
    NonFiniteCache& non_finite;
    std::vector<HeatmapLayout>& layout_next;
    MapContext(Context& c)  // NOLINT(google-explicit-constructor): a view's Context is one
        : EditContext(c), hover(c.hover), hover_next(c.hover_next), views(c.views), editor(c.editor), painter(c.painter),
          non_finite(c.non_finite), layout_next(c.layout_next) {}
};

}  // namespace attn::ui
