#pragma once
// The heatmap card of any matrix of a trace, from the matrix registry (core/registry.hpp):
// its title and shape in the articles' words, axes and labels, colour scale, what an edit
// of a cell writes, the mask drawn over scores and weights, and the shown head's band on a
// weight matrix. The pipeline, the lesson's stage view and Compare all build cards here.
#include "registry.hpp"
#include "ui/heatmap.hpp"

namespace attn::ui {

// band_head ≥ 0: on W_Q, W_K, W_V and their biases, outline that head's columns.
HeatmapSpec card_spec(const Trace& trace, const MatrixRef& ref, const Matrix& values, int band_head = -1);

// The colour scale and axis of a registry entry, in the heatmap's terms.
ColorScale color_scale(ValueKind kind);
Axis heatmap_axis(attn::Axis axis);

}  // namespace attn::ui
