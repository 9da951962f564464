#pragma once
// A checkpoint's passes (language_model.hpp: GPT-2 or a Hugging Face family) as jobs of the
// compute layer: the recompute after an edit, the layers after a head ablated or restored,
// and a new sentence. The model view submits the request with what it reads of the pass on
// screen (pass_for_job: the stream entering the layer; the weights are shared with the
// checkpoint); a worker thread runs it, and the view installs the result when it comes
// (install_result), keeping the pass on screen until then. A newer request supersedes the
// one waiting; the one running finishes and is installed (it is a state the user passed
// through).
//
//   view ──submit(request)──▶ waiting ──▶ running (worker thread) ──▶ done ──poll()──▶ view
//
// No ImGui, no GL: the runner is a plain function, and a test gives a stub to see that the
// view only submits.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/language_model.hpp"
#include "attention/scenario.hpp"
#include "job.hpp"

namespace attn::compute {

// Layer `layer` of `pass` as `edited`, or, with no `edited`, as the checkpoint holds it with
// the heads of pass.ablated zeroed (the heads ablated changed), then the layers after it; or,
// with `sentence`, that sentence from its first layer, pass.ablated applied. The model must
// The model is shared with the job, which keeps it alive: a view that replaces its model drops
// the jobs under way (cancel) and never waits for them.
struct ModelRecompute {
    std::shared_ptr<const lm::Model> model;
    ModelPass pass;   // pass_for_job of the pass on screen: the layers before `layer` are the view's
    int layer = 0;
    std::optional<Scenario> edited;       // layer `layer`'s scenario as the session holds it
    std::optional<std::string> sentence;  // a new sentence, run whole
    // Ids run whole (a text the model wrote on): with `edited`, layer `layer` is that scenario's
    // weights and switches on the longer text (edit_for_text), the layers after it recomputed.
    std::optional<std::vector<int>> ids;
};

struct ModelResult {
    std::shared_ptr<const lm::Model> model;  // the model it was computed on
    bool ok = false;          // false: pass.errors say why
    ModelPass pass;
    int layer = 0;
    std::optional<Scenario> edited;       // what layer `layer` of `pass` was computed from, when edited
    std::optional<std::string> sentence;  // the sentence `pass` ran, when a new one
    std::optional<std::vector<int>> ids;  // the ids `pass` ran, when asked by ids
    double milliseconds = 0.0;
};

// Layer ℓ's edited scenario carried to a longer text: its weights and switches as edited, X
// the stream entering ℓ in `pass` with the rows the edit held (the shorter text's, edited)
// kept, and the longer text's tokens.
Scenario edit_for_text(const Scenario& edited, const ModelPass& pass, int layer);

// What a job recomputing from layer ℓ needs of the pass on screen: the pass without its
// layers' traces but for the stream entering ℓ (and, in cross-attention, the memory); the
// layers before ℓ are only marked computed. A few n × d matrices, where the whole pass is
// about 50 MB at GPT-2 small's shape and 54 tokens (copying it held a frame for 15 ms).
ModelPass pass_for_job(const ModelPass& shown, int layer);
// Every layer's output (the stream each layer leaves), x₀, the logits and the heads ablated,
// none of the maps: what a job over every layer reads (the logit lens, the ablation sweep).
ModelPass streams_for_job(const ModelPass& shown);
// A job's result into the pass on screen: its layers from ℓ on, the head's outputs, the
// prediction and the heads ablated; the layers before ℓ stay as they are.
void install_result(ModelPass& shown, ModelPass&& result, int layer);

// Runs one request (lm::recompute_from); the worker's default. Tests give their own.
using ModelRunner = std::function<ModelResult(ModelRecompute)>;
ModelResult run_model_recompute(ModelRecompute request);

// Opening a checkpoint folder as a job: the folder read (or, when it holds none itself, the one
// checkpoint inside it; or, for a name such as "openai-community/gpt2" that is no path, its
// snapshot in the Hugging Face cache, hf_cache.hpp) and the first pass of `sentence` on it,
// with the heads of `ablated` that the model has zeroed (a session's). Nothing of the model on
// screen is touched: the view installs the result when it lands (or says why it could not open).
struct ModelOpened {
    std::string asked;          // the folder asked for
    std::string folder;         // the folder read: `asked`, its snapshot in the Hugging Face cache, or the one checkpoint inside it
    std::string from_cache;     // the model's name, when `asked` named a model in the Hugging Face cache
    lm::ModelLoad load;
    ModelPass pass;             // `sentence` on the model, when it opened
    std::string sentence;
    double milliseconds = 0.0;  // the whole job
};
// `ids`, when given, are the text's ids the pass runs (a session's text the model wrote on), `sentence` their text.
ModelOpened open_model_folder(const std::string& folder, const std::string& sentence, const stack::Ablation& ablated = {},
                              const std::vector<int>& ids = {});

class ModelJobs {
public:
    explicit ModelJobs(ModelRunner runner = run_model_recompute);
    ~ModelJobs() = default;  // the job under way is cancelled and waited for (Job's teardown)
    ModelJobs(const ModelJobs&) = delete;
    ModelJobs& operator=(const ModelJobs&) = delete;

    // Starts the request now when nothing runs, else keeps it as the next one (replacing an
    // older one waiting).
    void submit(ModelRecompute request);
    // The results finished since the last poll, oldest first (one a frame, or several that
    // finish() gathered); starts the request waiting.
    // Never blocks.
    std::vector<ModelResult> poll();
    bool busy() const { return job_.running(); }
    // Drops the request running and the one waiting (their results never land; the one running
    // stops at its next layer, stack::CancelScope); never waits.
    void cancel() { job_.cancel(); }
    // Blocks until nothing runs or waits (the results stay for poll): before the view changes
    // the pass or the checkpoint itself, and in tests.
    void finish();

private:
    ModelRunner runner_;
    Job<ModelResult> job_;
    std::vector<ModelResult> done_;
};

}  // namespace attn::compute
