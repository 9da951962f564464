// View → Compare: A (the current scenario) against B (the same with other toggles), one
// matrix at a time: A, B and B − A side by side, the hovered cell outlined in all three.
//
// Index
// [SECTION] Toggles of B
// [SECTION] Recompute (before the frame draws)
// [SECTION] Drawing
#include <algorithm>
#include <cmath>
#include <string>

#include <imgui.h>

#include "attention/serialize.hpp"
#include "ui/cards.hpp"
#include "ui/classroom.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

// [SECTION] Toggles of B

// A combo whose first entry is "same as A" (the toggle unset).
template <typename T>
void optional_combo(const char* label, std::optional<T>& value, const std::vector<std::pair<const char*, T>>& choices) {
    int current = 0;
    for (size_t i = 0; i < choices.size(); ++i)
        if (value && *value == choices[i].second) current = static_cast<int>(i) + 1;
    const char* preview = current == 0 ? "same as A" : choices[static_cast<size_t>(current - 1)].first;
    // The label stands before its box ("mask [causal]"), so no label sits between two boxes.
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(label);
    ImGui::SameLine(0.0f, 4.0f);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
    if (ImGui::BeginCombo((std::string("##") + label).c_str(), preview)) {
        if (ImGui::Selectable("same as A", current == 0)) value.reset();
        for (size_t i = 0; i < choices.size(); ++i)
            if (ImGui::Selectable(choices[i].first, current == static_cast<int>(i) + 1)) value = choices[i].second;
        ImGui::EndCombo();
    }
}

void draw_b_toggles(EditContext state, CompareState& c) {
    Toggles& t = c.toggles_b;
    optional_combo<MaskKind>("mask", t.mask,
                             {{"none", MaskKind::None}, {"causal", MaskKind::Causal}, {"padding", MaskKind::Padding},
                              {"window", MaskKind::SlidingWindow}, {"chunked", MaskKind::Chunked}, {"band", MaskKind::Band},
                              {"custom", MaskKind::Custom}});
    ImGui::SameLine(0.0f, 18.0f);
    std::vector<std::pair<std::string, int>> head_names;
    for (int h : edits::head_choices(state.session.scenario)) head_names.emplace_back(std::to_string(h), h);
    std::vector<std::pair<const char*, int>> heads;
    for (const auto& [name, h] : head_names) heads.emplace_back(name.c_str(), h);
    optional_combo<int>("heads", t.heads, heads);
    ImGui::SameLine(0.0f, 18.0f);
    optional_combo<PositionalEncoding>("positional", t.positional,
                                       {{"none", PositionalEncoding::None}, {"sinusoidal", PositionalEncoding::Sinusoidal},
                                        {"learned", PositionalEncoding::Learned}, {"rope", PositionalEncoding::Rotary},
                                        {"alibi", PositionalEncoding::ALiBi}});
    ImGui::SameLine(0.0f, 18.0f);
    optional_combo<bool>("scaling", t.scale, {{"\xC3\xB7\xE2\x88\x9A" "d\xE2\x82\x96 on", true}, {"off", false}});
    ImGui::SameLine(0.0f, 18.0f);
    optional_combo<SoftmaxKind>("softmax", t.softmax, {{"stable", SoftmaxKind::Stable}, {"naive", SoftmaxKind::Naive}});
}

}  // namespace

// [SECTION] Recompute (before the frame draws)

// Called before any panel draws: asks the compute layer for B (it runs B on a worker and
// installs the comparison in the session); a new B drops textures, which nothing this frame
// uses yet.
void prepare_compare(EditContext state, CompareState& c, HeatmapTextures& textures) {
    const comparison::Comparison& r = state.session.comparison;
    if (!c.open || !r.ready || r.signature == c.shown) return;
    c.shown = r.signature;
    textures.clear();  // "compare.b.*" names keep the session generation: their textures must go
    if (!r.differences.empty() && comparison::find_difference(r, c.matrix) == nullptr) {
        c.matrix = r.differences.front().name;
        for (const MatrixDifference& d : r.differences)
            if (const auto ref = parse_matrix_name(d.name); ref && ref->entry->arithmetic == Arithmetic::Softmax) {
                c.matrix = d.name;
                break;
            }
    }
}

// [SECTION] Drawing

namespace {

// A card of Compare: the axes and colour scale of the matrix's registry entry.
HeatmapSpec compare_spec(const std::string& name, const Matrix& m, const Trace& t, const std::string& matrix) {
    HeatmapSpec spec;
    spec.name = name;
    spec.values = &m;
    spec.shape = std::to_string(m.rows()) + "\xC3\x97" + std::to_string(m.cols());
    const std::optional<MatrixRef> ref = parse_matrix_name(matrix);
    const MatrixEntry* entry = ref ? ref->entry : nullptr;
    spec.scale = entry != nullptr ? color_scale(entry->values) : ColorScale::Diverging;
    spec.row_axis = entry != nullptr ? heatmap_axis(entry->rows) : Axis::Dim;
    spec.col_axis = entry != nullptr ? heatmap_axis(entry->cols) : Axis::Dim;
    const auto tokens_of = [&](Axis axis, Eigen::Index length) -> const std::vector<std::string>* {
        const std::vector<std::string>* tokens = axis == Axis::Query ? &t.query_tokens : axis == Axis::Key ? &t.key_tokens : nullptr;
        return tokens != nullptr && static_cast<Eigen::Index>(tokens->size()) == length ? tokens : nullptr;
    };
    spec.row_tokens = tokens_of(spec.row_axis, m.rows());
    spec.col_tokens = tokens_of(spec.col_axis, m.cols());
    if (spec.row_tokens == nullptr) spec.row_axis = Axis::Dim;
    if (spec.col_tokens == nullptr) spec.col_axis = Axis::Dim;
    return spec;
}

std::string describe(const Toggles& t) {
    std::string text;
    if (t.mask) text += std::string("mask ") + to_string(*t.mask) + ", ";
    if (t.heads) text += std::to_string(*t.heads) + " heads, ";
    if (t.positional) text += std::string("PE ") + to_string(*t.positional) + ", ";
    if (t.scale) text += *t.scale ? "scaled, " : "unscaled, ";
    if (t.softmax) text += std::string(to_string(*t.softmax)) + " softmax, ";
    return text.empty() ? "same as A" : text.substr(0, text.size() - 2);
}

}  // namespace

void draw_compare(MapContext state, CompareState& c, HeatmapTextures& textures) {
    if (!c.open) return;
    const float scale = state.fonts.scale;
    const ImGuiViewport* viewport = ImGui::GetMainViewport();
    ImGui::SetNextWindowSize(ImVec2(viewport->Size.x * 0.85f, viewport->Size.y * 0.7f), ImGuiCond_Appearing);
    ImGui::SetNextWindowPos(ImVec2(viewport->Size.x * 0.5f, viewport->Size.y * 0.55f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    if (!ImGui::Begin("Compare A with B", &c.open, ImGuiWindowFlags_NoSavedSettings)) {
        ImGui::End();
        return;
    }
    ImGui::TextDisabled("A = the current scenario.  B = A with:");
    ImGui::SameLine();
    draw_b_toggles(state, c);
    const comparison::Comparison& r = state.session.comparison;
    const Trace& a = state.session.trace;
    if (!r.ready) {
        ImGui::TextDisabled("computing B\xE2\x80\xA6");
        ImGui::End();
        return;
    }
    if (!r.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 110, 100, 255));
        ImGui::TextWrapped("%s", r.error.c_str());
        ImGui::PopStyleColor();
        ImGui::End();
        return;
    }
    ImGui::SetNextItemWidth(260.0f * scale);
    if (ImGui::BeginCombo("matrix", display_name(c.matrix).c_str())) {
        for (const MatrixDifference& d : r.differences)
            if (ImGui::Selectable((display_name(d.name) + "##" + d.name).c_str(), d.name == c.matrix)) c.matrix = d.name;
        ImGui::EndCombo();
    }
    const MatrixDifference* diff = comparison::find_difference(r, c.matrix);
    const Matrix* ma = find_matrix(a, c.matrix);
    const Matrix* mb = find_matrix(r.b, c.matrix);
    if (diff == nullptr || ma == nullptr || mb == nullptr) {
        ImGui::TextWrapped("A and B do not share a matrix of this name and shape (B: %s).", describe(c.toggles_b).c_str());
        ImGui::End();
        return;
    }
    // How far B is from A, in words: below float rounding at the operands' size is no
    // difference, and the B − A colours start there (a difference of 1e−31 is not drawn as
    // saturated as one of 1).
    ImGui::SameLine();
    std::string largest = "largest |B \xE2\x88\x92 A| = " + format_value(diff->max_abs, 4);
    if (!diff->differs())
        largest += ": no difference (float rounding at this size is " + format_value(diff->noise, 4) + ")";
    if (diff->non_finite > 0)
        largest += ", and " + std::to_string(diff->non_finite) + (diff->non_finite == 1 ? " cell where" : " cells where") +
                   " B \xE2\x88\x92 A is not a number (NaN or \xE2\x88\x9E on one side)";
    ImGui::Text("  %s", largest.c_str());
    record_item(state, "compare.largest", largest);

    HeatmapSpec specs[3] = {
        compare_spec("compare.a." + c.matrix, *ma, a, c.matrix),
        compare_spec("compare.b." + c.matrix, *mb, r.b, c.matrix),
        compare_spec("compare.diff." + c.matrix, diff->difference, a, c.matrix),
    };
    const bool weights = specs[0].scale == ColorScale::Weights;
    specs[2].scale = ColorScale::Diverging;
    specs[2].legend_floor = diff->noise;
    specs[0].trace = &a;
    specs[1].trace = &r.b;
    for (HeatmapSpec& spec : specs) spec.matrix = c.matrix;
    specs[2].diff_a = ma;
    specs[2].diff_b = mb;
    specs[0].title = "A  " + display_name(c.matrix);
    specs[1].title = "B  (" + describe(c.toggles_b) + ")";
    specs[2].title = "B \xE2\x88\x92 A";
    if (weights) {  // masked cells hatched where each configuration hides them
        specs[0].mask = &a.visible;
        specs[1].mask = &r.b.visible;
        specs[0].show_masked_value = specs[1].show_masked_value = false;
    }
    // One cell size for the three, the largest that fits side by side.
    CardText texts[3];
    for (int i = 0; i < 3; ++i) texts[i] = measure_text(specs[i], state.fonts);
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float gap = 40.0f * scale;
    CardMetrics metrics[3];
    fit_side_by_side(specs, texts, 3, 72.0f * scale, 4.0f, gap, ImVec2(avail.x - 10.0f, avail.y - 10.0f), true, state.fonts, metrics);
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    float x = origin.x, height = 0;
    for (int i = 0; i < 3; ++i) {
        ImGui::SetCursorScreenPos(ImVec2(x, origin.y));
        draw_card(specs[i], metrics[i], state, textures);
        x += metrics[i].width + gap;
        height = std::max(height, metrics[i].height);
    }
    // Linked hover: the cell under the mouse in any of the three, outlined in all three.
    const HoverState& hover = state.hover_next;
    auto in_group = [&](const std::string& name) { return name == specs[0].name || name == specs[1].name || name == specs[2].name; };
    if (hover.row >= 0 && in_group(hover.matrix)) {
        outline_hovered_cell(hover, state.layout_next, in_group, 3.0f * scale);
        ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + height + 6.0f * scale));
        const std::string cell = "cell (" + std::to_string(hover.row + 1) + ", " + std::to_string(hover.col + 1) +
                                 "):  A = " + format_value((*ma)(hover.row, hover.col), 4) + ",  B = " + format_value((*mb)(hover.row, hover.col), 4) +
                                 ",  B \xE2\x88\x92 A = " + format_value(diff->difference(hover.row, hover.col), 4);
        ImGui::TextUnformatted(cell.c_str());
        record_item(state, "compare.cell", cell);
    } else {
        ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + height + 6.0f * scale));
        ImGui::TextDisabled("Hover a cell: it is outlined in all three.");
    }
    ImGui::End();
}

void offer_compare(CompareState& compare, Offers& offers) {
    offers.sections.push_back({"View", [&compare] {
        return std::vector<MenuItem>{{"Compare", "", compare.open, true, [&compare] { compare.open = !compare.open; }, "menu.view.compare", "", false}};
    }});
    offers.keys.push_back([&compare] {
        if (!compare.open || !ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) return false;
        compare.open = false;
        return true;
    });
}

}  // namespace attn::ui

namespace attn::ui {

void CompareView::start(MapContext, const cli::Options&, const TestHooks& hooks) {
    if (!hooks.open_compare) return;
    state.open = true;
    state.toggles_b.mask = MaskKind::Causal;
}

}  // namespace attn::ui
