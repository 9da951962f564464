// The GPU backend's host side: prepares the inputs with core's functions, uploads them,
// dispatches the compute shaders in budgeted slices and reads back O(n·d) results.
//
// [SECTION] GL helpers: buffers, shader variants
// [SECTION] CPU-side preparation (mirrors core/engine.cpp's run())
// [SECTION] The run: buffers and the plan of dispatches
// [SECTION] Stepping, timing, reading back
// [SECTION] Backend
#include "gpu/backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

#include "gpu/gl_objects.hpp"
#include "gpu/shader_sources.hpp"
#include "positional.hpp"

namespace attn::gpu {

constexpr const char* kContextLost = "the GPU context was lost (a GPU reset): its buffers and shaders are gone";

// [SECTION] GL helpers: buffers, shader variants

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

constexpr int kMatmulBlock = 64;  // BLOCK of matmul.comp: rows and columns of C per workgroup
constexpr int kQueryBlock = 64;   // BQ of attention.comp (its default): query rows per workgroup
constexpr int kPoolRows = 64;     // PQ of pool.comp: region rows per workgroup
constexpr int kRopeGroup = 64;    // rope.comp's local size
constexpr int kMaxHeadDim = 512;  // d_k, d_v: beyond this the per-invocation registers get silly
constexpr double kItemFlops = 1 << 27;  // aim of one dispatch's work, so step() can keep to a budget
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// source's #version line, then the variant's #defines, then (for the attention shaders) the
// shared scores.glsl, then the rest of source; #line keeps info-log line numbers true to
// the files (string 0 = the .comp file, 1 = scores.glsl).
std::string assemble(const char* source, const std::string& defines, bool with_scores) {
    const std::string text = source;
    const auto end_of_version = text.find('\n');
    std::string out = text.substr(0, end_of_version + 1) + defines;
    if (with_scores) out += "#line 1 1\n" + std::string(shader_source::scores);
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

int vec4s(int columns) { return (columns + 3) / 4; }
int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// [SECTION] CPU-side preparation (mirrors core/engine.cpp's run())

// labels_or_numbers, note_non_finite and run_block come from core (engine.hpp), shared
// with the CPU engine.

// (heads × n × stride) head-major, zero-padded, from (n × heads·d) row-major.
std::vector<float> head_major(const Matrix& all, int heads, int d, int stride) {
    const int n = static_cast<int>(all.rows());
    std::vector<float> out(static_cast<size_t>(heads) * n * stride, 0.0f);
    for (int h = 0; h < heads; ++h)
        for (int i = 0; i < n; ++i)
            for (int t = 0; t < d; ++t) out[(static_cast<size_t>(h) * n + i) * stride + t] = all(i, h * d + t);
    return out;
}

// Head h's (n × d) slice of a head-major padded buffer.
Matrix head_slice(const std::vector<float>& data, int h, int n, int d, int stride) {
    Matrix m(n, d);
    for (int i = 0; i < n; ++i)
        for (int t = 0; t < d; ++t) m(i, t) = data[(static_cast<size_t>(h) * n + i) * stride + t];
    return m;
}

enum class Stage { Projection, Attention, Pooling, Output };

struct WorkItem {
    Stage stage;
    double flops;
    std::function<void()> dispatch;
};

}  // namespace

// [SECTION] The run: buffers and the plan of dispatches

struct Backend::Impl {
    BackendOptions options;
    GLint max_block_bytes = 0;
    GLint max_shared_bytes = 0;
    std::map<std::string, Program> programs;

    // The current run.
    Scenario scenario;
    RunOptions run_options;
    Trace trace;
    bool busy = false, finished = false;
    int n_q = 0, n_k = 0, heads = 0, d_k = 0, d_v = 0, dk4 = 0, dv4 = 0, d_model = 0;
    int bins_rows = 0, bins_cols = 0;
    int row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
    bool has_w_o = false;
    std::vector<WorkItem> plan;
    size_t next_item = 0;
    int steps_taken = 0;        // step() calls over the backend's life (the injected reset counts them)
    bool reports_resets = false;  // GL 4.5 or GL_KHR_robustness: glGetGraphicsResetStatus answers
    bool context_lost = false;  // once lost, a context never comes back: every later run fails
    double planned_flops = 0.0, done_flops = 0.0;
    double ms_per_flop = 1e-7;  // first guess (~10 GFLOP/s), then measured
    Timings timings, wall_timings;

    Buffer x_queries, x_keys, w_q, w_k, w_v, w_o;  // embedding mode inputs
    Buffer q, k, v;                                 // (heads × n × d4) head-major, padded
    Buffer rope_angles, key_padding, custom_mask, alibi_slopes;
    Buffer concat, row_stats, pooled, output;

    // A program for shader `name` with these #defines, compiled once.
    GLuint program(const char* name, const char* source, bool with_scores, const std::string& defines,
                   std::string* error) {
        const std::string key = std::string(name) + "\n" + defines;
        auto found = programs.find(key);
        if (found != programs.end()) return found->second.get();
        Program p = compile(assemble(source, options.extra_defines + defines, with_scores), name, error);
        if (!p) return 0;
        return programs.emplace(key, std::move(p)).first->second.get();
    }

    int key_block(int k4, int v4) const {
        int bk = 32;
        while (bk > 4 && static_cast<long long>(bk) * (k4 + v4) * 16 + 64 > max_shared_bytes) bk /= 2;
        return bk;
    }
    std::string attention_defines(int k4, int v4) const {
        return "#define DK4 " + std::to_string(k4) + "\n#define DV4 " + std::to_string(v4) + "\n#define BK " +
               std::to_string(key_block(k4, v4)) + "\n";
    }
    static std::string pool_defines(int k4) { return "#define DK4 " + std::to_string(k4) + "\n#define BK 32\n"; }

    std::size_t allocated_bytes() const {
        std::size_t total = 0;
        for (const Buffer* b : {&x_queries, &x_keys, &w_q, &w_k, &w_v, &w_o, &q, &k, &v, &rope_angles, &key_padding,
                                &custom_mask, &alibi_slopes, &concat, &row_stats, &pooled, &output})
            total += b->bytes();
        return total;
    }

    void fail(const std::string& why) {
        trace.ok = false;
        trace.errors.push_back(why);
        busy = false;
        finished = true;
        plan.clear();
    }

    bool upload(Buffer& buffer, const char* what, std::size_t bytes, const void* data = nullptr) {
        const bool refused = options.max_buffer_bytes > 0 && bytes > options.max_buffer_bytes;  // an injected allocation failure
        if (bytes > static_cast<std::size_t>(max_block_bytes)) {
            std::ostringstream msg;
            msg << "the GPU buffer for " << what << " needs " << bytes / (1024.0 * 1024.0) << " MiB, more than this GPU's "
                << max_block_bytes / (1024.0 * 1024.0) << " MiB shader storage block limit: use fewer tokens";
            fail(msg.str());
            return false;
        }
        if (refused || !buffer.allocate(bytes, data)) {
            fail("the GPU could not allocate " + std::to_string(bytes) + " bytes for " + what + " (out of memory)");
            return false;
        }
        return true;
    }

    void begin(const Scenario& s, const RunOptions& o);
    bool prepare_inputs(const Scenario& s, Matrix& q_all, Matrix& k_all, Matrix& v_all);
    void plan_projection(const Buffer& x, int rows, const Buffer& w, Buffer& target, int head_dim, int stride);
    void plan_rope(Buffer& target, int n);
    bool step(double budget_ms);
    bool lost_context();
    void finish();
};

bool Backend::Impl::prepare_inputs(const Scenario& s, Matrix& q_all, Matrix& k_all, Matrix& v_all) {
    Trace& t = trace;
    // The same preparation as the CPU engine; embedding-mode projections run on the device.
    if (s.input == InputMode::Embeddings) attn::prepare_inputs(s, t, nullptr, nullptr, nullptr);
    else attn::prepare_inputs(s, t, &q_all, &k_all, &v_all);
    if (t.d_k > kMaxHeadDim || t.d_v > kMaxHeadDim) {
        fail("the GPU path handles head dimensions up to " + std::to_string(kMaxHeadDim) + " (d_k = " +
             std::to_string(t.d_k) + ", d_v = " + std::to_string(t.d_v) + "): use more heads or the CPU engine");
        return false;
    }
    return true;
}

// target (heads × rows × stride) ← x (rows × d_model) · w (d_model × d_model), row slices.
void Backend::Impl::plan_projection(const Buffer& x, int rows, const Buffer& w, Buffer& target, int head_dim,
                                    int stride) {
    std::string error;
    const GLuint p = program("matmul", shader_source::matmul, false, "", &error);
    const int n = d_model, depth = d_model;
    const double row_flops = 2.0 * n * depth;
    const int slice = std::max(kMatmulBlock, static_cast<int>(kItemFlops / row_flops) / kMatmulBlock * kMatmulBlock);
    for (int r0 = 0; r0 < rows; r0 += slice) {
        const int slice_rows = std::min(slice, rows - r0);
        plan.push_back({Stage::Projection, row_flops * slice_rows, [=, &x, &w, &target] {
                            glUseProgram(p);
                            set_int(p, "M", rows);
                            set_int(p, "N", n);
                            set_int(p, "K", depth);
                            set_int(p, "head_cols", head_dim);
                            set_int(p, "head_stride", stride);
                            set_int(p, "row_offset", r0);
                            x.bind(0);
                            w.bind(1);
                            target.bind(2);
                            glDispatchCompute(ceil_div(n, kMatmulBlock), ceil_div(slice_rows, kMatmulBlock), 1);
                            glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
                        }});
    }
}

void Backend::Impl::plan_rope(Buffer& target, int n) {
    std::string error;
    const GLuint p = program("rope", shader_source::rope, false, "", &error);
    const int pairs = d_k / 2;
    if (pairs == 0) return;
    const long long count = static_cast<long long>(n) * pairs;
    plan.push_back({Stage::Projection, 6.0 * count * heads, [=, &target] {
                        glUseProgram(p);
                        set_int(p, "n", n);
                        set_int(p, "pairs", pairs);
                        set_int(p, "stride", dk4 * 4);
                        target.bind(0);
                        rope_angles.bind(1);
                        // Workgroup counts stop at 65535 per dimension: offset larger runs.
                        for (long long first = 0; first < count; first += 65535LL * kRopeGroup) {
                            set_int(p, "index_offset", static_cast<int>(first));
                            glDispatchCompute(ceil_div(std::min<long long>(count - first, 65535LL * kRopeGroup), kRopeGroup),
                                              heads, 1);
                        }
                        glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
                    }});
}

void Backend::Impl::begin(const Scenario& s, const RunOptions& o) {
    scenario = s;
    run_options = o;
    trace = Trace();
    trace.detail = Detail::OutputOnly;
    trace.backend = "gpu";
    plan.clear();
    next_item = 0;
    planned_flops = done_flops = 0.0;
    timings = Timings();
    wall_timings = Timings();
    busy = true;
    finished = false;

    trace.errors = validate(s, Detail::OutputOnly);
    if (!trace.errors.empty()) {
        busy = false;
        finished = true;
        return;
    }
    if (lost_context()) return fail(kContextLost);

    Matrix q_all, k_all, v_all;
    if (!prepare_inputs(s, q_all, k_all, v_all)) return;
    const Trace& t = trace;
    n_q = t.n_queries;
    n_k = t.n_keys;
    heads = t.heads;
    d_k = t.d_k;
    d_v = t.d_v;
    dk4 = vec4s(d_k);
    dv4 = vec4s(d_v);
    d_model = t.d_model;
    has_w_o = t.w_o.size() != 0;

    // The heatmap's region and grid (RunOptions: 0 → the whole matrix, min(n, 512) bins),
    // bins clamped to [1, region length] as core's pooled_weights does.
    row_begin = o.region_row_begin;
    row_end = o.region_row_end > 0 ? o.region_row_end : n_q;
    col_begin = o.region_col_begin;
    col_end = o.region_col_end > 0 ? o.region_col_end : n_k;
    if (row_begin < 0 || row_begin >= row_end || row_end > n_q || col_begin < 0 || col_begin >= col_end ||
        col_end > n_k) {
        std::ostringstream msg;
        msg << "the heatmap region rows [" << row_begin << ", " << row_end << ") × keys [" << col_begin << ", "
            << col_end << ") is not inside the " << n_q << "×" << n_k << " weights";
        return fail(msg.str());
    }
    bins_rows = std::max(1, std::min(o.pooled_rows > 0 ? o.pooled_rows : std::min(n_q, 512), row_end - row_begin));
    bins_cols = std::max(1, std::min(o.pooled_cols > 0 ? o.pooled_cols : std::min(n_k, 512), col_end - col_begin));

    std::string error;
    const GLuint attention = program("attention", shader_source::attention, true, attention_defines(dk4, dv4), &error);
    const GLuint pool = attention ? program("pool", shader_source::pool, true, pool_defines(dk4), &error) : 0;
    if (!attention || !pool) return fail(error);

    // Inputs: Q, K, V (head-major, padded to vec4) from the projections or as given.
    const std::size_t f = sizeof(float);
    const std::size_t q_bytes = static_cast<std::size_t>(heads) * n_q * dk4 * 4 * f;
    const std::size_t k_bytes = static_cast<std::size_t>(heads) * n_k * dk4 * 4 * f;
    const std::size_t v_bytes = static_cast<std::size_t>(heads) * n_k * dv4 * 4 * f;
    if (s.input == InputMode::Embeddings) {
        const bool cross = s.attention == AttentionKind::Cross;
        const Matrix& keys_from = cross ? t.source_x_pe : t.x_pe;
        const std::size_t w_bytes = static_cast<std::size_t>(d_model) * d_model * f;
        if (!upload(x_queries, "X+PE", t.x_pe.size() * f, t.x_pe.data()) ||
            !upload(x_keys, "source X+PE", cross ? keys_from.size() * f : 16, cross ? keys_from.data() : nullptr) ||
            !upload(w_q, "W_Q", w_bytes, t.w_q.data()) || !upload(w_k, "W_K", w_bytes, t.w_k.data()) ||
            !upload(w_v, "W_V", w_bytes, t.w_v.data()) || !upload(q, "Q", q_bytes) || !upload(k, "K", k_bytes) ||
            !upload(v, "V", v_bytes))
            return;
        const Buffer& keys_buffer = cross ? x_keys : x_queries;
        plan_projection(x_queries, n_q, w_q, q, d_k, dk4 * 4);  // (n_q, d_model)·(d_model, h·d_k)
        plan_projection(keys_buffer, n_k, w_k, k, d_k, dk4 * 4);
        plan_projection(keys_buffer, n_k, w_v, v, d_v, dv4 * 4);
    } else {
        const auto qh = head_major(q_all, heads, d_k, dk4 * 4);
        const auto kh = head_major(k_all, heads, d_k, dk4 * 4);
        const auto vh = head_major(v_all, heads, d_v, dv4 * 4);
        if (!upload(x_queries, "X", 16) || !upload(x_keys, "source X", 16) || !upload(w_q, "W_Q", 16) ||
            !upload(w_k, "W_K", 16) || !upload(w_v, "W_V", 16) || !upload(q, "Q", q_bytes, qh.data()) ||
            !upload(k, "K", k_bytes, kh.data()) || !upload(v, "V", v_bytes, vh.data()))
            return;
    }

    // RoPE: (cos, sin) of p·10000^(−2i/d_k) in double, as core's apply_rotary.
    const int pairs = d_k / 2;
    std::vector<float> angles;
    if (s.positional == PositionalEncoding::Rotary) {
        const int n = std::max(n_q, n_k);
        angles.resize(static_cast<size_t>(n) * pairs * 2);
        for (int i = 0; i < pairs; ++i) {
            const double frequency = std::pow(10000.0, -static_cast<double>(2 * i) / d_k);
            for (int p = 0; p < n; ++p) {
                const double angle = p * frequency;
                angles[(static_cast<size_t>(p) * pairs + i) * 2] = static_cast<float>(std::cos(angle));
                angles[(static_cast<size_t>(p) * pairs + i) * 2 + 1] = static_cast<float>(std::sin(angle));
            }
        }
    }
    if (!upload(rope_angles, "RoPE angles", angles.size() * f, angles.empty() ? nullptr : angles.data())) return;
    if (s.positional == PositionalEncoding::Rotary) {
        plan_rope(q, n_q);
        plan_rope(k, n_k);
    }

    // Masks as bits: padding one bit per key (1 = padding), custom (n_q × ⌈n_k/32⌉) words (1 = visible).
    const std::vector<bool>& padding_flags =
        s.input == InputMode::Embeddings && s.attention == AttentionKind::Cross ? s.source.padding : s.target.padding;
    const int words = ceil_div(n_k, 32);
    std::vector<GLuint> padding_bits(static_cast<size_t>(words), 0u);
    for (int j = 0; j < n_k && j < static_cast<int>(padding_flags.size()); ++j)
        if (padding_flags[static_cast<size_t>(j)]) padding_bits[static_cast<size_t>(j >> 5)] |= 1u << (j & 31);
    std::vector<GLuint> custom_bits;
    if (s.mask == MaskKind::Custom) {
        custom_bits.assign(static_cast<size_t>(n_q) * words, 0u);
        for (int i = 0; i < n_q; ++i)
            for (int j = 0; j < n_k; ++j)
                if (s.custom_mask(i, j)) custom_bits[static_cast<size_t>(i) * words + (j >> 5)] |= 1u << (j & 31);
    }
    std::vector<float> slopes(static_cast<size_t>(heads), 0.0f);
    if (s.positional == PositionalEncoding::ALiBi)
        for (int h = 0; h < heads; ++h) slopes[static_cast<size_t>(h)] = alibi_slope(h, heads);
    if (!upload(key_padding, "padding mask", padding_bits.size() * sizeof(GLuint), padding_bits.data()) ||
        !upload(custom_mask, "custom mask", custom_bits.size() * sizeof(GLuint),
                custom_bits.empty() ? nullptr : custom_bits.data()) ||
        !upload(alibi_slopes, "ALiBi slopes", slopes.size() * f, slopes.data()) ||
        !upload(concat, "concat", static_cast<std::size_t>(n_q) * heads * d_v * f) ||
        !upload(row_stats, "row max and sum", static_cast<std::size_t>(heads) * n_q * 2 * f) ||
        !upload(pooled, "heatmap", o.pool_weights ? static_cast<std::size_t>(heads) * bins_rows * bins_cols * f : 16) ||
        !upload(output, "output", has_w_o ? static_cast<std::size_t>(n_q) * t.w_o.cols() * f : 16) ||
        !upload(w_o, "W_O", has_w_o ? t.w_o.size() * f : 16, has_w_o ? t.w_o.data() : nullptr))
        return;

    // The uniforms scores.glsl shares between the attention and the pooling shader.
    const bool alibi = s.positional == PositionalEncoding::ALiBi;
    const bool fill_minus_inf = std::isinf(s.masked_fill) && s.masked_fill < 0;
    for (GLuint p : {attention, pool}) {
        set_int(p, "n_q", n_q);
        set_int(p, "n_k", n_k);
        set_int(p, "heads", heads);
        set_int(p, "mask_kind", static_cast<int>(s.mask));
        set_int(p, "window", s.window);
        set_int(p, "custom_words", words);
        set_float(p, "scale", t.scale);
        set_float(p, "masked_fill", s.masked_fill);
        set_int(p, "fill_is_minus_inf", fill_minus_inf);
        set_int(p, "naive_softmax", s.softmax == SoftmaxKind::Naive);
        set_int(p, "use_alibi", alibi);
    }
    set_int(attention, "d_v", d_v);
    set_int(pool, "row_begin", row_begin);
    set_int(pool, "row_end", row_end);
    set_int(pool, "col_begin", col_begin);
    set_int(pool, "col_end", col_end);
    set_int(pool, "bins_rows", bins_rows);
    set_int(pool, "bins_cols", bins_cols);
    static_assert(static_cast<int>(MaskKind::None) == 0 && static_cast<int>(MaskKind::Causal) == 1 &&
                      static_cast<int>(MaskKind::Padding) == 2 && static_cast<int>(MaskKind::SlidingWindow) == 3 &&
                      static_cast<int>(MaskKind::Custom) == 4,
                  "scores.glsl's MASK_* numbers follow MaskKind");

    auto bind_attention_inputs = [this] {
        q.bind(0);
        k.bind(1);
        v.bind(2);
        key_padding.bind(5);
        custom_mask.bind(6);
        alibi_slopes.bind(7);
    };

    // The output pass: slices of query blocks; one head per dispatch when a block is big.
    const int blocks = ceil_div(n_q, kQueryBlock);
    const double block_head_flops = 2.0 * kQueryBlock * n_k * (d_k + d_v);
    const int heads_per_item = block_head_flops * heads > kItemFlops ? 1 : heads;
    const int blocks_per_item = std::max(1, static_cast<int>(kItemFlops / (block_head_flops * heads_per_item)));
    for (int b0 = 0; b0 < blocks; b0 += blocks_per_item)
        for (int h0 = 0; h0 < heads; h0 += heads_per_item) {
            const int count = std::min(blocks_per_item, blocks - b0);
            plan.push_back({Stage::Attention, block_head_flops * count * heads_per_item, [=] {
                                glUseProgram(attention);
                                bind_attention_inputs();
                                concat.bind(3);
                                row_stats.bind(4);
                                set_int(attention, "query_block_offset", b0);
                                set_int(attention, "head_offset", h0);
                                glDispatchCompute(count, heads_per_item, 1);
                                glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
                            }});
        }

    // The heatmap: slices of blocks of kPoolRows region rows, every head; the grid starts at 0
    // (the buffer is zeroed) and every block folds its rows' maxima in.
    const int region_rows = row_end - row_begin;
    const int row_blocks = ceil_div(region_rows, kPoolRows);
    const double row_block_flops = 2.0 * d_k * kPoolRows * static_cast<double>(col_end - col_begin) * heads;
    const int row_blocks_per_item = std::max(1, static_cast<int>(kItemFlops / row_block_flops));
    for (int b0 = 0; o.pool_weights && b0 < row_blocks; b0 += row_blocks_per_item) {
        const int count = std::min(row_blocks_per_item, row_blocks - b0);
        plan.push_back({Stage::Pooling, row_block_flops * count, [=] {
                            glUseProgram(pool);
                            bind_attention_inputs();
                            pooled.bind(3);
                            row_stats.bind(4);
                            set_int(pool, "row_block_offset", b0);
                            glDispatchCompute(count, heads, 1);
                            glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
                        }});
    }

    // output = concat · W_O: (n_q, h·d_v)·(h·d_v, d_out).
    if (has_w_o) {
        const GLuint matmul = program("matmul", shader_source::matmul, false, "", &error);
        const int inner = heads * d_v, out_cols = static_cast<int>(t.w_o.cols());
        const double row_flops = 2.0 * inner * out_cols;
        const int slice = std::max(kMatmulBlock, static_cast<int>(kItemFlops / row_flops) / kMatmulBlock * kMatmulBlock);
        for (int r0 = 0; r0 < n_q; r0 += slice) {
            const int rows = std::min(slice, n_q - r0);
            plan.push_back({Stage::Output, row_flops * rows, [=] {
                                glUseProgram(matmul);
                                set_int(matmul, "M", n_q);
                                set_int(matmul, "N", out_cols);
                                set_int(matmul, "K", inner);
                                set_int(matmul, "head_cols", out_cols);
                                set_int(matmul, "head_stride", out_cols);
                                set_int(matmul, "row_offset", r0);
                                concat.bind(0);
                                w_o.bind(1);
                                output.bind(2);
                                glDispatchCompute(ceil_div(out_cols, kMatmulBlock), ceil_div(rows, kMatmulBlock), 1);
                                glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
                            }});
        }
    }
    for (const WorkItem& item : plan) planned_flops += item.flops;
}

// [SECTION] Stepping, timing, reading back

// GL_KHR_robustness (core in 4.5): a context created with a reset notification strategy
// reports a GPU reset (a hang, a driver restart, a removed GPU) here.
bool Backend::Impl::lost_context() {
    if (options.context_reset_after_steps >= 0 && steps_taken > options.context_reset_after_steps) context_lost = true;
    if (!context_lost && reports_resets) context_lost = glGetGraphicsResetStatus() != GL_NO_ERROR;
    return context_lost;
}

bool Backend::Impl::step(double budget_ms) {
    if (!busy) return true;
    ++steps_taken;
    if (lost_context()) {
        fail(kContextLost);
        return true;
    }
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto elapsed_ms = [&] { return std::chrono::duration<double, std::milli>(clock::now() - start).count(); };
    while (next_item < plan.size()) {
        // One batch: consecutive items of one stage, as many as the remaining budget allows
        // at the measured speed (at least one), timed by one GL_TIME_ELAPSED query.
        const double remaining = budget_ms - elapsed_ms();
        const Stage stage = plan[next_item].stage;
        Query query;
        GLuint query_name = 0;
        glGenQueries(1, &query_name);
        query = Query(query_name);
        glBeginQuery(GL_TIME_ELAPSED, query.get());
        const auto batch_start = clock::now();
        double batch_flops = 0.0;
        do {
            plan[next_item].dispatch();
            batch_flops += plan[next_item].flops;
            ++next_item;
        } while (next_item < plan.size() && plan[next_item].stage == stage &&
                 (batch_flops + plan[next_item].flops) * ms_per_flop <= remaining);
        glEndQuery(GL_TIME_ELAPSED);
        glFinish();
        done_flops += batch_flops;
        const double batch_ms = std::chrono::duration<double, std::milli>(clock::now() - batch_start).count();
        if (batch_flops > 0.0) ms_per_flop = 0.5 * ms_per_flop + 0.5 * batch_ms / batch_flops;
        GLuint64 nanoseconds = 0;
        glGetQueryObjectui64v(query.get(), GL_QUERY_RESULT, &nanoseconds);
        const double gpu_ms = static_cast<double>(nanoseconds) * 1e-6;
        for (auto [sink, ms] : {std::pair{&timings, gpu_ms}, std::pair{&wall_timings, batch_ms}}) {
            switch (stage) {
                case Stage::Projection: sink->projection_ms += ms; break;
                case Stage::Attention: sink->attention_ms += ms; break;
                case Stage::Pooling: sink->pooling_ms += ms; break;
                case Stage::Output: sink->output_ms += ms; break;
            }
        }
        if (elapsed_ms() >= budget_ms) break;
    }
    if (next_item < plan.size()) return false;
    finish();
    return true;
}

void Backend::Impl::finish() {
    busy = false;
    finished = true;
    plan.clear();
    const GLenum gl_error = glGetError();
    if (gl_error != GL_NO_ERROR) {
        std::ostringstream msg;
        msg << "the GPU run failed with OpenGL error 0x" << std::hex << gl_error;
        return fail(msg.str());
    }
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
    Trace& t = trace;
    const Scenario& s = scenario;
    t.milliseconds = timings.total();

    std::vector<float> qh(q.bytes() / sizeof(float)), kh(k.bytes() / sizeof(float)), vh(v.bytes() / sizeof(float));
    q.read(qh.data(), q.bytes());
    k.read(kh.data(), k.bytes());
    v.read(vh.data(), v.bytes());
    t.concat.resize(n_q, static_cast<Eigen::Index>(heads) * d_v);
    concat.read(t.concat.data(), static_cast<std::size_t>(t.concat.size()) * sizeof(float));
    Matrix all_pooled(run_options.pool_weights ? static_cast<Eigen::Index>(heads) * bins_rows : 0, bins_cols);
    pooled.read(all_pooled.data(), static_cast<std::size_t>(all_pooled.size()) * sizeof(float));
    if (has_w_o) {
        t.output.resize(n_q, t.w_o.cols());
        output.read(t.output.data(), static_cast<std::size_t>(t.output.size()) * sizeof(float));
    } else {
        t.output = t.concat;
    }

    // Rows with no visible key, whatever the fill (the fully masked row rule, README).
    const std::vector<bool>& padding_flags =
        s.input == InputMode::Embeddings && s.attention == AttentionKind::Cross ? s.source.padding : s.target.padding;
    std::vector<int> fully_masked;
    for (int i = 0; i < n_q; ++i) {
        bool any = true;
        switch (s.mask) {
            case MaskKind::None:
            case MaskKind::Causal: any = true; break;
            case MaskKind::SlidingWindow: any = i - s.window + 1 <= n_k - 1; break;
            case MaskKind::Padding:
                any = false;
                for (int j = 0; j < n_k && !any; ++j) any = !(j < static_cast<int>(padding_flags.size()) && padding_flags[static_cast<size_t>(j)]);
                break;
            case MaskKind::Custom: any = s.custom_mask.row(i).any(); break;
        }
        if (!any) fully_masked.push_back(i);
    }

    for (int h = 0; h < heads; ++h) {
        HeadTrace head;
        head.q = head_slice(qh, h, n_q, d_k, dk4 * 4);
        head.k = head_slice(kh, h, n_k, d_k, dk4 * 4);
        head.v = head_slice(vh, h, n_k, d_v, dv4 * 4);
        head.output = t.concat.middleCols(static_cast<Eigen::Index>(h) * d_v, d_v);
        if (s.positional == PositionalEncoding::ALiBi) head.alibi_slope = alibi_slope(h, heads);
        head.fully_masked_rows = fully_masked;
        head.softmax_overflow = s.softmax == SoftmaxKind::Naive && !head.output.allFinite() && head.q.allFinite() &&
                                head.k.allFinite() && head.v.allFinite();
        if (run_options.pool_weights) {
            head.pooled_weights.values = all_pooled.middleRows(static_cast<Eigen::Index>(h) * bins_rows, bins_rows);
            head.pooled_weights.row_begin = row_begin;
            head.pooled_weights.row_end = row_end;
            head.pooled_weights.col_begin = col_begin;
            head.pooled_weights.col_end = col_end;
        }
        t.head.push_back(std::move(head));
    }

    add_head_warnings(s, t);  // the same warnings as the CPU engine
    if (s.input == InputMode::Embeddings && (s.block.residual || s.block.layer_norm || s.block.feed_forward)) {
        t.has_block = true;
        t.block = run_block(s, t.x_pe, t.output);
    }
    t.ok = true;
}

// [SECTION] Backend

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
    glGetIntegerv(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &impl->max_block_bytes);
    impl->reports_resets = version >= 45 || epoxy_has_gl_extension("GL_KHR_robustness");
    glGetIntegerv(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE, &impl->max_shared_bytes);
    // Compile every shader once now (the common variants), so a broken driver or source
    // is found here and the caller can fall back to the CPU engine.
    const int common4 = 16;  // d_k = 64
    if (!impl->program("matmul", shader_source::matmul, false, "", &why) ||
        !impl->program("rope", shader_source::rope, false, "", &why) ||
        !impl->program("attention", shader_source::attention, true, impl->attention_defines(common4, common4), &why) ||
        !impl->program("pool", shader_source::pool, true, Impl::pool_defines(common4), &why))
        return nullptr;
    Buffer probe;
    if (!probe.allocate(1 << 20)) {
        why = "the GPU could not allocate a 1 MiB test buffer";
        return nullptr;
    }
    return std::unique_ptr<Backend>(new Backend(std::move(impl)));
}

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
    if (impl_->planned_flops <= 0.0) return 0.0f;
    return static_cast<float>(impl_->done_flops / impl_->planned_flops);
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

std::size_t Backend::allocated_bytes() const { return impl_->allocated_bytes(); }
const Timings& Backend::timings() const { return impl_->timings; }
const Timings& Backend::wall_timings() const { return impl_->wall_timings; }

}  // namespace attn::gpu
