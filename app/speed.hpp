#pragma once
// How fast each engine computes output-only attention on this machine, measured — never
// guessed — and remembered: the app and `--backend auto` choose between the CPU engine and
// the GPU backend by the time each would take for the request.
//
//   the CPU engine   a timed output-only run of a probe scenario (tens of milliseconds),
//                    remembered per processor and thread count;
//   the GPU backend  the probe create() runs (backend.hpp), remembered per renderer.
//
// Remembered in $XDG_CACHE_HOME/attnlab/speeds.json (else ~/.cache/attnlab/), so the
// probes run once per machine and GPU. Pure logic: no GL here.
#include <optional>
#include <string>

#include "attention/scenario.hpp"

namespace attn::speed {

// $XDG_CACHE_HOME/attnlab, or $HOME/.cache/attnlab; empty when neither is set.
std::string cache_directory();

struct Speeds {
    double cpu_gflops = 0.0;   // the CPU engine, output-only
    double gpu_gflops = 0.0;   // the GPU backend's attention pass; 0 = not measured (or no GPU)
    bool gpu_hardware = false; // a real GPU (a software renderer is never chosen by Auto)
};

// The CPU engine's throughput: remembered, or measured now (and remembered).
double cpu_gflops();
// The GPU's, as remembered for this renderer (GL_RENDERER and GL_VERSION).
std::optional<double> remembered_gpu_gflops(const std::string& renderer);
void remember_gpu_gflops(const std::string& renderer, double gflops);

// The floating-point work of output-only attention on this scenario: QKᵀ and weights·V for
// every head (4·n_q·n_k·d_k per head), halved under a −∞ causal mask.
double attention_flops(const Scenario& scenario);
double attention_flops(double n_queries, double n_keys, int d_k, int heads, bool causal);
// The floating-point work of a full run: the projections (X·W_Q, K and V, concat·W_O), the
// attention, and the block's feed-forward when it has one.
double full_run_flops(const Scenario& scenario);
// The work of drawing a region of an output-only trace's weights again (repool_weights):
// the region's scores, 2·rows·cols·d_k per head.
double zoom_flops(int heads, int d_k, int rows, int cols);
// Predicted wall times; the GPU adds its upload and read-back of O(n·d) floats.
double predicted_cpu_ms(const Scenario& scenario, const Speeds& speeds);
double predicted_gpu_ms(const Scenario& scenario, const Speeds& speeds);
// Auto's choice: the GPU when it is hardware, measured, and predicted faster.
bool gpu_is_faster(const Scenario& scenario, const Speeds& speeds);
// A zoom of an output-only trace: the region of `rows` × `cols` drawn again on the CPU from
// the row statistics, or the GPU's whole run again (its heatmap pass included).
double predicted_cpu_zoom_ms(const Scenario& scenario, const Speeds& speeds, int rows, int cols);
double predicted_gpu_rerun_ms(const Scenario& scenario, const Speeds& speeds);

}  // namespace attn::speed
