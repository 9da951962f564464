#pragma once
// What every reader of a file (a checkpoint, a tokenizer, the hub's cache and its answers)
// shares to word its messages: text made valid UTF-8 or printable, and a bounded list of
// messages so a file with a million bad lines gives twenty and a count.
#include <cstddef>
#include <string>
#include <vector>

namespace attn {

// The text with every invalid UTF-8 sequence (overlong forms, surrogates, truncated or stray
// bytes) replaced by U+FFFD, so that it can be drawn and written to JSON.
std::string valid_utf8(const std::string& text);

// Control characters as \xNN, at most max_bytes bytes of the text and "…" after.
std::string printable(const std::string& text, std::size_t max_bytes = 200);

// Messages "SOURCE: …", the first kMax of them, then "SOURCE: … and N more problems".
struct Faults {
    static constexpr std::size_t kMax = 20;
    std::string source;
    std::vector<std::string> messages;
    std::size_t dropped = 0;

    explicit Faults(std::string source_name);
    void add(const std::string& what);
    bool empty() const { return messages.empty(); }
    // Appends the messages to errors and empties this list; true when there were none.
    bool flush_into(std::vector<std::string>& errors);
};

}  // namespace attn
