// Scenario and trace files.
//
// [SECTION] Reading: a cursor that knows where it is, for messages that say where
// [SECTION] Scenario from JSON
// [SECTION] Scenario and trace to JSON
// [SECTION] Files
#include "attention/serialize.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <tuple>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include "attention/positional.hpp"
#include "attention/registry.hpp"

namespace attn {

using nlohmann::json;

namespace {

constexpr int kMaxTokens = 1 << 20;

// [SECTION] Reading: a cursor that knows where it is, for messages that say where

struct Reader {
    std::string source;
    std::vector<std::string> errors;

    void fail(const std::string& where, const std::string& what) { errors.push_back(source + ": " + where + ": " + what); }

    static std::string type_name(const json& j) {
        switch (j.type()) {
            case json::value_t::null: return "null";
            case json::value_t::boolean: return "a boolean";
            case json::value_t::string: return "a string";
            case json::value_t::array: return "an array";
            case json::value_t::object: return "an object";
            case json::value_t::discarded: return "nothing";
            default: return "a number";
        }
    }

    std::optional<float> number(const json& j, const std::string& where) {
        if (j.is_number()) {
            const double d = j.get<double>();
            if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) {
                fail(where, "expected a float32 number (|x| ≤ 3.4e38), found " + dump_json(j));
                return std::nullopt;
            }
            return static_cast<float>(d);
        }
        if (j.is_string()) {
            const std::string s = j.get<std::string>();
            if (s == "inf" || s == "+inf" || s == "Infinity") return std::numeric_limits<float>::infinity();
            if (s == "-inf" || s == "-Infinity") return -std::numeric_limits<float>::infinity();
            if (s == "nan" || s == "NaN") return std::numeric_limits<float>::quiet_NaN();
        }
        fail(where, "expected a number (or \"inf\", \"-inf\", \"nan\"), found " + type_name(j) +
                        (j.is_string() ? " " + dump_json(j) : ""));
        return std::nullopt;
    }

    std::optional<Matrix> matrix(const json& j, const std::string& key) {
        const std::string where = "key '" + key + "'";
        if (!j.is_array() || j.empty()) {
            fail(where, "expected a non-empty array of rows, found " + type_name(j));
            return std::nullopt;
        }
        const size_t rows = j.size();
        if (!j[0].is_array() || j[0].empty()) {
            fail(where + " row 1", "expected a non-empty array of numbers, found " + type_name(j[0]));
            return std::nullopt;
        }
        const size_t cols = j[0].size();
        if (rows * cols > 64u * 1024 * 1024) {
            fail(where, "matrix of " + std::to_string(rows) + "×" + std::to_string(cols) + " is too large");
            return std::nullopt;
        }
        Matrix m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
        bool ok = true;
        for (size_t i = 0; i < rows && ok; ++i) {
            const json& row = j[i];
            const std::string row_where = where + " row " + std::to_string(i + 1);
            if (!row.is_array() || row.size() != cols) {
                fail(row_where, "expected " + std::to_string(cols) + " numbers (like row 1), found " +
                                    (row.is_array() ? std::to_string(row.size()) : type_name(row)));
                return std::nullopt;
            }
            for (size_t c = 0; c < cols; ++c) {
                auto v = number(row[c], row_where + " column " + std::to_string(c + 1));
                if (!v) return std::nullopt;
                m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c)) = *v;
            }
        }
        return m;
    }

    // A row vector: one array of numbers.
    std::optional<Vector> vector(const json& j, const std::string& key) {
        const std::string where = "key '" + key + "'";
        if (!j.is_array() || j.empty()) {
            fail(where, "expected a non-empty array of numbers, found " + type_name(j));
            return std::nullopt;
        }
        if (j.size() > 64u * 1024 * 1024) {
            fail(where, "has " + std::to_string(j.size()) + " numbers: too many");
            return std::nullopt;
        }
        Vector v(static_cast<Eigen::Index>(j.size()));
        for (size_t c = 0; c < j.size(); ++c) {
            auto x = number(j[c], where + " entry " + std::to_string(c + 1));
            if (!x) return std::nullopt;
            v(static_cast<Eigen::Index>(c)) = *x;
        }
        return v;
    }

    std::optional<std::vector<std::string>> strings(const json& j, const std::string& key) {
        if (!j.is_array()) {
            fail("key '" + key + "'", "expected an array of strings, found " + type_name(j));
            return std::nullopt;
        }
        if (j.size() > static_cast<size_t>(kMaxTokens)) {
            fail("key '" + key + "'", "has " + std::to_string(j.size()) + " entries; the limit is " + std::to_string(kMaxTokens));
            return std::nullopt;
        }
        std::vector<std::string> out;
        for (size_t i = 0; i < j.size(); ++i) {
            if (!j[i].is_string()) {
                fail("key '" + key + "' entry " + std::to_string(i + 1), "expected a string, found " + type_name(j[i]));
                return std::nullopt;
            }
            out.push_back(j[i].get<std::string>());
        }
        return out;
    }

    std::optional<std::vector<bool>> flags(const json& j, const std::string& key) {
        if (!j.is_array()) {
            fail("key '" + key + "'", "expected an array of booleans, found " + type_name(j));
            return std::nullopt;
        }
        std::vector<bool> out;
        for (size_t i = 0; i < j.size(); ++i) {
            if (j[i].is_boolean()) out.push_back(j[i].get<bool>());
            else if (j[i].is_number_integer() && (j[i] == 0 || j[i] == 1)) out.push_back(j[i] == 1);
            else {
                fail("key '" + key + "' entry " + std::to_string(i + 1), "expected true/false or 1/0, found " + dump_json(j[i]));
                return std::nullopt;
            }
        }
        return out;
    }

    std::optional<long long> integer(const json& j, const std::string& key, long long lo, long long hi) {
        if (!j.is_number_integer()) {
            fail("key '" + key + "'", "expected an integer, found " + type_name(j) + " " + dump_json(j));
            return std::nullopt;
        }
        const long long v = j.get<long long>();
        if (v < lo || v > hi) {
            fail("key '" + key + "'", "expected " + std::to_string(lo) + " to " + std::to_string(hi) + ", found " +
                                          std::to_string(v));
            return std::nullopt;
        }
        return v;
    }

    std::optional<bool> boolean(const json& j, const std::string& key) {
        if (!j.is_boolean()) {
            fail("key '" + key + "'", "expected true or false, found " + type_name(j));
            return std::nullopt;
        }
        return j.get<bool>();
    }

    template <typename Enum>
    std::optional<Enum> choice(const json& j, const std::string& key, std::optional<Enum> (*parse)(const std::string&),
                               const char* expected) {
        if (j.is_string())
            if (auto v = parse(j.get<std::string>())) return v;
        fail("key '" + key + "'", std::string("expected one of ") + expected + ", found " + dump_json(j));
        return std::nullopt;
    }

    // A weight matrix: one (d_model × d_model) matrix, or one (d_model × d_k) matrix per head.
    std::optional<Matrix> weight(const json& j, const std::string& key) {
        if (j.is_array() && !j.empty() && j[0].is_array() && !j[0].empty() && j[0][0].is_array()) {
            Matrix joined;
            for (size_t h = 0; h < j.size(); ++h) {
                auto m = matrix(j[h], key + "[" + std::to_string(h) + "]");
                if (!m) return std::nullopt;
                if (h > 0 && (m->rows() != joined.rows() || m->cols() != joined.cols() / static_cast<Eigen::Index>(h))) {
                    fail("key '" + key + "'", "head " + std::to_string(h + 1) + " has a different shape from head 1");
                    return std::nullopt;
                }
                Matrix next(m->rows(), joined.cols() + m->cols());
                if (joined.size() != 0) next.leftCols(joined.cols()) = joined;
                next.rightCols(m->cols()) = *m;
                joined = std::move(next);
            }
            return joined;
        }
        return matrix(j, key);
    }
};

std::optional<MaskMatrix> read_custom_mask(Reader& r, const json& j) {
    auto m = r.matrix(j, "custom_mask");
    if (!m) return std::nullopt;
    for (Eigen::Index i = 0; i < m->rows(); ++i)
        for (Eigen::Index c = 0; c < m->cols(); ++c)
            if ((*m)(i, c) != 0.0f && (*m)(i, c) != 1.0f) {
                r.fail("key 'custom_mask' row " + std::to_string(i + 1) + " column " + std::to_string(c + 1),
                       "expected 1 (visible) or 0 (masked)");
                return std::nullopt;
            }
    return MaskMatrix(m->array() != 0.0f);
}

void read_norm(Reader& r, const json& j, const std::string& key, LayerNormParams& params) {
    if (!j.is_object()) {
        r.fail("key '" + key + "'", "expected an object {\"gamma\": [...], \"beta\": [...]}");
        return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string sub = key + "." + it.key();
        if (it.key() == "gamma") { if (auto v = r.vector(*it, sub)) params.gamma = *v; }
        else if (it.key() == "beta") { if (auto v = r.vector(*it, sub)) params.beta = *v; }
        else r.fail("key '" + sub + "'", "unknown key (expected gamma or beta)");
    }
}

// "rope": {"pairing", "theta", "rotary_dims", "attention_factor", "scaling": {"type", "factor",
// "low_freq_factor", "high_freq_factor", "original_max_position_embeddings", "short_factor",
// "long_factor"}}.
void read_rope(Reader& r, const json& j, RopeOptions& rope) {
    if (!j.is_object()) {
        r.fail("key 'rope'", "expected an object {\"pairing\", \"theta\", \"rotary_dims\", \"scaling\"}");
        return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = "rope." + it.key();
        const std::string& k = it.key();
        if (k == "pairing") {
            if (auto v = r.choice(*it, key, rope_pairing_from_string, "\"interleaved\", \"rotate_half\"")) rope.pairing = *v;
        } else if (k == "theta") {
            if (auto v = r.number(*it, "key '" + key + "'")) rope.theta = *v;
        } else if (k == "rotary_dims") {
            if (auto v = r.integer(*it, key, 0, 8192)) rope.rotary_dims = static_cast<int>(*v);
        } else if (k == "attention_factor") {
            if (auto v = r.number(*it, "key '" + key + "'")) rope.attention_factor = *v;
        } else if (k == "scaling") {
            if (!it->is_object()) {
                r.fail("key '" + key + "'", "expected an object {\"type\": \"linear\", \"llama3\" or \"longrope\", \"factor\", …}");
                continue;
            }
            for (auto sc = it->begin(); sc != it->end(); ++sc) {
                const std::string skey = key + "." + sc.key();
                const std::string& sk = sc.key();
                if (sk == "type") {
                    if (auto v = r.choice(*sc, skey, rope_scaling_from_string, "\"none\", \"linear\", \"llama3\", \"longrope\", \"yarn\""))
                        rope.scaling = *v;
                } else if (sk == "factor") {
                    if (auto v = r.number(*sc, "key '" + skey + "'")) rope.factor = *v;
                } else if (sk == "low_freq_factor") {
                    if (auto v = r.number(*sc, "key '" + skey + "'")) rope.low_freq_factor = *v;
                } else if (sk == "high_freq_factor") {
                    if (auto v = r.number(*sc, "key '" + skey + "'")) rope.high_freq_factor = *v;
                } else if (sk == "original_max_position_embeddings") {
                    if (auto v = r.integer(*sc, skey, 1, 1 << 30)) rope.original_max_positions = static_cast<int>(*v);
                } else if (sk == "short_factor") {
                    if (auto v = r.vector(*sc, skey)) rope.short_factor = *v;
                } else if (sk == "long_factor") {
                    if (auto v = r.vector(*sc, skey)) rope.long_factor = *v;
                } else if (sk == "beta_fast") {
                    if (auto v = r.number(*sc, "key '" + skey + "'")) rope.beta_fast = *v;
                } else if (sk == "beta_slow") {
                    if (auto v = r.number(*sc, "key '" + skey + "'")) rope.beta_slow = *v;
                } else if (sk == "truncate") {
                    if (auto v = r.boolean(*sc, skey)) rope.truncate = *v;
                } else {
                    r.fail("key '" + skey + "'", "unknown key: expected type, factor, low_freq_factor, high_freq_factor, "
                                                 "original_max_position_embeddings, short_factor, long_factor, beta_fast, beta_slow, truncate");
                }
            }
            const bool yarn = rope.scaling == RopeScalingKind::Yarn;
            for (const char* own : {"beta_fast", "beta_slow", "truncate"})
                if (!yarn && it->contains(own))
                    r.fail("key '" + key + "." + own + "'", std::string("is YaRN's; with type \"") + to_string(rope.scaling) +
                                                              "\" it would be ignored");
            for (const char* other : {"low_freq_factor", "high_freq_factor"})
                if (yarn && it->contains(other))
                    r.fail("key '" + key + "." + other + "'", "is Llama 3's; with type \"yarn\" it would be ignored");
            // Keys of another type would be ignored: refused, naming them.
            const bool longrope = rope.scaling == RopeScalingKind::LongRope;
            for (const char* own : {"short_factor", "long_factor"})
                if (!longrope && it->contains(own))
                    r.fail("key '" + key + "." + own + "'", std::string("is LongRoPE's; with type \"") + to_string(rope.scaling) +
                                                              "\" it would be ignored");
            for (const char* other : {"factor", "low_freq_factor", "high_freq_factor"})
                if (longrope && it->contains(other))
                    r.fail("key '" + key + "." + other + "'", "is not read with type \"longrope\" (its factors are short_factor and "
                                                              "long_factor): it would be ignored");
        } else {
            r.fail("key '" + key + "'", "unknown key: expected pairing, theta, rotary_dims, attention_factor, scaling");
        }
    }
}

// One expert's {"w_gate", "w_1", "w_2", "b_gate", "b_1", "b_2"} at `at`.
void read_expert(Reader& r, const json& w, const std::string& at, Expert& expert) {
    if (!w.is_object()) {
        r.fail("key '" + at + "'", "expected an object {\"w_gate\", \"w_1\", \"w_2\"}");
        return;
    }
    for (auto m = w.begin(); m != w.end(); ++m) {
        SharedMatrix* target = m.key() == "w_gate" ? &expert.w_gate : m.key() == "w_1" ? &expert.w_1 : m.key() == "w_2" ? &expert.w_2 : nullptr;
        Vector* bias = m.key() == "b_gate" ? &expert.b_gate : m.key() == "b_1" ? &expert.b_1 : m.key() == "b_2" ? &expert.b_2 : nullptr;
        if (target == nullptr && bias == nullptr)
            r.fail("key '" + at + "." + m.key() + "'", "unknown key: expected w_gate, w_1, w_2, b_gate, b_1, b_2");
        else if (target != nullptr) { if (auto matrix = r.matrix(*m, at + "." + m.key())) *target = *matrix; }
        else if (auto v = r.vector(*m, at + "." + m.key())) *bias = *v;
    }
}

// The block's mixture of experts: {"experts": E, "top_k": k, "normalize_top_k", "router",
// "expert_weights": [{"w_gate", "w_1", "w_2"}, …], "ablated": [e, …]}, and a shared expert:
// "shared_d_ff", "shared_gated", "shared_weights" {"w_gate", "w_1", "w_2"}, "shared_gate" (d × 1).
void read_moe(Reader& r, const json& j, MixtureOfExperts& moe) {
    if (!j.is_object()) {
        r.fail("key 'block.moe'", "expected an object {\"experts\", \"top_k\", \"normalize_top_k\", \"router\", \"expert_weights\", \"ablated\"}");
        return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = "block.moe." + it.key();
        const std::string& k = it.key();
        if (k == "experts") { if (auto v = r.integer(*it, key, 1, kMaxExperts)) moe.experts = static_cast<int>(*v); }
        else if (k == "top_k") { if (auto v = r.integer(*it, key, 1, kMaxExperts)) moe.top_k = static_cast<int>(*v); }
        else if (k == "normalize_top_k") { if (auto v = r.boolean(*it, key)) moe.normalize_top_k = *v; }
        else if (k == "router") { if (auto m = r.matrix(*it, key)) moe.router = *m; }
        else if (k == "router_kind") {
            if (auto v = r.choice(*it, key, router_kind_from_string, "\"softmax_then_top_k\", \"top_k_then_softmax\", \"sigmoid_grouped\", \"top_k_then_sigmoid\"")) moe.router_kind = *v;
        }
        else if (k == "router_bias") { if (auto v = r.vector(*it, key)) moe.router_bias = *v; }
        else if (k == "swiglu_limit") { if (auto v = r.number(*it, "key '" + key + "'")) moe.swiglu_limit = *v; }
        else if (k == "swiglu_alpha") { if (auto v = r.number(*it, "key '" + key + "'")) moe.swiglu_alpha = *v; }
        else if (k == "shared_d_ff") { if (auto v = r.integer(*it, key, 1, 1 << 20)) moe.shared_d_ff = static_cast<int>(*v); }
        else if (k == "shared_gated") { if (auto v = r.boolean(*it, key)) moe.shared_gated = *v; }
        else if (k == "shared_gate") { if (auto m = r.matrix(*it, key)) moe.shared_gate = *m; }
        else if (k == "shared_weights") read_expert(r, *it, key, moe.shared);
        else if (k == "choice_bias") { if (auto v = r.vector(*it, key)) moe.choice_bias = *v; }
        else if (k == "groups") { if (auto v = r.integer(*it, key, 1, kMaxExperts)) moe.groups = static_cast<int>(*v); }
        else if (k == "top_groups") { if (auto v = r.integer(*it, key, 1, kMaxExperts)) moe.top_groups = static_cast<int>(*v); }
        else if (k == "routed_scale") { if (auto v = r.number(*it, "key '" + key + "'")) moe.routed_scale = *v; }
        else if (k == "weight_input") { if (auto v = r.boolean(*it, key)) moe.weight_input = *v; }
        else if (k == "ablated") {
            if (!it->is_array()) { r.fail("key '" + key + "'", "expected a list of expert numbers, from 0"); continue; }
            for (size_t i = 0; i < it->size(); ++i)
                if (auto v = r.integer((*it)[i], key + "[" + std::to_string(i) + "]", 0, kMaxExperts - 1)) moe.ablated.push_back(static_cast<int>(*v));
        } else if (k == "expert_weights") {
            if (!it->is_array()) { r.fail("key '" + key + "'", "expected a list with each expert's {\"w_gate\", \"w_1\", \"w_2\"}"); continue; }
            for (size_t e = 0; e < it->size(); ++e) {
                Expert expert;
                read_expert(r, (*it)[e], key + "[" + std::to_string(e) + "]", expert);
                moe.weights.push_back(std::move(expert));
            }
        } else {
            r.fail("key '" + key + "'", "unknown key: expected experts, top_k, normalize_top_k, router_kind, router, router_bias, "
                                        "swiglu_limit, swiglu_alpha, expert_weights, ablated, shared_d_ff, shared_gated, shared_weights, "
                                        "shared_gate, choice_bias, groups, top_groups, routed_scale, weight_input");
        }
    }
    if (moe.experts == 0) r.fail("key 'block.moe'", "has no \"experts\": give the number of experts E");
    // Keys that would change nothing are refused, naming them.
    if (moe.router_kind == RouterKind::TopKThenSoftmax && moe.normalize_top_k)
        r.fail("key 'block.moe.normalize_top_k'", "is true with router_kind \"top_k_then_softmax\", whose kept weights already sum to 1: "
                                                 "it would change nothing");
    if (moe.router_kind == RouterKind::TopKThenSigmoid && moe.normalize_top_k)
        r.fail("key 'block.moe.normalize_top_k'", "is true with router_kind \"top_k_then_sigmoid\", which weighs each kept expert by its own "
                                                 "σ: it would be ignored");
    if (j.contains("swiglu_alpha") && !(moe.swiglu_limit > 0.0f))
        r.fail("key 'block.moe.swiglu_alpha'", "is read only with a swiglu_limit above 0 (gpt-oss's clamped SwiGLU): it would be ignored");
    for (const char* shared_key : {"shared_gated", "shared_weights", "shared_gate"})
        if (j.contains(shared_key) && moe.shared_d_ff == 0)
            r.fail(std::string("key 'block.moe.") + shared_key + "'", "is read only with a shared expert (shared_d_ff above 0): it would be ignored");
    for (const char* grouped_key : {"choice_bias", "groups", "top_groups", "routed_scale"})
        if (j.contains(grouped_key) && moe.router_kind != RouterKind::SigmoidGrouped)
            r.fail(std::string("key 'block.moe.") + grouped_key + "'", "is read only with router_kind \"sigmoid_grouped\" (DeepSeek-V3): it would be ignored");
    if (j.contains("shared_gate") && !moe.shared_gated)
        r.fail("key 'block.moe.shared_gate'", "is read only with shared_gated true: it would be ignored");
}

// Llama 4's query temperature: {"floor_scale", "attn_scale"} (scenario.hpp's QueryTemperature).
void read_temperature(Reader& r, const json& j, QueryTemperature& t) {
    if (!j.is_object()) {
        r.fail("key 'temperature'", "expected an object {\"floor_scale\", \"attn_scale\"}");
        return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = "key 'temperature." + it.key() + "'";
        if (it.key() == "floor_scale") { if (auto v = r.number(*it, key)) t.floor_scale = *v; }
        else if (it.key() == "attn_scale") { if (auto v = r.number(*it, key)) t.attn_scale = *v; }
        else r.fail(key, "unknown key: expected floor_scale, attn_scale");
    }
    if (!j.contains("floor_scale")) r.fail("key 'temperature'", "has no \"floor_scale\": give it (8192 in Llama 4)");
}

// Gated attention: true, or {"w_g", "b_g"} with its weights (scenario.hpp's OutputGate).
void read_output_gate(Reader& r, const json& j, OutputGate& gate) {
    if (j.is_boolean()) {
        gate.on = j.get<bool>();
        return;
    }
    if (!j.is_object()) {
        r.fail("key 'output_gate'", "expected true, false, or an object {\"w_g\", \"b_g\"}");
        return;
    }
    gate.on = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = "output_gate." + it.key();
        if (it.key() == "w_g") { if (auto m = r.matrix(*it, key)) gate.w_g = *m; }
        else if (it.key() == "b_g") { if (auto v = r.vector(*it, key)) gate.b_g = *v; }
        else r.fail("key '" + key + "'", "unknown key: expected w_g, b_g");
    }
}

// Differential attention: true, or {"lambda_init", "lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"}
// (scenario.hpp's DifferentialAttention).
void read_differential(Reader& r, const json& j, DifferentialAttention& d) {
    if (j.is_boolean()) {
        d.on = j.get<bool>();
        return;
    }
    if (!j.is_object()) {
        r.fail("key 'differential'", "expected true, false, or an object {\"lambda_init\", \"lambda_q1\", \"lambda_k1\", \"lambda_q2\", \"lambda_k2\"}");
        return;
    }
    d.on = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = "differential." + it.key();
        const std::string& k = it.key();
        Vector* vector = k == "lambda_q1" ? &d.lambda_q1 : k == "lambda_k1" ? &d.lambda_k1 : k == "lambda_q2" ? &d.lambda_q2
                       : k == "lambda_k2" ? &d.lambda_k2 : nullptr;
        if (k == "lambda_init") { if (auto v = r.number(*it, "key '" + key + "'")) d.lambda_init = *v; }
        else if (vector != nullptr) { if (auto v = r.vector(*it, key)) *vector = *v; }
        else r.fail("key '" + key + "'", "unknown key: expected lambda_init, lambda_q1, lambda_k1, lambda_q2, lambda_k2");
    }
}

// Gated DeltaNet: true, or {"key_heads", "key_dim", "conv_kernel", "w_z", "w_b", "w_a", "conv",
// "a_log", "dt_bias", "norm"} (scenario.hpp's GatedDeltaNet).
void read_delta_net(Reader& r, const json& j, GatedDeltaNet& n) {
    if (j.is_boolean()) {
        n.on = j.get<bool>();
        return;
    }
    if (!j.is_object()) {
        r.fail("key 'delta_net'", "expected true, false, or an object {\"key_heads\", \"key_dim\", \"conv_kernel\", \"w_z\", …}");
        return;
    }
    n.on = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = "delta_net." + it.key();
        const std::string& k = it.key();
        int* size = k == "key_heads" ? &n.key_heads : k == "key_dim" ? &n.key_dim : k == "conv_kernel" ? &n.conv_kernel : nullptr;
        SharedMatrix* weight = k == "w_z" ? &n.w_z : k == "w_b" ? &n.w_b : k == "w_a" ? &n.w_a : nullptr;
        Vector* vector = k == "a_log" ? &n.a_log : k == "dt_bias" ? &n.dt_bias : k == "norm" ? &n.norm : nullptr;
        if (size != nullptr) { if (auto v = r.integer(*it, key, k == "conv_kernel" ? 1 : 0, k == "conv_kernel" ? 64 : 65536)) *size = static_cast<int>(*v); }
        else if (weight != nullptr) { if (auto m = r.matrix(*it, key)) *weight = *m; }
        else if (k == "conv") { if (auto m = r.matrix(*it, key)) n.conv = *m; }
        else if (vector != nullptr) { if (auto v = r.vector(*it, key)) *vector = *v; }
        else r.fail("key '" + key + "'", "unknown key: expected key_heads, key_dim, conv_kernel, w_z, w_b, w_a, conv, a_log, dt_bias, norm");
    }
}

// Multi-head latent attention: {"kv_rank", "q_rank", "nope_dim", "rope_dim", "v_dim", "w_q_a", "w_q_b",
// "w_kv_a", "w_kv_b", "b_q_a", "b_kv_a", "q_a_norm", "kv_a_norm"} (scenario.hpp's LatentAttention).
void read_latent(Reader& r, const json& j, LatentAttention& latent) {
    if (!j.is_object()) {
        r.fail("key 'latent'", "expected an object {\"kv_rank\", \"q_rank\", \"nope_dim\", \"rope_dim\", \"v_dim\", …}");
        return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = "latent." + it.key();
        const std::string& k = it.key();
        int* size = k == "kv_rank" ? &latent.kv_rank : k == "q_rank" ? &latent.q_rank : k == "nope_dim" ? &latent.nope_dim
                  : k == "rope_dim" ? &latent.rope_dim : k == "v_dim" ? &latent.v_dim : nullptr;
        SharedMatrix* weight = k == "w_q_a" ? &latent.w_q_a : k == "w_q_b" ? &latent.w_q_b : k == "w_kv_a" ? &latent.w_kv_a
                             : k == "w_kv_b" ? &latent.w_kv_b : nullptr;
        Vector* vector = k == "b_q_a" ? &latent.b_q_a : k == "b_kv_a" ? &latent.b_kv_a : k == "q_a_norm" ? &latent.q_a_norm
                       : k == "kv_a_norm" ? &latent.kv_a_norm : nullptr;
        if (size != nullptr) { if (auto v = r.integer(*it, key, k == "kv_rank" || k == "v_dim" ? 1 : 0, 65536)) *size = static_cast<int>(*v); }
        else if (weight != nullptr) { if (auto m = r.matrix(*it, key)) *weight = *m; }
        else if (vector != nullptr) { if (auto v = r.vector(*it, key)) *vector = *v; }
        else
            r.fail("key '" + key + "'", "unknown key: expected kv_rank, q_rank, nope_dim, rope_dim, v_dim, w_q_a, w_q_b, w_kv_a, w_kv_b, "
                                        "b_q_a, b_kv_a, q_a_norm, kv_a_norm");
    }
    if (!j.contains("kv_rank")) r.fail("key 'latent'", "has no \"kv_rank\": give the latent's width r_kv");
    if (!j.contains("v_dim")) r.fail("key 'latent'", "has no \"v_dim\": give each head's value width d_v");
    for (const char* q_key : {"w_q_a", "w_q_b", "b_q_a", "q_a_norm"})
        if (j.contains(q_key) && latent.q_rank == 0)
            r.fail(std::string("key 'latent.") + q_key + "'", "is read only with q_rank above 0 (the queries' low-rank path): it would be ignored");
}

void read_block(Reader& r, const json& b, BlockOptions& block) {
    if (!b.is_object()) {
        r.fail("key 'block'", "expected an object {\"residual\", \"layer_norm\", \"feed_forward\", \"d_ff\", …}");
        return;
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
        const std::string key = "block." + it.key();
        const std::string& k = it.key();
        if (k == "residual") { if (auto v = r.boolean(*it, key)) block.residual = *v; }
        else if (k == "layer_norm") { if (auto v = r.boolean(*it, key)) block.layer_norm = *v; }
        else if (k == "feed_forward") { if (auto v = r.boolean(*it, key)) block.feed_forward = *v; }
        else if (k == "d_ff") { if (auto v = r.integer(*it, key, 1, 65536)) block.d_ff = static_cast<int>(*v); }
        else if (k == "norm") { if (auto v = r.choice(*it, key, norm_placement_from_string, "\"post\", \"pre\"")) block.norm = *v; }
        else if (k == "activation") {
            if (auto v = r.choice(*it, key, activation_from_string, "\"relu\", \"gelu\" (tanh), \"gelu_erf\", \"silu\"")) block.activation = *v;
        }
        else if (k == "norm_kind") { if (auto v = r.choice(*it, key, norm_kind_from_string, "\"layer_norm\", \"rms_norm\"")) block.norm_kind = *v; }
        else if (k == "gamma_plus_one") { if (auto v = r.boolean(*it, key)) block.gamma_plus_one = *v; }
        else if (k == "gated") { if (auto v = r.boolean(*it, key)) block.gated = *v; }
        else if (k == "w_gate") { if (auto m = r.matrix(*it, key)) block.w_gate = *m; }
        else if (k == "parallel_residual") { if (auto v = r.boolean(*it, key)) block.parallel_residual = *v; }
        else if (k == "sandwich_norm") { if (auto v = r.boolean(*it, key)) block.sandwich_norm = *v; }
        else if (k == "attention_norm") { if (auto v = r.boolean(*it, key)) block.attention_norm = *v; }
        else if (k == "norm_post_attention") read_norm(r, *it, key, block.norm_post_attention);
        else if (k == "norm_post_feed_forward") read_norm(r, *it, key, block.norm_post_feed_forward);
        else if (k == "epsilon") { if (auto v = r.number(*it, "key '" + key + "'")) block.epsilon = *v; }
        else if (k == "w_1") { if (auto m = r.matrix(*it, key)) block.w_1 = *m; }
        else if (k == "w_2") { if (auto m = r.matrix(*it, key)) block.w_2 = *m; }
        else if (k == "b_1") { if (auto v = r.vector(*it, key)) block.b_1 = *v; }
        else if (k == "b_2") { if (auto v = r.vector(*it, key)) block.b_2 = *v; }
        else if (k == "norm_1") read_norm(r, *it, key, block.norm_1);
        else if (k == "norm_2") read_norm(r, *it, key, block.norm_2);
        else if (k == "moe") read_moe(r, *it, block.moe);
        else r.fail("key '" + key + "'", "unknown key");
    }
    for (const BlockConflict& c : block_conflicts(block)) r.fail("key 'block." + c.key + "'", c.why);
}

bool read_sequence(Reader& r, const json& j, const std::string& prefix, Sequence& seq) {
    const std::string tokens_key = prefix + "tokens", text_key = prefix + "text";
    if (j.contains(tokens_key) && j.contains(text_key)) {
        r.fail("key '" + text_key + "'", "give either '" + tokens_key + "' or '" + text_key + "', not both");
        return false;
    }
    if (j.contains(tokens_key)) {
        auto t = r.strings(j.at(tokens_key), tokens_key);
        if (!t) return false;
        seq.tokens = *t;
    } else if (j.contains(text_key)) {
        if (!j.at(text_key).is_string()) {
            r.fail("key '" + text_key + "'", "expected a string");
            return false;
        }
        seq.tokens = tokenize(j.at(text_key).get<std::string>());
    }
    if (j.contains(prefix + "embeddings")) {
        auto e = r.matrix(j.at(prefix + "embeddings"), prefix + "embeddings");
        if (!e) return false;
        seq.embeddings = *e;
    }
    if (j.contains(prefix + "padding")) {
        auto p = r.flags(j.at(prefix + "padding"), prefix + "padding");
        if (!p) return false;
        seq.padding = *p;
    }
    return true;
}

const std::set<std::string>& known_keys() {
    static const std::set<std::string> keys = {
        "name", "q", "k", "v", "query_labels", "key_labels", "tokens", "text", "embeddings", "padding",
        "source_tokens", "source_text", "source_embeddings", "source_padding", "attention", "d_model", "heads", "kv_heads", "head_dim",
        "seed", "w_q", "w_k", "w_v", "w_o", "positional_encoding", "rope", "mask", "window", "chunk", "custom_mask", "masked_fill",
        "scale", "score_scale", "softcap", "qk_norm", "qk_norm_plus_one", "qk_norm_whole", "q_norm", "k_norm", "sinks", "latent", "temperature", "output_gate", "delta_net", "differential", "softmax", "block", "format", "version", "b_q", "b_k", "b_v", "b_o"};
    return keys;
}

json number_to_json(float x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    return x;
}

json rope_to_json(const RopeOptions& rope) {
    json j = {{"pairing", to_string(rope.pairing)}, {"theta", number_to_json(rope.theta)}, {"rotary_dims", rope.rotary_dims}};
    if (rope.scaling != RopeScalingKind::None) {
        json scaling = {{"type", to_string(rope.scaling)}, {"factor", number_to_json(rope.factor)}};
        if (rope.scaling == RopeScalingKind::Llama3) {
            scaling["low_freq_factor"] = number_to_json(rope.low_freq_factor);
            scaling["high_freq_factor"] = number_to_json(rope.high_freq_factor);
            scaling["original_max_position_embeddings"] = rope.original_max_positions;
        }
        if (rope.scaling == RopeScalingKind::Yarn) {
            scaling["beta_fast"] = number_to_json(rope.beta_fast);
            scaling["beta_slow"] = number_to_json(rope.beta_slow);
            scaling["truncate"] = rope.truncate;
            scaling["original_max_position_embeddings"] = rope.original_max_positions;
        }
        if (rope.scaling == RopeScalingKind::LongRope) {
            scaling.erase("factor");  // LongRoPE's factors are its two lists
            auto list = [](const Vector& v) {
                json out = json::array();
                for (Eigen::Index c = 0; c < v.size(); ++c) out.push_back(number_to_json(v(c)));
                return out;
            };
            scaling["short_factor"] = list(rope.short_factor);
            scaling["long_factor"] = list(rope.long_factor);
            scaling["original_max_position_embeddings"] = rope.original_max_positions;
        }
        j["scaling"] = scaling;
    }
    if (rope.attention_factor != 1.0f) j["attention_factor"] = number_to_json(rope.attention_factor);
    return j;
}

}  // namespace

// [SECTION] Scenario from JSON

ScenarioLoad scenario_from_json(const json& j, const std::string& source_name) {
    Reader r{source_name, {}};
    ScenarioLoad result;
    if (!j.is_object()) {
        r.fail("top level", "expected a JSON object {...} describing a scenario, found " + Reader::type_name(j));
        result.errors = r.errors;
        return result;
    }
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!known_keys().count(it.key())) r.fail("key '" + it.key() + "'", "unknown key (see the scenario format in docs/file-formats.md)");

    Scenario s;
    if (j.contains("name") && j["name"].is_string()) s.name = j["name"].get<std::string>();
    const bool direct = j.contains("q") || j.contains("k") || j.contains("v");
    if (direct) {
        s.input = InputMode::Direct;
        for (const char* key : {"q", "k", "v"}) {
            if (!j.contains(key)) {
                r.fail("key '" + std::string(key) + "'", "missing: direct input needs all of q, k and v");
                continue;
            }
            if (auto m = r.matrix(j.at(key), key)) (key[0] == 'q' ? s.q : key[0] == 'k' ? s.k : s.v) = *m;
        }
        if (j.contains("query_labels"))
            if (auto l = r.strings(j["query_labels"], "query_labels")) s.direct_query_labels = *l;
        if (j.contains("key_labels"))
            if (auto l = r.strings(j["key_labels"], "key_labels")) s.direct_key_labels = *l;
        for (const char* key : {"tokens", "text", "embeddings", "w_q", "w_k", "w_v", "b_q", "b_k", "b_v", "source_tokens",
                                "source_text", "source_embeddings", "source_padding"})
            if (j.contains(key)) r.fail("key '" + std::string(key) + "'", "not used with direct q, k, v input; remove it or remove q, k, v");
        if (j.contains("padding"))  // one flag per row of k
            if (auto p = r.flags(j["padding"], "padding")) s.target.padding = *p;
        s.heads = 1;
    } else {
        s.input = InputMode::Embeddings;
        read_sequence(r, j, "", s.target);
        read_sequence(r, j, "source_", s.source);
        if (!j.contains("tokens") && !j.contains("text") && !j.contains("embeddings"))
            r.fail("top level", "expected either direct input (q, k, v) or a sequence ('tokens', 'text' or 'embeddings')");
        if (j.contains("d_model")) {
            if (auto d = r.integer(j["d_model"], "d_model", 1, 8192)) s.d_model = static_cast<int>(*d);
        } else if (s.target.embeddings.size() != 0) {
            s.d_model = static_cast<int>(s.target.embeddings.cols());
        }
        if (j.contains("seed"))
            if (auto v = r.integer(j["seed"], "seed", 0, std::numeric_limits<long long>::max())) s.seed = static_cast<std::uint64_t>(*v);
        if (j.contains("w_q")) if (auto m = r.weight(j["w_q"], "w_q")) s.w_q = *m;
        if (j.contains("w_k")) if (auto m = r.weight(j["w_k"], "w_k")) s.w_k = *m;
        if (j.contains("w_v")) if (auto m = r.weight(j["w_v"], "w_v")) s.w_v = *m;
        if (j.contains("b_q")) if (auto v = r.vector(j["b_q"], "b_q")) s.b_q = *v;
        if (j.contains("b_k")) if (auto v = r.vector(j["b_k"], "b_k")) s.b_k = *v;
        if (j.contains("b_v")) if (auto v = r.vector(j["b_v"], "b_v")) s.b_v = *v;
    }
    if (j.contains("b_o")) if (auto v = r.vector(j["b_o"], "b_o")) s.b_o = *v;
    if (j.contains("heads"))
        if (auto h = r.integer(j["heads"], "heads", 1, 1024)) s.heads = static_cast<int>(*h);
    // Grouped-query attention's K/V heads, and a head width independent of d_model.
    if (j.contains("kv_heads"))
        if (auto h = r.integer(j["kv_heads"], "kv_heads", 1, 1024)) s.kv_heads = static_cast<int>(*h);
    if (j.contains("head_dim"))
        if (auto h = r.integer(j["head_dim"], "head_dim", 1, 8192)) s.head_dim = static_cast<int>(*h);
    if (j.contains("w_o")) if (auto m = r.matrix(j["w_o"], "w_o")) s.w_o = *m;
    if (j.contains("attention"))
        if (auto a = r.choice(j["attention"], "attention", attention_from_string, "\"self\", \"cross\"")) s.attention = *a;
    if (j.contains("positional_encoding"))
        if (auto p = r.choice(j["positional_encoding"], "positional_encoding", positional_from_string,
                              "\"none\", \"sinusoidal\", \"learned\", \"rope\", \"alibi\""))
            s.positional = *p;
    if (j.contains("rope")) {  // RoPE's variant: read only where RoPE turns q and k
        if (s.positional != PositionalEncoding::Rotary)
            r.fail("key 'rope'", "RoPE's options are given, but \"positional_encoding\" is not \"rope\": they would be ignored");
        else
            read_rope(r, j["rope"], s.rope);
    }
    if (j.contains("mask"))
        if (auto m = r.choice(j["mask"], "mask", mask_from_string, "\"none\", \"causal\", \"padding\", \"window\", \"custom\", \"chunked\", \"band\""))
            s.mask = *m;
    if (j.contains("window"))
        if (auto w = r.integer(j["window"], "window", 0, 1 << 30)) s.window = static_cast<int>(*w);  // a band's half-width may be 0
    if (j.contains("custom_mask"))
        if (auto m = read_custom_mask(r, j["custom_mask"])) s.custom_mask = *m;
    // A mask that needs a size or a matrix says so: no silent default stands in for it.
    if (j.contains("chunk")) {
        if (auto c = r.integer(j["chunk"], "chunk", 1, 1 << 30)) s.chunk = static_cast<int>(*c);
        if (s.mask != MaskKind::Chunked) r.fail("key 'chunk'", "is read only with \"mask\": \"chunked\": it would be ignored");
    }
    if (s.mask == MaskKind::SlidingWindow && !j.contains("window"))
        r.fail("key 'mask'", "\"window\" needs the window size: add \"window\": W (W ≥ 1 keys)");
    if (s.mask == MaskKind::SlidingWindow && j.contains("window") && s.window < 1)
        r.fail("key 'window'", "is " + std::to_string(s.window) + ": a sliding window holds at least 1 key");
    if (s.mask == MaskKind::Band && !j.contains("window"))
        r.fail("key 'mask'", "\"band\" needs its half-width: add \"window\": W (W ≥ 0 keys on each side; 64 in ModernBERT)");
    if (s.mask == MaskKind::Chunked && !j.contains("chunk"))
        r.fail("key 'mask'", "\"chunked\" needs the chunk's size: add \"chunk\": C (C ≥ 1 keys; 8192 in Llama 4)");
    if (s.mask == MaskKind::Custom && !j.contains("custom_mask"))
        r.fail("key 'mask'", "\"custom\" needs the mask itself: add \"custom_mask\", one row of 1 (visible) and 0 (masked) per query");
    if (j.contains("masked_fill"))
        if (auto f = r.number(j["masked_fill"], "key 'masked_fill'")) s.masked_fill = *f;
    if (j.contains("scale"))
        if (auto b = r.boolean(j["scale"], "scale")) s.scale = *b;
    // A custom scale and the soft-cap: numbers > 0 (validate says what is wrong with others).
    if (j.contains("score_scale"))
        if (auto f = r.number(j["score_scale"], "key 'score_scale'")) s.score_scale = *f;
    if (j.contains("softcap"))
        if (auto f = r.number(j["softcap"], "key 'softcap'")) s.softcap = *f;
    // QK-norm: the switch, Gemma's (1 + w) form and the weights (validate checks their length).
    if (j.contains("qk_norm"))
        if (auto b = r.boolean(j["qk_norm"], "qk_norm")) s.qk_norm = *b;
    if (j.contains("qk_norm_plus_one"))
        if (auto b = r.boolean(j["qk_norm_plus_one"], "qk_norm_plus_one")) s.qk_norm_plus_one = *b;
    if (j.contains("qk_norm_whole"))
        if (auto b = r.boolean(j["qk_norm_whole"], "qk_norm_whole")) s.qk_norm_whole = *b;
    if (j.contains("q_norm")) if (auto v = r.vector(j["q_norm"], "q_norm")) s.q_norm = *v;
    if (j.contains("k_norm")) if (auto v = r.vector(j["k_norm"], "k_norm")) s.k_norm = *v;
    // Attention sinks: one logit per query head.
    if (j.contains("sinks")) if (auto v = r.vector(j["sinks"], "sinks")) s.sinks = *v;
    if (j.contains("softmax"))
        if (auto k = r.choice(j["softmax"], "softmax", softmax_from_string, "\"stable\", \"naive\"")) s.softmax = *k;
    if (j.contains("block")) read_block(r, j["block"], s.block);
    if (j.contains("latent")) read_latent(r, j["latent"], s.latent);
    if (j.contains("temperature")) read_temperature(r, j["temperature"], s.temperature);
    if (j.contains("output_gate")) read_output_gate(r, j["output_gate"], s.output_gate);
    if (j.contains("delta_net")) read_delta_net(r, j["delta_net"], s.delta_net);
    if (j.contains("differential")) read_differential(r, j["differential"], s.differential);
    if (j.contains("attention") && s.attention == AttentionKind::Cross && s.input == InputMode::Embeddings &&
        s.source.tokens.empty() && s.source.embeddings.size() == 0)
        r.fail("key 'attention'", "cross-attention needs a source sequence ('source_tokens', 'source_text' or 'source_embeddings')");
    // QK-norm's weights have one number per dimension of a head (over the whole projection, one
    // per head and dimension): refused here, by their key.
    const int d_k = s.input == InputMode::Direct ? (s.heads > 0 && s.q.cols() % s.heads == 0 ? static_cast<int>(s.q.cols()) / s.heads : 0)
                                                 : (s.heads > 0 && (s.head_dim > 0 || s.d_model % s.heads == 0) ? head_dim_of(s) : 0);
    for (const auto& [key, weight, heads] : {std::tuple{"q_norm", &s.q_norm, s.heads}, std::tuple{"k_norm", &s.k_norm, kv_heads_of(s)}}) {
        const long long expected = qk_norm_length(s.qk_norm_whole, d_k, heads);
        if (d_k > 0 && weight->size() != 0 && weight->size() != expected)
            r.fail("key '" + std::string(key) + "'",
                   "has " + std::to_string(weight->size()) + " numbers: QK-norm's weight needs one per dimension of a head, d_k = " +
                       std::to_string(d_k) +
                       (s.qk_norm_whole ? ", for each of the " + std::to_string(heads) + " heads it normalises at once (qk_norm_whole): " +
                                              std::to_string(expected)
                                        : std::string()));
    }

    if (s.sinks.size() != 0 && s.sinks.size() != s.heads)
        r.fail("key 'sinks'", "has " + std::to_string(s.sinks.size()) + " logits for " + std::to_string(s.heads) +
                                  " heads: give one sink logit per query head (or leave the key out)");
    else if (s.sinks.size() != 0 && !s.sinks.allFinite())
        r.fail("key 'sinks'", "every sink logit must be a finite number (a head without a sink: leave the key out)");

    result.errors = r.errors;
    if (result.errors.empty()) result.scenario = std::move(s);
    return result;
}

ScenarioLoad scenario_from_text(const std::string& text, const std::string& source_name) {
    ScenarioLoad result;
    std::optional<json> j = parse_json(text, source_name, result.errors, json_limits::kScenario);
    if (!j) return result;
    return scenario_from_json(*j, source_name);
}

ScenarioLoad load_scenario_file(const std::string& path) {
    return guard_memory<ScenarioLoad>(path, "scenario", [&] {
        ScenarioLoad result;
        std::optional<std::string> text = read_text_file(path, kMaxScenarioFileBytes, "scenario", result.errors);
        if (!text) return result;
        return scenario_from_text(*text, path);
    });
}

// [SECTION] Scenario and trace to JSON

json matrix_to_json(const Matrix& m) {
    json rows = json::array();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        json row = json::array();
        for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(number_to_json(m(i, c)));
        rows.push_back(std::move(row));
    }
    return rows;
}

namespace {

json mask_to_json(const MaskMatrix& m) {
    json rows = json::array();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        json row = json::array();
        for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(m(i, c) ? 1 : 0);
        rows.push_back(std::move(row));
    }
    return rows;
}

void put_matrix(json& j, const char* key, const Matrix& m) {
    if (m.size() != 0) j[key] = matrix_to_json(m);
}

json vector_to_json(const Vector& v) {
    json out = json::array();
    for (Eigen::Index c = 0; c < v.size(); ++c) out.push_back(number_to_json(v(c)));
    return out;
}

void put_vector(json& j, const char* key, const Vector& v) {
    if (v.size() != 0) j[key] = vector_to_json(v);
}

json norm_to_json(const LayerNormParams& p) {
    json j = json::object();
    put_vector(j, "gamma", p.gamma);
    put_vector(j, "beta", p.beta);
    return j;
}

bool block_is_default(const BlockOptions& b) {
    return !b.residual && !b.layer_norm && !b.feed_forward && b.d_ff == 0 && b.norm == NormPlacement::Post &&
           b.activation == Activation::ReLU && b.epsilon == 1e-5f && b.w_1.size() == 0 && b.w_2.size() == 0 &&
           b.b_1.size() == 0 && b.b_2.size() == 0 && b.norm_1.gamma.size() == 0 && b.norm_1.beta.size() == 0 &&
           b.norm_2.gamma.size() == 0 && b.norm_2.beta.size() == 0 && b.norm_kind == NormKind::LayerNorm &&
           !b.gamma_plus_one && !b.gated && b.w_gate.size() == 0 && !b.parallel_residual && !b.sandwich_norm &&
           b.norm_post_attention.gamma.size() == 0 && b.norm_post_attention.beta.size() == 0 &&
           b.norm_post_feed_forward.gamma.size() == 0 && b.norm_post_feed_forward.beta.size() == 0 && !b.moe.routed() &&
           b.attention_norm;
}

json temperature_to_json(const QueryTemperature& t) {
    return {{"floor_scale", number_to_json(t.floor_scale)}, {"attn_scale", number_to_json(t.attn_scale)}};
}

// The mixture's switches; with `weights`, its router and experts too (those given).
json moe_to_json(const MixtureOfExperts& m, bool weights) {
    json j = {{"experts", m.experts}, {"top_k", m.top_k}, {"normalize_top_k", m.normalize_top_k}};
    if (m.router_kind != RouterKind::SoftmaxThenTopK) j["router_kind"] = to_string(m.router_kind);
    if (m.router_kind == RouterKind::SigmoidGrouped) {
        j["groups"] = m.groups;
        j["top_groups"] = m.top_groups;
        j["routed_scale"] = number_to_json(m.routed_scale);
    }
    if (m.swiglu_limit > 0.0f) {
        j["swiglu_limit"] = number_to_json(m.swiglu_limit);
        j["swiglu_alpha"] = number_to_json(m.swiglu_alpha);
    }
    if (m.weight_input) j["weight_input"] = true;
    if (!m.ablated.empty()) j["ablated"] = m.ablated;
    if (m.shared_d_ff > 0) {
        j["shared_d_ff"] = m.shared_d_ff;
        j["shared_gated"] = m.shared_gated;
    }
    if (!weights) return j;
    put_matrix(j, "router", m.router);
    if (m.router_bias.size() != 0) j["router_bias"] = vector_to_json(m.router_bias);
    if (m.choice_bias.size() != 0) j["choice_bias"] = vector_to_json(m.choice_bias);
    auto expert_json = [](const Expert& e) {
        json w = json::object();
        put_matrix(w, "w_gate", e.w_gate);
        put_matrix(w, "w_1", e.w_1);
        put_matrix(w, "w_2", e.w_2);
        for (const auto& [name, bias] : {std::pair{"b_gate", &e.b_gate}, std::pair{"b_1", &e.b_1}, std::pair{"b_2", &e.b_2}})
            if (bias->size() != 0) w[name] = vector_to_json(*bias);
        return w;
    };
    if (!m.weights.empty()) {
        json experts = json::array();
        for (const Expert& e : m.weights) experts.push_back(expert_json(e));
        j["expert_weights"] = std::move(experts);
    }
    if (m.shared_d_ff > 0) {
        const json shared = expert_json(m.shared);
        if (!shared.empty()) j["shared_weights"] = shared;
        if (m.shared_gated) put_matrix(j, "shared_gate", m.shared_gate);
    }
    return j;
}

// The block's switches, as a scenario file and a trace's settings write them. A scenario file
// writes the modern ones only when on (`every` false), so a file of the 2017 or GPT-2 block
// reads as it always did; a trace's settings write them all.
json block_switches_to_json(const BlockOptions& b, bool every) {
    json j = {{"residual", b.residual}, {"layer_norm", b.layer_norm}, {"feed_forward", b.feed_forward},
              {"norm", to_string(b.norm)},  {"activation", to_string(b.activation)}, {"epsilon", number_to_json(b.epsilon)}};
    if (every || b.norm_kind != NormKind::LayerNorm) j["norm_kind"] = to_string(b.norm_kind);
    if (every || b.gamma_plus_one) j["gamma_plus_one"] = b.gamma_plus_one;
    if (every || b.gated) j["gated"] = b.gated;
    if (every || b.parallel_residual) j["parallel_residual"] = b.parallel_residual;
    if (every || b.sandwich_norm) j["sandwich_norm"] = b.sandwich_norm;
    if (every || !b.attention_norm) j["attention_norm"] = b.attention_norm;
    if (b.moe.routed()) j["moe"] = moe_to_json(b.moe, false);
    return j;
}

// Latent attention's sizes and, with `weights`, the weights given.
json latent_to_json(const LatentAttention& l, bool weights) {
    json j = {{"kv_rank", l.kv_rank}, {"q_rank", l.q_rank}, {"nope_dim", l.nope_dim}, {"rope_dim", l.rope_dim}, {"v_dim", l.v_dim}};
    if (!weights) return j;
    put_matrix(j, "w_q_a", l.w_q_a);
    put_matrix(j, "w_q_b", l.w_q_b);
    put_matrix(j, "w_kv_a", l.w_kv_a);
    put_matrix(j, "w_kv_b", l.w_kv_b);
    put_vector(j, "b_q_a", l.b_q_a);
    put_vector(j, "b_kv_a", l.b_kv_a);
    put_vector(j, "q_a_norm", l.q_a_norm);
    put_vector(j, "kv_a_norm", l.kv_a_norm);
    return j;
}

json block_to_json(const BlockOptions& b) {
    json j = block_switches_to_json(b, false);
    if (b.d_ff != 0) j["d_ff"] = b.d_ff;
    put_matrix(j, "w_1", b.w_1);
    put_vector(j, "b_1", b.b_1);
    put_matrix(j, "w_2", b.w_2);
    put_vector(j, "b_2", b.b_2);
    if (b.norm_1.gamma.size() != 0 || b.norm_1.beta.size() != 0) j["norm_1"] = norm_to_json(b.norm_1);
    if (b.norm_2.gamma.size() != 0 || b.norm_2.beta.size() != 0) j["norm_2"] = norm_to_json(b.norm_2);
    put_matrix(j, "w_gate", b.w_gate);
    if (b.norm_post_attention.gamma.size() != 0 || b.norm_post_attention.beta.size() != 0)
        j["norm_post_attention"] = norm_to_json(b.norm_post_attention);
    if (b.norm_post_feed_forward.gamma.size() != 0 || b.norm_post_feed_forward.beta.size() != 0)
        j["norm_post_feed_forward"] = norm_to_json(b.norm_post_feed_forward);
    if (b.moe.routed()) j["moe"] = moe_to_json(b.moe, true);
    return j;
}

}  // namespace

json scenario_to_json(const Scenario& s) {
    json j;
    j["format"] = "attnlab-scenario";
    j["version"] = 1;
    if (!s.name.empty()) j["name"] = s.name;
    if (s.input == InputMode::Direct) {
        j["q"] = matrix_to_json(s.q);
        j["k"] = matrix_to_json(s.k);
        j["v"] = matrix_to_json(s.v);
        if (!s.direct_query_labels.empty()) j["query_labels"] = s.direct_query_labels;
        if (!s.direct_key_labels.empty()) j["key_labels"] = s.direct_key_labels;
    } else {
        j["tokens"] = s.target.tokens;
        put_matrix(j, "embeddings", s.target.embeddings);
        if (!s.target.padding.empty()) j["padding"] = s.target.padding;
        if (s.attention == AttentionKind::Cross || !s.source.tokens.empty()) {
            j["source_tokens"] = s.source.tokens;
            put_matrix(j, "source_embeddings", s.source.embeddings);
            if (!s.source.padding.empty()) j["source_padding"] = s.source.padding;
        }
        j["d_model"] = s.d_model;
        j["seed"] = s.seed;
        put_matrix(j, "w_q", s.w_q);
        put_matrix(j, "w_k", s.w_k);
        put_matrix(j, "w_v", s.w_v);
        put_vector(j, "b_q", s.b_q);
        put_vector(j, "b_k", s.b_k);
        put_vector(j, "b_v", s.b_v);
    }
    put_matrix(j, "w_o", s.w_o);
    put_vector(j, "b_o", s.b_o);
    if (s.input == InputMode::Direct && !s.target.padding.empty()) j["padding"] = s.target.padding;
    j["heads"] = s.heads;
    if (s.kv_heads != 0) j["kv_heads"] = s.kv_heads;
    if (s.head_dim != 0) j["head_dim"] = s.head_dim;
    j["attention"] = to_string(s.attention);
    j["positional_encoding"] = to_string(s.positional);
    if (s.positional == PositionalEncoding::Rotary && !default_rope(s.rope)) j["rope"] = rope_to_json(s.rope);
    j["mask"] = to_string(s.mask);
    j["window"] = s.window;
    if (s.mask == MaskKind::Chunked) j["chunk"] = s.chunk;
    if (s.custom_mask.size() != 0) j["custom_mask"] = mask_to_json(s.custom_mask);
    j["masked_fill"] = number_to_json(s.masked_fill);
    j["scale"] = s.scale;
    if (s.score_scale != 0.0f) j["score_scale"] = number_to_json(s.score_scale);
    if (s.softcap != 0.0f) j["softcap"] = number_to_json(s.softcap);
    if (s.qk_norm) j["qk_norm"] = true;
    if (s.qk_norm_plus_one) j["qk_norm_plus_one"] = true;
    if (s.qk_norm_whole) j["qk_norm_whole"] = true;
    put_vector(j, "q_norm", s.q_norm);
    put_vector(j, "k_norm", s.k_norm);
    put_vector(j, "sinks", s.sinks);
    if (s.latent.on()) j["latent"] = latent_to_json(s.latent, true);
    if (s.temperature.on()) j["temperature"] = temperature_to_json(s.temperature);
    if (s.output_gate.on) {
        json gate = json::object();
        put_matrix(gate, "w_g", s.output_gate.w_g);
        if (s.output_gate.b_g.size() != 0) gate["b_g"] = vector_to_json(s.output_gate.b_g);
        j["output_gate"] = gate.empty() ? json(true) : gate;
    }
    if (s.delta_net.on) {
        const GatedDeltaNet& n = s.delta_net;
        json net = json::object();
        if (n.key_heads != 0) net["key_heads"] = n.key_heads;
        if (n.key_dim != 0) net["key_dim"] = n.key_dim;
        net["conv_kernel"] = n.conv_kernel;
        put_matrix(net, "w_z", n.w_z);
        put_matrix(net, "w_b", n.w_b);
        put_matrix(net, "w_a", n.w_a);
        put_matrix(net, "conv", n.conv);
        put_vector(net, "a_log", n.a_log);
        put_vector(net, "dt_bias", n.dt_bias);
        put_vector(net, "norm", n.norm);
        j["delta_net"] = net;
    }
    if (s.differential.on) {
        const DifferentialAttention& d = s.differential;
        json diff = {{"lambda_init", d.lambda_init}};
        put_vector(diff, "lambda_q1", d.lambda_q1);
        put_vector(diff, "lambda_k1", d.lambda_k1);
        put_vector(diff, "lambda_q2", d.lambda_q2);
        put_vector(diff, "lambda_k2", d.lambda_k2);
        j["differential"] = diff;
    }
    j["softmax"] = to_string(s.softmax);
    if (!block_is_default(s.block)) j["block"] = block_to_json(s.block);
    return j;
}

json trace_to_json(const Trace& t, bool weights) {
    json j;
    j["format"] = "attnlab-trace";
    j["version"] = 2;
    j["ok"] = t.ok;
    j["errors"] = t.errors;
    j["warnings"] = t.warnings;
    if (!t.ok) return j;
    j["backend"] = t.backend;
    j["detail"] = t.detail == Detail::Full ? "full" : "output_only";
    const TraceSettings& st = t.settings;  // what produced these numbers
    j["settings"] = {{"scenario", st.scenario_name},
                     {"preset", st.preset},
                     {"input", to_string(st.input)},
                     {"attention", to_string(st.attention)},
                     {"positional_encoding", to_string(st.positional)},
                     {"rope", rope_to_json(st.rope)},
                     {"mask", to_string(st.mask)},
                     {"window", st.window},
                     {"masked_fill", number_to_json(st.masked_fill)},
                     {"scale", st.scale},
                     {"score_scale", number_to_json(st.score_scale)},
                     {"softcap", number_to_json(st.softcap)},
                     {"qk_norm", st.qk_norm},
                     {"qk_norm_plus_one", st.qk_norm_plus_one},
                     {"qk_norm_whole", st.qk_norm_whole},
                     {"sinks", st.sinks},
                     {"softmax", to_string(st.softmax)},
                     {"heads", st.heads},
                     {"kv_heads", st.kv_heads},
                     {"head_dim", st.head_dim},
                     {"seed", st.seed},
                     {"block", block_switches_to_json(st.block, true)},
                     {"backend", t.backend},
                     {"detail", t.detail == Detail::Full ? "full" : "output_only"}};
    if (st.latent.on()) j["settings"]["latent"] = latent_to_json(st.latent, false);
    if (st.mask == MaskKind::Chunked) j["settings"]["chunk"] = st.chunk;
    if (st.temperature.on()) j["settings"]["temperature"] = temperature_to_json(st.temperature);
    if (st.output_gate) j["settings"]["output_gate"] = true;
    if (st.delta_net) j["settings"]["delta_net"] = true;
    if (st.differential) {  // each head's `weights` is one softmax map; pair p is heads p + 1 and p + 1 + P
        const DifferentialTrace& d = t.differential;
        j["settings"]["differential"] = true;
        j["differential"] = {{"pairs", d.pairs}, {"lambda_init", d.lambda_init}, {"lambda_1", d.lambda_1}, {"lambda_2", d.lambda_2},
                             {"lambda", d.lambda}};
    }
    j["query_tokens"] = t.query_tokens;
    j["key_tokens"] = t.key_tokens;
    j["n_queries"] = t.n_queries;
    j["n_keys"] = t.n_keys;
    j["d_model"] = t.d_model;
    j["d_k"] = t.d_k;
    j["d_v"] = t.d_v;
    j["scale"] = t.scale;
    if (t.visible.size() != 0) j["visible"] = mask_to_json(t.visible);
    // Every matrix the trace holds, as the registry names it: a whole-trace matrix under its
    // key, a block's under "block" (without "block."), a head's in its entry of "heads". A
    // vector of the scenario (a bias, γ, β) is written as one list.
    json heads = json::array(), block = json::object(), latent = json::object(), linear = json::object();
    for (const HeadTrace& h : t.head) {
        json jh;
        if (h.position_bias.size() != 0) jh["alibi_slope"] = h.alibi_slope;
        if (h.sink != -std::numeric_limits<float>::infinity()) jh["sink"] = h.sink;
        jh["fully_masked_rows"] = h.fully_masked_rows;
        jh["softmax_overflow"] = h.softmax_overflow;
        heads.push_back(std::move(jh));
    }
    for (const MatrixEntry& e : matrix_registry()) {
        if (!weights && is_weight(e)) continue;
        for (int h = e.per_head ? 0 : -1; h < (e.per_head ? static_cast<int>(t.head.size()) : 0); ++h) {
            const Matrix* m = matrix_of(t, MatrixRef{&e, h});
            if (m == nullptr) continue;
            json value = is_vector(e) ? vector_to_json(m->row(0)) : matrix_to_json(*m);
            if (e.per_head) {
                const PooledWeights& p = t.head[static_cast<size_t>(h)].pooled_weights;
                if (m == &p.values)  // a region at screen resolution: where it lies
                    value = {{"values", std::move(value)}, {"rows", {p.row_begin, p.row_end}}, {"cols", {p.col_begin, p.col_end}}};
                heads[static_cast<size_t>(h)][e.key] = std::move(value);
            } else if (const std::string key = e.key; key.rfind("block.", 0) == 0) {
                block[key.substr(6)] = std::move(value);
            } else if (key.rfind("latent.", 0) == 0) {
                latent[key.substr(7)] = std::move(value);
            } else if (key.rfind("linear.", 0) == 0) {
                linear[key.substr(7)] = std::move(value);
            } else {
                j[key] = std::move(value);
            }
        }
    }
    j["heads"] = std::move(heads);
    if (t.has_block) j["block"] = std::move(block);
    if (!latent.empty()) j["latent"] = std::move(latent);
    if (!linear.empty()) j["linear"] = std::move(linear);
    return j;
}

}  // namespace attn
