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

// Whether one of the messages holds `text`.
inline bool says(const std::vector<std::string>& errors, const std::string& text) {
    for (const std::string& e : errors)
        if (e.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace attn::testing
