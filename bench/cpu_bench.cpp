// CPU engine throughput, measured as ratios within one run (the machine is shared and noisy):
// Eigen's own matrix product and a naive triple loop are measured beside the engine, on the
// same machine, in the same process, so their ratios mean something even when the absolute
// numbers drift.
//
//   cpu_bench [--json FILE] [--quick]      throughput table (Markdown on stdout)
//   cpu_bench --memory N                   output-only run at n = N; prints peak resident memory
//   cpu_bench --zoom N                     output-only run at n = N, then zooms drawn from its row
//                                          statistics (repool_weights), each as a fraction of the run
//
// Every figure is the median of several runs. FLOPs of attention: 4·n²·d per head
// (QKᵀ and weights·V, 2·n²·d each), half for a causal mask.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <omp.h>

#include "measure.hpp"
#include "attention/engine.hpp"
#include "attention/incremental.hpp"
#include "tensor/random.hpp"

namespace {

using attn::Matrix;
using Clock = std::chrono::steady_clock;

double median_seconds(const std::function<void()>& body, int runs, double min_total = 0.3) {
    body();  // warm-up: page faults, thread pool start
    std::vector<double> times;
    const auto begin = Clock::now();
    for (int r = 0; r < runs || std::chrono::duration<double>(Clock::now() - begin).count() < min_total; ++r) {
        const auto t0 = Clock::now();
        body();
        times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        if (r >= 50) break;
    }
    std::nth_element(times.begin(), times.begin() + static_cast<long>(times.size() / 2), times.end());
    return times[times.size() / 2];
}

attn::Scenario direct_scenario(int n, int heads, int d_k, attn::MaskKind mask) {
    attn::Scenario s;
    s.input = attn::InputMode::Direct;
    s.heads = heads;
    s.q = attn::normal_matrix(n, heads * d_k, 1);
    s.k = attn::normal_matrix(n, heads * d_k, 2);
    s.v = attn::normal_matrix(n, heads * d_k, 3);
    s.mask = mask;
    return s;
}

double attention_flops(int n, int heads, int d_k, bool causal) {
    return 4.0 * n * static_cast<double>(n) * d_k * heads * (causal ? 0.5 : 1.0);
}

// The textbook loops: scores, softmax, weighted sum, one head at a time, no blocking.
void naive_attention(const Matrix& q, const Matrix& k, const Matrix& v, int heads, Matrix& out) {
    const int n = static_cast<int>(q.rows()), d = static_cast<int>(q.cols()) / heads;
    std::vector<float> scores(static_cast<size_t>(n));
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (int h = 0; h < heads; ++h)
        for (int i = 0; i < n; ++i) {
            float max = -INFINITY;
            for (int j = 0; j < n; ++j) {
                float dot = 0;
                for (int c = 0; c < d; ++c) dot += q(i, h * d + c) * k(j, h * d + c);
                scores[static_cast<size_t>(j)] = dot * scale;
                max = std::max(max, dot * scale);
            }
            float sum = 0;
            for (int j = 0; j < n; ++j) sum += (scores[static_cast<size_t>(j)] = std::exp(scores[static_cast<size_t>(j)] - max));
            for (int c = 0; c < d; ++c) {
                float acc = 0;
                for (int j = 0; j < n; ++j) acc += scores[static_cast<size_t>(j)] * v(j, h * d + c);
                out(i, h * d + c) = acc / sum;
            }
        }
}

using attn::bench::peak_rss_kib;

int memory_mode(int n) {
    const int heads = 8, d_k = 64;
    const long before = peak_rss_kib();
    attn::Scenario s = direct_scenario(n, heads, d_k, attn::MaskKind::Causal);
    attn::RunOptions options;
    options.detail = attn::Detail::OutputOnly;
    const auto t0 = Clock::now();
    const attn::Trace t = attn::run(s, options);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const double input_mib = 3.0 * n * heads * d_k * sizeof(float) / (1024.0 * 1024.0);
    const double full_gib = 5.0 * heads * static_cast<double>(n) * n * sizeof(float) / (1024.0 * 1024 * 1024);
    std::printf("output-only attention, n = %d, %d heads, d_k = %d, causal: %s in %.1f s (%.1f GFLOP/s)\n", n, heads,
                d_k, t.ok ? "ok" : "FAILED", seconds, attention_flops(n, heads, d_k, true) / seconds * 1e-9);
    std::printf("peak resident memory: %.1f MiB (%.1f MiB before the run; Q, K, V alone are %.1f MiB; a full trace "
                "would need %.1f GiB)\n",
                peak_rss_kib() / 1024.0, before / 1024.0, input_mib, full_gib);
    return t.ok ? 0 : 1;
}

// What a zoom costs against the run it zooms into: the whole output-only run (causal, as
// the app's long sequences), then regions of 16², 512² and the whole sequence drawn again.
int zoom_mode(int n) {
    const int heads = 8, d_k = 64;
    const attn::Scenario s = direct_scenario(n, heads, d_k, attn::MaskKind::Causal);
    attn::RunOptions options;
    options.detail = attn::Detail::OutputOnly;
    auto t0 = Clock::now();
    const attn::Trace t = attn::run(s, options);
    const double run_s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("output-only run, n = %d, %d heads, d_k = %d, causal: %.2f s\n", n, heads, d_k, run_s);
    for (const int side : {16, 512, n}) {
        attn::RunOptions region = options;
        region.region_row_begin = n / 2;
        region.region_row_end = std::min(n, n / 2 + side);
        region.region_col_begin = side == n ? 0 : n / 4;
        region.region_col_end = std::min(n, region.region_col_begin + side);
        if (side == n) region.region_row_begin = 0;
        std::string error;
        t0 = Clock::now();
        const auto pooled = attn::repool_weights(s, t, region, &error);
        const double zoom_s = std::chrono::duration<double>(Clock::now() - t0).count();
        std::printf("zoom %d x %d from the row statistics: %.4f s (%.5f of the run)%s\n", region.region_row_end - region.region_row_begin,
                    region.region_col_end - region.region_col_begin, zoom_s, zoom_s / run_s, pooled ? "" : " FAILED");
        if (!pooled) return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string json_path;
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!std::strcmp(argv[i], "--quick")) quick = true;
        else if (!std::strcmp(argv[i], "--memory") && i + 1 < argc) return memory_mode(std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--zoom") && i + 1 < argc) return zoom_mode(std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: cpu_bench [--json FILE] [--quick] | --memory N | --zoom N\n");
            return 2;
        }
    }
    const int heads = 8, d_k = 64, runs = quick ? 3 : 7;
    nlohmann::json report;
    report["heads"] = heads;
    report["d_k"] = d_k;

    // Eigen's matrix product: the machine's practical peak for this build.
    const int g = 1024;
    const Matrix a = attn::normal_matrix(g, g, 4), b = attn::normal_matrix(g, g, 5);
    Matrix c(g, g);
    // The engine builds Eigen with EIGEN_DONT_PARALLELIZE (it threads heads and query
    // blocks itself), so the all-core GEMM splits B's columns across the OpenMP team.
    const int threads = omp_get_max_threads();
    const auto all_core_gemm = [&] {
#pragma omp parallel
        {
            const int t = omp_get_thread_num(), team = omp_get_num_threads();
            const int c0 = g * t / team, c1 = g * (t + 1) / team;
            c.middleCols(c0, c1 - c0).noalias() = a * b.middleCols(c0, c1 - c0);
        }
    };
    const double flops = 2.0 * g * g * static_cast<double>(g);
    const double gemm = flops / median_seconds(all_core_gemm, runs) * 1e-9;
    const double gemm_one = flops / median_seconds([&] { c.noalias() = a * b; }, runs) * 1e-9;
    report["eigen_gemm_gflops"] = gemm;
    report["eigen_gemm_one_thread_gflops"] = gemm_one;
    report["threads"] = threads;
    std::printf("Eigen GEMM %dx%dx%d: %.1f GFLOP/s on %d threads, %.1f on one\n\n", g, g, g, gemm, threads, gemm_one);

    // The naive triple loop, at n = 512 (it is slow), as GFLOP/s.
    {
        const int n = 512;
        attn::Scenario s = direct_scenario(n, heads, d_k, attn::MaskKind::None);
        Matrix out(n, heads * d_k);
        const double t = median_seconds([&] { naive_attention(s.q, s.k, s.v, heads, out); }, quick ? 1 : 3, 0.0);
        report["naive_gflops"] = attention_flops(n, heads, d_k, false) / t * 1e-9;
    }
    const double naive = report["naive_gflops"];
    std::printf("naive triple loop (n = 512): %.2f GFLOP/s\n\n", naive);

    std::printf("| n | mode | ms | GFLOP/s | × Eigen GEMM | × naive |\n|---|---|---|---|---|---|\n");
    nlohmann::json rows = nlohmann::json::array();
    const std::vector<int> sizes = quick ? std::vector<int>{256, 1024} : std::vector<int>{256, 512, 1024, 2048, 4096};
    for (int n : sizes) {
        for (auto detail : {attn::Detail::Full, attn::Detail::OutputOnly}) {
            for (auto mask : {attn::MaskKind::None, attn::MaskKind::Causal}) {
                if (detail == attn::Detail::Full && n > 2048) continue;
                if (mask == attn::MaskKind::Causal && detail == attn::Detail::Full) continue;
                attn::Scenario s = direct_scenario(n, heads, d_k, mask);
                attn::RunOptions options;
                options.detail = detail;
                options.pool_weights = false;
                attn::Trace trace;  // reused, as the app recomputes into its spare trace
                const double t = median_seconds([&] { attn::run_into(s, options, trace); }, runs);
                const bool causal = mask == attn::MaskKind::Causal;
                const double gflops = attention_flops(n, heads, d_k, causal) / t * 1e-9;
                const std::string mode = std::string(detail == attn::Detail::Full ? "full trace" : "output-only") +
                                         (causal ? ", causal" : "");
                std::printf("| %d | %s | %.2f | %.1f | %.2f | %.0f |\n", n, mode.c_str(), t * 1e3, gflops, gflops / gemm,
                            gflops / naive);
                rows.push_back({{"n", n}, {"mode", mode}, {"ms", t * 1e3}, {"gflops", gflops},
                                {"ratio_eigen_gemm", gflops / gemm}, {"ratio_naive", gflops / naive}});
            }
        }
    }
    report["attnlab"] = rows;

    // Interactive: one token's embedding edited, the full trace brought up to date, either
    // recomputed whole or updated incrementally (only what the edit reaches).
    std::printf("\n| edit one token | full recompute ms | incremental ms |\n|---|---|---|\n");
    for (int n : {512, 2048}) {
        attn::Scenario s;
        for (int i = 0; i < n; ++i) s.target.tokens.push_back("w" + std::to_string(i % 97));
        s.d_model = heads * d_k;
        s.heads = heads;
        s.target.embeddings = attn::resolved_embeddings(s.target, s.d_model);
        attn::Trace trace;
        int edit = 0;
        const double full = median_seconds(
            [&] { s.target.embeddings(n / 3, edit++ % s.d_model) += 0.01f; attn::run_into(s, attn::RunOptions{}, trace); },
            quick ? 2 : 5);
        attn::run_into(s, attn::RunOptions{}, trace);
        const double incremental = median_seconds(
            [&] {
                attn::Scenario after = s;
                after.target.embeddings(n / 3, edit++ % s.d_model) += 0.01f;
                if (!attn::update_after_embedding_edit(s, after, trace)) std::abort();
                s = std::move(after);
            },
            quick ? 2 : 5);
        report["edit_one_token_n" + std::to_string(n) + "_full_ms"] = full * 1e3;
        report["edit_one_token_n" + std::to_string(n) + "_incremental_ms"] = incremental * 1e3;
        std::printf("| n = %d, d_model = %d, %d heads | %.2f | %.2f |\n", n, s.d_model, heads, full * 1e3, incremental * 1e3);
    }
    std::printf("(one 60 Hz frame is 16.7 ms)\n");
    if (!json_path.empty()) {
        std::ofstream(json_path) << report.dump(2) << "\n";
        std::printf("wrote %s\n", json_path.c_str());
    }
    return 0;
}
