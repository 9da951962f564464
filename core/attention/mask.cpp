#include "attention/mask.hpp"

#include <algorithm>

namespace attn {

bool MaskRule::visible(int i, int j) const {
    switch (kind) {
        case MaskKind::None: return true;
        case MaskKind::Causal: return j <= i;                           // no key after the query
        case MaskKind::SlidingWindow: return j <= i && j > i - window;  // the last w keys up to the query
        case MaskKind::Padding:
            return !(key_is_padding && j < static_cast<int>(key_is_padding->size()) && (*key_is_padding)[static_cast<size_t>(j)]);
        case MaskKind::Custom: return custom != nullptr && (*custom)(i, j);
        case MaskKind::Chunked: return j <= i && j >= chunk_start(i);   // the keys of the query's own chunk, up to it
        case MaskKind::Band: return j >= i - window && j <= i + window;  // w keys either side of the query, and its own
    }
    return true;
}

void MaskRule::visible_run(int i, int& first, int& last) const {
    first = 0;
    last = n_keys;
    if (kind == MaskKind::Band) {
        first = std::clamp(i - window, 0, n_keys);
        last = std::clamp(i + window + 1, first, n_keys);
    } else if (kind == MaskKind::Causal || kind == MaskKind::SlidingWindow || kind == MaskKind::Chunked) {
        first = kind == MaskKind::Causal          ? 0
                : kind == MaskKind::SlidingWindow ? std::clamp(i - window + 1, 0, n_keys)
                                                  : std::clamp(chunk_start(i), 0, n_keys);
        last = std::clamp(i + 1, first, n_keys);
    }
}

bool MaskRule::block_hidden(int i0, int i1, int j0, int j1) const {
    switch (kind) {
        case MaskKind::None: return false;
        case MaskKind::Causal: return j0 > i1 - 1;                                  // every key after every query
        case MaskKind::SlidingWindow: return j0 > i1 - 1 || j1 - 1 <= i0 - window;  // after, or before the window
        case MaskKind::Padding:
            for (int j = j0; j < j1; ++j)
                if (visible(i0, j)) return false;
            return true;
        case MaskKind::Custom: return false;  // checked per cell
        // after every query, or before the chunk of the first (chunk starts never fall as i grows)
        case MaskKind::Chunked: return j0 > i1 - 1 || j1 - 1 < chunk_start(i0);
        case MaskKind::Band: return j0 > i1 - 1 + window || j1 - 1 < i0 - window;  // after the last query's band, or before the first's
    }
    return false;
}

bool MaskRule::block_visible(int i0, int i1, int j0, int j1) const {
    switch (kind) {
        case MaskKind::None: return true;
        case MaskKind::Causal: return j1 - 1 <= i0;                                  // every key at or before every query
        case MaskKind::SlidingWindow: return j1 - 1 <= i0 && j0 > i1 - 1 - window;  // and inside every query's window
        case MaskKind::Chunked: return j1 - 1 <= i0 && j0 >= chunk_start(i1 - 1);    // and in the last query's chunk
        case MaskKind::Band: return j0 >= i1 - 1 - window && j1 - 1 <= i0 + window;  // inside every query's band
        default: return false;                                                      // checked per cell
    }
}

bool MaskRule::row_sees_a_key(int i) const {
    if (is_run()) {
        int first = 0, last = 0;
        visible_run(i, first, last);
        return first < last;
    }
    for (int j = 0; j < n_keys; ++j)  // stops at the first visible key
        if (visible(i, j)) return true;
    return false;
}

const std::vector<bool>& key_padding(const Scenario& s) {
    return s.input == InputMode::Embeddings && s.attention == AttentionKind::Cross ? s.source.padding : s.target.padding;
}

MaskRule mask_rule(const Scenario& s, int n_keys) {
    MaskRule rule;
    rule.kind = s.mask;
    rule.window = s.window;
    rule.chunk = std::max(s.chunk, 1);
    rule.n_keys = n_keys;
    rule.key_is_padding = &key_padding(s);
    rule.custom = &s.custom_mask;
    return rule;
}

MaskMatrix mask_matrix(const MaskRule& rule, int n_queries) {
    if (rule.kind == MaskKind::Custom && rule.custom != nullptr) return *rule.custom;
    MaskMatrix m(n_queries, rule.n_keys);
    for (int i = 0; i < n_queries; ++i) {
        if (rule.is_run()) {  // one run per row: fill by ranges
            int first = 0, last = 0;
            rule.visible_run(i, first, last);
            m.row(i).setConstant(false);
            m.row(i).segment(first, last - first).setConstant(true);
        } else {
            for (int j = 0; j < rule.n_keys; ++j) m(i, j) = rule.visible(i, j);
        }
    }
    return m;
}

std::vector<int> fully_masked_rows(const MaskRule& rule, int n_queries) {
    std::vector<int> rows;
    for (int i = 0; i < n_queries; ++i)
        if (!rule.row_sees_a_key(i)) rows.push_back(i);
    return rows;
}

}  // namespace attn
