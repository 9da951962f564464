// run_headless: the GPU backend without a window to show, for the command line, the tests
// and the benchmark.
#include "gpu/backend.hpp"
#include "gpu/driver.hpp"

#include "ui/gl.hpp"
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

namespace attn::gpu {

namespace {

Trace failed(const std::string& why) {
    Trace t;
    t.detail = Detail::OutputOnly;
    t.backend = "gpu";
    t.errors.push_back("GPU backend: " + why);
    return t;
}

std::string glfw_error() {
    const char* description = nullptr;
    glfwGetError(&description);
    return description ? description : "unknown GLFW error";
}

}  // namespace

Trace run_headless(const Scenario& scenario, const RunOptions& options) {
    if (!glfwInit()) return failed("no window system (GLFW: " + glfw_error() + "); run under xvfb-run without a display");
    GLFWwindow* previous = glfwGetCurrentContext();  // the app's own window, if any, stays as it was
    glfwDefaultWindowHints();
    glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    GLFWwindow* window = glfwCreateWindow(64, 64, "attnlab compute", nullptr, nullptr);
    if (!window) {
        const std::string why = "no OpenGL 4.3 core context (GLFW: " + glfw_error() + ")";
        if (!previous) glfwTerminate();
        return failed(why);
    }
    glfwMakeContextCurrent(window);
    keep_gl_driver_loaded();
    Trace trace;
    {
        std::string why;
        auto backend = Backend::create(&why);
        trace = backend ? backend->run(scenario, options) : failed(why);
    }  // the backend's GL objects go while their context is current
    glfwMakeContextCurrent(previous);
    glfwDestroyWindow(window);
    if (!previous) glfwTerminate();
    return trace;
}

}  // namespace attn::gpu
