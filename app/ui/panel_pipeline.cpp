// The pipeline: every stage of the trace as columns of heatmap cards, laid out to fit the
// window (the largest cell size at which the columns fit, wrapping onto up to 3 rows).
//
// Index
// [SECTION] Titles and shapes
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
#include "ui/glyphs.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

// [SECTION] Titles and shapes

using glyph::kArrow;
using glyph::kDot;
using glyph::kSqrt;
using glyph::kT;
using glyph::kTimes;
const char* const kDk = "d\xE2\x82\x96";    // dₖ

std::string dims(Eigen::Index rows, Eigen::Index cols) {
    return std::to_string(rows) + kTimes + std::to_string(cols);
}
std::string paren(Eigen::Index rows, Eigen::Index cols) { return "(" + dims(rows, cols) + ")"; }

// A card is a heatmap, or a short note where a stage changes nothing.
struct Card {
    HeatmapSpec spec;
    std::string note;  // non-empty: a note card
    CardText text;
    CardMetrics metrics;
};

// Cards stacked top to bottom, or side by side when the layout finds that fits better
// (`flexible` columns only: one stage's matrices, not one card per head).
struct Column {
    std::vector<Card> cards;
    bool flexible = false;
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

struct Builder {
    const Trace& t;
    const Scenario& s;
    const ViewOptions& view;
    std::vector<Column> columns;

    HeatmapSpec base(std::string name, const Matrix& m, ColorScale scale, Axis rows, Axis cols) const {
        HeatmapSpec spec;
        spec.name = std::move(name);
        spec.values = &m;
        spec.scale = scale;
        spec.row_axis = rows;
        spec.col_axis = cols;
        spec.row_tokens = rows == Axis::Query ? &t.query_tokens : rows == Axis::Key ? &t.key_tokens : nullptr;
        spec.col_tokens = cols == Axis::Query ? &t.query_tokens : cols == Axis::Key ? &t.key_tokens : nullptr;
        return spec;
    }

    void add(Column& column, HeatmapSpec spec, std::string title, std::string shape) {
        spec.title = std::move(title);
        spec.shape = std::move(shape);
        // Every head after the first in an all-heads column: a one-line "head h" title.
        const auto dot = spec.name.find('.');
        if (view.all_heads && t.heads > 1 && spec.name.rfind("head", 0) == 0 && dot != std::string::npos &&
            spec.name.compare(0, dot, "head0") != 0) {
            spec.compact = true;
            spec.title = "head " + std::to_string(std::atoi(spec.name.c_str() + 4) + 1);
        }
        Card card;
        card.spec = std::move(spec);
        column.cards.push_back(std::move(card));
    }

    std::string head_prefix(int h) const {
        if (t.heads == 1) return "";
        return "head " + std::to_string(h + 1) + (view.all_heads ? ": " : "/" + std::to_string(t.heads) + ": ");
    }

    void inputs() {
        if (s.input != InputMode::Embeddings) return;
        const bool cross = s.attention == AttentionKind::Cross;
        Column x;
        HeatmapSpec spec = base("x", t.x, ColorScale::Diverging, Axis::Query, Axis::Dim);
        spec.editable = true;
        spec.edit_target = edits::MatrixId::X;
        add(x, spec, cross ? "X (target)" : "X  embeddings", "n" + std::string(kTimes) + "d_model = " + dims(t.x.rows(), t.x.cols()));
        if (cross) {
            spec = base("source_x", t.source_x, ColorScale::Diverging, Axis::Key, Axis::Dim);
            spec.editable = true;
            spec.edit_target = edits::MatrixId::SourceX;
            add(x, spec, "X (source)", dims(t.source_x.rows(), t.source_x.cols()));
        }
        x.flexible = true;
        columns.push_back(std::move(x));
        const bool additive = s.positional == PositionalEncoding::Sinusoidal || s.positional == PositionalEncoding::Learned;
        if (!additive) return;
        Column pe, x_pe;
        add(pe, base("pe", t.pe, ColorScale::Diverging, Axis::Query, Axis::Dim),
            std::string("PE  ") + to_string(s.positional), dims(t.pe.rows(), t.pe.cols()));
        add(x_pe, base("x_pe", t.x_pe, ColorScale::Diverging, Axis::Query, Axis::Dim), "X + PE",
            dims(t.x_pe.rows(), t.x_pe.cols()));
        if (cross) {
            add(pe, base("source_pe", t.source_pe, ColorScale::Diverging, Axis::Key, Axis::Dim), "PE (source)",
                dims(t.source_pe.rows(), t.source_pe.cols()));
            add(x_pe, base("source_x_pe", t.source_x_pe, ColorScale::Diverging, Axis::Key, Axis::Dim), "X + PE (source)",
                dims(t.source_x_pe.rows(), t.source_x_pe.cols()));
        }
        pe.flexible = x_pe.flexible = true;
        columns.push_back(std::move(pe));
        columns.push_back(std::move(x_pe));
    }

    void weights(int shown_head) {
        if (s.input != InputMode::Embeddings) return;
        Column w;
        const struct { const char* name; const char* title; const Matrix* m; edits::MatrixId id; int width; } list[] = {
            {"w_q", "W_Q", &t.w_q, edits::MatrixId::WQ, t.d_k},
            {"w_k", "W_K", &t.w_k, edits::MatrixId::WK, t.d_k},
            {"w_v", "W_V", &t.w_v, edits::MatrixId::WV, t.d_v},
        };
        for (const auto& item : list) {
            HeatmapSpec spec = base(item.name, *item.m, ColorScale::Diverging, Axis::Dim, Axis::Dim);
            spec.editable = true;
            spec.edit_target = item.id;
            std::string shape = dims(item.m->rows(), item.m->cols());
            if (t.heads > 1 && shown_head >= 0) {
                spec.band_begin = shown_head * item.width;
                spec.band_end = spec.band_begin + item.width;
                shape += ", head " + std::to_string(shown_head + 1) + ": cols " + std::to_string(spec.band_begin) + "\xE2\x80\x93" +
                         std::to_string(spec.band_end - 1);
            }
            add(w, spec, item.title, shape);
        }
        w.flexible = true;
        columns.push_back(std::move(w));
    }

    // One column per stage; each holds one card per shown head.
    void heads() {
        std::vector<int> shown;
        if (view.all_heads) {
            for (int h = 0; h < t.heads; ++h) shown.push_back(h);
        } else {
            shown.push_back(std::clamp(view.shown_head, 0, t.heads - 1));
        }
        const bool direct = s.input == InputMode::Direct;
        const bool split_qkv = view.all_heads && t.heads > 1;
        Column q, k, v, scores, scaled, masked, weights, output;
        for (int h : shown) {
            const HeadTrace& head = t.head[static_cast<size_t>(h)];
            const std::string hp = "head" + std::to_string(h) + ".";
            const std::string prefix = head_prefix(h);
            const struct { const char* field; const char* label; const Matrix* m; Axis rows; edits::MatrixId id; int width; Column* column; } qkv[] = {
                {"q", "Q", &head.q, Axis::Query, edits::MatrixId::Q, t.d_k, &q},
                {"k", "K", &head.k, Axis::Key, edits::MatrixId::K, t.d_k, split_qkv ? &k : &q},
                {"v", "V", &head.v, Axis::Key, edits::MatrixId::V, t.d_v, split_qkv ? &v : &q},
            };
            for (const auto& item : qkv) {
                HeatmapSpec spec = base(hp + item.field, *item.m, ColorScale::Diverging, item.rows, Axis::Dim);
                std::string title = prefix + item.label, shape;
                if (direct) {
                    spec.editable = true;
                    spec.edit_target = item.id;
                    spec.edit_col_offset = h * item.width;
                    title += " (given)";
                    shape = dims(item.m->rows(), item.m->cols());
                } else {
                    const Matrix& input = item.rows == Axis::Query ? t.x_pe : (s.attention == AttentionKind::Cross ? t.source_x_pe : t.x_pe);
                    title += std::string(" = ") + (s.positional == PositionalEncoding::Sinusoidal || s.positional == PositionalEncoding::Learned ? "(X+PE)" : "X") +
                             kDot + "W_" + item.label;
                    shape = paren(input.rows(), input.cols()) + kDot + paren(input.cols(), item.width) + " " + kArrow + " " +
                            dims(item.m->rows(), item.m->cols());
                }
                if (s.positional == PositionalEncoding::Rotary && item.id != edits::MatrixId::V) shape += ", RoPE";
                spec.col_index_offset = 0;
                add(*item.column, spec, title, shape);
            }
            if (t.detail == Detail::OutputOnly) {
                pooled_weights(head, hp, prefix, weights, output);
                continue;
            }
            add(scores, base(hp + "scores", head.scores, ColorScale::Diverging, Axis::Query, Axis::Key),
                prefix + "Q" + kDot + "K" + kT,
                paren(head.q.rows(), head.q.cols()) + kDot + paren(head.k.cols(), head.k.rows()) + " " + kArrow + " " +
                    dims(head.scores.rows(), head.scores.cols()));
            if (head.position_bias.size() != 0)
                add(scaled, base(hp + "position_bias", head.position_bias, ColorScale::Diverging, Axis::Query, Axis::Key),
                    prefix + "ALiBi bias", "\xE2\x88\x92m|i\xE2\x88\x92j|, m = " + format_value(head.alibi_slope, 3));
            char scale_text[96];
            if (s.scale)
                std::snprintf(scale_text, sizeof scale_text, "%s%d = %.3f %s %s", kSqrt, t.d_k, std::sqrt(static_cast<double>(t.d_k)),
                              kArrow, dims(head.scaled_scores.rows(), head.scaled_scores.cols()).c_str());
            else
                std::snprintf(scale_text, sizeof scale_text, "scaling off (%s1)", kTimes);
            add(scaled, base(hp + "scaled_scores", head.scaled_scores, ColorScale::Diverging, Axis::Query, Axis::Key),
                prefix + (s.scale ? std::string("\xC3\xB7 ") + kSqrt + kDk : std::string("unscaled")) +
                    (head.position_bias.size() ? " + bias" : ""),
                scale_text);
            const bool masks = s.mask != MaskKind::None || !t.visible.all();
            if (masks || view.show_identity_stages) {
                HeatmapSpec spec = base(hp + "masked_scores", head.masked_scores, ColorScale::Diverging, Axis::Query, Axis::Key);
                spec.mask = &t.visible;
                spec.masked_value = s.masked_fill;
                spec.paints_mask = true;
                std::string title = prefix + "mask: " + to_string(s.mask);
                if (s.mask == MaskKind::SlidingWindow) title += " " + std::to_string(s.window);
                add(masked, spec, title, "hidden " + std::string(kArrow) + " " + format_value(s.masked_fill, 1));
            } else if (h == shown.front()) {
                masked.cards.push_back(note("mask: none", "every key visible:\nmasked = scaled"));
            }
            HeatmapSpec w = base(hp + "weights", head.weights, ColorScale::Weights, Axis::Query, Axis::Key);
            w.mask = &t.visible;
            w.show_masked_value = false;
            w.paints_mask = true;
            add(weights, w, prefix + "softmax " + (s.softmax == SoftmaxKind::Stable ? "(stable)" : "(naive)"),
                "each row sums to 1 " + std::string(kArrow) + " " + dims(head.weights.rows(), head.weights.cols()));
            add(output, base(hp + "output", head.output, ColorScale::Diverging, Axis::Query, Axis::Dim),
                prefix + "weights" + kDot + "V",
                paren(head.weights.rows(), head.weights.cols()) + kDot + paren(head.v.rows(), head.v.cols()) + " " + kArrow + " " +
                    dims(head.output.rows(), head.output.cols()));
        }
        q.flexible = !split_qkv;  // Q, K, V of one head
        for (Column* c : {&q, &k, &v, &scores, &scaled, &masked, &weights, &output})
            if (!c->cards.empty()) columns.push_back(std::move(*c));
    }

    // Output-only: no (n_q × n_k) matrix exists. The weights are the pooled grid (each cell the
    // largest weight of its block of queries × keys), then the head's output.
    void pooled_weights(const HeadTrace& head, const std::string& hp, const std::string& prefix, Column& weights, Column& output) {
        const PooledWeights& pooled = head.pooled_weights;
        if (pooled.values.size() != 0) {
            HeatmapSpec w = base(hp + "pooled_weights", pooled.values, ColorScale::Weights, Axis::Query, Axis::Key);
            w.pooled = &pooled;
            const int rows = pooled.row_end - pooled.row_begin, cols = pooled.col_end - pooled.col_begin;
            const bool whole = rows == t.n_queries && cols == t.n_keys;
            const bool full_resolution = pooled.values.rows() == rows && pooled.values.cols() == cols;
            add(weights, w, prefix + "softmax weights, " + (full_resolution ? "one cell per token" : "max-pooled"),
                (whole ? dims(t.n_queries, t.n_keys) : "queries " + std::to_string(pooled.row_begin) + "\xE2\x80\x93" +
                                                           std::to_string(pooled.row_end - 1) + ", keys " +
                                                           std::to_string(pooled.col_begin) + "\xE2\x80\x93" + std::to_string(pooled.col_end - 1)) +
                    " " + kArrow + " " + dims(pooled.values.rows(), pooled.values.cols()) + " (output-only)");
        }
        add(output, base(hp + "output", head.output, ColorScale::Diverging, Axis::Query, Axis::Dim), prefix + "weights" + kDot + "V",
            "streamed, online softmax " + std::string(kArrow) + " " + dims(head.output.rows(), head.output.cols()));
    }

    void outputs() {
        Column concat, out;
        if (t.heads > 1) {
            add(concat, base("concat", t.concat, ColorScale::Diverging, Axis::Query, Axis::Dim), "concat heads",
                std::to_string(t.n_queries) + kTimes + "(" + std::to_string(t.heads) + kDot + std::to_string(t.d_v) + ") " +
                    kArrow + " " + dims(t.concat.rows(), t.concat.cols()));
        }
        if (t.w_o.size() != 0) {
            HeatmapSpec spec = base("w_o", t.w_o, ColorScale::Diverging, Axis::Dim, Axis::Dim);
            spec.editable = true;
            spec.edit_target = edits::MatrixId::WO;
            add(concat, spec, "W_O", dims(t.w_o.rows(), t.w_o.cols()));
            add(out, base("output", t.output, ColorScale::Diverging, Axis::Query, Axis::Dim), "output = concat" + std::string(kDot) + "W_O",
                paren(t.concat.rows(), t.concat.cols()) + kDot + paren(t.w_o.rows(), t.w_o.cols()) + " " + kArrow + " " +
                    dims(t.output.rows(), t.output.cols()));
        } else if (t.heads > 1) {
            concat.cards.push_back(note("no W_O", "the output is\nthe concatenation"));
        }
        concat.flexible = true;
        if (!concat.cards.empty()) columns.push_back(std::move(concat));
        if (!out.cards.empty()) columns.push_back(std::move(out));
        if (!t.has_block) return;
        Column block1, block2;
        const BlockTrace& b = t.block;
        add(block1, base("block.residual", b.residual, ColorScale::Diverging, Axis::Query, Axis::Dim), "residual: X + attention",
            dims(b.residual.rows(), b.residual.cols()));
        add(block1, base("block.norm1", b.norm1, ColorScale::Diverging, Axis::Query, Axis::Dim), "LayerNorm",
            dims(b.norm1.rows(), b.norm1.cols()));
        add(block2, base("block.ffn_output", b.ffn_output, ColorScale::Diverging, Axis::Query, Axis::Dim), "feed-forward",
            "ReLU(x" + std::string(kDot) + "W\xE2\x82\x81+b\xE2\x82\x81)" + kDot + "W\xE2\x82\x82+b\xE2\x82\x82 " + kArrow + " " +
                dims(b.ffn_output.rows(), b.ffn_output.cols()));
        add(block2, base("block.output", b.output, ColorScale::Diverging, Axis::Query, Axis::Dim), "block output",
            "LayerNorm(x + FFN) " + std::string(kArrow) + " " + dims(b.output.rows(), b.output.cols()));
        block1.flexible = block2.flexible = true;
        columns.push_back(std::move(block1));
        columns.push_back(std::move(block2));
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
                const float cell_w = std::max(min_w, cell * std::min(1.0f, kBigMatrixCells / cols));
                const float cell_h = std::max(min_h, cell * std::min(1.0f, kBigMatrixCells / rows));
                card.metrics = measure_card(card.spec, card.text, cell_w, cell_h, fonts);
            }
        }
}

// Column sizes for an orientation variant: 0 all stacked, 1 the projections (W, Q K V)
// side by side, 2 every flexible column side by side.
void size_columns(std::vector<Column>& columns, int variant, const UiFonts& fonts) {
    for (size_t i = 0; i < columns.size(); ++i) {
        Column& column = columns[i];
        const bool projection = column.cards.size() == 3 && column.flexible;
        column.horizontal = column.flexible && column.cards.size() > 1 && (variant == 2 || (variant == 1 && projection));
        column.width = column.height = 0;
        for (const Card& card : column.cards) {
            const float gap = kCardGap * fonts.scale * 1.5f;
            if (column.horizontal) {
                column.width += card.metrics.width + (column.width > 0 ? gap : 0.0f);
                column.height = std::max(column.height, card.metrics.height);
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

// The arrangement in `rows` rows (contiguous columns) with the smallest area overflow.
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
    if (rows == 1 || n < 2) consider({0});
    else if (rows == 2)
        for (size_t a = 1; a < n; ++a) consider({0, a});
    else
        for (size_t a = 1; a < n; ++a)
            for (size_t b = a + 1; b < n; ++b) consider({0, a, b});
    return best;
}

bool fits(const Arrangement& a, ImVec2 avail) { return a.width <= avail.x && a.height <= avail.y; }

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
        for (int rows = 1; rows <= 3; ++rows)
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
        for (int rows = 1; rows <= 3; ++rows)
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

void draw_pipeline(AppState& state, HeatmapTextures& textures) {
    const Trace& t = state.session.trace;
    if (!t.ok) {
        ImGui::TextWrapped("Nothing to show yet: the scenario has not run (see the status bar).");
        return;
    }
    Builder builder{t, state.session.scenario, state.view, {}};
    const int shown_head = state.view.all_heads ? -1 : std::clamp(state.view.shown_head, 0, t.heads - 1);
    builder.inputs();
    builder.weights(shown_head);
    builder.heads();
    builder.outputs();
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
    PipelineLayout& cached = state.pipeline_layout;
    Arrangement layout;
    const float gap = kColumnGap * state.fonts.scale;
    if (cached.signature == signature) {
        measure_texts(columns, state.fonts);
        measure_cards(columns, cached.cell, state.fonts);
        size_columns(columns, cached.variant, state.fonts);
        layout = arrange(columns, cached.row_starts, gap);
    } else {
        float cell = 0;
        int variant = 0;
        layout = fit_layout(columns, state.fonts, state.view, avail, cell, variant);
        cached = PipelineLayout{signature, cell, variant, layout.row_starts};
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
            for (Card& card : columns[c].cards) {
                ImGui::SetCursorScreenPos(ImVec2(card_x, card_y));
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
