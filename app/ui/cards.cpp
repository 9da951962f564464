#include "ui/cards.hpp"

#include <algorithm>
#include <string>

namespace attn::ui {

ColorScale color_scale(ValueKind kind) { return kind == ValueKind::Weights ? ColorScale::Weights : ColorScale::Diverging; }

Axis heatmap_axis(attn::Axis axis) {
    switch (axis) {
        case attn::Axis::Query: return Axis::Query;
        case attn::Axis::Key: return Axis::Key;
        default: return Axis::Dim;  // a vector's columns, or the feed-forward's hidden units
    }
}

HeatmapSpec card_spec(const Trace& t, const MatrixRef& ref, const Matrix& values, int band_head) {
    const MatrixEntry& e = *ref.entry;
    HeatmapSpec spec;
    spec.name = matrix_name(ref);
    spec.values = &values;
    spec.content_version = weight_version(t, &values);
    spec.scale = color_scale(e.values);
    spec.row_axis = heatmap_axis(e.rows);
    spec.col_axis = heatmap_axis(e.cols);
    spec.row_tokens = spec.row_axis == Axis::Query ? &t.query_tokens : spec.row_axis == Axis::Key ? &t.key_tokens : nullptr;
    spec.col_tokens = spec.col_axis == Axis::Query ? &t.query_tokens : spec.col_axis == Axis::Key ? &t.key_tokens : nullptr;
    spec.title = e.title(t, ref.head);
    spec.shape = e.shape(t, ref.head);
    const std::string key = e.key;
    // In place: Q, K, V only where they are given (direct input); everything else the
    // registry marks. A head's slice of Q, K, V starts at its columns of the scenario's.
    const bool direct = t.settings.input == InputMode::Direct;
    const bool projection = e.edit == Editable::Q || e.edit == Editable::K || e.edit == Editable::V;
    if (e.edit != Editable::None && (!projection || direct)) {
        spec.editable = true;
        spec.edit_target = e.edit;
        // K and V of grouped-query attention: the columns of the K/V head this query head reads.
        const int column_head = e.edit != Editable::Q && t.kv_heads > 0 ? ref.head / (t.heads / t.kv_heads) : ref.head;
        if (projection) spec.edit_col_offset = column_head * (e.edit == Editable::V ? t.d_v : t.d_k);
    }
    if (e.arithmetic == Arithmetic::MaskedScore || e.arithmetic == Arithmetic::Softmax) {
        spec.mask = &t.visible;
        spec.masked_value = t.settings.masked_fill;
        spec.show_masked_value = e.arithmetic == Arithmetic::MaskedScore;
        spec.paints_mask = true;
    }
    if (key == "pooled_weights" && ref.head >= 0 && ref.head < static_cast<int>(t.head.size())) {
        spec.pooled = &t.head[static_cast<size_t>(ref.head)].pooled_weights;
        if (spec.pooled->visible.size() != 0) {  // one cell per token: hatched where the mask hides
            spec.mask = &spec.pooled->visible;
            spec.show_masked_value = false;
        }
    }
    // W_Q, W_K, W_V and their biases: the head's band of columns.
    const Editable ed = e.edit;
    const bool sliced = ed == Editable::WQ || ed == Editable::WK || ed == Editable::WV || ed == Editable::BQ || ed == Editable::BK ||
                        ed == Editable::BV;
    if (sliced && t.heads > 1 && band_head >= 0) {
        const int width = ed == Editable::WV || ed == Editable::BV ? projected_value_dim(t) : t.d_k;
        const bool kv = ed == Editable::WK || ed == Editable::WV || ed == Editable::BK || ed == Editable::BV;
        const bool grouped = kv && t.kv_heads > 0 && t.kv_heads != t.heads;
        const int column_head = grouped ? band_head / (t.heads / t.kv_heads) : band_head;  // the K/V head the shown head reads
        spec.band_begin = column_head * width;
        spec.band_end = spec.band_begin + width;
        spec.shape += (grouped ? ", K/V head " + std::to_string(column_head + 1) : ", head " + std::to_string(band_head + 1)) + ": cols " +
                      position_span(spec.band_begin, spec.band_end);
    }
    return spec;
}

namespace {

// Which matrices of the session's trace hold NaN or ±∞, worked out once per trace.
const NonFiniteReport& non_finite(MapContext state) {
    NonFiniteCache& cache = state.non_finite;
    if (cache.generation != state.session.generation) {
        cache.report = non_finite_report(state.session.trace);
        cache.generation = state.session.generation;
    }
    return cache.report;
}

}  // namespace

void draw_card(const HeatmapSpec& spec, const CardMetrics& metrics, MapContext state, HeatmapTextures& textures) {
    CardContext context{state.fonts,  state.view,        state.session.trace, state.session.generation,
                        non_finite(state), state.hover, state.hover_next,   state.views,
                        state.editor, state.painter,     textures,            state.layout_next,
                        {}};
    draw_card(spec, metrics, context);
    for (edits::Edit& edit : context.edits) state.push(std::move(edit));
}

void fit_side_by_side(const HeatmapSpec* specs, const CardText* texts, int count, float largest, float smallest, float gap,
                      ImVec2 room, bool shrink_long_axes, const UiFonts& fonts, CardMetrics* metrics) {
    for (float cell = largest; cell >= smallest; cell -= cell > 16.0f ? 2.0f : 1.0f) {
        float width = static_cast<float>(count - 1) * gap, height = 0;
        for (int i = 0; i < count; ++i) {
            float cell_w = cell, cell_h = cell;
            if (shrink_long_axes) {
                const float rows = static_cast<float>(specs[i].values->rows()), cols = static_cast<float>(specs[i].values->cols());
                cell_w = std::max(1.0f, cell * std::min(1.0f, 16.0f / cols));
                cell_h = std::max(1.0f, cell * std::min(1.0f, 16.0f / rows));
            }
            metrics[i] = measure_card(specs[i], texts[i], cell_w, cell_h, fonts);
            width += metrics[i].width;
            height = std::max(height, metrics[i].height);
        }
        if (width <= room.x && height <= room.y) return;
    }
}

}  // namespace attn::ui
