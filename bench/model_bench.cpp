// A model's forward pass against this machine's own limits, measured in the same run: the
// pass's floating-point work at Eigen's GEMM rate (200 tokens), and the time to read the
// weights once at the measured memory bandwidth (20 tokens); with the peak resident memory.
//
//   model_bench [--shape gpt2-small|smollm2-135m] [--dtype f32|bf16] [--runs N] [--keep DIR]
//   model_bench --measure DIR --shape S [--runs N] [--profile N]    (on a folder already written)
//   model_bench --decode [--shape S] [--dtype D] [--runs N] [--write N]   writing instead (below)
// --profile N runs --runs passes of N tokens alone, for a profiler: each into the pass before, or
// each a new pass with ATTNLAB_BENCH_FRESH set.
//
// Shapes, with random N(0, 0.02)-like weights (the pass's cost does not depend on the values):
//   gpt2-small     12 layers × 12 heads, d_model 768, d_ff 3072, vocab 50257, tied: written by
//                  GPT-2's writer (core/model/gpt2) and opened by the family table, as every shape
//   smollm2-135m   30 layers, 9 query / 3 K/V heads, d_model 576, head_dim 64, d_ff 1536 (gated,
//                  SiLU), vocab 49152, tied, rope_theta 100000: a llama folder in Hugging Face's
//                  layout, opened by core/model/hf
// The folder is written, then a fresh process opens it and runs (so the peak memory is the
// opening and the running alone), 20 and 200 tokens with every layer's full trace (every
// attention map), the median of --runs runs each: into the traces of the pass before (the
// figure compared with the limits, as gpt2_bench's forward), and into a new pass.
//
// The limits, measured in that process, on all cores (nproc), after the passes and again after
// a second set of them (each figure the better of two: the machine may be shared):
//   GEMM-bound time   Σ over the pass's products (Q, K, V, QKᵀ, weights·V, W_O, the MLP's,
//                     the LM head's one row) of 2·m·k·n FLOPs at the rate Eigen reaches on
//                     that very shape, every core running its own copy of the product
//   weight-read time  the weights' bytes as the model holds them in memory, at the bandwidth
//                     of a streaming read of a buffer far larger than the caches, every core
//                     reading its own part
// --decode: writing (core/generate), the prompt's pass then one token at a time against the
// KV caches. One decode step at a 200-token context (2·--runs steps, from 200 on) against the
// weight-read time: the bytes of the weights a step reads (every layer's matrices and the LM
// head, as held: BF16 stays BF16) at the best bandwidth of the streaming reads taken, one
// straight after each step; beside it the median of each step's ratio to its own read, and
// tokens per second. --write N: then N tokens written after an 8-token prompt, each
// step's rows of every head kept (what the model view draws), and the peak resident memory
// against the weights as held + the KV caches + those rows.
//
// Peak resident memory is compared with the weights as float32 plus the largest pass's
// activations (every matrix its traces keep, the weights they share not counted), and with the
// weights as held: read in place from the file, in its dtype (a BF16 file stays BF16).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/model_writers.hpp"
#include "model/gpt2/checkpoint.hpp"
#include "measure.hpp"
#include "tensor/safetensors.hpp"
#include "model/hf/model.hpp"
#include "model/language_model.hpp"
#include "attention/registry.hpp"
#include "tensor/stored_matrix.hpp"
#include "attention/trace.hpp"

using attn::bench::Clock;
using namespace attn;

namespace {

using bench::median;
using bench::ms_since;
using bench::peak_rss_kib;

// [SECTION] The shapes

struct Shape {
    std::string name;
    int layers = 0, d_model = 0, heads = 0, kv_heads = 0, head_dim = 0, d_ff = 0, vocab = 0, positions = 0;
    bool gated = false;                 // (act(x·W_gate) ⊙ x·W_up)·W_down
    bool learned_positions = false;     // GPT-2's wpe
    // Every parameter, as float32 would hold it.
    double parameters() const {
        const double d = d_model, q = heads * head_dim, kv = kv_heads * head_dim, ff = d_ff;
        double layer = d * q + 2 * d * kv + q * d + (gated ? 3 : 2) * d * ff;  // the matrices
        layer += learned_positions ? q + 2 * kv + d + ff + d + 4 * d : 2 * d;  // biases and norms
        return layers * layer + static_cast<double>(vocab) * d + (learned_positions ? double(positions) * d + 2 * d : d);
    }
};

Shape gpt2_small() { return {"gpt2-small", 12, 768, 12, 12, 64, 3072, 50257, 1024, false, true}; }
Shape smollm2_135m() { return {"smollm2-135m", 30, 576, 9, 3, 64, 1536, 49152, 8192, true, false}; }

// One matrix product of the pass: (m × k)·(k × n), `count` times.
struct Product {
    const char* what;
    long m, k, n, count;
    double flops() const { return 2.0 * m * k * n * count; }
};

// The products a pass of `tokens` tokens computes, as the engine computes them: every head's
// full (n × n) scores and weights·V (the trace keeps the whole map), the LM head of the last
// row only.
std::vector<Product> pass_products(const Shape& s, long n) {
    const long d = s.d_model, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim, L = s.layers;
    std::vector<Product> p = {
        {"x·W_Q", n, d, q, L},
        {"x·W_K, x·W_V", n, d, kv, 2 * L},
        {"Q_h·K_hᵀ", n, s.head_dim, n, L * s.heads},
        {"weights_h·V_h", n, n, s.head_dim, L * s.heads},
        {"concat·W_O", n, q, d, L},
        {"x·W_up (and W_gate)", n, d, s.d_ff, (s.gated ? 2 : 1) * L},
        {"h·W_down", n, s.d_ff, d, L},
        {"LM head, last row", 1, d, s.vocab, 1},
    };
    return p;
}

// [SECTION] Writing the checkpoint

// Cheap deterministic values around 0 with a spread of about 0.02 (no N(0, σ²) needed: the
// cost of a pass does not depend on the values).
struct Draws {
    std::uint64_t state;
    float next() {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        return (static_cast<float>(state >> 40) / static_cast<float>(1 << 24) - 0.5f) * 0.07f;
    }
    std::vector<float> values(std::size_t count, float mean = 0.0f) {
        std::vector<float> v(count);
        for (float& x : v) x = mean + next();
        return v;
    }
};

bool write_llama(const Shape& s, const std::string& folder, safetensors::Dtype dtype, std::string* error) {
    namespace fs = std::filesystem;
    fs::create_directories(folder);
    const nlohmann::json config = {
        {"architectures", {"LlamaForCausalLM"}}, {"attention_bias", false}, {"hidden_act", "silu"},
        {"hidden_size", s.d_model}, {"intermediate_size", s.d_ff}, {"max_position_embeddings", s.positions},
        {"mlp_bias", false}, {"model_type", "llama"}, {"num_attention_heads", s.heads}, {"num_hidden_layers", s.layers},
        {"num_key_value_heads", s.kv_heads}, {"rms_norm_eps", 1e-5}, {"rope_scaling", nullptr}, {"rope_theta", 100000},
        {"tie_word_embeddings", true}, {"torch_dtype", dtype == safetensors::Dtype::BF16 ? "bfloat16" : "float32"},
        {"vocab_size", s.vocab}};
    std::ofstream(fs::path(folder) / "config.json") << config.dump(2) << "\n";
    Draws draws{0x9E3779B97F4A7C15ull};
    std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<float>>> tensors;
    auto make = [&](const std::string& name, std::vector<std::int64_t> shape, float mean = 0.0f) {
        std::size_t count = 1;
        for (auto k : shape) count *= static_cast<std::size_t>(k);
        tensors[name] = {std::move(shape), draws.values(count, mean)};
    };
    const std::int64_t d = s.d_model, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim, ff = s.d_ff;
    make("model.embed_tokens.weight", {s.vocab, d});
    for (int l = 0; l < s.layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        make(p + "input_layernorm.weight", {d}, 1.0f);
        make(p + "self_attn.q_proj.weight", {q, d});   // nn.Linear: (out × in)
        make(p + "self_attn.k_proj.weight", {kv, d});
        make(p + "self_attn.v_proj.weight", {kv, d});
        make(p + "self_attn.o_proj.weight", {d, q});
        make(p + "post_attention_layernorm.weight", {d}, 1.0f);
        make(p + "mlp.gate_proj.weight", {ff, d});
        make(p + "mlp.up_proj.weight", {ff, d});
        make(p + "mlp.down_proj.weight", {d, ff});
    }
    make("model.norm.weight", {d}, 1.0f);
    std::vector<safetensors::NamedTensor> named;
    for (const auto& [name, t] : tensors) named.emplace_back(name, t.first, t.second.data());
    return safetensors::write_safetensors((fs::path(folder) / "model.safetensors").string(), named, {{"format", "pt"}}, dtype, error);
}

bool write_gpt2(const Shape& s, const std::string& folder, safetensors::Dtype dtype, std::string* error) {
    gpt2::Config c;
    c.n_layer = s.layers;
    c.n_head = s.heads;
    c.n_embd = s.d_model;
    c.n_positions = s.positions;
    c.vocab_size = s.vocab;
    c.n_inner = s.d_ff;
    gpt2::CheckpointWriteOptions options;
    options.dtype = dtype;
    return gpt2::write_checkpoint(folder, gpt2::random_checkpoint(c, 1), options, error);
}

// [SECTION] The machine's limits

// Eigen's rate on one product's shape: every core multiplies its own copy, as many times as
// fill about 0.2 s; the best of 3 (FLOP/s over all cores).
double gemm_rate(const Product& p) {
    const int threads = omp_get_max_threads();
    const double per_product = 2.0 * p.m * p.k * p.n;
    const int repeats = std::max(1, static_cast<int>(0.2 * 40e9 / threads / per_product));
    double best = 0;
    for (int trial = 0; trial < 3; ++trial) {
        double seconds = 0;
#pragma omp parallel num_threads(threads) reduction(max : seconds)
        {
            const Matrix a = Matrix::Random(p.m, p.k), b = Matrix::Random(p.k, p.n);
            Matrix c(p.m, p.n);
#pragma omp barrier
            const auto t0 = Clock::now();
            for (int r = 0; r < repeats; ++r) c.noalias() = a * b;
            seconds = ms_since(t0) / 1000.0;
            if (c(0, 0) == 12345.0f) std::printf(" ");  // keeps the product
        }
        best = std::max(best, threads * repeats * per_product / seconds);
    }
    return best;
}

// A streaming read (a sum) of `bytes` (at least 256 MiB: far beyond the caches), every core
// reading its part: bytes per second of one pass, at the moment it is asked for.
class StreamingRead {
  public:
    explicit StreamingRead(double bytes) : buffer_(static_cast<std::size_t>(std::max(bytes, 256.0 * (1 << 20))) / sizeof(float)) {
        const std::size_t count = buffer_.size();
#pragma omp parallel for
        for (std::size_t i = 0; i < count; ++i) buffer_[i] = static_cast<float>(i & 7);
    }
    double once() {
        const std::size_t count = buffer_.size();
        const auto t0 = Clock::now();
        double sum = 0;
#pragma omp parallel reduction(+ : sum)
        {
            const int t = omp_get_thread_num(), threads = omp_get_num_threads();
            const std::size_t begin = count * t / threads, end = count * (t + 1) / threads;
            sum += Eigen::Map<const Eigen::VectorXf>(buffer_.data() + begin, static_cast<Eigen::Index>(end - begin)).sum();
        }
        const double seconds = ms_since(t0) / 1000.0;
        if (sum == -1) std::printf(" ");  // keeps the read
        return static_cast<double>(count * sizeof(float)) / seconds;
    }

  private:
    std::vector<float> buffer_;
};

// Bytes per second of a streaming read of 1 GiB; the best of 5.
double read_bandwidth() {
    StreamingRead stream(static_cast<double>(std::size_t{1} << 30));
    double best = 0;
    for (int trial = 0; trial < 5; ++trial) best = std::max(best, stream.once());
    return best;
}

// [SECTION] Measuring

// Every matrix the pass's traces keep, the weights they share left out (they are the model's).
double activation_bytes(const stack::Pass& pass) {
    std::set<const void*> seen;
    double bytes = 0;
    auto count = [&](const Matrix& m) {
        if (m.size() != 0 && seen.insert(m.data()).second) bytes += static_cast<double>(m.size()) * sizeof(float);
    };
    for (const Matrix* m : {&pass.x0, &pass.memory0, &pass.final_input, &pass.final_output, &pass.logits}) count(*m);
    for (const Trace& t : pass.layers) {
        for (const std::string& name : matrix_names(t)) {
            const auto ref = parse_matrix_name(name);
            if (!ref || is_weight(*ref->entry)) continue;  // the weights are shared, not the pass's (and not widened to be counted)
            if (const Matrix* m = matrix_of(t, *ref)) count(*m);
        }
        bytes += static_cast<double>(t.visible.size());  // one byte per cell of the mask
    }
    return bytes;
}

struct Runs {
    double rerun_ms = 0;   // into the traces of the pass before (as a sentence edited and run again)
    double fresh_ms = 0;   // every trace allocated anew (the first sentence)
    double activations = 0;
};

// The model opened in this process, as the app holds it (every shape through the family table).
struct Opened {
    std::optional<hf::OpenedModel> hf;
    double weight_bytes = 0;   // as held in memory
};

// A pass of n tokens, every trace kept: into `kept` (its traces' storage reused), or fresh.
struct Passes {
    ModelPass hf;
};

bool one_pass(const Opened& model, int n, Passes& kept, bool fresh) {
    std::vector<int> ids(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = (i * 7919 + 13) % 256;  // byte tokens, any ids would do
    if (fresh) kept.hf = ModelPass();  // the old traces freed first: one pass alive
    const bool ok = hf::forward_ids_into(*model.hf, ids, kept.hf);
    for (auto& e : kept.hf.errors) std::fprintf(stderr, "%s\n", e.c_str());
    return ok;
}

std::optional<Runs> time_passes(const Opened& model, int n, int runs) {
    Runs r;
    Passes kept;
    if (!one_pass(model, n, kept, true)) return std::nullopt;  // warm-up
    r.activations = activation_bytes(kept.hf);
    std::vector<double> rerun, fresh;
    for (int i = 0; i < runs; ++i) {
        auto t0 = Clock::now();
        if (!one_pass(model, n, kept, false)) return std::nullopt;
        rerun.push_back(ms_since(t0));
    }
    for (int i = 0; i < runs; ++i) {
        kept = Passes();
        const auto t0 = Clock::now();
        if (!one_pass(model, n, kept, false)) return std::nullopt;
        fresh.push_back(ms_since(t0));
    }
    r.rerun_ms = median(rerun);
    r.fresh_ms = median(fresh);
    return r;
}

int measure(const Shape& shape, const std::string& folder, int runs, int profile_tokens) {
    Opened model;
    const auto t0 = Clock::now();
    hf::OpenedModelLoad opened = hf::open_model(folder, false);
    if (!opened.model) {
        for (auto& e : opened.errors) std::fprintf(stderr, "%s\n", e.c_str());
        return 1;
    }
    model.hf = std::move(*opened.model);
    const double open_ms = ms_since(t0);
    const double f32_weight_bytes = shape.parameters() * sizeof(float);
    // The matrices are read where the file stores them (stored_matrix.hpp), in its dtype; the
    // vectors (biases, norms) as float32.
    const lm::HeldWeights held = lm::held_weights(*model.hf);
    model.weight_bytes = held.bytes + (shape.parameters() - held.elements) * sizeof(float);
    const std::size_t widened_before = stored_bytes_widened();
    if (profile_tokens > 0) {  // passes alone, for a profiler
        Passes kept;
        for (int i = 0; i < runs; ++i)
            if (!one_pass(model, profile_tokens, kept, std::getenv("ATTNLAB_BENCH_FRESH") != nullptr)) return 1;
        return 0;
    }

    // Passes, the limits, passes again, the limits again: on a machine shared with other work each
    // figure is the better of its two (the pass's median, the limit's best), the load average
    // printed beside them.
    std::optional<Runs> short_runs = time_passes(model, 20, runs);
    std::optional<Runs> long_runs = short_runs ? time_passes(model, 200, runs) : std::nullopt;
    if (!long_runs) return 1;
    const double peak_bytes = peak_rss_kib() * 1024.0;  // before the limits' own buffers
    const std::size_t widened = stored_bytes_widened() - widened_before;
    const std::vector<Product> products = pass_products(shape, 200), short_products = pass_products(shape, 20);
    std::vector<double> rates(products.size(), 0.0), short_rates(short_products.size(), 0.0);
    double bandwidth = 0;
    for (int round = 0; round < 2; ++round) {
        for (std::size_t i = 0; i < products.size(); ++i) rates[i] = std::max(rates[i], gemm_rate(products[i]));
        for (std::size_t i = 0; i < short_products.size(); ++i) short_rates[i] = std::max(short_rates[i], gemm_rate(short_products[i]));
        bandwidth = std::max(bandwidth, read_bandwidth());
        if (round == 1) break;
        const std::optional<Runs> short_again = time_passes(model, 20, runs);
        const std::optional<Runs> long_again = short_again ? time_passes(model, 200, runs) : std::nullopt;
        if (!long_again) return 1;
        for (auto [best, again] : {std::pair{&*short_runs, &*short_again}, std::pair{&*long_runs, &*long_again}}) {
            best->rerun_ms = std::min(best->rerun_ms, again->rerun_ms);
            best->fresh_ms = std::min(best->fresh_ms, again->fresh_ms);
        }
    }
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    std::printf("limits (%d threads; load average %.2f over the last minute):\n", omp_get_max_threads(), load[0]);
    double flops = 0, gemm_seconds = 0;
    for (std::size_t i = 0; i < products.size(); ++i) {
        const Product& p = products[i];
        flops += p.flops();
        gemm_seconds += p.flops() / rates[i];
        std::printf("  %-22s (%ld x %ld)·(%ld x %ld) x %-4ld %7.2f GFLOP  at %6.1f GFLOP/s\n", p.what, p.m, p.k, p.k, p.n, p.count,
                    p.flops() / 1e9, rates[i] / 1e9);
    }
    double short_flops = 0, short_seconds = 0;
    for (std::size_t i = 0; i < short_products.size(); ++i) {
        short_flops += short_products[i].flops();
        short_seconds += short_products[i].flops() / short_rates[i];
    }
    const double gemm_ms = gemm_seconds * 1000.0, read_ms = model.weight_bytes / bandwidth * 1000.0;
    std::printf("  200 tokens: %.2f GFLOP at Eigen's rate on these shapes (%.1f GFLOP/s overall): %.1f ms GEMM-bound\n",
                flops / 1e9, flops / gemm_seconds / 1e9, gemm_ms);
    std::printf("  memory read bandwidth %.1f GB/s: the weights (%.0f MB in memory) read once in %.1f ms\n", bandwidth / 1e9,
                model.weight_bytes / 1e6, read_ms);
    // At 20 tokens each weight meets 20 rows: 40 FLOPs per 4 bytes read. Where the cores do fewer
    // FLOPs per byte than that the pass is bound by its arithmetic, not by reading the weights.
    std::printf("  20 tokens: %.2f GFLOP at Eigen's rate on those shapes (%.1f GFLOP/s overall): %.1f ms GEMM-bound, %.2f x the weight-read time\n",
                short_flops / 1e9, short_flops / short_seconds / 1e9, short_seconds * 1000.0, short_seconds * 1000.0 / read_ms);

    std::printf("%s, random weights, %s file%s: %d layers, %d/%d heads, d_model %d, head_dim %d, d_ff %d, vocab %d; %.1fM parameters\n",
                shape.name.c_str(), folder.c_str(), "", shape.layers, shape.heads, shape.kv_heads, shape.d_model, shape.head_dim,
                shape.d_ff, shape.vocab, shape.parameters() / 1e6);
    std::printf("open: %.0f ms (the file in the OS cache)\n", open_ms);
    std::printf("forward, 20 tokens, every trace:  %7.1f ms (median of %d, the better of 2) = %.2f x the weight-read time (target <= 2)\n",
                short_runs->rerun_ms, runs, short_runs->rerun_ms / read_ms);
    std::printf("forward, 200 tokens, every trace: %7.1f ms (median of %d, the better of 2) = %.2f x the GEMM-bound time (target <= 1.5)\n",
                long_runs->rerun_ms, runs, long_runs->rerun_ms / gemm_ms);
    std::printf("  (each into the traces of the pass before, as a sentence run again; into a new pass, every trace\n"
                "  allocated and page-faulted anew: 20 tokens %.1f ms = %.2f x, 200 tokens %.1f ms = %.2f x)\n",
                short_runs->fresh_ms, short_runs->fresh_ms / read_ms, long_runs->fresh_ms, long_runs->fresh_ms / gemm_ms);
    std::printf("  20 tokens: %.2f x the GEMM-bound time at 20 tokens\n", short_runs->rerun_ms / (short_seconds * 1000.0));
    const double budget = f32_weight_bytes + long_runs->activations;
    std::printf("peak resident memory: %.0f MiB = %.2f x (float32 weights %.0f MiB + the 200-token traces' activations %.0f MiB) "
                "(target <= 1.25)\n",
                peak_bytes / (1 << 20), peak_bytes / budget, f32_weight_bytes / (1 << 20), long_runs->activations / (1 << 20));
    std::printf("  = %.2f x (the weights as held, %s read in place from the file: %.0f MiB, + the activations); "
                "weights widened to float32 by the passes: %zu bytes\n",
                peak_bytes / (model.weight_bytes + long_runs->activations), held.dtypes.c_str(), model.weight_bytes / (1 << 20), widened);
    return 0;
}

// [SECTION] Writing

// One decode step at a 200-token context against the weight-read time; with `write`, that many
// tokens written after an 8-token prompt and the peak memory.
int measure_decode(const Shape& shape, const std::string& folder, int runs, int write) {
    std::optional<lm::Model> model;
    hf::OpenedModelLoad opened = hf::open_model(folder, false);  // GPT-2's shape too: one family of the table
    if (opened.model) model.emplace(std::move(*opened.model));
    else for (auto& e : opened.errors) std::fprintf(stderr, "%s\n", e.c_str());
    if (!model) return 1;
    const generate::Writer writer = generate::writer(*model);
    // What one step reads: every layer's matrices and the LM head (the embedding's one row aside).
    const lm::HeldWeights held = model->held_weights();
    const double element = held.bytes / held.elements;
    const double embedding = static_cast<double>(shape.vocab) * shape.d_model * element;
    const double positions = shape.learned_positions ? static_cast<double>(shape.positions) * shape.d_model * element : 0.0;
    const double read_bytes = held.bytes - positions;  // tied: the embedding is the LM head, read whole
    std::vector<int> ids;
    const int prompt = write > 0 ? 8 : 200;
    for (int i = 0; i < prompt; ++i) ids.push_back((i * 7919 + 13) % 256);
    generate::Writing writing;
    std::string why;
    {
        const ModelPass pass = lm::forward_ids(*model, ids);
        if (!generate::prefill(writer, pass, ids, writing, &why)) {
            std::fprintf(stderr, "%s\n", why.c_str());
            return 1;
        }
    }  // the prompt's traces go: what writing keeps is the caches
    if (write > 0) {
        std::vector<generate::StepAttention> rows;  // what the model view keeps to draw
        double rows_bytes = 0;
        const auto t0 = Clock::now();
        for (int t = 0; t < write; ++t) {
            const std::optional<generate::Sampled> next = generate::sample(writing.logits, {}, static_cast<int>(writing.ids.size()), &why);
            generate::StepAttention step_rows;
            if (!next || !generate::step(writer, writing, next->chosen, &step_rows, &why)) {
                std::fprintf(stderr, "step %d: %s\n", t + 1, why.c_str());
                return 1;
            }
            for (const generate::DecodedAttention& a : step_rows)
                for (const Vector& w : a.weights) rows_bytes += static_cast<double>(w.size()) * sizeof(float);
            rows.push_back(std::move(step_rows));
        }
        const double seconds = ms_since(t0) / 1000.0;
        const double peak = peak_rss_kib() * 1024.0;
        const double budget = held.bytes + (shape.parameters() - held.elements) * sizeof(float) + writing.bytes();
        std::printf("%s %s: wrote %d tokens after an 8-token prompt in %.1f s (%.1f tokens/s)\n", shape.name.c_str(), held.dtypes.c_str(),
                    write, seconds, write / seconds);
        std::printf("peak resident memory: %.0f MiB = %.3f x (the weights as held %.0f MiB + the KV caches %.1f MiB) + the rows kept "
                    "for drawing %.1f MiB; without the rows: %.3f x (target <= 1.10)\n",
                    peak / (1 << 20), peak / (budget + rows_bytes), (budget - writing.bytes()) / (1 << 20), writing.bytes() / (1 << 20),
                    rows_bytes / (1 << 20), (peak - rows_bytes) / budget);
        return 0;
    }
    // Each step is paired with a streaming read taken straight after it, so that the two see the
    // same machine (a shared machine's bandwidth moves by a quarter from minute to minute): the
    // ratio is each pair's step ÷ its weight-read time, the median of 2·runs pairs.
    StreamingRead stream(read_bytes);
    std::vector<double> step_ms, bandwidths, ratios;
    for (int r = 0; r < 2 * runs; ++r) {
        const std::optional<generate::Sampled> next = generate::sample(writing.logits, {}, static_cast<int>(writing.ids.size()), &why);
        const auto t0 = Clock::now();
        if (!next || !generate::step(writer, writing, next->chosen, nullptr, &why)) {
            std::fprintf(stderr, "%s\n", why.c_str());
            return 1;
        }
        step_ms.push_back(ms_since(t0));
        bandwidths.push_back(stream.once());
        ratios.push_back(step_ms.back() / (read_bytes / bandwidths.back() * 1000.0));
    }
    // The figure held against the target: the median step against the best bandwidth any read
    // reached (the strictest reading); beside it, the median of the pairs' own ratios.
    const double step = median(step_ms), bandwidth = *std::max_element(bandwidths.begin(), bandwidths.end());
    const double read_ms = read_bytes / bandwidth * 1000.0, ratio = step / read_ms, paired = median(ratios);
    const auto [low, high] = std::minmax_element(ratios.begin(), ratios.end());
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    std::printf("%s %s, %d threads (load average %.2f): one decode step at a 200-token context %.2f ms (median of %d) "
                "= %.2f x the weight-read time (target <= 1.5): %.0f MB read at %.1f GB/s (the best of the reads) in %.2f ms; "
                "each step against the read straight after it: median %.2f x, range %.2f-%.2f; %.1f tokens/s; the KV caches %.1f MiB "
                "(float32)\n",
                shape.name.c_str(), held.dtypes.c_str(), omp_get_max_threads(), load[0], step, 2 * runs, ratio, read_bytes / 1e6,
                bandwidth / 1e9, read_ms, paired, *low, *high, 1000.0 / step, writing.bytes() / (1 << 20));
    (void)embedding;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string shape_name = "gpt2-small", dtype_name = "f32", keep, measure_folder;
    int runs = 5, profile_tokens = 0, write = 0;
    bool decode = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) shape_name = argv[++i];
        else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc) dtype_name = argv[++i];
        else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--keep") && i + 1 < argc) keep = argv[++i];
        else if (!std::strcmp(argv[i], "--measure") && i + 1 < argc) measure_folder = argv[++i];
        else if (!std::strcmp(argv[i], "--profile") && i + 1 < argc) profile_tokens = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--decode")) decode = true;
        else if (!std::strcmp(argv[i], "--write") && i + 1 < argc) write = std::max(0, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: model_bench [--shape gpt2-small|smollm2-135m] [--dtype f32|bf16] [--runs N] [--keep DIR]\n");
            return 2;
        }
    }
    const Shape shape = shape_name == "smollm2-135m" ? smollm2_135m() : gpt2_small();
    if (shape.name != shape_name || (dtype_name != "f32" && dtype_name != "bf16")) {
        std::fprintf(stderr, "model_bench: --shape is gpt2-small or smollm2-135m, --dtype f32 or bf16\n");
        return 2;
    }
    // --measure DIR: the measuring process on a folder already written (with --profile N: only
    // --runs passes of N tokens, for a profiler).
    if (!measure_folder.empty())
        return decode ? measure_decode(shape, measure_folder, runs, write) : measure(shape, measure_folder, runs, profile_tokens);

    const std::string folder =
        !keep.empty() ? keep
                      : (std::filesystem::temp_directory_path() / ("attnlab-model-bench-" + std::to_string(getpid()))).string();
    {
        const auto t0 = Clock::now();
        const safetensors::Dtype dtype = dtype_name == "bf16" ? safetensors::Dtype::BF16 : safetensors::Dtype::F32;
        std::string error;
        const bool written = shape.learned_positions ? write_gpt2(shape, folder, dtype, &error) : write_llama(shape, folder, dtype, &error);
        if (!written) {
            std::fprintf(stderr, "%s\n", error.c_str());
            return 1;
        }
        std::printf("wrote %s (%s) in %.1f s\n", folder.c_str(), dtype_name.c_str(), ms_since(t0) / 1000.0);
        std::fflush(stdout);
    }
    // A fresh process measures: its peak memory is the opening and the running alone.
    const std::string runs_text = std::to_string(runs), write_text = std::to_string(write);
    const pid_t child = fork();
    if (child == 0) {
        if (decode)
            execl("/proc/self/exe", argv[0], "--measure", folder.c_str(), "--shape", shape_name.c_str(), "--dtype", dtype_name.c_str(),
                  "--runs", runs_text.c_str(), "--decode", "--write", write > 0 ? write_text.c_str() : "0", static_cast<char*>(nullptr));
        else
            execl("/proc/self/exe", argv[0], "--measure", folder.c_str(), "--shape", shape_name.c_str(), "--dtype", dtype_name.c_str(),
                  "--runs", runs_text.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (keep.empty()) std::filesystem::remove_all(folder);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
