// The compute layer: plan, start, advance and install recomputes (see compute.hpp).
//
// Index
// [SECTION] Names
// [SECTION] Plan
// [SECTION] Generated sequences
// [SECTION] Compute
#include "compute.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "gpu/backend.hpp"
#include "attention/serialize.hpp"

namespace attn::compute {

// [SECTION] Names

const char* to_string(Choice choice) {
    switch (choice) {
        case Choice::Cpu: return "cpu";
        case Choice::Gpu: return "gpu";
        case Choice::Auto: return "auto";
    }
    return "auto";
}

bool parse_choice(const std::string& text, Choice& choice) {
    for (Choice c : {Choice::Cpu, Choice::Gpu, Choice::Auto})
        if (text == to_string(c)) {
            choice = c;
            return true;
        }
    return false;
}

// [SECTION] Plan

Plan plan(const Scenario& scenario, Choice choice, bool gpu_usable, const speed::Speeds& speeds) {
    Plan p;
    gpu_usable = gpu_usable && !scenario.delta_net.on;  // the GPU kernels are softmax attention's
    if (choice == Choice::Gpu && gpu_usable) {  // the GPU computes output-only, at any n
        p.detail = Detail::OutputOnly;
        p.gpu = true;
        return p;
    }
    const int n = std::max(edits::query_count(scenario), edits::key_count(scenario));
    // validate() is cheap (no allocation); a refusal that output-only would lift switches too.
    const bool full_fits = n <= kFullDetailLimit &&
                           (validate(scenario, Detail::Full).empty() || !validate(scenario, Detail::OutputOnly).empty());
    if (full_fits) {
        p.worker = speed::full_run_flops(scenario) > kFullOnFrameFlops;
        return p;
    }
    p.detail = Detail::OutputOnly;
    p.gpu = choice == Choice::Auto && gpu_usable && speed::gpu_is_faster(scenario, speeds);
    return p;
}

ZoomPlan plan_zoom(const Trace& shown, const Scenario& scenario, const speed::Speeds& speeds, bool gpu_usable, int rows,
                   int cols) {
    bool has_rows = !shown.head.empty();
    for (const HeadTrace& head : shown.head)
        has_rows = has_rows && head.row_max.size() == shown.n_queries && head.row_sum.size() == shown.n_queries;
    const bool gpu_run = shown.backend == "gpu" && gpu_usable;
    const double cpu_ms = speed::predicted_cpu_zoom_ms(scenario, speeds, rows, cols);
    const double gpu_ms = gpu_run && speeds.gpu_gflops > 0.0 ? speed::predicted_gpu_rerun_ms(scenario, speeds) : 1e300;
    if (has_rows && cpu_ms <= gpu_ms) return ZoomPlan{true, cpu_ms};
    return ZoomPlan{false, gpu_ms < 1e300 ? gpu_ms : speed::predicted_cpu_ms(scenario, speeds)};
}

Region shown_region(const Trace& trace) {
    if (trace.head.empty()) return Region{};
    const PooledWeights& p = trace.head.front().pooled_weights;
    if (p.row_begin == 0 && p.row_end == trace.n_queries && p.col_begin == 0 && p.col_end == trace.n_keys) return Region{};
    return Region{p.row_begin, p.row_end, p.col_begin, p.col_end};
}

RunOptions output_only_options(const Scenario& scenario, const Region& region) {
    RunOptions options;
    options.detail = Detail::OutputOnly;
    if (region.whole()) return options;
    const int n_q = edits::query_count(scenario), n_k = edits::key_count(scenario);
    // Clamped to the sequence: a region left from a longer one shrinks to what exists.
    options.region_row_begin = std::clamp(region.row_begin, 0, std::max(0, n_q - 1));
    options.region_row_end = std::clamp(region.row_end, options.region_row_begin + 1, std::max(1, n_q));
    options.region_col_begin = std::clamp(region.col_begin, 0, std::max(0, n_k - 1));
    options.region_col_end = std::clamp(region.col_end, options.region_col_begin + 1, std::max(1, n_k));
    return options;
}

// [SECTION] Generated sequences

Scenario generated_scenario(int length, std::uint64_t seed) {
    Scenario s;
    s.name = "generated-" + std::to_string(length) + "-tokens";
    s.d_model = 64;
    s.heads = 8;
    s.seed = seed;
    s.positional = PositionalEncoding::Sinusoidal;
    s.target.tokens.reserve(static_cast<size_t>(std::max(0, length)));
    for (int i = 1; i <= length; ++i) s.target.tokens.push_back("t" + std::to_string(i));
    // N(0, 1) rows seeded from each token's text (the engine's own derivation), kept so that
    // each run does not derive them again.
    s.target.embeddings = resolved_embeddings(s.target, s.d_model);
    return s;
}

// [SECTION] Compute

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Compute::Compute(BackendFactory factory, std::string renderer, bool software, speed::Speeds speeds)
    : factory_(std::move(factory)) {
    status_.gpu_renderer = std::move(renderer);
    status_.gpu_software = software;
    status_.speeds = speeds;
    if (!factory_) {
        status_.gpu = GpuState::Failed;
        status_.notice.clear();
    }
}

Compute::~Compute() {
    // The jobs are cancelled (nothing will read their results) and waited for as they go.
    if (worker_.running() && !worker_.done()) std::fprintf(stderr, "attnlab: waiting for the CPU run under way to finish\n");
}

bool Compute::gpu_waiting() const { return gpu_ && gpu_uncollected_ && gpu_run_ == wanted_; }

bool Compute::busy() const {
    return worker_.running() || cpu_pending_ || gpu_waiting() || compare_worker_.running();
}

// Creates the backend on first need; a failure is told once and the CPU takes over.
bool Compute::ensure_gpu() {
    if (gpu_) return true;
    if (status_.gpu == GpuState::Failed || !factory_) return false;
    std::string why;
    gpu_ = factory_(&why);
    if (gpu_) {
        status_.gpu = GpuState::Ready;
        // Its probe's speed, where none was measured for Auto (--backend gpu): a zoom of its
        // runs is planned with it.
        if (status_.speeds.gpu_gflops <= 0.0) status_.speeds.gpu_gflops = gpu_->device().probe_gflops;
        const gpu::DeviceInfo& d = gpu_->device();
        char kernel[160];
        std::snprintf(kernel, sizeof kernel, "%s kernel, %.1f GFLOP/s at start-up", gpu::kernel_label(d).c_str(), d.probe_gflops);
        status_.gpu_kernel = kernel;
        return true;
    }
    status_.gpu = GpuState::Failed;
    std::replace(why.begin(), why.end(), '\n', ' ');  // a shader's info log: one line in the status
    while (!why.empty() && why.back() == ' ') why.pop_back();
    status_.notice = "GPU backend unavailable (" + (why.empty() ? std::string("unknown reason") : why) +
                     "): falling back to the CPU engine";
    std::fprintf(stderr, "attnlab: %s\n", status_.notice.c_str());
    return false;
}

void Compute::measure_speeds() {
    if (!factory_ || status_.gpu_software) return;
    speed::Speeds& speeds = status_.speeds;
    speeds.gpu_hardware = true;
    speeds.cpu_gflops = speed::cpu_gflops();
    if (const auto remembered = speed::remembered_gpu_gflops(status_.gpu_renderer)) {
        speeds.gpu_gflops = *remembered;
        return;
    }
    if (!ensure_gpu()) return;  // the notice says why; Auto then stays on the CPU
    speeds.gpu_gflops = gpu_->device().probe_gflops;
    speed::remember_gpu_gflops(status_.gpu_renderer, speeds.gpu_gflops);
}

void Compute::start_cpu_worker(const Scenario& scenario, const RunOptions& options) {
    cpu_run_ = wanted_;
    cpu_started_ = std::chrono::steady_clock::now();
    worker_zoom_ = false;
    // The worker owns copies: the UI thread keeps editing the session meanwhile.
    worker_.start("running the scenario", [scenario, options](JobProgress& progress) {
        RunOptions o = options;
        o.cancel = progress.cancel_flag();
        Trace t = run(scenario, o);
        t.settings.preset = edits::preset_of(scenario);
        return t;
    });
}

bool Compute::start_zoom_worker(const edits::Session& session) {
    const Trace& shown = session.trace;
    const bool current = !session.dirty && session.pending.empty() && session.errors.empty() && !worker_.running() &&
                         !cpu_pending_ && !gpu_waiting();
    if (!current || !shown.ok || shown.detail != Detail::OutputOnly) return false;
    speed::Speeds speeds = status_.speeds;
    // A GPU run's zoom is decided by the speeds: the CPU's as the backend panel's estimate has it.
    if (speeds.cpu_gflops <= 0.0 && shown.backend == "gpu") speeds.cpu_gflops = speed::cpu_gflops();
    const int rows_shown = region_.whole() ? shown.n_queries : region_.row_end - region_.row_begin;
    const int cols_shown = region_.whole() ? shown.n_keys : region_.col_end - region_.col_begin;
    if (!plan_zoom(shown, session.scenario, speeds, status_.gpu != GpuState::Failed, rows_shown, cols_shown).from_rows)
        return false;
    // What the worker reads, copied (O(n·d)): each head's Q, K and row statistics.
    Trace rows;
    rows.ok = true;
    rows.detail = shown.detail;
    rows.n_queries = shown.n_queries;
    rows.n_keys = shown.n_keys;
    rows.scale = shown.scale;
    rows.head.resize(shown.head.size());
    for (size_t h = 0; h < shown.head.size(); ++h) {
        const HeadTrace& from = shown.head[h];
        HeadTrace& to = rows.head[h];
        to.q = from.q;
        to.k = from.k;
        to.alibi_slope = from.alibi_slope;
        to.row_max = from.row_max;
        to.row_sum = from.row_sum;
    }
    ++wanted_;
    cpu_run_ = wanted_;
    cpu_started_ = std::chrono::steady_clock::now();
    worker_zoom_ = true;
    zoom_generation_ = session.generation;
    RunOptions options = output_only_options(session.scenario, region_);
    worker_.start("drawing the region", [scenario = session.scenario, rows = std::move(rows), options](JobProgress& progress) mutable {
        options.cancel = progress.cancel_flag();
        std::string error;
        std::optional<std::vector<PooledWeights>> pooled = repool_weights(scenario, rows, options, &error);
        rows.ok = pooled.has_value();
        if (!pooled) rows.errors.push_back(error);
        for (size_t h = 0; pooled && h < rows.head.size(); ++h) rows.head[h].pooled_weights = std::move((*pooled)[h]);
        return rows;
    });
    return true;
}

bool Compute::install(edits::Session& session, Trace&& trace, double ms) {
    session.last_run_ms = ms;
    if (!trace.ok) {
        session.errors = trace.errors;  // the last good trace stays on screen
        if (session.errors.empty()) session.errors.push_back("the scenario cannot run");
        return false;
    }
    session.errors.clear();
    session.trace = std::move(trace);
    session.computed = Scenario{};  // not the edits::update path: the next edit runs in full
    ++session.generation;
    return true;
}

bool Compute::update(edits::Session& session, const Settings& settings, double gpu_budget_ms) {
    edits::apply_pending(session);
    if (settings.cancel_requests != cancels_seen_) {
        cancels_seen_ = settings.cancel_requests;
        if (worker_.running() && worker_zoom_) {
            worker_.stop();
            ++wanted_;                 // what the worker returns answers nothing now
            region_ = settings.region; // the region on screen: nothing to draw again
        }
    }
    if (settings.choice != choice_ || settings.region != region_) {
        const bool only_region = settings.choice == choice_;
        choice_ = settings.choice;
        region_ = settings.region;
        // A zoom redraws the region from the trace on screen when it can (a CPU run keeps
        // each row's softmax statistics); otherwise the whole run is done again.
        if (!only_region || !start_zoom_worker(session)) session.dirty = true;
    }
    bool replaced = false;

    if (session.dirty) {
        ++wanted_;
        worker_.stop();  // its result would be dropped: stop it now (the next run waits for it to end)
        const bool gpu_usable = status_.gpu != GpuState::Failed && factory_ != nullptr;
        Plan p = plan(session.scenario, choice_, gpu_usable, status_.speeds);
        if (p.gpu && !ensure_gpu()) p = plan(session.scenario, choice_, false, status_.speeds);
        status_.planned_detail = p.detail;
        status_.planned_gpu = p.gpu;
        cpu_pending_ = false;
        if (p.detail == Detail::Full && !p.worker) {
            // Small work: within the frame, as the edits have always been (their own recompute).
            replaced = edits::update(session);  // it times the run: session.last_run_ms
        } else if (p.detail == Detail::Full) {
            session.dirty = false;
            cpu_options_ = RunOptions{};
            cpu_pending_ = true;  // started below, once the worker is free
        } else {
            session.dirty = false;
            const RunOptions options = output_only_options(session.scenario, region_);
            if (p.gpu) {
                gpu_started_ = std::chrono::steady_clock::now();  // before begin(): its preparation counts
                gpu_->begin(session.scenario, options);  // abandons a run under way
                gpu_preset_ = edits::preset_of(session.scenario);
                gpu_run_ = wanted_;
                gpu_uncollected_ = true;
            } else {
                cpu_options_ = options;
                cpu_pending_ = true;  // started below, once the worker is free
            }
        }
    }

    // The GPU: one slice of work per frame.
    if (gpu_waiting() && (!gpu_->busy() || gpu_->step(gpu_budget_ms))) {  // finished, or failed in begin()
        gpu_uncollected_ = false;
        Trace trace = gpu_->take();
        if (!trace.ok && validate(session.scenario, Detail::OutputOnly).empty()) {
            // The scenario is fine: the GPU failed it (an allocation, a lost context).
            std::string why = trace.errors.empty() ? std::string("unknown reason") : trace.errors.front();
            status_.notice = "GPU run failed (" + why + "): falling back to the CPU engine";
            std::fprintf(stderr, "attnlab: %s\n", status_.notice.c_str());
            status_.gpu = GpuState::Failed;
            gpu_.reset();
            status_.planned_gpu = false;
            cpu_options_ = output_only_options(session.scenario, region_);
            cpu_pending_ = true;
        } else {
            trace.settings.preset = gpu_preset_;
            replaced = install(session, std::move(trace), ms_since(gpu_started_)) || replaced;
        }
    }

    // The CPU worker: collect a finished run; a stale one is dropped and run again.
    if (worker_.done()) {
        Trace trace = std::move(*worker_.take());
        if (worker_zoom_) {
            // The region's weights join the trace they were drawn from, if it is still on screen.
            worker_zoom_ = false;
            const bool answers = cpu_run_ == wanted_ && session.generation == zoom_generation_ && trace.ok &&
                                 trace.head.size() == session.trace.head.size();
            if (answers) {
                for (size_t h = 0; h < trace.head.size(); ++h)
                    session.trace.head[h].pooled_weights = std::move(trace.head[h].pooled_weights);
                ++session.generation;
                session.last_run_ms = ms_since(cpu_started_);
                replaced = true;
            } else if (cpu_run_ == wanted_) {
                session.dirty = true;  // it could not: the whole run, next frame
            }
        } else if (cpu_run_ == wanted_) {
            replaced = install(session, std::move(trace), ms_since(cpu_started_)) || replaced;
        }
    }
    if (cpu_pending_ && !worker_.running()) {
        cpu_pending_ = false;
        start_cpu_worker(session.scenario, cpu_options_);
    }

    update_comparison(session, settings);
    status_.stale = worker_.running() && cpu_run_ != wanted_ && !(worker_zoom_ && worker_.stopping());
    status_.zooming = worker_.running() && worker_zoom_ && cpu_run_ == wanted_;
    const bool gpu_running = gpu_waiting() && gpu_->busy();
    status_.busy = gpu_running || worker_.running() || cpu_pending_;
    status_.running_backend = gpu_running ? "gpu" : status_.busy ? "cpu" : "";
    status_.progress = gpu_running ? gpu_->progress() : -1.0f;
    return replaced;
}

// Compare's B: once A's trace is the scenario's (nothing under way, no refused edit), B is
// that scenario with B's toggles, planned like any run and computed on a worker; A is never
// run again. A result that no longer answers A's trace and B's toggles is dropped.
void Compute::update_comparison(edits::Session& session, const Settings& settings) {
    if (std::optional<Trace> landed = compare_worker_.take()) {
        Trace b = std::move(*landed);
        if (session.comparison.signature == compare_signature_ && !session.comparison.ready) {
            const std::string signature = session.comparison.signature;
            session.comparison = comparison::compare(session.trace, std::move(b));
            session.comparison.signature = signature;
        }
    }
    if (!settings.compare_b || !session.trace.ok) return;
    const std::string signature = std::to_string(session.generation) + "|" + dump_json(toggles_to_json(*settings.compare_b));
    if (signature == session.comparison.signature) return;
    const bool a_is_current = !session.dirty && session.pending.empty() && session.errors.empty() && !worker_.running() &&
                              !cpu_pending_ && !gpu_waiting();
    if (!a_is_current || compare_worker_.running()) return;  // asked again next frame
    session.comparison = comparison::Comparison{};
    session.comparison.signature = compare_signature_ = signature;
    std::string error;
    std::optional<Scenario> b = comparison::scenario_b(session.scenario, *settings.compare_b, &error);
    if (!b) {
        session.comparison.ready = true;
        session.comparison.error = error;
        return;
    }
    // B is planned like A (full detail up to the limit, output-only above), on the CPU.
    const Plan p = plan(*b, Choice::Cpu, false, status_.speeds);
    const RunOptions options = p.detail == Detail::Full ? RunOptions{} : output_only_options(*b, region_);
    compare_worker_.start("running Compare's B", [scenario = std::move(*b), options](JobProgress&) { return run(scenario, options); });
}

void Compute::finish(edits::Session& session, const Settings& settings) {
    update(session, settings, 1e9);
    while (busy()) {
        worker_.wait();
        compare_worker_.wait();
        update(session, settings, 1e9);
    }
}

}  // namespace attn::compute
