#pragma once
// A scenario as the differences from another it was made from: what a session keeps of a
// checkpoint's layer opened in the pipeline. The layer itself (GPT-2 small's: W_Q, W_K, W_V,
// W_O 768 × 768, W_1 768 × 3072, W_2 3072 × 768, about 7 million numbers, 190 MB as JSON) is
// the model's, made again from its folder; the file holds only what the user changed:
//
//   {"cells":    {"w_q": [[row, col, value], …], "embeddings": [[row, col, value], …],
//                 "b_q": [[index, value], …], "block.w_1": …, "block.norm_1.gamma": …},
//    "settings": {"mask": "window", "window": 3, "block": {"epsilon": 0.001}, …}}
//
// "cells": every number of a weight, X, a bias or a norm's γ or β that differs from the base,
// bit for bit, rows and columns counted from 0 (a vector's cells are [index, value]); values
// are float32 written as JSON numbers, NaN and ±∞ as "nan", "inf", "-inf", as in a scenario
// file. "settings": the rest of the scenario file's keys (docs/file-formats.md: the scenario
// file) as a JSON merge patch (RFC 7386) of the base's: a key set to its new value, a key
// removed set to null, an object ("block", "rope") patched key by key. A matrix whose shape
// changed (the seed changed: the weights seeded again) is a setting of its own, written whole.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/scenario.hpp"
#include "attention/serialize.hpp"

namespace attn {

// What turns `base` into `edited`, as above. A weight that still shares its values with the
// base's (the same SharedMatrix version) is not read: only what an edit copied is compared.
nlohmann::json scenario_edits_to_json(const Scenario& base, const Scenario& edited);

// `base` with the edits applied. Every fault is an error naming `where` (e.g. "s.json: key
// 'model.layer_edits'"), the key and the cell: an unknown matrix or key, a cell outside its
// matrix ("cells.w_q': cell [800, 3] is outside W_Q's 768 × 768"), a value that is not a number.
// The base's weights are shared, not copied, except those the edits change.
ScenarioLoad apply_scenario_edits(const Scenario& base, const nlohmann::json& edits, const std::string& where);

// The form of the edits alone, before there is a base to apply them to: the keys, each
// cell's [row, col, value] or [index, value]. Empty when well formed.
std::vector<std::string> scenario_edits_faults(const nlohmann::json& edits, const std::string& where);

// How many numbers the edits change (the cells of every matrix): what a notice counts.
int edited_cell_count(const nlohmann::json& edits);

}  // namespace attn
