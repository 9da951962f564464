#pragma once
// The model view's state (panel_model.cpp): an opened checkpoint (GPT-2 or a Hugging Face
// family, language_model.hpp), the sentence, its forward pass, the heads ablated, the layer
// and head opened in the pipeline, and the comparison of two heads or two sentences. No GL.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/weights_comparison.hpp"
#include "checkpoint/hf_cache.hpp"
#include "model/language_model.hpp"
#include "download_job.hpp"
#include "generate/model_writers.hpp"
#include "generate/sampler.hpp"
#include "interpret/ablation_sweep.hpp"
#include "interpret/logit_lens.hpp"
#include "interpret/model_roles.hpp"
#include "job.hpp"
#include "model_job.hpp"
#include "attention/scenario.hpp"
#include "session_file.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {

// The model view's Compare tab: A's weights, B's and B − A. "Two sentences": one head on the
// model view's sentence (A) and on sentence B; "two heads": heads A and B on the sentence; "two
// models": a head of the model view's model (A) and a head of model B (another checkpoint,
// another family) on the same sentence, each tokenised by its own tokenizer.
enum class CompareMode { Sentences, Heads, Models };

struct ModelCompareState {
    bool shown = false;                       // the tab was drawn last frame: keep its numbers computed
    bool select = false;                      // make it the selected tab at the next frame
    CompareMode mode = CompareMode::Sentences;
    std::string sentence_b;                   // the B box
    bool b_follows_a = true;                  // B is A's partner among the articles' sentences until it is typed
    std::string computed_b;                   // what pass_b tokenised
    ModelPass pass_b;                         // sentence B (or, two models, the sentence on model B), with the model view's ablated heads
    std::string asked_b;                      // the sentence running_b runs
    std::uint64_t b_revision = 0;             // counts changes of pass_b
    stack::HeadId head_a{0, 0}, head_b{0, 1}; // two sentences: head_a on both; two models: head_b is model B's
    // Two models: model B, opened from `folder_b` (a folder or a cached model's name) as a job;
    // `b_said`: why it could not open, or what opened. Declared before the jobs that read it:
    // they end (a job waits at its end for what it started) before it goes.
    std::shared_ptr<const lm::Model> model_b;  // shared with the jobs that read it
    std::string folder_b;
    compute::Job<compute::ModelOpened> opening_b;
    compute::Job<ModelPass> running_b;        // pass_b being run, off the window's thread
    std::string b_said;
    bool b_failed = false;
    std::uint64_t model_b_revision = 0;       // counts models B opened
    WeightsComparison result;           // points into the passes: made again whenever one changes
    std::string key;                          // what `result` was computed from
    std::uint64_t generation = 0;             // of `result`: the cards' textures follow it
    HoverState hover, hover_next;             // the three cards' linked hover, apart from the pipeline's
};

// What each head does (panel_model_heads.cpp): the heads' roles scored on a probe (a badge on
// each map of the grid, a table), the logit lens of the sentence, and the ablation sweep. Each
// is computed as a job off the window's thread; what is on screen stays until it lands.
struct RolesOutcome {
    std::optional<interpret::RolesRun> run;
    std::string why;                          // when there is no run
};
struct LensOutcome {
    std::optional<interpret::LogitLens> lens;
    std::vector<std::vector<std::vector<std::string>>> labels;  // [layer][position][k]: each top token as the strip shows it
    std::string why;
    std::uint64_t revision = 0;               // of the pass it read
};
struct SweepOutcome {
    std::optional<interpret::AblationSweep> sweep;
    std::string target;                       // the token as the strip shows it
    std::string why;
    std::uint64_t revision = 0;               // of the pass it read
};

enum class HeadsTab { None, Roles, Lens, Sweep };

struct ModelHeadsState {
    HeadsTab select = HeadsTab::None;         // made the selected tab at the next frame
    bool run_when_open = false;               // its job started once a model and its pass are there
    // Head roles: the probe's block length (0: the model's default) and seed, the badge threshold.
    int repeat_length = 0;
    int seed = 1;
    float threshold = 0.4f;
    bool badges = true;                       // each map of the grid carries its strongest role
    compute::Job<RolesOutcome> roles_job;
    RolesOutcome roles;                       // the last that landed, for the model on screen
    int sort_column = -1;                     // the table's: -1 layer and head; else a role's score
    bool descending = true;
    std::optional<stack::HeadId> picked;      // the head whose probe map is drawn beside the table
    // The logit lens of the pass on screen, made again when it changes while the tab is shown.
    bool lens_shown = false;
    compute::Job<LensOutcome> lens_job;
    LensOutcome lens;
    std::optional<std::pair<int, int>> lens_cell;  // layer, position: its top 5 shown
    // The ablation sweep, run when asked (it recomputes once per head); `target` -1: the prediction.
    int target = -1;
    compute::Job<SweepOutcome> sweep_job;
    SweepOutcome sweep;
};

// The Routing tab (panel_model_routing.cpp): the mixture layer shown, and its cards' own hover.
struct ModelRoutingState {
    int layer = -1;                           // from 0; -1: the first mixture layer
    bool select = false;                      // made the selected tab at the next frame
    HoverState hover, hover_next;
};

// Writing (panel_model_write.cpp): the model writes after the sentence one token at a time,
// each step a job off the window's thread that samples the next token and runs its row
// through every layer against the KV caches (core/generate). The session of writing (the
// writer and its caches) is moved into the step's job and handed back
// with its result, so that one thread at a time holds it.
struct WriteSession {
    std::shared_ptr<const lm::Model> model;    // what the writer reads, alive while a step runs
    generate::Writer writer;
    generate::Writing writing;
};

struct WriteStepOutcome {
    std::shared_ptr<WriteSession> session;     // handed back, whatever happened
    std::optional<generate::Sampled> sampled;  // the choice made (none: `why`)
    generate::StepAttention rows;              // the new token's row of every head
    std::optional<generate::Sampled> next;     // the distribution the token after it will be drawn from
    std::string why;
    double milliseconds = 0.0;
};

// One written token, compactly: what the chips, the maps' new rows and the history show.
struct WrittenToken {
    int id = 0;
    std::string token;                         // as the token strip shows it
    float probability = 0.0f;                  // p of the model (temperature 1)
    int kept = 0;                              // how many tokens the draw chose among
    bool forced = false;                       // chosen by a click, not drawn
    generate::StepAttention rows;              // its row of every head (until a pass covers it)
};

struct ModelWriteState {
    generate::SamplerSettings sampler;
    bool greedy = true;                        // the Greedy switch; temperature kept while it is on
    float temperature = 1.0f;
    int run_count = 10;                        // Run N
    int remaining = 0;                         // tokens Run still writes; Stop sets it to 0
    int run_when_open = 0;                     // Run N asked before a model opened (a test hook): started once it can
    bool step_asked = false;                   // Step pressed: one token
    std::optional<int> forced;                 // a bar clicked: that token next
    bool undo_asked = false;
    std::shared_ptr<WriteSession> session;     // none while a step runs, or before the pass it reads
    compute::Job<WriteStepOutcome> job;
    bool discard = false;                      // the text changed while a step ran: its session is dropped
    int sentence_length = 0;                   // the sentence's own tokens, before the written ones
    std::uint64_t refused_revision = ~0ull;    // the pass the writer refused (said once, not every frame)
    // The cache view's layer as the caches last held it (the session is the step's while it runs).
    struct CacheSnapshot {
        int layer = -1;
        Matrix k, v;                           // (rows × H_kv·d_k), (rows × H_kv·d_v)
        int first_position = 0, window = 0, chunk = 0, kv_heads = 0, key_dim = 0;
        std::string keys_as;                   // what the cached keys went through: "after QK-norm and RoPE", …
        // A Gated DeltaNet layer: k holds each head's state S side by side (d_k × H·d_v), v its convolution's last rows
        bool linear = false;
        long long numbers = 0;                 // what a linear layer keeps, whatever the length
        int tokens = 0;                        // the tokens it has read
    } cache;
    std::vector<WrittenToken> written;         // after the sentence's own tokens, in order
    std::optional<generate::Sampled> last;     // the last step's distribution and choice
    std::optional<generate::Sampled> next;     // the next token's distribution under the sampler
    std::string next_key;                      // what `next` was made from
    std::string said;                          // why writing stopped, or refuses
    std::optional<int> refill_from;            // an edit or an ablation landed: the caches from this layer
    int cache_layer = 0;                       // the cache view's layer
    bool select = false;                       // make the Write tab the selected one at the next frame
    double step_ms = 0.0;
};

// What follows an opening once it lands: attnlab --model's --layer and --head (with heads the
// test hooks ablate), or a session's model choice (its layer with the session's edits, checked
// against the checkpoint, and the tab the session showed, not the model view the opening shows).
struct AfterOpening {
    std::optional<std::pair<int, int>> layer_head;    // 0-based
    std::vector<stack::HeadId> toggles;                // ablation toggles, applied once it is open
    std::optional<session_file::ModelChoice> session;
    std::string scenario_name;                        // the session's scenario: the layer, edited
    std::optional<Pane> pane;
};

struct ModelViewState {
    bool open = false;                        // the model view window is shown
    std::shared_ptr<const lm::Model> model;   // shared with the jobs that read it: replacing it waits for none
    std::string sentence;                     // the sentence box
    std::string computed_sentence;            // what `pass` tokenised
    ModelPass pass;                   // every layer's trace for the sentence; pass.ablated: the heads ablated
    std::uint64_t revision = 0;               // counts changes of `pass`
    double forward_ms = 0.0;                  // the last full or partial recompute
    // Opened in the pipeline: the session's scenario is layer `layer`'s (-1: none). Edits
    // to it recompute the layers after it; `applied` is the scenario that layer's trace in
    // `pass` was computed from, `seen_revision` the session revision last compared.
    int layer = -1, head = 0;
    std::pair<int, int> sidebar_pick{1, 1};   // the side bar's layer and head to open, from 1
    // A layer (and head) asked to open (a map clicked, the side bar's button): opened by the next
    // update, or, while a recompute runs, from the pass it leaves once it lands.
    std::optional<std::pair<int, int>> layer_asked;
    std::string layer_name;                   // the opened scenario's name: leaving it detaches
    // The layer as the model made it when it was opened (its heads ablated): a session keeps
    // the session's scenario as the differences from it (session_file.hpp), not its weights.
    Scenario layer_base;
    // The folder's files when the model was opened: a session knows the model again by them.
    std::vector<session_file::FileStamp> model_files;
    Scenario applied;
    std::uint64_t seen_revision = ~0ull;
    // The recompute after an edit runs as a job (model_job.hpp), off the window's thread; the
    // pass on screen stays until its result is installed. `submitted`: the scenario of the
    // last job submitted (what the screen will show once the jobs finish). Declared after the
    // checkpoint, so the jobs end before it goes.
    Scenario submitted;
    // A new sentence or a change of the heads ablated is under way: edits wait for it (they
    // would recompute the pass it replaces). `job_text`: what the job under way computes, said
    // in the warning colour above the maps while it runs.
    bool reshaping = false;
    std::string job_text;
    std::unique_ptr<compute::ModelJobs> jobs;
    // An opening under way (File → Open model…, --model, a session's model: compute::
    // open_model_folder on a worker): the model on screen stays until it lands, then
    // `after_opening` is carried out.
    compute::Job<compute::ModelOpened> opening;
    std::optional<AfterOpening> after_opening;
    // Asked for by the grid (right-click on a map, "Restore all heads"), applied before the
    // next frame draws: the layers from the lowest changed one on are recomputed.
    std::vector<stack::HeadId> ablation_toggles;    // heads to ablate or restore (the grid, the sweep)
    std::vector<stack::ExpertId> expert_toggles;    // experts to ablate or restore (the Routing tab)
    bool restore_all_heads = false;
    bool restore_all_experts = false;
    ModelCompareState compare;
    ModelHeadsState heads;
    ModelWriteState write;
    ModelRoutingState routing;
    // File → Open model…: the models in the Hugging Face cache, looked for off the window's
    // thread when the path popup opens, then listed under the path.
    compute::Job<std::vector<hf::CachedModel>> scanning;
    std::optional<std::vector<hf::CachedModel>> cached;
    // A model not in the cache, downloaded from the hub on request (Open model…'s Download):
    // its progress and Cancel in the popup while it is shown (`in_popup`: drawn there last
    // frame), else its end said in the status area; `download_said`: how the last one ended.
    std::unique_ptr<compute::DownloadJob> download;
    bool in_popup = false;
    std::string download_said;
    bool download_failed = false;
};

}  // namespace attn::ui
