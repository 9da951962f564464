#pragma once
// Reading one config.json: ConfigReader (each key read once, every fault a message naming the
// key) and each family's reader, one row of the family table apiece (spec.cpp). The readers
// themselves are in config_readers.cpp, each from transformers' configuration_<family>.py (its
// keys and defaults) and modeling_<family>.py (what they do).
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "io/messages.hpp"  // Faults
#include "model/hf/spec.hpp"

namespace attn::hf {

// The largest sizes a config may give: past them a file is refused as no model this app can hold.
inline constexpr int kMaxLayers = 1024, kMaxHeads = 1024, kMaxWidth = 1 << 16, kMaxVocab = 1 << 22, kMaxPositions = 1 << 24;

// A value as a message quotes it: JSON, at most 80 characters.
std::string shown(const nlohmann::json& value);
// Why a config's number cannot be computed with as float32, or empty: one that rounds to 0 (a
// soft-cap of 1e-300 would turn capping off), to a subnormal (its precision lost) or to ±∞.
std::string lost_in_float32(double value);

// One config's keys, read once each, every fault a message naming the key.
class ConfigReader {
public:
    ConfigReader(const nlohmann::json& document, Faults& faults) : j_(document), faults_(faults) {}

    const nlohmann::json* find(const std::string& key) {
        read_.insert(key);
        const auto it = j_.find(key);
        return it == j_.end() || it->is_null() ? nullptr : &*it;
    }
    bool has(const std::string& key) { return find(key) != nullptr; }

    // An integer in [low, high]; absent or null → fallback, or a message when there is none.
    int integer(const std::string& key, int low, int high, std::optional<int> fallback) {
        const nlohmann::json* v = find(key);
        if (!v) {
            if (!fallback) fault(key, "missing (expected an integer from " + std::to_string(low) + " to " + std::to_string(high) + ")");
            return fallback.value_or(0);
        }
        if (!v->is_number_integer() || v->get<std::int64_t>() < low || v->get<std::int64_t>() > high) {
            fault(key, "expected an integer from " + std::to_string(low) + " to " + std::to_string(high) + ", found " + shown(*v));
            return fallback.value_or(0);
        }
        return static_cast<int>(v->get<std::int64_t>());
    }
    // A number in (low, high); absent or null → fallback.
    double number(const std::string& key, double low, double high, double fallback) {
        const nlohmann::json* v = find(key);
        if (!v) return fallback;
        if (!v->is_number() || !(v->get<double>() > low) || !(v->get<double>() < high)) {
            fault(key, "expected a number between " + shown(nlohmann::json(low)) + " and " + shown(nlohmann::json(high)) + ", found " + shown(*v));
            return fallback;
        }
        if (const std::string why = lost_in_float32(v->get<double>()); !why.empty()) {
            fault(key, shown(*v) + " " + why);
            return fallback;
        }
        return v->get<double>();
    }
    // Whether the key is written as null (find() reads null as absent, which most keys mean).
    bool is_null(const std::string& key) {
        read_.insert(key);
        const auto it = j_.find(key);
        return it != j_.end() && it->is_null();
    }
    bool flag(const std::string& key, bool fallback) {
        const nlohmann::json* v = find(key);
        if (!v) return fallback;
        if (!v->is_boolean()) {
            fault(key, "expected true or false, found " + shown(*v));
            return fallback;
        }
        return v->get<bool>();
    }
    std::optional<std::string> text(const std::string& key) {
        const nlohmann::json* v = find(key);
        if (!v) return std::nullopt;
        if (!v->is_string()) {
            fault(key, "expected a string, found " + shown(*v));
            return std::nullopt;
        }
        return v->get<std::string>();
    }
    // A key whose only supported value is `expected` (absent or null is the default, supported).
    void only(const std::string& key, bool expected, const std::string& why) {
        const nlohmann::json* v = find(key);
        if (v && (!v->is_boolean() || v->get<bool>() != expected)) fault(key, shown(*v) + " is not supported: " + why);
    }
    void fault(const std::string& key, const std::string& what) { faults_.add("key '" + key + "': " + what); }
    void fault(const std::string& what) { faults_.add(what); }

    const std::set<std::string>& read() const { return read_; }

private:
    const nlohmann::json& j_;
    Faults& faults_;
    std::set<std::string> read_;
};

// The special tokens' ids the config names (bos, eos: one or a list, pad), recorded in the spec.
void read_token_ids(const nlohmann::json& j, ModelSpec& spec, Faults& faults);

// Each family's reader: its keys into the spec, every fault a message.
void read_gpt2(ConfigReader& r, ModelSpec& spec);
void read_llama(ConfigReader& r, ModelSpec& spec);
void read_diffllama(ConfigReader& r, ModelSpec& spec);
void read_mistral(ConfigReader& r, ModelSpec& spec);
void read_ministral(ConfigReader& r, ModelSpec& spec);
void read_qwen2(ConfigReader& r, ModelSpec& spec);
void read_qwen3(ConfigReader& r, ModelSpec& spec);
void read_gemma(ConfigReader& r, ModelSpec& spec, bool gemma3);
void read_olmo2(ConfigReader& r, ModelSpec& spec);
void read_phi3(ConfigReader& r, ModelSpec& spec);
void read_smollm3(ConfigReader& r, ModelSpec& spec);
void read_qwen3_moe(ConfigReader& r, ModelSpec& spec);
void read_qwen2_moe(ConfigReader& r, ModelSpec& spec);
void read_qwen3_next(ConfigReader& r, ModelSpec& spec);
void read_qwen3_5(ConfigReader& r, ModelSpec& spec);
void read_qwen3_5_moe(ConfigReader& r, ModelSpec& spec);
void read_mixtral(ConfigReader& r, ModelSpec& spec);
void read_gpt_oss(ConfigReader& r, ModelSpec& spec);
void read_llama4(ConfigReader& r, ModelSpec& spec);
void read_deepseek_v3(ConfigReader& r, ModelSpec& spec);
void read_gpt_neox(ConfigReader& r, ModelSpec& spec);
void read_bert(ConfigReader& r, ModelSpec& spec);
void read_modernbert(ConfigReader& r, ModelSpec& spec);

}  // namespace attn::hf
