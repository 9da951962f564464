#include "mask.hpp"

namespace attn {

MaskMatrix causal_mask(int n_queries, int n_keys) {
    MaskMatrix m(n_queries, n_keys);
    for (int i = 0; i < n_queries; ++i)
        for (int j = 0; j < n_keys; ++j) m(i, j) = j <= i;
    return m;
}

MaskMatrix padding_mask(int n_queries, const std::vector<bool>& key_is_padding, int n_keys) {
    MaskMatrix m(n_queries, n_keys);
    for (int j = 0; j < n_keys; ++j) {
        const bool padded = j < static_cast<int>(key_is_padding.size()) && key_is_padding[j];
        m.col(j).setConstant(!padded);
    }
    return m;
}

MaskMatrix sliding_window_mask(int n_queries, int n_keys, int window) {
    MaskMatrix m(n_queries, n_keys);
    for (int i = 0; i < n_queries; ++i)
        for (int j = 0; j < n_keys; ++j) m(i, j) = j <= i && j > i - window;
    return m;
}

MaskMatrix build_mask(MaskKind kind, int n_queries, int n_keys, int window,
                      const std::vector<bool>& key_is_padding, const MaskMatrix& custom) {
    switch (kind) {
        case MaskKind::Causal: return causal_mask(n_queries, n_keys);
        case MaskKind::Padding: return padding_mask(n_queries, key_is_padding, n_keys);
        case MaskKind::SlidingWindow: return sliding_window_mask(n_queries, n_keys, window);
        case MaskKind::Custom: return custom;
        case MaskKind::None: break;
    }
    return MaskMatrix::Constant(n_queries, n_keys, true);
}

}  // namespace attn
