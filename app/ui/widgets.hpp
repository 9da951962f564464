#pragma once
// What the leaf widgets (a heatmap card) share with the window and nothing more: the fonts,
// the view's drawing options, what the pointer points at, each map's zoom, the in-place
// cell editor and mask painter, and where a map was drawn. No scenario, no session: a card
// reads these and reports back through them (ui/heatmap.hpp's CardContext).
#include <optional>
#include <string>

#include "edits.hpp"
#include "attention/registry.hpp"

struct ImFont;

namespace attn::ui {

// What a heatmap axis counts: queries, keys (tokens), or the columns of a vector.
enum class Axis { Query, Key, Dim };

// What the mouse points at. Panels read `hover` (last frame) and write `hover_next`.
struct HoverState {
    int query = -1;           // highlighted query token (a row in every token-row matrix)
    int key = -1;             // highlighted key token (a column of scores and weights)
    std::string matrix;       // hovered heatmap cell
    int row = -1, col = -1;
};

// Zoom and pan of one heatmap inside its box: zoom 1 shows every cell.
struct HeatmapView {
    float zoom = 1.0f;
    float first_row = 0.0f, first_col = 0.0f;  // the cell at the box's top-left corner
};

// A value being scrubbed (drag) or typed (double-click) in place.
struct CellEditor {
    std::string matrix;       // heatmap name, empty when idle
    edits::MatrixId target = edits::MatrixId::X;
    int row = -1, col = -1;   // in the scenario matrix
    bool typing = false;      // the text popup is open
    bool focus_pending = false;
    std::string text;
    bool scrubbing = false;
    float scrub_start_value = 0.0f;
    float scrub_start_mouse = 0.0f;
};

// Painting a custom mask: the value the drag writes (chosen by the first cell clicked).
struct MaskPainter {
    bool active = false;
    bool visible = true;
};

// The main area's tabs: the pipeline always, the model view while a model is open, the
// Train panel while it is open. Fixed in the window: none can be lost off the screen.
enum class Pane { Pipeline, Model, Train };

struct ViewOptions {
    Pane pane = Pane::Pipeline;  // the tab shown
    bool pane_requested = false; // `pane` was asked for (a layer opened, a menu item): selected next frame
    bool had_model_tab = false, had_train_tab = false;  // last frame's tabs: a view just opened comes to the front
    bool all_heads = false;   // every head side by side, or only shown_head
    int shown_head = 0;
    bool auto_cell = true;    // fit the pipeline to the window
    float cell_size = 40.0f;  // pixels, when not auto
    bool numbers = true;      // write values in cells that fit them
    int decimals = 2;
    bool show_identity_stages = false;  // draw "masked" even when no mask changes it
    // What X of the session's scenario is when a view made it from a model ("the residual
    // stream entering layer 3 …"), for its cells' tooltips; empty: the scenario's own
    // embeddings (given, edited, or derived from the tokens' text). Set by the window each frame.
    std::string x_meaning;
    // Cells (query, key) outlined on the shown head's weights while the session's scenario is
    // the one named: the diagonal a head role's score reads, on the probe opened from the model
    // view's Head roles tab.
    std::string outlined_scenario;
    int outlined_head = -1;
    std::vector<std::pair<int, int>> outlined_cells;
};

inline void show_pane(ViewOptions& view, Pane pane) {
    view.pane = pane;
    view.pane_requested = true;
}

struct UiFonts {
    ImFont* ui = nullptr;          // proportional, for labels and text
    ImFont* small = nullptr;       // proportional, small: labels of small cells
    ImFont* title = nullptr;       // larger, for card titles
    ImFont* mono_large = nullptr;  // monospace, large: numbers in big cells (projector)
    ImFont* mono = nullptr;        // monospace, for numbers in cells and the arithmetic
    ImFont* mono_small = nullptr;  // small monospace, for dense cells and indices
    ImFont* tiny = nullptr;        // proportional, smallest: token labels of rows too short for `small`
    float scale = 1.0f;            // window content scale
};

// Where a heatmap was drawn in the last frame (screen pixels): read by screenshot mode
// (the layout sidecar) and by the debug hover.
struct HeatmapLayout {
    std::string name;
    float x = 0, y = 0;          // top-left of cell (first_row, first_col)
    float cell_w = 0, cell_h = 0;
    int rows = 0, cols = 0;      // the whole matrix
    int first_row = 0, first_col = 0, shown_rows = 0, shown_cols = 0;
    bool textured = false;
    bool numbers = false;        // the cells' values are written in them
    float badge_x = -1, badge_y = -1;  // the NaN/∞ mark beside the title, −1 when none
    int row_label_step = 0, col_label_step = 0;  // every k-th row / column labelled (1: all; 0: none)
};

}  // namespace attn::ui
