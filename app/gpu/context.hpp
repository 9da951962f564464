#pragma once
// OpenGL contexts for compute and off-screen drawing, and the one list of context hints.
//
// A headless context needs no window system. In order of preference:
//   1. EGL's device platform (EGL_EXT_platform_device): NVIDIA's driver on a server without
//      X, and Mesa's software device;
//   2. Mesa's surfaceless platform (EGL_MESA_platform_surfaceless): llvmpipe;
//   3. a hidden GLFW window, when a display exists and EGL offers nothing.
// libepoxy loads EGL as it loads GL. Every context — these and the app's window — asks
// for reset notification (GL_LOSE_CONTEXT_ON_RESET), so a GPU reset is reported to the
// backend instead of leaving it reading garbage; a context without it is made only where a
// driver refuses the request, and reset_notification() then says so.
#include <memory>
#include <string>

struct GLFWwindow;

namespace attn::gpu {

enum class Platform { Auto, Egl, Glfw };
// ATTNLAB_GL_PLATFORM=egl|glfw|auto (the tests run the GPU suite through each).
Platform platform_from_environment();

class HeadlessContext {
public:
    // Makes the context and leaves it current on this thread. Null, with the reason, when
    // no platform gives an OpenGL 4.3 core context.
    static std::unique_ptr<HeadlessContext> create(std::string* why_not, Platform platform = platform_from_environment());
    ~HeadlessContext();  // makes nothing current if it was current
    HeadlessContext(const HeadlessContext&) = delete;
    HeadlessContext& operator=(const HeadlessContext&) = delete;

    void make_current();
    // "EGL device platform", "EGL surfaceless platform" or "GLFW hidden window".
    const std::string& description() const;

    struct Impl;  // the platform's handles (context.cpp)

private:
    explicit HeadlessContext(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// True when the current context reports GPU resets (its reset notification strategy is
// GL_LOSE_CONTEXT_ON_RESET).
bool current_context_reports_resets();

// The GLFW window hints of every context the app makes with GLFW: core profile major.minor,
// forward compatible, and reset notification when `robust` (the app tries robust first).
void glfw_context_hints(int major, int minor, bool robust);

}  // namespace attn::gpu
