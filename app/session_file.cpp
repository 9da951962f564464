#include "session_file.hpp"

#include "serialize.hpp"

namespace attn::session_file {

namespace {

constexpr const char* kFormat = "attnlab-session";
constexpr int kVersion = 1;

}  // namespace

nlohmann::json session_to_json(const Scenario& scenario, const ViewChoices& view) {
    nlohmann::json v = {{"shown_head", view.shown_head},
                        {"all_heads", view.all_heads},
                        {"presenter", view.presenter},
                        {"lesson", view.lesson},
                        {"step", view.step}};
    return {{"format", kFormat}, {"version", kVersion}, {"scenario", scenario_to_json(scenario)}, {"view", v}};
}

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
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != kVersion) {
        load.errors.push_back(source + ": unsupported session version (this app reads version " + std::to_string(kVersion) + ")");
        return load;
    }
    if (!j.contains("scenario")) {
        load.errors.push_back(source + ": key 'scenario' is missing");
        return load;
    }
    ScenarioLoad scenario = scenario_from_json(j["scenario"], source);
    if (!scenario.scenario) {
        load.errors = std::move(scenario.errors);
        if (load.errors.empty()) load.errors.push_back(source + ": key 'scenario' is not a valid scenario");
        return load;
    }
    if (j.contains("view")) {
        const nlohmann::json& v = j["view"];
        if (!v.is_object()) {
            load.errors.push_back(source + ": key 'view': expected an object");
            return load;
        }
        auto read_int = [&](const char* key, int& out) {
            if (!v.contains(key)) return;
            if (v[key].is_number_integer()) out = v[key].get<int>();
            else load.errors.push_back(source + ": key 'view." + key + "': expected an integer");
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
        if (v.contains("lesson")) {
            if (v["lesson"].is_string()) load.view.lesson = v["lesson"].get<std::string>();
            else load.errors.push_back(source + ": key 'view.lesson': expected a string");
        }
        if (load.view.shown_head < 0 || load.view.step < 0) load.errors.push_back(source + ": 'view.shown_head' and 'view.step' must be ≥ 0");
        if (!load.errors.empty()) return load;  // all or nothing: a half-read session is not loaded
    }
    load.scenario = std::move(scenario.scenario);
    return load;
}

SessionLoad session_from_text(const std::string& text, const std::string& source) {
    SessionLoad load;
    std::optional<nlohmann::json> j = parse_json(text, source, load.errors);
    if (!j) return load;
    return session_from_json(*j, source);
}

bool save_session(const std::string& path, const Scenario& scenario, const ViewChoices& view, std::string* error) {
    return write_file_atomic(path, dump_json(session_to_json(scenario, view), 1), error);
}

SessionLoad load_session(const std::string& path) {
    SessionLoad load;
    std::optional<std::string> text = read_text_file(path, kMaxScenarioFileBytes, "session", load.errors);
    if (!text) return load;
    return session_from_text(*text, path);
}

SessionLoad load_session_or_scenario(const std::string& path) {
    SessionLoad load;
    std::optional<std::string> text = read_text_file(path, kMaxScenarioFileBytes, "scenario or session", load.errors);
    if (!text) return load;
    std::optional<nlohmann::json> j = parse_json(*text, path, load.errors);
    if (!j) return load;
    if (j->is_object() && j->contains("format") && (*j)["format"] == kFormat) return session_from_json(*j, path);
    ScenarioLoad scenario = scenario_from_json(*j, path);
    load.errors = std::move(scenario.errors);
    load.scenario = std::move(scenario.scenario);
    return load;
}

}  // namespace attn::session_file
