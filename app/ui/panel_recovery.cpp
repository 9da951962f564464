// Autosave while the window is open, and the question at start when a run that died
// (a crash, kill -9, a power cut) left an autosave behind: restore it exactly (scenario,
// lesson step, view), discard it, or decide at the next start.
#include <filesystem>
#include <string>
#include <system_error>

#include <imgui.h>

#include "serialize.hpp"
#include "session_file.hpp"
#include "ui/classroom.hpp"

namespace attn::ui {

namespace {

constexpr const char* kPromptTitle = "Restore unsaved work?";

// Changes whenever what an autosave would hold changes; cheap enough for every frame.
std::string signature(const AppState& state) {
    const session_file::ViewChoices v = view_choices(state);
    // The models beside the scenario: the run's newest copy, its probe and opened layer, and
    // the GPT-2 folder's sentence and layer. A run under way is written when it pauses, not
    // at each of its copies (a large model's file is megabytes).
    const TrainPanelState& t = state.train;
    const std::string run = t.progress.running ? std::string("running") : std::to_string(t.seen);
    std::string probe;
    for (int id : t.probe.input.tokens) probe += std::to_string(id) + ",";
    for (int id : t.opened.probe.input.tokens) probe += std::to_string(id) + ";";
    const ModelViewState& m = state.model;
    return std::to_string(state.session.revision) + "|" + std::to_string(v.shown_head) + "|" + (v.all_heads ? "a" : "-") +
           (v.presenter ? "p" : "-") + "|" + v.lesson + "|" + std::to_string(v.step) + "|" + run + "|" +
           std::to_string(t.opened.layer) + "|" + probe + "|" + (m.checkpoint ? m.checkpoint->folder : std::string()) + "|" +
           m.computed_sentence + "|" + std::to_string(m.layer);
}

std::string describe_age(long long seconds) {
    if (seconds < 90) return std::to_string(seconds) + " s ago";
    if (seconds < 90 * 60) return std::to_string((seconds + 30) / 60) + " min ago";
    if (seconds < 36 * 3600) return std::to_string((seconds + 1800) / 3600) + " h ago";
    return std::to_string((seconds + 43200) / 86400) + " days ago";
}

}  // namespace

void start_autosave(AppState& state, const std::string& directory, std::chrono::milliseconds interval, bool save) {
    RecoveryState& r = state.recovery;
    if (directory.empty()) return;
    r.orphans = autosave::find_orphans(directory);  // before this run's own file exists
    r.prompt = !r.orphans.empty();
    if (!save) return;
    r.saver = std::make_unique<autosave::Autosaver>(directory, interval);
    if (!r.saver->enabled()) {
        add_notice(state, "Autosave is off: " + r.saver->error(), true);
        r.saver.reset();
    }
}

void autosave_tick(AppState& state) {
    RecoveryState& r = state.recovery;
    if (!r.saver) return;
    const std::string now = signature(state);
    if (!r.baseline_set) {  // what the app opened with can be opened again the same way
        r.saver->set_baseline(now);
        r.baseline_set = true;
    }
    // The write runs on a worker thread: it gets its own copy of the scenario, made only
    // when a write starts (at most every interval), and serialises it there.
    const std::string message = r.saver->tick(now, [&state]() -> autosave::Autosaver::Contents {
        return [scenario = state.session.scenario, view = view_choices(state), attached = attachments(state)] {
            return dump_json(session_file::session_to_json(scenario, view, attached));
        };
    });
    if (!message.empty()) add_notice(state, message, r.saver->failing());
    if (r.restored && r.saver->writes() > r.writes_at_restore) {  // this run's autosave now holds the restored work
        autosave::discard(*r.restored);
        r.restored.reset();
    }
}

void finish_autosave(AppState& state) {
    if (state.recovery.saver) state.recovery.saver->finish();
}

bool restore_orphan(AppState& state, size_t index) {
    RecoveryState& r = state.recovery;
    if (index >= r.orphans.size()) return false;
    const autosave::Orphan orphan = r.orphans[index];
    r.orphans.erase(r.orphans.begin() + static_cast<long>(index));
    session_file::SessionLoad load = session_file::load_session(orphan.path);
    if (!load.scenario) {
        // Kept aside under another name, never deleted: it may still be read by hand.
        const std::string aside = orphan.path + ".unreadable";
        std::error_code ec;
        std::filesystem::rename(orphan.path, aside, ec);
        for (const std::string& e : load.errors) add_notice(state, "Cannot restore the autosave: " + e, true);
        add_notice(state, "The autosave was kept as " + (ec ? orphan.path : aside), true);
        return false;
    }
    const std::string name = load.scenario->name;
    apply_session(state, std::move(*load.scenario), load.view);
    apply_attachments(state, load, name);
    r.baseline_set = true;  // the restored work is not on disk for this run yet: the next tick writes it
    add_notice(state, "Restored the session autosaved at " + orphan.written, false);
    if (r.saver) {  // discarded once written again by this run (autosave_tick)
        r.restored = orphan;
        r.writes_at_restore = r.saver->writes();
    }
    return true;
}

void discard_orphan(AppState& state, size_t index) {
    RecoveryState& r = state.recovery;
    if (index >= r.orphans.size()) return;
    autosave::discard(r.orphans[index]);
    r.orphans.erase(r.orphans.begin() + static_cast<long>(index));
}

RestoreRequest draw_restore_prompt(Context& state, RecoveryState& r) {
    if (!r.prompt || r.orphans.empty()) {
        r.prompt = false;
        return RestoreRequest::None;
    }
    if (!ImGui::IsPopupOpen(kPromptTitle)) ImGui::OpenPopup(kPromptTitle);
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.4f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSize(ImVec2(560.0f * state.fonts.scale, 0.0f));
    if (!ImGui::BeginPopupModal(kPromptTitle, nullptr, ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_AlwaysAutoResize))
        return RestoreRequest::None;
    const autosave::Orphan& newest = r.orphans.front();
    ImGui::TextWrapped("Attention Lab did not close normally last time.");
    ImGui::Spacing();
    ImGui::TextWrapped("Its session was autosaved at %s (%s). Restoring brings back the scenario with every edit, "
                       "the lesson step and the view, exactly as they were.",
                       newest.written.c_str(), describe_age(newest.age_seconds).c_str());
    ImGui::TextDisabled("%s", newest.path.c_str());
    if (r.orphans.size() > 1) ImGui::TextDisabled("%zu older autosaves are kept for the next start.", r.orphans.size() - 1);
    ImGui::Spacing();
    RestoreRequest request = RestoreRequest::None;
    bool close = false;
    if (ImGui::Button("Restore")) {
        request = RestoreRequest::Restore;
        close = true;
    }
    ImGui::SameLine();
    if (ImGui::Button("Discard")) {
        request = RestoreRequest::Discard;
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
