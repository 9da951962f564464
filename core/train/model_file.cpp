// [SECTION] Writing
// [SECTION] Reading: a reader that collects messages
// [SECTION] Reading: the model, the training settings, the tensors
// [SECTION] A run's history
#include "train/model_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "attention/serialize.hpp"

namespace attn::train {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "attnlab-model";
constexpr int kVersion = 1;

// [SECTION] Writing

json tensor_to_json(const ParamView& view) {
    json rows = json::array();
    for (Eigen::Index r = 0; r < view.rows; ++r) {
        json row = json::array();
        for (Eigen::Index c = 0; c < view.cols; ++c) row.push_back(static_cast<double>(view.data[r * view.cols + c]));
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace

json config_to_json(const ModelConfig& c) {
    return json{{"d_model", c.d_model},         {"heads", c.heads},
                {"layers", c.layers},           {"positional", to_string(c.positional)},
                {"mask", to_string(c.mask)},    {"window", c.window},
                {"attention", to_string(c.attention)}, {"scale", c.scale},
                {"biases", c.biases},           {"residual", c.residual},
                {"layer_norm", c.layer_norm},   {"norm", to_string(c.norm)},
                {"feed_forward", c.feed_forward}, {"d_ff", c.d_ff},
                {"activation", to_string(c.activation)}, {"max_positions", c.max_positions}};
}

json training_to_json(const TrainSettings& s) {
    return json{{"task", to_string(s.task.kind)},
                {"length", s.task.length},
                {"symbols", s.task.symbols},
                {"seed", s.seed},
                {"batch_size", s.batch_size},
                {"learning_rate", s.learning_rate},
                {"warmup_steps", s.warmup_steps},
                {"weight_decay", s.weight_decay},
                {"beta1", s.beta1},
                {"beta2", s.beta2},
                {"adam_epsilon", s.adam_epsilon},
                {"clip_norm", s.clip_norm},
                {"held_out_size", s.held_out_size},
                {"evaluate_every", s.evaluate_every},
                {"snapshot_every", s.snapshot_every},
                {"snapshot_budget_bytes", s.snapshot_budget_bytes}};
}

namespace {

json tensors_to_json(const ModelParams& params) {
    json tensors = json::object();
    for (const ParamView& view : parameter_views(params)) tensors[view.name] = tensor_to_json(view);
    return tensors;
}

}  // namespace

json model_to_json(const ModelFile& file) {
    json j{{"format", kFormat},
           {"version", kVersion},
           {"vocabulary", file.model.vocabulary},
           {"model", config_to_json(file.model.config)},
           {"training", training_to_json(file.settings)},
           {"steps", file.steps},
           {"parameters", tensors_to_json(file.model.params)}};
    if (file.optimiser)
        j["optimiser"] = json{{"steps", file.optimiser->steps},
                              {"m", tensors_to_json(file.optimiser->m)},
                              {"v", tensors_to_json(file.optimiser->v)}};
    return j;
}

ModelFile model_file_of(const Trainer& trainer) {
    return {trainer.model(), trainer.settings(), trainer.steps_done(), trainer.optimiser().state()};
}

bool save_model_file(const std::string& path, const ModelFile& file, std::string* error) {
    auto all_finite = [&](const ModelParams& params, const std::string& what) {
        for (const ParamView& view : parameter_views(params)) {
            const Cell cell = first_non_finite(view.map());
            if (cell.valid()) {
                if (error)
                    *error = path + ": not saved: " + what + " '" + view.name + "' row " + std::to_string(cell.row + 1) +
                             " column " + std::to_string(cell.col + 1) + " is not finite (the training diverged)";
                return false;
            }
        }
        return true;
    };
    if (!all_finite(file.model.params, "parameter")) return false;
    if (file.optimiser && (!all_finite(file.optimiser->m, "the optimiser's first moment of") ||
                           !all_finite(file.optimiser->v, "the optimiser's second moment of")))
        return false;
    return write_file_atomic(path, dump_json(model_to_json(file)), error);
}

// [SECTION] Reading: a reader that collects messages

namespace {

std::string type_name(const json& j) {
    if (j.is_null()) return "null";
    if (j.is_boolean()) return "a boolean";
    if (j.is_number()) return "a number";
    if (j.is_string()) return "a string";
    if (j.is_array()) return "an array";
    return "an object";
}

struct Reader {
    std::string source;
    std::vector<std::string> errors;
    std::size_t dropped = 0;

    void fail(const std::string& where, const std::string& what) {
        if (errors.size() < 20) errors.push_back(source + ": " + where + ": " + what);
        else ++dropped;
    }
    std::optional<long long> integer(const json& j, const std::string& key, long long lo, long long hi) {
        if (!j.is_number_integer()) {
            fail("key '" + key + "'", "expected an integer, found " + type_name(j) + " " + dump_json(j));
            return std::nullopt;
        }
        const long long v = j.is_number_unsigned() && j.get<unsigned long long>() > static_cast<unsigned long long>(hi)
                                ? hi + 1
                                : j.get<long long>();
        if (v < lo || v > hi) {
            fail("key '" + key + "'", "expected " + std::to_string(lo) + " to " + std::to_string(hi) + ", found " + dump_json(j));
            return std::nullopt;
        }
        return v;
    }
    std::optional<double> number(const json& j, const std::string& key) {
        if (!j.is_number()) {
            fail("key '" + key + "'", "expected a number, found " + type_name(j) + " " + dump_json(j));
            return std::nullopt;
        }
        return j.get<double>();
    }
    std::optional<bool> boolean(const json& j, const std::string& key) {
        if (!j.is_boolean()) {
            fail("key '" + key + "'", "expected true or false, found " + type_name(j) + " " + dump_json(j));
            return std::nullopt;
        }
        return j.get<bool>();
    }
    template <class T>
    std::optional<T> named(const json& j, const std::string& key, std::optional<T> (*parse)(const std::string&),
                           const char* expected) {
        std::optional<T> v = j.is_string() ? parse(j.get<std::string>()) : std::nullopt;
        if (!v) fail("key '" + key + "'", std::string("expected one of ") + expected + ", found " + dump_json(j));
        return v;
    }
};

// Reads an object's keys with one handler per known key; unknown keys and (when required)
// missing ones are messages.
using Handlers = std::map<std::string, std::function<void(const json&, const std::string& key)>>;
void read_object(Reader& r, const json& j, const std::string& prefix, const Handlers& handlers, bool all_required) {
    if (!j.is_object()) {
        r.fail("key '" + prefix + "'", "expected an object, found " + type_name(j));
        return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = prefix + "." + it.key();
        const auto handler = handlers.find(it.key());
        if (handler == handlers.end()) {
            std::string known;
            for (const auto& [name, unused] : handlers) known += (known.empty() ? "" : ", ") + name;
            r.fail("key '" + key + "'", "unknown key (expected " + known + ")");
        } else {
            handler->second(it.value(), key);
        }
    }
    if (all_required)
        for (const auto& [name, unused] : handlers)
            if (!j.contains(name)) r.fail("key '" + prefix + "." + name + "'", "missing");
}

// [SECTION] Reading: the model, the training settings, the tensors

void read_config(Reader& r, const json& j, ModelConfig& c) {
    auto int_into = [&](int& field, long long lo, long long hi) {
        return [&r, &field, lo, hi](const json& v, const std::string& key) {
            if (auto x = r.integer(v, key, lo, hi)) field = static_cast<int>(*x);
        };
    };
    auto bool_into = [&](bool& field) {
        return [&r, &field](const json& v, const std::string& key) {
            if (auto x = r.boolean(v, key)) field = *x;
        };
    };
    Handlers h{
        {"d_model", int_into(c.d_model, kMinDModel, kMaxDModel)},
        {"heads", int_into(c.heads, 1, kMaxHeads)},
        {"layers", int_into(c.layers, 1, kMaxLayers)},
        {"window", int_into(c.window, 1, kMaxPositions)},
        {"d_ff", int_into(c.d_ff, 0, 8 * kMaxDModel)},
        {"max_positions", int_into(c.max_positions, 1, kMaxPositions)},
        {"scale", bool_into(c.scale)},
        {"biases", bool_into(c.biases)},
        {"residual", bool_into(c.residual)},
        {"layer_norm", bool_into(c.layer_norm)},
        {"feed_forward", bool_into(c.feed_forward)},
        {"positional", [&](const json& v, const std::string& key) {
             if (auto x = r.named(v, key, positional_from_string, "none, sinusoidal, learned, rope, alibi")) c.positional = *x;
         }},
        {"mask", [&](const json& v, const std::string& key) {
             if (auto x = r.named(v, key, mask_from_string, "none, causal, padding, window, custom")) c.mask = *x;
         }},
        {"attention", [&](const json& v, const std::string& key) {
             if (auto x = r.named(v, key, attention_from_string, "self, cross")) c.attention = *x;
         }},
        {"norm", [&](const json& v, const std::string& key) {
             if (auto x = r.named(v, key, norm_placement_from_string, "pre, post")) c.norm = *x;
         }},
        {"activation", [&](const json& v, const std::string& key) {
             if (auto x = r.named(v, key, activation_from_string, "relu, gelu")) c.activation = *x;
         }},
    };
    read_object(r, j, "model", h, true);
}

void read_training(Reader& r, const json& j, TrainSettings& s) {
    auto int_into = [&](int& field, long long lo, long long hi) {
        return [&r, &field, lo, hi](const json& v, const std::string& key) {
            if (auto x = r.integer(v, key, lo, hi)) field = static_cast<int>(*x);
        };
    };
    auto float_into = [&](float& field) {
        return [&r, &field](const json& v, const std::string& key) {
            if (auto x = r.number(v, key)) field = static_cast<float>(*x);
        };
    };
    Handlers h{
        {"task", [&](const json& v, const std::string& key) {
             if (auto x = r.named(v, key, task_from_string,
                                  "copy, reverse, sort, induction, previous-token, cross-reverse"))
                 s.task.kind = *x;
         }},
        {"length", int_into(s.task.length, 2, 64)},
        {"symbols", int_into(s.task.symbols, 2, 26)},
        {"seed", [&](const json& v, const std::string& key) {
             if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<long long>() >= 0))
                 r.fail("key '" + key + "'", "expected a whole number 0 or more, found " + dump_json(v));
             else s.seed = v.get<std::uint64_t>();
         }},
        {"batch_size", int_into(s.batch_size, 1, 4096)},
        {"learning_rate", float_into(s.learning_rate)},
        {"warmup_steps", int_into(s.warmup_steps, 0, 1 << 30)},
        {"weight_decay", float_into(s.weight_decay)},
        {"beta1", float_into(s.beta1)},
        {"beta2", float_into(s.beta2)},
        {"adam_epsilon", float_into(s.adam_epsilon)},
        {"clip_norm", float_into(s.clip_norm)},
        {"held_out_size", int_into(s.held_out_size, 1, 100000)},
        {"evaluate_every", int_into(s.evaluate_every, 0, 1 << 30)},
        {"snapshot_every", int_into(s.snapshot_every, 1, 1 << 30)},
        {"snapshot_budget_bytes", [&](const json& v, const std::string& key) {
             if (auto x = r.integer(v, key, 0, 1ll << 40)) s.snapshot_budget_bytes = static_cast<std::size_t>(*x);
         }},
    };
    read_object(r, j, "training", h, false);
}

void read_tensor(Reader& r, const json& j, const std::string& key, ParamView& view) {
    const std::string where = "key '" + key + "'";
    const std::string shape = std::to_string(view.rows) + "×" + std::to_string(view.cols);
    if (!j.is_array() || j.size() != static_cast<size_t>(view.rows)) {
        r.fail(where, "expected " + std::to_string(view.rows) + " rows (a " + shape + " tensor, each row an array), found " +
                          (j.is_array() ? std::to_string(j.size()) + " rows" : type_name(j)));
        return;
    }
    for (Eigen::Index row = 0; row < view.rows; ++row) {
        const json& values = j[static_cast<size_t>(row)];
        const std::string row_where = where + " row " + std::to_string(row + 1);
        if (!values.is_array() || values.size() != static_cast<size_t>(view.cols)) {
            r.fail(row_where, "expected " + std::to_string(view.cols) + " numbers, found " +
                                  (values.is_array() ? std::to_string(values.size()) : type_name(values)));
            continue;
        }
        for (Eigen::Index col = 0; col < view.cols; ++col) {
            const json& v = values[static_cast<size_t>(col)];
            const double x = v.is_number() ? v.get<double>() : std::nan("");
            if (!v.is_number() || !std::isfinite(static_cast<float>(x))) {
                r.fail(row_where + " column " + std::to_string(col + 1),
                       "expected a finite number, found " + dump_json(v));
                continue;
            }
            view.data[row * view.cols + col] = static_cast<float>(x);
        }
    }
}

// Every tensor of `params`' layout from the object `j` (key `prefix`), none missing, none unknown.
void read_tensors(Reader& r, const json& j, const std::string& prefix, ModelParams& params) {
    if (!j.is_object()) {
        r.fail("key '" + prefix + "'", "expected an object of named tensors, found " + type_name(j));
        return;
    }
    std::set<std::string> expected;
    for (ParamView& view : parameter_views(params)) {
        expected.insert(view.name);
        const std::string key = prefix + "." + view.name;
        if (!j.contains(view.name)) {
            r.fail("key '" + key + "'", "missing (expected a " + std::to_string(view.rows) + "×" + std::to_string(view.cols) +
                                            " tensor for this model)");
            continue;
        }
        read_tensor(r, j[view.name], key, view);
    }
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!expected.count(it.key()))
            r.fail("key '" + prefix + "." + it.key() + "'", "unknown tensor: this model (its layers, biases, LayerNorm, "
                                                             "feed-forward and positional encoding) has no such parameter");
}

// AdamW's state (optional): the update count and both moments, in the parameters' layout;
// the second moment, a mean of squares, is never negative.
void read_optimiser(Reader& r, const json& j, ModelFile& file) {
    AdamWState state{zeros_like(file.model.params), zeros_like(file.model.params), 0};
    Handlers h{
        {"steps", [&](const json& v, const std::string& key) {
             if (auto x = r.integer(v, key, 0, 1 << 30)) state.steps = static_cast<int>(*x);
         }},
        {"m", [&](const json& v, const std::string& key) { read_tensors(r, v, key, state.m); }},
        {"v", [&](const json& v, const std::string& key) { read_tensors(r, v, key, state.v); }},
    };
    const std::size_t before = r.errors.size() + r.dropped;
    read_object(r, j, "optimiser", h, true);
    if (r.errors.size() + r.dropped != before) return;
    for (const ParamView& view : parameter_views(state.v))
        for (Eigen::Index i = 0; i < view.size(); ++i)
            if (view.data[i] < 0.0f) {
                r.fail("key 'optimiser.v." + view.name + "' row " + std::to_string(i / view.cols + 1) + " column " +
                           std::to_string(i % view.cols + 1),
                       "a second moment is a mean of squares: expected 0 or more, found " + std::to_string(view.data[i]));
                return;
            }
    file.optimiser = std::move(state);
}

}  // namespace

ModelFileLoad model_from_json(const json& j, const std::string& source_name) {
    Reader r{source_name, {}, 0};
    ModelFileLoad load;
    if (!j.is_object()) {
        load.errors.push_back(source_name + ": expected a JSON object with \"format\": \"attnlab-model\", found " + type_name(j));
        return load;
    }
    if (!j.contains("format") || j["format"] != kFormat) {
        load.errors.push_back(source_name + ": key 'format': expected \"attnlab-model\", found " +
                              (j.contains("format") ? dump_json(j["format"]) : std::string("nothing")) +
                              ": not a model file");
        return load;
    }
    ModelFile file;
    std::vector<std::string> vocabulary;
    bool have_parameters = false;
    const std::set<std::string> known{"format", "version", "vocabulary", "model", "training", "steps", "parameters", "optimiser"};
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!known.count(it.key()))
            r.fail("key '" + it.key() + "'",
                   "unknown key (expected format, version, vocabulary, model, training, steps, parameters, optimiser)");
    for (const char* required : {"version", "vocabulary", "model", "parameters"})
        if (!j.contains(required)) r.fail("key '" + std::string(required) + "'", "missing");
    if (j.contains("version")) {
        if (auto v = r.integer(j["version"], "version", 1, 1 << 30); v && *v != kVersion)
            r.fail("key 'version'", "this is version " + std::to_string(*v) + "; this program reads version " +
                                        std::to_string(kVersion));
    }
    if (j.contains("vocabulary")) {
        const json& v = j["vocabulary"];
        std::set<std::string> seen;
        if (!v.is_array() || v.size() < 2 || v.size() > 4096) {
            r.fail("key 'vocabulary'", "expected an array of 2 to 4096 token names, found " +
                                           (v.is_array() ? std::to_string(v.size()) + " entries" : type_name(v)));
        } else {
            for (size_t i = 0; i < v.size(); ++i) {
                if (!v[i].is_string()) {
                    r.fail("key 'vocabulary' entry " + std::to_string(i + 1), "expected a string, found " + type_name(v[i]));
                } else if (!seen.insert(v[i].get<std::string>()).second) {
                    r.fail("key 'vocabulary' entry " + std::to_string(i + 1), "the token " + dump_json(v[i]) + " appears twice");
                } else {
                    vocabulary.push_back(v[i].get<std::string>());
                }
            }
        }
    }
    if (j.contains("model")) read_config(r, j["model"], file.model.config);
    if (j.contains("training")) read_training(r, j["training"], file.settings);
    if (j.contains("steps")) {
        if (auto v = r.integer(j["steps"], "steps", 0, 1 << 30)) file.steps = static_cast<int>(*v);
    }
    if (j.contains("parameters")) {
        if (!j["parameters"].is_object()) r.fail("key 'parameters'", "expected an object of named tensors, found " + type_name(j["parameters"]));
        else have_parameters = true;
    }
    // The config must make sense before it can say which tensors to expect.
    ModelConfig& c = file.model.config;
    c.vocab_size = static_cast<int>(vocabulary.size());
    if (r.errors.empty()) {
        for (const std::string& e : validate(c)) r.fail("key 'model'", e);
        if (j.contains("training")) {
            const TrainSettings fit = fitted(file.settings);
            for (const std::string& e : validate(fit)) r.fail("key 'training'", e);
            if (r.errors.empty() && (fit.model.vocab_size != c.vocab_size || fit.model.max_positions != c.max_positions ||
                                     fit.model.attention != c.attention || task_vocabulary(fit.task) != vocabulary))
                r.fail("key 'training'", std::string("the task ") + to_string(fit.task.kind) +
                                             " does not fit the model (its vocabulary, sequence length or attention kind differ)");
        }
    }
    if (r.errors.empty() && have_parameters) {
        file.model = init_model(c, vocabulary, 0);  // the layout: names and shapes
        read_tensors(r, j["parameters"], "parameters", file.model.params);
    }
    if (r.errors.empty() && j.contains("optimiser")) read_optimiser(r, j["optimiser"], file);
    if (r.dropped > 0) r.errors.push_back(source_name + ": … and " + std::to_string(r.dropped) + " more problems");
    load.errors = std::move(r.errors);
    if (load.errors.empty()) {
        if (!j.contains("training")) {
            // No record of the training: settings that fit the model, the task unknown.
            file.settings.model = file.model.config;
        } else {
            file.settings = fitted(file.settings);
            file.settings.model = file.model.config;
        }
        load.file = std::move(file);
    }
    return load;
}

ModelFileLoad model_from_text(const std::string& text, const std::string& source_name) {
    ModelFileLoad load;
    std::optional<json> j = parse_json(text, source_name, load.errors, json_limits::kModel);
    if (!j) return load;
    return model_from_json(*j, source_name);
}

ModelFileLoad load_model_file(const std::string& path) {
    return guard_memory<ModelFileLoad>(path, "model", [&] {
        ModelFileLoad load;
        std::optional<std::string> text = read_text_file(path, kMaxModelFileBytes, "model", load.errors);
        if (!text) return load;
        return model_from_text(*text, path);
    });
}

// [SECTION] A run's history

namespace {

// x as float32, in the fewest digits that read back to the same float (0.1f as 0.1, not
// 0.10000000149011612): half the text of the double it widens to.
json float32_json(double x) {
    const float f = static_cast<float>(x);
    if (!std::isfinite(f)) return json(static_cast<double>(f));  // null: refused when read
    char text[32];
    for (int digits = 1; digits <= 9; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(f));
        const double shortest = std::strtod(text, nullptr);
        if (static_cast<float>(shortest) == f) return json(shortest);
    }
    return json(static_cast<double>(f));
}

json tensors_to_json_float32(const ModelParams& params) {
    json tensors = json::object();
    for (const ParamView& view : parameter_views(params)) {
        json rows = json::array();
        for (Eigen::Index r = 0; r < view.rows; ++r) {
            json row = json::array();
            for (Eigen::Index c = 0; c < view.cols; ++c) row.push_back(float32_json(view.data[r * view.cols + c]));
            rows.push_back(std::move(row));
        }
        tensors[view.name] = std::move(rows);
    }
    return tensors;
}

bool same_values(const ModelParams& a, const ModelParams& b) {
    const std::vector<ParamView> x = parameter_views(a), y = parameter_views(b);
    if (x.size() != y.size()) return false;
    for (size_t t = 0; t < x.size(); ++t)
        if (x[t].rows != y[t].rows || x[t].cols != y[t].cols || !std::equal(x[t].data, x[t].data + x[t].size(), y[t].data))
            return false;
    return true;
}

// Every other element, the first and the newest kept: the trainer's thinning of its snapshots.
template <class Sequence>
void thin(Sequence& items) {
    Sequence kept;
    for (size_t i = 0; i < items.size(); ++i)
        if (i % 2 == 0 || i + 1 == items.size()) kept.push_back(std::move(items[i]));
    items = std::move(kept);
}

}  // namespace

json history_to_json(const RunHistory& given, const ModelFile& file) {
    RunHistory h = given;
    while (h.steps.size() > static_cast<size_t>(kMaxHistoryPoints)) thin(h.steps);
    while (h.evaluations.size() > static_cast<size_t>(kMaxHistoryPoints)) thin(h.evaluations);
    const long long numbers_each = static_cast<long long>(parameter_count(file.model.params));
    auto too_many = [&] {
        return h.snapshots.size() > static_cast<size_t>(kMaxHistorySnapshots) ||
               static_cast<long long>(h.snapshots.size()) * numbers_each > kMaxSnapshotNumbers;
    };
    while (h.snapshots.size() > 2 && too_many()) {
        thin(h.snapshots);
        h.snapshot_interval = std::min(h.snapshot_interval, 1 << 29) * 2;
    }
    if (too_many()) h.snapshots.erase(h.snapshots.begin(), h.snapshots.end() - 1);  // a model too large for two
    if (too_many()) h.snapshots.clear();

    json steps{{"step", json::array()}, {"loss", json::array()}, {"gradient_norm", json::array()}, {"learning_rate", json::array()}};
    for (const StepStats& s : h.steps) {
        steps["step"].push_back(s.step);
        steps["loss"].push_back(float32_json(s.loss));
        steps["gradient_norm"].push_back(float32_json(s.gradient_norm));
        steps["learning_rate"].push_back(float32_json(s.learning_rate));
    }
    json evaluations{{"step", json::array()}, {"loss", json::array()}, {"correct", json::array()}, {"scored", json::array()}};
    for (const Evaluation& e : h.evaluations) {
        evaluations["step"].push_back(e.step);
        evaluations["loss"].push_back(float32_json(e.loss));
        evaluations["correct"].push_back(e.correct);
        evaluations["scored"].push_back(e.scored);
    }
    json snapshots = json::array();
    for (const Snapshot& s : h.snapshots) {
        json one{{"step", s.step}};
        if (s.step != file.steps || !same_values(s.params, file.model.params)) one["parameters"] = tensors_to_json_float32(s.params);
        snapshots.push_back(std::move(one));
    }
    return json{{"steps", std::move(steps)},
                {"evaluations", std::move(evaluations)},
                {"start", {{"step", h.start.step}, {"loss", float32_json(h.start.loss)}, {"correct", h.start.correct}, {"scored", h.start.scored}}},
                {"snapshot_interval", h.snapshot_interval},
                {"snapshots", std::move(snapshots)}};
}

namespace {

constexpr long long kMaxCount = 1 << 30;

// Whether `j` is an array of at most `most` entries; else the fault, saying they are `what`.
bool bounded_array(Reader& r, const json& j, const std::string& key, size_t most, const char* what) {
    if (j.is_array() && j.size() <= most) return true;
    r.fail("key '" + key + "'", "expected an array of at most " + std::to_string(most) + " " + what + ", found " +
                                    (j.is_array() ? std::to_string(j.size()) + " entries" : type_name(j)));
    return false;
}

// An array of at most `most` numbers, each finite and 0 or more, as the float32s they were written as.
std::vector<double> read_numbers(Reader& r, const json& j, const std::string& key, size_t most) {
    std::vector<double> out;
    if (!bounded_array(r, j, key, most, "numbers")) return out;
    for (size_t i = 0; i < j.size(); ++i) {
        const double x = j[i].is_number() ? j[i].get<double>() : std::nan("");
        if (!std::isfinite(static_cast<float>(x)) || x < 0.0) {
            r.fail("key '" + key + "' entry " + std::to_string(i + 1), "expected a finite number 0 or more, found " + dump_json(j[i]));
            return {};
        }
        out.push_back(static_cast<float>(x));  // the float32 it was written as
    }
    return out;
}

// An array of at most `most` whole numbers from lo to hi; `ascending`: each above the one before.
std::vector<int> read_counts(Reader& r, const json& j, const std::string& key, size_t most, long long lo, long long hi, bool ascending) {
    std::vector<int> out;
    if (!bounded_array(r, j, key, most, "whole numbers")) return out;
    for (size_t i = 0; i < j.size(); ++i) {
        const long long least = ascending && !out.empty() ? std::max(lo, static_cast<long long>(out.back()) + 1) : lo;
        const json& x = j[i];
        const bool whole = x.is_number_integer();
        const long long v = !whole ? 0
                            : x.is_number_unsigned() && x.get<unsigned long long>() > static_cast<unsigned long long>(hi) ? hi + 1
                                                                                                                         : x.get<long long>();
        if (!whole || v < least || v > hi) {
            r.fail("key '" + key + "' entry " + std::to_string(i + 1), "expected a whole number from " + std::to_string(least) + " to " +
                                                                          std::to_string(hi) + (ascending ? " (steps ascend)" : "") +
                                                                          ", found " + dump_json(x));
            return {};
        }
        out.push_back(static_cast<int>(v));
    }
    return out;
}

// The arrays of one curve have the length of its "step".
void check_lengths(Reader& r, const std::string& key, size_t steps, const std::vector<std::pair<const char*, size_t>>& columns) {
    for (const std::pair<const char*, size_t>& column : columns)
        if (column.second != steps)
            r.fail("key '" + key + "." + column.first + "'", "expected " + std::to_string(steps) + " entries (as many as '" + key +
                                                                 ".step'), found " + std::to_string(column.second));
}

// A correct count is at most its scored count; the accuracy is their ratio, as evaluate() makes it.
Evaluation evaluation_of(int step, double loss, int correct, int scored) {
    Evaluation e;
    e.step = step;
    e.loss = loss;
    e.correct = correct;
    e.scored = scored;
    e.accuracy = scored > 0 ? static_cast<double>(correct) / scored : 0.0;
    return e;
}

}  // namespace

std::optional<RunHistory> history_from_json(const json& j, const ModelFile& file, const std::string& source_name, const std::string& key,
                                            std::vector<std::string>& errors) {
    Reader r{source_name, {}, 0};
    RunHistory h;
    const long long last = file.steps;
    const size_t most = static_cast<size_t>(kMaxHistoryPoints);
    bool have_start = false;
    Handlers top{
        {"steps", [&](const json& v, const std::string& at) {
             std::vector<int> step;
             std::vector<double> loss, norm, rate;
             read_object(r, v, at,
                         Handlers{{"step", [&](const json& x, const std::string& k) { step = read_counts(r, x, k, most, 1, last, true); }},
                                  {"loss", [&](const json& x, const std::string& k) { loss = read_numbers(r, x, k, most); }},
                                  {"gradient_norm", [&](const json& x, const std::string& k) { norm = read_numbers(r, x, k, most); }},
                                  {"learning_rate", [&](const json& x, const std::string& k) { rate = read_numbers(r, x, k, most); }}},
                         true);
             if (!r.errors.empty()) return;
             check_lengths(r, at, step.size(), {{"loss", loss.size()}, {"gradient_norm", norm.size()}, {"learning_rate", rate.size()}});
             if (!r.errors.empty()) return;
             for (size_t i = 0; i < step.size(); ++i) h.steps.push_back({step[i], loss[i], norm[i], static_cast<float>(rate[i])});
         }},
        {"evaluations", [&](const json& v, const std::string& at) {
             std::vector<int> step, correct, scored;
             std::vector<double> loss;
             read_object(r, v, at,
                         Handlers{{"step", [&](const json& x, const std::string& k) { step = read_counts(r, x, k, most, 0, last, true); }},
                                  {"loss", [&](const json& x, const std::string& k) { loss = read_numbers(r, x, k, most); }},
                                  {"correct", [&](const json& x, const std::string& k) { correct = read_counts(r, x, k, most, 0, kMaxCount, false); }},
                                  {"scored", [&](const json& x, const std::string& k) { scored = read_counts(r, x, k, most, 0, kMaxCount, false); }}},
                         true);
             if (!r.errors.empty()) return;
             check_lengths(r, at, step.size(), {{"loss", loss.size()}, {"correct", correct.size()}, {"scored", scored.size()}});
             for (size_t i = 0; r.errors.empty() && i < step.size(); ++i) {
                 if (correct[i] > scored[i])
                     r.fail("key '" + at + ".correct' entry " + std::to_string(i + 1),
                            std::to_string(correct[i]) + " right, but 'scored' counts " + std::to_string(scored[i]) + ": expected at most that");
                 else h.evaluations.push_back(evaluation_of(step[i], loss[i], correct[i], scored[i]));
             }
         }},
        {"start", [&](const json& v, const std::string& at) {
             long long step = 0, correct = 0, scored = 0;
             double loss = 0.0;
             auto count = [&](long long& out, long long hi) {
                 return [&r, &out, hi](const json& x, const std::string& k) {
                     if (const std::optional<long long> c = r.integer(x, k, 0, hi)) out = *c;
                 };
             };
             read_object(r, v, at,
                         Handlers{{"step", count(step, last)},
                                  {"loss", [&](const json& x, const std::string& k) {
                                       if (!x.is_number() || !std::isfinite(static_cast<float>(x.get<double>())) || x.get<double>() < 0.0)
                                           r.fail("key '" + k + "'", "expected a finite number 0 or more, found " + dump_json(x));
                                       else loss = static_cast<float>(x.get<double>());
                                   }},
                                  {"correct", count(correct, kMaxCount)},
                                  {"scored", count(scored, kMaxCount)}},
                         true);
             if (r.errors.empty() && correct > scored)
                 r.fail("key '" + at + ".correct'", std::to_string(correct) + " right, but 'scored' counts " + std::to_string(scored) +
                                                        ": expected at most that");
             h.start = evaluation_of(static_cast<int>(step), loss, static_cast<int>(correct), static_cast<int>(scored));
             have_start = true;
         }},
        {"snapshot_interval", [&](const json& v, const std::string& at) {
             if (const std::optional<long long> x = r.integer(v, at, 1, kMaxCount)) h.snapshot_interval = static_cast<int>(*x);
         }},
        {"snapshots", [&](const json& v, const std::string& at) {
             const long long numbers_each = static_cast<long long>(parameter_count(file.model.params));
             const size_t fit = static_cast<size_t>(std::min<long long>(kMaxHistorySnapshots, kMaxSnapshotNumbers / std::max(1LL, numbers_each)));
             if (!v.is_array() || v.size() > fit) {
                 r.fail("key '" + at + "'", "expected an array of at most " + std::to_string(fit) + " snapshots (of " +
                                                std::to_string(numbers_each) + " numbers each), found " +
                                                (v.is_array() ? std::to_string(v.size()) + " entries" : type_name(v)));
                 return;
             }
             for (size_t i = 0; i < v.size() && r.errors.empty(); ++i) {
                 const std::string entry = at + "[" + std::to_string(i) + "]";
                 Snapshot s{-1, {}};
                 bool have_parameters = false;
                 read_object(r, v[i], entry,
                             Handlers{{"step", [&](const json& x, const std::string& k) {
                                          const long long least = h.snapshots.empty() ? 0 : h.snapshots.back().step + 1;
                                          if (const std::optional<long long> step = r.integer(x, k, least, last)) s.step = static_cast<int>(*step);
                                      }},
                                      {"parameters", [&](const json& x, const std::string& k) {
                                           s.params = zeros_like(file.model.params);
                                           read_tensors(r, x, k, s.params);
                                           have_parameters = true;
                                       }}},
                             false);
                 if (!r.errors.empty()) return;
                 if (!v[i].contains("step")) return r.fail("key '" + entry + ".step'", "missing");
                 if (!have_parameters) {
                     if (s.step != last)
                         return r.fail("key '" + entry + ".parameters'", "missing (only the snapshot at the model's own step " +
                                                                             std::to_string(last) + " leaves out its weights: they are the model's)");
                     s.params = file.model.params;
                 }
                 h.snapshots.push_back(std::move(s));
             }
         }},
    };
    read_object(r, j, key, top, true);
    if (r.errors.empty() && have_start && !h.steps.empty() && h.start.step >= h.steps.front().step)
        r.fail("key '" + key + ".start.step'", "expected a step before the first of '" + key + ".steps.step' (" +
                                                   std::to_string(h.steps.front().step) + "), found " + std::to_string(h.start.step));
    if (r.dropped > 0) r.errors.push_back(source_name + ": … and " + std::to_string(r.dropped) + " more problems");
    if (!r.errors.empty()) {
        for (std::string& e : r.errors) errors.push_back(std::move(e));
        return std::nullopt;
    }
    return h;
}

}  // namespace attn::train
