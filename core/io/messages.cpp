#include "io/messages.hpp"

#include <cstddef>
#include <cstdio>
#include <utility>

namespace attn {

std::string valid_utf8(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    for (size_t i = 0; i < n;) {
        const unsigned char c = p[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2);
        for (size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xC0) == 0x80;
        if (ok && len == 3) {
            const unsigned cp = ((c & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
            ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);  // no overlong forms, no surrogates
        }
        if (ok && len == 4) {
            const unsigned cp = ((c & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) | ((p[i + 2] & 0x3Fu) << 6) | (p[i + 3] & 0x3Fu);
            ok = cp >= 0x10000 && cp <= 0x10FFFF;
        }
        if (ok) {
            out.append(text, i, len);
            i += len;
        } else {
            out += "\xEF\xBF\xBD";  // U+FFFD
            ++i;
        }
    }
    return out;
}

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
