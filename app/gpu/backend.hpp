#pragma once
// The GPU compute backend: the O(n²) part of attention — the streaming output and the
// pooled heatmap — in GLSL compute shaders (shaders/), output-only: the (n_q × n_k)
// scores and weights are never in memory. Everything else is core's: the inputs, Q, K, V
// and RoPE (prepare_inputs, head_inputs), the heatmap grid, and the finishing steps
// (concat · W_O, the fully masked rows, the overflow rule, the warnings, the block). The
// host only uploads, dispatches and reads back.
//
//   core: Q, K, V ──upload──▶ attention (online softmax per tile) ──▶ concat, (m_i, l_i)
//                 ──pool──▶ heatmap ──read back──▶ core: finish_trace
//
// Never wrong on a real GPU: every submission is bounded in time (submission_bound_ms,
// planned from the measured speed, so that no n comes near a driver's watchdog), the
// context is asked for reset notification and polled after every submission, and a reset
// or a hang fails the run with the reason (the caller then computes on the CPU). create()
// runs a probe against the CPU engine and refuses a GPU whose numbers disagree.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "gpu/planner.hpp"
#include "attention/scenario.hpp"
#include "attention/trace.hpp"

namespace attn::gpu {

// The attention kernels: one query row per invocation (CPU-like devices: Mesa llvmpipe),
// or 4 × 4 register tiles of queries × keys per invocation (real GPUs).
enum class Kernel { Auto, Rows, Tiled };
const char* to_string(Kernel kernel);

struct BackendOptions {
    // Prepended after #version to every shader: "#define BQ 32\n". The tests inject a
    // broken line here to check that a compile failure is reported, not fatal.
    std::string extra_defines;
    Kernel kernel = Kernel::Auto;          // Auto: Tiled on hardware, Rows on a software renderer
    bool allow_subgroups = true;           // the tiled kernel's subgroup variants, where offered
    // On a hardware GPU every variant (Auto: the tiled ones, then rows) that agrees with the
    // CPU engine is timed and the fastest kept; a software renderer keeps the rows kernel
    // when it agrees (true: try and time them all there too).
    bool time_every_variant = false;
    // No submission is planned to keep the GPU busy longer than this, whatever n: Windows'
    // watchdog resets a GPU after 2 s, and a window should keep drawing.
    double submission_bound_ms = 50.0;
    // Faults a test cannot make a driver produce on demand, injected where the real ones
    // are detected (the same code path follows):
    std::size_t max_buffer_bytes = 0;      // > 0: a larger allocation fails as GL_OUT_OF_MEMORY does
    int context_reset_after_steps = -1;    // ≥ 0: after this many submissions the context reports a reset
    double simulated_slowdown = 1.0;       // > 1: every measured time is this many times longer (a slow device)
};

// What create() found and chose.
struct DeviceInfo {
    std::string renderer, vendor, version;
    bool software = false;            // Mesa llvmpipe / softpipe: no GPU, the CPU runs the shaders
    bool reset_notification = false;  // the context reports GPU resets (GL_LOSE_CONTEXT_ON_RESET)
    Kernel kernel = Kernel::Rows;
    bool subgroups = false;           // the tiled kernel's row max and sum by clustered subgroup operations
    bool shuffle = false;             // … and its P·V reading P from registers by subgroup shuffles
    // Each variant create() tried, in order: "tiled, subgroups: 1234.5 GFLOP/s", or why not.
    std::vector<std::string> variants_tried;
    int max_shared_bytes = 0;
    long long max_buffer_bytes = 0;   // GL_MAX_SHADER_STORAGE_BLOCK_SIZE
    int probe_tokens = 0;             // n of create()'s timed probe (4 heads, d_k = 64)
    double probe_gflops = 0.0;        // attention throughput measured by create()'s probe
    double probe_max_difference = 0.0;  // max |GPU − CPU| of the probe's outputs
};

// "tiled, subgroups, shuffles": the kernel variant a device info names.
std::string kernel_label(const DeviceInfo& device);

// Wall time per stage of a run, in milliseconds (each submission is timed from its dispatch
// to its fence; the GL timer is not used: Mesa llvmpipe under-reports compute with it).
// The stages add up to less than the run's wall time when it was stepped: a window draws its
// frames between the steps (and beside the preparation, which runs on a worker). The trace's
// milliseconds are the wall time (wall_ms).
struct Timings {
    double prepare_ms = 0.0;    // core's inputs and Q, K, V on the CPU (the worker's time), and the upload
    double attention_ms = 0.0;  // the streaming output pass
    double pooling_ms = 0.0;    // the heatmap
    double finish_ms = 0.0;     // reading back and core's finishing steps
    double wall_ms = 0.0;       // from begin() (the request) to the last result read back
    double stages() const { return prepare_ms + attention_ms + pooling_ms + finish_ms; }
};

// One submission: the work it was given and how long it took.
struct Submission {
    Pass pass = Pass::Attention;
    int workgroups = 0;          // tiles of (query block × head)
    int key_begin = 0, key_end = 0;
    double flops = 0.0;
    double planned_ms = 0.0;     // Speed::predict_ms from the measured speed, never above the
                                 // bound (one tile's smallest slice of keys excepted)
    double measured_ms = 0.0;    // dispatch to fence, × simulated_slowdown
};

class Backend {
public:
    // Needs a current OpenGL 4.3+ context, which stays current on this thread for the
    // backend's lifetime. Null, with the reason in why_not, without GL 4.3, when a shader
    // does not compile (its info log goes to stderr), when a hardware GPU's context cannot
    // report resets, or when the probe's numbers disagree with the CPU engine.
    static std::unique_ptr<Backend> create(std::string* why_not, const BackendOptions& options = {});
    ~Backend();
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    // Blocking: begin(), then bounded submissions one after another, then take().
    Trace run(const Scenario& scenario, const RunOptions& options);

    // Chunked, so a UI stays responsive: begin() starts the CPU's preparation on a worker
    // thread and returns; the first step() that finds it done uploads, then each step()
    // submits bounded slices of work until about budget_ms have passed. step() returns true
    // when no work is left: the result is ready for take() (or nothing was begun). A begin()
    // while a run is unfinished abandons that run.
    //     backend.begin(s, o);  …each frame: if (backend.step(8.0)) trace = backend.take();
    void begin(const Scenario& scenario, const RunOptions& options);
    bool step(double budget_ms);
    float progress() const;   // 0 → 1 over the current run's planned work
    bool busy() const;        // begun and not yet finished
    // The finished trace (ok = false with a reason when the run failed or is unfinished).
    Trace take();

    const DeviceInfo& device() const;
    // Bytes of GPU buffers the current (or last) run allocated.
    std::size_t allocated_bytes() const;
    const Timings& timings() const;                      // the last run's
    const std::vector<Submission>& submissions() const;  // the last run's

private:
    struct Impl;
    explicit Backend(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Every kernel variant the backend can build, as the GL compiler receives it (#version, the
// variant's #defines and #extension lines, scores.glsl, the kernel), over the head widths of
// 1 to 512 columns: for checking them with a reference compiler where this machine's GL
// cannot compile them all (Mesa llvmpipe offers no subgroup operations).
struct ShaderVariant {
    std::string label, source;
};
std::vector<ShaderVariant> shader_variants();

// Makes a headless context (context.hpp: EGL without a display, else a hidden window), runs
// the scenario on it and tears it down. Never exits or throws: any failure (no GL 4.3, a
// shader error, a reset) comes back as a Trace with ok = false and the reason in errors.
Trace run_headless(const Scenario& scenario, const RunOptions& options, const BackendOptions& backend_options = {});

}  // namespace attn::gpu
