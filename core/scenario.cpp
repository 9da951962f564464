#include "scenario.hpp"

#include <cctype>

namespace attn {

const char* to_string(InputMode m) { return m == InputMode::Direct ? "direct" : "embeddings"; }

const char* to_string(PositionalEncoding p) {
    switch (p) {
        case PositionalEncoding::None: return "none";
        case PositionalEncoding::Sinusoidal: return "sinusoidal";
        case PositionalEncoding::Learned: return "learned";
        case PositionalEncoding::Rotary: return "rope";
        case PositionalEncoding::ALiBi: return "alibi";
    }
    return "none";
}

const char* to_string(MaskKind m) {
    switch (m) {
        case MaskKind::None: return "none";
        case MaskKind::Causal: return "causal";
        case MaskKind::Padding: return "padding";
        case MaskKind::SlidingWindow: return "window";
        case MaskKind::Custom: return "custom";
    }
    return "none";
}

const char* to_string(SoftmaxKind s) { return s == SoftmaxKind::Naive ? "naive" : "stable"; }
const char* to_string(AttentionKind a) { return a == AttentionKind::Cross ? "cross" : "self"; }

std::optional<PositionalEncoding> positional_from_string(const std::string& s) {
    for (auto p : {PositionalEncoding::None, PositionalEncoding::Sinusoidal, PositionalEncoding::Learned,
                   PositionalEncoding::Rotary, PositionalEncoding::ALiBi})
        if (s == to_string(p)) return p;
    if (s == "rotary") return PositionalEncoding::Rotary;
    return std::nullopt;
}

std::optional<MaskKind> mask_from_string(const std::string& s) {
    for (auto m : {MaskKind::None, MaskKind::Causal, MaskKind::Padding, MaskKind::SlidingWindow, MaskKind::Custom})
        if (s == to_string(m)) return m;
    if (s == "sliding_window" || s == "sliding-window") return MaskKind::SlidingWindow;
    return std::nullopt;
}

std::optional<SoftmaxKind> softmax_from_string(const std::string& s) {
    if (s == "stable") return SoftmaxKind::Stable;
    if (s == "naive") return SoftmaxKind::Naive;
    return std::nullopt;
}

std::optional<AttentionKind> attention_from_string(const std::string& s) {
    if (s == "self") return AttentionKind::Self;
    if (s == "cross") return AttentionKind::Cross;
    return std::nullopt;
}

std::vector<std::string> tokenize(const std::string& text) {
    std::vector<std::string> tokens;
    std::string current;
    auto flush = [&] {
        if (!current.empty()) tokens.push_back(current);
        current.clear();
    };
    for (unsigned char c : text) {
        if (std::isspace(c)) {
            flush();
        } else if (c < 0x80 && std::ispunct(c) && c != '\'' && c != '-') {
            flush();
            tokens.emplace_back(1, static_cast<char>(c));
        } else {
            current.push_back(static_cast<char>(c));
        }
    }
    flush();
    return tokens;
}

}  // namespace attn
