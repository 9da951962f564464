#pragma once
// A cell's explanation (ui::explain_cell) as one text, its heading then its lines, for
// Contains(…) matchers.
#include <string>

#include "ui/arithmetic.hpp"

namespace attn::testing {

inline std::string joined(const ui::Explanation& e) {
    std::string all = e.heading + "\n";
    for (const std::string& line : e.lines) all += line + "\n";
    return all;
}

}  // namespace attn::testing
