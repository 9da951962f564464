#include "gpu/context.hpp"

#include <epoxy/egl.h>

#include "gl.hpp"
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu/driver.hpp"

namespace attn::gpu {

Platform platform_from_environment() {
    const char* value = std::getenv("ATTNLAB_GL_PLATFORM");
    if (value == nullptr) return Platform::Auto;
    if (std::strcmp(value, "egl") == 0) return Platform::Egl;
    if (std::strcmp(value, "glfw") == 0) return Platform::Glfw;
    return Platform::Auto;
}

bool current_context_reports_resets() {
    if (epoxy_gl_version() < 45 && !epoxy_has_gl_extension("GL_KHR_robustness") && !epoxy_has_gl_extension("GL_ARB_robustness"))
        return false;
    GLint strategy = 0;
    glGetIntegerv(GL_RESET_NOTIFICATION_STRATEGY, &strategy);
    return strategy == GL_LOSE_CONTEXT_ON_RESET;
}

void glfw_context_hints(int major, int minor, bool robust) {
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, major);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, minor);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_CONTEXT_ROBUSTNESS, robust ? GLFW_LOSE_CONTEXT_ON_RESET : GLFW_NO_ROBUSTNESS);
}

namespace {

// GLFW is initialised once per process by whoever comes first; a headless context that
// initialised it terminates it when the last such context goes and nobody else (the app's
// window) had initialised it before.
int glfw_contexts = 0;
bool glfw_ours = false;

bool glfw_already_initialised() {
    glfwGetError(nullptr);
    glfwGetCurrentContext();
    return glfwGetError(nullptr) != GLFW_NOT_INITIALIZED;
}

}  // namespace

struct HeadlessContext::Impl {
    std::string description;
    // EGL. The display stays initialised for the process's life: eglTerminate would end
    // every other context on the same device too (EGL counts no references).
    EGLDisplay display = EGL_NO_DISPLAY;
    EGLContext context = EGL_NO_CONTEXT;
    // GLFW
    GLFWwindow* window = nullptr;
    bool counted = false;

    ~Impl() {
        if (context != EGL_NO_CONTEXT) {
            if (eglGetCurrentContext() == context) eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
            eglDestroyContext(display, context);
        }
        if (window != nullptr) {
            if (glfwGetCurrentContext() == window) glfwMakeContextCurrent(nullptr);
            glfwDestroyWindow(window);
        }
        if (counted && --glfw_contexts == 0 && glfw_ours) {
            glfwTerminate();
            glfw_ours = false;
        }
    }
};

namespace {

// A 4.3 core context on an initialised EGL display, current and surfaceless; reset
// notification asked for first (EGL 1.5 core, or EGL_EXT_create_context_robustness), then
// without it only if the driver refuses.
EGLContext egl_context(EGLDisplay display, std::string& why) {
    if (!epoxy_has_egl_extension(display, "EGL_KHR_surfaceless_context")) {
        why = "the EGL display offers no surfaceless contexts";
        return EGL_NO_CONTEXT;
    }
    if (!eglBindAPI(EGL_OPENGL_API)) {
        why = "the EGL display offers no desktop OpenGL";
        return EGL_NO_CONTEXT;
    }
    EGLint major = 0, minor = 0;
    eglInitialize(display, &major, &minor);  // already initialised: returns the version again
    const bool egl15 = major > 1 || (major == 1 && minor >= 5);
    const bool ext_robustness = epoxy_has_egl_extension(display, "EGL_EXT_create_context_robustness");
    std::vector<std::vector<EGLint>> attempts;
    const std::vector<EGLint> base = {EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 3,
                                      EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT};
    if (egl15) {
        std::vector<EGLint> a = base;
        a.insert(a.end(), {EGL_CONTEXT_OPENGL_RESET_NOTIFICATION_STRATEGY, EGL_LOSE_CONTEXT_ON_RESET});
        attempts.push_back(a);
    }
    if (ext_robustness) {
        std::vector<EGLint> a = base;
        a.insert(a.end(), {EGL_CONTEXT_OPENGL_RESET_NOTIFICATION_STRATEGY_EXT, EGL_LOSE_CONTEXT_ON_RESET_EXT});
        attempts.push_back(a);
    }
    attempts.push_back(base);  // the driver refused reset notification: the backend is told
    EGLConfig config = EGL_NO_CONFIG_KHR;
    if (!epoxy_has_egl_extension(display, "EGL_KHR_no_config_context") &&
        !epoxy_has_egl_extension(display, "EGL_MESA_configless_context")) {
        const EGLint config_attributes[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_NONE};
        EGLint count = 0;
        if (!eglChooseConfig(display, config_attributes, &config, 1, &count) || count == 0) {
            why = "the EGL display has no OpenGL configuration";
            return EGL_NO_CONTEXT;
        }
    }
    for (std::vector<EGLint>& attributes : attempts) {
        attributes.push_back(EGL_NONE);
        EGLContext context = eglCreateContext(display, config, EGL_NO_CONTEXT, attributes.data());
        if (context == EGL_NO_CONTEXT) continue;
        if (eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context)) return context;
        eglDestroyContext(display, context);
    }
    why = "the EGL display gives no OpenGL 4.3 core context";
    return EGL_NO_CONTEXT;
}

bool try_egl_display(HeadlessContext::Impl& impl, EGLDisplay display, const char* description, std::string& why) {
    if (display == EGL_NO_DISPLAY) return false;
    EGLint major = 0, minor = 0;
    if (!eglInitialize(display, &major, &minor)) {
        why = std::string(description) + ": eglInitialize failed";
        return false;
    }
    EGLContext context = egl_context(display, why);
    if (context == EGL_NO_CONTEXT) {
        why = std::string(description) + ": " + why;
        return false;
    }
    impl.display = display;
    impl.context = context;
    impl.description = description;
    return true;
}

bool try_egl(HeadlessContext::Impl& impl, std::string& why) {
    const char* client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    if (client == nullptr) {
        why = "no EGL library";
        return false;
    }
    // 1. A device: the first that gives a context (a GPU before Mesa's software device).
    if (epoxy_has_egl_extension(EGL_NO_DISPLAY, "EGL_EXT_device_enumeration") &&
        epoxy_has_egl_extension(EGL_NO_DISPLAY, "EGL_EXT_platform_device")) {
        EGLDeviceEXT devices[16];
        EGLint count = 0;
        if (eglQueryDevicesEXT(16, devices, &count)) {
            // Hardware devices first: Mesa marks its software device with EGL_MESA_device_software.
            std::vector<EGLDeviceEXT> ordered;
            for (int pass = 0; pass < 2; ++pass)
                for (EGLint d = 0; d < count; ++d) {
                    const char* extensions = eglQueryDeviceStringEXT(devices[d], EGL_EXTENSIONS);
                    const bool software = extensions != nullptr && std::strstr(extensions, "EGL_MESA_device_software") != nullptr;
                    if (software == (pass == 1)) ordered.push_back(devices[d]);
                }
            for (EGLDeviceEXT device : ordered)
                if (try_egl_display(impl, eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, device, nullptr),
                                    "EGL device platform", why))
                    return true;
        }
    }
    // 2. Mesa's surfaceless platform.
    if (epoxy_has_egl_extension(EGL_NO_DISPLAY, "EGL_MESA_platform_surfaceless") &&
        try_egl_display(impl, eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr),
                        "EGL surfaceless platform", why))
        return true;
    if (why.empty()) why = "EGL offers neither a device nor a surfaceless platform";
    return false;
}

std::string glfw_error() {
    const char* description = nullptr;
    glfwGetError(&description);
    return description ? description : "unknown GLFW error";
}

bool try_glfw(HeadlessContext::Impl& impl, std::string& why) {
    const bool already = glfw_already_initialised();
    if (!already && !glfwInit()) {
        why = "no window system (GLFW: " + glfw_error() + ")";
        return false;
    }
    if (!already) glfw_ours = true;
    impl.counted = true;
    ++glfw_contexts;
    for (bool robust : {true, false}) {
        glfwDefaultWindowHints();
        glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
        glfw_context_hints(4, 3, robust);
        impl.window = glfwCreateWindow(64, 64, "attnlab compute", nullptr, nullptr);
        if (impl.window != nullptr) break;
    }
    if (impl.window == nullptr) {
        why = "no OpenGL 4.3 core context (GLFW: " + glfw_error() + ")";
        return false;
    }
    glfwMakeContextCurrent(impl.window);
    impl.description = "GLFW hidden window";
    return true;
}

}  // namespace

HeadlessContext::HeadlessContext(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HeadlessContext::~HeadlessContext() = default;

std::unique_ptr<HeadlessContext> HeadlessContext::create(std::string* why_not, Platform platform) {
    auto impl = std::make_unique<Impl>();
    std::string egl_why, glfw_why;
    bool made = false;
    if (platform != Platform::Glfw) made = try_egl(*impl, egl_why);
    if (!made && platform != Platform::Egl) made = try_glfw(*impl, glfw_why);
    if (!made) {
        if (why_not) {
            *why_not = platform == Platform::Glfw ? glfw_why
                       : platform == Platform::Egl ? "no OpenGL 4.3 context through EGL (" + egl_why + ")"
                                                   : "no OpenGL 4.3 context: EGL: " + egl_why + "; " + glfw_why;
        }
        return nullptr;
    }
    keep_gl_driver_loaded();
    return std::unique_ptr<HeadlessContext>(new HeadlessContext(std::move(impl)));
}

void HeadlessContext::make_current() {
    if (impl_->context != EGL_NO_CONTEXT) eglMakeCurrent(impl_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, impl_->context);
    else if (impl_->window != nullptr) glfwMakeContextCurrent(impl_->window);
}

const std::string& HeadlessContext::description() const { return impl_->description; }

}  // namespace attn::gpu
