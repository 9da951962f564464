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

const char* to_string(NormPlacement n) { return n == NormPlacement::Pre ? "pre" : "post"; }
const char* to_string(Activation a) { return a == Activation::GeluTanh ? "gelu" : "relu"; }

std::optional<NormPlacement> norm_placement_from_string(const std::string& s) {
    if (s == "post") return NormPlacement::Post;
    if (s == "pre") return NormPlacement::Pre;
    return std::nullopt;
}

std::optional<Activation> activation_from_string(const std::string& s) {
    if (s == "relu") return Activation::ReLU;
    if (s == "gelu" || s == "gelu_new" || s == "gelu_tanh") return Activation::GeluTanh;
    return std::nullopt;
}

std::optional<AttentionKind> attention_from_string(const std::string& s) {
    if (s == "self") return AttentionKind::Self;
    if (s == "cross") return AttentionKind::Cross;
    return std::nullopt;
}

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

std::vector<std::string> tokenize(const std::string& raw_text) {
    const std::string text = valid_utf8(raw_text);
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
