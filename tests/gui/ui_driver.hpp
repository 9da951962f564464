#pragma once
// The whole window driven without a window: ImGui runs headless (the font atlas is built,
// nothing is drawn, no GL), each frame goes through ui::Window::draw_frame as the app's loop does,
// with the compute layer (CPU) and the model view's jobs in between, and the mouse and keys
// are simulated the way the GLFW backend feeds them. What the window showed is read from the same records the
// screenshot's layout sidecar writes: window.shared.layout (heatmaps) and window.shared.widgets (widgets
// and their text). The small scenarios used never ask for a heatmap texture.
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <catch2/catch.hpp>

#include <string>

#include <imgui.h>

#include "compute.hpp"
#include "key_queue.hpp"
#include "key_replay.hpp"
#include "ui/classroom.hpp"
#include "ui/fonts.hpp"
#include "ui/heatmap.hpp"
#include "ui/panel_model.hpp"
#include "ui/panels.hpp"
#include "ui/window.hpp"

namespace attn::testing {

class UiDriver {
public:
    ImVector<ImWchar> ranges;
    ui::Window window;
    ui::HeatmapTextures textures;
    compute::Compute compute;  // no GPU
    ImVec2 pointer{-1.0f, -1.0f};
    // Frames wait for the model view's jobs (model_job.hpp) unless a test holds them to see
    // what a frame does while one runs.
    bool hold_model_jobs = false;

    explicit UiDriver(Scenario scenario, ImVec2 size = ImVec2(1600, 1000)) {
        ImGui::CreateContext();
        ImGuiIO& io = ImGui::GetIO();
        io.IniFilename = nullptr;
        io.DisplaySize = size;
        io.DeltaTime = 1.0f / 60.0f;
        // As the app's OpenGL 3 renderer says of itself: draw lists past 65,536 vertices (a
        // pipeline of GPT-2 small's layer) are drawn in pieces with 16-bit indices.
        io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
        // The key map of ImGui's GLFW backend: io.KeysDown is indexed by GLFW key codes.
        const std::pair<ImGuiKey_, int> keys[] = {
            {ImGuiKey_Tab, GLFW_KEY_TAB},         {ImGuiKey_LeftArrow, GLFW_KEY_LEFT}, {ImGuiKey_RightArrow, GLFW_KEY_RIGHT},
            {ImGuiKey_UpArrow, GLFW_KEY_UP},      {ImGuiKey_DownArrow, GLFW_KEY_DOWN}, {ImGuiKey_PageUp, GLFW_KEY_PAGE_UP},
            {ImGuiKey_PageDown, GLFW_KEY_PAGE_DOWN}, {ImGuiKey_Home, GLFW_KEY_HOME}, {ImGuiKey_End, GLFW_KEY_END},
            {ImGuiKey_Delete, GLFW_KEY_DELETE},   {ImGuiKey_Backspace, GLFW_KEY_BACKSPACE}, {ImGuiKey_Space, GLFW_KEY_SPACE},
            {ImGuiKey_Enter, GLFW_KEY_ENTER},     {ImGuiKey_Escape, GLFW_KEY_ESCAPE}, {ImGuiKey_A, GLFW_KEY_A},
            {ImGuiKey_C, GLFW_KEY_C},             {ImGuiKey_V, GLFW_KEY_V},            {ImGuiKey_X, GLFW_KEY_X},
            {ImGuiKey_Y, GLFW_KEY_Y},             {ImGuiKey_Z, GLFW_KEY_Z}};
        for (const auto& [imgui_key, glfw_key] : keys) io.KeyMap[imgui_key] = glfw_key;
        const ui::UiFonts fonts = ui::load_fonts(1.0f, ranges);
        window.set_fonts(fonts, ui::load_presenter_fonts(fonts, 1.0f, ranges));
        unsigned char* pixels = nullptr;
        int w = 0, h = 0;
        io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);  // builds the atlas; nothing uploads it
        window.shared.session.scenario = std::move(scenario);
    }
    ~UiDriver() {
        textures.clear();
        ImGui::DestroyContext();
    }
    UiDriver(const UiDriver&) = delete;
    UiDriver& operator=(const UiDriver&) = delete;

    // One frame as the app's loop makes it: edits applied and computed, then drawn.
    void frame(int count = 1) {
        for (int i = 0; i < count; ++i) {
            compute.finish(window.shared.session, window.shared.compute.settings);
            window.shared.compute.status = compute.status();
            if (!hold_model_jobs) window.finish_work();  // the views' jobs land in this frame (the model view's, the Train panel's)
            ImGui::GetIO().MousePos = pointer;
            ImGui::NewFrame();
            window.draw_frame(textures);
            ImGui::Render();
            window.end_frame();
        }
    }

    // File → Open model… on `folder`, landed: whether a model is open after it.
    bool open_model(const std::string& folder) {
        ui::open_model_job(window.shared, window.model.state, folder);
        frame();
        return !window.model.state.opening.running() && window.model.state.model != nullptr;
    }

    void move(ImVec2 at) {
        pointer = at;
        frame();
    }
    void click(ImVec2 at, int button = 0) {
        move(at);
        ImGui::GetIO().MouseDown[button] = true;
        frame();
        ImGui::GetIO().MouseDown[button] = false;
        frame();
    }
    void double_click(ImVec2 at, int button = 0) {
        click(at, button);
        ImGui::GetIO().MouseDown[button] = true;
        frame();
        ImGui::GetIO().MouseDown[button] = false;
        frame();
    }
    // A key pressed and released (GLFW key code), with Ctrl and Shift as given.
    void key(int glfw_key, bool ctrl = false, bool shift = false) {
        ImGuiIO& io = ImGui::GetIO();
        io.KeyCtrl = ctrl;
        io.KeyShift = shift;
        io.KeysDown[glfw_key] = true;
        frame();
        io.KeysDown[glfw_key] = false;
        frame();
        io.KeyCtrl = io.KeyShift = false;
    }
    void type(const std::string& text) {
        ImGui::GetIO().AddInputCharactersUTF8(text.c_str());
        frame();
    }
    // Key and character events that came between two frames, handed to ImGui as the app's
    // loop hands them (key_queue.hpp, key_replay.hpp): a frame at a time until none is left.
    void replay(KeyQueue& queue) {
        while (!queue.empty()) {
            replay_keys(queue.take_frame(), ImGui::GetIO());
            frame();
        }
    }

    // The widget recorded under `id` in the last frame, or null.
    const ui::WidgetLayout* widget(const std::string& id) const {
        for (const ui::WidgetLayout& w : window.shared.widgets)
            if (w.id == id) return &w;
        return nullptr;
    }
    std::string text(const std::string& id) const {
        const ui::WidgetLayout* w = widget(id);
        return w ? w->text : std::string("(no widget '" + id + "')");
    }
    ImVec2 centre(const std::string& id) const {
        const ui::WidgetLayout* w = widget(id);
        INFO("the widget " << id);
        REQUIRE(w != nullptr);
        return ImVec2(w->x + w->w * 0.5f, w->y + w->h * 0.5f);
    }
    const ui::HeatmapLayout* heatmap(const std::string& name) const {
        for (const ui::HeatmapLayout& h : window.shared.layout)
            if (h.name == name) return &h;
        return nullptr;
    }
    ImVec2 cell_centre(const std::string& matrix, int row, int col) const {
        const ui::HeatmapLayout* h = heatmap(matrix);
        REQUIRE(h != nullptr);
        return ImVec2(h->x + (static_cast<float>(col - h->first_col) + 0.5f) * h->cell_w,
                      h->y + (static_cast<float>(row - h->first_row) + 0.5f) * h->cell_h);
    }
};

}  // namespace attn::testing
