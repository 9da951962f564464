// The GPU backend's host side: core prepares the inputs and finishes the trace; this file
// uploads, plans bounded submissions, dispatches, waits on fences and reads back.
//
// Index
// [SECTION] GL helpers: buffers, programs
// [SECTION] Kernel variants
// [SECTION] Preparing on the CPU, off the GL thread
// [SECTION] The run's layout and buffers
// [SECTION] Submitting: fences, resets, the measured speed
// [SECTION] begin(): named stages
// [SECTION] Reading back and finishing
// [SECTION] create(): the device, the kernel, the probe
// [SECTION] Backend
#include "gpu/backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "gpu/context.hpp"
#include "gpu/gl_objects.hpp"
#include "gpu/shader_sources.hpp"
#include "job.hpp"
#include "attention/mask.hpp"
#include "tensor/random.hpp"

namespace attn::gpu {

const char* to_string(Kernel kernel) {
    switch (kernel) {
        case Kernel::Auto: return "auto";
        case Kernel::Rows: return "rows";
        case Kernel::Tiled: return "tiled";
    }
    return "auto";
}

std::string kernel_label(const DeviceInfo& d) {
    return std::string(to_string(d.kernel)) + (d.subgroups ? ", subgroups" : "") + (d.shuffle ? ", shuffles" : "");
}

namespace {

constexpr const char* kContextLost = "the GPU context was lost (a GPU reset): its buffers and shaders are gone";
constexpr int kQueryBlock = 64;   // BQ of both attention kernels: query rows per tile
constexpr int kPoolRows = 64;     // PQ of pool.comp: region rows per tile
constexpr int kPoolKeys = 32;     // BK of pool.comp
constexpr int kMaxHeadDim = 512;  // d_k, d_v: beyond this the per-invocation registers get silly
constexpr int kMaxGroupsPerDispatch = 65535;  // GL_MAX_COMPUTE_WORK_GROUP_COUNT[0] is at least this
constexpr double kHangSeconds = 20.0;         // a submission not done by then: the GPU is hung

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

int vec4s(int columns) { return (columns + 3) / 4; }
int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

}  // namespace

// [SECTION] GL helpers: buffers, programs

bool Buffer::allocate(std::size_t bytes, const void* data) {
    // At least 16 bytes (an empty buffer cannot be bound); a smaller upload is copied into a
    // zero-padded block first, so GL never reads past the end of the caller's data.
    unsigned char padded[16] = {};
    if (bytes < sizeof padded && data != nullptr) {
        std::memcpy(padded, data, bytes);
        data = padded;
    }
    bytes = std::max<std::size_t>(bytes, sizeof padded);
    if (!name_) {
        GLuint name = 0;
        glGenBuffers(1, &name);
        name_ = GlName<DeleteBuffer>(name);
    }
    for (int stale = 0; stale < 16 && glGetError() != GL_NO_ERROR; ++stale) {
    }  // errors left by earlier calls are not this allocation's (bounded: a lost context repeats one)
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, name_.get());
    glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(bytes), data, GL_DYNAMIC_DRAW);
    if (glGetError() != GL_NO_ERROR) {
        bytes_ = 0;
        return false;
    }
    if (data == nullptr) glClearBufferData(GL_SHADER_STORAGE_BUFFER, GL_R32UI, GL_RED_INTEGER, GL_UNSIGNED_INT, nullptr);
    bytes_ = bytes;
    return glGetError() == GL_NO_ERROR;
}

void Buffer::read(void* out, std::size_t bytes) const {
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, name_.get());
    glGetBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, static_cast<GLsizeiptr>(bytes), out);
}

namespace {

// source's #version line (and its #extension lines), then the variant's #defines, then the
// shared scores.glsl, then the rest of source; #line keeps info-log line numbers true to the
// files (string 0 = the .comp file, 1 = scores.glsl).
std::string assemble(const char* source, const std::string& defines) {
    const std::string text = source;
    const auto end_of_version = text.find('\n');
    std::string out = text.substr(0, end_of_version + 1);
    // #extension must come before anything else that is not a preprocessor line: a variant
    // that wants subgroups says so with its #define, the extension line follows it.
    out += defines;
    if (defines.find("#define USE_SUBGROUPS") != std::string::npos)
        out += "#extension GL_KHR_shader_subgroup_clustered : require\n";
    if (defines.find("#define USE_SHUFFLE") != std::string::npos)
        out += "#extension GL_KHR_shader_subgroup_shuffle : require\n";
    out += "#line 1 1\n" + std::string(shader_source::scores);
    out += "#line 2 0\n" + text.substr(end_of_version + 1);
    return out;
}

Program compile(const std::string& source, const std::string& label, std::string* error) {
    Shader shader(glCreateShader(GL_COMPUTE_SHADER));
    const char* text = source.c_str();
    glShaderSource(shader.get(), 1, &text, nullptr);
    glCompileShader(shader.get());
    GLint ok = GL_FALSE;
    glGetShaderiv(shader.get(), GL_COMPILE_STATUS, &ok);
    auto info_log = [](GLuint object, bool is_program) {
        GLint length = 0;
        if (is_program) glGetProgramiv(object, GL_INFO_LOG_LENGTH, &length);
        else glGetShaderiv(object, GL_INFO_LOG_LENGTH, &length);
        std::string log(static_cast<size_t>(std::max(length, 1)), '\0');
        if (is_program) glGetProgramInfoLog(object, length, nullptr, log.data());
        else glGetShaderInfoLog(object, length, nullptr, log.data());
        return std::string(log.c_str());
    };
    if (!ok) {
        const std::string log = info_log(shader.get(), false);
        std::cerr << "attnlab: compute shader " << label << " does not compile:\n" << log << "\n";
        *error = "compute shader " + label + " does not compile: " + log;
        return Program();
    }
    Program program(glCreateProgram());
    glAttachShader(program.get(), shader.get());
    glLinkProgram(program.get());
    glGetProgramiv(program.get(), GL_LINK_STATUS, &ok);
    if (!ok) {
        const std::string log = info_log(program.get(), true);
        std::cerr << "attnlab: compute shader " << label << " does not link:\n" << log << "\n";
        *error = "compute shader " + label + " does not link: " + log;
        return Program();
    }
    return program;
}

void set_int(GLuint program, const char* name, int value) {
    glProgramUniform1i(program, glGetUniformLocation(program, name), value);
}
void set_float(GLuint program, const char* name, float value) {
    glProgramUniform1f(program, glGetUniformLocation(program, name), value);
}

// (heads × n × stride) head-major, zero-padded: head h's (n × d) matrix in rows of `stride`.
std::vector<float> head_major(const std::vector<const Matrix*>& per_head, int stride) {
    const size_t heads = per_head.size();
    const int n = heads ? static_cast<int>(per_head[0]->rows()) : 0;
    std::vector<float> out(heads * static_cast<size_t>(n) * static_cast<size_t>(stride), 0.0f);
    for (size_t h = 0; h < heads; ++h) {
        const Matrix& m = *per_head[h];
        for (int i = 0; i < n; ++i)
            std::copy_n(m.row(i).data(), m.cols(), out.data() + (h * static_cast<size_t>(n) + static_cast<size_t>(i)) * static_cast<size_t>(stride));
    }
    return out;
}

// [SECTION] Kernel variants

// The shared memory the tiled kernel needs (attention_tiled.comp's arrays).
int tiled_shared_bytes(int dv4, int vc, const DeviceInfo& variant) {
    const int kv = std::max(64 * 5, vc * dv4);
    return 16 * 64 * 4 + 16 * kv + (variant.shuffle ? 0 : 4 * 64 * 65) + (variant.subgroups ? 0 : 4 * 64 * 16) + 4;
}

// Keys of V per P·V chunk: the largest power of two with VC · DV4 ≤ 256 vec4, at most 64.
int tiled_value_chunk(int dv4) {
    int vc = 64;
    while (vc > 1 && vc * dv4 > 256) vc /= 2;
    return vc;
}

// A shader of a pass, the #defines of its variant, and the keys it streams per step (BK).
struct ShaderChoice {
    const char* name;
    const char* source;
    std::string defines;
    int key_step = 64;
};

// The attention pass's shader for the device's kernel variant and these head widths (vec4s).
ShaderChoice attention_shader(const DeviceInfo& d, int dk4, int dv4) {
    std::string defines = "#define DK4 " + std::to_string(dk4) + "\n#define DV4 " + std::to_string(dv4) + "\n";
    if (d.kernel == Kernel::Tiled) {
        defines += "#define VC " + std::to_string(tiled_value_chunk(dv4)) + "\n";
        if (d.subgroups) defines += "#define USE_SUBGROUPS 1\n";
        if (d.shuffle) defines += "#define USE_SHUFFLE 1\n";
        return {"attention_tiled", shader_source::attention_tiled, defines};
    }
    // Rows: as many keys per shared tile as fit (32 at most).
    int bk = 32;
    while (bk > 4 && static_cast<long long>(bk) * (dk4 + dv4) * 16 + 64 > d.max_shared_bytes) bk /= 2;
    return {"attention_rows", shader_source::attention_rows, defines + "#define BK " + std::to_string(bk) + "\n"};
}

// The heatmap's shader follows the attention's: register tiles with the tiled kernel.
ShaderChoice pool_shader(const DeviceInfo& d, int dk4) {
    const std::string defines = "#define DK4 " + std::to_string(dk4) + "\n";
    if (d.kernel == Kernel::Tiled) return {"pool_tiled", shader_source::pool_tiled, defines, 64};
    return {"pool", shader_source::pool, defines + "#define BK " + std::to_string(kPoolKeys) + "\n", kPoolKeys};
}

}  // namespace

// [SECTION] Preparing on the CPU, off the GL thread

namespace {

// What a run needs from the CPU: the trace's inputs and each head's Q, K, V (RoPE
// included) and ALiBi slope (core's functions), the heatmap grid, and the GPU buffers'
// contents. Made by a job on a worker thread (job.hpp), so that a window keeps drawing while a
// long sequence is prepared; the GL thread only uploads it.
struct Prepared {
    Trace trace;
    std::optional<PooledGrid> grid;
    std::vector<float> q, k, v;               // head-major, rows padded to vec4
    std::vector<float> head_constants;       // every head's ALiBi slope, then every head's sink logit
    std::vector<GLuint> padding_bits;        // one bit per key, 1 = padding
    std::vector<GLuint> custom_bits;         // (n_q × ⌈n_k/32⌉) words, 1 = visible
    std::string error;                       // what makes the run impossible on the GPU
    double cpu_ms = 0.0;                     // how long the worker took
    std::uint64_t request = 0;               // the begin() it answers
};

Prepared prepare_run(const Scenario& s, const RunOptions& o, Trace trace) {
    const auto start = Clock::now();
    Prepared p;
    if (s.delta_net.on) {
        p.error = "Gated DeltaNet is a recurrence, not a softmax: the GPU kernels compute softmax attention, so this layer runs on the CPU";
        return p;
    }
    Matrix q_all, k_all, v_all;
    prepare_inputs(s, trace, q_all, k_all, v_all);
    const int n_q = trace.n_queries, n_k = trace.n_keys, heads = trace.heads;
    if (trace.d_k > kMaxHeadDim || trace.d_v > kMaxHeadDim) {
        p.error = "the GPU kernels take heads of up to " + std::to_string(kMaxHeadDim) + " columns; this one has d_k = " +
                  std::to_string(trace.d_k) + ", d_v = " + std::to_string(trace.d_v);
        return p;
    }
    if (o.pool_weights) {
        p.grid = pooled_grid(o, n_q, n_k, &p.error);
        if (!p.grid) return p;
    }
    trace.head.resize(static_cast<size_t>(heads));
    for (int h = 0; h < heads; ++h) head_inputs(s, trace, q_all, k_all, v_all, h, trace.head[static_cast<size_t>(h)], false);
    std::vector<const Matrix*> qs, ks, vs;
    for (const HeadTrace& head : trace.head) {
        qs.push_back(&head.q);
        ks.push_back(&head.k);
        vs.push_back(&head.v);
        p.head_constants.push_back(head.alibi_slope);
    }
    for (const HeadTrace& head : trace.head) p.head_constants.push_back(head.sink);  // −∞ without sinks (use_sinks is off)
    p.q = head_major(qs, vec4s(trace.d_k) * 4);
    p.k = head_major(ks, vec4s(trace.d_k) * 4);
    p.v = head_major(vs, vec4s(trace.d_v) * 4);
    const std::vector<bool>& padding_flags = attn::key_padding(s);
    const int words = ceil_div(n_k, 32);
    p.padding_bits.assign(static_cast<size_t>(words), 0u);
    for (int j = 0; j < n_k && j < static_cast<int>(padding_flags.size()); ++j)
        if (padding_flags[static_cast<size_t>(j)]) p.padding_bits[static_cast<size_t>(j >> 5)] |= 1u << (j & 31);
    if (s.mask == MaskKind::Custom) {
        p.custom_bits.assign(static_cast<size_t>(n_q) * static_cast<size_t>(words), 0u);
        for (int i = 0; i < n_q; ++i)
            for (int j = 0; j < n_k; ++j)
                if (s.custom_mask(i, j)) p.custom_bits[static_cast<size_t>(i) * static_cast<size_t>(words) + static_cast<size_t>(j >> 5)] |= 1u << (j & 31);
    }
    p.trace = std::move(trace);
    p.cpu_ms = ms_between(start, Clock::now());
    return p;
}

}  // namespace

// [SECTION] The run's layout and buffers

struct Backend::Impl {
    BackendOptions options;
    DeviceInfo device;
    std::map<std::string, Program> programs;

    // The current run.
    std::shared_ptr<const Scenario> scenario;  // the current run's, shared with its preparation
    RunOptions run_options;
    Trace trace;
    std::optional<PooledGrid> grid;
    bool busy = false, finished = false;
    int n_q = 0, n_k = 0, heads = 0, d_k = 0, d_v = 0, dk4 = 0, dv4 = 0;
    Timings timings;
    Clock::time_point requested;  // when begin() was called: a run's wall time starts there
    std::vector<Submission> log;
    int submissions_made = 0;     // since create() (the injected reset counts them)
    bool context_lost = false;    // once lost, a context never comes back: every later run fails
    bool faults_armed = false;    // the injected faults apply from the end of create(), not to its probe
    double done_flops = 0.0;
    Planner planner;
    Buffer q, k, v, key_padding, custom_mask, head_constants, concat, row_stats, pooled;

    std::vector<GLuint> pass_programs;  // planner's passes in order: each one's program

    std::size_t allocated_bytes() const {
        std::size_t total = 0;
        for (const Buffer* b : {&q, &k, &v, &key_padding, &custom_mask, &head_constants, &concat, &row_stats, &pooled})
            total += b->bytes();
        return total;
    }

    // A program for shader `name` with these #defines, compiled once.
    GLuint program(const char* name, const char* source, const std::string& defines, std::string* error) {
        const std::string key = std::string(name) + "\n" + defines;
        auto found = programs.find(key);
        if (found != programs.end()) return found->second.get();
        Program p = compile(assemble(source, options.extra_defines + defines), name, error);
        if (!p) return 0;
        return programs.emplace(key, std::move(p)).first->second.get();
    }

    GLuint attention_program(std::string* error) {
        const ShaderChoice c = attention_shader(device, dk4, dv4);
        return program(c.name, c.source, c.defines, error);
    }
    GLuint pool_program(std::string* error) {
        const ShaderChoice c = pool_shader(device, dk4);
        return program(c.name, c.source, c.defines, error);
    }

    void fail(const std::string& why) {
        trace.ok = false;
        trace.errors.push_back(why);
        busy = false;
        finished = true;
        planner.clear();
    }

    bool upload(Buffer& buffer, const char* what, std::size_t bytes, const void* data = nullptr) {
        const bool refused = faults_armed && options.max_buffer_bytes > 0 && bytes > options.max_buffer_bytes;  // injected
        if (static_cast<long long>(bytes) > device.max_buffer_bytes) {
            std::ostringstream msg;
            msg << "the GPU buffer for " << what << " needs " << bytes / (1024.0 * 1024.0) << " MiB, more than this GPU's "
                << device.max_buffer_bytes / (1024.0 * 1024.0) << " MiB shader storage block limit: use fewer tokens";
            fail(msg.str());
            return false;
        }
        if (refused || !buffer.allocate(bytes, data)) {
            fail("the GPU could not allocate " + std::to_string(bytes) + " bytes for " + what + " (out of memory)");
            return false;
        }
        return true;
    }

    // The CPU's part of a run, as a job (job.hpp): one at a time. A begin() while one is under
    // way drops it and prepares its own once it has ended (a slider dragged over 65,536 tokens
    // starts no pile of workers).
    compute::Job<Prepared> preparing;
    std::uint64_t request = 0;  // begin()s so far
    void start_preparing() {
        preparing.queue("preparing the GPU run", [shared = scenario, o = run_options, t = trace, id = request](compute::JobProgress&) {
            Prepared p = prepare_run(*shared, o, t);
            p.request = id;
            return p;
        }, compute::UnderWay::cancel);
    }

    void begin(const Scenario& s, const RunOptions& o);
    bool upload_inputs(Prepared& p);
    bool plan_passes(const Scenario& s);
    bool step(double budget_ms);
    void finish();

    bool submit(const Slice& slice);
    bool lost_context();
};

// [SECTION] Submitting: fences, resets, the measured speed

// GL_KHR_robustness (core in 4.5): a context created with a reset notification strategy
// reports a GPU reset (a hang, a driver restart, a removed GPU) here.
bool Backend::Impl::lost_context() {
    if (faults_armed && options.context_reset_after_steps >= 0 && submissions_made > options.context_reset_after_steps)
        context_lost = true;
    if (!context_lost && device.reset_notification) context_lost = glGetGraphicsResetStatus() != GL_NO_ERROR;
    return context_lost;
}

// Dispatches one slice, fences it and waits for it; the time it took updates the speed the
// next slices are planned with.
bool Backend::Impl::submit(const Slice& slice) {
    const Pass pass = planner.pass().pass;
    const GLuint program = pass_programs[static_cast<size_t>(slice.pass)];
    const auto start = Clock::now();
    glUseProgram(program);
    // Bound again at every submission: a window draws between the steps of a chunked run.
    q.bind(0);
    k.bind(1);
    v.bind(2);
    (pass == Pass::Attention ? concat : pooled).bind(3);
    row_stats.bind(4);
    key_padding.bind(5);
    custom_mask.bind(6);
    head_constants.bind(7);
    set_int(program, "key_begin", slice.j0);
    set_int(program, "key_end", slice.j1);
    for (int first = 0; first < slice.tiles; first += kMaxGroupsPerDispatch) {
        set_int(program, "tile_offset", slice.tile0 + first);
        glDispatchCompute(static_cast<GLuint>(std::min(kMaxGroupsPerDispatch, slice.tiles - first)), 1, 1);
    }
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
    GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    glFlush();
    ++submissions_made;
    // Wait in short steps, asking after each whether the context is still there.
    GLenum waited = GL_TIMEOUT_EXPIRED;
    while (waited == GL_TIMEOUT_EXPIRED) {
        waited = glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, 100'000'000);  // 100 ms
        if (waited == GL_TIMEOUT_EXPIRED && (lost_context() || ms_between(start, Clock::now()) > kHangSeconds * 1e3)) break;
    }
    glDeleteSync(fence);
    if (lost_context()) {
        fail(kContextLost);
        return false;
    }
    if (waited != GL_ALREADY_SIGNALED && waited != GL_CONDITION_SATISFIED) {
        std::ostringstream msg;
        msg << "the GPU did not finish a submission planned for " << slice.planned_ms << " ms within " << kHangSeconds
            << " s (a hung GPU)";
        fail(msg.str());
        return false;
    }
    const double measured = ms_between(start, Clock::now()) * options.simulated_slowdown;
    log.push_back(Submission{pass, slice.tiles, slice.j0, slice.j1, slice.flops, slice.planned_ms, measured});
    (pass == Pass::Attention ? timings.attention_ms : timings.pooling_ms) += measured / options.simulated_slowdown;
    done_flops += slice.flops;
    planner.learn(slice, measured, options.submission_bound_ms);
    return true;
}

bool Backend::Impl::step(double budget_ms) {
    if (!busy) return true;
    if (lost_context()) {
        fail(kContextLost);
        return true;
    }
    const auto start = Clock::now();
    while (preparing.running()) {  // the CPU's part first: wait for it within the budget
        if (!std::isfinite(budget_ms)) preparing.wait();
        else if (!preparing.wait_for(std::chrono::duration<double, std::milli>(std::max(0.0, budget_ms - ms_between(start, Clock::now())))))
            return false;
        std::optional<Prepared> taken = preparing.take();
        if (!taken) continue;  // an earlier request's, dropped: this one's has started
        if (taken->request != request) {  // an earlier request's (not superseded by a begin()): this one's now
            start_preparing();
            continue;
        }
        Prepared& p = *taken;
        const auto upload_start = Clock::now();
        if (!upload_inputs(p) || !plan_passes(*scenario)) return true;
        timings.prepare_ms = p.cpu_ms + ms_between(upload_start, Clock::now());  // not the frames it overlapped
        if (planner.done()) {
            finish();
            return true;
        }
    }
    while (!planner.done()) {
        const double remaining = budget_ms - ms_between(start, Clock::now());
        // Each submission within the bound, and within what is left of the caller's budget.
        const Slice slice = planner.next(std::max(0.05, std::min(options.submission_bound_ms, remaining)));
        if (!submit(slice)) return true;
        planner.advance(slice);
        if (ms_between(start, Clock::now()) >= budget_ms) break;
    }
    if (!planner.done()) return false;
    finish();
    return true;
}

// [SECTION] begin(): named stages

void Backend::Impl::begin(const Scenario& s, const RunOptions& o) {
    requested = Clock::now();
    planner.clear();  // first: its passes' mask rule points into the scenario being replaced
    pass_programs.clear();
    scenario = std::make_shared<const Scenario>(s);  // one copy, however long
    run_options = o;
    trace = Trace();
    trace.detail = Detail::OutputOnly;
    trace.backend = "gpu";
    log.clear();
    done_flops = 0.0;
    timings = Timings();
    busy = true;
    finished = false;
    ++request;
    if (lost_context()) return fail(kContextLost);
    trace.errors = validate(s, Detail::OutputOnly);  // at once: it allocates nothing
    if (!trace.errors.empty()) {
        busy = false;
        finished = true;
        return;
    }
    // Stage 1 on a worker: a blocking run waits for it in its first step, a window draws on.
    // One under way for an earlier request is dropped, and this one starts once it has ended.
    start_preparing();
}

// Stage 2, on the GL thread: the prepared Q, K, V, masks and slopes into buffers, and the
// zeroed outputs.
bool Backend::Impl::upload_inputs(Prepared& p) {
    if (!p.error.empty()) {
        fail(p.error);
        return false;
    }
    trace = std::move(p.trace);
    grid = p.grid;
    n_q = trace.n_queries;
    n_k = trace.n_keys;
    heads = trace.heads;
    d_k = trace.d_k;
    d_v = trace.d_v;
    dk4 = vec4s(d_k);
    dv4 = vec4s(d_v);
    const std::size_t f = sizeof(float);
    const std::size_t pooled_bytes = grid ? static_cast<std::size_t>(heads) * grid->bins_rows * grid->bins_cols * f : 16;
    return upload(q, "Q", p.q.size() * f, p.q.data()) && upload(k, "K", p.k.size() * f, p.k.data()) &&
           upload(v, "V", p.v.size() * f, p.v.data()) &&
           upload(key_padding, "padding mask", p.padding_bits.size() * sizeof(GLuint), p.padding_bits.data()) &&
           upload(custom_mask, "custom mask", p.custom_bits.size() * sizeof(GLuint), p.custom_bits.empty() ? nullptr : p.custom_bits.data()) &&
           upload(head_constants, "ALiBi slopes and sink logits", p.head_constants.size() * f, p.head_constants.data()) &&
           upload(concat, "concat", static_cast<std::size_t>(n_q) * heads * d_v * f) &&
           upload(row_stats, "row max and sum", static_cast<std::size_t>(heads) * n_q * 2 * f) &&
           upload(pooled, "heatmap", pooled_bytes);
}

// Stage 3: the programs, their uniforms, and the two passes with their work per tile.
bool Backend::Impl::plan_passes(const Scenario& s) {
    std::string error;
    const GLuint attention = attention_program(&error);
    const GLuint pool = attention ? pool_program(&error) : 0;
    if (!attention || !pool) {
        fail(error);
        return false;
    }
    static_assert(static_cast<int>(MaskKind::None) == 0 && static_cast<int>(MaskKind::Causal) == 1 &&
                      static_cast<int>(MaskKind::Padding) == 2 && static_cast<int>(MaskKind::SlidingWindow) == 3 &&
                      static_cast<int>(MaskKind::Custom) == 4 && static_cast<int>(MaskKind::Chunked) == 5 &&
                      static_cast<int>(MaskKind::Band) == 6,
                  "scores.glsl's MASK_* numbers follow MaskKind");
    const bool fill_minus_inf = std::isinf(s.masked_fill) && s.masked_fill < 0;
    const bool run_mask = fill_minus_inf && (s.mask == MaskKind::Causal || s.mask == MaskKind::SlidingWindow || s.mask == MaskKind::Chunked);
    const bool reverse = run_mask && s.mask == MaskKind::Causal;  // the longest rows first
    const MaskRule rule = mask_rule(*scenario, n_k);  // points into this run's copy of the scenario

    const int blocks = ceil_div(n_q, kQueryBlock);
    for (GLuint p : {attention, pool}) {
        set_int(p, "n_q", n_q);
        set_int(p, "n_k", n_k);
        set_int(p, "heads", heads);
        set_int(p, "mask_kind", static_cast<int>(s.mask));
        set_int(p, "window", s.window);
        set_int(p, "chunk", std::max(s.chunk, 1));
        set_int(p, "custom_words", ceil_div(n_k, 32));
        set_float(p, "scale", trace.scale);
        set_float(p, "softcap", s.softcap);
        set_float(p, "masked_fill", s.masked_fill);
        set_int(p, "fill_is_minus_inf", fill_minus_inf);
        set_int(p, "naive_softmax", s.softmax == SoftmaxKind::Naive);
        set_int(p, "use_alibi", s.positional == PositionalEncoding::ALiBi);
        set_int(p, "use_sinks", s.sinks.size() != 0);
        set_int(p, "reverse_blocks", reverse);
    }
    set_int(attention, "d_v", d_v);
    set_int(attention, "blocks", blocks);

    std::vector<PassPlan> passes;
    // q·k and p·v for each (row, key) of a tile; the heatmap only q·k.
    passes.push_back(tile_pass(TileGrid{Pass::Attention, 0, n_q, kQueryBlock, heads, 0, n_k, 64, 2.0 * (d_k + d_v)}, rule,
                               run_mask, reverse));
    pass_programs.push_back(attention);

    if (grid) {
        const PooledGrid g = *grid;
        set_int(pool, "row_begin", g.row_begin);
        set_int(pool, "row_end", g.row_end);
        set_int(pool, "col_begin", g.col_begin);
        set_int(pool, "col_end", g.col_end);
        set_int(pool, "bins_rows", g.bins_rows);
        set_int(pool, "bins_cols", g.bins_cols);
        const int row_blocks = ceil_div(g.row_end - g.row_begin, kPoolRows);
        set_int(pool, "blocks", row_blocks);
        passes.push_back(tile_pass(TileGrid{Pass::Pooling, g.row_begin, g.row_end, kPoolRows, heads, g.col_begin, g.col_end,
                                            pool_shader(device, dk4).key_step, 2.0 * d_k},
                                   rule, run_mask, reverse));
        pass_programs.push_back(pool);
    }
    planner.start(std::move(passes));
    return true;
}

// [SECTION] Reading back and finishing

void Backend::Impl::finish() {
    const auto start = Clock::now();
    busy = false;
    finished = true;
    planner.clear();
    const GLenum gl_error = glGetError();
    if (gl_error != GL_NO_ERROR) {
        std::ostringstream msg;
        msg << "the GPU run failed with OpenGL error 0x" << std::hex << gl_error;
        return fail(msg.str());
    }
    Trace& t = trace;
    t.concat.resize(n_q, static_cast<Eigen::Index>(heads) * d_v);
    concat.read(t.concat.data(), static_cast<std::size_t>(t.concat.size()) * sizeof(float));
    Matrix all_pooled(grid ? static_cast<Eigen::Index>(heads) * grid->bins_rows : 0, grid ? grid->bins_cols : 0);
    if (grid) pooled.read(all_pooled.data(), static_cast<std::size_t>(all_pooled.size()) * sizeof(float));
    // Each row's (m_i, l_i), (heads × n_q) pairs: what a zoom draws another region from
    // (repool_weights), as from a CPU run's.
    std::vector<float> stats(2 * static_cast<size_t>(heads) * static_cast<size_t>(n_q));
    row_stats.read(stats.data(), stats.size() * sizeof(float));
    if (lost_context()) return fail(kContextLost);  // what was read may be garbage
    for (int h = 0; h < heads; ++h) {
        HeadTrace& head = t.head[static_cast<size_t>(h)];
        head.output = t.concat.middleCols(static_cast<Eigen::Index>(h) * d_v, d_v);
        head.row_max.resize(n_q);
        head.row_sum.resize(n_q);
        for (int i = 0; i < n_q; ++i) {
            const size_t at = 2 * (static_cast<size_t>(h) * static_cast<size_t>(n_q) + static_cast<size_t>(i));
            head.row_max(i) = stats[at];
            head.row_sum(i) = stats[at + 1];
        }
        if (grid) {
            head.pooled_weights.values = all_pooled.middleRows(static_cast<Eigen::Index>(h) * grid->bins_rows, grid->bins_rows);
            head.pooled_weights.row_begin = grid->row_begin;
            head.pooled_weights.row_end = grid->row_end;
            head.pooled_weights.col_begin = grid->col_begin;
            head.pooled_weights.col_end = grid->col_end;
        }
    }
    finish_trace(*scenario, t);  // W_O, fully masked rows, the overflow rule, warnings, the block
    const auto done = Clock::now();
    timings.finish_ms = ms_between(start, done);
    // The wall time from the request: a stepped run's frames in between included, so the
    // status bar and the trace never report less than the run took.
    timings.wall_ms = ms_between(requested, done);
    t.milliseconds = timings.wall_ms;
}

// [SECTION] create(): the device, the kernel, the probe

namespace {

// A scenario that exercises every part of a kernel in little time: partial blocks, two
// heads, a causal mask with ALiBi, d_v ≠ d_k.
Scenario probe_scenario(int n, int heads, int d_k, bool masked) {
    Scenario s;
    s.input = InputMode::Direct;
    s.heads = heads;
    s.q = normal_matrix(n, heads * d_k, 101);
    s.k = normal_matrix(n + 7, heads * d_k, 102);
    s.v = normal_matrix(n + 7, heads * (d_k + 4), 103);
    if (masked) {
        s.mask = MaskKind::Causal;
        s.positional = PositionalEncoding::ALiBi;
    }
    return s;
}

float max_difference(const Matrix& a, const Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return std::numeric_limits<float>::infinity();
    if (!a.allFinite() || !b.allFinite()) return std::numeric_limits<float>::infinity();
    return a.size() == 0 ? 0.0f : (a - b).cwiseAbs().maxCoeff();
}

}  // namespace

Backend::Backend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Backend::~Backend() {
    glUseProgram(0);  // a program deleted while current stays bound: whoever restores it next gets GL_INVALID_VALUE
}

std::unique_ptr<Backend> Backend::create(std::string* why_not, const BackendOptions& options) {
    std::string ignored;
    std::string& why = why_not ? *why_not : ignored;
    const int version = epoxy_gl_version();
    if (version == 0) {
        why = "no current OpenGL context";
        return nullptr;
    }
    if (!epoxy_is_desktop_gl() || version < 43) {
        why = "compute shaders need OpenGL 4.3; this context is " + std::string(epoxy_is_desktop_gl() ? "" : "OpenGL ES ") +
              std::to_string(version / 10) + "." + std::to_string(version % 10);
        return nullptr;
    }
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    DeviceInfo& d = impl->device;
    auto gl_string = [](GLenum name) {
        const GLubyte* text = glGetString(name);
        return text ? std::string(reinterpret_cast<const char*>(text)) : std::string();
    };
    d.renderer = gl_string(GL_RENDERER);
    d.vendor = gl_string(GL_VENDOR);
    d.version = gl_string(GL_VERSION);
    d.software = d.renderer.find("llvmpipe") != std::string::npos || d.renderer.find("softpipe") != std::string::npos ||
                 d.renderer.find("SwiftShader") != std::string::npos;
    d.reset_notification = current_context_reports_resets();
    GLint value = 0;
    glGetIntegerv(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE, &value);
    d.max_shared_bytes = value;
    GLint64 block_bytes = 0;
    glGetInteger64v(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &block_bytes);
    d.max_buffer_bytes = block_bytes;
    if (!d.software && !d.reset_notification) {
        // Without it, a reset (a watchdog, a driver restart) would leave the buffers holding
        // garbage that reads back as plausible numbers.
        why = "this OpenGL context cannot report a GPU reset (no reset notification), so a reset could go unseen";
        return nullptr;
    }
    // A software renderer runs one workgroup per CPU thread; a GPU keeps about a thousand
    // resident (an H100: 132 SMs × up to 8 of these 256-invocation groups), so 2048 fill it
    // about twice over.
    impl->planner = Planner(d.software ? static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 32u)) : 2048);

    // The variants to try. Each must compile and agree with the CPU engine on a probe; then
    // one larger run times it. A software renderer keeps the first that agrees (the rows
    // kernel suits it); a GPU keeps the fastest.
    GLint subgroup_features = 0;
    if (epoxy_has_gl_extension("GL_KHR_shader_subgroup")) {
        GLint size = 0, stages = 0;
        glGetIntegerv(GL_SUBGROUP_SIZE_KHR, &size);
        glGetIntegerv(GL_SUBGROUP_SUPPORTED_STAGES_KHR, &stages);
        if (size >= 16 && (stages & GL_COMPUTE_SHADER_BIT)) glGetIntegerv(GL_SUBGROUP_SUPPORTED_FEATURES_KHR, &subgroup_features);
    }
    const bool clustered = options.allow_subgroups && (subgroup_features & GL_SUBGROUP_FEATURE_CLUSTERED_BIT_KHR);
    const bool shuffles = clustered && (subgroup_features & GL_SUBGROUP_FEATURE_SHUFFLE_BIT_KHR);
    struct Candidate {
        Kernel kernel;
        bool subgroups, shuffle;
    };
    std::vector<Candidate> candidates;
    const bool time_all = !d.software || options.time_every_variant;
    const bool tiled_first = options.kernel == Kernel::Tiled || (options.kernel == Kernel::Auto && time_all);
    if (tiled_first) {
        if (shuffles) candidates.push_back({Kernel::Tiled, true, true});
        if (clustered) candidates.push_back({Kernel::Tiled, true, false});
        candidates.push_back({Kernel::Tiled, false, false});
    }
    if (options.kernel != Kernel::Tiled) candidates.push_back({Kernel::Rows, false, false});

    const Scenario check = probe_scenario(100, 2, 12, true);
    const Trace expected = attn::run(check);
    const int fill_tiles = impl->planner.fill_tiles();
    std::string reasons;
    std::optional<Candidate> best;
    double best_gflops = -1.0, best_difference = 0.0;
    Planner best_planner;
    for (const Candidate& c : candidates) {
        d.kernel = c.kernel;
        d.subgroups = c.subgroups;
        d.shuffle = c.shuffle;
        const std::string label = kernel_label(d);
        auto refuse = [&](const std::string& why_refused) {
            reasons += (reasons.empty() ? "" : "; ") + label + ": " + why_refused;
            d.variants_tried.push_back(label + ": " + why_refused);
        };
        const int dv = 16;  // the probe's d_v rounds to the same number of vec4s
        if (c.kernel == Kernel::Tiled && tiled_shared_bytes(vec4s(dv), tiled_value_chunk(vec4s(dv)), d) > d.max_shared_bytes) {
            refuse("needs more shared memory than the device has");
            continue;
        }
        impl->planner = Planner(fill_tiles);  // this variant's speeds, from its own runs
        Backend attempt(std::move(impl));
        RunOptions probe_options{Detail::OutputOnly};
        const Trace got = attempt.run(check, probe_options);
        impl = std::move(attempt.impl_);
        if (!got.ok) {
            refuse(got.errors.empty() ? std::string("failed") : got.errors.front());
            if (impl->context_lost) break;
            continue;
        }
        float worst = max_difference(got.output, expected.output);
        for (size_t h = 0; h < got.head.size(); ++h) {
            const auto& pooled = got.head[h].pooled_weights;
            const PooledWeights reference = max_pool(expected.head[h].weights, 0, expected.n_queries, 0, expected.n_keys,
                                                     static_cast<int>(pooled.values.rows()), static_cast<int>(pooled.values.cols()));
            worst = std::max(worst, max_difference(pooled.values, reference.values) * 10.0f);  // 1e-5 against 1e-4
        }
        if (worst > 1e-4f) {
            std::ostringstream msg;
            msg << "its results disagree with the CPU engine (max |GPU − CPU| = " << worst << ")";
            refuse(msg.str());
            continue;
        }
        // Throughput: one larger run, timed per submission.
        d.probe_tokens = d.software ? 384 : 4096;
        const Scenario speed = probe_scenario(d.probe_tokens, 4, 64, false);
        RunOptions speed_options{Detail::OutputOnly};
        speed_options.pool_weights = false;
        Backend timed(std::move(impl));
        const Trace timed_trace = timed.run(speed, speed_options);
        impl = std::move(timed.impl_);
        if (!timed_trace.ok) {
            refuse(timed_trace.errors.front());
            if (impl->context_lost) break;
            continue;
        }
        double flops = 0.0;
        for (const Submission& sub : impl->log) flops += sub.flops;
        const double gflops = impl->timings.attention_ms > 0 ? flops / (impl->timings.attention_ms * 1e6) : 0.0;
        std::ostringstream said;
        said << label << ": " << std::fixed << std::setprecision(1) << gflops << " GFLOP/s";
        d.variants_tried.push_back(said.str());
        if (gflops > best_gflops) {
            best = c;
            best_gflops = gflops;
            best_difference = worst;
            best_planner = impl->planner;
        }
        if (!time_all) break;
    }
    if (best && !impl->context_lost) {
        d.kernel = best->kernel;
        d.subgroups = best->subgroups;
        d.shuffle = best->shuffle;
        d.probe_gflops = best_gflops;
        d.probe_max_difference = best_difference;
        impl->planner = best_planner;
        // The heatmap pass starts from the slower of its own probe (the small check run) and
        // the attention pass's timed one: an exp and a compare per cell besides its q·k.
        Speed& pooling = impl->planner.speed[1];
        const Speed& attention = impl->planner.speed[0];
        pooling.device_ms_per_flop = std::max(pooling.device_ms_per_flop, attention.device_ms_per_flop);
        pooling.tile_ms_per_flop = std::max(pooling.tile_ms_per_flop, attention.tile_ms_per_flop);
        impl->submissions_made = 0;
        impl->faults_armed = true;
        return std::unique_ptr<Backend>(new Backend(std::move(impl)));
    }
    why = "no GPU kernel could be used: " + reasons;
    return nullptr;
}

// [SECTION] Backend

Trace Backend::run(const Scenario& scenario, const RunOptions& options) {
    begin(scenario, options);
    while (!step(std::numeric_limits<double>::infinity())) {
    }
    return take();
}

void Backend::begin(const Scenario& scenario, const RunOptions& options) { impl_->begin(scenario, options); }
bool Backend::step(double budget_ms) { return impl_->step(budget_ms); }
bool Backend::busy() const { return impl_->busy; }

float Backend::progress() const {
    if (impl_->finished) return 1.0f;
    const double planned = impl_->planner.planned_flops();
    if (planned <= 0.0) return 0.0f;
    return static_cast<float>(std::min(1.0, impl_->done_flops / planned));
}

Trace Backend::take() {
    if (!impl_->finished) {
        Trace t;
        t.detail = Detail::OutputOnly;
        t.backend = "gpu";
        t.errors.push_back(impl_->busy ? "the GPU run is not finished yet" : "no GPU run was begun");
        return t;
    }
    impl_->finished = false;
    return std::move(impl_->trace);
}

std::vector<ShaderVariant> shader_variants() {
    std::vector<ShaderVariant> out;
    DeviceInfo d;
    d.max_shared_bytes = 32768;  // the least GL 4.3 offers
    const std::pair<Kernel, int> kernels[] = {{Kernel::Rows, 0}, {Kernel::Tiled, 0}, {Kernel::Tiled, 1}, {Kernel::Tiled, 2}};
    for (const auto& [kernel, subgroup_level] : kernels) {
        d.kernel = kernel;
        d.subgroups = subgroup_level >= 1;
        d.shuffle = subgroup_level >= 2;
        for (const int dk4 : {1, 3, 16, 32, 128})
            for (const int dv4 : {1, 16, 33, 128}) {
                const std::string widths = " (d_k " + std::to_string(4 * dk4) + ", d_v " + std::to_string(4 * dv4) + ")";
                const ShaderChoice c = attention_shader(d, dk4, dv4);
                out.push_back({std::string(c.name) + ", " + kernel_label(d) + widths, assemble(c.source, c.defines)});
            }
        if (subgroup_level == 0)
            for (const int dk4 : {1, 16, 128}) {
                const ShaderChoice c = pool_shader(d, dk4);
                out.push_back({std::string(c.name) + " (d_k " + std::to_string(4 * dk4) + ")", assemble(c.source, c.defines)});
            }
    }
    return out;
}

const DeviceInfo& Backend::device() const { return impl_->device; }
std::size_t Backend::allocated_bytes() const { return impl_->allocated_bytes(); }
const Timings& Backend::timings() const { return impl_->timings; }
const std::vector<Submission>& Backend::submissions() const { return impl_->log; }

}  // namespace attn::gpu
