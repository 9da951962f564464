// One frame of the main window: the menu bar, the side bar, the tokens, the pipeline (or
// a lesson's stage), the status area, and the floating windows. gui.cpp calls it between
// ImGui::NewFrame and ImGui::Render; the UI tests call it with no window at all.
#include <algorithm>
#include <utility>

#include <imgui.h>

#include "ui/classroom.hpp"
#include "ui/panel_model.hpp"
#include "ui/panel_train.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

void draw_frame(AppState& state, HeatmapTextures& textures) {
    ClassroomState& classroom = state.classroom;
    if (!classroom.baseline) classroom.baseline = state.session.scenario;  // what the app started with
    handle_shortcuts(state);  // keys of the last input: undo, files, F5, the lesson clicker
    if (classroom.normal_fonts.ui != nullptr) state.fonts = state.presenter ? classroom.presenter_fonts : classroom.normal_fonts;
    prepare_compare(state, state.classroom.compare, textures);  // before anything draws: a new B drops textures
    update_model_view(state, state.model);         // a new sentence, or an edit of the opened layer: the model's layers after it
    update_trained_layer(state, state.train);      // the same for a trained model's layer
    const bool presenter = state.presenter;
    ImGui::PushFont(state.fonts.ui);
    int colours = 0;
    if (presenter) {  // high contrast for a projector: black ground, white text
        ImGui::PushStyleColor(ImGuiCol_WindowBg, IM_COL32(0, 0, 0, 255));
        ImGui::PushStyleColor(ImGuiCol_ChildBg, IM_COL32(0, 0, 0, 255));
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 255, 255, 255));
        ImGui::PushStyleColor(ImGuiCol_TextDisabled, IM_COL32(200, 200, 200, 255));
        ImGui::PushStyleColor(ImGuiCol_MenuBarBg, IM_COL32(20, 20, 24, 255));
        colours = 5;
    }
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(io.DisplaySize);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0.0f);
    ImGui::Begin("Attention Lab", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                     ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_MenuBar);
    ImGui::PopStyleVar();
    draw_menu_bar(state);
    const float scale = state.fonts.scale;
    const LessonStep* step = current_step(state.classroom.lesson);
    const edits::Session& session = state.session;
    const size_t messages = session.errors.size() + (session.errors.empty() ? session.trace.warnings.size() : 0) +
                            (state.compute.status.notice.empty() ? 0 : 1);  // the GPU fallback notice
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const float status_h =
        line * static_cast<float>(1 + std::min<size_t>(messages, 4) + static_cast<size_t>(notice_lines(state, state.classroom.lesson))) + 8.0f;
    if (!presenter) {
        ImGui::BeginChild("controls", ImVec2(290.0f * scale, 0), true);
        draw_controls(state);
        ImGui::EndChild();
        ImGui::SameLine();
    }
    ImGui::BeginGroup();
    if (!presenter) {
        if (state.model.layer >= 0) draw_model_sentence(state, state.model);  // the model's sentence is edited in the model view
        else if (trained_layer_open(state.train)) draw_trained_probe(state, state.train);
        else draw_tokens(state, state.tokens);
        ImGui::Separator();
    }
    if (step != nullptr) {
        switch (draw_lesson_text(state, state.classroom.lesson)) {  // carried out after this frame's lesson text
            case LessonRequest::Previous: lesson_previous(state, state.classroom.lesson); break;
            case LessonRequest::Next: lesson_next(state, state.classroom.lesson); break;
            case LessonRequest::Leave: leave_lesson(state, state.classroom.lesson); break;
            case LessonRequest::None: break;
        }
        ImGui::Separator();
    }
    ImGui::BeginChild("pipeline", ImVec2(0, -status_h), false, ImGuiWindowFlags_HorizontalScrollbar);
    // Lesson mode: the step's stage and its inputs; presenter mode in free mode: weights and output.
    if (step != nullptr) draw_stage_view(state, state.classroom.lesson, textures, step->stage);
    else if (presenter) draw_stage_view(state, state.classroom.lesson, textures, Stage::Output);
    else draw_pipeline(state, state.pipeline_layout, textures);
    ImGui::EndChild();
    ImGui::BeginChild("status", ImVec2(0, 0), false);
    draw_status(state);
    draw_notices(state, state.classroom.lesson);
    ImGui::EndChild();
    ImGui::EndGroup();
    ImGui::End();
    draw_articles(state, state.classroom.articles);
    draw_compare(state, state.classroom.compare, textures);
    draw_train(state, state.train, textures);
    carry_out_train_request(state);
    draw_model_view(state, state.model, textures);
    handle_hand_check_click(state, state.classroom.hand_check);
    draw_hand_check(state, state.classroom.hand_check);
    switch (draw_restore_prompt(state, state.recovery)) {
        case RestoreRequest::Restore: restore_orphan(state, 0); break;
        case RestoreRequest::Discard: discard_orphan(state, 0); break;
        case RestoreRequest::None: break;
    }
    ImGui::PopStyleColor(colours);
    ImGui::PopFont();
}

void end_frame(AppState& state) {
    state.hover = std::move(state.hover_next);
    state.hover_next = HoverState{};
    state.layout.swap(state.layout_next);
    state.layout_next.clear();
    state.widgets.swap(state.widgets_next);
    state.widgets_next.clear();
}

}  // namespace attn::ui
