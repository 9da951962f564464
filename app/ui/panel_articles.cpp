// View → Article checks: every number the source articles print against the engine's,
// with the tolerance, MATCH / MISMATCH, and why a mismatch is one.
#include <algorithm>
#include <cstdio>
#include <string>

#include <imgui.h>

#include "ui/classroom.hpp"

namespace attn::ui {

namespace {

std::string numbers(const std::vector<double>& values) {
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i) {
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "%s%.4g", i ? ", " : "", values[i]);
        text += buffer;
    }
    return text + "]";
}

}  // namespace

void draw_articles(PanelContext state, ArticlesState& a) {
    if (!a.open) return;
    if (!a.computed) {  // replays every preset once, when the window first opens
        a.verdicts = check_articles();
        a.computed = true;
    }
    const float scale = state.fonts.scale;
    const ImGuiViewport* viewport = ImGui::GetMainViewport();
    ImGui::SetNextWindowSize(ImVec2(std::min(1100.0f * scale, viewport->Size.x * 0.9f), std::min(620.0f * scale, viewport->Size.y * 0.8f)),
                             ImGuiCond_Appearing);
    ImGui::SetNextWindowPos(ImVec2(viewport->Size.x * 0.5f, viewport->Size.y * 0.5f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    if (!ImGui::Begin("Article checks", &a.open, ImGuiWindowFlags_NoSavedSettings)) {
        ImGui::End();
        return;
    }
    int mismatches = 0;
    for (const Verdict& v : a.verdicts) mismatches += v.match ? 0 : 1;
    ImGui::TextWrapped("%zu printed numbers replayed: %zu match, %d do not. The engine computes the truth; the article's number is "
                       "shown beside it, never bent to fit.",
                       a.verdicts.size(), a.verdicts.size() - static_cast<size_t>(mismatches), mismatches);
    // One block per verdict: what, the two numbers, the verdict; the why under a mismatch.
    ImGui::BeginChild("verdicts", ImVec2(0, 0), false);
    const float column = ImGui::GetContentRegionAvail().x;
    for (const Verdict& v : a.verdicts) {
        ImGui::Separator();
        ImGui::PushStyleColor(ImGuiCol_Text, v.match ? IM_COL32(120, 220, 120, 255) : IM_COL32(255, 110, 100, 255));
        ImGui::PushFont(state.fonts.title);
        ImGui::TextUnformatted(v.match ? "MATCH   " : "MISMATCH");
        ImGui::PopFont();
        ImGui::PopStyleColor();
        ImGui::SameLine();
        ImGui::PushFont(state.fonts.title);
        ImGui::Text("%s", v.quantity.c_str());
        ImGui::PopFont();
        ImGui::SameLine();
        ImGui::TextDisabled("%s%s%s", v.preset.c_str(), v.article.empty() ? "" : " \xC2\xB7 ", v.article.c_str());
        ImGui::PushFont(state.fonts.mono);
        ImGui::Text("printed  %s", numbers(v.printed).c_str());
        ImGui::Text("computed %s", numbers(v.computed).c_str());
        ImGui::TextDisabled("tolerance \xC2\xB1%.3g", v.tolerance);
        ImGui::PopFont();
        if (!v.match && !v.explanation.empty()) {
            ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + column - 8.0f * scale);
            ImGui::TextUnformatted(v.explanation.c_str());
            ImGui::PopTextWrapPos();
        }
    }
    ImGui::EndChild();
    ImGui::End();
}

void offer_articles(ArticlesState& articles, Offers& offers) {
    offers.sections.push_back({"View", [&articles] {
        return std::vector<MenuItem>{{"Article checks", "", articles.open, true, [&articles] { articles.open = !articles.open; }, "menu.view.articles", "", false}};
    }});
}

}  // namespace attn::ui
