#include "model_job.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "checkpoint/hf_cache.hpp"

namespace attn::compute {

ModelResult run_model_recompute(ModelRecompute request) {
    const auto t0 = std::chrono::steady_clock::now();
    ModelResult result;
    result.model = request.model;
    result.layer = request.layer;
    if (request.model == nullptr) {
        request.pass.errors = {"no model is open"};
    } else if (request.sentence) {
        request.pass = lm::forward_text(*request.model, *request.sentence, request.pass.ablated);
        result.ok = request.pass.ok;
    } else if (request.ids) {
        request.pass = lm::forward_ids(*request.model, *request.ids, request.pass.ablated);
        result.ok = request.pass.ok;
        if (result.ok && request.edited && request.layer >= 0 && request.layer < static_cast<int>(request.pass.layers.size())) {
            request.edited = edit_for_text(*request.edited, request.pass, request.layer);
            result.ok = lm::recompute_from(*request.model, request.layer, request.pass, &*request.edited);
        } else {
            request.edited.reset();
        }
    } else {
        result.ok = lm::recompute_from(*request.model, request.layer, request.pass, request.edited ? &*request.edited : nullptr);
    }
    result.pass = std::move(request.pass);
    result.edited = std::move(request.edited);
    result.sentence = std::move(request.sentence);
    result.ids = std::move(request.ids);
    result.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

Scenario edit_for_text(const Scenario& edited, const ModelPass& pass, int layer) {
    Scenario s = edited;
    Matrix x = lm::layer_input(pass.layers[static_cast<size_t>(layer)]);  // (n × d)
    const Matrix& kept = edited.target.embeddings;
    if (kept.cols() == x.cols() && kept.rows() <= x.rows()) x.topRows(kept.rows()) = kept;  // the edit's rows
    s.target.embeddings = std::move(x);
    s.target.tokens = pass.tokens;
    s.target.padding.clear();
    return s;
}

namespace {

// The pass without its layers' traces: what every job reads of the pass on screen.
ModelPass without_traces(const ModelPass& shown) {
    ModelPass job;
    job.ok = shown.ok;
    job.errors = shown.errors;
    job.x0 = shown.x0;
    job.memory0 = shown.memory0;
    job.ablated = shown.ablated;
    job.token_ids = shown.token_ids;
    job.tokens = shown.tokens;
    job.layers.resize(shown.layers.size());
    if (!shown.layers.empty()) job.layers.front().source_x_pe = shown.layers.front().source_x_pe;  // the memory
    return job;
}

// Layer `from`'s output into `into`, where stack::layer_output reads it.
void keep_stream(const Trace& from, Trace& into) {
    into.ok = from.ok;
    into.has_block = from.has_block;
    (from.has_block ? into.block.output : into.output) = stack::layer_output(from);
}

}  // namespace

ModelPass pass_for_job(const ModelPass& shown, int layer) {
    ModelPass job = without_traces(shown);
    const size_t l = static_cast<size_t>(std::clamp(layer, 0, static_cast<int>(shown.layers.size())));
    for (size_t k = 0; k < l; ++k) job.layers[k].ok = shown.layers[k].ok;  // the view keeps these
    if (l > 0) keep_stream(shown.layers[l - 1], job.layers[l - 1]);       // the stream entering ℓ
    return job;
}

ModelPass streams_for_job(const ModelPass& shown) {
    ModelPass job = without_traces(shown);
    job.logits = shown.logits;
    for (size_t l = 0; l < shown.layers.size(); ++l) keep_stream(shown.layers[l], job.layers[l]);
    return job;
}

void install_result(ModelPass& shown, ModelPass&& result, int layer) {
    const size_t l = static_cast<size_t>(std::max(layer, 0));
    std::vector<Trace> layers = std::move(shown.layers);
    shown = std::move(result);
    for (size_t k = 0; k < l && k < layers.size() && k < shown.layers.size(); ++k) shown.layers[k] = std::move(layers[k]);
}

ModelOpened open_model_folder(const std::string& folder, const std::string& sentence, const stack::Ablation& ablated,
                              const std::vector<int>& ids) {
    const auto t0 = std::chrono::steady_clock::now();
    ModelOpened opened;
    opened.asked = opened.folder = folder;
    opened.sentence = sentence;
    // A path as it is; else a model's name ("openai-community/gpt2") found in the Hugging Face cache.
    const hf::ModelLocation where = hf::locate_model(folder);
    if (!where.why_not.empty()) {
        opened.load.errors = {folder + ": " + where.why_not};
        return opened;
    }
    opened.folder = where.folder;
    opened.from_cache = where.from_cache;
    opened.load = lm::load_model(opened.folder);
    if (!opened.load.model && opened.load.inside.size() == 1) {  // the folder above one checkpoint: that one was meant
        opened.folder = opened.load.inside.front();
        opened.load = lm::load_model(opened.folder);
    }
    if (opened.load.model) {
        // those the model has: the view says which of the others were left out
        const stack::Ablation fits = opened.load.model->fitting(ablated);
        opened.pass = ids.empty() ? lm::forward_text(*opened.load.model, sentence, fits) : lm::forward_ids(*opened.load.model, ids, fits);
    }
    opened.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return opened;
}

ModelJobs::ModelJobs(ModelRunner runner) : runner_(std::move(runner)) {}

void ModelJobs::submit(ModelRecompute request) {
    const std::string what = request.sentence ? "running the sentence" : "recomputing from layer " + std::to_string(request.layer + 1);
    job_.queue(what,
               [runner = runner_, request = std::move(request)](JobProgress& progress) mutable {
                   const stack::CancelScope cancel(progress.cancel_flag());  // cancel(): the layers stop between two
                   return runner(std::move(request));
               },
               UnderWay::finish);
}

std::vector<ModelResult> ModelJobs::poll() {
    if (std::optional<ModelResult> landed = job_.take()) done_.push_back(std::move(*landed));
    return std::exchange(done_, {});
}

void ModelJobs::finish() {
    while (job_.running()) {
        job_.wait();
        if (std::optional<ModelResult> landed = job_.take()) done_.push_back(std::move(*landed));
    }
}

}  // namespace attn::compute
