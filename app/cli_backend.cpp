#include "cli_backend.hpp"

#include <memory>
#include <ostream>

#include "compute.hpp"
#include "gpu/backend.hpp"
#include "gpu/context.hpp"
#include "test_hooks.hpp"
#include "gl.hpp"

namespace attn::cli {

namespace {

// A headless context and, once asked for, the backend on it, with why either is missing.
struct Gpu {
    std::unique_ptr<gpu::HeadlessContext> context;
    std::unique_ptr<gpu::Backend> backend;
    std::string why;
    bool tried_context = false, tried_backend = false;

    bool open_context() {
        if (!tried_context) {
            tried_context = true;
            context = gpu::HeadlessContext::create(&why);
        }
        return context != nullptr;
    }
    gpu::Backend* open_backend() {
        if (!tried_backend && open_context()) {
            tried_backend = true;
            backend = gpu::Backend::create(&why, test_hooks().backend);
        }
        return backend.get();
    }
    ~Gpu() { backend.reset(); }  // its GL objects go while the context is current
};

std::string current_renderer(bool& software) {
    const auto text = [](GLenum name) {
        const GLubyte* s = glGetString(name);
        return s ? std::string(reinterpret_cast<const char*>(s)) : std::string();
    };
    const std::string renderer = text(GL_RENDERER);
    software = renderer.find("llvmpipe") != std::string::npos || renderer.find("softpipe") != std::string::npos;
    return renderer + " | " + text(GL_VERSION);
}

}  // namespace

TraceRunner backend_runner(const std::string& backend, std::ostream& err) {
    compute::Choice choice = compute::Choice::Auto;
    compute::parse_choice(backend, choice);
    return [choice, &err](const Scenario& s) -> Trace {
        Gpu gpu;
        speed::Speeds speeds;
        compute::Plan p = compute::plan(s, choice, choice != compute::Choice::Cpu, speeds);
        if (choice == compute::Choice::Auto && p.detail == Detail::OutputOnly) {
            // Auto above the full-detail limit: measure (or recall) both speeds, then choose.
            bool software = true;
            if (gpu.open_context()) {
                const std::string renderer = current_renderer(software);
                if (!software) {
                    speeds.gpu_hardware = true;
                    speeds.cpu_gflops = speed::cpu_gflops();
                    if (auto remembered = speed::remembered_gpu_gflops(renderer)) speeds.gpu_gflops = *remembered;
                    else if (gpu::Backend* b = gpu.open_backend()) speed::remember_gpu_gflops(renderer, speeds.gpu_gflops = b->device().probe_gflops);
                }
            }
            p = compute::plan(s, choice, gpu.context != nullptr, speeds);
        }
        if (p.gpu) {
            if (gpu::Backend* b = gpu.open_backend()) {
                Trace t = b->run(s, compute::output_only_options(s, compute::Region{}));
                if (t.ok || !validate(s, Detail::OutputOnly).empty()) return t;  // done, or the scenario's own fault
                gpu.why = t.errors.empty() ? "unknown reason" : t.errors.front();
                err << "attnlab: GPU run failed (" << gpu.why << "): computing on the CPU engine instead\n";
            } else {
                err << "attnlab: GPU backend unavailable (" << gpu.why << "): computing on the CPU engine instead\n";
            }
            p = compute::plan(s, compute::Choice::Cpu, false, speeds);
        }
        if (p.detail == Detail::Full) return run(s);
        return run(s, compute::output_only_options(s, compute::Region{}));
    };
}

}  // namespace attn::cli
