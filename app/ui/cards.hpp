#pragma once
// The heatmap card of any matrix of a trace, from the matrix registry (core/registry.hpp):
// its title and shape in the articles' words, axes and labels, colour scale, what an edit
// of a cell writes, the mask drawn over scores and weights, and the shown head's band on a
// weight matrix. The pipeline, the lesson's stage view and Compare all build cards here.
#include "registry.hpp"
#include "ui/context.hpp"
#include "ui/heatmap.hpp"

namespace attn::ui {

// band_head ≥ 0: on W_Q, W_K, W_V and their biases, outline that head's columns.
HeatmapSpec card_spec(const Trace& trace, const MatrixRef& ref, const Matrix& values, int band_head = -1);

// A card in the window: drawn against the session's trace, its edits pushed into the
// session (the only place a card's edits meet the scenario).
void draw_card(const HeatmapSpec& spec, const CardMetrics& metrics, Context& state, HeatmapTextures& textures);
// Which matrices of the session's trace hold NaN or ±∞, worked out once per trace.
const NonFiniteReport& non_finite(Context& state);

// The colour scale and axis of a registry entry, in the heatmap's terms.
ColorScale color_scale(ValueKind kind);
Axis heatmap_axis(attn::Axis axis);

}  // namespace attn::ui
