// GPU path throughput next to the CPU engine's output-only mode, on the same inputs, in one run.
//
//   gpu_bench [--json FILE] [--max-seconds S] [--causal] [--from N] [--to N] [--heads H] [--d-k D]
//             [--defines "#define ROWS 1"]   (shader variant overrides, for tuning)
//
// For n = 1024, 2048, … 65536 (direct Q, K, V of N(0, 1), 8 heads of d_k = 64 by default):
//   GPU  attention pass wall time (dispatch to glFinish) → GFLOP/s, GL_TIME_ELAPSED beside it in the
//        JSON (llvmpipe under-reports it); the heatmap pass (max-pooled
//        weights at 512×512) and the wall time of the whole run beside it; the bytes of GPU
//        buffers the run allocated (O(n·d) + the heatmap, never O(n²)).
//   CPU  attn::run(s, RunOptions{Detail::OutputOnly}) with the heatmap off, wall time → GFLOP/s.
// FLOPs of attention: 4·n²·d_k per head (QKᵀ and weights·V), half for a causal mask.
// A backend stops at the first size where one run took longer than --max-seconds (default
// 60), or would take more than three times that by the n² rule; the table says so.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine.hpp"
#include "gpu/backend.hpp"
#include "random.hpp"
#include "ui/gl.hpp"
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

attn::Scenario direct_scenario(int n, int heads, int d_k, bool causal) {
    attn::Scenario s;
    s.input = attn::InputMode::Direct;
    s.heads = heads;
    s.q = attn::normal_matrix(n, heads * d_k, 1);
    s.k = attn::normal_matrix(n, heads * d_k, 2);
    s.v = attn::normal_matrix(n, heads * d_k, 3);
    s.mask = causal ? attn::MaskKind::Causal : attn::MaskKind::None;
    return s;
}

double attention_flops(int n, int heads, int d_k, bool causal) {
    return 4.0 * n * static_cast<double>(n) * d_k * heads * (causal ? 0.5 : 1.0);
}

struct HiddenContext {
    GLFWwindow* window = nullptr;
    HiddenContext() {
        if (!glfwInit()) return;
        glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
        glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
        glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
        glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
        glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
        window = glfwCreateWindow(64, 64, "attnlab gpu_bench", nullptr, nullptr);
        if (window) glfwMakeContextCurrent(window);
    }
    ~HiddenContext() {
        if (window) glfwDestroyWindow(window);
        glfwTerminate();
    }
};

}  // namespace

int main(int argc, char** argv) {
    std::string json_path;
    double max_seconds = 60.0;
    bool causal = false;
    int from = 1024, to = 65536, heads = 8, d_k = 64;
    attn::gpu::BackendOptions backend_options;  // --defines: shader variants to try, e.g. "#define ROWS 1"
    for (int i = 1; i < argc; ++i) {
        auto value = [&] { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "%s needs a value\n", argv[i]), std::exit(2), ""); };
        if (!std::strcmp(argv[i], "--json")) json_path = value();
        else if (!std::strcmp(argv[i], "--max-seconds")) max_seconds = std::atof(value());
        else if (!std::strcmp(argv[i], "--causal")) causal = true;
        else if (!std::strcmp(argv[i], "--from")) from = std::atoi(value());
        else if (!std::strcmp(argv[i], "--to")) to = std::atoi(value());
        else if (!std::strcmp(argv[i], "--heads")) heads = std::atoi(value());
        else if (!std::strcmp(argv[i], "--d-k")) d_k = std::atoi(value());
        else if (!std::strcmp(argv[i], "--defines")) backend_options.extra_defines = std::string(value()) + "\n";
        else {
            std::fprintf(stderr,
                         "usage: gpu_bench [--json FILE] [--max-seconds S] [--causal] [--from N] [--to N] [--heads H] "
                         "[--d-k D] [--defines \"#define ROWS 1\"]\n");
            return 2;
        }
    }

    HiddenContext context;
    if (!context.window) {
        std::fprintf(stderr, "gpu_bench: no OpenGL 4.3 context (run under xvfb-run without a display)\n");
        return 1;
    }
    std::string why;
    auto backend = attn::gpu::Backend::create(&why, backend_options);
    if (!backend) {
        std::fprintf(stderr, "gpu_bench: GPU backend unavailable: %s\n", why.c_str());
        return 1;
    }
    const std::string renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    std::printf("GPU: %s\nattention, %d heads, d_k = %d, mask: %s; GFLOP/s = %s·n²·d_k·heads / time\n\n", renderer.c_str(),
                heads, d_k, causal ? "causal" : "none", causal ? "2" : "4");
    std::printf("| n | GPU attention ms | GPU GFLOP/s | GPU heatmap ms | GPU wall ms | GPU bytes | bytes / (n·h·d_k) "
                "| CPU ms | CPU GFLOP/s | GPU ÷ CPU |\n|---|---|---|---|---|---|---|---|---|---|\n");

    nlohmann::json rows = nlohmann::json::array();
    bool gpu_on = true, cpu_on = true;
    double gpu_last = 0.0, cpu_last = 0.0;
    std::string gpu_stop, cpu_stop;
    for (int n = from; n <= to && (gpu_on || cpu_on); n *= 2) {
        const attn::Scenario s = direct_scenario(n, heads, d_k, causal);
        const double flops = attention_flops(n, heads, d_k, causal);
        nlohmann::json row = {{"n", n}, {"heads", heads}, {"d_k", d_k}, {"causal", causal}, {"flops", flops}};
        char gpu_cells[256] = "| – | – | – | – | – | – ", cpu_cells[128] = "| – | – ";
        double gpu_gflops = 0.0, cpu_gflops = 0.0;

        if (gpu_on && gpu_last * 4.0 > 3.0 * max_seconds) {
            gpu_on = false;
            gpu_stop = "GPU stopped before n = " + std::to_string(n) + ": about " + std::to_string(int(gpu_last * 4.0)) +
                       " s predicted";
        }
        if (gpu_on) {
            const auto start = Clock::now();
            const attn::Trace t = backend->run(s, attn::RunOptions{attn::Detail::OutputOnly});
            gpu_last = seconds_since(start);
            if (!t.ok) {
                std::fprintf(stderr, "gpu_bench: n = %d: %s\n", n, t.errors.empty() ? "?" : t.errors.front().c_str());
                gpu_on = false;
            } else {
                // Wall time per pass (dispatch to glFinish): llvmpipe's GL_TIME_ELAPSED under-reports.
                const attn::gpu::Timings& timing = backend->wall_timings();
                const attn::gpu::Timings& timer = backend->timings();
                gpu_gflops = flops / (timing.attention_ms * 1e-3) * 1e-9;
                const double bytes = static_cast<double>(backend->allocated_bytes());
                std::snprintf(gpu_cells, sizeof gpu_cells, "| %.1f | %.2f | %.1f | %.0f | %.0f | %.1f ", timing.attention_ms,
                              gpu_gflops, timing.pooling_ms, gpu_last * 1e3, bytes, bytes / (double(n) * heads * d_k));
                row["gpu"] = {{"attention_ms", timing.attention_ms},
                              {"heatmap_ms", timing.pooling_ms},
                              {"attention_ms_gl_timer", timer.attention_ms},
                              {"heatmap_ms_gl_timer", timer.pooling_ms},
                              {"wall_ms", gpu_last * 1e3},
                              {"gflops", gpu_gflops},
                              {"allocated_bytes", bytes}};
                if (gpu_last > max_seconds) {
                    gpu_on = false;
                    gpu_stop = "GPU stopped after n = " + std::to_string(n) + ": one run took " +
                               std::to_string(int(gpu_last)) + " s";
                }
            }
        }
        if (cpu_on && cpu_last * 4.0 > 3.0 * max_seconds) {
            cpu_on = false;
            cpu_stop = "CPU stopped before n = " + std::to_string(n) + ": about " + std::to_string(int(cpu_last * 4.0)) +
                       " s predicted";
        }
        if (cpu_on) {
            attn::RunOptions options{attn::Detail::OutputOnly};
            options.pool_weights = false;
            const auto start = Clock::now();
            const attn::Trace t = attn::run(s, options);
            cpu_last = seconds_since(start);
            if (!t.ok) {
                std::fprintf(stderr, "gpu_bench: CPU n = %d: %s\n", n, t.errors.empty() ? "?" : t.errors.front().c_str());
                cpu_on = false;
            } else {
                cpu_gflops = flops / cpu_last * 1e-9;
                std::snprintf(cpu_cells, sizeof cpu_cells, "| %.1f | %.2f ", cpu_last * 1e3, cpu_gflops);
                row["cpu"] = {{"wall_ms", cpu_last * 1e3}, {"gflops", cpu_gflops}};
                if (cpu_last > max_seconds) {
                    cpu_on = false;
                    cpu_stop = "CPU stopped after n = " + std::to_string(n) + ": one run took " +
                               std::to_string(int(cpu_last)) + " s";
                }
            }
        }
        if (!row.contains("gpu") && !row.contains("cpu")) break;
        const std::string ratio =
            gpu_gflops > 0 && cpu_gflops > 0 ? std::to_string(gpu_gflops / cpu_gflops).substr(0, 5) : "–";
        std::printf("| %d %s%s| %s |\n", n, gpu_cells, cpu_cells, ratio.c_str());
        std::fflush(stdout);
        rows.push_back(row);
    }
    if (!gpu_stop.empty()) std::printf("\n%s (limit %.0f s per run).\n", gpu_stop.c_str(), max_seconds);
    if (!cpu_stop.empty()) std::printf("%s (limit %.0f s per run).\n", cpu_stop.c_str(), max_seconds);
    std::printf("\nGPU attention ms: the output pass, first dispatch to glFinish (the GL_TIME_ELAPSED figures are in the\n"
                "JSON; llvmpipe under-reports them); heatmap ms: the 512×512 max-pooled weights pass, timed the same way;\n"
                "GPU wall ms: the whole blocking run (upload, passes, read-back). CPU: output-only engine, heatmap off.\n");

    if (!json_path.empty()) {
        nlohmann::json report = {{"renderer", renderer}, {"rows", rows},          {"gpu_stop", gpu_stop},
                                 {"cpu_stop", cpu_stop}, {"max_seconds", max_seconds}};
        std::ofstream(json_path) << report.dump(2) << "\n";
        std::printf("wrote %s\n", json_path.c_str());
    }
    return 0;
}
