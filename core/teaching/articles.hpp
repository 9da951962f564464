#pragma once
#include <string>
#include <vector>

#include "teaching/presets.hpp"
#include "attention/trace.hpp"

namespace attn {

struct Verdict {
    std::string preset;
    std::string article;
    std::string quantity;
    std::vector<double> printed;
    std::vector<double> computed;
    double tolerance = 0.0;
    bool match = false;
    std::string explanation;   // set for mismatches
};

// Compares every printed value of the preset with the trace computed from it.
std::vector<Verdict> check_preset(const Preset& preset, const Trace& trace);
// Every preset that carries printed numbers.
std::vector<Verdict> check_articles();

}  // namespace attn
