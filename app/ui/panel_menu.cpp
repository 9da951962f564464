// The menu bar of what the views offer (menus.hpp), their keys, and the notices in the
// status area. The menu bar knows no view: File, Edit, Lessons, View and Export are each
// made of the sections the views offered this frame.
//
// Index
// [SECTION] Notices
// [SECTION] Menu bar
// [SECTION] Shortcuts
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include <imgui.h>

#include "ui/classroom.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

// [SECTION] Notices

constexpr size_t kNoticesShown = 3;

void add_notice(PanelContext state, std::string text, bool error, std::string attempt) {
    std::vector<Notice>& notices = state.notices;
    if (!error && !attempt.empty())   // this attempt worked: earlier failures of its kind are settled
        notices.erase(std::remove_if(notices.begin(), notices.end(),
                                     [&](const Notice& n) { return n.error && n.attempt == attempt; }),
                      notices.end());
    notices.push_back(Notice{std::move(text), error, std::move(attempt)});
    if (notices.size() > 50) notices.erase(notices.begin());
}

namespace {

// The notices the status area shows: the last few. In presenter mode only errors: a
// projector shows the step being taught, not "Opened the … model".
std::vector<const Notice*> shown_notices(const std::vector<Notice>& notices, bool presenter) {
    std::vector<const Notice*> shown;
    for (auto it = notices.rbegin(); it != notices.rend() && shown.size() < kNoticesShown; ++it)
        if (it->error || !presenter) shown.insert(shown.begin(), &*it);
    return shown;
}

}  // namespace

int notice_lines(const std::vector<Notice>& notices, bool presenter, const LessonState& lesson, float wrap_width) {
    // A notice longer than the width wraps onto more lines: each line is counted.
    const auto lines = [&](const std::string& text) {
        const float height = ImGui::CalcTextSize(text.c_str(), nullptr, false, std::max(1.0f, wrap_width)).y;
        return std::max(1, static_cast<int>(std::lround(height / std::max(1.0f, ImGui::GetTextLineHeight()))));
    };
    int count = 0;
    for (const std::string& error : lesson.load_errors) count += lines("Lesson not loaded: " + error);
    for (const Notice* notice : shown_notices(notices, presenter)) count += lines(notice->text);
    return count;
}

void draw_notices(const std::vector<Notice>& notices, bool presenter, const LessonState& lesson) {
    for (const std::string& error : lesson.load_errors) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 110, 100, 255));
        ImGui::TextWrapped("Lesson not loaded: %s", error.c_str());
        ImGui::PopStyleColor();
    }
    for (const Notice* notice : shown_notices(notices, presenter)) {
        ImGui::PushStyleColor(ImGuiCol_Text, notice->error ? IM_COL32(255, 110, 100, 255) : IM_COL32(150, 220, 150, 255));
        ImGui::TextWrapped("%s", notice->text.c_str());
        ImGui::PopStyleColor();
    }
}

// [SECTION] Menu bar

// Esc closes an open menu (and does nothing else that frame: it does not also leave a lesson).
static void close_menu_on_escape() {
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) ImGui::CloseCurrentPopup();
}

namespace {

void draw_menu_item(PanelContext state, const MenuItem& item) {
    if (item.separator_before) ImGui::Separator();
    if (!item.chosen) {
        ImGui::TextDisabled("%s", item.label.c_str());
        return;
    }
    if (ImGui::MenuItem(item.label.c_str(), item.shortcut.empty() ? nullptr : item.shortcut.c_str(), item.checked, item.enabled)) item.chosen();
    if (!item.id.empty()) record_item(state, item.id.c_str(), item.label);
    if (!item.tooltip.empty() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", item.tooltip.c_str());
}

// File and Edit first, View and Export last, the views' own menus between them.
int menu_rank(const std::string& menu) {
    if (menu == "File") return 0;
    if (menu == "Edit") return 1;
    if (menu == "View") return 3;
    if (menu == "Export") return 4;
    return 2;
}

}  // namespace

void draw_menu_bar(PanelContext state, const Offers& offers) {
    if (!ImGui::BeginMenuBar()) return;
    std::vector<std::string> menus;
    for (const MenuSection& section : offers.sections)
        if (std::find(menus.begin(), menus.end(), section.menu) == menus.end()) menus.push_back(section.menu);
    std::stable_sort(menus.begin(), menus.end(), [](const std::string& a, const std::string& b) { return menu_rank(a) < menu_rank(b); });
    std::vector<const MenuSection*> sections;
    for (const MenuSection& section : offers.sections) sections.push_back(&section);
    std::stable_sort(sections.begin(), sections.end(), [](const MenuSection* a, const MenuSection* b) { return a->position < b->position; });
    for (const std::string& menu : menus) {
        const bool menu_open = ImGui::BeginMenu(menu.c_str());
        std::string id = "menu." + menu;
        std::transform(id.begin(), id.end(), id.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        record_item(state, id.c_str(), menu);
        if (!menu_open) continue;
        close_menu_on_escape();
        for (const MenuSection* section : sections) {
            if (section->menu != menu) continue;
            for (const MenuItem& item : section->items()) draw_menu_item(state, item);
        }
        ImGui::EndMenu();
    }
    for (const std::string& note : offers.notes) ImGui::TextDisabled("%s", note.c_str());
    ImGui::EndMenuBar();
}

// [SECTION] Shortcuts

void handle_shortcuts(const Offers& offers) {
    const ImGuiIO& io = ImGui::GetIO();
    if (io.WantTextInput || ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId)) return;  // keys belong to the text field or popup
    // The views' keys, in the order offered: the first to take them ends the frame's keys.
    for (const auto& keys : offers.keys)
        if (keys()) return;
}

}  // namespace attn::ui
