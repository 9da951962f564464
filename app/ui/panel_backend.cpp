// The backend section: which engine computes, how far a long run is, long generated
// sequences, and the zoom region that output-only runs recompute at full resolution.
//
// Index
// [SECTION] Engine choice
// [SECTION] Progress
// [SECTION] Sequence length
// [SECTION] Zoom region
#include "ui/panel_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <imgui.h>

namespace attn::ui {

namespace {

constexpr ImU32 kNoticeColor = IM_COL32(255, 170, 90, 255);

// [SECTION] Engine choice

void engine_choice(AppState& state) {
    compute::Settings& settings = state.compute.settings;
    const compute::Status& status = state.compute.status;
    ImGui::TextUnformatted("Engine");
    for (compute::Choice c : {compute::Choice::Cpu, compute::Choice::Gpu, compute::Choice::Auto}) {
        ImGui::SameLine();
        const char* label = c == compute::Choice::Cpu ? "CPU" : c == compute::Choice::Gpu ? "GPU" : "Auto";
        if (ImGui::RadioButton(label, settings.choice == c)) settings.choice = c;
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Auto: the CPU in full detail up to %d tokens; above, output-only on the GPU\n"
                          "when there is a hardware one (a software renderer is slower than the CPU)",
                          compute::kFullDetailLimit);
    if (!status.gpu_renderer.empty())
    {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
        ImGui::TextWrapped("GL: %s%s", status.gpu_renderer.c_str(), status.gpu_software ? " (software)" : "");
        ImGui::PopStyleColor();
    }
    if (status.gpu == compute::GpuState::Ready) ImGui::TextDisabled("GPU backend ready");
    if (!status.notice.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, kNoticeColor);
        ImGui::TextWrapped("%s", status.notice.c_str());
        ImGui::PopStyleColor();
    }
    const char* detail = status.planned_detail == Detail::Full ? "full detail: every n\xC3\x97n matrix"
                                                               : "output-only: weights pooled, no n\xC3\x97n matrix";
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ImGui::TextWrapped("%s, %s", status.planned_gpu ? "GPU" : "CPU", detail);
    ImGui::PopStyleColor();
}

// [SECTION] Progress

void progress(AppState& state) {
    const compute::Status& status = state.compute.status;
    if (!status.busy) return;
    if (status.progress >= 0.0f) {
        char overlay[48];
        std::snprintf(overlay, sizeof overlay, "GPU %.0f%%", 100.0 * status.progress);
        ImGui::ProgressBar(status.progress, ImVec2(-1, 0), overlay);
    } else {
        // The CPU worker reports no fraction: a bar that sweeps while it runs.
        const float t = static_cast<float>(ImGui::GetTime());
        ImGui::ProgressBar(0.5f + 0.5f * std::sin(t * 3.0f), ImVec2(-1, 0), status.stale ? "CPU (then again: edited)" : "CPU");
    }
    ImGui::TextDisabled("the last result stays on screen until then");
}

// [SECTION] Sequence length

void sequence_length(AppState& state) {
    compute::Settings& settings = state.compute.settings;
    // Log steps: 2^4 … 2^16.
    int exponent = std::clamp(static_cast<int>(std::lround(std::log2(std::max(16, settings.generate_length)))), 4, 16);
    const std::string shown = std::to_string(1 << exponent) + " tokens";
    ImGui::SetNextItemWidth(-80.0f * state.fonts.scale);
    if (ImGui::SliderInt("##length", &exponent, 4, 16, shown.c_str(), ImGuiSliderFlags_AlwaysClamp))
        settings.generate_length = 1 << exponent;
    ImGui::SameLine();
    if (ImGui::Button("generate")) {
        state.session.push(edits::ReplaceScenario{compute::generated_scenario(settings.generate_length, settings.generate_seed)});
        state.views.clear();
        state.view.shown_head = 0;
        settings.region = compute::Region{};
        state.compute.region_draft = compute::Region{};
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("tokens t1 \xE2\x80\xA6 tN, d_model 64, 8 heads, seeded embeddings;\n"
                          "above %d tokens the weights are shown pooled",
                          compute::kFullDetailLimit);
}

// [SECTION] Zoom region

void zoom_region(AppState& state) {
    const Trace& t = state.session.trace;
    if (!t.ok || t.detail != Detail::OutputOnly || t.head.empty()) return;
    compute::Settings& settings = state.compute.settings;
    compute::Region& draft = state.compute.region_draft;
    if (draft.whole()) draft = compute::Region{0, t.n_queries, 0, t.n_keys};
    ImGui::TextUnformatted("Weights region (zoom)");
    ImGui::SetNextItemWidth(-1);
    ImGui::DragIntRange2("##rows", &draft.row_begin, &draft.row_end, std::max(1.0f, t.n_queries / 400.0f), 0, t.n_queries,
                         "queries %d", "to %d");
    ImGui::SetNextItemWidth(-1);
    ImGui::DragIntRange2("##cols", &draft.col_begin, &draft.col_end, std::max(1.0f, t.n_keys / 400.0f), 0, t.n_keys, "keys %d",
                         "to %d");
    if (ImGui::Button("zoom")) settings.region = draft;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("recompute the weights of this region; up to 512 tokens a side is full resolution");
    ImGui::SameLine();
    if (ImGui::Button("whole sequence")) {
        settings.region = compute::Region{};
        draft = compute::Region{0, t.n_queries, 0, t.n_keys};
    }
    const PooledWeights& pooled = t.head.front().pooled_weights;
    ImGui::TextDisabled("shown: queries %d\xE2\x80\x93%d, keys %d\xE2\x80\x93%d", pooled.row_begin, pooled.row_end - 1, pooled.col_begin,
                        pooled.col_end - 1);
}

}  // namespace

void draw_backend(AppState& state) {
    ImGui::Separator();
    ImGui::TextUnformatted("Backend");
    engine_choice(state);
    progress(state);
    sequence_length(state);
    zoom_region(state);
}

}  // namespace attn::ui
