// File and Export: opening and saving sessions, the exports, the path popup every file goes
// through (the views' own files too: they say what OK does), and the quit question.
//
// Index
// [SECTION] Menus and keys
// [SECTION] Exports
// [SECTION] The path popup
// [SECTION] Quitting and the title
#define GLFW_INCLUDE_NONE  // key codes only: the GLFW backend indexes io.KeysDown by GLFW key
#include <GLFW/glfw3.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <imgui.h>

#include "export_file.hpp"
#include "tensor/reflect.hpp"
#include "attention/registry.hpp"
#include "attention/serialize.hpp"
#include "ui/classroom.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

// "head3-weights.csv" for head 3's weights in CSV: heads counted from 1, as the user reads them.
std::string export_file_name(const std::string& matrix, MatrixFormat format) {
    std::string file = matrix;
    if (const std::optional<MatrixRef> ref = parse_matrix_name(matrix); ref && ref->head >= 0)
        file = "head" + std::to_string(ref->head + 1) + "-" + ref->entry->key;
    std::replace(file.begin(), file.end(), '.', '-');
    return file + "." + export_file::extension(static_cast<export_file::Format>(format));
}

// The matrix Export → Matrix proposes: the last one clicked, else the last hovered, else the
// first head's weights, else the first matrix of the trace.
std::string export_choice(const FilesState& files, const std::vector<std::string>& names) {
    for (const std::string* wanted : {&files.clicked_matrix, &files.hovered_matrix})
        if (std::find(names.begin(), names.end(), *wanted) != names.end()) return *wanted;
    if (std::find(names.begin(), names.end(), "head0.weights") != names.end()) return "head0.weights";
    return names.empty() ? std::string() : names.front();
}

void export_matrix(EditContext state, const FilePrompt& prompt, const std::string& path) {
    const export_file::Format format = prompt.format == MatrixFormat::Csv        ? export_file::Format::Csv
                                       : prompt.format == MatrixFormat::Markdown ? export_file::Format::Markdown
                                                                                 : export_file::Format::Latex;
    std::string text, error;
    if (!export_file::matrix_text(state.session.trace, prompt.matrix, format, state.view.decimals, text, &error) ||
        !write_file_atomic(path, text, &error)) {
        add_notice(state, "Cannot export " + display_name(prompt.matrix) + ": " + error, true, "export");
        return;
    }
    add_notice(state, "Exported " + display_name(prompt.matrix) + " to " + path, false, "export");
}

void export_trace(EditContext state, const std::string& path) {
    std::string error;
    if (write_file_atomic(path, dump_json(trace_to_json(state.session.trace), 1), &error))
        add_notice(state, "Trace written to " + path, false, "write the trace");
    else
        add_notice(state, "Cannot write the trace: " + error, true, "write the trace");
}

AskForPath ask_session(FileAction action) {
    const bool save = action == FileAction::SaveSession;
    return AskForPath{action, save ? "Save session" : "Open session", "session.json", "",
                      [save](EditContext state, const std::string& path) {
                          if (save) state.requests.push_back(SaveSession{path});
                          else state.requests.push_back(OpenSession{path});
                      },
                      nullptr, nullptr};
}

}  // namespace

// [SECTION] Menus and keys

void FilesView::offer(MapContext shared, Offers& offers) {
    const edits::Session* s = &shared.session;  // the window's: alive while the offers are
    offers.sections.push_back({"File", [this] {
        return std::vector<MenuItem>{
            {"Open session\xE2\x80\xA6", "Ctrl+O", false, true, [this] { ask(ask_session(FileAction::OpenSession)); }, "", "", false},
            {"Save session\xE2\x80\xA6", "Ctrl+S", false, true, [this] { ask(ask_session(FileAction::SaveSession)); }, "", "", false}};
    }, 0});
    // Quit closes the File menu, after the views' items.
    offers.sections.push_back({"File", [this, s] {
        return std::vector<MenuItem>{{"Quit", "Ctrl+Q", false, true, [this, s] { request_quit(s->scenario); }, "", "", true}};
    }, 99});
    offers.sections.push_back({"Export", [this, s] {
        const std::vector<std::string> names = matrix_names(s->trace);
        std::vector<MenuItem> items;
        items.push_back({"Window as PNG\xE2\x80\xA6", "", false, true, [this] {
                             // written by the loop once the popup has left the screen
                             ask(AskForPath{FileAction::ExportPng, "Export window as PNG", "attnlab.png", "",
                                            [this](EditContext, const std::string& path) {
                                                state.png_request = path;
                                                state.png_delay = 2;
                                            },
                                            nullptr, nullptr});
                         }, "", "", false});
        items.push_back({"Matrix\xE2\x80\xA6", "", false, !names.empty(), [this, names] {
                             state.prompt.matrix = export_choice(state, names);
                             ask(AskForPath{FileAction::ExportMatrix, "Export matrix", export_file_name(state.prompt.matrix, state.prompt.format), "",
                                            [this](EditContext c, const std::string& path) { export_matrix(c, state.prompt, path); },
                                            nullptr, nullptr});
                         }, "menu.export.matrix", "", false});
        items.push_back({"Whole trace as JSON\xE2\x80\xA6", "", false, s->trace.ok, [this] {
                             ask(AskForPath{FileAction::ExportTrace, "Export trace as JSON", "trace.json", "", export_trace, nullptr, nullptr});
                         }, "", "", false});
        return items;
    }, 90});
    offers.keys.push_back([this, s] {
        const ImGuiIO& io = ImGui::GetIO();
        if (!io.KeyCtrl) return false;
        if (ImGui::IsKeyPressed(GLFW_KEY_S, false)) ask(ask_session(FileAction::SaveSession));
        if (ImGui::IsKeyPressed(GLFW_KEY_O, false)) ask(ask_session(FileAction::OpenSession));
        if (ImGui::IsKeyPressed(GLFW_KEY_Q, false)) request_quit(s->scenario);
        return false;
    });
}

void FilesView::update(MapContext shared, HeatmapTextures&) {
    if (!state.baseline) state.baseline = shared.session.scenario;  // what the app started with
    // What Export → Matrix pre-chooses: the last matrix clicked, else the last hovered.
    if (!shared.hover.matrix.empty() && shared.hover.matrix.rfind("compare.", 0) != 0) {
        state.hovered_matrix = shared.hover.matrix;
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) || ImGui::IsMouseClicked(ImGuiMouseButton_Right))
            state.clicked_matrix = shared.hover.matrix;
    }
}

void FilesView::ask(AskForPath ask) {
    FilePrompt& prompt = state.prompt;
    // Open session proposes the path last typed.
    if (prompt.path.empty() || ask.action != FileAction::OpenSession) prompt.path = ask.path;
    prompt.action = ask.action;
    prompt.ask = std::move(ask);
    prompt.open_requested = true;
}

// [SECTION] The path popup

namespace {

void draw_matrix_choice(EditContext state, FilePrompt& prompt) {
    // The matrix is chosen here, in a list, not by where the pointer last was.
    const std::vector<std::string> names = matrix_names(state.session.trace);
    ImGui::TextUnformatted("Matrix");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1.0f);
    const std::string shown = display_name(prompt.matrix);
    if (ImGui::BeginCombo("##export-matrix", shown.c_str())) {
        for (const std::string& name : names) {
            if (ImGui::Selectable(display_name(name).c_str(), name == prompt.matrix)) {
                // The file name follows the matrix while it is the one proposed.
                if (prompt.path == export_file_name(prompt.matrix, prompt.format)) prompt.path = export_file_name(name, prompt.format);
                prompt.matrix = name;
            }
            if (name == prompt.matrix) ImGui::SetItemDefaultFocus();
        }
        ImGui::EndCombo();
    }
    record_item(state, "export.matrix", shown);
    int format = static_cast<int>(prompt.format);
    ImGui::RadioButton("CSV", &format, 0);
    ImGui::SameLine();
    ImGui::RadioButton("Markdown", &format, 1);
    ImGui::SameLine();
    ImGui::RadioButton("LaTeX", &format, 2);
    if (format != static_cast<int>(prompt.format)) {  // follow the extension
        prompt.format = static_cast<MatrixFormat>(format);
        const auto dot = prompt.path.rfind('.');
        if (dot != std::string::npos)
            prompt.path = prompt.path.substr(0, dot + 1) + export_file::extension(static_cast<export_file::Format>(format));
    }
}

}  // namespace

void FilesView::draw_prompts(EditContext shared) {
    FilePrompt& prompt = state.prompt;
    if (prompt.open_requested) {
        ImGui::OpenPopup("path##prompt");
        prompt.open_requested = false;
    }
    ImGui::SetNextWindowSize(ImVec2(620.0f * shared.fonts.scale, 0.0f));
    if (ImGui::BeginPopupModal("path##prompt", nullptr, ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_AlwaysAutoResize)) {
        // Every line wraps inside the popup's width: a long title or folder is read whole.
        ImGui::PushTextWrapPos(0.0f);
        ImGui::PushFont(shared.fonts.title);
        ImGui::TextUnformatted(prompt.ask.title.empty() ? "File" : prompt.ask.title.c_str());
        ImGui::PopFont();
        if (prompt.action == FileAction::ExportMatrix) draw_matrix_choice(shared, prompt);
        std::error_code ec;
        const std::string folder = std::filesystem::current_path(ec).string();
        if (!prompt.ask.hint.empty()) ImGui::TextDisabled("%s", prompt.ask.hint.c_str());
        ImGui::TextDisabled("Path (a relative one is in %s):", ec ? "the folder the app was started in" : folder.c_str());
        record_item(shared, "prompt.folder", ec ? std::string() : folder);
        char buffer[1024];
        const size_t n = std::min(prompt.path.size(), sizeof buffer - 1);
        prompt.path.copy(buffer, n);
        buffer[n] = '\0';
        if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
        ImGui::SetNextItemWidth(-1.0f);
        const bool entered = ImGui::InputText("##path", buffer, sizeof buffer, ImGuiInputTextFlags_EnterReturnsTrue);
        prompt.path = buffer;
        // OK and Cancel right under the path, above what the asker draws below it (the cached
        // models, a download's button and progress): what comes and goes there never moves them.
        bool ok = ImGui::Button("OK", ImVec2(120.0f * shared.fonts.scale, 0)) || entered;
        record_item(shared, "prompt.ok", "OK");
        ImGui::SameLine();
        const bool cancel = ImGui::Button("Cancel", ImVec2(120.0f * shared.fonts.scale, 0)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape));
        record_item(shared, "prompt.cancel", "Cancel");
        ok = (prompt.ask.below && prompt.ask.below(shared, prompt.path)) || ok;
        ImGui::PopTextWrapPos();
        if (ok && !prompt.path.empty() && prompt.ask.chosen) prompt.ask.chosen(shared, prompt.path);
        if (cancel && prompt.ask.cancelled) prompt.ask.cancelled();
        if (ok || cancel) {
            prompt.action = FileAction::None;
            ImGui::CloseCurrentPopup();
        }
        ImGui::EndPopup();
    }
    draw_unsaved_prompt(shared);
}

// [SECTION] Quitting and the title

void FilesView::opened(const std::string& path, const Scenario& scenario) {
    state.baseline = scenario;
    state.document = path;
    state.document_scenario = scenario.name;
    state.awaiting_layer = false;
}

void FilesView::opened_awaiting_layer(const std::string& path) {
    state.document = path;
    state.document_scenario.clear();
    state.awaiting_layer = true;
}

void FilesView::layer_made(const Scenario& scenario) {
    if (!std::exchange(state.awaiting_layer, false)) return;
    state.baseline = scenario;
    state.document_scenario = scenario.name;
}

void FilesView::saved(PanelContext shared, const std::string& path, const Scenario& scenario, const std::string& error) {
    if (error.empty()) {
        add_notice(shared, "Session saved to " + path, false, "save the session");
        opened(path, scenario);
        if (state.quit_after_save) state.quit_requested = state.quit_confirmed = true;
    } else {
        add_notice(shared, "Cannot save the session: " + error, true, "save the session");
    }
    state.quit_after_save = false;
}

bool FilesView::has_unsaved_work(const Scenario& shown) const {
    const Scenario& own = work ? work() : shown;
    if (state.baseline && reflect::equal(own, *state.baseline)) return false;
    return edits::preset_of(own).empty();
}

std::string FilesView::title(const Scenario& shown) const {
    const std::string& name = shown.name;
    std::string named = !state.document.empty() && name == state.document_scenario ? std::filesystem::path(state.document).filename().string()
                        : name.empty()                                             ? std::string("scenario")
                                                                                   : name;
    return "Attention Lab \xE2\x80\x94 " + named + (has_unsaved_work(shown) ? " (edited)" : "");
}

bool FilesView::request_quit(const Scenario& shown) {
    const bool first = !state.quit_requested;
    state.quit_requested = true;
    if (state.quit_confirmed || !has_unsaved_work(shown)) return state.quit_confirmed = true;
    if (first) state.ask_unsaved = true;  // once per request
    return false;
}

// Save / Discard / Cancel, when quitting would lose work.
void FilesView::draw_unsaved_prompt(PanelContext shared) {
    if (state.ask_unsaved) {
        ImGui::OpenPopup("Unsaved changes");
        state.ask_unsaved = false;
    }
    if (!ImGui::BeginPopupModal("Unsaved changes", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
    ImGui::TextUnformatted("Your scenario has changes that are not saved in a session file.");
    ImGui::TextUnformatted("Save them before quitting?");
    const float w = 120.0f * shared.fonts.scale;
    const bool save = ImGui::Button("Save\xE2\x80\xA6", ImVec2(w, 0));
    record_item(shared, "unsaved.save", "Save");
    ImGui::SameLine();
    const bool discard = ImGui::Button("Discard", ImVec2(w, 0));
    record_item(shared, "unsaved.discard", "Discard");
    ImGui::SameLine();
    const bool cancel = ImGui::Button("Cancel", ImVec2(w, 0)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
    record_item(shared, "unsaved.cancel", "Cancel");
    if (save || discard || cancel) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
    if (discard) state.quit_confirmed = true;
    if (cancel) state.quit_requested = false;
    if (save) {
        state.quit_requested = false;  // asked again by a save that works
        state.quit_after_save = true;
        AskForPath save_first = ask_session(FileAction::SaveSession);
        save_first.cancelled = [this] { state.quit_after_save = false; };  // Save… then Cancel: no quit
        ask(std::move(save_first));
    }
}

}  // namespace attn::ui
