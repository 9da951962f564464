#include "speed.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "edits.hpp"
#include "attention/engine.hpp"
#include "tensor/random.hpp"
#include "attention/serialize.hpp"

namespace attn::speed {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFile = "speeds.json";
std::mutex cache_mutex;  // the app's worker and the UI thread may both ask

json read_cache() {
    const std::string dir = cache_directory();
    if (dir.empty()) return json::object();
    std::vector<std::string> errors;
    const auto text = read_text_file((fs::path(dir) / kFile).string(), 1 << 20, "speeds", errors);
    if (!text) return json::object();
    const auto j = parse_json(*text, kFile, errors, json_limits::kSmall);
    return j && j->is_object() ? *j : json::object();
}

void write_cache(const json& j) {
    const std::string dir = cache_directory();
    if (dir.empty()) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::string error;
    write_file_atomic((fs::path(dir) / kFile).string(), j.dump(1) + "\n", &error);  // a cache: a failed write only costs a probe
}

// "model name" of /proc/cpuinfo and the threads OpenMP will use: what the CPU speed depends on.
std::string cpu_key() {
    std::string model = "cpu";
    std::ifstream info("/proc/cpuinfo");
    for (std::string line; std::getline(info, line);)
        if (line.rfind("model name", 0) == 0) {
            model = line.substr(line.find(':') + 2);
            break;
        }
    return model + " | " + std::to_string(std::thread::hardware_concurrency()) + " threads";
}

double measured_cpu_gflops() {
    // 4 heads of d_k = 64 over 512 tokens: about 270 MFLOP, some tens of milliseconds.
    Scenario s;
    s.input = InputMode::Direct;
    s.heads = 4;
    s.q = normal_matrix(512, 256, 1);
    s.k = normal_matrix(512, 256, 2);
    s.v = normal_matrix(512, 256, 3);
    RunOptions o;
    o.detail = Detail::OutputOnly;
    o.pool_weights = false;
    run(s, o);  // the first run pays for the threads' start
    double best = 1e300;
    for (int i = 0; i < 3; ++i) {
        const auto start = std::chrono::steady_clock::now();
        run(s, o);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return attention_flops(s) / best * 1e-9;
}

}  // namespace

std::string cache_directory() {
    const char* cache = std::getenv("XDG_CACHE_HOME");
    if (cache != nullptr && cache[0] == '/') return (fs::path(cache) / "attnlab").string();
    const char* home = std::getenv("HOME");
    if (home != nullptr && home[0] != '\0') return (fs::path(home) / ".cache" / "attnlab").string();
    return {};
}

double cpu_gflops() {
    std::lock_guard<std::mutex> lock(cache_mutex);
    json cache = read_cache();
    const std::string key = cpu_key();
    if (cache.contains("cpu") && cache["cpu"].is_object() && cache["cpu"].contains(key) && cache["cpu"][key].is_number() &&
        cache["cpu"][key].get<double>() > 0.0)
        return cache["cpu"][key].get<double>();
    const double gflops = measured_cpu_gflops();
    if (!cache.contains("cpu") || !cache["cpu"].is_object()) cache["cpu"] = json::object();
    cache["cpu"][key] = gflops;
    write_cache(cache);
    return gflops;
}

std::optional<double> remembered_gpu_gflops(const std::string& renderer) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    const json cache = read_cache();
    if (cache.contains("gpu") && cache["gpu"].is_object() && cache["gpu"].contains(renderer) &&
        cache["gpu"][renderer].is_number() && cache["gpu"][renderer].get<double>() > 0.0)
        return cache["gpu"][renderer].get<double>();
    return std::nullopt;
}

void remember_gpu_gflops(const std::string& renderer, double gflops) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    json cache = read_cache();
    if (!cache.contains("gpu") || !cache["gpu"].is_object()) cache["gpu"] = json::object();
    cache["gpu"][renderer] = gflops;
    write_cache(cache);
}

namespace {
// d_k: the columns of one head.
double head_width(const Scenario& s) {
    return s.input == InputMode::Direct ? static_cast<double>(s.q.cols()) / std::max(1, s.heads)
                                        : static_cast<double>(s.d_model) / std::max(1, s.heads);
}
}  // namespace

double attention_flops(const Scenario& s) {
    const bool causal = s.mask == MaskKind::Causal && std::isinf(s.masked_fill);
    return attention_flops(edits::query_count(s), edits::key_count(s), static_cast<int>(head_width(s)), s.heads, causal);
}

double full_run_flops(const Scenario& s) {
    const double n_q = edits::query_count(s), n_k = edits::key_count(s), d = s.d_model;
    double flops = attention_flops(s);
    if (s.input != InputMode::Direct) flops += 2.0 * d * d * (2.0 * n_q + 2.0 * n_k);  // Q and the output; K and V
    if (s.block.feed_forward) flops += 4.0 * n_q * d * (s.block.d_ff > 0 ? s.block.d_ff : 4.0 * d);
    return flops;
}

double attention_flops(double n_queries, double n_keys, int d_k, int heads, bool causal) {
    return 4.0 * n_queries * n_keys * d_k * std::max(1, heads) * (causal ? 0.5 : 1.0);
}

double zoom_flops(int heads, int d_k, int rows, int cols) {
    return 2.0 * static_cast<double>(rows) * static_cast<double>(cols) * d_k * std::max(1, heads);
}

double predicted_cpu_ms(const Scenario& s, const Speeds& speeds) {
    return speeds.cpu_gflops > 0.0 ? attention_flops(s) / (speeds.cpu_gflops * 1e6) : 1e300;
}

double predicted_gpu_ms(const Scenario& s, const Speeds& speeds) {
    if (speeds.gpu_gflops <= 0.0) return 1e300;
    // Upload Q, K, V and read back the concat: about 4 floats per (token, column), at a
    // conservative 4 GB/s, and a few milliseconds of fixed cost.
    const double columns = s.input == InputMode::Direct ? static_cast<double>(s.q.cols()) : s.d_model;
    const double bytes = 4.0 * 4.0 * (edits::query_count(s) + edits::key_count(s)) * columns;
    return attention_flops(s) / (speeds.gpu_gflops * 1e6) + bytes / 4e6 + 3.0;
}

bool gpu_is_faster(const Scenario& s, const Speeds& speeds) {
    return speeds.gpu_hardware && speeds.gpu_gflops > 0.0 && predicted_gpu_ms(s, speeds) < predicted_cpu_ms(s, speeds);
}

double predicted_cpu_zoom_ms(const Scenario& s, const Speeds& speeds, int rows, int cols) {
    const double flops = zoom_flops(std::max(1, s.heads), static_cast<int>(head_width(s)), rows, cols);
    return speeds.cpu_gflops > 0.0 ? flops / (speeds.cpu_gflops * 1e6) : 1e300;
}

// The heatmap pass computes the scores again (2·d_k per cell against attention's 4·d_k):
// half as much work again as the attention pass.
double predicted_gpu_rerun_ms(const Scenario& s, const Speeds& speeds) { return 1.5 * predicted_gpu_ms(s, speeds); }

}  // namespace attn::speed
