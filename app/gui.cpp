// The desktop app: window and GL context, the ImGui frame loop, screenshots.
// Setup, loop, teardown; the panels live in ui/.
//
// Index
// [SECTION] Window and context
// [SECTION] Screenshot
// [SECTION] Frame
// [SECTION] run()
#include "ui/gl.hpp"  // the GL loader first, before GLFW or ImGui's backend touch GL

#include <GLFW/glfw3.h>

#include <cfloat>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <nlohmann/json.hpp>
#include <stb_image_write.h>

#include "gui.hpp"
#include "presets.hpp"
#include "serialize.hpp"
#include "ui/app_state.hpp"
#include "ui/fonts.hpp"
#include "ui/heatmap.hpp"
#include "ui/panels.hpp"

namespace attn::gui {

namespace {

// [SECTION] Window and context

const char* glfw_error() {
    const char* description = nullptr;
    glfwGetError(&description);
    return description ? description : "unknown error";
}

// A window with a core-profile context: 4.3 first (what compute shaders need), then 3.3.
GLFWwindow* open_window(int width, int height, const std::string& title, bool screenshot) {
    const int versions[][2] = {{4, 3}, {3, 3}};
    for (const auto& v : versions) {
        glfwDefaultWindowHints();
        glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, v[0]);
        glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, v[1]);
        glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
        glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
        glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
        if (screenshot) glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
        if (GLFWwindow* window = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr)) return window;
    }
    return nullptr;
}

struct GlfwSession {
    GLFWwindow* window = nullptr;
    bool initialised = false;
    ~GlfwSession() {
        if (window) glfwDestroyWindow(window);
        if (initialised) glfwTerminate();
    }
};

struct ImGuiSession {
    bool context = false, platform = false, renderer = false;
    ~ImGuiSession() {
        if (renderer) ImGui_ImplOpenGL3_Shutdown();
        if (platform) ImGui_ImplGlfw_Shutdown();
        if (context) ImGui::DestroyContext();
    }
};

std::string gl_error_name(GLenum error) {
    switch (error) {
        case GL_INVALID_ENUM: return "GL_INVALID_ENUM";
        case GL_INVALID_VALUE: return "GL_INVALID_VALUE";
        case GL_INVALID_OPERATION: return "GL_INVALID_OPERATION";
        case GL_INVALID_FRAMEBUFFER_OPERATION: return "GL_INVALID_FRAMEBUFFER_OPERATION";
        case GL_OUT_OF_MEMORY: return "GL_OUT_OF_MEMORY";
        default: return "GL error " + std::to_string(error);
    }
}

// [SECTION] Screenshot

// Reads the back buffer (before the swap) and writes it as PNG, top row first.
bool write_screenshot(const std::string& path, int width, int height) {
    std::vector<unsigned char> pixels(static_cast<size_t>(width) * static_cast<size_t>(height) * 4);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    std::vector<unsigned char> flipped(pixels.size());
    const size_t stride = static_cast<size_t>(width) * 4;
    for (int y = 0; y < height; ++y)  // GL's row 0 is the bottom
        std::copy_n(pixels.data() + static_cast<size_t>(height - 1 - y) * stride, stride, flipped.data() + static_cast<size_t>(y) * stride);
    for (size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;  // opaque, whatever the framebuffer's alpha
    return stbi_write_png(path.c_str(), width, height, 4, flipped.data(), static_cast<int>(stride)) != 0;
}

// PATH.layout.json: where each heatmap's cells are in the PNG (pixels), for tests.
bool write_layout(const std::string& path, const std::vector<ui::HeatmapLayout>& layout, float pixel_scale, int width,
                  int height) {
    nlohmann::json heatmaps = nlohmann::json::array();
    for (const ui::HeatmapLayout& h : layout) {
        heatmaps.push_back({{"name", h.name},
                            {"x", h.x * pixel_scale},
                            {"y", h.y * pixel_scale},
                            {"cell_w", h.cell_w * pixel_scale},
                            {"cell_h", h.cell_h * pixel_scale},
                            {"rows", h.rows},
                            {"cols", h.cols},
                            {"first_row", h.first_row},
                            {"first_col", h.first_col},
                            {"shown_rows", h.shown_rows},
                            {"shown_cols", h.shown_cols},
                            {"textured", h.textured}});
    }
    const nlohmann::json doc = {{"width", width}, {"height", height}, {"heatmaps", heatmaps}};
    std::string error;
    if (!write_file_atomic(path, doc.dump(1), &error)) {
        std::fprintf(stderr, "attnlab: cannot write %s: %s\n", path.c_str(), error.c_str());
        return false;
    }
    return true;
}

// ATTNLAB_DEBUG_HOVER=name:row:col puts the mouse on that cell in screenshot mode, so a
// screenshot shows the tooltip. Hidden: for looking at tooltips and for tests.
struct DebugHover {
    std::string matrix;
    int row = -1, col = -1;
    bool parse(const char* text) {
        if (text == nullptr) return false;
        const std::string s = text;
        const auto a = s.find(':'), b = s.rfind(':');
        if (a == std::string::npos || a == b) return false;
        matrix = s.substr(0, a);
        row = std::atoi(s.c_str() + a + 1);
        col = std::atoi(s.c_str() + b + 1);
        return true;
    }
};

// [SECTION] Frame

void draw_frame(ui::AppState& state, ui::HeatmapTextures& textures) {
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(io.DisplaySize);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0.0f);
    ImGui::Begin("Attention Lab", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                     ImGuiWindowFlags_NoBringToFrontOnFocus);
    ImGui::PopStyleVar();
    const float scale = state.fonts.scale;
    ImGui::BeginChild("controls", ImVec2(290.0f * scale, 0), true);
    ui::draw_controls(state);
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginGroup();
    ui::draw_tokens(state);
    ImGui::Separator();
    const edits::Session& session = state.session;
    const size_t messages = session.errors.size() + (session.errors.empty() ? session.trace.warnings.size() : 0);
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const float status_h = line * static_cast<float>(1 + std::min<size_t>(messages, 4)) + 8.0f;
    ImGui::BeginChild("pipeline", ImVec2(0, -status_h), false, ImGuiWindowFlags_HorizontalScrollbar);
    ui::draw_pipeline(state, textures);
    ImGui::EndChild();
    ImGui::BeginChild("status", ImVec2(0, 0), false);
    ui::draw_status(state);
    ImGui::EndChild();
    ImGui::EndGroup();
    ImGui::End();
}

void apply_style(float scale) {
    ImGui::StyleColorsDark();
    ImGuiStyle& style = ImGui::GetStyle();
    style.FrameRounding = 3.0f;
    style.WindowBorderSize = 0.0f;
    style.ChildBorderSize = 1.0f;
    style.Colors[ImGuiCol_WindowBg] = ImVec4(0.11f, 0.11f, 0.13f, 1.0f);
    style.Colors[ImGuiCol_ChildBg] = ImVec4(0.11f, 0.11f, 0.13f, 1.0f);
    style.Colors[ImGuiCol_PopupBg] = ImVec4(0.07f, 0.07f, 0.09f, 0.97f);
    style.ScaleAllSizes(scale);
}

}  // namespace

// [SECTION] run()

int run(const cli::Options& options, Scenario scenario) {
    const bool screenshot = !options.screenshot.empty();
    GlfwSession glfw;
    if (!glfwInit()) {
        std::fprintf(stderr, "attnlab: cannot open a window: %s\n"
                             "  (no display? run headless commands such as --print, or use xvfb-run for --screenshot)\n",
                     glfw_error());
        return 1;
    }
    glfw.initialised = true;
    const std::string title = "Attention Lab \xE2\x80\x94 " + (scenario.name.empty() ? std::string("scenario") : scenario.name);
    glfw.window = open_window(options.width, options.height, title, screenshot);
    if (glfw.window == nullptr) {
        std::fprintf(stderr, "attnlab: cannot create an OpenGL 3.3 window: %s\n", glfw_error());
        return 1;
    }
    glfwMakeContextCurrent(glfw.window);
    glfwSwapInterval(screenshot ? 0 : 1);
    if (epoxy_gl_version() < 33) {
        std::fprintf(stderr, "attnlab: OpenGL 3.3 is needed, the context offers %d.%d\n", epoxy_gl_version() / 10,
                     epoxy_gl_version() % 10);
        return 1;
    }

    float scale_x = 1.0f, scale_y = 1.0f;
    glfwGetWindowContentScale(glfw.window, &scale_x, &scale_y);
    const float scale = std::max(1.0f, scale_x);

    ImVector<ImWchar> glyph_ranges;  // declared first: outlives the font atlas, which the context owns
    ImGuiSession imgui;
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    imgui.context = true;
    ImGui::GetIO().IniFilename = nullptr;  // the layout is computed, nothing to remember
    apply_style(scale);
    imgui.platform = ImGui_ImplGlfw_InitForOpenGL(glfw.window, true);
    imgui.renderer = ImGui_ImplOpenGL3_Init("#version 330 core");
    if (!imgui.platform || !imgui.renderer) {
        std::fprintf(stderr, "attnlab: cannot start the ImGui GLFW/OpenGL3 backends\n");
        return 1;
    }

    // Declared after the ImGui session: textures go before the context does.
    ui::AppState state;
    state.fonts = ui::load_fonts(scale, glyph_ranges);
    state.screenshot_mode = screenshot;
    state.preset_name = options.preset;
    if (state.preset_name.empty() && find_preset(scenario.name) != nullptr) state.preset_name = scenario.name;
    state.session.scenario = std::move(scenario);
    ui::HeatmapTextures textures;

    if (screenshot && std::getenv("ATTNLAB_DEBUG_ALL_HEADS") != nullptr) state.view.all_heads = true;  // hidden: screenshots of every head
    DebugHover debug_hover;
    const bool hover_forced = screenshot && debug_hover.parse(std::getenv("ATTNLAB_DEBUG_HOVER"));
    const bool timing = std::getenv("ATTNLAB_DEBUG_TIMING") != nullptr;
    const int screenshot_frames = hover_forced ? 10 : 6;  // layout and fonts settle in 2–3 frames
    int exit_code = 0;

    int quiet_frames = 0;  // frames since the last input: an idle window sleeps until an event
    for (int frame = 0; !glfwWindowShouldClose(glfw.window); ++frame) {
        if (!screenshot && quiet_frames > 3) glfwWaitEventsTimeout(0.5);
        else glfwPollEvents();
        edits::update(state.session);  // edits from the last frame, then one recompute if anything changed

        ImGui_ImplOpenGL3_NewFrame();
        ImGui_ImplGlfw_NewFrame();
        if (screenshot) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);  // no stray pointer in the picture
        if (hover_forced) {
            for (const ui::HeatmapLayout& h : state.layout)
                if (h.name == debug_hover.matrix)
                    ImGui::GetIO().MousePos = ImVec2(h.x + (static_cast<float>(debug_hover.col - h.first_col) + 0.5f) * h.cell_w,
                                                     h.y + (static_cast<float>(debug_hover.row - h.first_row) + 0.5f) * h.cell_h);
        }
        const auto frame_start = std::chrono::steady_clock::now();
        ImGui::NewFrame();
        draw_frame(state, textures);
        ImGui::Render();
        if (timing) {  // hidden: the CPU cost of building one frame (panels, layout, draw lists)
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame_start).count();
            std::fprintf(stderr, "attnlab: frame %d built in %.2f ms (trace %.2f ms)\n", frame, ms, state.session.last_run_ms);
        }

        int fb_width = 0, fb_height = 0;
        glfwGetFramebufferSize(glfw.window, &fb_width, &fb_height);
        glViewport(0, 0, fb_width, fb_height);
        glClearColor(0.11f, 0.11f, 0.13f, 1.0f);
        glClear(GL_COLOR_BUFFER_BIT);
        ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

        if (screenshot) {
            for (GLenum error = glGetError(); error != GL_NO_ERROR; error = glGetError()) {
                std::fprintf(stderr, "attnlab: %s in frame %d\n", gl_error_name(error).c_str(), frame);
                exit_code = 3;
            }
            if (exit_code != 0) break;
            if (frame + 1 >= screenshot_frames) {
                if (!write_screenshot(options.screenshot, fb_width, fb_height)) {
                    std::fprintf(stderr, "attnlab: cannot write %s\n", options.screenshot.c_str());
                    exit_code = 1;
                } else {
                    int win_width = 1, win_height = 1;
                    glfwGetWindowSize(glfw.window, &win_width, &win_height);
                    const float pixel_scale = static_cast<float>(fb_width) / static_cast<float>(std::max(1, win_width));
                    if (!write_layout(options.screenshot + ".layout.json", state.layout_next, pixel_scale, fb_width, fb_height))
                        exit_code = 1;
                    for (const std::string& error : state.session.errors)
                        std::fprintf(stderr, "attnlab: the scenario cannot run: %s\n", error.c_str());
                }
                break;
            }
        }
        glfwSwapBuffers(glfw.window);

        const ImGuiIO& io = ImGui::GetIO();
        const bool active = io.MouseDelta.x != 0.0f || io.MouseDelta.y != 0.0f || io.MouseWheel != 0.0f ||
                            ImGui::IsAnyMouseDown() || io.WantTextInput || ImGui::IsAnyItemActive() ||
                            !state.session.pending.empty() || state.session.dirty;
        quiet_frames = active ? 0 : quiet_frames + 1;
        state.hover = std::move(state.hover_next);
        state.hover_next = ui::HoverState{};
        state.layout.swap(state.layout_next);
        state.layout_next.clear();
    }
    textures.clear();  // GL objects go while the context is current
    return exit_code;
}

}  // namespace attn::gui
