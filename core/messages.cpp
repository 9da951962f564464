#include "messages.hpp"

#include <cstdio>
#include <utility>

namespace attn {

std::string printable(const std::string& text, std::size_t max_bytes) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (i >= max_bytes && (c & 0xC0) != 0x80) return out + "…";
        if (c < 0x20 || c == 0x7F) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

Faults::Faults(std::string source_name) : source(std::move(source_name)) {}

void Faults::add(const std::string& what) {
    if (messages.size() < kMax) messages.push_back(source + ": " + what);
    else ++dropped;
}

bool Faults::flush_into(std::vector<std::string>& errors) {
    const bool none = messages.empty();
    if (dropped > 0) messages.push_back(source + ": … and " + std::to_string(dropped) + " more problems");
    errors.insert(errors.end(), messages.begin(), messages.end());
    messages.clear();
    dropped = 0;
    return none;
}

}  // namespace attn
