// A heatmap card: layout, cells (rectangles or one texture), labels, legend, tooltip,
// zoom/pan and in-place editing.
//
// Index
// [SECTION] Text helpers
// [SECTION] Measuring
// [SECTION] Textures
// [SECTION] Cells
// [SECTION] Labels and legend
// [SECTION] Interaction
// [SECTION] Card
#include "ui/heatmap.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include <imgui.h>
#include <imgui_internal.h>

#include "ui/arithmetic.hpp"

namespace attn::ui {

namespace {

constexpr float kLabelMax = 110.0f;  // row/column token labels are truncated beyond this (× scale)
constexpr ImU32 kTextColor = IM_COL32(230, 230, 230, 255);
constexpr ImU32 kDimText = IM_COL32(160, 160, 170, 255);
constexpr ImU32 kHighlightText = IM_COL32(255, 210, 80, 255);
constexpr ImU32 kNonFiniteText = IM_COL32(255, 120, 90, 255);

// [SECTION] Text helpers

float text_width(const ImFont* font, const std::string& text) {
    return font->CalcTextSizeA(font->FontSize, FLT_MAX, 0.0f, text.c_str()).x;
}

// The lines of a title or shape line its caller wrapped with '\n' (the stage view's narrow cards).
float line_count(const std::string& text) { return static_cast<float>(1 + std::count(text.begin(), text.end(), '\n')); }

int code_points(const std::string& text) {
    int n = 0;
    for (unsigned char ch : text)
        if ((ch & 0xC0) != 0x80) ++n;
    return n;
}

// The text shortened with "…" to fit width.
std::string fit_text(const ImFont* font, const std::string& text, float width) {
    if (text_width(font, text) <= width) return text;
    std::string cut = text;
    while (!cut.empty()) {
        do cut.pop_back();
        while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80);
        if (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0xC0) cut.pop_back();
        if (text_width(font, cut + "\xE2\x80\xA6") <= width) return cut + "\xE2\x80\xA6";
    }
    return "";
}

// Text turned 90° counter-clockwise, reading upward from `pivot` (its baseline side on
// the right). ImGui has no rotated text, so the glyph quads are rotated in place.
void text_rotated(ImDrawList* draw, const ImFont* font, ImVec2 pivot, ImU32 color, const std::string& text) {
    const float w = text_width(font, text), h = font->FontSize;
    // The unrotated text lies in [pivot.x, pivot.x + w] × [pivot.y, pivot.y + h]: it is laid
    // out under a clip rectangle holding that box, so no glyph is culled before it is turned.
    // The turned glyphs are then cut by the clip rectangle in force (the card's label strip
    // inside the window), never by that box: a card scrolled away keeps its labels out of the
    // menu bar.
    const ImVec4 outer = draw->_ClipRectStack.back();
    draw->PushClipRect(ImVec2(pivot.x, pivot.y - w), ImVec2(pivot.x + std::max(w, h), pivot.y + h), false);
    const int first = draw->VtxBuffer.Size;
    draw->AddText(font, font->FontSize, pivot, color, text.c_str());
    for (int i = first; i < draw->VtxBuffer.Size; ++i) {
        ImVec2& p = draw->VtxBuffer[i].pos;
        const ImVec2 d(p.x - pivot.x, p.y - pivot.y);
        p = ImVec2(pivot.x + d.y, pivot.y - d.x);
    }
    draw->CmdBuffer.back().ClipRect = outer;  // the command holding the turned glyphs
    draw->PopClipRect();
}

std::string label_text(const std::vector<std::string>* tokens, Axis axis, int i, int offset) {
    if (axis != Axis::Dim && tokens && i < static_cast<int>(tokens->size())) return (*tokens)[static_cast<size_t>(i)];
    return std::to_string(i + offset + 1);  // counted from 1, as everywhere on screen
}

// Bin i of a pooled axis covers tokens [begin + i·len/bins, begin + (i+1)·len/bins) (as core's max_pool).
void pooled_range(const PooledWeights& p, bool rows, int i, int& first, int& last) {
    const long long begin = rows ? p.row_begin : p.col_begin, end = rows ? p.row_end : p.col_end;
    const long long bins = std::max<long long>(1, rows ? p.values.rows() : p.values.cols());
    first = static_cast<int>(begin + i * (end - begin) / bins);
    last = static_cast<int>(begin + (i + 1) * (end - begin) / bins) - 1;
}

// The label of row (rows) or column i: a token, an index, or a pooled bin's token range.
std::string axis_label(const HeatmapSpec& spec, bool rows, int i) {
    if (spec.pooled != nullptr) {
        int first = 0, last = 0;
        pooled_range(*spec.pooled, rows, i, first, last);
        const std::vector<std::string>* tokens = rows ? spec.row_tokens : spec.col_tokens;
        if (first >= last && tokens && first < static_cast<int>(tokens->size())) return (*tokens)[static_cast<size_t>(first)];
        return position_span(first, last + 1);
    }
    return rows ? label_text(spec.row_tokens, spec.row_axis, i, 0) : label_text(spec.col_tokens, spec.col_axis, i, spec.col_index_offset);
}

int axis_length(const HeatmapSpec& spec, bool rows) {
    return static_cast<int>(rows ? spec.values->rows() : spec.values->cols());
}

float max_label_width(const HeatmapSpec& spec, bool rows, const UiFonts& fonts) {
    const Axis axis = rows ? spec.row_axis : spec.col_axis;
    const int n = axis_length(spec, rows);
    if (axis == Axis::Dim) return text_width(fonts.mono_small, std::to_string(n - 1 + (rows ? 0 : spec.col_index_offset)));
    const std::vector<std::string>* tokens = rows ? spec.row_tokens : spec.col_tokens;
    float w = 0;
    if (spec.pooled != nullptr)  // ranges: the widest numbers are at the end
        for (int i = std::max(0, n - 2); i < n; ++i) w = std::max(w, text_width(fonts.ui, axis_label(spec, rows, i)));
    else
        for (int i = 0; i < n; ++i) w = std::max(w, text_width(fonts.ui, label_text(tokens, axis, i, 0)));
    return std::min(w, kLabelMax * fonts.scale);
}

// Pooled output-only weights are ~1/n each, with a few spikes: viridis on a log scale over
// three decades below the largest shown (the legend says so), not linear over [0, 1], or a
// long sequence would be one flat colour.
constexpr float kPooledDecades = 3.0f;
Rgb cell_color(const HeatmapSpec& spec, float value, float limit) {
    if (spec.pooled != nullptr)
        return viridis(limit > 0.0f && value > 0.0f ? 1.0f + std::log10(value / limit) / kPooledDecades : 0.0f);
    return scale_color(spec.scale, value, limit);
}

bool is_visible(const HeatmapSpec& spec, int r, int c) {
    return spec.mask == nullptr || spec.mask->rows() <= r || spec.mask->cols() <= c || (*spec.mask)(r, c);
}

}  // namespace

// [SECTION] Measuring

CardText measure_text(const HeatmapSpec& spec, const UiFonts& fonts) {
    CardText text;
    text.row_labels = spec.row_labels ? max_label_width(spec, true, fonts) : 0.0f;
    text.col_labels = max_label_width(spec, false, fonts);
    text.title = spec.compact ? text_width(fonts.small, spec.title)
                              : std::max(text_width(fonts.title, spec.title), text_width(fonts.mono_small, spec.shape));
    return text;
}

// The legend's bar is at least as wide as its two ends and its centre, written side by side
// with room between them (a projector's large digits under a narrow map: "−0.50 0 0.50", never
// "−0.500.50").
float legend_min_width(const UiFonts& fonts) {
    return std::max(90.0f * fonts.scale, 2.0f * text_width(fonts.mono_small, "\xE2\x88\x92" "0.00") + text_width(fonts.mono_small, "0") + 24.0f);
}

CardMetrics measure_card(const HeatmapSpec& spec, const CardText& text, float cell_w, float cell_h, const UiFonts& fonts) {
    CardMetrics m;
    m.cell_w = cell_w;
    m.cell_h = cell_h;
    const float line = fonts.ui->FontSize;
    const float small = fonts.mono_small->FontSize;
    m.title_h = spec.compact ? line_count(spec.title) * fonts.small->FontSize + 3.0f
                             : line_count(spec.title) * fonts.title->FontSize + line_count(spec.shape) * small + 6.0f;
    m.label_w = text.row_labels + 6.0f;
    if (spec.col_axis == Axis::Dim) {
        m.header_h = small + 3.0f;
    } else {
        m.rotated_columns = text.col_labels + 4.0f > cell_w;
        m.header_h = m.rotated_columns ? text.col_labels + 6.0f : line + 3.0f;
    }
    m.grid_w = static_cast<float>(spec.values->cols()) * cell_w;
    m.grid_h = static_cast<float>(spec.values->rows()) * cell_h;
    m.legend_h = 6.0f + 7.0f + small + 2.0f;
    m.width = std::max({m.label_w + m.grid_w, text.title, m.label_w + legend_min_width(fonts)});
    m.height = m.title_h + m.header_h + m.grid_h + m.legend_h;
    return m;
}

float legend_limit(const HeatmapSpec& spec) {
    float limit = 0.0f;
    const Matrix& v = *spec.values;
    for (Eigen::Index r = 0; r < v.rows(); ++r)
        for (Eigen::Index c = 0; c < v.cols(); ++c) {
            const float x = v(r, c);
            if (std::isfinite(x) && is_visible(spec, static_cast<int>(r), static_cast<int>(c)))
                limit = std::max(limit, std::fabs(x));
        }
    if (limit < spec.legend_floor) return spec.legend_floor;
    return limit > 0.0f ? limit : 1.0f;
}

// [SECTION] Textures

float HeatmapTextures::limit(const HeatmapSpec& spec) {
    if (spec.content_version == 0) return legend_limit(spec);
    if (const auto known = limits_.find(spec.content_version); known != limits_.end()) return known->second;
    if (limits_.size() > 4096) limits_.clear();  // bounded: an edited weight's old versions are not seen again
    return limits_[spec.content_version] = legend_limit(spec);
}

const Texture* HeatmapTextures::get(const HeatmapSpec& spec, std::uint64_t generation, float limit,
                                    int& texels_per_cell) {
    const Matrix& v = *spec.values;
    const bool has_mask = spec.mask != nullptr && !spec.mask->all();
    texels_per_cell = has_mask && std::max(v.rows(), v.cols()) * 4 <= 4096 ? 4 : 1;
    Entry& entry = entries_[spec.name];
    // Made again when the trace changed, unless the values are a weight whose content it was
    // made from (an edit of X leaves W_1's texture as it is).
    const int k = texels_per_cell;
    const bool same_values = entry.generation == generation || (spec.content_version != 0 && entry.content_version == spec.content_version);
    const bool same = same_values && entry.limit == limit && entry.k == k;
    if (entry.texture && same && entry.rows_done == entry.rows) {
        entry.generation = generation;
        return &entry.texture;
    }
    // A sequence longer than a texture may be tall (GL guarantees 16384; llvmpipe has that)
    // is sampled: texel row t shows matrix row t·rows/height. The card draws it far
    // smaller than that anyway; the values stay exact in the tooltip.
    constexpr int kMaxTextureRows = 8192;
    const int width = static_cast<int>(v.cols()) * k, height = std::min(static_cast<int>(v.rows()) * k, kMaxTextureRows);
    const int sampled_rows = k == 1 ? height : static_cast<int>(v.rows());
    if (!same || entry.rows != sampled_rows) {  // begun again: nothing of it is handed out until whole
        entry.generation = generation;
        entry.content_version = spec.content_version;
        entry.limit = limit;
        entry.k = k;
        entry.rows = sampled_rows;
        entry.rows_done = 0;
    }
    // This frame's band: what is left of the frame's share, at least one row.
    const long long row_texels = static_cast<long long>(width) * k;
    int band = entry.rows - entry.rows_done;
    if (budget_ > 0) {
        const long long room = budget_ - made_;
        if (room < row_texels && made_ > 0) {
            deferred_ = true;
            return nullptr;
        }
        band = static_cast<int>(std::clamp<long long>(room / row_texels, 1, band));
    }
    const int t0 = entry.rows_done, t1 = t0 + band;
    pixels_.assign(static_cast<size_t>(row_texels) * static_cast<size_t>(band), 0);
    for (int t = t0; t < t1; ++t)
        for (int c = 0; c < v.cols(); ++c) {
            const int r = sampled_rows == v.rows() ? t : static_cast<int>(static_cast<long long>(t) * v.rows() / sampled_rows);
            const bool masked = !is_visible(spec, r, c);
            const float x = v(r, c);
            const Rgb color = !std::isfinite(x) ? kNonFinite : cell_color(spec, x, limit);
            const size_t row0 = static_cast<size_t>(t - t0) * static_cast<size_t>(k);  // the band's first texel row of it
            if (k == 1) {  // one texel a cell
                pixels_[row0 * static_cast<size_t>(width) + static_cast<size_t>(c)] = pack(masked ? kMaskedBackground : color);
                continue;
            }
            for (int a = 0; a < k; ++a)
                for (int b = 0; b < k; ++b) {
                    // Masked: grey with diagonal hatching (one dark texel per diagonal of 4).
                    const Rgb texel = masked ? ((a + b) % 4 == 0 && k > 1 ? kMaskedHatch : kMaskedBackground) : color;
                    pixels_[(row0 + static_cast<size_t>(a)) * static_cast<size_t>(width) + static_cast<size_t>(c * k + b)] = pack(texel);
                }
        }
    entry.texture.upload_rows(width, height, t0 * k, band * k, pixels_.data());
    made_ += row_texels * band;
    entry.rows_done = t1;
    if (entry.rows_done < entry.rows) {
        deferred_ = true;
        return nullptr;
    }
    return &entry.texture;
}

namespace {

// [SECTION] Cells

// Diagonal lines at 45° across the rectangle, computed so no clipping is needed.
void hatch(ImDrawList* draw, ImVec2 p0, float w, float h, ImU32 color, float step, float thickness) {
    for (float t = step * 0.5f; t < w + h; t += step) {
        const float ax = std::min(t, w), ay = t - ax;  // on the top or right edge
        const float by = std::min(t, h), bx = t - by;  // on the left or bottom edge
        draw->AddLine(ImVec2(p0.x + ax, p0.y + ay), ImVec2(p0.x + bx, p0.y + by), color, thickness);
    }
}

struct Visible {
    int row0 = 0, row1 = 0, col0 = 0, col1 = 0;  // cells [row0,row1) × [col0,col1) at least partly shown
    float cw = 0, ch = 0;                         // pixels per cell with zoom
    ImVec2 origin;                                // screen position of cell (0, 0)
};

Visible visible_cells(const HeatmapSpec& spec, const CardMetrics& m, const HeatmapView& view, ImVec2 grid0) {
    Visible vis;
    vis.cw = m.cell_w * view.zoom;
    vis.ch = m.cell_h * view.zoom;
    vis.origin = ImVec2(grid0.x - view.first_col * vis.cw, grid0.y - view.first_row * vis.ch);
    const int rows = static_cast<int>(spec.values->rows()), cols = static_cast<int>(spec.values->cols());
    vis.row0 = std::clamp(static_cast<int>(std::floor(view.first_row)), 0, rows);
    vis.col0 = std::clamp(static_cast<int>(std::floor(view.first_col)), 0, cols);
    vis.row1 = std::clamp(static_cast<int>(std::ceil(view.first_row + m.grid_h / vis.ch)), 0, rows);
    vis.col1 = std::clamp(static_cast<int>(std::ceil(view.first_col + m.grid_w / vis.cw)), 0, cols);
    return vis;
}

}  // namespace

std::string cell_text(float value, int decimals, int most) {
    std::string text = format_value(value, decimals);
    if (decimals < most && text.find('e') != std::string::npos) {
        std::string plain = format_value(value, most);
        if (plain.find('e') == std::string::npos) return plain;
    }
    return text;
}

namespace {

// The font, its size and the decimals that fit every shown number in a cell, or a null
// font: the most decimals first (at least one: a weight of 0.04 written "0" would say
// something false), then the largest font. When no font fits at its own size (a projector's
// fonts in cells of a wide map), the smallest one drawn smaller, down to a size still read
// from a room's back rows, before the numbers are left out.
struct NumberFont {
    const ImFont* font = nullptr;
    float size = 0;
};

NumberFont number_font(const HeatmapSpec& spec, const Visible& vis, const CardContext& context, int& decimals) {
    if (!context.view.numbers) return {};
    const ImFont* smallest = context.fonts.mono_small;
    std::vector<NumberFont> sizes = {{context.fonts.mono_large, context.fonts.mono_large->FontSize},
                                     {context.fonts.mono, context.fonts.mono->FontSize},
                                     {smallest, smallest->FontSize}};
    constexpr float kSmallestDrawnSmaller = 13.0f;  // pixels: still read from the back of a room
    for (float factor : {0.8f, 0.65f})
        if (smallest->FontSize * factor >= kSmallestDrawnSmaller) sizes.push_back({smallest, smallest->FontSize * factor});
    const float least = sizes.back().size;
    // Not even "0.0" fits: skip formatting every cell (big maps with small cells).
    if (least + 2.0f > vis.ch || 3.0f * text_width(smallest, "0") * (least / smallest->FontSize) + 6.0f > vis.cw) return {};
    // A margin that grows with the cell: on a projector's large cells the numbers keep
    // clear of the borders instead of filling them edge to edge.
    const float margin = std::max(6.0f, 0.16f * vis.cw), margin_v = std::max(2.0f, 0.2f * vis.ch);
    for (int d = context.view.decimals; d >= std::min(1, context.view.decimals); --d) {
        int widest = 0;
        for (int r = vis.row0; r < vis.row1; ++r)
            for (int c = vis.col0; c < vis.col1; ++c) {
                const bool masked = !is_visible(spec, r, c);
                if (masked && !spec.show_masked_value) continue;  // drawn without a number
                widest = std::max(widest, code_points(cell_text(masked ? spec.masked_value : (*spec.values)(r, c), d, context.view.decimals)));
            }
        for (const NumberFont& f : sizes) {
            if (f.size + margin_v > vis.ch) continue;  // the largest size first
            if (static_cast<float>(widest) * text_width(f.font, "0") * (f.size / f.font->FontSize) + margin <= vis.cw) {
                decimals = d;
                return f;
            }
        }
    }
    return {};
}

// Returns true when the cells' numbers were written.
bool draw_cells(const HeatmapSpec& spec, const CardMetrics& m, const Visible& vis, float limit, CardContext& context,
                HeatmapTextures& textures, ImVec2 grid0) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const int rows = static_cast<int>(spec.values->rows()), cols = static_cast<int>(spec.values->cols());
    const bool textured = rows * cols > kTextureCells;
    if (textured) {
        int k = 1;
        const Texture* texture = textures.get(spec, context.generation, limit, k);
        const ImVec2 p0 = vis.origin;
        const ImVec2 p1(vis.origin.x + static_cast<float>(cols) * vis.cw, vis.origin.y + static_cast<float>(rows) * vis.ch);
        if (texture == nullptr) {  // put off to a later frame: said, never an older picture
            draw->PushClipRect(grid0, ImVec2(grid0.x + m.grid_w, grid0.y + m.grid_h), true);
            draw->AddRectFilled(p0, p1, IM_COL32(45, 45, 52, 255));
            draw->AddText(ImVec2(grid0.x + 4.0f, grid0.y + 4.0f), IM_COL32(200, 200, 200, 255), "drawing\xE2\x80\xA6");
            draw->PopClipRect();
            return false;
        }
        draw->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(texture->id())), p0, p1);
    }
    int decimals = context.view.decimals;
    const NumberFont number = number_font(spec, vis, context, decimals);
    const ImFont* font = number.font;
    const float hatch_step = std::clamp(std::min(vis.cw, vis.ch) / 4.0f, 3.0f, 9.0f);
    const int row_end = textured && font == nullptr ? vis.row0 : vis.row1;  // the texture has drawn everything
    for (int r = vis.row0; r < row_end; ++r)
        for (int c = vis.col0; c < vis.col1; ++c) {
            const ImVec2 p0(vis.origin.x + static_cast<float>(c) * vis.cw, vis.origin.y + static_cast<float>(r) * vis.ch);
            const ImVec2 p1(p0.x + vis.cw, p0.y + vis.ch);
            const float value = (*spec.values)(r, c);
            const bool masked = !is_visible(spec, r, c);
            Rgb background = kMaskedBackground;
            if (!masked) background = std::isfinite(value) ? cell_color(spec, value, limit) : kNonFinite;
            if (!textured) {
                draw->AddRectFilled(p0, p1, pack(background));
                if (masked) hatch(draw, p0, vis.cw, vis.ch, pack(kMaskedHatch), hatch_step, std::max(1.0f, std::min(vis.cw, vis.ch) / 24.0f));
            }
            if (font == nullptr || (masked && !spec.show_masked_value)) continue;  // the hatching says it: no "0.00" over it
            const std::string text = cell_text(masked ? spec.masked_value : value, decimals, context.view.decimals);
            const ImVec2 size = font->CalcTextSizeA(number.size, FLT_MAX, 0.0f, text.c_str());
            const ImU32 ink = masked ? IM_COL32(20, 20, 20, 255)
                              : text_should_be_dark(background) ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
            draw->AddText(font, number.size, ImVec2(p0.x + (vis.cw - size.x) * 0.5f, p0.y + (vis.ch - size.y) * 0.5f),
                          ink, text.c_str());
        }
    // Thin separators keep neighbouring cells of equal colour apart while they are big.
    if (std::min(vis.cw, vis.ch) >= 12.0f) {
        const ImU32 line = IM_COL32(30, 30, 34, 255);
        for (int r = vis.row0; r <= vis.row1; ++r) {
            const float y = vis.origin.y + static_cast<float>(r) * vis.ch;
            draw->AddLine(ImVec2(grid0.x, y), ImVec2(grid0.x + m.grid_w, y), line);
        }
        for (int c = vis.col0; c <= vis.col1; ++c) {
            const float x = vis.origin.x + static_cast<float>(c) * vis.cw;
            draw->AddLine(ImVec2(x, grid0.y), ImVec2(x, grid0.y + m.grid_h), line);
        }
    }
    // The shown head's columns of a W: the other heads' columns are dimmed.
    if (spec.band_begin >= 0) {
        for (int c = vis.col0; c < vis.col1; ++c) {
            if (c >= spec.band_begin && c < spec.band_end) continue;
            const float x = vis.origin.x + static_cast<float>(c) * vis.cw;
            draw->AddRectFilled(ImVec2(x, grid0.y), ImVec2(x + vis.cw, grid0.y + m.grid_h), IM_COL32(20, 20, 24, 150));
        }
    }
    if (spec.outlined != nullptr)
        for (const auto& [r, c] : *spec.outlined) {
            if (r < vis.row0 || r >= vis.row1 || c < vis.col0 || c >= vis.col1) continue;
            const ImVec2 a(vis.origin.x + static_cast<float>(c) * vis.cw, vis.origin.y + static_cast<float>(r) * vis.ch);
            draw->AddRect(a, ImVec2(a.x + vis.cw, a.y + vis.ch), IM_COL32(255, 255, 255, 255), 0.0f, 0, std::max(1.5f, std::min(vis.cw, vis.ch) * 0.08f));
        }
    return font != nullptr;
}

bool row_highlighted(const HeatmapSpec& spec, const HoverState& hover, bool rows, int i) {
    if (spec.pooled != nullptr) return false;  // a bin is not the hovered token
    const Axis axis = rows ? spec.row_axis : spec.col_axis;
    if (axis == Axis::Query) return hover.query == i;
    if (axis == Axis::Key) return hover.key == i;
    return false;
}

void outline(ImDrawList* draw, ImVec2 a, ImVec2 b) {
    draw->AddRect(a, b, IM_COL32(0, 0, 0, 255), 0.0f, 0, 4.0f);
    draw->AddRect(a, b, IM_COL32(255, 255, 255, 255), 0.0f, 0, 2.0f);
}

void draw_highlights(const HeatmapSpec& spec, const CardMetrics& m, const Visible& vis, const CardContext& context, ImVec2 grid0) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const HoverState& hover = context.hover;
    for (int r = vis.row0; r < vis.row1; ++r)
        if (row_highlighted(spec, hover, true, r)) {
            const float y = vis.origin.y + static_cast<float>(r) * vis.ch;
            outline(draw, ImVec2(grid0.x, y), ImVec2(grid0.x + m.grid_w, y + vis.ch));
        }
    for (int c = vis.col0; c < vis.col1; ++c)
        if (row_highlighted(spec, hover, false, c)) {
            const float x = vis.origin.x + static_cast<float>(c) * vis.cw;
            outline(draw, ImVec2(x, grid0.y), ImVec2(x + vis.cw, grid0.y + m.grid_h));
        }
    if (hover.matrix == spec.name && hover.row >= vis.row0 && hover.row < vis.row1 && hover.col >= vis.col0 &&
        hover.col < vis.col1) {
        const ImVec2 p0(vis.origin.x + static_cast<float>(hover.col) * vis.cw,
                        vis.origin.y + static_cast<float>(hover.row) * vis.ch);
        draw->AddRect(p0, ImVec2(p0.x + vis.cw, p0.y + vis.ch), IM_COL32(255, 210, 80, 255), 0.0f, 0, 3.0f);
    }
}

// [SECTION] Labels and legend

// The font of token labels on rows (or turned columns) `cell` pixels apart: the interface's
// where it fits, else the small one, else the tiny one (every token of a short sentence keeps
// its label down to the cell labelled_cell() allows).
const ImFont* token_label_font(const UiFonts& fonts, float cell) {
    if (cell >= fonts.ui->FontSize + 1.0f) return fonts.ui;
    if (cell >= fonts.small->FontSize - kLabelSqueeze || fonts.tiny == nullptr) return fonts.small;
    return fonts.tiny;
}

// Returns how many rows and columns lie between two labels (1: every one is labelled; 0: none).
std::pair<int, int> draw_labels(const HeatmapSpec& spec, const CardMetrics& m, const Visible& vis, CardContext& context,
                                ImVec2 origin, ImVec2 grid0) {
    std::pair<int, int> steps{0, 0};
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const UiFonts& fonts = context.fonts;
    const bool mouse_here = ImGui::IsWindowHovered();
    // Rows: every k-th label when the cells are shorter than a line.
    {
        const ImFont* font = spec.row_axis == Axis::Dim ? fonts.mono_small : token_label_font(fonts, vis.ch);
        // A label may be a little taller than its row (a line's leading is blank): kLabelSqueeze.
        const int step = std::max(1, static_cast<int>(std::ceil((font->FontSize - kLabelSqueeze) / vis.ch)));
        if (spec.row_labels) steps.first = step;
        const float overhang = font->FontSize * 0.5f;  // a label taller than its row may spill a little
        draw->PushClipRect(ImVec2(origin.x, grid0.y - overhang), ImVec2(grid0.x, grid0.y + m.grid_h + overhang), true);
        for (int r = vis.row0; r < vis.row1; ++r) {
            const float y = vis.origin.y + static_cast<float>(r) * vis.ch;
            const bool lit = row_highlighted(spec, context.hover, true, r);
            if (spec.row_axis != Axis::Dim && spec.pooled == nullptr && mouse_here &&
                ImGui::IsMouseHoveringRect(ImVec2(origin.x, y), ImVec2(grid0.x, y + vis.ch))) {
                (spec.row_axis == Axis::Query ? context.hover_next.query : context.hover_next.key) = r;
                if (context.trace.settings.attention == AttentionKind::Self || context.trace.settings.input == InputMode::Direct) {
                    if (spec.row_axis == Axis::Query) context.hover_next.key = r;
                    else context.hover_next.query = r;
                }
            }
            if ((r % step != 0 && !lit) || !spec.row_labels) continue;
            const std::string text = fit_text(font, axis_label(spec, true, r), m.label_w - 6.0f);
            const float w = text_width(font, text);
            draw->AddText(font, font->FontSize, ImVec2(grid0.x - 4.0f - w, y + (vis.ch - font->FontSize) * 0.5f),
                          lit ? kHighlightText : (spec.row_axis == Axis::Dim ? kDimText : kTextColor), text.c_str());
        }
        draw->PopClipRect();
    }
    // Columns: horizontal when they fit the cell, else turned 90°.
    {
        const ImFont* font = spec.col_axis == Axis::Dim ? fonts.mono_small : token_label_font(fonts, vis.cw);
        const float top = grid0.y - m.header_h;
        const bool rotated = m.rotated_columns && vis.cw < max_label_width(spec, false, fonts) + 4.0f;
        // Every step-th label: as many as fit side by side (indices need their width; a token
        // not turned fits its cell, or the labels would have been turned).
        const float label_extent = rotated ? font->FontSize - kLabelSqueeze
                                 : spec.col_axis == Axis::Dim
                                     ? text_width(font, std::to_string(spec.values->cols() - 1 + spec.col_index_offset)) + 6.0f
                                     : std::min(text_width(font, "MMM"), vis.cw);
        const int step = std::max(1, static_cast<int>(std::ceil(label_extent / vis.cw)));
        steps.second = step;
        draw->PushClipRect(ImVec2(grid0.x, top), ImVec2(grid0.x + m.grid_w, grid0.y), true);
        for (int c = vis.col0; c < vis.col1; ++c) {
            const float x = vis.origin.x + static_cast<float>(c) * vis.cw;
            const bool lit = row_highlighted(spec, context.hover, false, c);
            if (spec.col_axis != Axis::Dim && spec.pooled == nullptr && mouse_here &&
                ImGui::IsMouseHoveringRect(ImVec2(x, top), ImVec2(x + vis.cw, grid0.y))) {
                (spec.col_axis == Axis::Query ? context.hover_next.query : context.hover_next.key) = c;
                if (context.trace.settings.attention == AttentionKind::Self || context.trace.settings.input == InputMode::Direct) {
                    if (spec.col_axis == Axis::Key) context.hover_next.query = c;
                    else context.hover_next.key = c;
                }
            }
            if (c % step != 0 && !lit) continue;
            const ImU32 color = lit ? kHighlightText : (spec.col_axis == Axis::Dim ? kDimText : kTextColor);
            const std::string full = axis_label(spec, false, c);
            if (rotated && spec.col_axis != Axis::Dim) {
                const std::string text = fit_text(font, full, m.header_h - 6.0f);
                text_rotated(draw, font, ImVec2(x + (vis.cw - font->FontSize) * 0.5f, grid0.y - 3.0f), color, text);
            } else {
                const std::string text = spec.col_axis == Axis::Dim ? full : fit_text(font, full, std::max(vis.cw, 1.0f) * step);
                const float w = text_width(font, text);
                const float left = std::clamp(x + (vis.cw - w) * 0.5f, grid0.x, grid0.x + m.grid_w - w);  // edge labels stay whole
                draw->AddText(font, font->FontSize, ImVec2(left, grid0.y - font->FontSize - 2.0f),
                              color, text.c_str());
            }
        }
        draw->PopClipRect();
    }
    return steps;
}

void draw_legend(const HeatmapSpec& spec, const CardMetrics& m, float limit, const UiFonts& fonts, ImVec2 grid0, bool non_finite) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImFont* font = fonts.mono_small;
    std::string lo = spec.pooled != nullptr ? "log: " + format_value(limit * std::pow(10.0f, -kPooledDecades), 6)
                     : spec.scale == ColorScale::Weights ? "0" : format_value(-limit, 2);
    std::string hi = spec.pooled != nullptr ? format_value(limit, 4) + " (largest)"
                     : spec.scale == ColorScale::Weights ? (limit > 1.0f ? format_value(limit, 2) : std::string("1")) : format_value(limit, 2);
    // Wide enough for both ends apart (numbers of more digits than legend_min_width allows for).
    const float ends = spec.pooled != nullptr ? 0.0f : text_width(font, lo) + text_width(font, hi) + 12.0f;
    const float width = std::max({m.grid_w, legend_min_width(fonts), ends});
    const ImVec2 p0(grid0.x, grid0.y + m.grid_h + 6.0f);
    const int segments = 24;
    for (int i = 0; i < segments; ++i) {
        const float a = static_cast<float>(i) / segments, b = static_cast<float>(i + 1) / segments;
        auto color_at = [&](float t) {
            return pack(spec.scale == ColorScale::Weights ? viridis(t) : diverging(2.0f * t - 1.0f));
        };
        draw->AddRectFilledMultiColor(ImVec2(p0.x + a * width, p0.y), ImVec2(p0.x + b * width, p0.y + 7.0f), color_at(a),
                                      color_at(b), color_at(b), color_at(a));
    }
    const float y = p0.y + 8.0f;
    if (spec.pooled != nullptr && text_width(font, lo) + text_width(font, hi) + 8.0f > width) {
        // A narrow map: the same two ends, in three significant digits, the scale still named.
        char low[32], high[32];
        std::snprintf(low, sizeof low, "log %.3g", limit * std::pow(10.0f, -kPooledDecades));
        std::snprintf(high, sizeof high, "%.3g", limit);
        lo = low;
        hi = high;
    }
    draw->AddText(font, font->FontSize, ImVec2(p0.x, y), kDimText, lo.c_str());
    draw->AddText(font, font->FontSize, ImVec2(p0.x + width - text_width(font, hi), y), kDimText, hi.c_str());
    const bool masked_swatch = spec.mask != nullptr && !spec.mask->all() && width >= text_width(font, lo + hi + " masked ") + 30.0f;
    const bool room_for_mid = text_width(font, lo) + text_width(font, hi) + 2.0f * text_width(font, "0") + 16.0f <= width;
    const std::string mid = spec.scale == ColorScale::Weights || masked_swatch || non_finite || !room_for_mid ? "" : "0";
    if (!mid.empty()) draw->AddText(font, font->FontSize, ImVec2(p0.x + (width - text_width(font, mid)) * 0.5f, y), kDimText, mid.c_str());
    if (masked_swatch) {
        const float sx = p0.x + text_width(font, lo) + 8.0f, s = font->FontSize - 2.0f;
        draw->AddRectFilled(ImVec2(sx, y + 1.0f), ImVec2(sx + s, y + 1.0f + s), pack(kMaskedBackground));
        hatch(draw, ImVec2(sx, y + 1.0f), s, s, pack(kMaskedHatch), 3.0f, 1.0f);
        draw->AddText(font, font->FontSize, ImVec2(sx + s + 3.0f, y), kDimText, "masked");
    }
    if (non_finite) {  // the black cells: said where they are, after the masked swatch or at the centre
        const char* label = "NaN/\xE2\x88\x9E";
        const float s = font->FontSize - 2.0f;
        const float wanted = s + 3.0f + text_width(font, label);
        float sx = p0.x + (width - wanted) * 0.5f;
        if (masked_swatch) sx = p0.x + text_width(font, lo) + 8.0f + s + 3.0f + text_width(font, "masked") + 8.0f;
        sx = std::max(sx, p0.x + text_width(font, lo) + 6.0f);
        draw->AddRectFilled(ImVec2(sx, y + 1.0f), ImVec2(sx + s, y + 1.0f + s), pack(kNonFinite));
        draw->AddRect(ImVec2(sx, y + 1.0f), ImVec2(sx + s, y + 1.0f + s), kDimText);
        draw->AddText(font, font->FontSize, ImVec2(sx + s + 3.0f, y), kDimText, label);
    }
}

// [SECTION] Interaction

void clamp_view(HeatmapView& view, const HeatmapSpec& spec, const CardMetrics& m) {
    const float max_zoom = std::max(1.0f, 72.0f / std::max(std::min(m.cell_w, m.cell_h), 0.5f));
    view.zoom = std::clamp(view.zoom, 1.0f, max_zoom);
    const float cw = m.cell_w * view.zoom, ch = m.cell_h * view.zoom;
    view.first_row = std::clamp(view.first_row, 0.0f, std::max(0.0f, static_cast<float>(spec.values->rows()) - m.grid_h / ch));
    view.first_col = std::clamp(view.first_col, 0.0f, std::max(0.0f, static_cast<float>(spec.values->cols()) - m.grid_w / cw));
}

void zoom_and_pan(const HeatmapSpec& spec, const CardMetrics& m, HeatmapView& view, ImVec2 grid0, bool hovered, bool active) {
    ImGuiIO& io = ImGui::GetIO();
    if (hovered && io.MouseWheel != 0.0f && (io.KeyCtrl || view.zoom > 1.0f)) {
        ImGui::SetItemUsingMouseWheel();  // the wheel zooms/pans this map instead of scrolling the page
        if (io.KeyCtrl) {
            const float old_cw = m.cell_w * view.zoom, old_ch = m.cell_h * view.zoom;
            const float mouse_col = view.first_col + (io.MousePos.x - grid0.x) / old_cw;
            const float mouse_row = view.first_row + (io.MousePos.y - grid0.y) / old_ch;
            view.zoom *= std::pow(1.25f, io.MouseWheel);
            clamp_view(view, spec, m);
            const float cw = m.cell_w * view.zoom, ch = m.cell_h * view.zoom;
            view.first_col = mouse_col - (io.MousePos.x - grid0.x) / cw;  // the cell under the mouse stays put
            view.first_row = mouse_row - (io.MousePos.y - grid0.y) / ch;
        } else if (io.KeyShift) {
            view.first_col -= io.MouseWheel * 3.0f;
        } else {
            view.first_row -= io.MouseWheel * 3.0f;
        }
    }
    if (active && ImGui::IsMouseDragging(ImGuiMouseButton_Right, 2.0f)) {
        const float cw = m.cell_w * view.zoom, ch = m.cell_h * view.zoom;
        view.first_col -= io.MouseDelta.x / cw;
        view.first_row -= io.MouseDelta.y / ch;
    }
    if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Right)) view = HeatmapView{};
    clamp_view(view, spec, m);
}

void edit_cell(const HeatmapSpec& spec, CardContext& context, bool hovered, int row, int col) {
    ImGuiIO& io = ImGui::GetIO();
    CellEditor& editor = context.editor;
    const bool in_range = row >= 0 && col >= 0;
    if (spec.editable && hovered && in_range && ImGui::IsItemActivated() && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
        editor = CellEditor{};
        editor.matrix = spec.name;
        editor.target = spec.edit_target;
        editor.row = row;
        editor.col = col + spec.edit_col_offset;
        const float current = (*spec.values)(row, col);
        editor.scrub_start_value = std::isfinite(current) ? current : 0.0f;
        editor.scrub_start_mouse = io.MousePos.x;
    }
    if (spec.editable && hovered && in_range && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
        editor.matrix = spec.name;
        editor.target = spec.edit_target;
        editor.row = row;
        editor.col = col + spec.edit_col_offset;
        editor.typing = true;
        editor.scrubbing = false;
        editor.focus_pending = true;
        editor.text = format_value((*spec.values)(row, col), 4);
        if (editor.text.rfind("\xE2\x88\x92", 0) == 0) editor.text = "-" + editor.text.substr(3);
        ImGui::OpenPopup("edit value");
    }
    if (editor.matrix == spec.name && !editor.typing) {
        if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
            editor.scrubbing = true;
            const float per_pixel = io.KeyShift ? 0.001f : 0.01f;  // Shift: ten times finer
            const float value = editor.scrub_start_value + (io.MousePos.x - editor.scrub_start_mouse) * per_pixel;
            context.edits.push_back(edits::SetCell{editor.target, editor.row, editor.col, value});
        }
        if (!ImGui::IsItemActive()) editor = CellEditor{};
    }
    if (ImGui::BeginPopup("edit value")) {
        ImGui::Text("%s[%d,%d]", to_string(editor.target), editor.row + 1, editor.col + 1);
        if (editor.focus_pending) {
            ImGui::SetKeyboardFocusHere();
            editor.focus_pending = false;
        }
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%s", editor.text.c_str());
        const bool entered = ImGui::InputText("##value", buffer, sizeof buffer, ImGuiInputTextFlags_EnterReturnsTrue);
        editor.text = buffer;
        ImGui::TextDisabled("Enter to set; NaN and inf are accepted");
        if (entered) {
            char* end = nullptr;
            const float value = std::strtof(editor.text.c_str(), &end);
            if (end != editor.text.c_str()) context.edits.push_back(edits::SetCell{editor.target, editor.row, editor.col, value});
            editor = CellEditor{};
            ImGui::CloseCurrentPopup();
        }
        ImGui::EndPopup();
    } else if (editor.typing && editor.matrix == spec.name && !editor.focus_pending) {
        editor = CellEditor{};  // closed by clicking elsewhere
    }
}

void paint_mask(const HeatmapSpec& spec, CardContext& context, bool hovered, int row, int col) {
    if (!spec.paints_mask || context.trace.settings.mask != MaskKind::Custom) return;
    if (hovered && row >= 0 && ImGui::IsItemActivated() && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
        context.painter.active = true;
        context.painter.visible = !is_visible(spec, row, col);  // the first cell decides: hide or show
    }
    if (context.painter.active && ImGui::IsItemActive() && hovered && row >= 0)
        context.edits.push_back(edits::PaintMaskCell{row, col, context.painter.visible});
    if (context.painter.active && !ImGui::IsMouseDown(ImGuiMouseButton_Left)) context.painter.active = false;
}

const NonFiniteReport& non_finite(const CardContext& context) { return context.non_finite; }

void tooltip(const HeatmapSpec& spec, CardContext& context, int row, int col) {
    if (spec.pooled != nullptr) {  // output-only: no n×n matrix to explain, the bin's range and max
        int q0 = 0, q1 = 0, k0 = 0, k1 = 0;
        pooled_range(*spec.pooled, true, row, q0, q1);
        pooled_range(*spec.pooled, false, col, k0, k1);
        ImGui::BeginTooltip();
        ImGui::Text("queries %s \xC3\x97 keys %s", position_span(q0, q1 + 1).c_str(), position_span(k0, k1 + 1).c_str());
        ImGui::Separator();
        ImGui::Text("largest weight in the block: %s", format_value((*spec.values)(row, col), 4).c_str());
        if (q1 > q0 || k1 > k0) ImGui::TextDisabled("zoom (Backend: weights region) for one cell per token");
        ImGui::EndTooltip();
        return;
    }
    const std::string& matrix = spec.matrix.empty() ? spec.name : spec.matrix;
    Explanation e;
    if (spec.diff_a != nullptr && spec.diff_b != nullptr) {
        e.heading = "B \xE2\x88\x92 A, " + display_name(matrix) + "[" + std::to_string(row + 1) + "," + std::to_string(col + 1) +
                    "] = " + format_value((*spec.values)(row, col), 6);
        if (spec.row_axis != Axis::Dim || spec.col_axis != Axis::Dim)  // which tokens the cell is about
            e.lines.push_back("row " + axis_label(spec, true, row) + " \xE2\x86\x92 column " + axis_label(spec, false, col));
        e.lines.push_back("B = " + format_value((*spec.diff_b)(row, col), 6));
        e.lines.push_back("A = " + format_value((*spec.diff_a)(row, col), 6));
    } else {
        // X's meaning belongs to the session's scenario, not to a trace a card brings of its own.
        e = explain_cell(spec.trace != nullptr ? *spec.trace : context.trace, matrix, row, col,
                         spec.trace != nullptr ? std::string() : context.view.x_meaning);
    }
    ImGui::BeginTooltip();
    ImGui::PushFont(context.fonts.ui);
    ImGui::TextUnformatted(e.heading.c_str());
    ImGui::PopFont();
    ImGui::Separator();
    ImGui::PushFont(context.fonts.mono);
    for (const std::string& line : e.lines) ImGui::TextUnformatted(line.c_str());
    ImGui::PopFont();
    const float value = (*spec.values)(row, col);
    const bool fill = spec.mask != nullptr && spec.show_masked_value && !is_visible(spec, row, col);  // the mask's −∞
    if (!std::isfinite(value) && !fill) {
        ImGui::Separator();
        ImGui::PushStyleColor(ImGuiCol_Text, kNonFiniteText);
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 32.0f);
        ImGui::TextWrapped("%s is not a number: %s", format_value(value, 2).c_str(), non_finite(context).origin.c_str());
        ImGui::PopTextWrapPos();
        ImGui::PopStyleColor();
    }
    ImGui::EndTooltip();
}

}  // namespace

// [SECTION] Card

namespace {

// A matrix a NaN or ∞ reached says so beside its title; hovering the mark says where it
// came from. Returns the mark's top-left corner, or (−1, −1) when there is none.
ImVec2 draw_non_finite_badge(const HeatmapSpec& spec, const CardMetrics& m, CardContext& context, ImVec2 origin) {
    if (spec.pooled != nullptr || !non_finite(context).contains(spec.name)) return ImVec2(-1.0f, -1.0f);
    const UiFonts& fonts = context.fonts;
    const char* badge = " NaN/\xE2\x88\x9E ";
    const ImFont* font = spec.compact ? fonts.small : fonts.mono_small;
    const ImFont* title_font = spec.compact ? fonts.small : fonts.title;
    const ImVec2 size(text_width(font, badge), font->FontSize + 2.0f);
    ImVec2 at(origin.x + text_width(title_font, spec.title) + 6.0f, origin.y + 1.0f);
    const float right = origin.x + std::max(m.width, m.label_w + m.grid_w);
    if (at.x + size.x > right) {  // no room after the title inside the card: its right edge, a line lower
        at.x = std::max(origin.x, right - size.x);
        at.y = origin.y + title_font->FontSize + 2.0f;
    }
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->AddRectFilled(at, ImVec2(at.x + size.x, at.y + size.y), IM_COL32(150, 40, 30, 255), 3.0f);
    draw->AddText(font, font->FontSize, ImVec2(at.x, at.y + 1.0f), IM_COL32(255, 235, 230, 255), badge);
    if (ImGui::IsMouseHoveringRect(at, ImVec2(at.x + size.x, at.y + size.y))) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 32.0f);
        ImGui::TextWrapped("%s holds non-finite values (NaN or \xC2\xB1\xE2\x88\x9E; drawn black), %s.",
                           display_name(spec.matrix.empty() ? spec.name : spec.matrix).c_str(),
                           non_finite(context).origin.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    return at;
}

}  // namespace


void draw_card(const HeatmapSpec& spec, const CardMetrics& m, CardContext& context) {
    HeatmapTextures& textures = context.textures;
    if (spec.values == nullptr || spec.values->size() == 0) return;
    ImGui::PushID(spec.name.c_str());
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const UiFonts& fonts = context.fonts;
    if (spec.compact) {
        draw->AddText(fonts.small, fonts.small->FontSize, origin, IM_COL32(220, 220, 228, 255), spec.title.c_str());
    } else {
        draw->AddText(fonts.title, fonts.title->FontSize, origin, IM_COL32(240, 240, 245, 255), spec.title.c_str());
        draw->AddText(fonts.mono_small, fonts.mono_small->FontSize, ImVec2(origin.x, origin.y + line_count(spec.title) * fonts.title->FontSize + 2.0f),
                      kDimText, spec.shape.c_str());
    }
    const ImVec2 badge = draw_non_finite_badge(spec, m, context, origin);

    const ImVec2 grid0(origin.x + m.label_w, origin.y + m.title_h + m.header_h);
    HeatmapView& view = context.views[spec.name];
    clamp_view(view, spec, m);

    // The grid is one invisible button: hover, clicks, drags and the wheel land on it.
    ImGui::SetCursorScreenPos(grid0);
    ImGui::InvisibleButton("grid", ImVec2(std::max(m.grid_w, 1.0f), std::max(m.grid_h, 1.0f)),
                           ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
    const bool hovered = ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenBlockedByActiveItem);
    const bool active = ImGui::IsItemActive();
    zoom_and_pan(spec, m, view, grid0, hovered, active);

    const Visible vis = visible_cells(spec, m, view, grid0);
    int row = -1, col = -1;
    if (hovered) {
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        row = static_cast<int>(std::floor((mouse.y - vis.origin.y) / vis.ch));
        col = static_cast<int>(std::floor((mouse.x - vis.origin.x) / vis.cw));
        if (row < 0 || col < 0 || row >= spec.values->rows() || col >= spec.values->cols()) row = col = -1;
    }
    edit_cell(spec, context, hovered, row, col);
    paint_mask(spec, context, hovered, row, col);

    // weights: 0 … 1, or 0 … their largest where it is above 1 (a routing scaled by DeepSeek-V3's routed_scaling_factor)
    const float limit = spec.scale == ColorScale::Weights && spec.pooled == nullptr ? std::max(1.0f, textures.limit(spec)) : textures.limit(spec);
    draw->PushClipRect(grid0, ImVec2(grid0.x + m.grid_w, grid0.y + m.grid_h), true);
    const bool numbers = draw_cells(spec, m, vis, limit, context, textures, grid0);
    draw_highlights(spec, m, vis, context, grid0);
    draw->PopClipRect();
    if (view.zoom > 1.0f) {  // a zoomed map says so, and how to get back: inside the grid's corner, off the title
        const std::string badge = "\xC3\x97" + format_value(view.zoom, 1) + " (right double-click: reset)";
        const ImFont* font = fonts.mono_small;
        const float w = std::min(text_width(font, badge), m.grid_w);
        const ImVec2 at(grid0.x + m.grid_w - w - 2.0f, grid0.y + 2.0f);
        draw->PushClipRect(grid0, ImVec2(grid0.x + m.grid_w, grid0.y + m.grid_h), true);
        draw->AddRectFilled(ImVec2(at.x - 2.0f, at.y), ImVec2(at.x + w + 2.0f, at.y + font->FontSize + 2.0f), IM_COL32(0, 0, 0, 200), 3.0f);
        draw->AddText(font, font->FontSize, ImVec2(at.x, at.y + 1.0f), kHighlightText, badge.c_str());
        draw->PopClipRect();
    }
    const auto [row_label_step, col_label_step] = draw_labels(spec, m, vis, context, origin, grid0);
    draw_legend(spec, m, limit, fonts, grid0, spec.pooled == nullptr && non_finite(context).contains(spec.name));

    if (row >= 0) {
        HoverState& next = context.hover_next;
        next.matrix = spec.name;
        next.row = row;
        next.col = col;
        if (spec.pooled == nullptr && spec.row_axis == Axis::Query) next.query = row;
        if (spec.pooled == nullptr && spec.row_axis == Axis::Key) next.key = row;
        if (spec.pooled == nullptr && spec.col_axis == Axis::Key) next.key = col;
        if (spec.pooled == nullptr && spec.col_axis == Axis::Query) next.query = col;
        if (!context.editor.scrubbing && !context.editor.typing) tooltip(spec, context, row, col);
    }

    HeatmapLayout record;
    record.name = spec.name;
    record.x = vis.origin.x + static_cast<float>(vis.col0) * vis.cw;
    record.y = vis.origin.y + static_cast<float>(vis.row0) * vis.ch;
    record.cell_w = vis.cw;
    record.cell_h = vis.ch;
    record.rows = static_cast<int>(spec.values->rows());
    record.cols = static_cast<int>(spec.values->cols());
    record.first_row = vis.row0;
    record.first_col = vis.col0;
    record.shown_rows = vis.row1 - vis.row0;
    record.shown_cols = vis.col1 - vis.col0;
    record.textured = record.rows * record.cols > kTextureCells;
    record.numbers = numbers;
    record.badge_x = badge.x;
    record.badge_y = badge.y;
    record.row_label_step = row_label_step;
    record.col_label_step = col_label_step;
    context.layout_next.push_back(record);
    ImGui::PopID();
}

}  // namespace attn::ui
