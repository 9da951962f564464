#pragma once
// The scenario and trace files (JSON). The formats are documented in docs/file-formats.md.
// Non-finite numbers are written as the strings "inf", "-inf" and "nan" (JSON has no
// literal for them) and read back from the same strings.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/json_read.hpp"   // parse_json, read_text_file: the shared readers of every file
#include "io/json_write.hpp"  // dump_json, write_file_atomic: the shared writers
#include "attention/scenario.hpp"
#include "attention/trace.hpp"

namespace attn {

struct ScenarioLoad {
    std::optional<Scenario> scenario;
    std::vector<std::string> errors;   // "FILE: key 'q' row 2: expected 3 numbers, found 2"
};

ScenarioLoad scenario_from_json(const nlohmann::json& j, const std::string& source_name);
ScenarioLoad scenario_from_text(const std::string& text, const std::string& source_name);
ScenarioLoad load_scenario_file(const std::string& path);

constexpr std::uintmax_t kMaxScenarioFileBytes = 64u * 1024 * 1024;

nlohmann::json scenario_to_json(const Scenario& scenario);
// Deterministic: the same scenario gives the same file (no timings in it). Without
// `weights`, the weight matrices (W_Q, W_K, W_V, W_O, the block's W_1, W_2, W_gate) are left
// out, and never read: a checkpoint's layer names them instead (lm::Model::layer_weight_names).
nlohmann::json trace_to_json(const Trace& trace, bool weights = true);
nlohmann::json matrix_to_json(const Matrix& m);

}  // namespace attn
