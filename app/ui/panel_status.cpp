// The status line: why the scenario cannot run (the last good trace stays on screen),
// the engine's warnings, and the sizes.
#include <algorithm>
#include <string>

#include <imgui.h>

#include "ui/panels.hpp"

namespace attn::ui {

void record_item(PanelContext state, const char* id, std::string text) {
    const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
    state.widgets_next.push_back(WidgetLayout{id, std::move(text), min.x, min.y, max.x - min.x, max.y - min.y});
}

void hint_text(const std::string& text) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", text.c_str());
    ImGui::PopStyleColor();
}

bool input_line(const char* id, std::string& text, int flags) {
    char buffer[2048];
    const size_t n = std::min(text.size(), sizeof buffer - 1);
    text.copy(buffer, n);
    buffer[n] = '\0';
    const bool result = ImGui::InputText(id, buffer, sizeof buffer, flags);
    text = buffer;
    return result;
}

void draw_status(Context& state) {
    const edits::Session& session = state.session;
    const Trace& t = session.trace;
    for (const std::string& error : session.errors) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 110, 100, 255));
        ImGui::TextWrapped("Cannot compute: %s%s", error.c_str(),
                           t.ok ? "  (showing the last result that could be computed; your edit is kept)" : "");
        ImGui::PopStyleColor();
    }
    if (session.errors.empty()) {
        for (const std::string& warning : t.warnings) {
            ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 200, 90, 255));
            ImGui::TextWrapped("\xE2\x9A\xA0 %s", warning.c_str());
            ImGui::PopStyleColor();
        }
    }
    if (t.ok) {
        const std::string d_model = t.d_model > 0 ? "d_model = " + std::to_string(t.d_model) + ", " : "direct Q, K, V, ";
        // Which engine produced the trace on screen, and how long its attention took.
        // Another tab in front: this line is the pipeline's, and says so.
        const char* whose = state.view.pane == Pane::Pipeline ? "" : "pipeline tab: ";
        ImGui::TextDisabled("%sn_q = %d, n_k = %d, %sheads = %d, d\xE2\x82\x96 = %d, d_v = %d   \xC2\xB7   %s, %s: %.1f ms (%.1f ms to the screen)",
                            whose, t.n_queries, t.n_keys, d_model.c_str(), t.heads, t.d_k, t.d_v, t.backend == "gpu" ? "GPU" : "CPU",
                            t.detail == Detail::Full ? "full detail" : "output-only", t.milliseconds, session.last_run_ms);
    }
    const compute::Status& compute = state.compute.status;
    if (compute.busy) {
        ImGui::SameLine();
        if (compute.progress >= 0.0f) ImGui::TextDisabled("  \xC2\xB7  computing on the %s: %.0f%%", compute.running_backend == "gpu" ? "GPU" : "CPU", 100.0 * compute.progress);
        else ImGui::TextDisabled("  \xC2\xB7  computing on the %s\xE2\x80\xA6", compute.running_backend == "gpu" ? "GPU" : "CPU");
        if (compute.planned_detail == Detail::Full && t.ok) {  // a full run on the worker: the maps are not yet the edit's
            const std::string text = "the maps are the trace before the last edit until its run lands";
            ImGui::SameLine();
            ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 200, 60, 255));
            ImGui::TextUnformatted(text.c_str());
            ImGui::PopStyleColor();
            record_item(state, "status.previous_trace", text);
        }
    }
    if (!compute.notice.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 170, 90, 255));
        ImGui::TextWrapped("\xE2\x9A\xA0 %s", compute.notice.c_str());
        ImGui::PopStyleColor();
    }
}

}  // namespace attn::ui
