#pragma once
// The heatmap card of any matrix of a trace, from the matrix registry (core/attention/registry.hpp):
// its title and shape in the articles' words, axes and labels, colour scale, what an edit
// of a cell writes, the mask drawn over scores and weights, and the shown head's band on a
// weight matrix. The pipeline, the lesson's stage view and Compare all build cards here.
#include <imgui.h>

#include "attention/registry.hpp"
#include "ui/context.hpp"
#include "ui/heatmap.hpp"

namespace attn::ui {

// band_head ≥ 0: on W_Q, W_K, W_V and their biases, outline that head's columns.
HeatmapSpec card_spec(const Trace& trace, const MatrixRef& ref, const Matrix& values, int band_head = -1);

// A card in the window: drawn against the session's trace, its edits pushed into the
// session (the only place a card's edits meet the scenario).
void draw_card(const HeatmapSpec& spec, const CardMetrics& metrics, MapContext state, HeatmapTextures& textures);

// A, B and B − A side by side (View → Compare, the model view's Compare tab) at one cell
// size: the largest from `largest` down to `smallest` at which the cards fit `room`, a long
// axis shrunk to 16 cells' worth when `shrink_long_axes`. Fills `metrics`.
void fit_side_by_side(const HeatmapSpec* specs, const CardText* texts, int count, float largest, float smallest, float gap,
                      ImVec2 room, bool shrink_long_axes, const UiFonts& fonts, CardMetrics* metrics);
// Linked hover: the hovered cell outlined in every card drawn this frame that `in_group`
// names (so A, B and B − A show the same cell).
template <class InGroup>
void outline_hovered_cell(const HoverState& hover, const std::vector<HeatmapLayout>& drawn, InGroup in_group, float thickness);

// The colour scale and axis of a registry entry, in the heatmap's terms.
ColorScale color_scale(ValueKind kind);
Axis heatmap_axis(attn::Axis axis);

template <class InGroup>
void outline_hovered_cell(const HoverState& hover, const std::vector<HeatmapLayout>& drawn, InGroup in_group, float thickness) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    for (const HeatmapLayout& h : drawn) {
        if (!in_group(h.name)) continue;
        const int r0 = hover.row - h.first_row, c0 = hover.col - h.first_col;
        if (r0 < 0 || c0 < 0 || r0 >= h.shown_rows || c0 >= h.shown_cols) continue;
        const ImVec2 p0(h.x + static_cast<float>(c0) * h.cell_w, h.y + static_cast<float>(r0) * h.cell_h);
        draw->AddRect(p0, ImVec2(p0.x + h.cell_w, p0.y + h.cell_h), IM_COL32(255, 200, 60, 255), 0.0f, 0, thickness);
    }
}

}  // namespace attn::ui
