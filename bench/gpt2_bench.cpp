// GPT-2 small's shape with random weights: how long opening the folder, a full-trace forward
// pass and a recompute from a middle layer take, what each head does (the head roles on a
// probe, the logit lens and the ablation sweep of all 144 heads, core/interpret), and the peak
// resident memory.
//
//   gpt2_bench [--tokens N] [--keep DIR]
//
// Writes a checkpoint of GPT-2 small's shape (12 layers × 12 heads, d_model 768, d_ff 3072,
// n_positions 1024, vocab_size 50257: wte alone is 50257 × 768, as the real model's) with
// N(0, 0.02) weights to a temporary folder in F32 (≈ 498 MB), then runs itself on the folder
// in a fresh process, so the peak memory is the opening and running alone, not the writing.
// The tokenizer is the byte-level one without merges (256 tokens; ids above 255 are
// embedding rows no text reaches, as padding rows are): the forward pass's cost does not
// depend on the merges. Each time is the median of several runs; the folder was just written,
// so its pages are in the OS cache (a cold first open reads 498 MB from disk on top).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "model/gpt2/checkpoint.hpp"
#include "model/hf/model.hpp"
#include "interpret/ablation_sweep.hpp"
#include "interpret/logit_lens.hpp"
#include "interpret/model_roles.hpp"
#include "model/language_model.hpp"
#include "measure.hpp"

using attn::bench::Clock;
using namespace attn;

namespace {

using bench::median;
using bench::ms_since;
using bench::peak_rss_kib;

gpt2::Config small_config() {
    gpt2::Config c;
    c.n_layer = 12;
    c.n_head = 12;
    c.n_embd = 768;
    c.n_positions = 1024;
    c.vocab_size = 50257;
    c.n_inner = 3072;
    return c;
}

// The measuring process: opens the folder as the app does (the family table) and runs.
int measure(const std::string& folder, int tokens) {
    std::vector<double> opens;
    lm::ModelLoad load;
    for (int i = 0; i < 3; ++i) {
        load = {};  // one model in memory at a time, as in the app
        const auto t0 = Clock::now();
        load = lm::load_model(folder);
        opens.push_back(ms_since(t0));
        if (!load.model) {
            for (auto& e : load.errors) std::fprintf(stderr, "%s\n", e.c_str());
            return 1;
        }
    }
    const lm::Model& model = *load.model;
    const hf::OpenedModel& m = model.opened();
    // A sentence of `tokens` byte tokens: the animal sentence, repeated as needed.
    std::string text;
    while (static_cast<int>(text.size()) < tokens) text += "The animal did not cross the road because it was tired. ";
    text.resize(static_cast<size_t>(tokens));
    std::vector<std::string> errors;
    const std::vector<int> ids = hf::encode_text(m, text, errors);
    if (!errors.empty()) {
        for (auto& e : errors) std::fprintf(stderr, "%s\n", e.c_str());
        return 1;
    }

    ModelPass pass = hf::forward_ids(m, ids);  // warm-up
    if (!pass.ok) {
        for (auto& e : pass.errors) std::fprintf(stderr, "%s\n", e.c_str());
        return 1;
    }
    std::vector<double> full, middle, fresh;
    for (int i = 0; i < 3; ++i) {
        const auto t0 = Clock::now();
        const ModelPass first = hf::forward_ids(m, ids);  // every trace allocated anew
        fresh.push_back(ms_since(t0));
    }
    for (int i = 0; i < 7; ++i) {
        auto t0 = Clock::now();
        if (!hf::forward_ids_into(m, ids, pass)) return 1;  // as the app reruns a sentence: the traces' storage reused
        full.push_back(ms_since(t0));
        t0 = Clock::now();
        if (!hf::recompute_from(m, 6, pass)) return 1;  // an edit in layer 7: layers 7 … 12
        middle.push_back(ms_since(t0));
    }
    std::vector<double> scenarios;
    for (int i = 0; i < 7; ++i) {
        const auto t0 = Clock::now();
        for (int l = 0; l < 12; ++l) {
            const Scenario s = hf::layer_scenario(m, pass.tokens, l, lm::layer_input(pass.layers[static_cast<size_t>(l)]));
            if (s.w_q.size() == 0) return 1;
        }
        scenarios.push_back(ms_since(t0));
    }
    std::printf("building the 12 layer scenarios alone (they share the opened weights): %.2f ms\n", median(scenarios));
    const double full_ms = median(full), middle_ms = median(middle);
    std::printf("GPT-2 small's shape, random weights: 12 layers x 12 heads, d_model 768, d_ff 3072, vocab 50257 (F32 file %.0f MB)\n",
                static_cast<double>(std::filesystem::file_size(std::filesystem::path(folder) / "model.safetensors")) / 1e6);
    std::printf("open the folder through the family table (config, safetensors mapped and its weights read in place, vocab, merges): "
                "%.0f ms (median of 3, file in the OS cache)\n",
                median(opens));
    std::printf("forward, %d tokens, every layer's full trace and the top 5: %.1f ms (median of 7)\n", static_cast<int>(ids.size()),
                full_ms);
    std::printf("the same into a new pass (every trace allocated, as for the first sentence): %.1f ms (median of 3)\n",
                median(fresh));
    std::printf("recompute from layer 7 (an edit there): %.1f ms = %.2f of the full pass\n", middle_ms, middle_ms / full_ms);
    // What each head does: the sweep recomputes from each head's layer (on average 6.5 of the
    // 12 layers), so it costs about 78 partial passes; the lens reads 12 streams through the
    // unembedding (12 × n × 768 × 50257 multiply-adds); the roles run one pass of the probe.
    const double passes_peak_mib = peak_rss_kib() / 1024.0;  // open, forward and recompute: the model view's own use
    const stack::Stack st = hf::model_stack(m, &pass.tokens, &pass.token_ids);
    std::vector<double> sweeps, lenses;
    for (int i = 0; i < 3; ++i) {
        auto t0 = Clock::now();
        std::string why;
        if (!interpret::ablation_sweep(st, pass, pass.next_token_top5.front().id, &why)) {
            std::fprintf(stderr, "sweep: %s\n", why.c_str());
            return 1;
        }
        sweeps.push_back(ms_since(t0));
        t0 = Clock::now();
        if (!interpret::logit_lens(st, pass, 5, &why)) return 1;
        lenses.push_back(ms_since(t0));
    }
    std::vector<double> roles;
    int probe_tokens = 0;
    for (int i = 0; i < 3; ++i) {
        const auto t0 = Clock::now();
        const std::optional<interpret::RolesRun> run = interpret::run_head_roles(model, 0, 1, nullptr);
        if (!run) return 1;
        roles.push_back(ms_since(t0));
        probe_tokens = static_cast<int>(run->probe.ids.size());
    }
    std::printf("ablation sweep, each of 144 heads ablated alone and the layers from it recomputed: %.0f ms = %.1f full passes (median of 3)\n",
                median(sweeps), median(sweeps) / full_ms);
    std::printf("logit lens, 12 layers x %d positions through the unembedding: %.0f ms (median of 3)\n", static_cast<int>(ids.size()),
                median(lenses));
    std::printf("head roles: the probe (%d tokens) run and 144 heads scored: %.0f ms (median of 3)\n", probe_tokens, median(roles));
    // The weights as float32 (the F32 file less its header): the memory target is 1.25 times it,
    // plus the traces' activations (a few MiB at 20 tokens).
    const double weights_mib = static_cast<double>(std::filesystem::file_size(std::filesystem::path(folder) / "model.safetensors")) / (1 << 20);
    const double peak_mib = peak_rss_kib() / 1024.0;
    std::printf("peak resident memory after opening, the passes and the recomputes: %.0f MiB = %.2f x the checkpoint's float32 "
                "weights (%.0f MiB; target <= 1.25)\n",
                passes_peak_mib, passes_peak_mib / weights_mib, weights_mib);
    std::printf("peak resident memory with the sweep, the lens (its logits of every layer and position) and the head roles: "
                "%.0f MiB = %.2f x\n",
                peak_mib, peak_mib / weights_mib);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int tokens = 20;
    std::string keep, measure_folder;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--tokens") && i + 1 < argc) tokens = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--keep") && i + 1 < argc) keep = argv[++i];
        else if (!std::strcmp(argv[i], "--measure") && i + 1 < argc) measure_folder = argv[++i];
        else {
            std::fprintf(stderr, "usage: gpt2_bench [--tokens N] [--keep DIR]\n");
            return 2;
        }
    }
    if (!measure_folder.empty()) return measure(measure_folder, tokens);

    const std::string folder = !keep.empty() ? keep
                                             : (std::filesystem::temp_directory_path() / ("attnlab-gpt2-bench-" + std::to_string(getpid()))).string();
    {
        const auto t0 = Clock::now();
        const gpt2::Checkpoint c = gpt2::random_checkpoint(small_config(), 1);
        std::string error;
        if (!gpt2::write_checkpoint(folder, c, gpt2::CheckpointWriteOptions{}, &error)) {
            std::fprintf(stderr, "%s\n", error.c_str());
            return 1;
        }
        std::printf("wrote %s in %.1f s\n", folder.c_str(), ms_since(t0) / 1000.0);
        std::fflush(stdout);
    }
    // A fresh process measures: its peak memory is the app's, opening and running.
    const std::string tokens_text = std::to_string(tokens);
    const pid_t child = fork();
    if (child == 0) {
        execl("/proc/self/exe", argv[0], "--measure", folder.c_str(), "--tokens", tokens_text.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (keep.empty()) std::filesystem::remove_all(folder);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
