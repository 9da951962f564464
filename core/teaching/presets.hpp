#pragma once
// The presets: the articles' worked examples (with the numbers each article prints) and
// the sentences they use to motivate attention.
#include <string>
#include <vector>

#include "attention/scenario.hpp"

namespace attn {

// One quantity an article prints: `printed[i]` is the article's value for
// matrix(row, first_col + i). The tolerance is half a unit in the last printed digit.
struct PrintedValue {
    std::string quantity;      // "attention weights, row 1"
    std::string matrix;        // a trace matrix name (see find_matrix): "head0.weights"
    int row = 0;
    int first_col = 0;
    std::vector<double> printed;
    int decimals = 2;          // digits after the point as printed
    std::string explanation;   // where the printed arithmetic goes wrong (mismatches only)
};

struct Preset {
    std::string name;          // command-line name: "dot-product-3-tokens"
    std::string title;
    std::string description;
    std::string article;       // the source article, "" for product presets
    Scenario scenario;
    std::vector<PrintedValue> printed;
};

const std::vector<Preset>& presets();
const Preset* find_preset(const std::string& name);
// The preset `scenario` is, unedited (every field equal, reflect.hpp), or null. A scenario
// that keeps a preset's name after an edit is that preset no longer: its description and
// the article's printed numbers do not describe it.
const Preset* exact_preset(const Scenario& scenario);
const char* default_preset_name();
// Where --text starts when no preset is named: a sentence in embedding mode.
const char* default_sentence_preset_name();

}  // namespace attn
