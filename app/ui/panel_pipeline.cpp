// The pipeline: every stage of the trace as columns of heatmap cards, laid out to fit the
// window (the largest cell size at which the columns fit, wrapping onto up to 3 rows).
//
// Index
// [SECTION] Cards and columns
// [SECTION] Building the columns
// [SECTION] Layout
// [SECTION] Drawing
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <imgui.h>

#include "ui/arithmetic.hpp"
#include "ui/cards.hpp"
#include "ui/glyphs.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

// [SECTION] Cards and columns

using glyph::kArrow;

// A card is a heatmap, or a short note where a stage changes nothing.
struct Card {
    HeatmapSpec spec;
    std::string note;  // non-empty: a note card
    CardText text;
    CardMetrics metrics;
    float max_emphasis = 16.0f;  // how much larger than the pipeline's cell its cells may grow (emphasis())
    bool all_heads_weights = false;  // one head's weights among all heads side by side
};

// Cards stacked top to bottom, or side by side when the layout finds that fits better (a
// stage's matrices); every head's map of one step, with all heads shown, always side by side.
struct Column {
    std::vector<Card> cards;
    bool heads = false;        // one step's map for every head: always side by side
    bool horizontal = false;
    float width = 0, height = 0;
};

constexpr float kCardGap = 12.0f;
constexpr float kColumnGap = 30.0f;
constexpr float kRowGap = 18.0f;
constexpr float kBigMatrixCells = 16.0f;  // a bigger matrix is drawn no larger than this many cells at full size

Card note(std::string title, std::string text) {
    Card c;
    c.spec.title = std::move(title);
    c.note = std::move(text);
    return c;
}

// [SECTION] Building the columns

// The cards in pipeline order, from the matrix registry: each entry's matrices (one per
// shown head for a head's matrix) go into its column; a stage that changes nothing (no
// mask) is a note unless the view asks for it.
struct Builder {
    const Trace& t;
    const ViewOptions& view;
    std::vector<Column> columns;

    void build() {
        std::vector<int> shown;
        if (view.all_heads) {
            for (int h = 0; h < t.heads; ++h) shown.push_back(h);
        } else {
            shown.push_back(std::clamp(view.shown_head, 0, std::max(0, t.heads - 1)));
        }
        const int band_head = view.all_heads ? -1 : shown.front();
        const bool split_qkv = view.all_heads && t.heads > 1;  // Q, K and V each a column of every head
        const bool masks = t.settings.mask != MaskKind::None || (t.visible.size() != 0 && !t.visible.all());
        const bool note_mask = !masks && !view.show_identity_stages && t.detail == Detail::Full;
        // Columns by (pipeline column, sub-column), kept in the order first met.
        std::vector<std::pair<std::pair<attn::Column, std::string>, Column>> built;
        auto column_for = [&](attn::Column c, const std::string& sub) -> Column& {
            for (auto& [key, column] : built)
                if (key.first == c && key.second == sub) return column;
            built.push_back({{c, sub}, Column{}});
            return built.back().second;
        };
        for (const MatrixEntry& e : matrix_registry()) {
            if (e.drawn && !e.drawn(t)) continue;
            const std::string key = e.key;
            if (key == "masked_scores" && note_mask) {
                column_for(attn::Column::Masked, std::string()).cards.push_back(note("mask: none", "every key visible:\nmasked = scaled"));
                continue;
            }
            const attn::Column where = e.column(t);
            const bool per_stage_split = split_qkv && (where == attn::Column::Projections || where == attn::Column::Unrotated);
            Column* column = nullptr;
            const std::vector<int> heads = e.per_head ? shown : std::vector<int>{-1};
            for (int h : heads) {
                const MatrixRef ref{&e, h};
                const Matrix* m = matrix_of(t, ref);
                if (m == nullptr) continue;
                if (column == nullptr) {
                    column = &column_for(where, per_stage_split ? key : std::string());
                    column->heads = split_qkv && e.per_head;
                }
                Card card;
                card.spec = card_spec(t, ref, *m, band_head);
                // All heads side by side compare heads: their maps share the pipeline's cell
                // (twice at most), instead of one head's weights taking the room of all. The
                // weights get up to three times where that fits (draw_pipeline), so that every
                // head's, not only some, have room for their numbers ("4e−3" is as wide as "0.25").
                if (split_qkv && e.per_head) {
                    card.max_emphasis = 2.0f;
                    card.all_heads_weights = card.spec.scale == ColorScale::Weights;
                }
                // Every head after the first in an all-heads column: a one-line "head h" title.
                if (view.all_heads && t.heads > 1 && e.per_head && h > shown.front()) {
                    card.spec.compact = true;
                    card.spec.title = "head " + std::to_string(h + 1);
                    card.spec.row_labels = false;  // beside the first head's card, whose labels it shares
                }
                column->cards.push_back(std::move(card));
            }
        }
        if (t.w_o.size() == 0 && t.heads > 1)
            column_for(attn::Column::Concat, std::string()).cards.push_back(note("no W_O", "the output is\nthe concatenation"));
        // Left to right in the order of the pipeline's columns (a head's Q, K, V split in the
        // order they were met).
        std::stable_sort(built.begin(), built.end(), [](const auto& a, const auto& b) { return a.first.first < b.first.first; });
        for (auto& [key, column] : built)
            if (!column.cards.empty()) columns.push_back(std::move(column));
    }
};

// [SECTION] Layout

float note_width(const UiFonts& fonts) { return 150.0f * fonts.scale; }
float note_height(const UiFonts& fonts) { return fonts.title->FontSize + 2.0f * fonts.ui->FontSize + 16.0f; }

void measure_texts(std::vector<Column>& columns, const UiFonts& fonts) {
    for (Column& column : columns)
        for (Card& card : column.cards)
            if (card.note.empty()) card.text = measure_text(card.spec, fonts);
}

// The step being taught gets the space: up to 12 tokens, the weights are drawn with cells
// large enough for their numbers ("0.40"), the score maps up to three times the pipeline's
// cell towards theirs ("−2.75"); a few tokens' maps are at least 6 (weights) or 4 (scores)
// cells wide.
float emphasis(const HeatmapSpec& spec, float cell, const UiFonts& fonts, float max_emphasis) {
    if (spec.pooled != nullptr || spec.row_axis != Axis::Query || spec.col_axis != Axis::Key) return 1.0f;
    const float n = static_cast<float>(std::max(spec.values->rows(), spec.values->cols()));
    if (n > 12.0f || fonts.mono_small == nullptr) return 1.0f;
    const bool weights = spec.scale == ColorScale::Weights;
    const float digit = fonts.mono_small->CalcTextSizeA(fonts.mono_small->FontSize, FLT_MAX, 0.0f, "0").x;
    const float readable = (weights ? 4.0f : 5.0f) * digit + 8.0f;
    const float wanted = std::max(readable, cell * (weights ? 6.0f : 4.0f) / n);
    // The weights always get their numbers; the score maps grow at most threefold, so that
    // the rest of the pipeline keeps readable cells.
    return std::clamp(wanted / cell, 1.0f, std::min(max_emphasis, weights ? 16.0f : 3.0f));
}

// Card metrics at this cell size (orientation-independent).
void measure_cards(std::vector<Column>& columns, float cell, const UiFonts& fonts) {
    for (Column& column : columns)
        for (Card& card : column.cards) {
            if (!card.note.empty()) {
                card.metrics = CardMetrics{};
                card.metrics.width = note_width(fonts);
                card.metrics.height = note_height(fonts);
            } else {
                // A long axis is shrunk to kBigMatrixCells cells' worth; a short one keeps full cells.
                const float rows = static_cast<float>(card.spec.values->rows());
                const float cols = static_cast<float>(card.spec.values->cols());
                // Thousands of rows (output-only sequences) go below a pixel each: the card stays
                // kBigMatrixCells cells tall and its texture is scaled down.
                const float min_w = std::min(1.0f, kBigMatrixCells * 16.0f / cols);
                const float min_h = std::min(1.0f, kBigMatrixCells * 16.0f / rows);
                const float big = cell * emphasis(card.spec, cell, fonts, card.max_emphasis);
                const float cell_w = std::max(min_w, big * std::min(1.0f, kBigMatrixCells / cols));
                const float cell_h = std::max(min_h, big * std::min(1.0f, kBigMatrixCells / rows));
                card.metrics = measure_card(card.spec, card.text, cell_w, cell_h, fonts);
            }
        }
}

// Column sizes for an orientation variant: 0 all stacked, 1 the projections (W, Q K V)
// side by side, 2 every column side by side.
// Where a card's grid starts below its top: side by side, the grids line up on the lowest.
float grid_top(const Card& card) { return card.metrics.title_h + card.metrics.header_h; }
float grids_top(const Column& column) {
    float top = 0;
    for (const Card& card : column.cards) top = std::max(top, grid_top(card));
    return top;
}

void size_columns(std::vector<Column>& columns, int variant, const UiFonts& fonts) {
    for (size_t i = 0; i < columns.size(); ++i) {
        Column& column = columns[i];
        const bool projection = column.cards.size() == 3;
        column.horizontal = column.cards.size() > 1 && (column.heads || variant == 2 || (variant == 1 && projection));
        column.width = column.height = 0;
        const float top = grids_top(column);
        for (const Card& card : column.cards) {
            const float gap = kCardGap * fonts.scale * 1.5f;
            if (column.horizontal) {
                column.width += card.metrics.width + (column.width > 0 ? gap : 0.0f);
                column.height = std::max(column.height, card.metrics.height + top - grid_top(card));
            } else {
                column.width = std::max(column.width, card.metrics.width);
                column.height += card.metrics.height + (column.height > 0 ? kCardGap : 0.0f);
            }
        }
    }
}

struct Arrangement {
    std::vector<size_t> row_starts;  // index of the first column of each row
    float width = 0, height = 0;
};

Arrangement arrange(const std::vector<Column>& columns, const std::vector<size_t>& starts, float gap) {
    Arrangement a;
    a.row_starts = starts;
    for (size_t r = 0; r < starts.size(); ++r) {
        const size_t end = r + 1 < starts.size() ? starts[r + 1] : columns.size();
        float w = r > 0 ? gap : 0.0f, h = 0;  // wrapped rows start after an arrow
        for (size_t c = starts[r]; c < end; ++c) {
            w += columns[c].width + (c > starts[r] ? gap : 0.0f);
            h = std::max(h, columns[c].height);
        }
        a.width = std::max(a.width, w);
        a.height += h + (r > 0 ? kRowGap : 0.0f);
    }
    return a;
}

// The arrangement in `rows` rows (contiguous columns) with the smallest area overflow; rows
// 0: wrapped where the width runs out, as many rows as that takes (every head's maps side by
// side need more than three).
Arrangement best_arrangement(const std::vector<Column>& columns, int rows, float gap, ImVec2 avail) {
    const size_t n = columns.size();
    Arrangement best;
    float best_excess = 1e30f;
    auto consider = [&](const std::vector<size_t>& starts) {
        Arrangement a = arrange(columns, starts, gap);
        const float excess = std::max(0.0f, a.width - avail.x) * 4.0f + std::max(0.0f, a.height - avail.y) + a.width * 1e-3f;
        if (excess < best_excess) {
            best_excess = excess;
            best = a;
        }
    };
    if (rows == 0) {  // as many rows as it takes: a new row wherever the next column would pass the width
        std::vector<size_t> starts{0};
        float w = 0;
        for (size_t c = 0; c < n; ++c) {
            const float next = w + (c > starts.back() ? gap : 0.0f) + columns[c].width;
            if (c > starts.back() && next > avail.x) {
                starts.push_back(c);
                w = gap + columns[c].width;
            } else {
                w = next;
            }
        }
        consider(starts);
    } else if (rows == 1 || n < 2) consider({0});
    else if (rows == 2)
        for (size_t a = 1; a < n; ++a) consider({0, a});
    else
        for (size_t a = 1; a < n; ++a)
            for (size_t b = a + 1; b < n; ++b) consider({0, a, b});
    return best;
}

bool fits(const Arrangement& a, ImVec2 avail) { return a.width <= avail.x && a.height <= avail.y; }

// How much larger than the pipeline's cell the weights of all heads side by side may grow.
void set_all_heads_weights_emphasis(std::vector<Column>& columns, float max_emphasis) {
    for (Column& column : columns)
        for (Card& card : column.cards)
            if (card.all_heads_weights) card.max_emphasis = max_emphasis;
}

// The largest cell size (then the fewest rows) at which the pipeline fits the area.
Arrangement fit_layout(std::vector<Column>& columns, const UiFonts& fonts, const ViewOptions& view, ImVec2 avail, float& cell,
                       int& chosen_variant) {
    chosen_variant = 0;
    const float gap = kColumnGap * fonts.scale;
    measure_texts(columns, fonts);
    if (!view.auto_cell) {
        cell = view.cell_size * fonts.scale;
        measure_cards(columns, cell, fonts);
        size_columns(columns, 0, fonts);
        Arrangement best = best_arrangement(columns, 1, gap, avail);
        for (int rows = 2; rows <= 3 && !fits(best, avail); ++rows) {
            Arrangement a = best_arrangement(columns, rows, gap, avail);
            if (a.width <= avail.x) best = a;
        }
        return best;
    }
    const float largest = 84.0f * fonts.scale, smallest = 3.0f;
    for (float c = largest; c >= smallest; c -= c > 12.0f ? 1.0f : 0.5f) {
        measure_cards(columns, c, fonts);
        for (int rows : {1, 2, 3, 0})
            for (int variant = 0; variant < 3; ++variant) {
                size_columns(columns, variant, fonts);
                Arrangement a = best_arrangement(columns, rows, gap, avail);
                if (fits(a, avail)) {
                    cell = c;
                    chosen_variant = variant;
                    return a;
                }
            }
    }
    // Too tall for the window at any size: the largest cells that fit the width (the
    // panel scrolls down), the arrangement with the least height.
    for (float c = largest; c >= smallest; c -= c > 12.0f ? 1.0f : 0.5f) {
        measure_cards(columns, c, fonts);
        Arrangement best;
        int best_variant = -1;
        for (int rows : {1, 2, 3, 0})
            for (int variant = 0; variant < 3; ++variant) {
                size_columns(columns, variant, fonts);
                Arrangement a = best_arrangement(columns, rows, gap, avail);
                if (a.width <= avail.x && (best_variant < 0 || a.height < best.height)) {
                    best = a;
                    best_variant = variant;
                }
            }
        if (best_variant >= 0) {
            size_columns(columns, best_variant, fonts);
            cell = c;
            chosen_variant = best_variant;
            return best;
        }
    }
    cell = smallest;  // not even the width fits: smallest cells, scrolling both ways
    measure_cards(columns, cell, fonts);
    size_columns(columns, 2, fonts);
    chosen_variant = 2;
    return best_arrangement(columns, 1, gap, avail);
}

// [SECTION] Drawing

void draw_note(const Card& card, const UiFonts& fonts) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const ImVec2 size(card.metrics.width, card.metrics.height);
    draw->AddRect(p, ImVec2(p.x + size.x, p.y + size.y), IM_COL32(90, 90, 100, 255), 4.0f);
    draw->AddText(fonts.title, fonts.title->FontSize, ImVec2(p.x + 6, p.y + 4), IM_COL32(200, 200, 210, 255), card.spec.title.c_str());
    draw->AddText(fonts.ui, fonts.ui->FontSize, ImVec2(p.x + 6, p.y + 8 + fonts.title->FontSize), IM_COL32(160, 160, 170, 255),
                  card.note.c_str());
}

void draw_arrow(ImVec2 at, const UiFonts& fonts) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float w = ImGui::CalcTextSize(kArrow).x;
    draw->AddText(fonts.title, fonts.title->FontSize * 1.3f, ImVec2(at.x - w * 0.5f, at.y), IM_COL32(140, 140, 150, 255), kArrow);
}

}  // namespace

void draw_pipeline(Context& state, PipelineLayout& pipeline_layout, HeatmapTextures& textures) {
    const Trace& t = state.session.trace;
    if (!t.ok) {
        ImGui::TextWrapped("Nothing to show yet: the scenario has not run (see the status bar).");
        return;
    }
    Builder builder{t, state.view, {}};
    builder.build();
    std::vector<Column>& columns = builder.columns;

    const ImVec2 avail(ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ScrollbarSize * 0.5f,
                       ImGui::GetContentRegionAvail().y - 4.0f);
    // The search over cell sizes runs only when the structure, the area or the view
    // changes — not while a value is scrubbed.
    std::string signature;
    for (const Column& column : columns)
        for (const Card& card : column.cards)
            signature += card.spec.name + card.spec.title + card.spec.shape + card.note + "|" +
                         (card.spec.values ? std::to_string(card.spec.values->rows()) + "x" + std::to_string(card.spec.values->cols()) : "") + ";";
    char view_key[160];
    std::snprintf(view_key, sizeof view_key, "%.1f,%.1f,%d,%d,%.1f,%d,%d", avail.x, avail.y, state.view.all_heads, state.view.auto_cell,
                  state.view.cell_size, state.view.show_identity_stages, state.view.shown_head);
    signature += view_key;
    PipelineLayout& cached = pipeline_layout;
    Arrangement layout;
    const float gap = kColumnGap * state.fonts.scale;
    if (cached.signature == signature) {
        set_all_heads_weights_emphasis(columns, cached.weights_emphasis);
        measure_texts(columns, state.fonts);
        measure_cards(columns, cached.cell, state.fonts);
        size_columns(columns, cached.variant, state.fonts);
        layout = arrange(columns, cached.row_starts, gap);
    } else {
        float cell = 0;
        int variant = 0;
        // All heads' weights three times the cell where the pipeline still fits the window,
        // else twice, as the other heads' maps.
        float weights_emphasis = 3.0f;
        set_all_heads_weights_emphasis(columns, weights_emphasis);
        layout = fit_layout(columns, state.fonts, state.view, avail, cell, variant);
        if (!fits(layout, avail)) {
            weights_emphasis = 2.0f;
            set_all_heads_weights_emphasis(columns, weights_emphasis);
            layout = fit_layout(columns, state.fonts, state.view, avail, cell, variant);
        }
        cached = PipelineLayout{signature, cell, variant, layout.row_starts, weights_emphasis};
    }
    const ImVec2 origin = ImGui::GetCursorScreenPos();

    float y = origin.y;
    for (size_t r = 0; r < layout.row_starts.size(); ++r) {
        const size_t end = r + 1 < layout.row_starts.size() ? layout.row_starts[r + 1] : columns.size();
        float x = origin.x, row_h = 0;
        if (r > 0) {
            draw_arrow(ImVec2(x + gap * 0.5f, y + state.fonts.title->FontSize * 1.5f), state.fonts);
            x += gap;
        }
        for (size_t c = layout.row_starts[r]; c < end; ++c) {
            if (c > layout.row_starts[r]) {
                draw_arrow(ImVec2(x + gap * 0.5f, y + state.fonts.title->FontSize * 1.5f), state.fonts);
                x += gap;
            }
            float card_x = x, card_y = y;
            const float top = grids_top(columns[c]);
            for (Card& card : columns[c].cards) {
                const float lowered = columns[c].horizontal ? top - grid_top(card) : 0.0f;
                ImGui::SetCursorScreenPos(ImVec2(card_x, card_y + lowered));
                if (card.note.empty()) draw_card(card.spec, card.metrics, state, textures);
                else draw_note(card, state.fonts);
                if (columns[c].horizontal) card_x += card.metrics.width + kCardGap * state.fonts.scale * 1.5f;
                else card_y += card.metrics.height + kCardGap;
            }
            x += columns[c].width;
            row_h = std::max(row_h, columns[c].height);
        }
        y += row_h + kRowGap;
    }
    // Reserve the whole area so the panel scrolls when it does not fit.
    ImGui::SetCursorScreenPos(origin);
    ImGui::Dummy(ImVec2(layout.width, layout.height));
}

}  // namespace attn::ui
