#include "attention/scenario_edits.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

namespace attn {

namespace {

using json = nlohmann::json;

// The scenario's numbers kept as cells, each under its scenario-file key ("block.w_1" is
// "w_1" inside "block"). Direct mode's Q, K, V are not among them: a checkpoint's layer reads
// embeddings, and a direct scenario is small enough to be a setting.
struct WeightField {
    const char* key;
    SharedMatrix& (*of)(Scenario&);
};
struct MatrixField {
    const char* key;
    Matrix& (*of)(Scenario&);
};
struct VectorField {
    const char* key;
    Vector& (*of)(Scenario&);
};

const WeightField kWeights[] = {
    {"w_q", [](Scenario& s) -> SharedMatrix& { return s.w_q; }},
    {"w_k", [](Scenario& s) -> SharedMatrix& { return s.w_k; }},
    {"w_v", [](Scenario& s) -> SharedMatrix& { return s.w_v; }},
    {"w_o", [](Scenario& s) -> SharedMatrix& { return s.w_o; }},
    {"block.w_1", [](Scenario& s) -> SharedMatrix& { return s.block.w_1; }},
    {"block.w_2", [](Scenario& s) -> SharedMatrix& { return s.block.w_2; }},
    {"block.w_gate", [](Scenario& s) -> SharedMatrix& { return s.block.w_gate; }},
    {"block.moe.router", [](Scenario& s) -> SharedMatrix& { return s.block.moe.router; }},
    {"block.moe.shared_weights.w_gate", [](Scenario& s) -> SharedMatrix& { return s.block.moe.shared.w_gate; }},
    {"block.moe.shared_weights.w_1", [](Scenario& s) -> SharedMatrix& { return s.block.moe.shared.w_1; }},
    {"block.moe.shared_weights.w_2", [](Scenario& s) -> SharedMatrix& { return s.block.moe.shared.w_2; }},
    {"block.moe.shared_gate", [](Scenario& s) -> SharedMatrix& { return s.block.moe.shared_gate; }},
    {"latent.w_q_a", [](Scenario& s) -> SharedMatrix& { return s.latent.w_q_a; }},
    {"latent.w_q_b", [](Scenario& s) -> SharedMatrix& { return s.latent.w_q_b; }},
    {"latent.w_kv_a", [](Scenario& s) -> SharedMatrix& { return s.latent.w_kv_a; }},
    {"latent.w_kv_b", [](Scenario& s) -> SharedMatrix& { return s.latent.w_kv_b; }},
    {"output_gate.w_g", [](Scenario& s) -> SharedMatrix& { return s.output_gate.w_g; }},
};
// A mixture's experts, as many as it has: "block.moe.experts.<e>.w_gate", ".w_1", ".w_2".
const char* const kExpertFields[] = {"w_gate", "w_1", "w_2"};
SharedMatrix& expert_field(Expert& e, int field) { return field == 0 ? e.w_gate : field == 1 ? e.w_1 : e.w_2; }
std::string expert_key(int expert, int field) {
    return "block.moe.experts." + std::to_string(expert) + "." + kExpertFields[field];
}
// The expert and the field an expert key names; nullopt for any other key.
std::optional<std::pair<int, int>> parse_expert_key(const std::string& key) {
    const std::string prefix = "block.moe.experts.";
    if (key.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
    size_t at = prefix.size(), digits = 0;
    long long expert = 0;
    while (at < key.size() && std::isdigit(static_cast<unsigned char>(key[at])) && digits < 5) expert = expert * 10 + (key[at++] - '0'), ++digits;
    if (digits == 0 || at >= key.size() || key[at] != '.' || expert >= kMaxExperts) return std::nullopt;
    for (int f = 0; f < 3; ++f)
        if (key.compare(at + 1, std::string::npos, kExpertFields[f]) == 0) return std::pair{static_cast<int>(expert), f};
    return std::nullopt;
}
const MatrixField kMatrices[] = {
    {"embeddings", [](Scenario& s) -> Matrix& { return s.target.embeddings; }},
    {"source_embeddings", [](Scenario& s) -> Matrix& { return s.source.embeddings; }},
};
const VectorField kVectors[] = {
    {"b_q", [](Scenario& s) -> Vector& { return s.b_q; }},
    {"b_k", [](Scenario& s) -> Vector& { return s.b_k; }},
    {"b_v", [](Scenario& s) -> Vector& { return s.b_v; }},
    {"b_o", [](Scenario& s) -> Vector& { return s.b_o; }},
    {"q_norm", [](Scenario& s) -> Vector& { return s.q_norm; }},
    {"k_norm", [](Scenario& s) -> Vector& { return s.k_norm; }},
    {"sinks", [](Scenario& s) -> Vector& { return s.sinks; }},
    {"latent.b_q_a", [](Scenario& s) -> Vector& { return s.latent.b_q_a; }},
    {"output_gate.b_g", [](Scenario& s) -> Vector& { return s.output_gate.b_g; }},
    {"latent.b_kv_a", [](Scenario& s) -> Vector& { return s.latent.b_kv_a; }},
    {"latent.q_a_norm", [](Scenario& s) -> Vector& { return s.latent.q_a_norm; }},
    {"latent.kv_a_norm", [](Scenario& s) -> Vector& { return s.latent.kv_a_norm; }},
    {"block.b_1", [](Scenario& s) -> Vector& { return s.block.b_1; }},
    {"block.b_2", [](Scenario& s) -> Vector& { return s.block.b_2; }},
    {"block.norm_1.gamma", [](Scenario& s) -> Vector& { return s.block.norm_1.gamma; }},
    {"block.norm_1.beta", [](Scenario& s) -> Vector& { return s.block.norm_1.beta; }},
    {"block.norm_2.gamma", [](Scenario& s) -> Vector& { return s.block.norm_2.gamma; }},
    {"block.norm_2.beta", [](Scenario& s) -> Vector& { return s.block.norm_2.beta; }},
    {"block.norm_post_attention.gamma", [](Scenario& s) -> Vector& { return s.block.norm_post_attention.gamma; }},
    {"block.norm_post_attention.beta", [](Scenario& s) -> Vector& { return s.block.norm_post_attention.beta; }},
    {"block.norm_post_feed_forward.gamma", [](Scenario& s) -> Vector& { return s.block.norm_post_feed_forward.gamma; }},
    {"block.norm_post_feed_forward.beta", [](Scenario& s) -> Vector& { return s.block.norm_post_feed_forward.beta; }},
};

bool is_matrix_key(const std::string& key) {
    if (parse_expert_key(key)) return true;
    for (const WeightField& f : kWeights)
        if (key == f.key) return true;
    for (const MatrixField& f : kMatrices)
        if (key == f.key) return true;
    return false;
}

bool is_vector_key(const std::string& key) {
    for (const VectorField& f : kVectors)
        if (key == f.key) return true;
    return false;
}

json number_json(float x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    return x;
}

std::optional<float> number_of(const json& j) {
    if (j.is_number()) {
        const double d = j.get<double>();
        if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) return std::nullopt;
        return static_cast<float>(d);
    }
    if (j.is_string()) {
        if (j == "inf") return std::numeric_limits<float>::infinity();
        if (j == "-inf") return -std::numeric_limits<float>::infinity();
        if (j == "nan") return std::numeric_limits<float>::quiet_NaN();
    }
    return std::nullopt;
}

std::optional<long long> index_of(const json& j) {
    if (j.is_number_unsigned()) {
        const auto v = j.get<std::uint64_t>();
        return v <= static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ? std::optional<long long>(static_cast<long long>(v))
                                                                                  : std::nullopt;
    }
    if (j.is_number_integer()) {
        const auto v = j.get<std::int64_t>();
        return v >= 0 && v <= std::numeric_limits<int>::max() ? std::optional<long long>(v) : std::nullopt;
    }
    return std::nullopt;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The cells of `edited` that differ from `base` (same shape), as [[row, col, value], …]; a
// vector (one row) as [[index, value], …].
template <typename Read>
json changed_cells(Eigen::Index rows, Eigen::Index cols, bool vector, const Read& base, const Read& edited) {
    json cells = json::array();
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c) {
            const float a = base(r, c), b = edited(r, c);
            if (same_bits(a, b)) continue;
            if (vector) cells.push_back({c, number_json(b)});
            else cells.push_back({r, c, number_json(b)});
        }
    return cells;
}

// RFC 7386: the patch that turns object a into object b (a key of a that b lacks is null).
json merge_patch_from(const json& a, const json& b) {
    json patch = json::object();
    for (const auto& [key, value] : a.items())
        if (!b.contains(key)) patch[key] = nullptr;
    for (const auto& [key, value] : b.items()) {
        if (!a.contains(key)) patch[key] = value;
        else if (a[key] != value) patch[key] = a[key].is_object() && value.is_object() ? merge_patch_from(a[key], value) : value;
    }
    return patch;
}

// The patch's entry for a dotted key ("block.w_1"): nullptr when the patch does not name it.
const json* patched(const json& patch, const std::string& key) {
    const json* at = &patch;
    size_t from = 0;
    while (true) {
        const size_t dot = key.find('.', from);
        const std::string part = key.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
        if (!at->is_object() || !at->contains(part)) return nullptr;
        at = &(*at)[part];
        if (dot == std::string::npos) return at;
        from = dot + 1;
    }
}

// A weight's cells that an edit changed, under `key` in `cells`: compared cell by cell only when
// an edit copied it (its version differs). False when the shapes differ: the weight is then a
// setting of its own, written whole.
bool put_changed_cells(json& cells, const std::string& key, const SharedMatrix& a, const SharedMatrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    if (a.size() != 0 && a.version() != b.version()) {
        json changed = changed_cells(a.rows(), a.cols(), false, a, b);
        if (!changed.empty()) cells[key] = std::move(changed);
    }
    return true;
}

std::string shape_text(Eigen::Index rows, Eigen::Index cols) {
    return std::to_string(rows) + " \xC3\x97 " + std::to_string(cols);
}

}  // namespace

json scenario_edits_to_json(const Scenario& base, const Scenario& edited) {
    // Copies share the weights (SharedMatrix): the stripped copies below cost X and the vectors.
    Scenario base_rest = base, edited_rest = edited;
    json cells = json::object();
    for (const WeightField& f : kWeights) {
        if (!put_changed_cells(cells, f.key, f.of(base_rest), f.of(edited_rest))) continue;  // written whole, as a setting
        f.of(base_rest) = SharedMatrix();
        f.of(edited_rest) = SharedMatrix();
    }
    // The experts' weights, cell by cell while they keep their number and shapes; else written whole.
    std::vector<Expert>& base_experts = base_rest.block.moe.weights;
    std::vector<Expert>& edited_experts = edited_rest.block.moe.weights;
    bool cell_by_cell = base_experts.size() == edited_experts.size();
    for (size_t e = 0; cell_by_cell && e < base_experts.size(); ++e)
        for (int field = 0; field < 3; ++field) {
            const SharedMatrix &a = expert_field(base_experts[e], field), &b = expert_field(edited_experts[e], field);
            cell_by_cell = cell_by_cell && a.rows() == b.rows() && a.cols() == b.cols();
        }
    if (cell_by_cell) {
        for (size_t e = 0; e < base_experts.size(); ++e)
            for (int field = 0; field < 3; ++field)
                put_changed_cells(cells, expert_key(static_cast<int>(e), field), expert_field(base_experts[e], field),
                                  expert_field(edited_experts[e], field));
        edited_experts.clear();
    }
    base_experts.clear();
    for (const MatrixField& f : kMatrices) {
        const Matrix& a = f.of(base_rest);
        const Matrix& b = f.of(edited_rest);
        if (a.rows() != b.rows() || a.cols() != b.cols()) continue;
        json changed = changed_cells(a.rows(), a.cols(), false, a, b);
        if (!changed.empty()) cells[f.key] = std::move(changed);
        f.of(base_rest) = Matrix();
        f.of(edited_rest) = Matrix();
    }
    for (const VectorField& f : kVectors) {
        const Vector& a = f.of(base_rest);
        const Vector& b = f.of(edited_rest);
        if (a.size() != b.size()) continue;
        json changed = changed_cells(1, a.size(), true, a, b);
        if (!changed.empty()) cells[f.key] = std::move(changed);
        f.of(base_rest) = Vector();
        f.of(edited_rest) = Vector();
    }
    return {{"cells", std::move(cells)}, {"settings", merge_patch_from(scenario_to_json(base_rest), scenario_to_json(edited_rest))}};
}

std::vector<std::string> scenario_edits_faults(const json& edits, const std::string& where) {
    std::vector<std::string> faults;
    auto fail = [&](const std::string& key, const std::string& what) { faults.push_back(where + key + "': " + what); };
    if (!edits.is_object()) {
        fail("", "expected an object {\"cells\": {…}, \"settings\": {…}}");
        return faults;
    }
    for (const auto& [key, value] : edits.items())
        if (key != "cells" && key != "settings") fail("." + key, "unknown key");
    if (edits.contains("settings") && !edits["settings"].is_object()) fail(".settings", "expected an object of scenario keys");
    if (!edits.contains("cells")) return faults;
    if (!edits["cells"].is_object()) {
        fail(".cells", "expected an object of matrices");
        return faults;
    }
    for (const auto& [key, list] : edits["cells"].items()) {
        const bool matrix = is_matrix_key(key), vector = is_vector_key(key);
        if (!matrix && !vector) {
            fail(".cells." + key, "unknown matrix");
            continue;
        }
        const std::string form = matrix ? "[row, column, value]" : "[index, value]";
        if (!list.is_array()) {
            fail(".cells." + key, "expected a list of " + form);
            continue;
        }
        size_t n = 0;
        for (const json& cell : list) {
            ++n;
            const size_t width = matrix ? 3 : 2;
            bool ok = cell.is_array() && cell.size() == width;
            for (size_t i = 0; ok && i + 1 < width; ++i) ok = index_of(cell[i]).has_value();
            if (ok) ok = number_of(cell[width - 1]).has_value();
            if (!ok) {
                fail(".cells." + key, "entry " + std::to_string(n) + ": expected " + form +
                                          " (indices from 0, a float32 value or \"nan\", \"inf\", \"-inf\"), found " + dump_json(cell));
                break;
            }
        }
    }
    return faults;
}

int edited_cell_count(const json& edits) {
    int n = 0;
    if (edits.is_object() && edits.contains("cells") && edits["cells"].is_object())
        for (const auto& [key, list] : edits["cells"].items()) n += list.is_array() ? static_cast<int>(list.size()) : 0;
    return n;
}

ScenarioLoad apply_scenario_edits(const Scenario& base, const json& edits, const std::string& where) {
    ScenarioLoad out;
    out.errors = scenario_edits_faults(edits, where);
    if (!out.errors.empty()) return out;
    const json settings = edits.contains("settings") ? edits["settings"] : json::object();
    // The settings: the base's file keys, every number kept as cells taken out, patched, read.
    Scenario rest = base;
    for (const WeightField& f : kWeights) f.of(rest) = SharedMatrix();
    for (const MatrixField& f : kMatrices) f.of(rest) = Matrix();
    for (const VectorField& f : kVectors) f.of(rest) = Vector();
    rest.block.moe.weights.clear();
    json file = scenario_to_json(rest);
    file.merge_patch(settings);
    ScenarioLoad read = scenario_from_json(file, where + ".settings'");
    if (!read.scenario) {
        out.errors = std::move(read.errors);
        if (out.errors.empty()) out.errors.push_back(where + ".settings': not a valid scenario");
        return out;
    }
    Scenario s = std::move(*read.scenario);
    // The numbers: the base's (its weights shared), unless a setting replaced them whole.
    Scenario numbers = base;
    for (const WeightField& f : kWeights)
        if (patched(settings, f.key) == nullptr) f.of(s) = f.of(numbers);
    for (const MatrixField& f : kMatrices)
        if (patched(settings, f.key) == nullptr) f.of(s) = std::move(f.of(numbers));
    for (const VectorField& f : kVectors)
        if (patched(settings, f.key) == nullptr) f.of(s) = std::move(f.of(numbers));
    if (patched(settings, "block.moe.expert_weights") == nullptr &&
        static_cast<int>(numbers.block.moe.weights.size()) == s.block.moe.experts)
        s.block.moe.weights = numbers.block.moe.weights;
    if (edits.contains("cells")) {
        for (const auto& item : edits["cells"].items()) {
            // Named copies, not structured bindings: a lambda may not capture those before C++20.
            const std::string key = item.key();
            const json& list = item.value();
            auto outside = [&](const json& cell, Eigen::Index rows, Eigen::Index cols) {
                out.errors.push_back(where + ".cells." + key + "': cell " + dump_json(cell) + " is outside " + key + "'s " +
                                     shape_text(rows, cols));
            };
            // A weight's cells, each inside it, set in this scenario's own copy: the model's weights stay as they are.
            auto set_weight_cells = [&](SharedMatrix& w) {
                for (const json& cell : list)
                    if (*index_of(cell[0]) >= w.rows() || *index_of(cell[1]) >= w.cols()) {
                        outside(cell, w.rows(), w.cols());
                        return;
                    }
                if (!out.errors.empty() || list.empty()) return;
                Matrix& values = w.edit();
                for (const json& cell : list) values(*index_of(cell[0]), *index_of(cell[1])) = *number_of(cell[2]);
            };
            for (const WeightField& f : kWeights)
                if (key == f.key) set_weight_cells(f.of(s));
            if (const auto named = parse_expert_key(key)) {
                const auto [expert, field] = *named;
                if (expert < static_cast<int>(s.block.moe.weights.size()))
                    set_weight_cells(expert_field(s.block.moe.weights[static_cast<size_t>(expert)], field));
                else
                    out.errors.push_back(where + ".cells." + key + "': the block has " + std::to_string(s.block.moe.weights.size()) +
                                         " experts with weights of their own");
            }
            for (const MatrixField& f : kMatrices) {
                if (key != f.key) continue;
                Matrix& m = f.of(s);
                for (const json& cell : list) {
                    if (*index_of(cell[0]) >= m.rows() || *index_of(cell[1]) >= m.cols()) {
                        outside(cell, m.rows(), m.cols());
                        break;
                    }
                    m(*index_of(cell[0]), *index_of(cell[1])) = *number_of(cell[2]);
                }
            }
            for (const VectorField& f : kVectors) {
                if (key != f.key) continue;
                Vector& v = f.of(s);
                for (const json& cell : list) {
                    if (*index_of(cell[0]) >= v.size()) {
                        outside(cell, 1, v.size());
                        break;
                    }
                    v(*index_of(cell[0])) = *number_of(cell[1]);
                }
            }
        }
    }
    if (!out.errors.empty()) return out;
    out.scenario = std::move(s);
    return out;
}

}  // namespace attn
