#include "teaching/lesson.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <sstream>

#include "attention/engine.hpp"
#include "generate/model_writers.hpp"
#include "interpret/model_roles.hpp"
#include "teaching/presets.hpp"
#include "attention/serialize.hpp"
#include "train/trainer.hpp"

namespace attn {

namespace {

// The line of the first occurrence of needle in text (1-based), or 0.
int line_of(const std::string& text, const std::string& needle) {
    const auto at = text.find(needle);
    if (at == std::string::npos) return 0;
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

train::TrainSettings training_settings(const LessonTraining& t) {
    train::TrainSettings s;
    s.task.kind = t.task;
    s.model.layers = t.layers;
    s.model.heads = t.heads;
    s.model.d_model = 32;
    s.model.positional = t.positional;
    if (t.task == train::TaskKind::CrossReverse) s.model.mask = MaskKind::None;  // the answer's key lies ahead
    s.seed = t.seed;
    s.evaluate_every = 0;
    return s;
}

// An object's keys, each checked against the ones it may have.
template <class Fail>
void known_keys(const nlohmann::json& j, std::initializer_list<const char*> known, const std::string& where, Fail&& fail) {
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    for (auto it = j.begin(); it != j.end(); ++it)
        if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; }))
            fail(where + "." + it.key() + "'", "unknown key (expected " + list + ")", nullptr);
}

// A whole number of `j[key]` from lo to hi into `into`, when there.
template <class Fail>
void whole_number(const nlohmann::json& j, const char* key, long long lo, long long hi, const std::string& where, Fail&& fail, int& into) {
    if (!j.contains(key)) return;
    const nlohmann::json& v = j[key];
    if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
        fail(where + "." + key + "'", "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", found " + dump_json(v), &v);
    else into = v.get<int>();
}

// A trained step's "write" object.
template <class Fail>
LessonWriting read_writing(const nlohmann::json& j, const LessonTraining& t, const std::string& step, Fail&& fail) {
    LessonWriting w;
    const std::string where = step + " 'train.write";
    if (!j.is_object()) {
        fail(where + "'", "expected an object {\"prompt\", \"tokens\", \"temperature\", \"top_k\", \"top_p\", \"seed\"}", &j);
        return w;
    }
    known_keys(j, {"prompt", "tokens", "temperature", "top_k", "top_p", "seed"}, where, fail);
    train::TaskOptions task;
    task.kind = t.task;
    const std::vector<std::string> vocabulary = train::task_vocabulary(task);
    if (!j.contains("prompt") || !j["prompt"].is_string()) {
        fail(where + ".prompt'", "expected the prompt as the task's tokens separated by spaces", j.contains("prompt") ? &j["prompt"] : nullptr);
    } else {
        std::istringstream words(j["prompt"].get<std::string>());
        for (std::string word; words >> word;) {
            if (std::find(vocabulary.begin(), vocabulary.end(), word) == vocabulary.end())
                fail(where + ".prompt'", "'" + word + "' is not a token of the " + train::to_string(t.task) + " task", &j["prompt"]);
            w.prompt.push_back(word);
        }
        if (w.prompt.empty()) fail(where + ".prompt'", "the prompt has no token", &j["prompt"]);
    }
    whole_number(j, "tokens", 0, 32, where, fail, w.tokens);
    whole_number(j, "top_k", 0, 1000, where, fail, w.sampler.top_k);
    auto real = [&](const char* key, float& into) {
        if (!j.contains(key)) return;
        if (!j[key].is_number()) fail(where + "." + key + "'", "expected a number, found " + dump_json(j[key]), &j[key]);
        else into = j[key].get<float>();
    };
    real("temperature", w.sampler.temperature);
    real("top_p", w.sampler.top_p);
    if (j.contains("seed")) {
        if (!j["seed"].is_number_integer() || j["seed"].get<long long>() < 0) fail(where + ".seed'", "expected a whole number 0 or more", &j["seed"]);
        else w.sampler.seed = j["seed"].get<std::uint64_t>();
    }
    for (const std::string& e : generate::validate(w.sampler)) fail(where + "'", e, nullptr);
    return w;
}

// A trained step's "costs" list.
template <class Fail>
std::vector<LessonCacheShape> read_costs(const nlohmann::json& j, const std::string& step, Fail&& fail) {
    std::vector<LessonCacheShape> shapes;
    const std::string where = step + " 'train.costs";
    if (!j.is_array()) {
        fail(where + "'", "expected a list of {\"name\", \"layers\", \"heads\", \"kv_heads\", \"head_dim\", \"window\", \"global_every\", \"bytes\"}", &j);
        return shapes;
    }
    for (const nlohmann::json& one : j) {
        LessonCacheShape c;
        if (!one.is_object() || !one.contains("name") || !one["name"].is_string()) {
            fail(where + "'", "each entry is an object with a \"name\"", &one);
            continue;
        }
        known_keys(one, {"name", "layers", "heads", "kv_heads", "head_dim", "window", "global_every", "bytes"}, where, fail);
        c.name = one["name"].get<std::string>();
        whole_number(one, "layers", 1, 1000, where, fail, c.layers);
        whole_number(one, "heads", 1, 1024, where, fail, c.heads);
        whole_number(one, "kv_heads", 1, 1024, where, fail, c.kv_heads);
        whole_number(one, "head_dim", 1, 4096, where, fail, c.head_dim);
        whole_number(one, "window", 0, 1 << 24, where, fail, c.window);
        whole_number(one, "global_every", 0, 1000, where, fail, c.global_every);
        whole_number(one, "bytes", 1, 4, where, fail, c.bytes);
        if (c.heads % c.kv_heads != 0)
            fail(where + ".kv_heads'", c.name + ": " + std::to_string(c.kv_heads) + " K/V heads do not divide " + std::to_string(c.heads) + " query heads", nullptr);
        shapes.push_back(std::move(c));
    }
    return shapes;
}

// A step's "train" object; each problem through fail(where, what, value).
template <class Fail>
LessonTraining read_training(const nlohmann::json& j, const std::string& where, Fail&& fail) {
    LessonTraining t;
    if (!j.is_object()) {
        fail(where + " 'train'", "expected an object {\"task\", \"layers\", \"heads\", \"steps\", \"seed\", \"layer\", \"head\"}", &j);
        return t;
    }
    auto integer = [&](const char* key, int lo, int hi, int& into) {
        if (!j.contains(key)) return;
        const nlohmann::json& v = j[key];
        if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
            fail(where + " 'train." + key + "'", "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                                                     ", found " + dump_json(v), &v);
        else into = v.get<int>();
    };
    std::string tasks;
    for (train::TaskKind kind : train::all_tasks()) tasks += (tasks.empty() ? "" : ", ") + std::string(train::to_string(kind));
    if (!j.contains("task")) {
        fail(where + " 'train.task'", "missing (expected one of " + tasks + ")", nullptr);
    } else {
        const auto kind = j["task"].is_string() ? train::task_from_string(j["task"].get<std::string>()) : std::nullopt;
        if (!kind) fail(where + " 'train.task'", "unknown task " + dump_json(j["task"]) + "; expected one of " + tasks, &j["task"]);
        else t.task = *kind;
    }
    integer("layers", 1, 2, t.layers);
    integer("heads", 1, 4, t.heads);
    integer("steps", 0, 1000, t.steps);
    integer("layer", 1, 2, t.layer);
    integer("head", 1, 4, t.head);
    if (j.contains("seed")) {
        const nlohmann::json& v = j["seed"];
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<long long>() >= 0))
            fail(where + " 'train.seed'", "expected a whole number 0 or more, found " + dump_json(v), &v);
        else t.seed = v.get<std::uint64_t>();
    }
    if (j.contains("positional_encoding")) {
        const nlohmann::json& v = j["positional_encoding"];
        const auto pe = v.is_string() ? positional_from_string(v.get<std::string>()) : std::nullopt;
        if (!pe) fail(where + " 'train.positional_encoding'", "expected none, sinusoidal, learned, rope or alibi, found " + dump_json(v), &v);
        else t.positional = *pe;
    }
    if (j.contains("roles")) {
        const nlohmann::json& v = j["roles"];
        if (!v.is_boolean()) fail(where + " 'train.roles'", "expected true or false, found " + dump_json(v), &v);
        else t.roles = v.get<bool>();
    }
    if (j.contains("ablate")) {
        const nlohmann::json& v = j["ablate"];
        const auto pair_ok = [](const nlohmann::json& p) {
            return p.is_array() && p.size() == 2 && p[0].is_number_integer() && p[1].is_number_integer();
        };
        if (!v.is_array() || !std::all_of(v.begin(), v.end(), pair_ok)) {
            fail(where + " 'train.ablate'", "expected a list of [layer, head] pairs, from 1, found " + dump_json(v), &v);
        } else {
            for (const nlohmann::json& p : v) {
                const long long layer = p[0].get<long long>(), head = p[1].get<long long>();
                if (layer < 1 || head < 1 || layer > t.layers || head > t.heads)
                    fail(where + " 'train.ablate'", "head " + std::to_string(head) + " of layer " + std::to_string(layer) +
                                                        " is not in a model of " + std::to_string(t.layers) + " layers of " +
                                                        std::to_string(t.heads) + " heads",
                         &p);
                else t.ablated.insert({static_cast<int>(layer) - 1, static_cast<int>(head) - 1});
            }
        }
    }
    if (j.contains("write")) t.write = read_writing(j["write"], t, where, fail);
    if (j.contains("costs")) t.costs = read_costs(j["costs"], where, fail);
    for (auto it = j.begin(); it != j.end(); ++it) {
        static const char* known[] = {"task", "layers", "heads", "steps", "seed", "positional_encoding", "layer", "head", "ablate", "roles",
                                      "write", "costs"};
        if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return it.key() == k; }))
            fail(where + " 'train." + it.key() + "'",
                 "unknown key (expected task, layers, heads, steps, seed, positional_encoding, layer, head, ablate, roles, write, costs)",
                 nullptr);
    }
    if (t.layer > t.layers)
        fail(where + " 'train.layer'", "layer " + std::to_string(t.layer) + " of a model with " + std::to_string(t.layers) +
                                           (t.layers == 1 ? " layer" : " layers"), nullptr);
    if (t.head > t.heads)
        fail(where + " 'train.head'", "head " + std::to_string(t.head) + " of a model with " + std::to_string(t.heads) +
                                          (t.heads == 1 ? " head" : " heads"), nullptr);
    for (const std::string& e : train::validate(training_settings(t))) fail(where + " 'train'", e, nullptr);
    return t;
}

}  // namespace

namespace {

// What a named model's KV cache costs, per token and at 4k, 32k and 128k tokens, beside
// multi-head attention with the same query heads.
std::string cost_line(const LessonCacheShape& c) {
    using generate::bytes_text;
    std::vector<generate::LayerCacheShape> layers;
    for (int l = 0; l < c.layers; ++l) {
        const bool global = c.window == 0 || (c.global_every > 0 && (l + 1) % c.global_every == 0);
        layers.push_back({c.kv_heads, c.head_dim, c.head_dim, global ? 0 : c.window});
    }
    std::string line = c.name + " (" + std::to_string(c.layers) + " layers, " + std::to_string(c.heads) + " query heads on " +
                       std::to_string(c.kv_heads) + (c.kv_heads == 1 ? " K/V head" : " K/V heads") + " of " + std::to_string(c.head_dim) +
                       (c.window > 0 ? ", window " + std::to_string(c.window) +
                                           (c.global_every > 0 ? " on all but every " + std::to_string(c.global_every) + "th layer" : "")
                                     : std::string()) +
                       ", " + std::to_string(c.bytes) + " bytes a number): the first token's K and V " +
                       bytes_text(generate::cache_cost(layers, c.heads, c.bytes, 1).bytes_per_token);
    for (long long length : {4096LL, 32768LL, 131072LL}) {
        const generate::CacheCost cost = generate::cache_cost(layers, c.heads, c.bytes, length);
        line += "; " + std::to_string(length / 1024) + "k tokens " + bytes_text(cost.bytes) + " (multi-head attention " +
                bytes_text(cost.multi_head_bytes) + ")";
    }
    return line;
}

}  // namespace

namespace {

// A lesson's model, trained as its key says. Training is deterministic for the key, so the
// few trained last in this process are kept: the steps of a lesson opened one after another
// (a window for each, as the classroom tests render them) train each model once.
std::shared_ptr<const train::Trainer> trained_model(const std::string& key, const LessonTraining& t) {
    static std::mutex mutex;
    static std::vector<std::pair<std::string, std::shared_ptr<const train::Trainer>>> recent;  // newest last
    {
        const std::lock_guard<std::mutex> lock(mutex);
        for (const auto& [k, trainer] : recent)
            if (k == key) return trainer;
    }
    std::vector<std::string> errors;
    std::optional<train::Trainer> fresh = train::Trainer::create(training_settings(t), errors);
    if (!fresh) return nullptr;
    fresh->run(t.steps);
    auto trainer = std::make_shared<const train::Trainer>(std::move(*fresh));
    const std::lock_guard<std::mutex> lock(mutex);
    recent.emplace_back(key, trainer);
    if (recent.size() > 4) recent.erase(recent.begin());
    return trainer;
}

}  // namespace

std::vector<int> write_text(const train::Model& model, const LessonTraining& t, std::vector<std::string>& lines) {
    generate::WrittenText written = generate::write_after(model, t.write->prompt, t.write->tokens, t.write->sampler, t.ablated);
    lines = std::move(written.lines);
    return written.ids;
}

Scenario trained_lesson_scenario(const LessonTraining& t, LessonFacts* facts, TrainedLessonModel* kept) {
    const std::string key = std::string(train::to_string(t.task)) + "/" + std::to_string(t.layers) + "/" + std::to_string(t.heads) + "/" +
                            std::to_string(t.steps) + "/" + std::to_string(t.seed) + "/" + to_string(t.positional);
    std::shared_ptr<const train::Trainer> trainer = kept != nullptr && kept->key == key ? kept->trainer : trained_model(key, t);
    if (!trainer) return Scenario{};  // the loader validated the settings: not reached
    if (kept != nullptr) *kept = TrainedLessonModel{key, trainer};
    // The layer on the task's probe, or (with "write") on the prompt and what the model wrote.
    train::ModelInput input = trainer->probe().input;
    std::vector<std::string> written_lines;
    if (t.write) {
        input = train::ModelInput{};
        input.tokens = write_text(trainer->model(), t, written_lines);
    }
    const train::ForwardPass pass = train::forward(trainer->model(), input, t.ablated);
    if (!pass.ok) return Scenario{};
    Scenario s = train::trained_layer_scenario(trainer->model(), input, pass, t.layer - 1);
    stack::ablate(s, t.ablated, t.layer - 1);
    s.name = std::string(train::to_string(t.task)) + " after " + std::to_string(t.steps) + " steps: layer " +
             std::to_string(t.layer) + " of " + std::to_string(t.layers) + (t.ablated.empty() ? "" : ", heads ablated") +
             (t.write ? ", on what it wrote" : "");
    if (facts != nullptr) {
        *facts = LessonFacts{};
        facts->accuracy = train::evaluate(trainer->model(), trainer->held_out(), t.steps).accuracy;
        if (!t.ablated.empty()) facts->ablated_accuracy = train::evaluate(trainer->model(), trainer->held_out(), t.steps, t.ablated).accuracy;
        facts->writing = std::move(written_lines);
        for (const LessonCacheShape& c : t.costs) facts->costs.push_back(cost_line(c));
        if (t.roles)
            if (std::optional<interpret::RolesRun> run = interpret::run_head_roles(trainer->model(), training_settings(t).task, 0, 1, nullptr))
                facts->roles = std::move(run->heads);
    }
    return s;
}

std::string LessonFacts::sentence() const {
    auto percent = [](double v) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f%%", 100.0 * v);
        return std::string(text);
    };
    std::string said = "Held-out accuracy: " + percent(accuracy);
    if (ablated_accuracy) said += "; with the step's heads ablated: " + percent(*ablated_accuracy);
    said += ".";
    for (const std::string& line : writing) said += "\n" + line;
    for (const std::string& line : costs) said += "\n" + line;
    for (const interpret::HeadRoles& h : roles) {
        said += "\nlayer " + std::to_string(h.head.layer + 1) + ", head " + std::to_string(h.head.head + 1) + ":";
        for (interpret::Role r : interpret::kRoles) {
            char score[48];
            std::snprintf(score, sizeof score, " %s %.2f", interpret::role_name(r), h.scores[r]);
            said += score;
        }
        if (const std::optional<interpret::Role> role = interpret::strongest_role(h.scores, 0.5f))
            said += std::string(" \xE2\x86\x92 ") + interpret::role_name(*role);
    }
    return said;
}

LessonLoad lesson_from_text(const std::string& text, const std::string& source) {
    LessonLoad result;
    std::optional<nlohmann::json> parsed = parse_json(text, source, result.errors, json_limits::kLesson);
    if (!parsed) return result;
    const nlohmann::json& j = *parsed;
    // Semantic errors point at the line of the offending value when it can be found.
    auto fail = [&](const std::string& where, const std::string& what, const nlohmann::json* value) {
        const int line = value ? line_of(text, dump_json(*value)) : 0;
        result.errors.push_back(source + ": " + (line ? "line " + std::to_string(line) + ": " : std::string()) + where +
                                ": " + what);
    };
    if (!j.is_object()) {
        fail("top level", "expected a lesson object {\"title\", \"preset\" or \"scenario\", \"steps\"}", nullptr);
        return result;
    }
    Lesson lesson;
    lesson.file = source;
    for (auto it = j.begin(); it != j.end(); ++it) {
        static const char* known[] = {"title", "summary", "preset", "scenario", "toggles", "steps"};
        if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return it.key() == k; }))
            fail("'" + it.key() + "'", "unknown key", nullptr);
    }
    if (!j.contains("title") || !j["title"].is_string()) fail("'title'", "expected a string", nullptr);
    else lesson.title = j["title"].get<std::string>();
    if (j.contains("summary") && j["summary"].is_string()) lesson.summary = j["summary"].get<std::string>();

    // Steps that all train need no scenario of the lesson's own.
    bool all_train = j.contains("steps") && j["steps"].is_array() && !j["steps"].empty();
    if (all_train)
        for (const auto& js : j["steps"]) all_train = all_train && js.is_object() && js.contains("train");
    if (j.contains("preset") && j.contains("scenario")) {
        fail("top level", "give exactly one of 'preset' (a preset name) or 'scenario' (a scenario object)", nullptr);
    } else if (!j.contains("preset") && !j.contains("scenario")) {
        if (!all_train)
            fail("top level", "give exactly one of 'preset' (a preset name) or 'scenario' (a scenario object)", nullptr);
    } else if (j.contains("preset")) {
        const Preset* p = j["preset"].is_string() ? find_preset(j["preset"].get<std::string>()) : nullptr;
        if (!p) fail("'preset'", "unknown preset " + dump_json(j["preset"]) + " (attnlab --list-presets)", &j["preset"]);
        else lesson.scenario = p->scenario;
    } else {
        ScenarioLoad load = scenario_from_json(j["scenario"], source + ": 'scenario'");
        result.errors.insert(result.errors.end(), load.errors.begin(), load.errors.end());
        if (load.scenario) lesson.scenario = std::move(*load.scenario);
    }
    if (j.contains("toggles")) {
        std::vector<std::string> errors;
        const Toggles t = toggles_from_json(j["toggles"], "'toggles' ", errors);
        for (auto& e : errors) fail("toggles", e, nullptr);
        std::string error;
        if (errors.empty() && !apply(t, lesson.scenario, &error)) fail("'toggles'", error, nullptr);
    }
    if (!j.contains("steps") || !j["steps"].is_array() || j["steps"].empty()) {
        fail("'steps'", "expected a non-empty array of steps", nullptr);
    } else {
        for (size_t i = 0; i < j["steps"].size(); ++i) {
            const auto& js = j["steps"][i];
            const std::string where = "step " + std::to_string(i + 1);
            if (!js.is_object()) {
                fail(where, "expected an object {\"stage\", \"title\", \"text\"}", nullptr);
                continue;
            }
            LessonStep step;
            if (!js.contains("stage") || !js["stage"].is_string() || !stage_from_string(js["stage"].get<std::string>())) {
                std::string names;
                for (Stage stage : all_stages()) names += std::string(names.empty() ? "" : ", ") + to_string(stage);
                fail(where + " 'stage'", "unknown stage " + (js.contains("stage") ? dump_json(js["stage"]) : "(missing)") +
                                             "; expected one of " + names,
                     js.contains("stage") ? &js["stage"] : nullptr);
            } else {
                step.stage = *stage_from_string(js["stage"].get<std::string>());
            }
            if (!js.contains("text") || !js["text"].is_string()) fail(where + " 'text'", "expected a string", nullptr);
            else step.text = js["text"].get<std::string>();
            if (js.contains("title") && js["title"].is_string()) step.title = js["title"].get<std::string>();
            if (js.contains("toggles")) {
                std::vector<std::string> errors;
                step.toggles = toggles_from_json(js["toggles"], where + " toggles ", errors);
                for (auto& e : errors) fail(where, e, nullptr);
            }
            if (js.contains("train")) {
                step.train = read_training(js["train"], where, fail);
                if (js.contains("toggles"))
                    fail(where + " 'toggles'", "a step with 'train' shows the trained model as it is: no toggles with it", nullptr);
            }
            for (auto it = js.begin(); it != js.end(); ++it)
                if (it.key() != "stage" && it.key() != "title" && it.key() != "text" && it.key() != "toggles" && it.key() != "train")
                    fail(where + " '" + it.key() + "'", "unknown key", nullptr);
            lesson.steps.push_back(std::move(step));
        }
    }
    if (result.errors.empty()) {
        // Every step's scenario must be computable, so a lesson never opens on an error.
        for (size_t i = 0; i < lesson.steps.size(); ++i) {
            if (lesson.steps[i].train) continue;  // its settings were validated; it trains when it opens
            Scenario s = lesson.scenario;
            bool ok = true;
            for (size_t k = 0; k <= i && ok; ++k) {
                std::string error;
                ok = apply(lesson.steps[k].toggles, s, &error);
                if (!ok) fail("step " + std::to_string(i + 1), error, nullptr);
            }
            if (ok)
                for (auto& e : validate(s)) fail("step " + std::to_string(i + 1), e, nullptr);
        }
    }
    if (result.errors.empty()) result.lesson = std::move(lesson);
    return result;
}

LessonLoad load_lesson_file(const std::string& path) {
    return guard_memory<LessonLoad>(path, "lesson", [&] {
        LessonLoad result;
        std::optional<std::string> text = read_text_file(path, 8u << 20, "lesson", result.errors);
        if (!text) return result;
        return lesson_from_text(*text, path);
    });
}

int find_lesson(const std::vector<Lesson>& lessons, const std::string& name) {
    for (std::size_t i = 0; i < lessons.size(); ++i) {
        const std::filesystem::path file(lessons[i].file);
        const std::string stem = file.stem().string();
        if (lessons[i].file == name || file.filename().string() == name || stem == name || lessons[i].title == name ||
            (stem.size() > 3 && stem.substr(3) == name))
            return static_cast<int>(i);
    }
    return -1;
}

std::vector<Lesson> load_lessons(const std::string& folder, std::vector<std::string>& errors) {
    std::vector<std::string> paths;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec))
        if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
    if (ec) errors.push_back(folder + ": " + ec.message());
    std::sort(paths.begin(), paths.end());
    std::vector<Lesson> lessons;
    for (const auto& p : paths) {
        LessonLoad load = load_lesson_file(p);
        errors.insert(errors.end(), load.errors.begin(), load.errors.end());
        if (load.lesson) lessons.push_back(std::move(*load.lesson));
    }
    return lessons;
}

Scenario scenario_at_step(const Lesson& lesson, int step) {
    if (step >= 0 && step < static_cast<int>(lesson.steps.size()) && lesson.steps[static_cast<size_t>(step)].train)
        return trained_lesson_scenario(*lesson.steps[static_cast<size_t>(step)].train);
    Scenario s = lesson.scenario;
    for (int k = 0; k <= step && k < static_cast<int>(lesson.steps.size()); ++k) apply(lesson.steps[static_cast<size_t>(k)].toggles, s, nullptr);
    return s;
}

}  // namespace attn
