#pragma once
// What the GPT-2 readers share to word their messages: text made printable, and a bounded
// list of messages so a file with a million bad lines gives twenty and a count.
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace attn::gpt2::detail {

// Control characters as \xNN, at most max_bytes bytes of the text and "…" after.
inline std::string printable(const std::string& text, std::size_t max_bytes = 200) {
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

// Messages "SOURCE: …", the first kMax of them, then "SOURCE: … and N more problems".
struct Faults {
    static constexpr std::size_t kMax = 20;
    std::string source;
    std::vector<std::string> messages;
    std::size_t dropped = 0;

    explicit Faults(std::string source_name) : source(std::move(source_name)) {}
    void add(const std::string& what) {
        if (messages.size() < kMax) messages.push_back(source + ": " + what);
        else ++dropped;
    }
    bool empty() const { return messages.empty(); }
    // Appends the messages to errors and empties this list; true when there were none.
    bool flush_into(std::vector<std::string>& errors) {
        const bool none = messages.empty();
        if (dropped > 0) messages.push_back(source + ": … and " + std::to_string(dropped) + " more problems");
        errors.insert(errors.end(), messages.begin(), messages.end());
        messages.clear();
        dropped = 0;
        return none;
    }
};

}  // namespace attn::gpt2::detail
