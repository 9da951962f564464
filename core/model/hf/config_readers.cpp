// Each family's config.json reader (config_reader.hpp), each from transformers'
// configuration_<family>.py (its keys and defaults) and modeling_<family>.py (what they do).
//
// Index
//   [SECTION] Reading values
//   [SECTION] The families
#include "model/hf/config_reader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "io/json_read.hpp"
#include "io/messages.hpp"
#include "attention/positional.hpp"

namespace attn::hf {

using nlohmann::json;

// [SECTION] Reading values

std::string shown(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 80); }

std::string lost_in_float32(double value) {
    const double magnitude = std::fabs(value);
    if (value != 0.0 && magnitude < static_cast<double>(std::numeric_limits<float>::min()))
        return "is too small for float32, in which the model computes (it would round to " +
               std::string(static_cast<float>(value) == 0.0f ? "0" : "a subnormal") + ")";
    if (magnitude > static_cast<double>(std::numeric_limits<float>::max()))
        return "is too large for float32, in which the model computes (it would round to infinity)";
    return {};
}

namespace {

std::optional<Activation> activation_named(const std::string& name) {
    // transformers' ACT2FN names
    if (name == "gelu") return Activation::gelu_exact;
    if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::gelu_tanh;
    if (name == "silu" || name == "swish") return Activation::silu;
    if (name == "relu") return Activation::relu;
    return std::nullopt;
}

Activation read_activation(ConfigReader& r, const std::string& key, const std::string& fallback) {
    const std::string name = r.text(key).value_or(fallback);
    if (const auto a = activation_named(name)) return *a;
    r.fault(key, "\"" + printable(name, 60) +
                     "\" is not supported; expected \"gelu\", \"gelu_new\", \"gelu_pytorch_tanh\", \"silu\", \"swish\" or \"relu\"");
    return Activation::silu;
}

}  // namespace

// A token id, a list of them (eos), or null.
void read_token_ids(const json& j, ModelSpec& spec, Faults& faults) {
    auto one = [&](const char* key) -> std::optional<int> {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return std::nullopt;
        if (it->is_number_integer() && it->get<std::int64_t>() >= 0 && it->get<std::int64_t>() < (1 << 30))
            return static_cast<int>(it->get<std::int64_t>());
        faults.add(std::string("key '") + key + "': expected a token id, found " + shown(*it));
        return std::nullopt;
    };
    spec.bos_token_id = one("bos_token_id");
    spec.pad_token_id = one("pad_token_id");
    spec.mask_token_id = one("mask_token_id");
    if (const auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
        const json list = it->is_array() ? *it : json::array({*it});
        for (const json& id : list) {
            if (id.is_number_integer() && id.get<std::int64_t>() >= 0 && id.get<std::int64_t>() < (1 << 30))
                spec.eos_token_ids.push_back(static_cast<int>(id.get<std::int64_t>()));
            else faults.add("key 'eos_token_id': expected a token id or a list of them, found " + shown(*it));
        }
    }
}

namespace {

// rope_scaling (transformers 4.x) or rope_parameters (5.x, which also holds rope_theta and
// partial_rotary_factor). Types other than default, linear and llama3 (and longrope, for the
// families that read it) change the frequencies in ways not computed here (dynamic, yarn:
// refused). `theta` and `partial` are updated when rope_parameters holds them. LongRoPE's
// factor, attention_factor and original_max_position_embeddings are left 0 when absent: the
// family's reader completes them from its config (read_phi3).
RopeScaling read_rope_object(ConfigReader& r, const std::string& key, const json& object, double& theta, double* partial,
                             bool longrope, bool yarn, bool mrope) {
    RopeScaling scaling;
    if (!object.is_object()) {
        r.fault(key, "expected an object or null, found " + shown(object));
        return scaling;
    }
    std::string type = "default";
    // rope_type, else the older "type"; a value that is not a string is no type at all, never the default
    for (const char* name : {"rope_type", "type"}) {
        const auto it = object.find(name);
        if (it == object.end() || it->is_null()) continue;
        if (!it->is_string()) {
            r.fault(key, std::string("'") + name + "': expected a string such as \"linear\" or \"llama3\", found " + shown(*it));
            return scaling;
        }
        type = it->get<std::string>();
        break;
    }
    auto value = [&](const char* name, double fallback, double low, double high) {
        const auto it = object.find(name);
        if (it == object.end() || it->is_null()) return fallback;
        if (!it->is_number() || !(it->get<double>() > low) || !(it->get<double>() < high)) {
            r.fault(key, std::string("'") + name + "' expected a number between " + shown(json(low)) + " and " + shown(json(high)) +
                             ", found " + shown(*it));
            return fallback;
        }
        if (const std::string why = lost_in_float32(it->get<double>()); !why.empty()) {
            r.fault(key, std::string("'") + name + "': " + shown(*it) + " " + why);
            return fallback;
        }
        return it->get<double>();
    };
    std::set<std::string> allowed = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};
    if (object.contains("rope_theta")) theta = value("rope_theta", theta, 0, 1e12);
    if (mrope) {
        // Qwen3.5's text rotary (Qwen3VLTextRotaryEmbedding): mrope_section [t, h, w] pairs, interleaved or
        // in blocks; a text's three positions are one, so either way the pairs turn as plain RoPE
        allowed.insert("mrope_section");
        allowed.insert("mrope_interleaved");
        if (const auto it = object.find("mrope_section"); it != object.end() && !it->is_null()) {
            bool valid = it->is_array() && it->size() == 3;
            int pairs = 0;
            if (valid)
                for (const json& e : *it) {
                    valid = valid && e.is_number_integer() && e.get<std::int64_t>() >= 0 && e.get<std::int64_t>() <= 4096;
                    if (valid) pairs += static_cast<int>(e.get<std::int64_t>());
                }
            if (valid) scaling.mrope_pairs = pairs;
            else r.fault(key, "'mrope_section': expected three counts of rotary pairs (time, height, width), found " + shown(*it));
        }
        if (const auto it = object.find("mrope_interleaved"); it != object.end() && !it->is_null() && !it->is_boolean())
            r.fault(key, "'mrope_interleaved': expected true or false, found " + shown(*it));
    }
    if (object.contains("partial_rotary_factor")) {
        if (partial) *partial = value("partial_rotary_factor", *partial, 0, 1.0000001);
        else r.fault(key, "'partial_rotary_factor' is not supported by this family (every dim rotates)");
    }
    if (type == "default") {
    } else if (type == "linear") {
        scaling.kind = RopeScalingKind::linear;
        scaling.factor = value("factor", 1.0, 0, 1e6);
        allowed.insert("factor");
        if (!object.contains("factor")) r.fault(key, "type \"linear\" needs a 'factor'");
    } else if (type == "llama3") {
        scaling.kind = RopeScalingKind::llama3;
        for (const char* needed : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
            allowed.insert(needed);
            if (!object.contains(needed)) r.fault(key, std::string("type \"llama3\" needs '") + needed + "'");
        }
        scaling.factor = value("factor", 1.0, 0, 1e6);
        scaling.low_freq_factor = value("low_freq_factor", 1.0, 0, 1e6);
        scaling.high_freq_factor = value("high_freq_factor", 4.0, 0, 1e6);
        scaling.original_max_position_embeddings = static_cast<int>(value("original_max_position_embeddings", 8192, 0, 1e9));
        if (scaling.high_freq_factor <= scaling.low_freq_factor)
            r.fault(key, "'high_freq_factor' must exceed 'low_freq_factor' (the smoothing divides by their difference)");
    } else if (longrope && (type == "longrope" || type == "su" || type == "yarn")) {
        // Phi3Config reads the older "su" and "yarn" as "longrope"
        scaling.kind = RopeScalingKind::longrope;
        for (const char* list : {"short_factor", "long_factor"}) {
            allowed.insert(list);
            const auto it = object.find(list);
            std::vector<double>& target = std::string(list) == "short_factor" ? scaling.short_factor : scaling.long_factor;
            if (it == object.end() || it->is_null()) {
                r.fault(key, "type \"longrope\" needs '" + std::string(list) + "'");
                continue;
            }
            if (!it->is_array() || it->empty() || it->size() > 4096) {
                r.fault(key, "'" + std::string(list) + "': expected a list of numbers, found " + shown(*it));
                continue;
            }
            for (const json& e : *it) {
                if (!e.is_number() || !(e.get<double>() > 0) || !std::isfinite(e.get<double>()) || !lost_in_float32(e.get<double>()).empty()) {
                    r.fault(key, "'" + std::string(list) + "': " + shown(e) + " is not a factor above 0 that float32 holds");
                    target.clear();
                    break;
                }
                target.push_back(e.get<double>());
            }
        }
        for (const char* optional : {"factor", "attention_factor", "original_max_position_embeddings"}) allowed.insert(optional);
        scaling.factor = value("factor", 0, 0, 1e6);
        scaling.attention_factor = value("attention_factor", 0, 0, 1e6);
        scaling.original_max_position_embeddings = static_cast<int>(value("original_max_position_embeddings", 0, 0, 1e9));
    } else if (yarn && type == "yarn") {
        // _compute_yarn_parameters: factor (else max_position_embeddings / original), the attention
        // factor (else 0.1·ln(factor) + 1, or DeepSeek's ratio with mscale and mscale_all_dim),
        // beta_fast and beta_slow (0 or null: 32 and 1), truncate (default true)
        scaling.kind = RopeScalingKind::yarn;
        for (const char* name : {"factor", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
                                 "original_max_position_embeddings", "truncate"})
            allowed.insert(name);
        if (!object.contains("original_max_position_embeddings"))
            r.fault(key, "type \"yarn\" needs 'original_max_position_embeddings' (the length the model was trained on)");
        const double original = value("original_max_position_embeddings", 4096, 0, 1e9);
        scaling.original_max_position_embeddings = static_cast<int>(original);
        double factor = value("factor", 0, 0, 1e6);
        if (factor == 0) {
            const json* max_positions = r.find("max_position_embeddings");
            if (max_positions == nullptr || !max_positions->is_number() || !(max_positions->get<double>() > 0))
                r.fault(key, "type \"yarn\" without 'factor' takes max_position_embeddings / original_max_position_embeddings, "
                             "and max_position_embeddings is missing or not a number above 0");
            else factor = max_positions->get<double>() / original;
        } else if (const json* max_positions = r.find("max_position_embeddings");
                   max_positions != nullptr && max_positions->is_number() && max_positions->get<double>() > 0 && original > 0) {
            // transformers 5 takes the factor as max_position_embeddings / original_max_position_embeddings
            // whenever the latter is given, 4.x the config's 'factor' (and DeepseekV3Attention's scale
            // always reads 'factor'): the two must agree, or the versions compute different models
            const double ratio = max_positions->get<double>() / original;
            if (std::abs(ratio - factor) > 1e-9 * factor)
                r.fault(key, "'factor' " + shown(json(factor)) + " differs from max_position_embeddings / original_max_position_embeddings = " +
                                 shown(json(ratio)) + ": transformers' versions take one or the other");
        }
        scaling.factor = factor > 0 ? factor : 1.0;
        const double mscale = value("mscale", 0, -1e6, 1e6), mscale_all_dim = value("mscale_all_dim", 0, -1e6, 1e6);
        scaling.mscale_all_dim = mscale_all_dim;
        scaling.attention_factor = value("attention_factor", 0, 0, 1e6);
        if (scaling.attention_factor == 0)
            scaling.attention_factor = mscale != 0 && mscale_all_dim != 0
                                           ? attn::yarn_mscale(scaling.factor, mscale) / attn::yarn_mscale(scaling.factor, mscale_all_dim)
                                           : attn::yarn_mscale(scaling.factor);
        // `config.get("beta_fast") or 32`: 0 and null take the default as well
        scaling.beta_fast = value("beta_fast", 0, -1e6, 1e6);
        scaling.beta_slow = value("beta_slow", 0, -1e6, 1e6);
        if (scaling.beta_fast == 0) scaling.beta_fast = 32;
        if (scaling.beta_slow == 0) scaling.beta_slow = 1;
        if (!(scaling.beta_fast > 0) || !(scaling.beta_slow > 0))
            r.fault(key, "'beta_fast' and 'beta_slow' must be above 0 (numbers of turns; 32 and 1 in most models)");
        if (const auto it = object.find("truncate"); it != object.end() && !it->is_null()) {
            if (it->is_boolean()) scaling.truncate = it->get<bool>();
            else r.fault(key, "'truncate': expected true or false, found " + shown(*it));
        }
    } else {
        std::string types = "\"default\", \"linear\", \"llama3\"";
        if (longrope) types += ", \"longrope\"";
        if (yarn) types += ", \"yarn\"";
        r.fault(key, "rope type \"" + printable(type, 40) + "\" is not supported; expected " + types + " (or null)");
        return scaling;
    }
    // "attention_factor", "beta_fast", … belong to types not computed here; anything else is unknown.
    for (const auto& [name, v] : object.items())
        if (!allowed.count(name) && !v.is_null())
            r.fault(key, "'" + printable(name, 40) + "': " + shown(v) + " is not read with rope type \"" + type + "\"");
    return scaling;
}

// The global RoPE settings of a Llama-style config: rope_theta, rope_scaling / rope_parameters.
RopeScaling read_rope(ConfigReader& r, double& theta, double* partial, bool longrope = false, bool yarn = false, bool mrope = false) {
    RopeScaling scaling;
    const json* scaling_object = r.find("rope_scaling");
    const json* parameters = r.find("rope_parameters");
    if (scaling_object && parameters) r.fault("keys 'rope_scaling' and 'rope_parameters' both given; transformers reads one");
    if (scaling_object) scaling = read_rope_object(r, "rope_scaling", *scaling_object, theta, partial, longrope, yarn, mrope);
    if (parameters) scaling = read_rope_object(r, "rope_parameters", *parameters, theta, partial, longrope, yarn, mrope);
    return scaling;
}

// layer_types: "full_attention" or the family's other kind (`other`: "sliding_attention", Llama 4's
// "chunked_attention") per layer, true for the other; nullopt when absent.
std::optional<std::vector<bool>> read_layer_types(ConfigReader& r, int n_layers, const char* other = "sliding_attention") {
    const json* v = r.find("layer_types");
    if (!v) return std::nullopt;
    if (!v->is_array() || static_cast<int>(v->size()) != n_layers) {
        r.fault("layer_types", "expected a list of " + std::to_string(n_layers) + " layer types (num_hidden_layers), found " + shown(*v));
        return std::nullopt;
    }
    std::vector<bool> kinds;
    for (const json& t : *v) {
        if (t == "full_attention") kinds.push_back(false);
        else if (t == other) kinds.push_back(true);
        else {
            r.fault("layer_types", shown(t) + " is not supported; expected \"full_attention\" or \"" + other + "\"");
            return std::nullopt;
        }
    }
    return kinds;
}

// The layers `sliding` marks slide by `window`; null (sliding_window: null) cannot slide any.
void slide_layers(ConfigReader& r, ModelSpec& spec, const std::vector<bool>& sliding, std::optional<int> window) {
    for (std::size_t l = 0; l < sliding.size() && l < spec.layers.size(); ++l) {
        if (!sliding[l]) continue;
        if (!window) r.fault("layer_types", "layer " + std::to_string(l) + " is \"sliding_attention\" but sliding_window is null");
        else spec.layers[l].window = *window;
    }
}

// A list of layer numbers (Qwen's mlp_only_layers, Llama 4's moe_layers) as one flag per layer;
// nullopt when absent or null. An entry outside [0, n) is refused: it would be ignored.
std::optional<std::vector<bool>> read_layer_list(ConfigReader& r, const char* key, int n) {
    const json* list = r.find(key);
    if (list == nullptr) return std::nullopt;
    std::vector<bool> listed(static_cast<std::size_t>(std::max(n, 0)), false);
    bool ok = list->is_array();
    for (std::size_t i = 0; ok && i < list->size(); ++i) {
        const json& v = (*list)[i];
        ok = v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() < n;
        if (ok) listed[static_cast<std::size_t>(v.get<std::int64_t>())] = true;
    }
    if (!ok)
        r.fault(key, "expected a list of layer numbers from 0 to " + std::to_string(n - 1) + " (an entry outside them would be ignored), found " +
                         shown(*list));
    return listed;
}

// The sizes of a Llama-derived config (Llama, Qwen, Gemma).
// intermediate_size is read unless no layer has a dense MLP (Qwen3.5-MoE: `dense_mlp` false).
// The sizes a family's config class gives when config.json leaves them out (Gemma3TextConfig's);
// none: the key is required.
struct SizeDefaults {
    std::optional<int> vocab, hidden, intermediate, layers, heads, kv_heads;
};

void read_decoder_sizes(ConfigReader& r, ModelSpec& spec, std::optional<int> default_head_dim, bool dense_mlp = true,
                        const SizeDefaults& defaults = {}) {
    spec.vocab_size = r.integer("vocab_size", 1, kMaxVocab, defaults.vocab);
    spec.d_model = r.integer("hidden_size", 1, kMaxWidth, defaults.hidden);
    if (dense_mlp) spec.d_ff = r.integer("intermediate_size", 1, 1 << 20, defaults.intermediate);
    spec.n_layers = r.integer("num_hidden_layers", 1, kMaxLayers, defaults.layers);
    spec.n_heads = r.integer("num_attention_heads", 1, kMaxHeads, defaults.heads);
    spec.n_kv_heads = r.integer("num_key_value_heads", 1, kMaxHeads, defaults.kv_heads.value_or(spec.n_heads));
    if (default_head_dim) {
        spec.head_dim = r.integer("head_dim", 1, 4096, *default_head_dim);
    } else {
        // head_dim = hidden_size / num_attention_heads (and the config's head_dim when it has one: Llama 3.2, Qwen 3)
        const int derived = spec.n_heads > 0 ? spec.d_model / spec.n_heads : 0;
        spec.head_dim = r.integer("head_dim", 1, 4096, derived);
        if (!r.has("head_dim") && spec.n_heads > 0 && spec.d_model % spec.n_heads != 0)
            r.fault("hidden_size " + std::to_string(spec.d_model) + " is not divisible by num_attention_heads " +
                    std::to_string(spec.n_heads) + " and there is no head_dim");
    }
    if (spec.n_kv_heads > 0 && spec.n_heads % spec.n_kv_heads != 0)
        r.fault("num_key_value_heads", std::to_string(spec.n_kv_heads) + " does not divide num_attention_heads " + std::to_string(spec.n_heads));
}

void rms_decoder_defaults(ModelSpec& spec) {
    spec.norm = {NormKind::rms_norm, false, 1e-6, false};
    spec.positions = PositionKind::rope;
    spec.mlp = MlpKind::gated;
    spec.layout = BlockLayout::pre_norm;
    spec.head = HeadKind::causal_lm;
}

void uniform_layers(ModelSpec& spec, double theta, const RopeScaling& scaling) {
    spec.layers.assign(static_cast<std::size_t>(std::max(spec.n_layers, 0)), LayerSpec{0, true, theta, scaling});
}

// Qwen's window: per layer_types when given, else sliding from max_window_layers on when
// use_sliding_window is true (transformers sets sliding_window to None when it is false, so a
// sliding_window without use_sliding_window is no window at all).
void read_qwen_window(ConfigReader& r, ModelSpec& spec) {
    const bool use = r.flag("use_sliding_window", false);
    const int window = r.integer("sliding_window", 1, 1 << 30, 0);
    const int from = r.integer("max_window_layers", 0, kMaxLayers, 28);
    const auto types = read_layer_types(r, spec.n_layers);
    for (int l = 0; l < spec.n_layers; ++l) {
        const bool sliding = types ? (*types)[static_cast<std::size_t>(l)] : (use && window > 0 && l >= from);
        if (!sliding) continue;
        if (!use || window == 0) {
            r.fault("layer_types", "layer " + std::to_string(l) + " is \"sliding_attention\" but there is no window "
                                   "(use_sliding_window false or sliding_window null): transformers' mask would be undefined");
            return;
        }
        spec.layers[static_cast<std::size_t>(l)].window = window;
    }
}

}  // namespace

// [SECTION] The families

void read_gpt2(ConfigReader& r, ModelSpec& spec) {
    spec.vocab_size = r.integer("vocab_size", 1, kMaxVocab, std::nullopt);
    spec.d_model = r.integer("n_embd", 1, kMaxWidth, std::nullopt);
    spec.n_layers = r.integer("n_layer", 1, kMaxLayers, std::nullopt);
    spec.n_heads = r.integer("n_head", 1, kMaxHeads, std::nullopt);
    spec.n_kv_heads = spec.n_heads;
    if (spec.n_heads > 0 && spec.d_model % spec.n_heads != 0)
        r.fault("n_embd " + std::to_string(spec.d_model) + " is not divisible by n_head " + std::to_string(spec.n_heads));
    spec.head_dim = spec.n_heads > 0 ? spec.d_model / spec.n_heads : 0;
    spec.d_ff = r.integer("n_inner", 1, 1 << 20, 4 * spec.d_model);   // null: 4·n_embd
    // n_positions is the table's size; old configs have only n_ctx (the same number)
    spec.positions_key = r.has("n_positions") || !r.has("n_ctx") ? "n_positions" : "n_ctx";
    spec.max_positions = r.integer(spec.positions_key, 1, kMaxPositions, std::nullopt);
    spec.norm = {NormKind::layer_norm, false, r.number("layer_norm_epsilon", 0, 1, 1e-5), true};
    spec.activation = read_activation(r, "activation_function", "gelu_new");
    r.only("scale_attn_weights", true, "scores are divided by √head_dim");
    r.only("scale_attn_by_inverse_layer_idx", false, "scores are divided by √head_dim only");
    r.only("add_cross_attention", false, "a decoder with cross-attention needs an encoder");
    // Heads pruned after training (transformers' prune_heads) leave layers of other shapes.
    if (const json* pruned = r.find("pruned_heads"); pruned && !(pruned->is_object() && pruned->empty()))
        r.fault("pruned_heads", shown(*pruned) + " is not supported: pruning heads changes the layers' shapes; only {} (none pruned) is read");
    spec.tied_lm_head = r.flag("tie_word_embeddings", true);
    spec.positions = PositionKind::learned_absolute;
    spec.rotary_dim = 0;
    spec.qkv_bias = spec.o_bias = spec.mlp_bias = true;
    spec.mlp = MlpKind::plain;
    spec.layout = BlockLayout::pre_norm;
    spec.attention_scale = spec.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(spec.head_dim)) : 0;
    uniform_layers(spec, 0, {});
}

// What a Llama-derived config leaves to its family's defaults, and what the family reads beyond Llama's RoPE.
struct LlamaDefaults {
    bool tied = false;             // tie_word_embeddings
    double theta = 10000.0;        // rope_theta
    double rms_norm_eps = 1e-6;
    bool partial_rotary_read = false;   // partial_rotary_factor is read (Phi-3); elsewhere every dim turns
    bool longrope = false;         // rope type longrope is read (Phi-3)
    bool yarn = false;             // rope type yarn is read (gpt-oss)
    bool mrope = false;            // mrope_section and mrope_interleaved are read (Qwen3.5)
    bool dense_mlp = true;         // intermediate_size is read; false: every layer a mixture (Qwen3.5-MoE)
    double partial_rotary = 1.0;   // partial_rotary_factor when the config has none (with partial_rotary_factor read)
    std::optional<int> head_dim;   // head_dim when the config has none; nullopt: hidden_size / num_attention_heads
};

void read_llama_like(ConfigReader& r, ModelSpec& spec, const LlamaDefaults& defaults) {
    rms_decoder_defaults(spec);
    read_decoder_sizes(r, spec, defaults.head_dim, defaults.dense_mlp);
    spec.norm.epsilon = r.number("rms_norm_eps", 0, 1, defaults.rms_norm_eps);
    spec.activation = read_activation(r, "hidden_act", "silu");
    double theta = r.number("rope_theta", 0, 1e12, defaults.theta);
    double partial = defaults.partial_rotary_read ? r.number("partial_rotary_factor", 0, 1.0000001, defaults.partial_rotary) : 1.0;
    const RopeScaling scaling = read_rope(r, theta, defaults.partial_rotary_read ? &partial : nullptr, defaults.longrope, defaults.yarn, defaults.mrope);
    spec.tied_lm_head = r.flag("tie_word_embeddings", defaults.tied);
    spec.rotary_dim = static_cast<int>(spec.head_dim * partial);   // int(head_dim * partial_rotary_factor)
    spec.attention_scale = spec.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(spec.head_dim)) : 0;
    uniform_layers(spec, theta, scaling);
}

void read_llama(ConfigReader& r, ModelSpec& spec) {
    read_llama_like(r, spec, {});
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    spec.mlp_bias = r.flag("mlp_bias", false);
    // nanotron writes it; transformers' Llama always rotates halves, whatever it says
    r.only("rope_interleaved", false, "transformers' Llama rotates halves (rotate_half) and ignores the key; a checkpoint "
                                      "trained with interleaved pairs would not run as it was trained");
}

// DiffLlama (DiffLlamaAttention): Llama's decoder whose heads work in pairs, p with p + H/2, each
// pair's output the difference of its two softmax maps (scenario.hpp's DifferentialAttention), with
// λ's four vectors per layer and λ_init = 0.8 − 0.6·e^(−0.3·ℓ); Mistral's MLP, without biases.
void read_diffllama(ConfigReader& r, ModelSpec& spec) {
    read_llama_like(r, spec, {});
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    spec.differential = true;
    if (spec.n_heads % 2 != 0)
        r.fault("num_attention_heads", std::to_string(spec.n_heads) + " heads: differential attention pairs head p with head p + H/2, "
                                       "so it needs an even number");
}

// Mistral: Llama's decoder without biases; with sliding_window set every layer slides
// (MistralModel masks with create_sliding_window_causal_mask: key j seen by query i when
// i − j < W), with it null none does (Mistral v0.2 on).
void read_mistral(ConfigReader& r, ModelSpec& spec) {
    read_llama_like(r, spec, {});
    const int window = r.integer("sliding_window", 1, 1 << 30, 0);
    for (LayerSpec& layer : spec.layers) layer.window = window;
}

// Ministral: Mistral's decoder, its layers sliding as layer_types says (MinistralConfig's
// default: every layer while sliding_window is set, none while it is null).
void read_ministral(ConfigReader& r, ModelSpec& spec) {
    read_llama_like(r, spec, {});
    const int n = spec.n_layers;
    const bool no_window = r.is_null("sliding_window");
    const int window = r.integer("sliding_window", 1, 1 << 30, 4096);
    std::vector<bool> sliding(static_cast<std::size_t>(std::max(n, 0)), !no_window);
    if (const auto types = read_layer_types(r, n)) sliding = *types;
    slide_layers(r, spec, sliding, no_window ? std::nullopt : std::optional<int>(window));
}

void read_qwen2(ConfigReader& r, ModelSpec& spec) {
    read_llama_like(r, spec, {});
    spec.qkv_bias = true;   // Qwen2Attention: q, k, v with bias, o without
    spec.o_bias = false;
    r.only("use_mrope", false, "multimodal RoPE (Qwen2-VL) is not computed");
    read_qwen_window(r, spec);
}

void read_qwen3(ConfigReader& r, ModelSpec& spec) {
    read_llama_like(r, spec, {});
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    spec.qk_norm = true;
    read_qwen_window(r, spec);
}

// Gemma 2 and 3: (1 + w) RMSNorm, four norms a block, √d embedding, query_pre_attn_scalar.
void read_gemma(ConfigReader& r, ModelSpec& spec, bool gemma3) {
    rms_decoder_defaults(spec);
    // Gemma3TextConfig gives every size a default (Gemma 3's published multimodal folders name few of
    // them in text_config); Gemma2Config's are Gemma 2 9B's, never left out of a config in practice
    if (gemma3) read_decoder_sizes(r, spec, 256, true, SizeDefaults{262208, 2304, 9216, 26, 8, 4});
    else read_decoder_sizes(r, spec, 256);
    spec.norm.one_plus_weight = true;
    spec.norm.epsilon = r.number("rms_norm_eps", 0, 1, 1e-6);
    // Gemma 2 and 3 build their MLP from ACT2FN[config.hidden_activation]: a null there fails in
    // transformers, so it is not the default here either.
    if (r.is_null("hidden_activation"))
        r.fault("hidden_activation", "null is not an activation: transformers' Gemma MLP looks it up in ACT2FN; expected "
                                     "\"gelu_pytorch_tanh\" (or leave the key out)");
    spec.activation = read_activation(r, "hidden_activation", "gelu_pytorch_tanh");
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    spec.layout = BlockLayout::sandwich;
    spec.tied_lm_head = r.flag("tie_word_embeddings", true);
    spec.rotary_dim = spec.head_dim;
    // Python's hidden_size**0.5, then torch.tensor(…, dtype=float32)
    spec.embedding_scale = static_cast<float>(std::sqrt(static_cast<double>(spec.d_model)));
    spec.attention_scale = 1.0 / std::sqrt(r.number("query_pre_attn_scalar", 0, 1e9, 256));
    spec.final_logit_softcap = r.number("final_logit_softcapping", 0, 1e9, gemma3 ? 0 : 30.0);
    const double attn_cap = r.number("attn_logit_softcapping", 0, 1e9, gemma3 ? 0 : 50.0);
    if (!gemma3) spec.attn_logit_softcap = attn_cap;
    else if (attn_cap > 0)
        r.fault("attn_logit_softcapping", shown(json(attn_cap)) + " is not supported: transformers' Gemma 3 attention never "
                                          "soft-caps its scores, whatever the config says; expected null");
    double theta = r.number("rope_theta", 0, 1e12, gemma3 ? 1'000'000.0 : 10000.0);
    const RopeScaling scaling = read_rope(r, theta, nullptr);
    const int window = r.integer("sliding_window", 1, 1 << 30, 4096);
    uniform_layers(spec, theta, scaling);
    std::optional<std::vector<bool>> sliding = read_layer_types(r, spec.n_layers);
    if (!gemma3) {
        // Gemma2: layer_types default: even layers (0, 2, …) slide
        if (!sliding) {
            sliding.emplace();
            for (int l = 0; l < spec.n_layers; ++l) sliding->push_back(l % 2 == 0);
        }
    } else {
        // Gemma 3: sliding unless (ℓ + 1) is a multiple of the pattern (5 local : 1 global)
        const int pattern = r.has("sliding_window_pattern") ? r.integer("sliding_window_pattern", 1, kMaxLayers, 6)
                                                             : r.integer("_sliding_window_pattern", 1, kMaxLayers, 6);
        if (r.has("sliding_window_pattern") && r.has("_sliding_window_pattern") &&
            r.integer("sliding_window_pattern", 1, kMaxLayers, 6) != r.integer("_sliding_window_pattern", 1, kMaxLayers, 6))
            r.fault("keys 'sliding_window_pattern' and '_sliding_window_pattern' disagree");
        if (!sliding) {
            sliding.emplace();
            for (int l = 0; l < spec.n_layers; ++l) sliding->push_back((l + 1) % pattern != 0);
        }
        r.only("use_bidirectional_attention", false, "Gemma 3 as a causal language model only");
        const double local_theta = r.number("rope_local_base_freq", 0, 1e12, 10000.0);
        for (int l = 0; l < spec.n_layers; ++l)
            if ((*sliding)[static_cast<std::size_t>(l)]) spec.layers[static_cast<std::size_t>(l)].rope_theta = local_theta,
                                                          spec.layers[static_cast<std::size_t>(l)].rope_scaling = RopeScaling{};
    }
    for (int l = 0; l < spec.n_layers; ++l)
        if ((*sliding)[static_cast<std::size_t>(l)]) spec.layers[static_cast<std::size_t>(l)].window = window;
    spec.qk_norm = gemma3;
}

// OLMo 2: Llama's decoder with its norms moved after each sublayer (none before: attention and
// the MLP read the residual stream as it is) and QK-norm over the whole projection, one RMSNorm
// of every head's q (H·head_dim numbers) and one of every K/V head's k, before the split and RoPE
// (Olmo2Attention: q_norm(q_proj(x)), k_norm(k_proj(x))). rms_norm_eps defaults to 1e-5.
void read_olmo2(ConfigReader& r, ModelSpec& spec) {
    LlamaDefaults defaults;
    defaults.rms_norm_eps = 1e-5;
    read_llama_like(r, spec, defaults);
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    spec.qk_norm = spec.qk_norm_whole = true;
    spec.layout = BlockLayout::after_sublayers;
}

// Phi-3 and Phi-4-mini (Phi3ForCausalLM): Llama's block with Q, K, V fused in qkv_proj and the
// gate and up projections in gate_up_proj (TensorLayout::phi3), no biases, the first
// head_dim·partial_rotary_factor dims turned, every layer sliding when sliding_window is set
// (as Mistral), and LongRoPE: the short factors for a text of up to
// original_max_position_embeddings tokens, the long ones beyond, cos and sin times the
// attention factor √(1 + ln(s)/ln(L)), s = max_position_embeddings / L, when the config gives none
// (_compute_longrope_parameters).
void read_phi3(ConfigReader& r, ModelSpec& spec) {
    LlamaDefaults defaults;
    defaults.rms_norm_eps = 1e-5;
    defaults.partial_rotary_read = defaults.longrope = true;
    read_llama_like(r, spec, defaults);
    const int max_positions = r.integer("max_position_embeddings", 1, kMaxPositions, 4096);
    const int original = r.integer("original_max_position_embeddings", 1, kMaxPositions, 4096);
    RopeScaling scaling = spec.layers.empty() ? RopeScaling{} : spec.layers.front().rope_scaling;   // every layer's
    if (scaling.kind == RopeScalingKind::longrope) {
        if (scaling.original_max_position_embeddings == 0) scaling.original_max_position_embeddings = original;
        const int L = scaling.original_max_position_embeddings;
        const double ratio = static_cast<double>(max_positions) / L;
        if (scaling.factor == 0) scaling.factor = ratio;
        if (scaling.attention_factor == 0) {
            // transformers 4.x took s from the ratio whenever the config had original_max_position_embeddings,
            // 5.x takes the rope object's factor: where they differ, the attention factor is not one number
            if (scaling.factor != ratio)
                r.fault("rope_scaling", "'factor' " + shown(json(scaling.factor)) + " differs from max_position_embeddings / "
                                        "original_max_position_embeddings = " + shown(json(ratio)) +
                                        ", and transformers' versions derive the attention factor from one or the other: give "
                                        "'attention_factor'");
            scaling.attention_factor = scaling.factor <= 1.0 ? 1.0 : std::sqrt(1 + std::log(scaling.factor) / std::log(static_cast<double>(L)));
        }
        const std::size_t pairs = static_cast<std::size_t>(std::max(spec.rotary_dim, 0) / 2);
        for (const auto& [list, name] : {std::pair{&scaling.short_factor, "short_factor"}, std::pair{&scaling.long_factor, "long_factor"}})
            if (!list->empty() && list->size() != pairs)
                r.fault("rope_scaling", "'" + std::string(name) + "' has " + std::to_string(list->size()) + " factors: expected " +
                                        std::to_string(pairs) + " (head_dim·partial_rotary_factor / 2)");
        for (LayerSpec& layer : spec.layers) layer.rope_scaling = scaling;
    }
    r.only("attention_bias", false, "Phi3Attention has no biases (transformers reads no such key)");
    r.only("mlp_bias", false, "Phi3MLP has no biases (transformers reads no such key)");
    r.only("lm_head_bias", false, "Phi3ForCausalLM's head has no bias (transformers reads no such key)");
    const int window = r.integer("sliding_window", 1, 1 << 30, 0);
    for (LayerSpec& layer : spec.layers) layer.window = window;
}

// Which layers turn q and k (SmolLM3, Llama 4): no_rope_layers, 1 for a RoPE layer and 0 for a
// NoPE one, "at least the same length as the number of layers" (layer ℓ reads entry ℓ); without it
// every no_rope_layer_interval-th layer is NoPE ((ℓ + 1) % interval = 0). empty_is_absent: Llama 4's
// config takes an empty list as none (`if self.no_rope_layers`).
std::vector<bool> read_no_rope_layers(ConfigReader& r, int n, bool empty_is_absent = false) {
    const int interval = r.integer("no_rope_layer_interval", 1, kMaxLayers, 4);
    std::vector<bool> rope(static_cast<std::size_t>(std::max(n, 0)));
    for (int l = 0; l < n; ++l) rope[static_cast<std::size_t>(l)] = (l + 1) % interval != 0;
    const json* list = r.find("no_rope_layers");
    if (list == nullptr || (empty_is_absent && list->is_array() && list->empty())) return rope;
    if (!list->is_array() || static_cast<int>(list->size()) < n) {
        r.fault("no_rope_layers", "expected a list of at least " + std::to_string(n) + " entries (num_hidden_layers), 1 for a RoPE "
                                  "layer and 0 for a NoPE one, found " + shown(*list));
        return rope;
    }
    for (int l = 0; l < n; ++l) {
        const json& v = (*list)[static_cast<std::size_t>(l)];
        if (!v.is_number_integer() || (v.get<std::int64_t>() != 0 && v.get<std::int64_t>() != 1)) {
            r.fault("no_rope_layers", "entry " + std::to_string(l) + " is " + shown(v) + ": expected 1 (RoPE) or 0 (NoPE)");
            break;
        }
        rope[static_cast<std::size_t>(l)] = v.get<std::int64_t>() == 1;
    }
    return rope;
}

// SmolLM3: Llama's decoder in which the layers no_rope_layers marks 0 turn neither q nor k (NoPE);
// without the list, every no_rope_layer_interval-th layer is NoPE (SmolLM3Config: layer ℓ turns
// when (ℓ + 1) % interval ≠ 0). A layer slides when its layer_types entry is "sliding_attention":
// SmolLM3Model masks it with create_sliding_window_causal_mask and config.sliding_window, whatever
// use_sliding_window says (eager attention reads the mask, not SmolLM3Attention's sliding_window).
// Without layer_types the NoPE layers are the sliding ones when use_sliding_window and
// sliding_window are set (SmolLM3Config). Tied by default; the RoPE base defaults to 2·10⁶.
void read_smollm3(ConfigReader& r, ModelSpec& spec) {
    LlamaDefaults defaults;
    defaults.tied = true;
    defaults.theta = 2000000.0;
    read_llama_like(r, spec, defaults);
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    spec.mlp_bias = r.flag("mlp_bias", false);
    const int n = spec.n_layers;
    const std::vector<bool> rope = read_no_rope_layers(r, n);
    const bool use = r.flag("use_sliding_window", false);
    const int window = r.integer("sliding_window", 1, 1 << 30, 0);
    const auto types = read_layer_types(r, n);
    for (int l = 0; l < n; ++l) {
        LayerSpec& layer = spec.layers[static_cast<std::size_t>(l)];
        layer.rope = rope[static_cast<std::size_t>(l)];
        const bool sliding = types ? (*types)[static_cast<std::size_t>(l)] : (use && window > 0 && !layer.rope);
        if (!sliding) continue;
        if (window == 0) {
            r.fault("layer_types", "layer " + std::to_string(l) + " is \"sliding_attention\" but sliding_window is null: "
                                   "transformers' mask would be undefined");
            return;
        }
        layer.window = window;
    }
}

// num_experts_per_tok: how many of `experts` (the config's `experts_key`) each token keeps; no
// more than there are, which torch.topk could not keep.
int read_experts_per_token(ConfigReader& r, int experts, const char* experts_key, int fallback) {
    const int per_token = r.integer("num_experts_per_tok", 1, kMaxExperts, fallback);
    if (experts > 0 && per_token > experts)
        r.fault("num_experts_per_tok", std::to_string(per_token) + " is more than " + experts_key + " " + std::to_string(experts) +
                                       ": torch.topk cannot keep them");
    return per_token;
}

// The Qwen mixtures' experts (Qwen2MoeConfig, Qwen3MoeConfig): num_experts (or num_local_experts,
// the attribute it maps to; both must agree), num_experts_per_tok kept, renormalised with
// norm_topk_prob, moe_intermediate_size wide each. Layer ℓ is sparse when it is not in
// mlp_only_layers and (ℓ + 1) % decoder_sparse_step == 0 (the decoder layer's rule); the others
// keep a dense MLP of intermediate_size.
struct QwenExpertDefaults {
    int experts, per_token, d_ff;
    bool normalize = false;  // norm_topk_prob (Qwen3-Next: true)
};
void read_qwen_experts(ConfigReader& r, ModelSpec& spec, QwenExpertDefaults defaults) {
    const int n = spec.n_layers;
    int experts = r.integer("num_experts", 0, kMaxExperts, defaults.experts);
    if (r.has("num_local_experts")) {
        const int local = r.integer("num_local_experts", 0, kMaxExperts, defaults.experts);
        if (r.has("num_experts") && local != experts)
            r.fault("num_local_experts", std::to_string(local) + " differs from num_experts " + std::to_string(experts) +
                                         ": transformers maps one onto the other");
        experts = local;
    }
    spec.experts.experts = experts;
    spec.experts.experts_per_token = read_experts_per_token(r, experts, "num_experts", defaults.per_token);
    spec.experts.normalize_top_k = r.flag("norm_topk_prob", defaults.normalize);
    spec.experts.d_ff = r.integer("moe_intermediate_size", 1, 1 << 20, defaults.d_ff);
    const int step = r.integer("decoder_sparse_step", 1, kMaxLayers, 1);
    const std::vector<bool> dense =
        read_layer_list(r, "mlp_only_layers", n).value_or(std::vector<bool>(static_cast<std::size_t>(std::max(n, 0)), false));
    for (int l = 0; l < n; ++l)
        spec.layers[static_cast<std::size_t>(l)].moe = experts > 0 && !dense[static_cast<std::size_t>(l)] && (l + 1) % step == 0;
}

// Qwen3-MoE: Qwen3's attention (QK-norm), and in its sparse layers a mixture of experts in place
// of the MLP (Qwen3MoeSparseMoeBlock: softmax over num_experts router logits, the top
// num_experts_per_tok kept, renormalised with norm_topk_prob). Qwen3MoeConfig keeps
// sliding_window only with use_sliding_window, and the model then masks every layer with it.
void read_qwen3_moe(ConfigReader& r, ModelSpec& spec) {
    read_llama_like(r, spec, {});
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    spec.qk_norm = true;
    const bool use = r.flag("use_sliding_window", false);
    const bool no_window = r.is_null("sliding_window");  // None: Qwen3MoeModel masks causally
    const int window = r.integer("sliding_window", 1, 1 << 30, 4096);
    if (use && !no_window)
        for (LayerSpec& layer : spec.layers) layer.window = window;
    read_qwen_experts(r, spec, {128, 8, 768});
}

// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2's attention (biases on q, k and v: qkv_bias,
// default true), and in its sparse layers Qwen2MoeSparseMoeBlock: the routed experts as Qwen3-MoE's
// (norm_topk_prob default false), and beside them a shared expert on every token, a gated MLP of
// shared_expert_intermediate_size, scaled by σ(x·shared_expert_gate) and added after them.
// Which layers slide has changed between transformers' versions (layer ℓ ≥ max_window_layers in
// 4.4x; even ℓ below it since): with use_sliding_window true, layer_types must say.
void read_qwen2_moe(ConfigReader& r, ModelSpec& spec) {
    read_llama_like(r, spec, {});
    spec.qkv_bias = r.flag("qkv_bias", true);
    spec.o_bias = false;
    const bool use = r.flag("use_sliding_window", false);
    const int window = r.integer("sliding_window", 1, 1 << 30, 4096);
    if (const auto types = read_layer_types(r, spec.n_layers)) {
        for (int l = 0; l < spec.n_layers; ++l) {
            if (!(*types)[static_cast<std::size_t>(l)]) continue;
            if (!use) {
                r.fault("layer_types", "layer " + std::to_string(l) + " is \"sliding_attention\" but use_sliding_window is false: "
                                       "Qwen2MoeConfig then sets sliding_window to 0, and transformers' mask would be undefined");
                return;
            }
            spec.layers[static_cast<std::size_t>(l)].window = window;
        }
    } else if (use) {
        r.fault("use_sliding_window", "true without layer_types: transformers' versions disagree on which layers slide "
                                      "(from max_window_layers on in 4.4x, the even layers below it since); give layer_types");
    }
    read_qwen_experts(r, spec, {60, 4, 1408});
    spec.experts.shared_d_ff = r.integer("shared_expert_intermediate_size", 1, 1 << 20, 5632);
    spec.experts.shared_gate = true;  // Qwen2MoeSparseMoeBlock.shared_expert_gate
}

// Qwen3-Next's layers (Qwen3NextConfig, Qwen3NextDecoderLayer), shared with Qwen3.5: layer_types
// "linear_attention" (Gated DeltaNet) or "full_attention", by default every full_attention_interval-th
// layer full; its full layers Qwen3's attention with (1 + w) QK-norm, partial RoPE (partial_rotary_factor
// 0.25) and the output gate; (1 + w) RMSNorms; the linear layers' sizes.
void read_qwen3_next_layers(ConfigReader& r, ModelSpec& spec, bool mrope, bool dense_mlp = true) {
    LlamaDefaults defaults;
    defaults.partial_rotary_read = true;
    defaults.partial_rotary = 0.25;
    defaults.head_dim = 256;
    defaults.mrope = mrope;
    defaults.dense_mlp = dense_mlp;
    read_llama_like(r, spec, defaults);
    spec.norm.one_plus_weight = true;   // Qwen3NextRMSNorm: x/rms·(1 + w), its q_norm and k_norm too
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    spec.qk_norm = true;
    spec.output_gate = true;
    const int n = spec.n_layers;
    const int interval = r.integer("full_attention_interval", 1, kMaxLayers, 4);
    std::vector<bool> linear(static_cast<std::size_t>(std::max(n, 0)));
    for (int l = 0; l < n; ++l) linear[static_cast<std::size_t>(l)] = (l + 1) % interval != 0;
    if (auto types = read_layer_types(r, n, "linear_attention")) {
        // Qwen3NextConfig reads layer_types in place of the interval; published configs write both, agreeing
        if (r.has("full_attention_interval") && *types != linear)
            r.fault("full_attention_interval", std::to_string(interval) + " disagrees with layer_types, which transformers reads in its place: "
                                               "the interval would be ignored; make them agree or leave it out");
        linear = std::move(*types);
    }
    LinearSpec& lin = spec.linear;
    lin.conv_kernel = r.integer("linear_conv_kernel_dim", 1, 64, 4);
    lin.key_dim = r.integer("linear_key_head_dim", 1, 4096, 128);
    lin.value_dim = r.integer("linear_value_head_dim", 1, 4096, 128);
    lin.key_heads = r.integer("linear_num_key_heads", 1, kMaxHeads, 16);
    lin.value_heads = r.integer("linear_num_value_heads", 1, kMaxHeads, 32);
    if (lin.key_heads > 0 && lin.value_heads % lin.key_heads != 0)
        r.fault("linear_num_value_heads", std::to_string(lin.value_heads) + " is not a multiple of linear_num_key_heads " +
                                          std::to_string(lin.key_heads) + ": each key head is read by a whole number of value heads");
    for (int l = 0; l < n; ++l) spec.layers[static_cast<std::size_t>(l)].linear = linear[static_cast<std::size_t>(l)];
}

// Qwen3-Next: its layers, and Qwen2-MoE's mixture (norm_topk_prob true) with a gated shared expert,
// dense layers by mlp_only_layers and decoder_sparse_step.
void read_qwen3_next(ConfigReader& r, ModelSpec& spec) {
    read_qwen3_next_layers(r, spec, false);
    read_qwen_experts(r, spec, {512, 10, 512, true});
    spec.experts.shared_d_ff = r.integer("shared_expert_intermediate_size", 1, 1 << 20, 512);
    spec.experts.shared_gate = true;  // Qwen3NextSparseMoeBlock.shared_expert_gate
}

// What Qwen3.5 reads beyond Qwen3-Next's layers: multimodal RoPE — rope_parameters' mrope_section
// splits the rotary pairs among a token's time, height and width positions, which for a text are its
// one position, so the pairs turn as plain partial RoPE turns them (the sections must cover them) —
// and attn_output_gate: Qwen3_5Attention gates every head's output whatever it says; false is refused.
void read_qwen3_5_attention(ConfigReader& r, ModelSpec& spec) {
    r.only("attn_output_gate", true, "Qwen3_5Attention gates each head's output whatever the key says; a model trained "
                                     "without the gate would not run as it was trained");
    const int pairs = spec.layers.empty() ? 0 : spec.layers.front().rope_scaling.mrope_pairs;
    if (pairs > 0 && pairs != spec.rotary_dim / 2)
        r.fault("rope_parameters", "'mrope_section' covers " + std::to_string(pairs) + " rotary pairs, and head_dim·partial_rotary_factor "
                                   "turns " + std::to_string(spec.rotary_dim / 2) + ": the sections pick each pair's position "
                                   "stream, so they must cover the pairs exactly");
}

// Qwen3.5's text model (Qwen3_5TextConfig, Qwen3_5DecoderLayer): Qwen3-Next's layers with a dense gated
// MLP in every layer (intermediate_size).
void read_qwen3_5(ConfigReader& r, ModelSpec& spec) {
    read_qwen3_next_layers(r, spec, true);
    read_qwen3_5_attention(r, spec);
}

// Qwen3.5-MoE's text model (Qwen3_5MoeTextConfig, Qwen3_5MoeDecoderLayer): Qwen3-Next's layers with a
// mixture in every layer (its config has no decoder_sparse_step or mlp_only_layers): the router
// (Qwen3_5MoeTopKRouter) softmax, the top num_experts_per_tok kept and always renormalised (the config has
// no norm_topk_prob; true is accepted, false refused), each expert a gated MLP of moe_intermediate_size,
// beside a shared expert gated by σ(x·shared_expert_gate).
void read_qwen3_5_moe(ConfigReader& r, ModelSpec& spec) {
    read_qwen3_next_layers(r, spec, true, false);
    read_qwen3_5_attention(r, spec);
    const int experts = r.integer("num_experts", 1, kMaxExperts, 256);
    spec.experts = {experts, read_experts_per_token(r, experts, "num_experts", 8), true, r.integer("moe_intermediate_size", 1, 1 << 20, 512)};
    r.only("norm_topk_prob", true, "Qwen3_5MoeTopKRouter renormalises the kept experts' weights whatever the key says");
    spec.experts.shared_d_ff = r.integer("shared_expert_intermediate_size", 1, 1 << 20, 512);
    spec.experts.shared_gate = true;
    spec.d_ff = spec.experts.d_ff;  // no dense MLP: the experts' width
    for (LayerSpec& layer : spec.layers) layer.moe = true;
}

// Mixtral: Mistral's attention (every layer sliding when sliding_window is set), and in every
// layer a mixture of num_local_experts gated MLPs of intermediate_size each
// (MixtralSparseMoeBlock: softmax, the top num_experts_per_tok kept, always renormalised).
void read_mixtral(ConfigReader& r, ModelSpec& spec) {
    LlamaDefaults defaults;
    defaults.theta = 1000000.0;
    defaults.rms_norm_eps = 1e-5;
    read_llama_like(r, spec, defaults);
    const int window = r.integer("sliding_window", 1, 1 << 30, 0);
    const int experts = r.integer("num_local_experts", 1, kMaxExperts, 8);
    spec.experts = {experts, read_experts_per_token(r, experts, "num_local_experts", 2), true, spec.d_ff};
    for (LayerSpec& layer : spec.layers) {
        layer.window = window;
        layer.moe = true;
    }
}

// gpt-oss: Llama's decoder with biases on q, k, v and o (attention_bias, default true), a learned
// sink per head (GptOssAttention.sinks), layer_types alternating sliding and full attention
// (default: the even layers slide, by sliding_window, default 128), YaRN (GptOssConfig's default
// when the config has no rope_scaling), and in every layer a mixture of num_local_experts experts:
// GptOssTopKRouter (x·Wᵀ + b, the top num_experts_per_tok logits, softmax over them) and
// GptOssExperts (biased, the clamped SwiGLU with swiglu_limit and swiglu_alpha, each expert
// intermediate_size wide). hidden_act is read past: the experts' activation is their own.
void read_gpt_oss(ConfigReader& r, ModelSpec& spec) {
    LlamaDefaults defaults;
    defaults.theta = 150000.0;
    defaults.rms_norm_eps = 1e-5;
    defaults.yarn = true;
    read_llama_like(r, spec, defaults);
    spec.activation = Activation::silu;  // GptOssExperts' g·σ(α·g), whatever hidden_act says
    if (!r.has("rope_scaling") && !r.has("rope_parameters")) {
        RopeScaling yarn;  // GptOssConfig's default rope_parameters
        yarn.kind = RopeScalingKind::yarn;
        yarn.factor = 32.0;
        yarn.beta_fast = 32.0;
        yarn.beta_slow = 1.0;
        yarn.truncate = false;
        yarn.original_max_position_embeddings = 4096;
        yarn.attention_factor = attn::yarn_mscale(32.0);
        for (LayerSpec& layer : spec.layers) layer.rope_scaling = yarn;
    }
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", true);
    spec.sinks = true;
    const int n = spec.n_layers;
    const bool no_window = r.is_null("sliding_window");
    const int window = r.integer("sliding_window", 1, 1 << 30, 128);
    std::vector<bool> sliding(static_cast<std::size_t>(std::max(n, 0)));
    for (int l = 0; l < n; ++l) sliding[static_cast<std::size_t>(l)] = (l + 1) % 2 != 0;  // GptOssConfig's default
    if (const auto types = read_layer_types(r, n)) sliding = *types;
    slide_layers(r, spec, sliding, no_window ? std::nullopt : std::optional<int>(window));
    for (LayerSpec& layer : spec.layers) layer.moe = true;
    const int experts = r.integer("num_local_experts", 1, kMaxExperts, 128);
    spec.experts.experts = experts;
    spec.experts.experts_per_token = read_experts_per_token(r, experts, "num_local_experts", 4);
    spec.experts.d_ff = spec.d_ff;
    spec.experts.top_k_then_softmax = true;
    spec.experts.biases = true;
    spec.experts.swiglu_limit = r.number("swiglu_limit", 0, 1e6, 7.0);
    spec.experts.swiglu_alpha = r.number("swiglu_alpha", -1e6, 1e6, 1.702);
    // OpenAI's release: {"quant_method": "mxfp4", "modules_to_not_convert": [the attention, the router,
    // the embedding, the head]}: the experts' projections as MXFP4 blocks and scales, read in place.
    if (const json* q = r.find("quantization_config"); q != nullptr && !q->is_null()) {
        const auto method = q->is_object() ? q->find("quant_method") : q->end();
        if (method == q->end() || !method->is_string() || method->get<std::string>() != "mxfp4") {
            r.fault("quantization_config", "quant_method " + (method == q->end() ? std::string("missing") : shown(*method)) +
                                               " is not read: only \"mxfp4\" (gpt-oss's experts as published) is");
        } else {
            spec.experts.mxfp4 = true;
            for (const auto& [key, value] : q->items())
                if (key != "quant_method" && key != "modules_to_not_convert" && key != "dequantize" && !value.is_null())
                    r.fault("quantization_config", "'" + printable(key, 40) + "' is not read with MXFP4: it would be ignored");
            if (spec.d_model % 32 != 0 || spec.d_ff % 32 != 0)
                r.fault("quantization_config", "MXFP4 scales blocks of 32 numbers: hidden_size " + std::to_string(spec.d_model) +
                                                   " and intermediate_size " + std::to_string(spec.d_ff) + " must be multiples of 32");
        }
    }
}

// Llama 4's text model (Llama4TextConfig, Llama4TextAttention, Llama4TextMoe): Llama's decoder in
// which layer ℓ turns q and k (RoPE, interleaved pairs: apply_rotary_emb's view_as_complex) unless
// no_rope_layers marks it 0 (default: every no_rope_layer_interval-th layer is NoPE). layer_types
// (default: "chunked_attention" on the RoPE layers, "full_attention" on the NoPE ones) chunks a
// layer's mask by attention_chunk_size. On RoPE layers use_qk_norm RMS-norms each head's q and k
// without a weight (after RoPE); on NoPE layers attn_temperature_tuning scales each query by
// ln(⌊(p + 1)/floor_scale⌋ + 1)·attn_scale + 1. The layers in moe_layers (default: every
// interleave_moe_layer_step-th) hold a mixture of num_local_experts experts (intermediate_size each)
// under Llama4Router, with an ungated shared expert of the same width; the others a dense MLP of
// intermediate_size_mlp.
void read_llama4(ConfigReader& r, ModelSpec& spec) {
    LlamaDefaults defaults;
    defaults.theta = 500000.0;
    defaults.rms_norm_eps = 1e-5;
    read_llama_like(r, spec, defaults);
    spec.rope_style = RopeStyle::interleaved;
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    const int n = spec.n_layers;
    const int expert_ff = spec.d_ff;  // intermediate_size: each expert's and the shared expert's width
    spec.d_ff = r.integer("intermediate_size_mlp", 1, 1 << 20, 16384);  // the dense layers'
    const std::vector<bool> rope = read_no_rope_layers(r, n, true);
    // layer_types: "chunked_attention" or "full_attention"; by default the RoPE layers are chunked
    const std::vector<bool> chunked = read_layer_types(r, n, "chunked_attention").value_or(rope);
    const bool no_chunk = r.is_null("attention_chunk_size");
    const int chunk = r.integer("attention_chunk_size", 1, 1 << 30, 8192);
    const bool qk_norm = r.flag("use_qk_norm", true);
    // Llama4TextAttention tests it as Python does (`if self.attn_temperature_tuning and not self.use_rope`):
    // Llama 4 Scout's config writes 4, which is true; null is false
    bool tuning = !r.is_null("attn_temperature_tuning");
    if (const json* v = r.find("attn_temperature_tuning")) {
        if (v->is_boolean()) tuning = v->get<bool>();
        else if (v->is_number_integer()) tuning = v->get<std::int64_t>() != 0;
        else r.fault("attn_temperature_tuning", "expected true, false or an integer (Python's truth), found " + shown(*v));
    }
    spec.temperature_floor_scale = r.number("floor_scale", 1e-9, 1e12, 8192);
    spec.temperature_attn_scale = r.number("attn_scale", -1e6, 1e6, 0.1);
    for (int l = 0; l < n; ++l) {
        LayerSpec& layer = spec.layers[static_cast<std::size_t>(l)];
        layer.rope = rope[static_cast<std::size_t>(l)];
        layer.qk_norm = qk_norm && layer.rope;        // Llama4TextAttention: use_qk_norm and use_rope
        layer.temperature = tuning && !layer.rope;    // attn_temperature_tuning and not use_rope
        if (!chunked[static_cast<std::size_t>(l)]) continue;
        if (no_chunk) {
            r.fault("attention_chunk_size", "is null but layer " + std::to_string(l) + " is \"chunked_attention\": transformers' chunked "
                                            "mask needs a chunk size");
            return;
        }
        layer.chunk = chunk;
    }
    // The mixture: moe_layers, or every interleave_moe_layer_step-th layer
    const int experts = r.integer("num_local_experts", 1, kMaxExperts, 16);
    spec.experts.experts = experts;
    spec.experts.experts_per_token = read_experts_per_token(r, experts, "num_local_experts", 1);
    spec.experts.d_ff = spec.experts.shared_d_ff = expert_ff;
    spec.experts.top_k_then_sigmoid = true;
    const int step = r.integer("interleave_moe_layer_step", 1, kMaxLayers, 1);
    std::vector<bool> moe(static_cast<std::size_t>(std::max(n, 0)), false);
    for (int l = step - 1; l < n; l += step) moe[static_cast<std::size_t>(l)] = true;
    if (std::optional<std::vector<bool>> listed = read_layer_list(r, "moe_layers", n)) moe = std::move(*listed);
    for (int l = 0; l < n; ++l) spec.layers[static_cast<std::size_t>(l)].moe = moe[static_cast<std::size_t>(l)];
}

// DeepSeek-V3 (DeepseekV3Config, DeepseekV3Attention, DeepseekV3MoE): Llama's decoder with multi-head
// latent attention and, from layer first_k_dense_replace on, a mixture of n_routed_experts experts
// (moe_intermediate_size each) under the sigmoid-grouped router, beside n_shared_experts shared ones
// (one gated MLP of n_shared_experts·moe_intermediate_size, ungated). The attention's scale is
// qk_head_dim^−½, times mscale(factor, mscale_all_dim)² when RoPE is scaled and mscale_all_dim is
// set; RoPE turns the qk_rope_head_dim dims alone (config.head_dim is that, as DeepseekV3Config sets it).
void read_deepseek_v3(ConfigReader& r, ModelSpec& spec) {
    rms_decoder_defaults(spec);
    spec.vocab_size = r.integer("vocab_size", 1, kMaxVocab, 129280);
    spec.d_model = r.integer("hidden_size", 1, kMaxWidth, 7168);
    spec.d_ff = r.integer("intermediate_size", 1, 1 << 20, 18432);
    spec.n_layers = r.integer("num_hidden_layers", 1, kMaxLayers, 61);
    spec.n_heads = r.integer("num_attention_heads", 1, kMaxHeads, 128);
    spec.n_kv_heads = r.integer("num_key_value_heads", 1, kMaxHeads, spec.n_heads);
    if (spec.n_kv_heads != spec.n_heads)
        r.fault("num_key_value_heads", std::to_string(spec.n_kv_heads) + " differs from num_attention_heads " + std::to_string(spec.n_heads) +
                                           ": latent attention expands a key and a value for every head, and transformers' repeat_kv "
                                           "would then repeat them into a shape it cannot use");
    spec.n_kv_heads = spec.n_heads;
    LatentSpec& l = spec.latent;
    l.kv_rank = r.integer("kv_lora_rank", 1, kMaxWidth, 512);
    l.q_rank = r.is_null("q_lora_rank") ? 0 : r.integer("q_lora_rank", 1, kMaxWidth, 1536);
    l.nope_dim = r.integer("qk_nope_head_dim", 0, 4096, 128);
    l.rope_dim = r.integer("qk_rope_head_dim", 0, 4096, 64);
    l.v_dim = r.integer("v_head_dim", 1, 4096, 128);
    l.interleave = r.flag("rope_interleave", true);
    if (l.rope_dim % 2 != 0) r.fault("qk_rope_head_dim", std::to_string(l.rope_dim) + " is odd: RoPE turns pairs");
    spec.head_dim = l.nope_dim + l.rope_dim;
    // saved configs carry the attributes DeepseekV3Config derives: they must say the same
    if (r.has("qk_head_dim") && r.integer("qk_head_dim", 1, 8192, spec.head_dim) != spec.head_dim)
        r.fault("qk_head_dim", "differs from qk_nope_head_dim + qk_rope_head_dim = " + std::to_string(spec.head_dim));
    if (r.has("head_dim") && r.integer("head_dim", 1, 4096, l.rope_dim) != l.rope_dim)
        r.fault("head_dim", "differs from qk_rope_head_dim " + std::to_string(l.rope_dim) +
                                ": transformers' rotary embedding would read it as the rotary width, the attention qk_rope_head_dim");
    spec.rotary_dim = l.rope_dim;
    spec.rope_style = l.interleave ? RopeStyle::interleaved : RopeStyle::rotate_half;
    spec.norm.epsilon = r.number("rms_norm_eps", 0, 1, 1e-6);
    // DeepseekV3Attention's q_a_layernorm and kv_a_layernorm take RMSNorm's default ε, 1e-6, whatever
    // rms_norm_eps says; the engine's latent norms take the block's ε: the two must be one number
    if (spec.norm.epsilon != 1e-6)
        r.fault("rms_norm_eps", shown(json(spec.norm.epsilon)) + " is not computed: the latent's norms (q_a_layernorm, kv_a_layernorm) "
                                "keep ε = 1e-6 in transformers, and here one ε serves every norm of the layer");
    spec.activation = read_activation(r, "hidden_act", "silu");
    double theta = r.number("rope_theta", 0, 1e12, 10000.0);
    const RopeScaling scaling = read_rope(r, theta, nullptr, false, true);
    uniform_layers(spec, theta, scaling);
    spec.tied_lm_head = r.flag("tie_word_embeddings", false);
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);  // q_a_proj, kv_a_proj_with_mqa and o_proj
    spec.attention_scale = spec.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(spec.head_dim)) : 0;
    if (scaling.kind != RopeScalingKind::none && scaling.mscale_all_dim != 0) {
        const double m = attn::yarn_mscale(scaling.factor, scaling.mscale_all_dim);
        spec.attention_scale *= m * m;
    }
    // The mixture
    const int experts = r.integer("n_routed_experts", 1, kMaxExperts, 256);
    if (r.has("num_local_experts") && r.integer("num_local_experts", 1, kMaxExperts, experts) != experts)
        r.fault("num_local_experts", "differs from n_routed_experts " + std::to_string(experts) + ": transformers maps one onto the other");
    MixtureSpec& m = spec.experts;
    m.experts = experts;
    m.experts_per_token = read_experts_per_token(r, experts, "n_routed_experts", 8);
    m.normalize_top_k = r.flag("norm_topk_prob", true);
    m.d_ff = r.integer("moe_intermediate_size", 1, 1 << 20, 2048);
    m.sigmoid_grouped = true;
    m.groups = r.integer("n_group", 1, kMaxExperts, 8);
    m.top_groups = r.integer("topk_group", 1, kMaxExperts, 4);
    if (experts % m.groups != 0 || experts / m.groups < 2)
        r.fault("n_group", std::to_string(m.groups) + " does not split " + std::to_string(experts) +
                               " experts into groups of at least 2 (a group's score is its 2 best experts)");
    if (m.top_groups > m.groups) r.fault("topk_group", std::to_string(m.top_groups) + " is more than n_group " + std::to_string(m.groups));
    else if (m.groups > 0 && experts % m.groups == 0 && m.experts_per_token > m.top_groups * (experts / m.groups))
        r.fault("num_experts_per_tok", std::to_string(m.experts_per_token) + " is more than the " + std::to_string(m.top_groups * (experts / m.groups)) +
                                           " experts of the topk_group kept groups: torch.topk would keep masked ones");
    m.routed_scale = r.number("routed_scaling_factor", 0, 1e6, 2.5);
    const int shared = r.integer("n_shared_experts", 0, kMaxExperts, 1);
    m.shared_d_ff = shared * m.d_ff;
    if (shared == 0) r.fault("n_shared_experts", "0 is not computed: DeepseekV3MoE builds its shared experts with that width, and a width of 0 is no MLP");
    const int dense = r.integer("first_k_dense_replace", 0, kMaxLayers, 3);
    for (int layer = 0; layer < spec.n_layers; ++layer) spec.layers[static_cast<std::size_t>(layer)].moe = layer >= dense;
    // DeepSeek's own config keys: transformers reads past them, and computes these only
    if (const auto f = r.text("scoring_func"); f && *f != "sigmoid")
        r.fault("scoring_func", "\"" + printable(*f, 40) + "\" is not what DeepseekV3MoE computes (a sigmoid): DeepSeek-V2's softmax router is another family");
    if (const auto t = r.text("topk_method"); t && *t != "noaux_tc")
        r.fault("topk_method", "\"" + printable(*t, 40) + "\" is not what DeepseekV3MoE computes (\"noaux_tc\": the groups, the biased choice)");
    if (r.has("moe_layer_freq") && r.integer("moe_layer_freq", 1, kMaxLayers, 1) != 1)
        r.fault("moe_layer_freq", "is not 1: transformers makes every layer from first_k_dense_replace on a mixture, DeepSeek's own code "
                                  "only every moe_layer_freq-th; the two would not agree");
    if (const json* q = r.find("quantization_config"); q != nullptr)
        r.fault("quantization_config", shown(*q) + " is not read: FP8 weights (DeepSeek-V3 as published) are not widened here; "
                                       "open a BF16 or float32 conversion");
}

void read_gpt_neox(ConfigReader& r, ModelSpec& spec) {
    spec.vocab_size = r.integer("vocab_size", 1, kMaxVocab, std::nullopt);
    spec.d_model = r.integer("hidden_size", 1, kMaxWidth, std::nullopt);
    spec.d_ff = r.integer("intermediate_size", 1, 1 << 20, std::nullopt);
    spec.n_layers = r.integer("num_hidden_layers", 1, kMaxLayers, std::nullopt);
    spec.n_heads = r.integer("num_attention_heads", 1, kMaxHeads, std::nullopt);
    spec.n_kv_heads = spec.n_heads;
    if (spec.n_heads > 0 && spec.d_model % spec.n_heads != 0)
        r.fault("hidden_size " + std::to_string(spec.d_model) + " is not divisible by num_attention_heads " + std::to_string(spec.n_heads));
    spec.head_dim = spec.n_heads > 0 ? spec.d_model / spec.n_heads : 0;
    spec.norm = {NormKind::layer_norm, false, r.number("layer_norm_eps", 0, 1, 1e-5), true};
    spec.activation = read_activation(r, "hidden_act", "gelu");
    // 4.x: rotary_pct, rotary_emb_base; 5.x: rope_parameters {rope_theta, partial_rotary_factor}
    double partial = r.number("rotary_pct", 0, 1.0000001, 0.25);
    if (r.has("partial_rotary_factor")) partial = r.number("partial_rotary_factor", 0, 1.0000001, partial);
    double theta = r.number("rotary_emb_base", 0, 1e12, 10000.0);
    if (r.has("rope_theta")) theta = r.number("rope_theta", 0, 1e12, theta);
    const RopeScaling scaling = read_rope(r, theta, &partial);
    if (scaling.kind == RopeScalingKind::llama3) r.fault("rope_scaling", "type \"llama3\" is not one GPT-NeoX reads here; expected \"linear\" or null");
    spec.rotary_dim = static_cast<int>(spec.head_dim * partial);   // int(head_size * rotary_pct)
    if (spec.rotary_dim % 2 != 0) r.fault("rotary_pct", "head_dim·rotary_pct = " + std::to_string(spec.rotary_dim) + " is odd; RoPE rotates pairs");
    spec.positions = PositionKind::rope;
    spec.layout = r.flag("use_parallel_residual", true) ? BlockLayout::parallel_residual : BlockLayout::pre_norm;
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", true);
    spec.mlp = MlpKind::plain;
    spec.mlp_bias = true;
    spec.tied_lm_head = r.flag("tie_word_embeddings", false);
    spec.attention_scale = spec.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(spec.head_dim)) : 0;
    uniform_layers(spec, theta, scaling);
}

void read_bert(ConfigReader& r, ModelSpec& spec) {
    spec.vocab_size = r.integer("vocab_size", 1, kMaxVocab, std::nullopt);
    spec.d_model = r.integer("hidden_size", 1, kMaxWidth, std::nullopt);
    spec.d_ff = r.integer("intermediate_size", 1, 1 << 20, std::nullopt);
    spec.n_layers = r.integer("num_hidden_layers", 1, kMaxLayers, std::nullopt);
    spec.n_heads = r.integer("num_attention_heads", 1, kMaxHeads, std::nullopt);
    spec.n_kv_heads = spec.n_heads;
    if (spec.n_heads > 0 && spec.d_model % spec.n_heads != 0)
        r.fault("hidden_size " + std::to_string(spec.d_model) + " is not divisible by num_attention_heads " + std::to_string(spec.n_heads));
    spec.head_dim = spec.n_heads > 0 ? spec.d_model / spec.n_heads : 0;
    spec.positions_key = "max_position_embeddings";
    spec.max_positions = r.integer(spec.positions_key, 1, kMaxPositions, 512);
    spec.type_vocab_size = r.integer("type_vocab_size", 1, 1 << 16, 2);
    spec.norm = {NormKind::layer_norm, false, r.number("layer_norm_eps", 0, 1, 1e-12), true};
    spec.activation = read_activation(r, "hidden_act", "gelu");
    spec.mlm_activation = spec.activation;   // BertPredictionHeadTransform: ACT2FN[config.hidden_act]
    if (const auto type = r.text("position_embedding_type"); type && *type != "absolute")
        r.fault("position_embedding_type", "\"" + printable(*type, 40) + "\" is not supported; expected \"absolute\"");
    r.only("is_decoder", false, "BERT is read as the bidirectional encoder of BertForMaskedLM");
    r.only("add_cross_attention", false, "BERT is read as an encoder without cross-attention");
    spec.tied_lm_head = r.flag("tie_word_embeddings", true);
    spec.positions = PositionKind::learned_absolute;
    spec.qkv_bias = spec.o_bias = spec.mlp_bias = true;
    spec.mlp = MlpKind::plain;
    spec.layout = BlockLayout::post_norm;
    spec.embedding_norm = true;
    spec.head = HeadKind::masked_lm;
    spec.final_norm = false;
    spec.lm_head_bias = true;
    spec.attention_scale = spec.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(spec.head_dim)) : 0;
    uniform_layers(spec, 0, {});
    for (LayerSpec& layer : spec.layers) layer.causal = false;
}


// ModernBERT (ModernBertForMaskedLM): an encoder of pre-norm blocks. LayerNorms without a bias unless
// norm_bias (the first layer's attention reads the embeddings' norm as it is: its attn_norm is an identity),
// RoPE on the whole head, Q, K and V from one Wqkv, a GeGLU MLP (act(first half) ⊙ second half of Wi) and
// no biases unless attention_bias / mlp_bias; then the final norm and BERT's MLM transform (dense, with
// classifier_bias, classifier_activation, the norm) before the decoder tied to the embedding, with
// decoder_bias. Layers are "full_attention" or "sliding_attention" (layer_types, else sliding unless ℓ is a
// multiple of global_attn_every_n_layers); a sliding layer's query sees the keys within local_attention / 2
// on either side (create_bidirectional_sliding_window_mask: |i − j| ≤ W). The RoPE bases: global_rope_theta
// and local_rope_theta, or rope_parameters' "full_attention" and "sliding_attention" entries (which win, as
// ModernBertConfig's setdefault has it); rope_scaling applies to both kinds.
void read_modernbert(ConfigReader& r, ModelSpec& spec) {
    spec.vocab_size = r.integer("vocab_size", 1, kMaxVocab, 50368);
    spec.d_model = r.integer("hidden_size", 1, kMaxWidth, 768);
    spec.d_ff = r.integer("intermediate_size", 1, 1 << 20, 1152);
    spec.n_layers = r.integer("num_hidden_layers", 1, kMaxLayers, 22);
    spec.n_heads = r.integer("num_attention_heads", 1, kMaxHeads, 12);
    spec.n_kv_heads = spec.n_heads;
    if (spec.n_heads > 0 && spec.d_model % spec.n_heads != 0)
        r.fault("hidden_size " + std::to_string(spec.d_model) + " is not divisible by num_attention_heads " + std::to_string(spec.n_heads));
    spec.head_dim = spec.n_heads > 0 ? spec.d_model / spec.n_heads : 0;
    spec.rotary_dim = spec.head_dim;
    spec.norm = {NormKind::layer_norm, false, r.number("norm_eps", 0, 1, 1e-5), r.flag("norm_bias", false)};
    spec.activation = read_activation(r, "hidden_activation", "gelu");
    spec.mlm_activation = read_activation(r, "classifier_activation", "gelu");
    spec.qkv_bias = spec.o_bias = r.flag("attention_bias", false);
    r.only("mlp_bias", false, "the engine's gated feed-forward has no biases, as every published ModernBERT");
    spec.mlm_dense_bias = r.flag("classifier_bias", false);
    spec.lm_head_bias = r.flag("decoder_bias", true);
    spec.tied_lm_head = r.flag("tie_word_embeddings", true);
    spec.positions = PositionKind::rope;
    spec.mlp = MlpKind::gated;
    spec.layout = BlockLayout::pre_norm;
    spec.embedding_norm = true;
    spec.final_norm = true;
    spec.head = HeadKind::masked_lm;
    spec.attention_scale = spec.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(spec.head_dim)) : 0;
    // The RoPE of each kind of layer
    double global_theta = r.number("global_rope_theta", 0, 1e12, 160000.0), local_theta = r.number("local_rope_theta", 0, 1e12, 10000.0);
    RopeScaling global_scaling, local_scaling;
    if (const json* scaling = r.find("rope_scaling")) {  // read once (a fault named once), for both kinds
        const double theta_before = global_theta;
        global_scaling = read_rope_object(r, "rope_scaling", *scaling, global_theta, nullptr, false, false, false);
        local_scaling = global_scaling;
        if (global_theta != theta_before) local_theta = global_theta;  // a rope_theta inside it is both kinds'
    }
    if (const json* parameters = r.find("rope_parameters")) {
        if (!parameters->is_object()) r.fault("rope_parameters", "expected {\"full_attention\": {…}, \"sliding_attention\": {…}}, found " + shown(*parameters));
        else
            for (const auto& [kind, object] : parameters->items()) {
                const bool full = kind == "full_attention";
                if (!full && kind != "sliding_attention") {
                    r.fault("rope_parameters", "'" + printable(kind, 40) + "' is not a kind of layer; expected \"full_attention\" and "
                                               "\"sliding_attention\", each with its RoPE");
                    continue;
                }
                if (object.is_null()) continue;
                if (!object.is_object()) {
                    r.fault("rope_parameters", "'" + kind + "': expected an object such as {\"rope_type\": \"default\", \"rope_theta\": 10000}, found " +
                                                   shown(object));
                    continue;
                }
                (full ? global_scaling : local_scaling) =
                    read_rope_object(r, "rope_parameters." + kind, object, full ? global_theta : local_theta, nullptr, false, false,
                                     false);
            }
    }
    const int half_window = r.integer("local_attention", 2, 1 << 30, 128) / 2;  // ModernBertConfig.sliding_window
    uniform_layers(spec, global_theta, global_scaling);
    std::optional<std::vector<bool>> sliding = read_layer_types(r, spec.n_layers);
    const int every = r.integer("global_attn_every_n_layers", 1, kMaxLayers, 3);
    if (!sliding) {
        sliding.emplace();
        for (int l = 0; l < spec.n_layers; ++l) sliding->push_back(l % every != 0);
    }
    for (int l = 0; l < spec.n_layers; ++l) {
        LayerSpec& layer = spec.layers[static_cast<std::size_t>(l)];
        layer.causal = false;
        if ((*sliding)[static_cast<std::size_t>(l)]) {
            layer.window = half_window;
            layer.rope_theta = local_theta;
            layer.rope_scaling = local_scaling;
        }
    }
    if (!spec.layers.empty()) spec.layers[0].attn_norm = false;  // ModernBertEncoderLayer: attn_norm = nn.Identity() when layer_idx == 0
}

}  // namespace attn::hf
