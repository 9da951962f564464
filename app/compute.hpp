#pragma once
// The compute layer between the edits and the engines: which engine runs a scenario (the
// CPU engine in full detail, the CPU engine output-only on a worker thread, or the GPU
// backend in steps), and when its result replaces the trace on screen. No GL here: the GPU
// backend comes from a factory the window supplies, so the CPU paths run in plain tests.
//
//   edits ──apply──▶ scenario ──plan──▶ Full, CPU, on the UI thread      (n ≤ kFullDetailLimit)
//                                  └─▶ OutputOnly, CPU, one worker thread (n > limit, CPU)
//                                  └─▶ OutputOnly, GPU, begin() + step(budget) per frame
//
// Output-only never builds an (n_q × n_k) matrix: the weights come as head[h].pooled_weights
// (max-pooled to at most 512 × 512), for the whole sequence or for the zoom region.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "edits.hpp"
#include "job.hpp"
#include "attention/engine.hpp"
#include "speed.hpp"

namespace attn::gpu {
class Backend;
}

namespace attn::compute {

// Above this many queries (or keys) the app switches to output-only detail. A full trace
// keeps 5·heads·n² floats: 160 MiB at n = 1024 with 8 heads, 2.5 GiB at 4096 — and the
// UI could not show n² cells anyway. Scenarios that the engine refuses in full (over
// 4 GiB) switch as well, whatever n.
constexpr int kFullDetailLimit = 1024;

enum class Choice { Cpu, Gpu, Auto };
const char* to_string(Choice choice);
// "cpu" | "gpu" | "auto"; false (choice untouched) for anything else.
bool parse_choice(const std::string& text, Choice& choice);

// The part of a head's (n_q × n_k) weights to show; all zero = the whole matrix.
struct Region {
    int row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
    bool whole() const { return row_end <= row_begin || col_end <= col_begin; }
    bool operator==(const Region& o) const {
        return row_begin == o.row_begin && row_end == o.row_end && col_begin == o.col_begin && col_end == o.col_end;
    }
    bool operator!=(const Region& o) const { return !(*this == o); }
};

// What the UI asks for (the backend panel writes it; update() reads it).
struct Settings {
    Choice choice = Choice::Auto;
    Region region;              // zoom of the pooled weights (output-only runs)
    std::optional<Toggles> compare_b;  // Compare is open: B = the scenario on screen with these
    int generate_length = 4096; // the sequence-length control
    std::uint64_t generate_seed = 1;
    // Cancel, for a zoom under way: bumped by the panel, which sets region back to
    // shown_region(trace) in the same frame. The zoom stops between two blocks of its work
    // and the trace on screen stays.
    int cancel_requests = 0;
};

// The region the trace on screen shows (Region{} when it is the whole sequence).
Region shown_region(const Trace& trace);

enum class GpuState { NotTried, Ready, Failed };

// What the compute layer reports (update() writes it; the panels read it).
struct Status {
    GpuState gpu = GpuState::NotTried;
    std::string gpu_renderer;     // GL_RENDERER of the window's context
    std::string gpu_kernel;       // the kernel variant the backend kept, and its probe's speed
    bool gpu_software = false;    // Mesa llvmpipe: the CPU runs the shaders, slower than the CPU engine
    speed::Speeds speeds;         // measured throughputs Auto chooses by (speed.hpp)
    std::string notice;           // a failure the user should see (the GPU fell back to the CPU)
    bool busy = false;            // an output-only run is under way (the last good trace stays)
    float progress = -1.0f;       // 0 → 1 on the GPU; −1 when unknown (the CPU worker)
    std::string running_backend;  // "cpu" or "gpu" while busy
    bool stale = false;           // the CPU run under way was overtaken by an edit: it runs again
    bool zooming = false;         // the run under way redraws another region of the trace on screen (cancellable)
    Detail planned_detail = Detail::Full;
    bool planned_gpu = false;
};

// The decision for one scenario.
struct Plan {
    Detail detail = Detail::Full;
    bool gpu = false;
    bool worker = false;  // a full run too costly for a frame: on the CPU worker (kFullOnFrameFlops)
};
// A full run of more work than this is done on the worker, the trace on screen kept (and said
// to be the previous one) until it lands: a GPT-2 layer, about 0.8 GFLOP at 54 tokens. Every
// preset and a trained layer are a few MFLOP at most: run within the frame, as edits always were.
constexpr double kFullOnFrameFlops = 50e6;
// Full on the CPU up to kFullDetailLimit (and when the engine accepts it in full); above,
// output-only: on the GPU when Auto and the measured speeds predict the GPU faster (a
// hardware GPU only), otherwise on the CPU. Gpu chosen: every run goes to the GPU
// (output-only), whatever n. gpu_usable: a backend exists or may still be created. The
// window and `--backend` on the command line both plan with this (the command line runs a
// full plan at once, wherever the window would).
Plan plan(const Scenario& scenario, Choice choice, bool gpu_usable, const speed::Speeds& speeds);
// How a zoom of the trace on screen (`rows` × `cols` of its weights) is drawn: from its
// row statistics on the CPU (from_rows), or by running the whole sequence again — a trace
// without them, or a GPU run when the GPU's whole run is predicted faster, as for a large
// region of a long sequence. speeds: the CPU's measured; gpu_usable: the GPU has not failed.
// The compute layer zooms by it and the backend panel's estimate says it.
struct ZoomPlan {
    bool from_rows = false;
    double predicted_ms = 0.0;
};
ZoomPlan plan_zoom(const Trace& shown, const Scenario& scenario, const speed::Speeds& speeds, bool gpu_usable, int rows,
                   int cols);
// The engine options for an output-only run of this scenario showing `region`.
RunOptions output_only_options(const Scenario& scenario, const Region& region);

// tokens "t1" … "tN", d_model 64, 8 heads, sinusoidal positions; the embeddings are the
// seeded ones the engine derives from each token's text, stored in the scenario.
Scenario generated_scenario(int length, std::uint64_t seed);

// Makes the GPU backend (on the UI thread, with the window's context current); null and
// the reason in why_not when it cannot.
using BackendFactory = std::function<std::unique_ptr<gpu::Backend>(std::string* why_not)>;

class Compute {
public:
    // factory may be empty (no GPU at all); renderer and software describe the context;
    // speeds are what Auto chooses by.
    explicit Compute(BackendFactory factory = nullptr, std::string renderer = "", bool software = false,
                     speed::Speeds speeds = {});
    ~Compute();  // waits for the CPU worker
    Compute(const Compute&) = delete;
    Compute& operator=(const Compute&) = delete;

    // Once per frame on the UI thread: applies the pending edits, starts the recompute the
    // scenario needs (superseding one under way), advances a GPU run by gpu_budget_ms,
    // and installs a finished result. Returns true when session.trace was replaced.
    bool update(edits::Session& session, const Settings& settings, double gpu_budget_ms = 8.0);
    // Blocks (stepping the GPU) until nothing is under way and the trace is current.
    void finish(edits::Session& session, const Settings& settings);

    // Auto's speeds: on a hardware GPU, the CPU engine's (measured once per machine) and the
    // GPU's (remembered per renderer, else measured now: the backend is made and its probe
    // timed). A software renderer is never chosen by Auto, so nothing is measured for it.
    void measure_speeds();

    const Status& status() const { return status_; }
    bool busy() const;  // a run or Compare's B under way
    // Milliseconds of the last recompute that reached the screen (wall time, start to install).

private:
    bool ensure_gpu();
    void start_cpu_worker(const Scenario& scenario, const RunOptions& options);
    // A new region of an output-only trace: drawn from its row statistics on the worker
    // (repool_weights), never by running attention again. False when the trace cannot.
    bool start_zoom_worker(const edits::Session& session);
    void update_comparison(edits::Session& session, const Settings& settings);
    bool install(edits::Session& session, Trace&& trace, double ms);

    BackendFactory factory_;
    std::unique_ptr<gpu::Backend> gpu_;
    Status status_;
    Choice choice_ = Choice::Auto;
    Region region_;
    std::uint64_t wanted_ = 0;         // bumped at every change of scenario or settings
    std::uint64_t gpu_run_ = 0;        // the request the GPU run under way answers
    std::string gpu_preset_;           // the preset its scenario is, if unedited
    bool gpu_uncollected_ = false;     // begun and its trace not yet taken (a begin() that fails finishes at once)
    bool gpu_waiting() const;
    std::uint64_t cpu_run_ = 0;        // the request the CPU worker answers
    bool cpu_pending_ = false;         // a CPU run waits for the worker to be free
    RunOptions cpu_options_;           // its options: output-only, or a full run too costly for a frame
    Job<Trace> worker_;                // the CPU run under way (job.hpp): one at a time
    bool worker_zoom_ = false;         // worker_ draws a region of the trace on screen
    std::uint64_t zoom_generation_ = 0;  // the trace it draws for (session.generation)
    int cancels_seen_ = 0;
    Job<Trace> compare_worker_;        // B of Compare
    std::string compare_signature_;      // what compare_worker_ (or the installed comparison) answers
    std::chrono::steady_clock::time_point gpu_started_, cpu_started_;
};

}  // namespace attn::compute
