// Autosave while the window is open, and the question at start when a run that died
// (a crash, kill -9, a power cut) left an autosave behind: restore it exactly (scenario,
// lesson step, view), discard it, or decide at the next start.
#include <filesystem>
#include <string>
#include <system_error>

#include <imgui.h>

#include "session_file.hpp"
#include "ui/classroom.hpp"

namespace attn::ui {

namespace {

constexpr const char* kPromptTitle = "Restore unsaved work?";

std::string describe_age(long long seconds) {
    if (seconds < 90) return std::to_string(seconds) + " s ago";
    if (seconds < 90 * 60) return std::to_string((seconds + 30) / 60) + " min ago";
    if (seconds < 36 * 3600) return std::to_string((seconds + 1800) / 3600) + " h ago";
    return std::to_string((seconds + 43200) / 86400) + " days ago";
}

}  // namespace

void Recovery::start(PanelContext shared, const std::string& directory, std::chrono::milliseconds interval, bool save) {
    RecoveryState& r = state;
    if (directory.empty()) return;
    r.orphans = autosave::find_orphans(directory);  // before this run's own file exists
    r.prompt = !r.orphans.empty();
    if (!save) return;
    r.saver = std::make_unique<autosave::Autosaver>(directory, interval);
    if (!r.saver->enabled()) {
        add_notice(shared, "Autosave is off: " + r.saver->error(), true);
        r.saver.reset();
    }
}

void Recovery::tick(PanelContext shared, const std::string& signature, const std::function<autosave::Autosaver::Contents()>& contents) {
    RecoveryState& r = state;
    if (!r.saver) return;
    if (!r.baseline_set) {  // what the app opened with can be opened again the same way
        r.saver->set_baseline(signature);
        r.baseline_set = true;
    }
    // The write runs on a worker thread: `contents` gives it its own copy of the session, made
    // only when a write starts (at most every interval), serialised there.
    const std::string message = r.saver->tick(signature, contents);
    if (!message.empty()) add_notice(shared, message, r.saver->failing());
    if (r.restored && r.saver->writes() > r.writes_at_restore) {  // this run's autosave now holds the restored work
        autosave::discard(*r.restored);
        r.restored.reset();
    }
}

void Recovery::finish() {
    if (state.saver) state.saver->finish();
}

std::optional<session_file::SessionLoad> Recovery::take(PanelContext shared, size_t index) {
    RecoveryState& r = state;
    if (index >= r.orphans.size()) return std::nullopt;
    const autosave::Orphan orphan = r.orphans[index];
    r.orphans.erase(r.orphans.begin() + static_cast<long>(index));
    session_file::SessionLoad load = session_file::load_session(orphan.path);
    if (!load.scenario && !load.scenario_in_model) {
        // Kept aside under another name, never deleted: it may still be read by hand.
        const std::string aside = orphan.path + ".unreadable";
        std::error_code ec;
        std::filesystem::rename(orphan.path, aside, ec);
        for (const std::string& e : load.errors) add_notice(shared, "Cannot restore the autosave: " + e, true);
        add_notice(shared, "The autosave was kept as " + (ec ? orphan.path : aside), true);
        return std::nullopt;
    }
    r.taken = orphan;
    return load;
}

void Recovery::restored(PanelContext shared) {
    RecoveryState& r = state;
    r.baseline_set = true;  // the restored work is not on disk for this run yet: the next tick writes it
    add_notice(shared, "Restored the session autosaved at " + r.taken.written, false);
    if (r.saver) {  // discarded once written again by this run (tick)
        r.restored = r.taken;
        r.writes_at_restore = r.saver->writes();
    }
}

void Recovery::discard(size_t index) {
    RecoveryState& r = state;
    if (index >= r.orphans.size()) return;
    autosave::discard(r.orphans[index]);
    r.orphans.erase(r.orphans.begin() + static_cast<long>(index));
}

Recovery::Choice Recovery::draw_prompt(PanelContext shared) {
    RecoveryState& r = state;
    if (!r.prompt || r.orphans.empty()) {
        r.prompt = false;
        return Choice::None;
    }
    if (!ImGui::IsPopupOpen(kPromptTitle)) ImGui::OpenPopup(kPromptTitle);
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.4f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSize(ImVec2(560.0f * shared.fonts.scale, 0.0f));
    if (!ImGui::BeginPopupModal(kPromptTitle, nullptr, ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_AlwaysAutoResize))
        return Choice::None;
    const autosave::Orphan& newest = r.orphans.front();
    ImGui::TextWrapped("Attention Lab did not close normally last time.");
    ImGui::Spacing();
    ImGui::TextWrapped("Its session was autosaved at %s (%s). Restoring brings back the scenario with every edit, "
                       "the lesson step and the view, exactly as they were.",
                       newest.written.c_str(), describe_age(newest.age_seconds).c_str());
    ImGui::TextDisabled("%s", newest.path.c_str());
    if (r.orphans.size() > 1) ImGui::TextDisabled("%zu older autosaves are kept for the next start.", r.orphans.size() - 1);
    ImGui::Spacing();
    Choice request = Choice::None;
    bool close = false;
    if (ImGui::Button("Restore")) {
        request = Choice::Restore;
        close = true;
    }
    ImGui::SameLine();
    if (ImGui::Button("Discard")) {
        request = Choice::Discard;
        close = true;
    }
    ImGui::SameLine();
    if (ImGui::Button("Not now")) close = true;  // the file stays: asked again at the next start
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Keep the autosave and ask again at the next start");
    if (close) {
        r.prompt = false;
        ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
    return request;
}

}  // namespace attn::ui
