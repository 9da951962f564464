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
#include <optional>
#include <string>
#include <vector>

#include <imgui.h>

#include "attention/registry.hpp"
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
    attn::Column stage = attn::Column::Inputs;  // the step it shows (the stage strip's button)
    std::vector<Card> cards;
    bool heads = false;        // one step's map for every head: always side by side
    bool focused = false;      // the step drawn large with its numbers (ViewOptions::focus_step)
    bool horizontal = false;
    float width = 0, height = 0;
};

// How much larger than the pipeline's cell the maps of a few tokens are drawn: the score maps
// towards room for their numbers, the weights (the step being taught) larger still where the
// window has room.
struct Emphasis {
    float scores = 3.0f;  // at most
    float taught = 1.0f;  // at least, for the weights of one head
};

constexpr float kCardGap = 12.0f;
constexpr float kColumnGap = 30.0f;
constexpr float kRowGap = 18.0f;
constexpr float kBigMatrixCells = 16.0f;  // a bigger matrix is drawn no larger than this many cells at full size
constexpr float kLongAxisPixels = 160.0f;  // the least a long axis is drawn at (a pixel an entry below that)
constexpr int kLabelledTokens = 16;       // up to this many tokens, every token's label is drawn
// A pipeline taller than the window scrolls, with cells this large at most: a long axis is then
// kBigMatrixCells of them (GPT-2's 54 × 768 X about 350 px square, a 1 × 64 bias a strip).
constexpr float kScrollingCell = 22.0f;

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
    std::optional<attn::Column> focus_step;  // the step drawn large (PipelineLayout::focus_step)
    const std::string& scenario_name;  // the session's scenario: cells outlined for it (ViewOptions::outlined_cells)
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
                column_for(attn::Column::Masked, std::string())
                    .cards.push_back(note("mask: none", t.settings.softcap > 0.0f ? "every key visible:\nmasked = soft-capped"
                                                                                  : "every key visible:\nmasked = scaled"));
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
                if (h >= 0 && h == view.outlined_head && card.spec.scale == ColorScale::Weights &&
                    view.outlined_scenario == scenario_name)
                    card.spec.outlined = &view.outlined_cells;  // the cells a head role's score reads
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
        // The step chosen in the strip gets the room; by default, and with every head side by
        // side (a comparison of heads), the weights.
        const attn::Column focus = focus_step && !view.all_heads ? *focus_step : attn::Column::Softmax;
        for (auto& [key, column] : built) {
            column.stage = key.first;
            column.focused = key.first == focus;
        }
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

// The width a cell needs for a number of `characters` in the cells' smallest font ("0.40": 4,
// "−2.75": 5), with its margin.
float number_room(const UiFonts& fonts, float characters) {
    const float digit = fonts.mono_small != nullptr ? fonts.mono_small->CalcTextSizeA(fonts.mono_small->FontSize, FLT_MAX, 0.0f, "0").x : 7.0f;
    return characters * digit + 8.0f;
}

// The step being taught gets the space: up to 12 tokens, its maps are drawn with cells large
// enough for their numbers (the weights' "0.40", any other step's "−2.75"), the other score
// maps up to `emphasis.scores` times the pipeline's cell towards theirs; a few tokens' maps are
// at least 6 (the step taught) or 4 (scores) cells wide. One head's maps of the step taught are
// then grown to `emphasis.taught` times the cell where the window has room (fit_layout). The
// step taught is the weights unless another was chosen in the step strip (Column::focused).
float emphasis(const Card& card, bool focused, float cell, const UiFonts& fonts, const Emphasis& emphasis) {
    const HeatmapSpec& spec = card.spec;
    const bool scores_map = spec.row_axis == Axis::Query && spec.col_axis == Axis::Key;
    if (!scores_map && !focused) return 1.0f;
    const float n = static_cast<float>(std::max(spec.values->rows(), spec.values->cols()));
    const bool weights = spec.scale == ColorScale::Weights || spec.pooled != nullptr;
    const float taught = focused && !card.all_heads_weights && !spec.compact && n <= kLabelledTokens ? emphasis.taught : 1.0f;
    if (n > 12.0f || fonts.mono_small == nullptr || spec.pooled != nullptr) return taught;  // a zoomed region: no numbers
    // The score maps grow at most `emphasis.scores`-fold, so that the rest of the pipeline keeps
    // readable cells; the step taught always gets its numbers, and is never smaller than the scores.
    const float scores_wanted = std::max(number_room(fonts, 5.0f), cell * 4.0f / n);
    const float scores = scores_map ? std::clamp(scores_wanted / cell, 1.0f, std::min(card.max_emphasis, emphasis.scores)) : 1.0f;
    if (!focused) return scores;
    const float wanted = std::max(number_room(fonts, weights ? 4.0f : 5.0f), cell * 6.0f / n);
    return std::max({taught, scores, std::clamp(wanted / cell, 1.0f, std::min(card.max_emphasis, 16.0f))});
}

// Card metrics at this cell size (orientation-independent).
void measure_cards(std::vector<Column>& columns, float cell, const Emphasis& emph, const UiFonts& fonts) {
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
                // at least kLongAxisPixels tall and its texture is scaled down.
                const float min_w = std::min(1.0f, kLongAxisPixels * fonts.scale / cols);
                const float min_h = std::min(1.0f, kLongAxisPixels * fonts.scale / rows);
                const float big = cell * emphasis(card, column.focused, cell, fonts, emph);
                float cell_w = std::max(min_w, big * std::min(1.0f, kBigMatrixCells / cols));
                float cell_h = std::max(min_h, big * std::min(1.0f, kBigMatrixCells / rows));
                // A vector along a long axis (a bias, one token's row) is a strip, not a wall: its
                // one cell across is no deeper than a label needs.
                const float strip = std::max(fonts.small->FontSize + 4.0f, 14.0f * fonts.scale);
                if (rows == 1.0f && cols > kBigMatrixCells) cell_h = std::min(cell_h, strip);
                if (cols == 1.0f && rows > kBigMatrixCells) cell_w = std::min(cell_w, strip);
                card.metrics = measure_card(card.spec, card.text, cell_w, cell_h, fonts);
            }
        }
}

// Column sizes for an orientation variant: 0 all stacked, 1 the projections (W, Q K V)
// side by side, 2 every column side by side; 3 to 5 as 0 to 2 with the step taught side by
// side (its maps large with their numbers may be too tall stacked).
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
        const int orientation = variant % 3;
        column.horizontal = column.cards.size() > 1 && (column.heads || orientation == 2 || (orientation == 1 && projection) ||
                                                        (variant >= 3 && column.focused));
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

// The orientation variants worth trying, fewest columns side by side first: with the step
// taught a column of several maps, that column side by side too.
std::vector<int> variants(const std::vector<Column>& columns) {
    for (const Column& column : columns)
        if (column.focused && column.cards.size() > 1 && !column.heads) return {0, 3, 1, 4, 2, 5};
    return {0, 1, 2};
}

// Rows of slots: a slot is one column, or consecutive columns stacked top to bottom where the
// row is tall enough for them (the pipeline read down a slot, then on to the next).
struct Arrangement {
    std::vector<size_t> row_starts;   // index of the first column of each row
    std::vector<size_t> slot_starts;  // index of the first column of each slot, every row's
    float fill_height = 0;            // a single row: how tall its slots may be (0: its tallest column)
    float width = 0, height = 0;
};

Arrangement arrange(const std::vector<Column>& columns, const std::vector<size_t>& starts, float gap, float fill_height) {
    Arrangement a;
    a.row_starts = starts;
    a.fill_height = fill_height;
    for (size_t r = 0; r < starts.size(); ++r) {
        const size_t end = r + 1 < starts.size() ? starts[r + 1] : columns.size();
        float room = starts.size() == 1 ? fill_height : 0.0f;
        for (size_t c = starts[r]; c < end; ++c) room = std::max(room, columns[c].height);
        float w = r > 0 ? gap : 0.0f, h = 0;  // wrapped rows start after an arrow
        float slot_w = 0, slot_h = 0;
        for (size_t c = starts[r]; c < end; ++c) {
            const Column& column = columns[c];
            if (c > starts[r] && slot_h + kRowGap + column.height <= room) {  // stacked under the slot's last
                slot_w = std::max(slot_w, column.width);
                slot_h += kRowGap + column.height;
            } else {
                w += slot_w + (c > starts[r] ? gap : 0.0f);
                a.slot_starts.push_back(c);
                slot_w = column.width;
                slot_h = column.height;
            }
            h = std::max(h, slot_h);
        }
        w += slot_w;
        a.width = std::max(a.width, w);
        a.height += h + (r > 0 ? kRowGap : 0.0f);
    }
    return a;
}

// The arrangement in `rows` rows (contiguous columns) with the smallest area overflow; rows
// 0: wrapped where the width runs out, as many rows as that takes (every head's maps side by
// side need more than three). One row's slots may be as tall as the area.
Arrangement best_arrangement(const std::vector<Column>& columns, int rows, float gap, ImVec2 avail) {
    const size_t n = columns.size();
    Arrangement best;
    float best_excess = 1e30f;
    auto consider = [&](const std::vector<size_t>& starts) {
        Arrangement a = arrange(columns, starts, gap, starts.size() == 1 ? avail.y : 0.0f);
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

// The cell below which a map of at most kLabelledTokens tokens would skip some of their labels
// (the largest cell when no map has so few tokens).
float labelled_cell(const std::vector<Column>& columns, const UiFonts& fonts) {
    for (const Column& column : columns)
        for (const Card& card : column.cards) {
            if (!card.note.empty() || card.spec.pooled != nullptr) continue;
            const HeatmapSpec& spec = card.spec;
            if ((spec.row_axis != Axis::Dim && spec.values->rows() <= kLabelledTokens) ||
                (spec.col_axis != Axis::Dim && spec.values->cols() <= kLabelledTokens))
                return std::ceil((fonts.tiny != nullptr ? fonts.tiny : fonts.small)->FontSize - kLabelSqueeze);
        }
    return 84.0f * fonts.scale;
}

// The fitted pipeline: its cell, how its maps are emphasised, which columns lie side by side
// and where its rows start.
struct Fit {
    Arrangement arrangement;
    float cell = 0;
    Emphasis emphasis;
    int variant = 0;
    bool fits = false;
};

// The first arrangement (fewest rows, then fewest columns side by side) that fits the area
// at this cell, the columns left sized for it.
bool fit_at(std::vector<Column>& columns, float cell, const Emphasis& emph, const UiFonts& fonts, float gap, ImVec2 avail,
            Fit& fit) {
    measure_cards(columns, cell, emph, fonts);
    for (int rows : {1, 2, 3, 0})
        for (int variant : variants(columns)) {
            size_columns(columns, variant, fonts);
            Arrangement a = best_arrangement(columns, rows, gap, avail);
            if (fits(a, avail)) {
                fit = Fit{a, cell, emph, variant, true};
                return true;
            }
        }
    return false;
}

// The largest cell at which the pipeline fits the area (one row of slots as tall as the area
// first, then two or three rows): with the score maps as large as their numbers want (up to
// three times the cell) while the cell keeps every token of a short sentence labelled; else
// smaller score maps before smaller cells. What is left over goes to the weights of the head
// shown, the step being taught, up to the largest cell. A pipeline that does not fit (a GPT-2
// layer: twenty maps of 768 columns; a whole block of a short sentence at labelled cells)
// scrolls down, its cells at most kScrollingCell.
Fit fit_layout(std::vector<Column>& columns, const UiFonts& fonts, const ViewOptions& view, ImVec2 avail) {
    const float gap = kColumnGap * fonts.scale;
    measure_texts(columns, fonts);
    Fit fit;
    if (!view.auto_cell) {
        fit.cell = view.cell_size * fonts.scale;
        measure_cards(columns, fit.cell, fit.emphasis, fonts);
        size_columns(columns, 0, fonts);
        fit.arrangement = best_arrangement(columns, 1, gap, avail);
        for (int rows = 2; rows <= 3 && !fits(fit.arrangement, avail); ++rows) {
            Arrangement a = best_arrangement(columns, rows, gap, avail);
            if (a.width <= avail.x) fit.arrangement = a;
        }
        fit.fits = fits(fit.arrangement, avail);
        return fit;
    }
    const float largest = 84.0f * fonts.scale, smallest = 3.0f;
    auto next = [](float c) { return c - (c > 12.0f ? 1.0f : 0.5f); };
    // The cells tried, largest first: whole pixels, half pixels below 12.
    auto cells_down_to = [&](float floor) {
        std::vector<float> cells;
        for (float c = largest; c >= floor; c = next(c)) cells.push_back(c);
        return cells;
    };
    // The largest of `cells` (largest first) at which the pipeline fits with `emph`: a card only
    // grows with the cell, so the fitting cells are a tail of the list and a bisection finds
    // the first (a few fits, not one per cell: a GPT-2 layer tried some 360).
    auto largest_fitting = [&](const std::vector<float>& cells, const Emphasis& emph, Fit& out) {
        size_t lo = 0, hi = cells.size();  // the first fitting index lies in [lo, hi]; hi: none
        Fit trial;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (fit_at(columns, cells[mid], emph, fonts, gap, avail, trial)) hi = mid;
            else lo = mid + 1;
        }
        return lo < cells.size() && fit_at(columns, cells[lo], emph, fonts, gap, avail, out);
    };
    // Score maps with their numbers while every token keeps its label; else the largest cell
    // that keeps the labels. Below it only every head side by side (a comparison of heads needs
    // all of them in view) or a pipeline without a short sentence's map shrinks further; one
    // head's pipeline of a short sentence scrolls instead, its tokens labelled.
    const float labelled = labelled_cell(columns, fonts);
    // Below a third of the room a score's number needs ("−2.75"), three times the cell buys no
    // numbers: the larger cell is worth more then.
    const float scores_readable = number_room(fonts, 5.0f) / 3.0f;
    bool found = largest_fitting(cells_down_to(std::max(labelled, scores_readable)), Emphasis{3.0f, 1.0f}, fit);
    const bool shrink = view.all_heads || labelled >= largest;
    if (!found) {
        // The largest cell with the score maps at the cell, then the largest emphasis that
        // still fits at that cell (smaller score maps before smaller cells).
        Fit plain;
        if (largest_fitting(cells_down_to(shrink ? smallest : labelled), Emphasis{1.0f, 1.0f}, plain)) {
            for (float scores : {3.0f, 2.0f, 1.5f, 1.0f})
                if (fit_at(columns, plain.cell, Emphasis{scores, 1.0f}, fonts, gap, avail, fit)) {
                    found = true;
                    break;
                }
        }
    }
    if (found) {
        // The room left over: the score maps towards their numbers, then the weights larger.
        Fit grown;
        for (float scores = fit.emphasis.scores + 0.25f; scores <= 3.0f; scores += 0.25f) {
            if (!fit_at(columns, fit.cell, Emphasis{scores, 1.0f}, fonts, gap, avail, grown)) break;
            fit = grown;
        }
        // (A floor: below the room the weights' numbers need, a larger one changes nothing.)
        for (float taught = 1.1f; taught * fit.cell <= largest; taught *= 1.1f) {
            if (!fit_at(columns, fit.cell, Emphasis{fit.emphasis.scores, taught}, fonts, gap, avail, grown)) break;
            fit = grown;
        }
        fit_at(columns, fit.cell, fit.emphasis, fonts, gap, avail, fit);  // the columns sized for the fit kept
        return fit;
    }
    // Too tall for the window: the largest cells up to kScrollingCell (up to the labelled cell
    // where that is what did not fit) that fit the width (the panel scrolls down), the
    // arrangement with the least height.
    fit.emphasis = Emphasis{1.0f, 1.0f};  // no longer than it must be: the score maps at the cell
    for (float c = std::min({largest, kScrollingCell * fonts.scale, labelled}); c >= smallest; c = next(c)) {
        measure_cards(columns, c, fit.emphasis, fonts);
        int best_variant = -1;
        for (int rows : {1, 2, 3, 0})
            for (int variant : variants(columns)) {
                size_columns(columns, variant, fonts);
                Arrangement a = best_arrangement(columns, rows, gap, avail);
                if (a.width <= avail.x && (best_variant < 0 || a.height < fit.arrangement.height)) {
                    fit.arrangement = a;
                    best_variant = variant;
                }
            }
        if (best_variant >= 0) {
            size_columns(columns, best_variant, fonts);
            fit.cell = c;
            fit.variant = best_variant;
            return fit;
        }
    }
    fit.cell = smallest;  // not even the width fits: smallest cells, scrolling both ways
    measure_cards(columns, fit.cell, fit.emphasis, fonts);
    size_columns(columns, 2, fonts);
    fit.variant = 2;
    fit.arrangement = best_arrangement(columns, 1, gap, avail);
    return fit;
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

// The way on down a slot: a short arrow in the gap above the next column, `length` tall.
void draw_down_arrow(ImVec2 top, float length) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImU32 colour = IM_COL32(140, 140, 150, 255);
    const float head = std::min(6.0f, length * 0.4f);
    draw->AddLine(ImVec2(top.x, top.y + 2.0f), ImVec2(top.x, top.y + length - head - 1.0f), colour, 2.0f);
    draw->AddTriangleFilled(ImVec2(top.x - head, top.y + length - head - 2.0f), ImVec2(top.x + head, top.y + length - head - 2.0f),
                            ImVec2(top.x, top.y + length - 1.0f), colour);
}

// From the last column of a slot to the top of the next one: right out of `from`'s title line,
// up the gap, right into `to`'s title line.
void draw_elbow_arrow(ImVec2 from, ImVec2 to, const UiFonts& fonts) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImU32 colour = IM_COL32(140, 140, 150, 255);
    const float line = fonts.title->FontSize * 0.6f, mid = (from.x + to.x) * 0.5f;
    const ImVec2 points[4] = {ImVec2(from.x + 4.0f, from.y + line), ImVec2(mid, from.y + line), ImVec2(mid, to.y + line),
                              ImVec2(to.x - 8.0f, to.y + line)};
    draw->AddPolyline(points, 4, colour, 0, 2.0f);
    draw->AddTriangleFilled(ImVec2(to.x - 9.0f, to.y + line - 5.0f), ImVec2(to.x - 9.0f, to.y + line + 5.0f), ImVec2(to.x - 2.0f, to.y + line),
                            colour);
}

void draw_arrow(ImVec2 at, const UiFonts& fonts) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float w = ImGui::CalcTextSize(kArrow).x;
    draw->AddText(fonts.title, fonts.title->FontSize * 1.3f, ImVec2(at.x - w * 0.5f, at.y), IM_COL32(140, 140, 150, 255), kArrow);
}

// The stage strip: a button for every step the pipeline draws, in its order, the one at the top
// of the view lit; wrapped onto a second line in a narrow window. Returns the step clicked.
std::optional<attn::Column> draw_stage_strip(PanelContext state, const std::vector<Column>& columns, const PipelineLayout& layout) {
    std::optional<attn::Column> clicked;
    const std::optional<attn::Column> lit = layout.anchor ? layout.anchor
                                            : columns.empty() ? std::nullopt : std::optional<attn::Column>(columns.front().stage);
    ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(5.0f, 1.0f));
    ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(4.0f, 3.0f));
    ImGui::TextDisabled("Go to:");
    const float right = ImGui::GetWindowContentRegionMax().x;
    std::optional<attn::Column> previous;
    for (const Column& column : columns) {
        if (previous == column.stage) continue;  // Q, K and V split into columns of every head: one step
        previous = column.stage;
        const char* label = column_label(column.stage);
        const float width = ImGui::CalcTextSize(label).x + 10.0f;
        ImGui::SameLine();
        if (ImGui::GetCursorPosX() + width > right) ImGui::NewLine();
        const bool here = lit == column.stage;
        if (here) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
        ImGui::PushID(static_cast<int>(column.stage));
        if (ImGui::SmallButton(label)) clicked = column.stage;
        ImGui::PopID();
        if (here) ImGui::PopStyleColor();
        // The step drawn large (by default the weights) is outlined; the lit one is where the view is.
        if (column.focused)
            ImGui::GetWindowDrawList()->AddRect(ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), IM_COL32(240, 200, 90, 255), 3.0f, 0,
                                                1.5f * state.fonts.scale);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(state.view.all_heads ? "Scroll the pipeline to %s"
                                                   : "Draw %s large, with its numbers where they fit, and scroll to it", label);
        const std::string id = std::string("pipeline.step.") + label;
        record_item(state, id.c_str(), here ? std::string("[") + label + "]" : std::string(label));
    }
    ImGui::PopStyleVar(2);
    return clicked;
}

// Keeps the view on a step: the one asked for (a click in the strip, a head opened at its
// weights) goes to the view's top-left corner; otherwise, when the layout changed under the view
// (another head, the window resized), the step that was there stays there. Then notes the step
// there: the last in pipeline order whose top-left corner is in view or above and left of it (a
// row's first, a slot's lowest), or the one asked for while it is still in view on that row.
void keep_step_in_view(PipelineLayout& layout, std::optional<attn::Column> asked, bool relaid, float gap) {
    auto mark_of = [&](attn::Column stage) -> const PipelineLayout::StageMark* {
        for (const PipelineLayout::StageMark& m : layout.stage_tops)
            if (m.stage == stage) return &m;
        return nullptr;
    };
    // A jump is made again for a few frames: the view scrolls as far as last frame's content
    // reached, and a layout just made may be larger.
    if (asked) {
        layout.jump = asked;
        layout.jump_frames = 3;
    }
    if (layout.jump_frames > 0) {
        --layout.jump_frames;
        if (const auto* m = mark_of(*layout.jump)) {
            ImGui::SetScrollX(m->x);
            ImGui::SetScrollY(m->y);
            layout.anchor = layout.jump;
            layout.anchor_dx = layout.anchor_dy = 0;
            return;
        }
        layout.jump_frames = 0;
    } else if (relaid && layout.anchor && (ImGui::GetScrollX() > 0 || ImGui::GetScrollY() > 0)) {
        if (const auto* m = mark_of(*layout.anchor)) {
            ImGui::SetScrollX(m->x + layout.anchor_dx);
            ImGui::SetScrollY(m->y + layout.anchor_dy);
            return;
        }
    }
    const float left = ImGui::GetScrollX(), top = ImGui::GetScrollY(), width = ImGui::GetWindowWidth();
    const std::optional<attn::Column> before = layout.anchor;
    layout.anchor.reset();
    const PipelineLayout::StageMark* found = nullptr;
    for (const PipelineLayout::StageMark& m : layout.stage_tops)
        if (m.y <= top + 1.0f && m.x <= left + gap + 1.0f) found = &m;
    if (const auto* kept = before ? mark_of(*before) : nullptr; kept && found && kept->y == found->y && kept->x >= left - 1.0f &&
                                                                 kept->x < left + width)
        found = kept;
    if (found == nullptr) return;
    layout.anchor = found->stage;
    layout.anchor_dx = left - found->x;
    layout.anchor_dy = top - found->y;
}

}  // namespace

void draw_pipeline(MapContext state, PipelineLayout& pipeline_layout, HeatmapTextures& textures) {
    const Trace& t = state.session.trace;
    if (!t.ok) {
        ImGui::TextWrapped("Nothing to show yet: the scenario has not run (see the status bar).");
        return;
    }
    Builder builder{t, state.view, pipeline_layout.focus_step, state.session.scenario.name, {}};
    builder.build();
    std::vector<Column>& columns = builder.columns;
    std::optional<attn::Column> asked = draw_stage_strip(state, columns, pipeline_layout);
    if (asked) pipeline_layout.focus_step = asked;
    // A jump asked with a new scenario (a model's layer opened at its weights) waits for that
    // scenario's trace: taken on the trace still shown, it would scroll the old layout.
    const edits::Session& session = state.session;
    if (pipeline_layout.jump_to && session.pending.empty() && (!session.dirty || !session.errors.empty())) {
        if (!asked && session.errors.empty()) asked = pipeline_layout.jump_to;
        pipeline_layout.jump_to.reset();
    }

    ImGui::BeginChild("pipeline.cards", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
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
    std::snprintf(view_key, sizeof view_key, "%.1f,%.1f,%d,%d,%.1f,%d,%d,%d", avail.x, avail.y, state.view.all_heads, state.view.auto_cell,
                  state.view.cell_size, state.view.show_identity_stages, state.view.shown_head,
                  pipeline_layout.focus_step ? static_cast<int>(*pipeline_layout.focus_step) : -1);
    signature += view_key;
    PipelineLayout& cached = pipeline_layout;
    Arrangement layout;
    const float gap = kColumnGap * state.fonts.scale;
    const bool relaid = cached.signature != signature;
    if (!relaid) {
        set_all_heads_weights_emphasis(columns, cached.weights_emphasis);
        measure_texts(columns, state.fonts);
        measure_cards(columns, cached.cell, Emphasis{cached.scores_emphasis, cached.taught_emphasis}, state.fonts);
        size_columns(columns, cached.variant, state.fonts);
        layout = arrange(columns, cached.row_starts, gap, cached.fill_height);
    } else {
        // All heads' weights three times the cell where the pipeline still fits the window,
        // else twice, as the other heads' maps.
        float weights_emphasis = 3.0f;
        set_all_heads_weights_emphasis(columns, weights_emphasis);
        Fit fit = fit_layout(columns, state.fonts, state.view, avail);
        if (!fit.fits && state.view.all_heads) {
            weights_emphasis = 2.0f;
            set_all_heads_weights_emphasis(columns, weights_emphasis);
            fit = fit_layout(columns, state.fonts, state.view, avail);
        }
        layout = fit.arrangement;
        cached.signature = signature;
        cached.cell = fit.cell;
        cached.variant = fit.variant;
        cached.row_starts = layout.row_starts;
        cached.fill_height = layout.fill_height;
        cached.weights_emphasis = weights_emphasis;
        cached.scores_emphasis = fit.emphasis.scores;
        cached.taught_emphasis = fit.emphasis.taught;
    }
    const ImVec2 origin = ImGui::GetCursorScreenPos();

    cached.stage_tops.clear();
    float y = origin.y;
    size_t slot = 0;
    for (size_t r = 0; r < layout.row_starts.size(); ++r) {
        const size_t end = r + 1 < layout.row_starts.size() ? layout.row_starts[r + 1] : columns.size();
        float x = origin.x, row_h = 0;
        if (r > 0) {
            draw_arrow(ImVec2(x + gap * 0.5f, y + state.fonts.title->FontSize * 1.5f), state.fonts);
            x += gap;
        }
        float last_y = y;  // the top of the last column drawn in this row's previous slot
        for (size_t c = layout.row_starts[r]; c < end;) {
            if (c > layout.row_starts[r]) {
                if (last_y > y) draw_elbow_arrow(ImVec2(x, last_y), ImVec2(x + gap, y), state.fonts);  // up to the next slot's top
                else draw_arrow(ImVec2(x + gap * 0.5f, y + state.fonts.title->FontSize * 1.5f), state.fonts);
                x += gap;
            }
            const size_t slot_end = slot + 1 < layout.slot_starts.size() ? std::min(end, layout.slot_starts[slot + 1]) : end;
            ++slot;
            float column_y = y, slot_w = 0;
            for (; c < slot_end; ++c) {
                if (column_y > y) {  // read on down the slot
                    draw_down_arrow(ImVec2(x + 10.0f * state.fonts.scale, column_y - kRowGap), kRowGap);
                }
                if (cached.stage_tops.empty() || cached.stage_tops.back().stage != columns[c].stage)
                    cached.stage_tops.push_back({columns[c].stage, x - origin.x, column_y - origin.y});
                float card_x = x, card_y = column_y;
                const float top = grids_top(columns[c]);
                for (Card& card : columns[c].cards) {
                    const float lowered = columns[c].horizontal ? top - grid_top(card) : 0.0f;
                    ImGui::SetCursorScreenPos(ImVec2(card_x, card_y + lowered));
                    if (card.note.empty()) draw_card(card.spec, card.metrics, state, textures);
                    else draw_note(card, state.fonts);
                    if (columns[c].horizontal) card_x += card.metrics.width + kCardGap * state.fonts.scale * 1.5f;
                    else card_y += card.metrics.height + kCardGap;
                }
                slot_w = std::max(slot_w, columns[c].width);
                last_y = column_y;
                column_y += columns[c].height + kRowGap;
            }
            x += slot_w;
            row_h = std::max(row_h, column_y - kRowGap - y);
        }
        y += row_h + kRowGap;
    }
    // Reserve the whole area so the panel scrolls when it does not fit.
    ImGui::SetCursorScreenPos(origin);
    ImGui::Dummy(ImVec2(layout.width, layout.height));
    keep_step_in_view(cached, asked, relaid, gap);
    ImGui::EndChild();
    record_item(state, "pipeline.view", std::string());
}

}  // namespace attn::ui
