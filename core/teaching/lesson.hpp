#pragma once
// Lessons: a preset (or a scenario), the toggles to set, and a sequence of steps, each
// revealing one stage of the pipeline with a short explanation. Lessons are JSON files in
// assets/lessons/; a teacher writes a new one without rebuilding. Format: docs/lessons.md.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "generate/sampler.hpp"
#include "interpret/head_roles.hpp"
#include "attention/scenario.hpp"
#include "model/stack.hpp"
#include "attention/stage.hpp"
#include "teaching/toggles.hpp"
#include "train/tasks.hpp"
#include "train/trainer.hpp"

namespace attn {

// A trained step's "write" (core/generate): the trained model writes after a prompt, one token
// at a time against its KV caches, and the step shows its layer on the whole text.
struct LessonWriting {
    std::vector<std::string> prompt;  // names of the task's vocabulary
    int tokens = 0;                   // 0 (the prompt's pass alone) to 32
    generate::SamplerSettings sampler;
};

// A named model's KV cache for a step's cost lines ("costs"): what each layer keeps, in the
// checkpoint's dtype. A windowed layer keeps its last `window` tokens; with `global_every` N,
// every N-th layer is global (keeps all), the others windowed (Gemma 3's 5 local : 1 global is 6).
struct LessonCacheShape {
    std::string name;
    int layers = 1, heads = 1, kv_heads = 1, head_dim = 64;
    int window = 0, global_every = 0;
    int bytes = 2;                    // per number: 2 (BF16) or 4 (float32)
};

// A step's "train": the step shows one layer of a small model trained on a task when the
// step opens (core/train; deterministic for the seed, a second or less), the fixed probe as
// its tokens. d_model is 32, the mask causal (none for cross-reverse).
struct LessonTraining {
    train::TaskKind task = train::TaskKind::Reverse;
    int layers = 1;      // 1 or 2
    int heads = 2;       // 1 to 4
    int steps = 200;     // 0 (the untrained model) to 1000
    std::uint64_t seed = 1;
    PositionalEncoding positional = PositionalEncoding::Learned;
    int layer = 1;       // the layer shown, from 1
    int head = 1;        // the head shown, from 1
    stack::HeadSet ablated;  // "ablate": [[layer, head], …] (from 1 in the file): heads zeroed in the trained model
    bool roles = false;      // "roles": true: the step also says every head's role scores (core/interpret)
    std::optional<LessonWriting> write;        // "write": {"prompt", "tokens", "temperature", "top_k", "top_p", "seed"}
    std::vector<LessonCacheShape> costs;       // "costs": [{"name", "layers", "heads", "kv_heads", "head_dim", "window", "global_every", "bytes"}]
};

// What a trained step computed, said under its text (never a number typed into the lesson):
// the held-out accuracy of the trained model, with the ablated heads when the step ablates
// some, and with "roles", every head's role scores on the task's probe of repeated letters.
struct LessonFacts {
    double accuracy = 0.0;                     // the held-out set, every head intact
    std::optional<double> ablated_accuracy;    // the same with the step's heads ablated
    std::vector<interpret::HeadRoles> roles;   // layer by layer; empty without "roles"
    std::vector<std::string> writing;          // with "write": the prompt, each token written, the distribution, the cache
    std::vector<std::string> costs;            // with "costs": one line per shape
    std::string sentence() const;              // the lines the lesson shows
};

struct LessonStep {
    Stage stage = Stage::Tokens;
    std::string title;
    std::string text;
    Toggles toggles;  // applied when the step is shown (on top of the lesson's)
    std::optional<LessonTraining> train;  // the step shows a trained layer (no toggles then)
};

struct Lesson {
    std::string title;
    std::string summary;
    Scenario scenario;
    std::vector<LessonStep> steps;
    std::string file;
};

struct LessonLoad {
    std::optional<Lesson> lesson;
    std::vector<std::string> errors;  // "FILE: line L: step 3 'stage': unknown stage "wieghts""
};

LessonLoad lesson_from_text(const std::string& text, const std::string& source_name);
LessonLoad load_lesson_file(const std::string& path);
// Every *.json in the folder, sorted by file name; failed files are reported in errors.
std::vector<Lesson> load_lessons(const std::string& folder, std::vector<std::string>& errors);
// The lesson a user means by `name`: its path, its file name ("03-masks.json"), that without
// the extension ("03-masks") or the number ("masks"), or its title; -1 when none is.
int find_lesson(const std::vector<Lesson>& lessons, const std::string& name);

// The scenario a step shows: the lesson's scenario with every step's toggles up to and
// including `step` applied in order; for a step with "train", the trained model's layer.
Scenario scenario_at_step(const Lesson& lesson, int step);
// The model a trained step trained, kept by the caller for the next step that trains the same
// way (task, shape, encoding, steps and seed): the steps of a lesson that show several layers,
// heads or ablations of one model train it once.
struct TrainedLessonModel {
    std::string key;
    std::shared_ptr<const train::Trainer> trainer;
};
// Trains as the step says (or takes the model `kept` holds, when it trained the same way) and
// returns the shown layer on the probe as a scenario (the step's heads ablated), and what it
// computed of the trained model when `facts` is given.
Scenario trained_lesson_scenario(const LessonTraining& training, LessonFacts* facts = nullptr, TrainedLessonModel* kept = nullptr);
// A "write" step's text: the prompt's ids and what the trained model wrote after them (the last
// one dropped when the model has no position left to read it), and what writing computed, in
// lines.
std::vector<int> write_text(const train::Model& model, const LessonTraining& training, std::vector<std::string>& lines);

}  // namespace attn
