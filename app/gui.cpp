// The desktop app: window and GL context (or an off-screen one), the ImGui frame loop, screenshots.
// Setup, loop, teardown; the panels live in ui/.
//
// Index
// [SECTION] Window and context
// [SECTION] Screenshot
// [SECTION] Frame
// [SECTION] Compute and benchmark
// [SECTION] Setup
// [SECTION] The loop's stages
// [SECTION] run()
#include "gl.hpp"  // the GL loader first, before GLFW or ImGui's backend touch GL

#include <GLFW/glfw3.h>

#include <cfloat>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <nlohmann/json.hpp>
#include <stb_image_write.h>

#include "autosave.hpp"
#include "compute.hpp"
#include "gpu/backend.hpp"
#include "gpu/context.hpp"
#include "gpu/driver.hpp"
#include "gui.hpp"
#include "key_queue.hpp"
#include "key_replay.hpp"
#include "teaching/presets.hpp"
#include "attention/serialize.hpp"
#include "test_hooks.hpp"
#include "ui/window.hpp"
#include "ui/classroom.hpp"
#include "ui/fonts.hpp"
#include "ui/heatmap.hpp"
#include "ui/panel_model.hpp"
#include "ui/panels.hpp"

namespace attn::gui {

namespace {

// [SECTION] Window and context

// What GLFW reports of the keys and the characters typed, in one queue, handed to ImGui a
// frame at a time (key_queue.hpp, key_replay.hpp).
KeyQueue& key_queue() {
    static KeyQueue queue;
    return queue;
}

void queue_key(GLFWwindow*, int key, int scancode, int action, int mods) { key_queue().push({key, scancode, action, mods}); }
void queue_char(GLFWwindow*, unsigned int codepoint) { key_queue().push_char(codepoint); }

const char* glfw_error() {
    const char* description = nullptr;
    glfwGetError(&description);
    return description ? description : "unknown error";
}

// A window with a core-profile context: 4.3 first (what compute shaders need), then 3.3;
// each with reset notification first (a GPU reset is then reported, not a crash), then without.
GLFWwindow* open_window(int width, int height, const std::string& title, bool screenshot) {
    const int versions[][3] = {{4, 3, 1}, {4, 3, 0}, {3, 3, 1}, {3, 3, 0}};
    for (const auto& v : versions) {
        glfwDefaultWindowHints();
        gpu::glfw_context_hints(v[0], v[1], v[2] != 0);
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

// Off-screen drawing for --screenshot and --bench-frames where no window can be opened (a
// GPU server without X): a headless EGL context (gpu/context.hpp) and a framebuffer object
// of the --size with one RGBA8 colour renderbuffer, bound for drawing and reading, which
// ImGui's OpenGL3 renderer draws into as into a window's back buffer. No platform backend:
// each frame sets the display size and the time step itself (new_frame).
struct Offscreen {
    std::unique_ptr<gpu::HeadlessContext> context;
    GLuint framebuffer = 0, colour = 0;
    int width = 0, height = 0;
    std::chrono::steady_clock::time_point last_frame = std::chrono::steady_clock::now();

    // The context current and the framebuffer bound; false with the reason otherwise.
    bool open(int w, int h, std::string& why) {
        context = gpu::HeadlessContext::create(&why, gpu::Platform::Egl);
        if (!context) return false;
        GLint max_size = 0;
        glGetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &max_size);
        if (w > max_size || h > max_size) {
            why = "a " + std::to_string(w) + "x" + std::to_string(h) + " framebuffer exceeds the driver's " + std::to_string(max_size) +
                  " pixels";
            return false;
        }
        width = w;
        height = h;
        glGenRenderbuffers(1, &colour);
        glBindRenderbuffer(GL_RENDERBUFFER, colour);
        glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
        glGenFramebuffers(1, &framebuffer);
        glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
        glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, colour);
        if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
            why = "the framebuffer object is incomplete";
            return false;
        }
        return true;
    }
    // What ImGui_ImplGlfw_NewFrame sets from a window: the size (pixels, scale 1) and the
    // time since the last frame (ImGui needs it > 0).
    void new_frame() {
        ImGuiIO& io = ImGui::GetIO();
        io.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
        io.DisplayFramebufferScale = ImVec2(1.0f, 1.0f);
        const auto now = std::chrono::steady_clock::now();
        io.DeltaTime = std::max(1e-4f, std::chrono::duration<float>(now - last_frame).count());
        last_frame = now;
    }
    ~Offscreen() {  // while the context is current, before it goes (members go after this body)
        if (framebuffer != 0) glDeleteFramebuffers(1, &framebuffer);
        if (colour != 0) glDeleteRenderbuffers(1, &colour);
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

// Reads the back buffer (before the swap), or the off-screen framebuffer's colour where one
// is bound, and writes it as PNG, top row first.
bool write_screenshot(const std::string& path, int width, int height) {
    std::vector<unsigned char> pixels(static_cast<size_t>(width) * static_cast<size_t>(height) * 4);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    GLint framebuffer = 0;
    glGetIntegerv(GL_READ_FRAMEBUFFER_BINDING, &framebuffer);
    glReadBuffer(framebuffer != 0 ? GL_COLOR_ATTACHMENT0 : GL_BACK);
    glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    std::vector<unsigned char> flipped(pixels.size());
    const size_t stride = static_cast<size_t>(width) * 4;
    for (int y = 0; y < height; ++y)  // GL's row 0 is the bottom
        std::copy_n(pixels.data() + static_cast<size_t>(height - 1 - y) * stride, stride, flipped.data() + static_cast<size_t>(y) * stride);
    for (size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;  // opaque, whatever the framebuffer's alpha
    return stbi_write_png(path.c_str(), width, height, 4, flipped.data(), static_cast<int>(stride)) != 0;
}

// Export → Window as PNG: the frame just rendered, once the path popup has gone.
void write_requested_png(ui::PanelContext state, ui::FilesState& c, int width, int height) {
    if (c.png_request.empty() || c.png_delay-- > 0) return;
    const std::string path = std::move(c.png_request);
    c.png_request.clear();
    if (write_screenshot(path, width, height)) ui::add_notice(state, "Window written to " + path, false);
    else ui::add_notice(state, "Cannot write " + path, true);
}

// PATH.layout.json: where each heatmap's cells are in the PNG (pixels), for tests.
bool write_layout(const std::string& path, const std::vector<ui::HeatmapLayout>& layout,
                  const std::vector<ui::WidgetLayout>& widgets, float pixel_scale, int width, int height) {
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
                            {"textured", h.textured},
                            {"numbers", h.numbers},
                            {"row_label_step", h.row_label_step},
                            {"col_label_step", h.col_label_step},
                            {"non_finite_badge", h.badge_x < 0 ? nlohmann::json(nullptr)
                                                               : nlohmann::json{h.badge_x * pixel_scale, h.badge_y * pixel_scale}}});
    }
    nlohmann::json recorded = nlohmann::json::array();
    for (const ui::WidgetLayout& w : widgets)
        recorded.push_back({{"id", w.id},
                            {"text", w.text},
                            {"x", w.x * pixel_scale},
                            {"y", w.y * pixel_scale},
                            {"w", w.w * pixel_scale},
                            {"h", w.h * pixel_scale}});
    const nlohmann::json doc = {{"width", width}, {"height", height}, {"heatmaps", heatmaps}, {"widgets", recorded}};
    std::string error;
    if (!write_file_atomic(path, doc.dump(1), &error)) {
        std::fprintf(stderr, "attnlab: cannot write %s: %s\n", path.c_str(), error.c_str());
        return false;
    }
    return true;
}

// [SECTION] Frame

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

// [SECTION] Compute and benchmark

// The compute layer for this window: the engine from --backend, the GPU backend made on
// first need from the window's context, with the test hooks' shader variants and faults.
std::unique_ptr<compute::Compute> make_compute(const cli::Options& options, ui::Context& state) {
    if (!compute::parse_choice(options.backend, state.compute.settings.choice)) state.compute.settings.choice = compute::Choice::Cpu;
    const char* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    const std::string renderer_name = renderer ? renderer : "";
    const bool software = renderer_name.find("llvmpipe") != std::string::npos;
    compute::BackendFactory factory = [](std::string* why_not) { return gpu::Backend::create(why_not, test_hooks().backend); };
    const char* version = reinterpret_cast<const char*>(glGetString(GL_VERSION));
    auto layer = std::make_unique<compute::Compute>(std::move(factory), renderer_name + " | " + (version ? version : ""), software);
    if (state.compute.settings.choice == compute::Choice::Auto) layer->measure_speeds();
    state.compute.status = layer->status();
    return layer;
}

// --bench-frames: one edit per frame (one cell of X, or of Q in direct mode), so every
// frame recomputes, or, while a long output-only run is under way, the next edit when it
// has landed; frame times from swap to swap, and each recompute's time from its edit to the
// screen.
struct FrameBench {
    std::vector<double> frame_ms, recompute_ms;
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();

    static double percentile(std::vector<double> values, double p) {
        if (values.empty()) return 0.0;
        std::sort(values.begin(), values.end());
        const size_t i = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
        return values[std::min(i, values.size() - 1)];
    }
    void print(const Trace& trace) const {
        std::printf("frames %zu  n = %d, d_model = %d, heads = %d, backend %s\n", frame_ms.size(), trace.n_queries, trace.d_model,
                    trace.heads, trace.backend.c_str());
        std::printf("frame time median %.2f ms  p95 %.2f ms\n", percentile(frame_ms, 0.5), percentile(frame_ms, 0.95));
        std::printf("recompute median %.2f ms  max %.2f ms  (%zu recomputes, edit to screen)\n", percentile(recompute_ms, 0.5),
                    percentile(recompute_ms, 1.0), recompute_ms.size());
        std::fflush(stdout);
    }
};

void push_bench_edit(ui::Context& state, int frame) {
    const bool direct = state.session.scenario.input == InputMode::Direct;
    const float value = 0.5f + 0.25f * static_cast<float>(frame % 7);
    state.session.push(edits::SetCell{direct ? edits::MatrixId::Q : edits::MatrixId::X, 0, 0, value});
}

// [SECTION] Setup

// Where frames are drawn: the window, or, where none opens, the off-screen framebuffer.
// Members go in reverse: the framebuffer while the context is current, then the window.
struct Surface {
    GlfwSession glfw;
    Offscreen offscreen;

    GLFWwindow* window() const { return glfw.window; }
    // Pixels: the framebuffer's size (a window's may differ from its size in points).
    void framebuffer_size(int& width, int& height) const {
        width = offscreen.width;
        height = offscreen.height;
        if (glfw.window != nullptr) glfwGetFramebufferSize(glfw.window, &width, &height);
    }
    void new_platform_frame() {
        if (glfw.window != nullptr) ImGui_ImplGlfw_NewFrame();
        else offscreen.new_frame();
    }
    void present() {
        if (glfw.window != nullptr) glfwSwapBuffers(glfw.window);
        else glFinish();  // off-screen, no swap: a frame's time includes its drawing to the end
    }
};

// The window's GL context current (an off-screen one where no window opens and none is
// needed: a picture or a benchmark); false, with the reason printed, when neither can be had.
bool open_surface(const cli::Options& options, const std::string& title, Surface& surface) {
    const bool screenshot = !options.screenshot.empty(), bench = options.bench_frames > 0;
    GlfwSession& glfw = surface.glfw;
    std::string no_window;
    if (!glfwInit()) {
        no_window = std::string("cannot open a window: ") + glfw_error();
    } else {
        glfw.initialised = true;
        glfw.window = open_window(options.width, options.height, title, screenshot);
        if (glfw.window == nullptr) no_window = std::string("cannot create an OpenGL 3.3 window: ") + glfw_error();
    }
    if (glfw.window != nullptr) {
        glfwMakeContextCurrent(glfw.window);
        glfwSwapInterval(screenshot || bench ? 0 : 1);
    } else if (!screenshot && !bench) {
        std::fprintf(stderr, "attnlab: %s\n  (no display? run headless commands such as --print; --screenshot and "
                             "--bench-frames render off-screen without one)\n",
                     no_window.c_str());
        return false;
    } else {
        if (glfw.initialised) {
            glfwTerminate();
            glfw.initialised = false;
        }
        std::string why;
        if (!surface.offscreen.open(options.width, options.height, why)) {
            std::fprintf(stderr, "attnlab: %s, and cannot render off-screen: %s\n", no_window.c_str(), why.c_str());
            return false;
        }
        std::fprintf(stderr, "attnlab: %s: rendering off-screen (%dx%d) through the %s\n", no_window.c_str(), surface.offscreen.width,
                     surface.offscreen.height, surface.offscreen.context->description().c_str());
    }
    gpu::keep_gl_driver_loaded();
    if (epoxy_gl_version() < 33) {
        std::fprintf(stderr, "attnlab: OpenGL 3.3 is needed, the context offers %d.%d\n", epoxy_gl_version() / 10,
                     epoxy_gl_version() % 10);
        return false;
    }
    return true;
}

// ImGui's context, style and backends (no platform backend off-screen).
bool start_imgui(GLFWwindow* window, float scale, ImGuiSession& imgui) {
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    imgui.context = true;
    ImGui::GetIO().IniFilename = nullptr;  // the layout is computed, nothing to remember
    apply_style(scale);
    if (window != nullptr) imgui.platform = ImGui_ImplGlfw_InitForOpenGL(window, true);
    if (window != nullptr) {  // in place of the backend's: ImGui gets them a frame at a time
        glfwSetKeyCallback(window, queue_key);
        glfwSetCharCallback(window, queue_char);
    }
    imgui.renderer = ImGui_ImplOpenGL3_Init("#version 330 core");
    if ((window != nullptr && !imgui.platform) || !imgui.renderer) {
        std::fprintf(stderr, "attnlab: cannot start the ImGui GLFW/OpenGL3 backends\n");
        return false;
    }
    return true;
}

// [SECTION] The loop's stages

// Edits from the last frame, then the recompute they need: synchronous for small n, stepped
// (GPU) or on the worker thread (CPU) for output-only runs. A screenshot waits for the result.
void recompute(compute::Compute& compute_layer, ui::Context& state, bool screenshot, FrameBench* bench) {
    const bool replaced = compute_layer.update(state.session, state.compute.settings);
    if (screenshot) compute_layer.finish(state.session, state.compute.settings);
    // The recompute's wall time, from the edit to the trace on screen (a long run's frames in
    // between included).
    if (bench != nullptr && replaced) bench->recompute_ms.push_back(state.session.last_run_ms);
    state.compute.status = compute_layer.status();
}

// The pointer of a screenshot: nowhere, or on the cell ATTNLAB_DEBUG_HOVER names (its
// tooltip then shows in the picture).
void place_screenshot_pointer(const ui::Context& state, const TestHooks& hooks) {
    ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    if (hooks.hover_matrix.empty()) return;
    for (const ui::HeatmapLayout& h : state.layout)
        if (h.name == hooks.hover_matrix)
            ImGui::GetIO().MousePos = ImVec2(h.x + (static_cast<float>(hooks.hover_col - h.first_col) + 0.5f) * h.cell_w,
                                             h.y + (static_cast<float>(hooks.hover_row - h.first_row) + 0.5f) * h.cell_h);
}

// The frame's draw lists into the framebuffer (and Export → PNG's file, when one waits).
void render(ui::Context& state, ui::FilesState& files, const Surface& surface, int& fb_width, int& fb_height) {
    surface.framebuffer_size(fb_width, fb_height);
    glViewport(0, 0, fb_width, fb_height);
    glClearColor(0.11f, 0.11f, 0.13f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    write_requested_png(state, files, fb_width, fb_height);
}

// --screenshot's last frame: the PNG, its layout sidecar and the trace's line on stderr.
// Returns the exit code.
int write_screenshot_files(const cli::Options& options, const Surface& surface, const ui::Context& state, int fb_width,
                           int fb_height) {
    if (!write_screenshot(options.screenshot, fb_width, fb_height)) {
        std::fprintf(stderr, "attnlab: cannot write %s\n", options.screenshot.c_str());
        return 1;
    }
    int win_width = fb_width, win_height = fb_height;
    if (surface.window() != nullptr) glfwGetWindowSize(surface.window(), &win_width, &win_height);
    const float pixel_scale = static_cast<float>(fb_width) / static_cast<float>(std::max(1, win_width));
    int exit_code = 0;
    if (!write_layout(options.screenshot + ".layout.json", state.layout_next, state.widgets_next, pixel_scale, fb_width, fb_height))
        exit_code = 1;
    for (const std::string& error : state.session.errors) std::fprintf(stderr, "attnlab: the scenario cannot run: %s\n", error.c_str());
    const Trace& shown = state.session.trace;
    std::fprintf(stderr, "attnlab: trace of %d tokens, %s detail, backend %s, %.1f ms\n", shown.n_queries,
                 shown.detail == Detail::Full ? "full" : "output-only", shown.backend.c_str(), shown.milliseconds);
    return exit_code;
}

// Whether anything moves: an idle window sleeps until an event instead of redrawing.
bool window_active(const ui::Context& state, bool views_busy, const ui::HeatmapTextures& textures) {
    const ImGuiIO& io = ImGui::GetIO();
    return io.MouseDelta.x != 0.0f || io.MouseDelta.y != 0.0f || io.MouseWheel != 0.0f || ImGui::IsAnyMouseDown() ||
           io.WantTextInput || ImGui::IsAnyItemActive() || !state.session.pending.empty() || state.session.dirty ||
           state.compute.status.busy ||
           views_busy ||           // a view's jobs land when they end; a run's curves and heads move
           textures.deferred();    // maps still to be drawn
}

}  // namespace

// [SECTION] run()

int run(const cli::Options& options, Scenario scenario, const session_file::SessionLoad& session) {
    const bool screenshot = !options.screenshot.empty();
    const bool bench = options.bench_frames > 0;
    Surface surface;  // declared before ImGui: it outlives the renderer
    const std::string title = "Attention Lab \xE2\x80\x94 " + (scenario.name.empty() ? std::string("scenario") : scenario.name);
    if (!open_surface(options, title, surface)) return 1;
    float scale_x = 1.0f, scale_y = 1.0f;  // off-screen: 1, the --size in pixels
    if (surface.window() != nullptr) glfwGetWindowContentScale(surface.window(), &scale_x, &scale_y);
    const float scale = std::max(1.0f, scale_x);

    ImVector<ImWchar> glyph_ranges;  // declared first: outlives the font atlas, which the context owns
    ImGuiSession imgui;
    if (!start_imgui(surface.window(), scale, imgui)) return 1;
    // Declared after the ImGui session: textures go before the context does.
    ui::Window ui_window;
    ui::Context& state = ui_window.shared;
    {
        // The fonts, the scenario, what the command line and a session ask for, the autosave
        // (not for a screenshot, which only looks) and the offer (or, with --restore, the act)
        // of restoring what a run that died left behind.
        const ui::UiFonts fonts = ui::load_fonts(scale, glyph_ranges);
        ui_window.set_fonts(fonts, ui::load_presenter_fonts(fonts, scale, glyph_ranges));
        state.screenshot_mode = screenshot;
        state.session.scenario = std::move(scenario);
        ui_window.start(options, session);  // a session's view and models; --lesson, --step, --presenter, --model
        ui_window.start_autosave(options.no_autosave ? std::string() : autosave::state_directory(), std::chrono::milliseconds(2000),
                                 !screenshot);
        ui::RecoveryState& recovery = ui_window.recovery.state;
        if (options.restore && ui_window.restore_orphan(0)) {
            recovery.prompt = false;
            std::fprintf(stderr, "attnlab: %s\n", state.notices.back().text.c_str());
        } else if (recovery.prompt) {
            std::fprintf(stderr, "attnlab: a run that did not close normally left an autosave (%s): asking whether to restore it\n",
                         recovery.orphans.front().path.c_str());
        }
    }
    ui::HeatmapTextures textures;
    // The compute layer; declared after the textures, so its GPU backend goes first, while
    // the context is current.
    std::unique_ptr<compute::Compute> compute_layer = make_compute(options, state);
    const TestHooks hooks = test_hooks();
    if (hooks.generate_length > 0) {
        // Open on a generated sequence of this length, as the sequence-length control makes.
        state.session.scenario = compute::generated_scenario(hooks.generate_length, state.compute.settings.generate_seed);
        state.compute.settings.generate_length = hooks.generate_length;
        if (hooks.zoom[1] > 0 && hooks.zoom[3] > 0) {  // typed from 1, both ends in, as the backend panel's fields
            state.compute.settings.region = compute::Region{hooks.zoom[0] - 1, hooks.zoom[1], hooks.zoom[2] - 1, hooks.zoom[3]};
            state.compute.region_draft = state.compute.settings.region;
            state.compute.draft_queries = state.compute.draft_keys = hooks.generate_length;  // the draft is for this sequence
        }
    }
    if (screenshot && hooks.all_heads) state.view.all_heads = true;
    FrameBench frame_bench;
    const int screenshot_frames = screenshot && !hooks.hover_matrix.empty() ? 10 : 6;  // layout and fonts settle in 2–3 frames
    int exit_code = 0;
    int quiet_frames = 0;  // frames since the last input
    std::string shown_title = title;
    for (int frame = 0;; ++frame) {
        // The close button or File → Quit: unsaved work is asked about first (Save / Discard / Cancel).
        GLFWwindow* window = surface.window();
        if ((window != nullptr && glfwWindowShouldClose(window)) || ui_window.files.state.quit_requested) {
            if (window != nullptr) glfwSetWindowShouldClose(window, GLFW_FALSE);
            if (screenshot || bench || ui_window.request_quit()) break;
        }
        if (window != nullptr) {  // off-screen: no events
            if (!screenshot && !bench && quiet_frames > 3 && key_queue().empty()) glfwWaitEventsTimeout(0.5);
            else glfwPollEvents();
            replay_keys(key_queue().take_frame(), ImGui::GetIO());
        }
        // A model being opened (--model) lands first, then a long run: the edits are the layer's.
        const bool opening = ui_window.model.state.opening.running();
        if (bench && !opening && !compute_layer->busy()) push_bench_edit(state, frame);
        recompute(*compute_layer, state, screenshot, bench ? &frame_bench : nullptr);
        // A screenshot shows the model as edited: the model view's recompute lands before the
        // frame, as the compute layer's does for a screenshot.
        if (screenshot) ui_window.finish_work();
        ui_window.autosave_tick();

        ImGui_ImplOpenGL3_NewFrame();
        surface.new_platform_frame();
        if (screenshot) place_screenshot_pointer(state, hooks);
        const auto frame_start = std::chrono::steady_clock::now();
        ImGui::NewFrame();
        ui_window.draw_frame(textures);
        ImGui::Render();
        if (window != nullptr) {  // the title follows what is on screen: a file opened, a preset, an edit
            const std::string title = ui_window.title();
            if (title != shown_title) glfwSetWindowTitle(window, (shown_title = title).c_str());
        }
        if (hooks.timing) {  // hidden: the CPU cost of building one frame (panels, layout, draw lists)
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame_start).count();
            std::fprintf(stderr, "attnlab: frame %d built in %.2f ms (trace %.2f ms)%s\n", frame, ms, state.session.last_run_ms,
                         opening ? " while a model opens" : "");
        }
        int fb_width = 0, fb_height = 0;
        render(state, ui_window.files.state, surface, fb_width, fb_height);

        if (screenshot) {
            for (GLenum error = glGetError(); error != GL_NO_ERROR; error = glGetError()) {
                std::fprintf(stderr, "attnlab: %s in frame %d\n", gl_error_name(error).c_str(), frame);
                exit_code = 6;  // an OpenGL error: a code of its own (docs/command-line.md)
            }
            if (exit_code != 0) break;
            if (frame + 1 >= screenshot_frames) {
                exit_code = write_screenshot_files(options, surface, state, fb_width, fb_height);
                break;
            }
        }
        surface.present();
        if (bench && opening) frame_bench.last = std::chrono::steady_clock::now();  // the edits' frames are counted
        if (bench && !opening) {
            frame_bench.frame_ms.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame_bench.last).count());
            frame_bench.last = std::chrono::steady_clock::now();
            if (static_cast<int>(frame_bench.frame_ms.size()) >= options.bench_frames) {
                frame_bench.print(state.session.trace);
                break;
            }
        }
        quiet_frames = window_active(state, ui_window.busy(), textures) ? 0 : quiet_frames + 1;
        ui_window.end_frame();
    }
    ui_window.finish_autosave();  // closed normally: nothing to restore next time (a screenshot wrote none)
    textures.clear();  // GL objects go while the context is current
    return exit_code;
}

}  // namespace attn::gui
