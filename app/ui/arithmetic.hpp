#pragma once
// The arithmetic behind one cell of the trace, written out with the real numbers: the
// hover tooltip of every heatmap. Pure text, no ImGui.
#include <string>
#include <vector>

#include "attention/scenario.hpp"
#include "attention/registry.hpp"
#include "attention/trace.hpp"

namespace attn::ui {

struct Explanation {
    std::string heading;             // "softmax weight, query 'cat' → key 'sat'"
    std::vector<std::string> lines;  // one step per line, numbers included
};

// `matrix` is a trace matrix name ("head0.weights", "x_pe", "output", …); row and col
// index that matrix. Unknown names give a heading with the value only. Everything is read
// from the trace and the settings it carries, never from a scenario that may be newer.
// x_meaning: what X is when a view made the scenario (a model's layer: the residual stream
// entering it); empty: the scenario's own embeddings.
Explanation explain_cell(const Trace& trace, const std::string& matrix, int row, int col, const std::string& x_meaning = {});

using attn::format_value;  // registry.hpp: the one number format

}  // namespace attn::ui
