#include "attention/trace.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

PooledGrid pooled_grid(int row_begin, int row_end, int col_begin, int col_end, int bins_rows, int bins_cols) {
    PooledGrid g{row_begin, row_end, col_begin, col_end, 1, 1};
    g.bins_rows = std::max(1, std::min(bins_rows, row_end - row_begin));
    g.bins_cols = std::max(1, std::min(bins_cols, col_end - col_begin));
    return g;
}

const Matrix& attention_input(const Trace& t) {
    return t.has_block && t.settings.block.norm == NormPlacement::Pre && t.block.norm1.size() != 0 ? t.block.norm1 : t.x_pe;
}

bool has_custom_scale(const Trace& t) {
    if (!t.settings.scale || !(t.settings.score_scale > 0.0f) || t.d_k <= 0) return false;
    const double usual = 1.0 / std::sqrt(static_cast<double>(t.d_k));
    return std::fabs(static_cast<double>(t.settings.score_scale) - usual) > 1e-6 * usual;  // a float's rounding of 1/√d_k is not custom
}

std::uint64_t weight_version(const Trace& t, const Matrix* values) {
    if (values == nullptr || values->size() == 0) return 0;
    for (const SharedMatrix* w : {&t.w_q, &t.w_k, &t.w_v, &t.w_o, &t.block.w_1, &t.block.w_2, &t.block.w_gate})
        if (w->holds(values)) return w->version();  // a stored weight not yet widened holds no Matrix
    return 0;
}

}  // namespace attn
