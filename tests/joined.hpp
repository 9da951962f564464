#pragma once
// Error lists as one text, one message per line, for Contains(…) matchers.
#include <string>
#include <vector>

namespace attn::testing {

inline std::string joined(const std::vector<std::string>& errors) {
    std::string s;
    for (const auto& e : errors) s += e + "\n";
    return s;
}

}  // namespace attn::testing
