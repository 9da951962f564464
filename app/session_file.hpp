#pragma once
// A saved session: the scenario (with every toggle applied to it) and the view choices,
// as {"format": "attnlab-session", "version": 1, "scenario": {...}, "view": {...}}.
// Pure logic: no window, no GL; the GUI reads and writes it, the tests check it.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario.hpp"

namespace attn::session_file {

// What the window showed, beside the scenario.
struct ViewChoices {
    int shown_head = 0;
    bool all_heads = false;
    bool presenter = false;
    std::string lesson;   // lesson file name (e.g. "03-masks.json"), empty in free mode
    int step = 0;         // the lesson step shown
};

struct SessionLoad {
    std::optional<Scenario> scenario;
    ViewChoices view;
    std::vector<std::string> errors;  // "FILE: key 'view.step': expected an integer"
};

nlohmann::json session_to_json(const Scenario& scenario, const ViewChoices& view);
SessionLoad session_from_json(const nlohmann::json& j, const std::string& source_name);
SessionLoad session_from_text(const std::string& text, const std::string& source_name);

// Written with write_file_atomic; false with *error set when it cannot be written.
bool save_session(const std::string& path, const Scenario& scenario, const ViewChoices& view, std::string* error);
SessionLoad load_session(const std::string& path);
// A session file, or a scenario file (no "format": "attnlab-session"), with the default view.
SessionLoad load_session_or_scenario(const std::string& path);

}  // namespace attn::session_file
