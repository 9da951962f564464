#include "session_file.hpp"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <limits>

#include <sys/stat.h>

#include "attention/registry.hpp"
#include "attention/scenario_edits.hpp"
#include "attention/serialize.hpp"

namespace attn::session_file {

namespace {

constexpr const char* kFormat = "attnlab-session";
constexpr int kVersion = 2;         // written
constexpr int kOldestVersion = 1;   // read: version 1 wrote every scenario whole

// The integer v holds when it lies in [least, most]; nothing for any other value. A number
// outside int's range is refused, never cut down to one (4294967297 is not 1).
std::optional<int> integer_in(const nlohmann::json& v, int least, int most) {
    if (v.is_number_unsigned()) {
        const std::uint64_t x = v.get<std::uint64_t>();
        if (least > 0 && x < static_cast<std::uint64_t>(least)) return std::nullopt;
        if (most < 0 || x > static_cast<std::uint64_t>(most)) return std::nullopt;
        return static_cast<int>(x);
    }
    if (!v.is_number_integer()) return std::nullopt;
    const std::int64_t x = v.get<std::int64_t>();
    if (x < least || x > most) return std::nullopt;
    return static_cast<int>(x);
}

constexpr int kMaxCount = 100000;  // a layer, a head: far beyond any checkpoint's
constexpr int kMaxInt = std::numeric_limits<int>::max();

}  // namespace

nlohmann::json session_to_json(const Scenario& scenario, const ViewChoices& view, const Attachments& attached) {
    nlohmann::json v = {{"shown_head", view.shown_head},
                        {"all_heads", view.all_heads},
                        {"presenter", view.presenter},
                        {"pane", view.pane},
                        {"lesson", view.lesson},
                        {"step", view.step}};
    if (!view.pipeline_step.empty()) v["pipeline_step"] = view.pipeline_step;
    if (!view.focus_step.empty()) v["focus_step"] = view.focus_step;
    // A checkpoint's layer open in the pipeline is the session's scenario: kept as what was
    // changed in it, never its weights (GPT-2 small's layer is 7 million numbers).
    const ModelChoice* model = attached.model ? &*attached.model : nullptr;
    const bool layer_by_reference = model != nullptr && model->layer >= 0 && model->layer_base && model->layer_base->name == scenario.name;
    nlohmann::json j = {{"format", kFormat}, {"version", kVersion}, {"view", v}};
    if (!layer_by_reference) j["scenario"] = scenario_to_json(scenario);
    if (model != nullptr) {
        const ModelChoice& m = *model;
        nlohmann::json ablated = nlohmann::json::array();
        for (const auto& [layer, head] : m.ablated) ablated.push_back({layer + 1, head + 1});
        nlohmann::json files = nlohmann::json::array();
        for (const FileStamp& f : m.files) files.push_back({{"name", f.name}, {"bytes", f.bytes}, {"modified_ns", f.modified_ns}});
        j["model"] = {{"folder", m.folder},
                      {"files", std::move(files)},
                      {"sentence", m.sentence},
                      {"layer", m.layer + 1},
                      {"head", m.layer >= 0 ? m.head + 1 : 0},
                      {"ablated", std::move(ablated)}};
        if (!m.ablated_experts.empty()) {
            nlohmann::json experts = nlohmann::json::array();
            for (const auto& [layer, expert] : m.ablated_experts) experts.push_back({layer + 1, expert + 1});
            j["model"]["ablated_experts"] = std::move(experts);
        }
        if (!m.ids.empty()) j["model"]["ids"] = m.ids;
        if (layer_by_reference) j["model"]["layer_edits"] = scenario_edits_to_json(*m.layer_base, scenario);
    }
    if (attached.trained) {
        const TrainedChoice& t = *attached.trained;
        nlohmann::json trained = {{"model", train::model_to_json(t.file)},
                                  {"probe", {{"tokens", t.probe_tokens}, {"source", t.probe_source}}},
                                  {"layer", t.layer + 1}};
        if (t.opened) trained["opened"] = train::model_to_json(*t.opened);
        if (t.history) trained["history"] = train::history_to_json(*t.history, t.file);
        j["trained"] = std::move(trained);
    }
    return j;
}

namespace {

// "model": a folder to open again, the sentence, the layer and head opened. A malformed
// block is an error (the file is not a session this app wrote); a folder that is gone is
// found when it is opened.
void read_model(const nlohmann::json& j, int version, const std::string& source, SessionLoad& load) {
    auto fail = [&](const std::string& what) { load.errors.push_back(source + ": key 'model" + what); };
    if (!j.is_object()) return fail("': expected an object");
    for (const auto& [key, value] : j.items()) {
        const bool since_2 = key == "files" || key == "layer_edits" || key == "ids" || key == "ablated_experts";  // a version-1 file has none
        if ((since_2 && version < 2) ||
            (!since_2 && key != "folder" && key != "sentence" && key != "layer" && key != "head" && key != "ablated"))
            return fail("." + key + "': unknown key" + (since_2 ? " in a version-1 session" : ""));
    }
    ModelChoice m;
    if (!j.contains("folder") || !j["folder"].is_string() || j["folder"].get<std::string>().empty())
        return fail(".folder': expected the checkpoint folder's path");
    m.folder = j["folder"].get<std::string>();
    if (j.contains("sentence")) {
        if (!j["sentence"].is_string()) return fail(".sentence': expected a string");
        m.sentence = j["sentence"].get<std::string>();
    }
    if (j.contains("ids")) {  // the checkpoint says whether each is in its vocabulary, once it is open
        const std::string expected = ".ids': expected the text's token ids, a list of at most " + std::to_string(kMaxCount) +
                                     " counts from 0";
        if (!j["ids"].is_array() || j["ids"].empty() || j["ids"].size() > static_cast<size_t>(kMaxCount)) return fail(expected);
        for (const nlohmann::json& id : j["ids"]) {
            const std::optional<int> v = integer_in(id, 0, std::numeric_limits<int>::max());
            if (!v) return fail(expected);
            m.ids.push_back(*v);
        }
    }
    // Layers and heads count from 1; the checkpoint says whether they exist, once it is open.
    int layer = 0, head = 0;
    for (auto [key, out] : {std::pair<const char*, int*>{"layer", &layer}, {"head", &head}}) {
        if (!j.contains(key)) continue;
        const std::optional<int> v = integer_in(j[key], 0, kMaxCount);
        if (!v) return fail(std::string(".") + key + "': expected a count from 1 (0: none)");
        *out = *v;
    }
    m.layer = layer - 1;
    m.head = std::max(0, head - 1);
    if (j.contains("ablated")) {
        if (!j["ablated"].is_array()) return fail(".ablated': expected a list of [layer, head] pairs counted from 1");
        for (const nlohmann::json& pair : j["ablated"]) {
            const std::optional<int> l = pair.is_array() && pair.size() == 2 ? integer_in(pair[0], 1, kMaxCount) : std::nullopt;
            const std::optional<int> h = pair.is_array() && pair.size() == 2 ? integer_in(pair[1], 1, kMaxCount) : std::nullopt;
            if (!l || !h) return fail(".ablated': expected a list of [layer, head] pairs counted from 1");
            m.ablated.emplace_back(*l - 1, *h - 1);
        }
    }
    if (j.contains("ablated_experts")) {
        const std::string expected = ".ablated_experts': expected a list of [layer, expert] pairs counted from 1";
        if (!j["ablated_experts"].is_array()) return fail(expected);
        for (const nlohmann::json& pair : j["ablated_experts"]) {
            const std::optional<int> l = pair.is_array() && pair.size() == 2 ? integer_in(pair[0], 1, kMaxCount) : std::nullopt;
            const std::optional<int> e = pair.is_array() && pair.size() == 2 ? integer_in(pair[1], 1, kMaxCount) : std::nullopt;
            if (!l || !e) return fail(expected);
            m.ablated_experts.emplace_back(*l - 1, *e - 1);
        }
    }
    if (j.contains("files")) {
        const std::string expected = ".files': expected a list of {\"name\": \"config.json\", \"bytes\": 665, \"modified_ns\": 1764342131000000000}";
        if (!j["files"].is_array()) return fail(expected);
        for (const nlohmann::json& f : j["files"]) {
            if (!f.is_object() || f.size() != 3 || !f.contains("name") || !f["name"].is_string() || !f.contains("bytes") ||
                !f["bytes"].is_number_unsigned() || !f.contains("modified_ns") || !f["modified_ns"].is_number_integer())
                return fail(expected);
            m.files.push_back(FileStamp{f["name"].get<std::string>(), f["bytes"].get<std::uintmax_t>(), f["modified_ns"].get<std::int64_t>()});
        }
    }
    if (j.contains("layer_edits")) {
        if (m.layer < 0) return fail(".layer_edits': edits of a layer, but key 'model.layer' names none");
        std::vector<std::string> faults = scenario_edits_faults(j["layer_edits"], source + ": key 'model.layer_edits");
        if (!faults.empty()) {
            for (std::string& f : faults) load.errors.push_back(std::move(f));
            return;
        }
        m.layer_edits = j["layer_edits"];
    }
    m.source = source;
    load.attached.model = std::move(m);
}

// What in `opened` is not as in `model` (config and vocabulary: the tensors' shapes follow
// from them), as "d_model 8, but trained.model has d_model 32"; empty when they agree.
std::string opened_differs(const train::Model& opened, const train::Model& model) {
    const nlohmann::json a = train::config_to_json(opened.config), b = train::config_to_json(model.config);
    for (const auto& [key, value] : a.items())
        if (!b.contains(key) || b[key] != value)
            return key + " " + value.dump() + ", but trained.model has " + key + " " + (b.contains(key) ? b[key].dump() : "none");
    if (opened.vocabulary != model.vocabulary)
        return "a vocabulary of " + std::to_string(opened.vocabulary.size()) + " tokens, but trained.model's is another (" +
               std::to_string(model.vocabulary.size()) + " tokens)";
    return {};
}

// "trained": a model file and how it was shown. A model that cannot be read is a warning:
// the scenario and the rest of the session open without it. Every piece is checked against
// what it meets before anything runs it: the probe against the model's vocabulary and
// positions, the layer against its layers, the opened weights against the model, and the
// scenario (which is that layer, edited) against the opened weights. A piece that does not
// fit is a warning naming it and is left out (the opened layer: the run opens, detached; the
// history: the run opens at its weights with no curves and one snapshot).
void read_trained(const nlohmann::json& j, const Scenario& scenario, const std::string& source, SessionLoad& load) {
    auto warn = [&](const std::string& what) { load.warnings.push_back(source + ": key 'trained" + what); };
    if (!j.is_object()) return warn("': expected an object");
    for (const auto& [key, value] : j.items())
        if (key != "model" && key != "probe" && key != "layer" && key != "opened" && key != "history") return warn("." + key + "': unknown key");
    if (!j.contains("model")) return warn(".model' is missing");
    train::ModelFileLoad model = train::model_from_json(j["model"], source + " (trained.model)");
    if (!model.file) {
        for (const std::string& e : model.errors) load.warnings.push_back(e);
        return;
    }
    TrainedChoice t;
    t.file = std::move(*model.file);
    const train::ModelConfig& config = t.file.model.config;
    const int vocabulary = config.vocab_size;
    auto ids = [&](const nlohmann::json& p, const char* key, std::vector<int>& out) {
        if (!p.contains(key)) return true;
        if (!p[key].is_array()) return false;
        for (const nlohmann::json& id : p[key]) {
            const std::optional<int> v = integer_in(id, 0, vocabulary - 1);
            if (!v) return false;
            out.push_back(*v);
        }
        return true;
    };
    if (j.contains("probe")) {
        const nlohmann::json& p = j["probe"];
        if (!p.is_object() || !ids(p, "tokens", t.probe_tokens) || !ids(p, "source", t.probe_source))
            return warn(".probe': expected {\"tokens\": [ids], \"source\": [ids]} with ids below the vocabulary's " +
                        std::to_string(vocabulary));
        for (auto [key, probe] : {std::pair<const char*, const std::vector<int>*>{"tokens", &t.probe_tokens}, {"source", &t.probe_source}})
            if (static_cast<int>(probe->size()) > config.max_positions)
                return warn(".probe." + std::string(key) + "': " + std::to_string(probe->size()) + " tokens, but the model reads at most " +
                            std::to_string(config.max_positions));
    }
    if (j.contains("layer")) {
        const std::optional<int> layer = integer_in(j["layer"], 0, config.layers);
        if (!layer) return warn(".layer': expected a layer from 1 to " + std::to_string(config.layers) + " (0: none)");
        t.layer = *layer - 1;
    }
    if (j.contains("opened")) {
        train::ModelFileLoad opened = train::model_from_json(j["opened"], source + " (trained.opened)");
        if (!opened.file) {
            for (const std::string& e : opened.errors) load.warnings.push_back(e);
            return;
        }
        t.opened = std::move(*opened.file);
    }
    if (j.contains("history")) {
        std::vector<std::string> faults;
        t.history = train::history_from_json(j["history"], t.file, source, "trained.history", faults);
        for (const std::string& f : faults) load.warnings.push_back(f + " (the trained run opens without its history)");
    }
    if (t.opened && t.layer >= 0) {
        std::string fault = opened_differs(t.opened->model, t.file.model);
        if (fault.empty()) {
            const std::vector<std::string> faults = train::layer_scenario_faults(t.opened->model, t.layer, scenario);
            if (!faults.empty()) fault = faults.front();
        }
        if (!fault.empty()) {
            warn(".opened': " + fault + " (the trained run opens without its layer in the pipeline)");
            t.layer = -1;
            t.opened.reset();
        }
    }
    load.attached.trained = std::move(t);
}

}  // namespace

SessionLoad session_from_json(const nlohmann::json& j, const std::string& source) {
    SessionLoad load;
    if (!j.is_object()) {
        load.errors.push_back(source + ": expected a JSON object");
        return load;
    }
    if (!j.contains("format") || j["format"] != kFormat) {
        load.errors.push_back(source + ": not an Attention Lab session (\"format\" must be \"" + kFormat + "\")");
        return load;
    }
    if (!j.contains("version") || !integer_in(j["version"], kOldestVersion, kVersion)) {
        load.errors.push_back(source + ": unsupported session version" + (j.contains("version") ? " " + j["version"].dump() : std::string()) +
                              " (this app reads versions " + std::to_string(kOldestVersion) + " to " + std::to_string(kVersion) + ")");
        return load;
    }
    // The scenario is written whole, or (version 2) kept by reference as the model's layer.
    const bool in_model = j.contains("model") && j["model"].is_object() && j["model"].contains("layer_edits");
    if (in_model && j.contains("scenario")) {
        load.errors.push_back(source + ": key 'model.layer_edits': the session's scenario is the model's layer, but key 'scenario' gives one too");
        return load;
    }
    if (!in_model && !j.contains("scenario")) {
        load.errors.push_back(source + ": key 'scenario' is missing");
        return load;
    }
    ScenarioLoad scenario;
    if (!in_model) {
        scenario = scenario_from_json(j["scenario"], source);
        if (!scenario.scenario) {
            load.errors = std::move(scenario.errors);
            if (load.errors.empty()) load.errors.push_back(source + ": key 'scenario' is not a valid scenario");
            return load;
        }
    }
    if (j.contains("view")) {
        const nlohmann::json& v = j["view"];
        if (!v.is_object()) {
            load.errors.push_back(source + ": key 'view': expected an object");
            return load;
        }
        auto read_int = [&](const char* key, int& out) {
            if (!v.contains(key)) return;
            if (const std::optional<int> x = integer_in(v[key], 0, kMaxInt)) out = *x;
            else load.errors.push_back(source + ": key 'view." + key + "': expected an integer from 0 to " + std::to_string(kMaxInt));
        };
        auto read_step = [&](const char* key, std::string& out) {  // a step as the pipeline's strip names it
            if (!v.contains(key)) return;
            if (v[key].is_string() && column_named(v[key].get<std::string>())) out = v[key].get<std::string>();
            else load.errors.push_back(source + ": key 'view." + key + "': expected a step of the pipeline as its strip names it (\"softmax\")");
        };
        auto read_bool = [&](const char* key, bool& out) {
            if (!v.contains(key)) return;
            if (v[key].is_boolean()) out = v[key].get<bool>();
            else load.errors.push_back(source + ": key 'view." + key + "': expected true or false");
        };
        read_int("shown_head", load.view.shown_head);
        read_bool("all_heads", load.view.all_heads);
        read_bool("presenter", load.view.presenter);
        read_int("step", load.view.step);
        if (v.contains("pane")) {
            const nlohmann::json& pane = v["pane"];
            if (pane.is_string() && (pane == "pipeline" || pane == "model" || pane == "train")) load.view.pane = pane.get<std::string>();
            else load.errors.push_back(source + ": key 'view.pane': expected \"pipeline\", \"model\" or \"train\"");
        }
        read_step("pipeline_step", load.view.pipeline_step);
        read_step("focus_step", load.view.focus_step);
        for (const auto& [key, value] : v.items())
            if (key != "shown_head" && key != "all_heads" && key != "presenter" && key != "pane" && key != "lesson" && key != "step" &&
                key != "pipeline_step" && key != "focus_step")
                load.errors.push_back(source + ": key 'view." + key + "': unknown key");
        if (v.contains("lesson")) {
            if (v["lesson"].is_string()) load.view.lesson = v["lesson"].get<std::string>();
            else load.errors.push_back(source + ": key 'view.lesson': expected a string");
        }
        if (!load.errors.empty()) return load;  // all or nothing: a half-read session is not loaded
    }
    for (const auto& [key, value] : j.items())
        if (key != "format" && key != "version" && key != "scenario" && key != "view" && key != "model" && key != "trained") {
            load.errors.push_back(source + ": key '" + key + "': unknown key");
            return load;
        }
    if (j.contains("model")) {
        read_model(j["model"], *integer_in(j["version"], kOldestVersion, kVersion), source, load);
        if (!load.errors.empty()) return load;
    }
    // A trained layer cannot be the scenario when the model's layer is: it is checked against
    // an empty one, and its run opens without it (a warning).
    if (j.contains("trained")) read_trained(j["trained"], in_model ? Scenario{} : *scenario.scenario, source, load);
    load.scenario = std::move(scenario.scenario);
    load.scenario_in_model = in_model;
    return load;
}

SessionLoad session_from_text(const std::string& text, const std::string& source) {
    SessionLoad load;
    std::optional<nlohmann::json> j = parse_json(text, source, load.errors, json_limits::kScenario);
    if (!j) return load;
    return session_from_json(*j, source);
}

bool save_session(const std::string& path, const Scenario& scenario, const ViewChoices& view, std::string* error,
                  const Attachments& attached) {
    return write_file_atomic(path, session_text(scenario, view, attached), error);
}

std::string session_text(const Scenario& scenario, const ViewChoices& view, const Attachments& attached) {
    return dump_json_rows(session_to_json(scenario, view, attached), 1);
}

SessionLoad load_session(const std::string& path) {
    return guard_memory<SessionLoad>(path, "session", [&] {
        SessionLoad load;
        std::optional<std::string> text = read_text_file(path, kMaxScenarioFileBytes, "session", load.errors);
        if (!text) return load;
        return session_from_text(*text, path);
    });
}

namespace {

SessionLoad load_session_or_scenario_unguarded(const std::string& path) {
    SessionLoad load;
    std::optional<std::string> text = read_text_file(path, kMaxScenarioFileBytes, "scenario or session", load.errors);
    if (!text) return load;
    std::optional<nlohmann::json> j = parse_json(*text, path, load.errors, json_limits::kScenario);
    if (!j) return load;
    if (j->is_object() && j->contains("format") && (*j)["format"] == kFormat) return session_from_json(*j, path);
    ScenarioLoad scenario = scenario_from_json(*j, path);
    load.errors = std::move(scenario.errors);
    load.scenario = std::move(scenario.scenario);
    return load;
}

}  // namespace

SessionLoad load_session_or_scenario(const std::string& path) {
    return guard_memory<SessionLoad>(path, "scenario or session", [&] { return load_session_or_scenario_unguarded(path); });
}

std::vector<FileStamp> model_files(const std::string& folder) {
    namespace fs = std::filesystem;
    std::vector<FileStamp> files;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const std::string extension = it->path().extension().string();
        if (name.empty() || name[0] == '.' || (extension != ".json" && extension != ".safetensors" && extension != ".txt")) continue;
        struct stat st {};
        if (::stat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // stat follows a link to its blob
        files.push_back(FileStamp{name, static_cast<std::uintmax_t>(st.st_size),
                                  static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
    }
    std::sort(files.begin(), files.end(), [](const FileStamp& a, const FileStamp& b) { return a.name < b.name; });
    return files;
}

namespace {

std::string local_time(std::int64_t ns) {
    const std::time_t seconds = static_cast<std::time_t>(ns / 1000000000);
    std::tm tm{};
    char text[32] = "";
    if (localtime_r(&seconds, &tm) != nullptr) std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
    return text;
}

std::string stamp_text(const FileStamp& f) { return std::to_string(f.bytes) + " bytes, modified " + local_time(f.modified_ns); }

}  // namespace

std::string files_changed(const std::vector<FileStamp>& saved, const std::vector<FileStamp>& now) {
    std::vector<std::string> changes;
    for (const FileStamp& was : saved) {
        const auto it = std::find_if(now.begin(), now.end(), [&](const FileStamp& f) { return f.name == was.name; });
        if (it == now.end()) changes.push_back(was.name + " is gone");
        else if (!(*it == was)) {
            // Two stamps of one second can differ in their nanoseconds alone: said with both, never as "the same".
            const std::string now_text = stamp_text(*it), was_text = stamp_text(was);
            changes.push_back(was.name + ": " + now_text + "; it was " + was_text +
                              (now_text == was_text ? " (" + std::to_string(was.modified_ns) + " ns, now " + std::to_string(it->modified_ns) + ")" : ""));
        }
    }
    for (const FileStamp& f : now)
        if (std::none_of(saved.begin(), saved.end(), [&](const FileStamp& was) { return was.name == f.name; }))
            changes.push_back(f.name + " is new");
    std::string text;
    for (size_t i = 0; i < changes.size() && i < 3; ++i) text += (i ? "; " : "") + changes[i];
    if (changes.size() > 3) text += "; and " + std::to_string(changes.size() - 3) + " more";
    return text;
}

Scenario model_layer(const lm::Model& model, const ModelPass& pass, int layer) {
    Scenario s = model.layer_scenario(pass.tokens, layer, lm::layer_input(pass.layers[static_cast<size_t>(layer)]), pass.ablated);
    own_weight_holders(s);  // a view draws this layer's weights: widened for it alone
    return s;
}

LayerReopen reopen_layer(const ModelChoice& choice, const lm::Model& model, const ModelPass& pass) {
    LayerReopen r;
    const std::string where = (choice.source.empty() ? "the session" : choice.source) + ": key 'model.layer";
    if (!choice.layer_edits || choice.layer < 0) return r;
    const int layers = model.shape().layers;
    const std::string layer = std::to_string(choice.layer + 1);
    // Said in check_model_choice's words: the same faults of a version-1 session read the same.
    if (choice.layer >= layers) {
        r.notices.push_back(where + "': " + layer + ", but the model's layers are 1 to " + std::to_string(layers) +
                            ": no layer is opened in the pipeline");
        return r;
    }
    if (!pass.ok || choice.layer >= static_cast<int>(pass.layers.size())) {
        std::vector<std::string> why;
        if (const std::vector<int> ids = model.encode(choice.sentence, why); why.empty()) why = model.validate(ids);
        r.notices.push_back(where + "': layer " + layer + " is not opened: the session's sentence cannot run (" +
                            (why.empty() ? (pass.errors.empty() ? std::string("see the notice before") : pass.errors.front()) : why.front()) +
                            ")");
        return r;
    }
    r.base = model_layer(model, pass, choice.layer);
    ScenarioLoad edited = apply_scenario_edits(*r.base, *choice.layer_edits, where + "_edits");
    if (!edited.scenario) {
        for (const std::string& e : edited.errors) r.notices.push_back(e + " (layer " + layer + " is not opened with the session's edits)");
        r.base.reset();
        return r;
    }
    r.scenario = std::move(edited.scenario);
    return r;
}

std::string layer_mismatch(const lm::Shape& c, int n, const Scenario& s) {
    if (s.input != InputMode::Embeddings) return "the layer reads embeddings, but the scenario gives Q, K and V directly";
    if (s.d_model != c.d_model) return "the layer has d_model " + std::to_string(c.d_model) + ", but the scenario has d_model " + std::to_string(s.d_model);
    if (s.heads != c.heads) return "the layer has " + std::to_string(c.heads) + " heads, but the scenario has " + std::to_string(s.heads);
    if (const int kv = s.kv_heads > 0 ? s.kv_heads : s.heads; kv != c.kv_heads)
        return "the layer has " + std::to_string(c.kv_heads) + " K/V heads, but the scenario has " + std::to_string(kv);
    if (const int hd = s.head_dim > 0 ? s.head_dim : (s.heads > 0 ? s.d_model / s.heads : 0); hd != c.head_dim)
        return "the layer's heads have head_dim " + std::to_string(c.head_dim) + ", but the scenario's have " + std::to_string(hd);
    if (static_cast<int>(s.target.tokens.size()) != n)
        return "the sentence is " + std::to_string(n) + " tokens, but the scenario has " + std::to_string(s.target.tokens.size());
    if (s.target.embeddings.rows() != n || s.target.embeddings.cols() != c.d_model)
        return "the layer's input X is " + std::to_string(n) + " \xC3\x97 " + std::to_string(c.d_model) + ", but the scenario's is " +
               std::to_string(s.target.embeddings.rows()) + " \xC3\x97 " + std::to_string(s.target.embeddings.cols());
    return {};
}

ModelRestore check_model_choice(const ModelChoice& choice, const lm::Model& model, const std::string& sentence, const ModelPass& pass,
                                const Scenario& scenario) {
    ModelRestore r;
    const lm::Shape& c = model.shape();
    auto refuse = [&](const std::string& key, const std::string& what) {
        r.notices.push_back((choice.source.empty() ? "the session" : choice.source) + ": key 'model." + key + "': " + what);
    };
    const std::string layers = "the model's layers are 1 to " + std::to_string(c.layers);
    const std::string heads = "its heads 1 to " + std::to_string(c.heads);
    for (const auto& [layer, head] : choice.ablated) {
        if (const stack::HeadId id{layer, head}; id.within(c.layers, c.heads)) r.ablated.heads.insert(id);
        else refuse("ablated", "[" + std::to_string(layer + 1) + ", " + std::to_string(head + 1) + "] is not a head of the model (" + layers +
                                   ", " + heads + "): not ablated");
    }
    for (const auto& [layer, expert] : choice.ablated_experts) {
        const int experts = model.experts_in_layer(layer);
        if (expert < experts) r.ablated.experts.insert(stack::ExpertId{layer, expert});
        else refuse("ablated_experts", "[" + std::to_string(layer + 1) + ", " + std::to_string(expert + 1) + "] is not an expert of the model (" +
                                           (layer >= c.layers ? layers
                                            : experts == 0 ? "layer " + std::to_string(layer + 1) + "'s feed-forward is not a mixture of experts"
                                                           : "layer " + std::to_string(layer + 1) + "'s experts are 1 to " + std::to_string(experts)) +
                                           "): not ablated");
    }
    if (choice.layer < 0) return r;
    const std::string layer = std::to_string(choice.layer + 1);
    if (choice.layer >= c.layers) {
        refuse("layer", layer + ", but " + layers + ": no layer is opened in the pipeline");
        return r;
    }
    if (!pass.ok) {
        std::vector<std::string> why;
        if (const std::vector<int> ids = model.encode(sentence, why); why.empty()) why = model.validate(ids);
        refuse("layer", "layer " + layer + " is not opened: the session's sentence cannot run (" +
                            (why.empty() ? (pass.errors.empty() ? std::string("see the notice before") : pass.errors.front()) : why.front()) +
                            ")");
        return r;
    }
    if (const std::string why = layer_mismatch(c, static_cast<int>(pass.tokens.size()), scenario); !why.empty()) {
        refuse("layer", "the session's scenario is not layer " + layer + " of the model (" + why +
                            "): it opens on its own; open the layer from the model view");
        return r;
    }
    r.layer = choice.layer;
    r.head = choice.head;
    if (r.head < 0 || r.head >= c.heads) {
        refuse("head", std::to_string(choice.head + 1) + ", but the model's heads are 1 to " + std::to_string(c.heads) + ": not used");
        r.head = 0;
    }
    return r;
}

}  // namespace attn::session_file
