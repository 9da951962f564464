// The GPU path's throughput and accuracy, headless (EGL without a display), beside the CPU
// engine's output-only mode on the same inputs, in one run.
//
//   gpu_bench [--quick] [--json FILE] [--max-seconds S] [--mask none|causal|both] [--from N]
//             [--to N] [--heads H] [--d-k D] [--kernel auto|rows|tiled] [--bound MS]
//             [--peak-tflops T] [--cpu-to N] [--defines "#define ROWS 1"]
//
// --quick: n = 256 and 512 only, 10 s per run at most (a smoke run: a software renderer
// or CI); the options after it still apply.
// No display is needed: the context is EGL's device or surfaceless platform (context.hpp).
//
// For n = 1024, 2048, … 65536 (direct Q, K, V of N(0, 1), 8 heads of d_k = 64 by default),
// unmasked and causal:
//   GPU  the attention pass's wall time (each bounded submission timed from dispatch to its
//        fence) → TFLOP/s and the % of the card's FP32 peak (a table of known cards, or
//        --peak-tflops); the heatmap pass (the weights max-pooled to 512 × 512) and the whole
//        run's wall time beside it; how many submissions, and the longest.
//   max |GPU − CPU|: the GPU's outputs against the CPU engine's, on 256 query rows spread
//        over the sequence (first and last included) — the CPU computes exactly those rows.
//   CPU  attn::run(s, output-only, no heatmap) → TFLOP/s, up to --cpu-to tokens.
// FLOPs of attention: 4·n²·d_k per head (QKᵀ and weights·V), half under a causal mask.
// A backend stops at the first size where one run took longer than --max-seconds (default
// 60), or would take more than three times that by the n² rule; the table says so.
// The figures of a software renderer (Mesa llvmpipe) say that the path is correct, not fast.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "attention/engine.hpp"
#include "gpu/backend.hpp"
#include "gpu/context.hpp"
#include "tensor/random.hpp"

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

// FP32 (non-tensor) peaks of known cards, TFLOP/s, by a piece of GL_RENDERER.
double known_peak_tflops(const std::string& renderer) {
    const std::pair<const char*, double> cards[] = {
        {"H100 80GB HBM3", 66.9}, {"H100 SXM", 66.9}, {"H100 NVL", 60.0}, {"H100 PCIe", 51.2}, {"H200", 66.9},
        {"GH200", 66.9},          {"A100", 19.5},     {"L40S", 91.6},     {"L40", 90.5},      {"L4", 30.3},
        {"A10G", 31.2},           {"A10", 31.2},      {"T4", 8.1},        {"V100", 15.7},     {"RTX 4090", 82.6},
        {"RTX 4080", 48.7},       {"RTX 3090", 35.6}, {"RTX 3080", 29.8}, {"MI300X", 163.4},  {"MI250X", 47.9}};
    for (const auto& [name, peak] : cards)
        if (renderer.find(name) != std::string::npos) return peak;
    return 0.0;
}

// The CPU engine's outputs for `rows` of s: those query rows alone, with the mask each has
// in s (a custom mask carries a causal one over).
attn::Matrix cpu_rows(const attn::Scenario& s, const std::vector<int>& rows) {
    attn::Scenario part = s;
    part.q.resize(static_cast<Eigen::Index>(rows.size()), s.q.cols());
    for (size_t r = 0; r < rows.size(); ++r) part.q.row(static_cast<Eigen::Index>(r)) = s.q.row(rows[r]);
    if (s.mask == attn::MaskKind::Causal) {
        part.mask = attn::MaskKind::Custom;
        part.custom_mask = attn::MaskMatrix::Constant(static_cast<Eigen::Index>(rows.size()), s.k.rows(), false);
        for (size_t r = 0; r < rows.size(); ++r) part.custom_mask.row(static_cast<Eigen::Index>(r)).head(rows[r] + 1).setConstant(true);
    }
    attn::RunOptions o{attn::Detail::OutputOnly};
    o.pool_weights = false;
    return attn::run(part, o).concat;
}

}  // namespace

int main(int argc, char** argv) {
    std::string json_path, mask = "both";
    double max_seconds = 60.0, peak_tflops = 0.0;
    int from = 1024, to = 65536, heads = 8, d_k = 64, cpu_to = 16384;
    attn::gpu::BackendOptions backend_options;
    for (int i = 1; i < argc; ++i) {
        auto value = [&] { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "%s needs a value\n", argv[i]), std::exit(2), ""); };
        if (!std::strcmp(argv[i], "--quick")) {
            from = 256;
            to = 512;
            max_seconds = 10.0;
        } else if (!std::strcmp(argv[i], "--json")) json_path = value();
        else if (!std::strcmp(argv[i], "--max-seconds")) max_seconds = std::atof(value());
        else if (!std::strcmp(argv[i], "--mask")) {
            mask = value();
            if (mask != "none" && mask != "causal" && mask != "both") {
                std::fprintf(stderr, "gpu_bench: --mask %s: expected none, causal or both\n", mask.c_str());
                return 2;
            }
        }
        else if (!std::strcmp(argv[i], "--from")) from = std::atoi(value());
        else if (!std::strcmp(argv[i], "--to")) to = std::atoi(value());
        else if (!std::strcmp(argv[i], "--heads")) heads = std::atoi(value());
        else if (!std::strcmp(argv[i], "--d-k")) d_k = std::atoi(value());
        else if (!std::strcmp(argv[i], "--peak-tflops")) peak_tflops = std::atof(value());
        else if (!std::strcmp(argv[i], "--cpu-to")) cpu_to = std::atoi(value());
        else if (!std::strcmp(argv[i], "--bound")) backend_options.submission_bound_ms = std::atof(value());
        else if (!std::strcmp(argv[i], "--defines")) backend_options.extra_defines = std::string(value()) + "\n";
        else if (!std::strcmp(argv[i], "--kernel")) {
            const std::string k = value();
            if (k != "auto" && k != "rows" && k != "tiled") {
                std::fprintf(stderr, "gpu_bench: --kernel %s: expected auto, rows or tiled\n", k.c_str());
                return 2;
            }
            backend_options.kernel = k == "rows" ? attn::gpu::Kernel::Rows : k == "tiled" ? attn::gpu::Kernel::Tiled : attn::gpu::Kernel::Auto;
        } else {
            std::fprintf(stderr,
                         "usage: gpu_bench [--quick] [--json FILE] [--max-seconds S] [--mask none|causal|both] [--from N] [--to N] "
                         "[--heads H] [--d-k D] [--kernel auto|rows|tiled] [--bound MS] [--peak-tflops T] [--cpu-to N] "
                         "[--defines \"#define ROWS 1\"]\n");
            return 2;
        }
    }

    std::string why;
    auto context = attn::gpu::HeadlessContext::create(&why);
    if (!context) {
        std::fprintf(stderr, "gpu_bench: %s\n", why.c_str());
        return 1;
    }
    auto backend = attn::gpu::Backend::create(&why, backend_options);
    if (!backend) {
        std::fprintf(stderr, "gpu_bench: GPU backend unavailable: %s\n", why.c_str());
        return 1;
    }
    const attn::gpu::DeviceInfo& device = backend->device();
    if (peak_tflops <= 0.0) peak_tflops = known_peak_tflops(device.renderer);
    std::printf("GPU: %s (%s), context: %s, reset notification: %s\n", device.renderer.c_str(), device.version.c_str(),
                context->description().c_str(), device.reset_notification ? "on" : "off");
    std::printf("kernel: %s; submissions bounded at %.0f ms; FP32 peak: %s\n", attn::gpu::kernel_label(device).c_str(),
                backend_options.submission_bound_ms,
                peak_tflops > 0 ? (std::to_string(peak_tflops).substr(0, 5) + " TFLOP/s").c_str() : "unknown (--peak-tflops)");
    std::printf("variants tried at start-up (n = %d probe):", device.probe_tokens);
    for (const std::string& line : device.variants_tried) std::printf(" [%s]", line.c_str());
    std::printf("\n");
    if (device.software)
        std::printf("A software renderer: the CPU runs the shaders. These figures show the path is correct, not how fast a GPU is.\n");
    std::printf("%d heads, d_k = %d; TFLOP/s = 4·n²·d_k·heads (half of it under a causal mask) / GPU attention time\n\n", heads, d_k);

    nlohmann::json rows = nlohmann::json::array();
    for (bool causal : {false, true}) {
        if ((causal && mask == "none") || (!causal && mask == "causal")) continue;
        std::printf("mask: %s\n\n| n | GPU attention ms | TFLOP/s | %% of peak | heatmap ms | wall ms | submissions | longest ms "
                    "| max |GPU − CPU| | CPU TFLOP/s | GPU ÷ CPU |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
                    causal ? "causal" : "none");
        bool gpu_on = true, cpu_on = true;
        double gpu_last = 0.0, cpu_last = 0.0;
        std::string stop;
        for (int n = from; n <= to && gpu_on; n *= 2) {
            if (gpu_last * 4.0 > 3.0 * max_seconds) {
                stop = "GPU stopped before n = " + std::to_string(n) + ": about " + std::to_string(int(gpu_last * 4.0)) + " s predicted";
                break;
            }
            const attn::Scenario s = direct_scenario(n, heads, d_k, causal);
            const double flops = attention_flops(n, heads, d_k, causal);
            nlohmann::json row = {{"n", n}, {"heads", heads}, {"d_k", d_k}, {"causal", causal}, {"flops", flops}};
            const auto start = Clock::now();
            const attn::Trace t = backend->run(s, attn::RunOptions{attn::Detail::OutputOnly});
            gpu_last = seconds_since(start);
            if (!t.ok) {
                std::printf("| %d | failed: %s |\n", n, t.errors.empty() ? "?" : t.errors.front().c_str());
                row["error"] = t.errors.empty() ? "?" : t.errors.front();
                rows.push_back(row);
                break;
            }
            const attn::gpu::Timings& timing = backend->timings();
            const double tflops = flops / (timing.attention_ms * 1e-3) * 1e-12;
            double longest = 0.0;
            for (const attn::gpu::Submission& sub : backend->submissions()) longest = std::max(longest, sub.measured_ms);
            // Accuracy: 256 rows spread over the sequence, the first and the last among them.
            std::vector<int> sample;
            for (int r = 0; r < 256; ++r) sample.push_back(static_cast<int>(static_cast<long long>(r) * (n - 1) / 255));
            sample.erase(std::unique(sample.begin(), sample.end()), sample.end());
            const attn::Matrix reference = cpu_rows(s, sample);
            double worst = 0.0;
            for (size_t r = 0; r < sample.size(); ++r)
                worst = std::max<double>(worst, (t.concat.row(sample[r]) - reference.row(static_cast<Eigen::Index>(r))).cwiseAbs().maxCoeff());
            char cpu_cells[96] = "| – | – ";
            double cpu_tflops = 0.0;
            if (cpu_on && n <= cpu_to && cpu_last * 4.0 <= 3.0 * max_seconds) {
                attn::RunOptions options{attn::Detail::OutputOnly};
                options.pool_weights = false;
                const auto cpu_start = Clock::now();
                attn::run(s, options);
                cpu_last = seconds_since(cpu_start);
                cpu_tflops = flops / cpu_last * 1e-12;
                std::snprintf(cpu_cells, sizeof cpu_cells, "| %.3f | %.2g× ", cpu_tflops, tflops / cpu_tflops);
                row["cpu"] = {{"wall_ms", cpu_last * 1e3}, {"tflops", cpu_tflops}};
                if (cpu_last > max_seconds) cpu_on = false;
            }
            std::printf("| %d | %.1f | %.3f | %s | %.1f | %.0f | %zu | %.1f | %.1e %s|\n", n, timing.attention_ms, tflops,
                        peak_tflops > 0 ? (std::to_string(100.0 * tflops / peak_tflops).substr(0, 4) + "%").c_str() : "–",
                        timing.pooling_ms, gpu_last * 1e3, backend->submissions().size(), longest, worst, cpu_cells);
            std::fflush(stdout);
            row["gpu"] = {{"attention_ms", timing.attention_ms}, {"heatmap_ms", timing.pooling_ms}, {"wall_ms", gpu_last * 1e3},
                          {"tflops", tflops},    {"percent_of_peak", peak_tflops > 0 ? 100.0 * tflops / peak_tflops : 0.0},
                          {"submissions", backend->submissions().size()}, {"longest_submission_ms", longest},
                          {"max_abs_difference", worst}, {"allocated_bytes", backend->allocated_bytes()}};
            rows.push_back(row);
            if (gpu_last > max_seconds) {
                gpu_on = false;
                stop = "GPU stopped after n = " + std::to_string(n) + ": one run took " + std::to_string(int(gpu_last)) + " s";
            }
        }
        if (!stop.empty()) std::printf("\n%s (limit %.0f s per run).\n", stop.c_str(), max_seconds);
        std::printf("\n");
    }
    std::printf("GPU attention ms: the output pass, summed over its submissions (dispatch to fence); heatmap ms: the\n"
                "512×512 max-pooled weights pass; wall ms: the whole blocking run (CPU preparation, upload, passes, read-back).\n");
    if (!json_path.empty()) {
        nlohmann::json report = {{"renderer", device.renderer}, {"version", device.version}, {"kernel", attn::gpu::to_string(device.kernel)},
                                 {"subgroups", device.subgroups}, {"shuffle", device.shuffle}, {"variants_tried", device.variants_tried},
                                 {"software", device.software}, {"peak_tflops", peak_tflops},
                                 {"submission_bound_ms", backend_options.submission_bound_ms}, {"rows", rows}};
        std::ofstream(json_path) << report.dump(2) << "\n";
        std::printf("wrote %s\n", json_path.c_str());
    }
    return 0;
}
