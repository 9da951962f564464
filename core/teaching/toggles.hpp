#pragma once
// The switches a user flips on top of a scenario, from the command line, a lesson step or
// a comparison: each one optional, applied in one place.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/scenario.hpp"

namespace attn {

struct Toggles {
    std::optional<std::string> preset;       // the scenario becomes this preset's (the others go on top)
    std::optional<MaskKind> mask;
    std::optional<int> window;
    std::optional<int> heads;
    std::optional<PositionalEncoding> positional;
    std::optional<SoftmaxKind> softmax;
    std::optional<bool> scale;
    std::optional<float> masked_fill;
    std::optional<std::uint64_t> seed;
    std::optional<std::string> text;         // replaces the tokens with this sentence
    std::optional<std::string> source_text;  // replaces the source tokens (cross-attention)
    std::optional<AttentionKind> attention;
    std::optional<bool> block;               // residual + LayerNorm + FFN together
    // With "mask": "custom": these query rows (counted from 1) see no key at all — the case
    // where a finite fill and −∞ differ.
    std::optional<std::vector<int>> hidden_rows;

    bool empty() const;
};

// Applies the toggles. false with *error set when one cannot apply (e.g. text on a
// direct Q/K/V scenario); the scenario is then unchanged.
bool apply(const Toggles& toggles, Scenario& scenario, std::string* error);

// Reads {"mask": "causal", "heads": 2, ...}; errors name the key ("where" prefixes them).
Toggles toggles_from_json(const nlohmann::json& j, const std::string& where, std::vector<std::string>& errors);
nlohmann::json toggles_to_json(const Toggles& toggles);

}  // namespace attn
