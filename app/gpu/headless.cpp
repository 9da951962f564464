// run_headless: the GPU backend on a context of its own, for the command line, the tests
// and the benchmark. The context that was current before (a test's, a window's) is current
// again afterwards.
#include <epoxy/egl.h>

#include "gpu/backend.hpp"
#include "gpu/context.hpp"

#include "gl.hpp"
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

// Whatever context is current on this thread, EGL's or GLFW's, to make current again.
struct CurrentContext {
    EGLDisplay display = eglGetCurrentDisplay();
    EGLContext context = eglGetCurrentContext();
    EGLSurface draw = eglGetCurrentSurface(EGL_DRAW), read = eglGetCurrentSurface(EGL_READ);
    GLFWwindow* window = nullptr;
    CurrentContext() {
        glfwGetError(nullptr);
        window = glfwGetCurrentContext();  // null (and an error, cleared below) before glfwInit
        glfwGetError(nullptr);
    }
    void restore() const {
        if (context != EGL_NO_CONTEXT) eglMakeCurrent(display, draw, read, context);
        else if (window != nullptr) glfwMakeContextCurrent(window);
    }
};

}  // namespace

Trace run_headless(const Scenario& scenario, const RunOptions& options, const BackendOptions& backend_options) {
    const CurrentContext previous;
    std::string why;
    Trace trace;
    {
        std::unique_ptr<HeadlessContext> context = HeadlessContext::create(&why);
        if (!context) {
            previous.restore();
            return failed(why);
        }
        auto backend = Backend::create(&why, backend_options);
        trace = backend ? backend->run(scenario, options) : failed(why);
        backend.reset();  // its GL objects go while their context is current
    }
    previous.restore();
    return trace;
}

}  // namespace attn::gpu
