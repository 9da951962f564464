// "Check my value": right-click a heatmap cell, type the value worked out by hand, and the
// engine says whether it is right, and which step was missed when it matches another one.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

#include <imgui.h>

#include "attention/registry.hpp"

#include "ui/classroom.hpp"

namespace attn::ui {

namespace {

// Digits after the decimal point in what the student typed ("0.40" → 2, "5" → 0).
int decimals_typed(const std::string& text) {
    const auto dot = text.find_first_of(".,");
    if (dot == std::string::npos) return 0;
    int n = 0;
    for (size_t i = dot + 1; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) ++n;
    return n;
}

}  // namespace

void handle_hand_check_click(MapContext state, HandCheckState& h) {
    // A right click without a drag (a right drag pans; a double click resets the zoom).
    const ImGuiIO& io = ImGui::GetIO();
    if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Right)) {  // the zoom reset's, not a check: nor is its release
        h.pending.reset();
        h.ignore_release = true;
    }
    if (h.pending && ImGui::GetTime() - h.pending->since > io.MouseDoubleClickTime) {
        const HandCheckState::Pending cell = *h.pending;
        h = HandCheckState{};
        h.open_requested = true;
        h.matrix = cell.matrix;
        h.row = cell.row;
        h.col = cell.col;
    }
    if (!ImGui::IsMouseReleased(ImGuiMouseButton_Right)) return;
    if (std::exchange(h.ignore_release, false) || io.MouseDownDurationPrev[ImGuiMouseButton_Right] > 0.4f) return;
    const HoverState& hover = state.hover_next;  // the cell under the mouse this frame
    if (hover.matrix.empty() || hover.row < 0 || hover.matrix.rfind("compare.", 0) == 0) return;
    const ImVec2 drag = ImGui::GetMouseDragDelta(ImGuiMouseButton_Right, 0.0f);
    if (drag.x * drag.x + drag.y * drag.y > 9.0f) return;
    if (!h.pending) h.pending = HandCheckState::Pending{hover.matrix, hover.row, hover.col, ImGui::GetTime()};
}

void draw_hand_check(EditContext state, HandCheckState& h) {
    if (h.matrix.empty()) return;
    if (h.open_requested) {
        ImGui::SetNextWindowPos(ImGui::GetMousePos(), ImGuiCond_Always, ImVec2(0.0f, 0.0f));
        ImGui::SetNextWindowFocus();
    }
    bool open = true;
    ImGui::SetNextWindowSize(ImVec2(420.0f * state.fonts.scale, 0.0f));
    if (ImGui::Begin("Check my value", &open, ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_AlwaysAutoResize)) {
        ImGui::TextWrapped("%s, row %d, column %d: type the value you worked out by hand.", display_name(h.matrix).c_str(), h.row + 1, h.col + 1);
        char buffer[64];
        const size_t n = std::min(h.text.size(), sizeof buffer - 1);
        h.text.copy(buffer, n);
        buffer[n] = '\0';
        if (h.open_requested) ImGui::SetKeyboardFocusHere();
        h.open_requested = false;
        const bool entered = ImGui::InputText("##value", buffer, sizeof buffer,
                                              ImGuiInputTextFlags_CharsScientific | ImGuiInputTextFlags_EnterReturnsTrue);
        h.text = buffer;
        ImGui::SameLine();
        if ((ImGui::Button("Check") || entered) && !h.text.empty()) {
            std::string text = h.text;
            for (char& c : text)
                if (c == ',') c = '.';
            char* end = nullptr;
            const double value = std::strtod(text.c_str(), &end);
            h.checked = true;
            if (end == text.c_str()) {
                h.result = HandCheck{};
                h.result.verdict = "\"" + h.text + "\" is not a number.";
            } else {
                h.result = check_hand_value(state.session.trace, h.matrix, h.row, h.col, value, decimals_typed(text));
            }
        }
        // Esc closes it, from its value field too.
        if (ImGui::IsWindowFocused(ImGuiFocusedFlags_RootAndChildWindows) && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false))
            open = false;
        if (h.checked) {
            ImGui::PushStyleColor(ImGuiCol_Text, h.result.correct ? IM_COL32(120, 220, 120, 255) : IM_COL32(255, 170, 90, 255));
            ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + 400.0f * state.fonts.scale);
            ImGui::TextUnformatted(h.result.verdict.c_str());
            ImGui::PopTextWrapPos();
            ImGui::PopStyleColor();
        }
    }
    ImGui::End();
    if (!open) h = HandCheckState{};
}

void offer_hand_check(HandCheckState& check, Offers& offers) {
    offers.keys.push_back([&check] {
        if (check.matrix.empty() || !ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) return false;
        check = HandCheckState{};
        return true;
    });
}

}  // namespace attn::ui
