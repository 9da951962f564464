// Lesson mode and the focused stage view: the lessons from assets/lessons, stepping
// through them, the step's text, a strip of the pipeline's stages (the current one
// highlighted, later ones dimmed), the current stage drawn large with its inputs, and the
// softmax-sharpness plot. Presenter mode reuses the focused view.
//
// Index
// [SECTION] Lessons: loading, opening, stepping
// [SECTION] Stage cards
// [SECTION] Focused view layout
// [SECTION] Scaling plot
// [SECTION] Lesson text and stage strip
// [SECTION] The Lessons menu and the clicker
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <imgui.h>
#define GLFW_INCLUDE_NONE  // key codes only: the GLFW backend indexes io.KeysDown by GLFW key
#include <GLFW/glfw3.h>

#include "data_dir.hpp"
#include "teaching/lesson.hpp"
#include "teaching/presets.hpp"
#include "attention/registry.hpp"
#include "ui/cards.hpp"
#include "ui/arithmetic.hpp"
#include "ui/classroom.hpp"
#include "ui/glyphs.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

// [SECTION] Lessons: loading, opening, stepping

void ensure_lessons_loaded(LessonState& ls) {
    if (ls.loaded) return;
    ls.loaded = true;
    ls.load_errors.clear();
    ls.lessons = load_lessons(data_dir() + "/lessons", ls.load_errors);
}

namespace {

void show_step(MapContext state, LessonState& ls) {
    const Lesson& lesson = ls.lessons[static_cast<size_t>(ls.active)];
    ls.step = std::clamp(ls.step, 0, std::max(0, static_cast<int>(lesson.steps.size()) - 1));
    // A step with "train" trains here, on the UI thread: a second at most (the loader bounds it).
    const std::optional<LessonTraining>& trains = lesson.steps.empty() ? std::nullopt : lesson.steps[static_cast<size_t>(ls.step)].train;
    ls.has_facts = trains.has_value();
    Scenario scenario = trains ? trained_lesson_scenario(*trains, &ls.facts, &ls.trained) : scenario_at_step(lesson, ls.step);
    state.push(edits::ReplaceScenario{std::move(scenario), true});  // navigation: not undone
    // The step's text is about the pipeline: never above another tab; a trained step's head, whose
    // pattern the text explains, alone.
    const auto& training = lesson.steps[static_cast<size_t>(ls.step)].train;
    state.requests.push_back(ShowView{Pane::Pipeline, training ? std::optional<int>(training->head - 1) : std::nullopt, {}});
    ls.sharpness.clear();
    if (!lesson.steps.empty() && lesson.steps[static_cast<size_t>(ls.step)].stage == Stage::ScalingPlot) {
        // d_k from 1 to 512, 64 keys, 200 sampled rows: computed once, when the step opens.
        std::vector<int> d_ks;
        for (int d = 1; d <= 512; d *= 2) d_ks.push_back(d);
        ls.sharpness = softmax_sharpness(d_ks, 64, 200, 1);
    }
}

}  // namespace

bool open_lesson(MapContext state, LessonState& ls, int index, int step) {
    ensure_lessons_loaded(ls);
    if (index < 0 || index >= static_cast<int>(ls.lessons.size())) return false;
    if (ls.active < 0) {
        // Entering from free mode: keep the user's work, edits not yet applied included.
        ls.saved = edits::queued_work(state.session);
    }
    ls.active = index;
    ls.step = step;
    show_step(state, ls);
    return true;
}

bool open_lesson_named(MapContext state, LessonState& ls, const std::string& file_or_name, int step) {
    ensure_lessons_loaded(ls);
    if (const int found = find_lesson(ls.lessons, file_or_name); found >= 0) return open_lesson(state, ls, found, step);
    std::error_code ec;
    if (std::filesystem::is_regular_file(file_or_name, ec)) {
        // A lesson file outside the folder: added to the list, then opened.
        LessonLoad load = load_lesson_file(file_or_name);
        for (const std::string& e : load.errors) add_notice(state, e, true);
        if (!load.lesson) return false;
        ls.lessons.push_back(std::move(*load.lesson));
        return open_lesson(state, ls, static_cast<int>(ls.lessons.size()) - 1, step);
    }
    add_notice(state, "no lesson named '" + file_or_name + "' in " + data_dir() + "/lessons", true);
    return false;
}

void lesson_next(MapContext state, LessonState& ls) {
    if (ls.active < 0) return;
    const int last = static_cast<int>(ls.lessons[static_cast<size_t>(ls.active)].steps.size()) - 1;
    if (ls.step >= last) return;
    ++ls.step;
    show_step(state, ls);
}

void lesson_previous(MapContext state, LessonState& ls) {
    if (ls.active < 0 || ls.step <= 0) return;
    --ls.step;
    show_step(state, ls);
}

void leave_lesson(EditContext state, LessonState& ls) {
    if (ls.active >= 0 && ls.saved) {
        state.restore(std::move(*ls.saved));
        add_notice(state, "left the lesson: your own scenario is back, with its undo history", false);
    }
    ls.saved.reset();
    ls.active = -1;
    ls.sharpness.clear();
}

const LessonStep* current_step(const LessonState& ls) {
    if (ls.active < 0 || ls.active >= static_cast<int>(ls.lessons.size())) return nullptr;
    const Lesson& lesson = ls.lessons[static_cast<size_t>(ls.active)];
    if (lesson.steps.empty()) return nullptr;
    return &lesson.steps[static_cast<size_t>(std::clamp(ls.step, 0, static_cast<int>(lesson.steps.size()) - 1))];
}

// [SECTION] Stage cards

namespace {

using glyph::kArrow;
using glyph::kDot;
using glyph::kSqrt;
using glyph::kT;
using glyph::kTimes;


struct StageCard {
    HeatmapSpec spec;
    std::string title, shape;  // whole, before place() wraps them to the card's width
    CardText text;
    CardMetrics metrics;
    bool result = false;  // the stage's own matrix (highlighted); the others are its inputs
};

// A card of the trace's matrix `name`, titled and shaped as in the pipeline (or `title`).
void add_card(std::vector<StageCard>& cards, const Trace& t, const std::string& name, bool result, const std::string& title = std::string()) {
    const auto ref = parse_matrix_name(name);
    if (!ref) return;
    const Matrix* m = matrix_of(t, *ref);
    if (m == nullptr) return;
    StageCard card;
    card.spec = card_spec(t, *ref, *m);
    if (!title.empty()) card.spec.title = title;
    card.result = result;
    cards.push_back(std::move(card));
}

// The stage's cards, as the registry says (step_matrices): what its results read, then the
// results, for the shown head. A stage that computes nothing of its own in this trace shows
// what stands in its place: X when there is no positional encoding, the attention's output
// when the block is off.
std::vector<StageCard> stage_cards(Stage stage, const Trace& t, int head_index) {
    std::vector<StageCard> cards;
    for (const StepMatrix& m : step_matrices(t, stage, head_index)) add_card(cards, t, m.name, m.result);
    if (!cards.empty() || t.head.empty()) return cards;
    if (stage == Stage::Positional) add_card(cards, t, "x", true, std::string("X  (positional encoding: ") + to_string(t.settings.positional) + ")");
    if (stage == Stage::Block) add_card(cards, t, "output", true, "output (block off)");
    return cards;
}

// [SECTION] Focused view layout

struct Placement {
    float cell = 0;
    std::vector<ImVec2> at;  // top-left of each card, relative to the origin
    ImVec2 size;
};

// `text` broken at spaces into lines of at most `width` pixels (a word longer than that keeps
// its line).
std::string wrap_words(const ImFont* font, const std::string& text, float width) {
    const auto text_width = [font](const std::string& t) { return font->CalcTextSizeA(font->FontSize, FLT_MAX, 0.0f, t.c_str()).x; };
    std::string out, line;
    size_t at = 0;
    while (at <= text.size()) {
        size_t end = text.find(' ', at);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(at, end - at);
        const std::string longer = line.empty() ? word : line + " " + word;
        if (!line.empty() && text_width(longer) > width) {
            out += line + "\n";
            line = word;
        } else {
            line = longer;
        }
        at = end + 1;
    }
    return out + line;
}

// Cards left to right, wrapping onto more rows, with the largest cell that fits `avail`; the
// stage's inputs take `input_share` of it. Titles wrap to their card's width, so a long title
// does not leave a small map inside a wide frame.
Placement place_with(std::vector<StageCard>& cards, const UiFonts& fonts, ImVec2 avail, float largest, float gap, float input_share) {
    const bool has_result = std::any_of(cards.begin(), cards.end(), [](const StageCard& c) { return c.result; });
    const float min_title_w = 6.0f * fonts.title->FontSize;
    Placement p;
    for (float cell = largest; cell >= 4.0f; cell -= cell > 16.0f ? 2.0f : 1.0f) {
        p.at.clear();
        float x = 0, y = 0, row_h = 0, width = 0;
        for (StageCard& card : cards) {
            const float rows = static_cast<float>(card.spec.values->rows()), cols = static_cast<float>(card.spec.values->cols());
            const float own = has_result && !card.result ? cell * input_share : cell;
            const float cell_w = std::max(1.0f, own * std::min(1.0f, 16.0f / cols));
            const float cell_h = std::max(1.0f, own * std::min(1.0f, 16.0f / rows));
            const float wrap = std::max(card.text.row_labels + 6.0f + cols * cell_w, min_title_w);
            card.spec.title = wrap_words(fonts.title, card.title, wrap);
            card.spec.shape = wrap_words(fonts.mono_small, card.shape, wrap);
            card.metrics = measure_card(card.spec, measure_text(card.spec, fonts), cell_w, cell_h, fonts);
            if (x > 0 && x + card.metrics.width > avail.x) {
                x = 0;
                y += row_h + gap;
                row_h = 0;
            }
            p.at.push_back(ImVec2(x, y));
            x += card.metrics.width + gap;
            width = std::max(width, x - gap);
            row_h = std::max(row_h, card.metrics.height);
        }
        p.cell = cell;
        p.size = ImVec2(width, y + row_h);
        if (p.size.x <= avail.x && p.size.y <= avail.y) return p;
    }
    return p;  // the smallest size: the child scrolls
}

// The placement whose result (the step being taught) has the largest cells: its inputs at
// three quarters of its cell, or smaller where that lets the result grow (many inputs, as the
// projections' X and three W beside Q, K and V), so the step fills the screen.
Placement place(std::vector<StageCard>& cards, const UiFonts& fonts, ImVec2 avail, float largest, float gap) {
    for (StageCard& card : cards) {
        card.title = card.spec.title;
        card.shape = card.spec.shape;
        card.text = measure_text(card.spec, fonts);
    }
    float best_share = 0.75f, best_cell = -1.0f;
    for (float share : {0.75f, 0.6f, 0.45f}) {
        const Placement p = place_with(cards, fonts, avail, largest, gap, share);
        if (p.cell > best_cell * 1.1f) {  // a smaller share only for a clearly larger result
            best_cell = p.cell;
            best_share = share;
        }
    }
    return place_with(cards, fonts, avail, largest, gap, best_share);
}

// Thicker grid lines over a drawn card (presenter mode: visible from the back of a room).
void thick_grid(const HeatmapLayout& h, ImU32 colour, float thickness) {
    if (h.textured || h.cell_w < 8.0f || h.cell_h < 8.0f) return;
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float w = h.cell_w * static_cast<float>(h.shown_cols), ht = h.cell_h * static_cast<float>(h.shown_rows);
    for (int r = 0; r <= h.shown_rows; ++r)
        draw->AddLine(ImVec2(h.x, h.y + h.cell_h * static_cast<float>(r)), ImVec2(h.x + w, h.y + h.cell_h * static_cast<float>(r)), colour, thickness);
    for (int c = 0; c <= h.shown_cols; ++c)
        draw->AddLine(ImVec2(h.x + h.cell_w * static_cast<float>(c), h.y), ImVec2(h.x + h.cell_w * static_cast<float>(c), h.y + ht), colour, thickness);
}

}  // namespace

void draw_stage_view(MapContext state, LessonState& lesson, HeatmapTextures& textures, Stage stage) {
    const Trace& t = state.session.trace;
    if (!t.ok) {
        ImGui::TextWrapped("Nothing to show yet: the scenario has not run (see the status area).");
        return;
    }
    if (stage == Stage::ScalingPlot) {
        draw_scaling_plot(state, lesson, ImGui::GetContentRegionAvail());
        return;
    }
    std::vector<StageCard> cards = stage_cards(stage, t, state.view.shown_head);
    if (cards.empty()) {
        ImGui::TextWrapped("This stage has nothing to show for this scenario.");
        return;
    }
    const bool presenter = state.presenter;
    const float scale = state.fonts.scale;
    const float gap = (presenter ? 40.0f : 34.0f) * scale;
    const ImVec2 avail(ImGui::GetContentRegionAvail().x - 14.0f * scale, ImGui::GetContentRegionAvail().y - 14.0f * scale);
    const Placement p = place(cards, state.fonts, avail, (presenter ? 110.0f : 80.0f) * scale, gap);
    const ImVec2 origin(ImGui::GetCursorScreenPos().x + 6.0f * scale, ImGui::GetCursorScreenPos().y + 6.0f * scale);  // room for the frame
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImU32 accent = IM_COL32(255, 200, 60, 255);
    for (size_t i = 0; i < cards.size(); ++i) {
        const StageCard& card = cards[i];
        const ImVec2 at(origin.x + p.at[i].x, origin.y + p.at[i].y);
        if (i > 0 && p.at[i].x > 0 && card.result && !cards[i - 1].result) {  // inputs → the stage's result
            const char* sign = kArrow;
            const ImVec2 size = state.fonts.title->CalcTextSizeA(state.fonts.title->FontSize * 1.4f, FLT_MAX, 0.0f, sign);
            draw->AddText(state.fonts.title, state.fonts.title->FontSize * 1.4f,
                          ImVec2(at.x - gap * 0.5f - size.x * 0.5f, at.y + card.metrics.title_h + card.metrics.header_h), IM_COL32(200, 200, 210, 255),
                          sign);
        }
        ImGui::SetCursorScreenPos(at);
        draw_card(card.spec, card.metrics, state, textures);
        if (presenter && !state.layout_next.empty() && state.layout_next.back().name == card.spec.name)
            thick_grid(state.layout_next.back(), IM_COL32(10, 10, 12, 255), 2.0f * scale);
        if (card.result)  // the step's own matrix: framed
            draw->AddRect(ImVec2(at.x - 5.0f * scale, at.y - 4.0f * scale),
                          ImVec2(at.x + card.metrics.width + 5.0f * scale, at.y + card.metrics.height + 4.0f * scale), accent, 5.0f * scale,
                          0, 2.5f * scale);
    }
    ImGui::SetCursorScreenPos(origin);
    ImGui::Dummy(p.size);
}

// [SECTION] Scaling plot

void draw_scaling_plot(PanelContext state, LessonState& ls, ImVec2 avail) {
    if (ls.sharpness.empty()) {  // opened outside a lesson step (cannot happen from the menu): compute now, once
        std::vector<int> d_ks;
        for (int d = 1; d <= 512; d *= 2) d_ks.push_back(d);
        ls.sharpness = softmax_sharpness(d_ks, 64, 200, 1);
    }
    const UiFonts& fonts = state.fonts;
    const float scale = fonts.scale;
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float width = std::min(avail.x - 20.0f * scale, 1100.0f * scale * (state.presenter ? 1.4f : 1.0f));
    const float height = std::min(avail.y - 20.0f * scale, width * 0.55f);
    const float left = 70.0f * scale, bottom = 56.0f * scale, top = fonts.title->FontSize * 2.4f;
    const ImVec2 p0(origin.x + left, origin.y + top);                       // plot area top-left
    const ImVec2 p1(origin.x + width - 16.0f * scale, origin.y + height - bottom);  // bottom-right
    const ImU32 axis = IM_COL32(200, 200, 210, 255), grid = IM_COL32(70, 70, 80, 255);
    const ImU32 scaled_colour = IM_COL32(90, 200, 255, 255), unscaled_colour = IM_COL32(255, 140, 60, 255);
    draw->AddText(fonts.title, fonts.title->FontSize, origin, IM_COL32(240, 240, 245, 255),
                  "Largest softmax weight against d\xE2\x82\x96  (64 keys, random unit-variance q and k)");
    const int n = static_cast<int>(ls.sharpness.size());
    auto x_of = [&](int i) { return p0.x + (p1.x - p0.x) * (n > 1 ? static_cast<float>(i) / static_cast<float>(n - 1) : 0.5f); };
    auto y_of = [&](double w) { return p1.y - (p1.y - p0.y) * static_cast<float>(std::clamp(w, 0.0, 1.0)); };
    for (int tick = 0; tick <= 4; ++tick) {  // weight 0, 0.25, … 1
        const double w = tick * 0.25;
        draw->AddLine(ImVec2(p0.x, y_of(w)), ImVec2(p1.x, y_of(w)), grid, 1.0f);
        char label[16];
        std::snprintf(label, sizeof label, "%.2f", w);
        const float lw = fonts.mono->CalcTextSizeA(fonts.mono->FontSize, FLT_MAX, 0.0f, label).x;
        draw->AddText(fonts.mono, fonts.mono->FontSize, ImVec2(p0.x - lw - 8.0f * scale, y_of(w) - fonts.mono->FontSize * 0.5f), axis, label);
    }
    const float uniform = 1.0f / 64.0f;  // every key equal
    draw->AddLine(ImVec2(p0.x, y_of(uniform)), ImVec2(p1.x, y_of(uniform)), IM_COL32(120, 120, 130, 255), 1.0f);
    for (int i = 0; i < n; ++i) {
        const std::string label = std::to_string(ls.sharpness[static_cast<size_t>(i)].d_k);
        const float lw = fonts.mono->CalcTextSizeA(fonts.mono->FontSize, FLT_MAX, 0.0f, label.c_str()).x;
        draw->AddLine(ImVec2(x_of(i), p1.y), ImVec2(x_of(i), p1.y + 5.0f * scale), axis, 1.0f);
        draw->AddText(fonts.mono, fonts.mono->FontSize, ImVec2(x_of(i) - lw * 0.5f, p1.y + 8.0f * scale), axis, label.c_str());
    }
    draw->AddText(fonts.ui, fonts.ui->FontSize, ImVec2((p0.x + p1.x) * 0.5f - 40.0f * scale, p1.y + 12.0f * scale + fonts.mono->FontSize), axis,
                  "d\xE2\x82\x96 (log scale)");
    draw->AddRect(p0, p1, axis, 0.0f, 0, 1.0f);
    const float thickness = (state.presenter ? 4.0f : 2.5f) * scale;
    for (int series = 0; series < 2; ++series) {
        const ImU32 colour = series == 0 ? scaled_colour : unscaled_colour;
        for (int i = 0; i < n; ++i) {
            const SharpnessPoint& pt = ls.sharpness[static_cast<size_t>(i)];
            const double w = series == 0 ? pt.max_weight_scaled : pt.max_weight_unscaled;
            const ImVec2 at(x_of(i), y_of(w));
            if (i > 0) {
                const SharpnessPoint& prev = ls.sharpness[static_cast<size_t>(i - 1)];
                draw->AddLine(ImVec2(x_of(i - 1), y_of(series == 0 ? prev.max_weight_scaled : prev.max_weight_unscaled)), at, colour, thickness);
            }
            draw->AddCircleFilled(at, thickness * 1.6f, colour);
        }
    }
    // Legend, top-left inside the plot.
    const float lx = p0.x + 16.0f * scale, ly = p0.y + 12.0f * scale, line = fonts.ui->FontSize * 1.4f;
    draw->AddLine(ImVec2(lx, ly + line * 0.5f), ImVec2(lx + 30.0f * scale, ly + line * 0.5f), unscaled_colour, thickness);
    draw->AddText(fonts.ui, fonts.ui->FontSize, ImVec2(lx + 40.0f * scale, ly + line * 0.5f - fonts.ui->FontSize * 0.5f), axis,
                  "without scaling: softmax(q\xC2\xB7k)");
    draw->AddLine(ImVec2(lx, ly + line * 1.5f), ImVec2(lx + 30.0f * scale, ly + line * 1.5f), scaled_colour, thickness);
    draw->AddText(fonts.ui, fonts.ui->FontSize, ImVec2(lx + 40.0f * scale, ly + line * 1.5f - fonts.ui->FontSize * 0.5f), axis,
                  "with scaling: softmax(q\xC2\xB7k / \xE2\x88\x9A" "d\xE2\x82\x96)");
    draw->AddText(fonts.small, fonts.small->FontSize, ImVec2(p1.x - 150.0f * scale, y_of(uniform) - fonts.small->FontSize - 2.0f), axis,
                  "uniform: 1/64");
    ImGui::Dummy(ImVec2(width, height));
}

// [SECTION] Lesson text and stage strip

LessonRequest draw_lesson_text(PanelContext state, const LessonState& ls) {
    const LessonStep* step = current_step(ls);
    if (step == nullptr) return LessonRequest::None;
    const Lesson& lesson = ls.lessons[static_cast<size_t>(ls.active)];
    const int count = static_cast<int>(lesson.steps.size());
    const bool presenter = state.presenter;
    // The stage strip: earlier stages plain, the current one highlighted, later ones dimmed.
    ImGui::TextDisabled("%s  \xC2\xB7 ", lesson.title.c_str());
    ImGui::SameLine();
    for (Stage s : all_stages()) {
        if (s == Stage::ScalingPlot && step->stage != Stage::ScalingPlot) continue;
        ImGui::SameLine(0.0f, 4.0f);
        const bool current = s == step->stage;
        const bool after = static_cast<int>(s) > static_cast<int>(step->stage) && step->stage != Stage::ScalingPlot;
        const ImU32 colour = current ? IM_COL32(255, 200, 60, 255) : after ? IM_COL32(95, 95, 105, 255) : IM_COL32(190, 190, 200, 255);
        ImGui::PushStyleColor(ImGuiCol_Text, colour);
        ImGui::Text(current ? "[%s]" : "%s", to_string(s));
        ImGui::PopStyleColor();
    }
    ImGui::PushFont(state.fonts.title);
    ImGui::Text("Step %d/%d \xC2\xB7 %s", ls.step + 1, count, step->title.c_str());
    ImGui::PopFont();
    ImGui::PushTextWrapPos(ImGui::GetCursorPos().x + std::min(ImGui::GetContentRegionAvail().x, (presenter ? 1500.0f : 1100.0f) * state.fonts.scale));
    ImGui::TextUnformatted(step->text.c_str());
    if (ls.has_facts) {  // computed when the step trained: the numbers the text speaks of
        const std::string facts = ls.facts.sentence();
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(150, 220, 170, 255));
        ImGui::TextUnformatted(facts.c_str());
        ImGui::PopStyleColor();
        record_item(state, "lesson.facts", facts);
    }
    ImGui::PopTextWrapPos();
    LessonRequest request = LessonRequest::None;
    ImGui::BeginDisabled(ls.step <= 0);
    if (ImGui::SmallButton("\xE2\x86\x90 previous")) request = LessonRequest::Previous;
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(ls.step + 1 >= count);
    if (ImGui::SmallButton("next \xE2\x86\x92")) request = LessonRequest::Next;
    ImGui::EndDisabled();
    ImGui::SameLine();
    if (ImGui::SmallButton("leave lesson")) request = LessonRequest::Leave;
    ImGui::SameLine();
    ImGui::TextDisabled("\xE2\x86\x92 / Space next, \xE2\x86\x90 previous, Esc leaves");
    return request;
}

// [SECTION] The Lessons menu and the clicker

void offer_lessons(MapContext state, LessonState& lesson, Offers& offers) {
    offers.sections.push_back({"Lessons", [state, &lesson] {
        ensure_lessons_loaded(lesson);
        std::vector<MenuItem> items;
        for (size_t i = 0; i < lesson.lessons.size(); ++i) {
            const Lesson& l = lesson.lessons[i];
            items.push_back({l.title, "", lesson.active == static_cast<int>(i), true,
                             [state, &lesson, i] { open_lesson(state, lesson, static_cast<int>(i), 0); }, "menu.lesson." + std::to_string(i),
                             l.summary, false});
        }
        if (lesson.lessons.empty()) items.push_back({"no lessons found", "", false, false, nullptr, "", "", false});
        if (!lesson.load_errors.empty())
            items.push_back({std::to_string(lesson.load_errors.size()) + " lesson file(s) could not be read: see the status area", "", false,
                             false, nullptr, "", "", false});
        items.push_back({"Leave lesson", "Esc", false, lesson.active >= 0, [state, &lesson] { leave_lesson(state, lesson); }, "", "", true});
        items.push_back({"Reload lessons from disk", "", false, true,
                         [state, &lesson] {
                             lesson.loaded = false;
                             leave_lesson(state, lesson);
                             ensure_lessons_loaded(lesson);
                         },
                         "", "", false});
        return items;
    }});
    // A clicker sends → / Space and ←; Esc leaves (with a menu or a dialog open it closes that
    // instead: see close_menu_on_escape).
    offers.keys.push_back([state, &lesson] {
        if (lesson.active < 0 || ImGui::GetIO().KeyCtrl) return false;
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space)) ||
            ImGui::IsKeyPressed(GLFW_KEY_PAGE_DOWN))
            lesson_next(state, lesson);
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow)) || ImGui::IsKeyPressed(GLFW_KEY_PAGE_UP)) lesson_previous(state, lesson);
        const bool popup_open = ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel);
        if (!popup_open && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) leave_lesson(state, lesson);
        return false;
    });
    if (lesson.active >= 0) offers.notes.push_back("  lesson mode");
}

}  // namespace attn::ui

namespace attn::ui {

void LessonView::start(MapContext shared, const cli::Options& options, const TestHooks&) {
    if (!options.lesson.empty()) open_lesson_named(shared, state, options.lesson, std::max(0, options.step - 1));
}

void LessonView::keep(session_file::ViewChoices& view, session_file::Attachments&) const {
    if (state.active < 0) return;
    // Portable: the file's name in assets/lessons.
    view.lesson = std::filesystem::path(state.lessons[static_cast<size_t>(state.active)].file).filename().string();
    view.step = state.step;
}

void LessonView::sign(std::string& signature) const {
    signature += "|" + std::to_string(state.active) + "|" + std::to_string(state.step);
}

void LessonView::show(MapContext shared, const session_file::ViewChoices& view) {
    if (!view.lesson.empty()) open_lesson_named(shared, state, view.lesson, view.step);
}

}  // namespace attn::ui
