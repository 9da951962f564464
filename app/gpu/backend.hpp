#pragma once
// The GPU compute backend: the same attention as the CPU engine (core/engine.hpp), in GLSL
// 4.3 compute shaders (shaders/), output-only — the (n_q × n_k) scores and weights are
// never in memory. Per run it holds O(n·d) buffers plus the pooled heatmap (and, for a
// custom mask, the mask itself as bits).
//
//   X+PE ──matmul──▶ Q, K, V (head-major, padded to vec4) ──rope──▶ attention (online
//   softmax, per query block) ──▶ concat, (m_i, l_i) ──pool──▶ heatmap; concat ──matmul──▶ ·W_O
//
// Results come back as an attn::Trace with detail = OutputOnly and backend = "gpu".
#include <cstddef>
#include <memory>
#include <string>

#include "engine.hpp"
#include "scenario.hpp"
#include "trace.hpp"

namespace attn::gpu {

struct BackendOptions {
    // Prepended after #version to every shader: "#define BQ 32\n". The tests inject a
    // broken line here to check that a compile failure is reported, not fatal.
    std::string extra_defines;
    // Faults a test cannot make a driver produce on demand, injected where the real ones
    // are detected (the same code path follows):
    std::size_t max_buffer_bytes = 0;   // > 0: a larger allocation fails as GL_OUT_OF_MEMORY does
    int context_reset_after_steps = -1; // ≥ 0: after this many step() calls the context reports a reset
};

// Time per stage of a run, in milliseconds.
struct Timings {
    double projection_ms = 0.0;  // X·W_Q, X·W_K, X·W_V and RoPE
    double attention_ms = 0.0;   // the streaming output pass
    double pooling_ms = 0.0;     // the heatmap
    double output_ms = 0.0;      // concat·W_O
    double total() const { return projection_ms + attention_ms + pooling_ms + output_ms; }
};

class Backend {
public:
    // Needs a current OpenGL 4.3+ context, which stays current on this thread for the
    // backend's lifetime. Null (with the reason in why_not) without GL 4.3, when a shader
    // does not compile (its info log goes to stderr) or a test buffer cannot be allocated.
    static std::unique_ptr<Backend> create(std::string* why_not, const BackendOptions& options = {});
    ~Backend();
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    // Blocking: begin(), every step, take().
    Trace run(const Scenario& scenario, const RunOptions& options);

    // Chunked, so a UI stays responsive: begin() prepares on the CPU and uploads; each step()
    // dispatches about budget_ms of work (slices of query blocks, then of heatmap rows) and
    // waits for it. step() returns true when no work is left: the result is ready for take()
    // (or nothing was begun). A begin() while a run is unfinished abandons that run.
    //     backend.begin(s, o);  …each frame: if (backend.step(8.0)) trace = backend.take();
    void begin(const Scenario& scenario, const RunOptions& options);
    bool step(double budget_ms);
    float progress() const;   // 0 → 1 over the current run's estimated work
    bool busy() const;        // begun and not yet finished
    // The finished trace (ok = false with a reason when the run failed or is unfinished).
    Trace take();

    // Bytes of GPU buffers the current (or last) run allocated.
    std::size_t allocated_bytes() const;
    // Per stage of the last run: GPU time from GL_TIME_ELAPSED queries, and wall time from
    // the first dispatch to glFinish. Mesa llvmpipe under-reports the former for compute
    // (it can read near 0 for seconds of work); the benchmark reports the latter.
    const Timings& timings() const;
    const Timings& wall_timings() const;

private:
    struct Impl;
    explicit Backend(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Makes an invisible GLFW window with a 4.3 core context, runs the scenario on it and tears
// the window down. Never exits or throws: any failure (no display, no GL 4.3, a shader
// error) comes back as a Trace with ok = false and the reason in errors.
Trace run_headless(const Scenario& scenario, const RunOptions& options);

}  // namespace attn::gpu
