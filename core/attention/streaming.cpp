// Output-only attention: per query block, stream over key blocks with an online softmax.
//
//   for each key block:  S = masked_score(Q_b·K_bᵀ)               (B_q, d_k)·(d_k, B_k) → (B_q, B_k)
//                        m' = max(m, rowmax S)                   the running max
//                        P  = exp(S − m')                        (B_q, B_k)
//                        l  = l·exp(m − m') + rowsum P           the running sum
//                        O  = O·exp(m − m') + P·V_b              (B_q, B_k)·(B_k, d_v) → (B_q, d_v)
//   finally              O = row_output(O, l)                   0 / NaN / O ÷ l (attention_rules.hpp)
//
// Query blocks are independent, so they run in parallel (OpenMP) for long inputs.
#include "attention/streaming.hpp"
#include "tensor/worker_errors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn {

namespace {

constexpr int kQueryBlock = 64;
constexpr int kKeyBlock = 128;

// S for one (query block, key block) tile: masked_score of every cell, the products by Eigen.
void score_tile(const StreamingInputs& in, int i0, int rows, int j0, int cols, Matrix& s) {
    s.noalias() = in.q->middleRows(i0, rows) * in.k->middleRows(j0, cols).transpose();  // (B_q, d_k)·(d_k, B_k)
    scale_scores(in.rule, i0, j0, s);
    cap_scores(in.rule, s);
    mask_scores(in.rule, i0, j0, s);
}

// A tile with no visible cell contributes exp(−∞) = 0 and can be skipped; with a finite
// fill every cell counts, so nothing is skipped.
bool skippable(const StreamingInputs& in, int i0, int i1, int j0, int j1) {
    return fill_is_minus_inf(in.rule.masked_fill) && in.rule.mask.block_hidden(i0, i1, j0, j1);
}

using Column = Eigen::Array<float, Eigen::Dynamic, 1>;

void query_block(const StreamingInputs& in, int i0, int rows, StreamingHead& out) {
    const int n_k = static_cast<int>(in.k->rows());
    const int d_v = static_cast<int>(in.v->cols());
    const bool stable = in.softmax == SoftmaxKind::Stable;
    Matrix s(rows, kKeyBlock), acc = Matrix::Zero(rows, d_v);
    // The running max and sum start from the sink's cell (row_start): m = −∞, l = 0 without one.
    const RowStart start = row_start(in.softmax, in.rule.sink);
    Column m = Column::Constant(rows, start.max), l = Column::Constant(rows, start.sum);
    Column m_new(rows), correction(rows);
    for (int j0 = 0; j0 < n_k; j0 += kKeyBlock) {
        const int cols = std::min(kKeyBlock, n_k - j0);
        if (skippable(in, i0, i0 + rows, j0, j0 + cols)) continue;
        s.resize(rows, cols);
        score_tile(in, i0, rows, j0, cols, s);
        auto tile = s.array();
        if (stable) m_new = m.max(tile.rowwise().maxCoeff());  // m' = max(m, rowmax S)
        for (int r = 0; r < rows; ++r) {
            const float shift = row_shift(in.softmax, m_new(r));  // naive: m stays 0
            correction(r) = stable ? cell_exp(m(r), shift) : 1.0f;  // exp(m − m'), 0 while m = −∞
            cell_exp_row(s.row(r).data(), s.row(r).data(), cols, shift);  // P = exp(S − m')
        }
        l = l * correction + tile.rowwise().sum();                  // l = l·exp(m − m') + rowsum P
        acc.array().colwise() *= correction;
        acc.noalias() += s * in.v->middleRows(j0, cols);            // (B_q, B_k)·(B_k, d_v)
        if (stable) m = m_new;
    }
    for (int r = 0; r < rows; ++r) {
        const float sum = l(r);
        acc.row(r) = acc.row(r).unaryExpr([sum](float a) { return row_output(a, sum); });  // 0 / NaN / acc ÷ l
    }
    out.output.middleRows(i0, rows) = acc;
    out.row_max.segment(i0, rows) = m.matrix().transpose();
    out.row_sum.segment(i0, rows) = l.matrix().transpose();
}

// A zero grid over the region.
PooledWeights empty_grid(const PooledGrid& grid) {
    PooledWeights pooled;
    pooled.row_begin = grid.row_begin;
    pooled.row_end = grid.row_end;
    pooled.col_begin = grid.col_begin;
    pooled.col_end = grid.col_end;
    pooled.values = Matrix::Zero(grid.bins_rows, grid.bins_cols);
    return pooled;
}

}  // namespace

StreamingHead streaming_attention(const StreamingInputs& in) {
    const int n_q = static_cast<int>(in.q->rows());
    StreamingHead head;
    head.output.resize(n_q, in.v->cols());
    head.row_max.resize(n_q);
    head.row_sum.resize(n_q);
    const int blocks = (n_q + kQueryBlock - 1) / kQueryBlock;
    // Threads only pay off for long inputs; a 3-token edit stays on the calling thread.
    const long long work = static_cast<long long>(n_q) * in.k->rows() * in.q->cols();
    WorkerErrors errors;
#pragma omp parallel for schedule(dynamic, 1) if (work > (1LL << 20))
    for (int b = 0; b < blocks; ++b) errors.run([&] {
        if (in.cancelled()) return;  // an OpenMP loop cannot break: the rest is skipped
        const int i0 = b * kQueryBlock;
        query_block(in, i0, std::min(kQueryBlock, n_q - i0), head);
    });
    errors.rethrow();
    return head;
}

PooledWeights pooled_weights(const StreamingInputs& in, const StreamingHead& head, const PooledGrid& grid) {
    PooledWeights pooled = empty_grid(grid);
    const int row_begin = grid.row_begin, row_end = grid.row_end, col_begin = grid.col_begin, col_end = grid.col_end;
    const int rows = row_end - row_begin, cols = col_end - col_begin;
    const int bins_rows = grid.bins_rows, bins_cols = grid.bins_cols;
    // Bin of an index: the b with begin + b·len/bins ≤ index < begin + (b+1)·len/bins.
    std::vector<int> col_bin(static_cast<size_t>(cols));
    for (int b = 0; b < bins_cols; ++b)
        for (int c = static_cast<int>(static_cast<long long>(b) * cols / bins_cols);
             c < static_cast<int>(static_cast<long long>(b + 1) * cols / bins_cols); ++c)
            col_bin[static_cast<size_t>(c)] = b;
    WorkerErrors errors;
#pragma omp parallel for schedule(dynamic, 1) if (static_cast<long long>(rows) * cols * in.q->cols() > (1LL << 20))
    for (int rb = 0; rb < bins_rows; ++rb) errors.run([&] {
        if (in.cancelled()) return;
        const int r0 = row_begin + static_cast<int>(static_cast<long long>(rb) * rows / bins_rows);
        const int r1 = row_begin + static_cast<int>(static_cast<long long>(rb + 1) * rows / bins_rows);
        Matrix s;
        for (int j0 = col_begin; j0 < col_end; j0 += kKeyBlock) {
            const int tile_cols = std::min(kKeyBlock, col_end - j0);
            if (skippable(in, r0, r1, j0, j0 + tile_cols)) continue;
            s.resize(r1 - r0, tile_cols);
            score_tile(in, r0, r1 - r0, j0, tile_cols, s);
            for (int r = 0; r < r1 - r0; ++r) {
                const float l = head.row_sum(r0 + r);
                if (row_sum_kind(l) == RowSum::Nothing) continue;  // fully masked row: weights are 0
                // w = row_weight(s, m, l), the row at once (an overflowed row reads s itself)
                float* row = s.row(r).data();
                if (row_sum_kind(l) == RowSum::Weighs) cell_exp_row(row, row, tile_cols, row_shift(in.softmax, head.row_max(r0 + r)));
                weights_from_exp_row(row, row, tile_cols, l);
                for (int c = 0; c < tile_cols; ++c) {
                    float& cell = pooled.values(rb, col_bin[static_cast<size_t>(j0 + c - col_begin)]);
                    if (row[c] > cell || std::isnan(row[c])) cell = row[c];
                }
            }
        }
    });
    errors.rethrow();
    mark_visible(pooled, in.rule.mask);
    return pooled;
}

void mark_visible(PooledWeights& pooled, const MaskRule& mask) {
    const Eigen::Index rows = pooled.row_end - pooled.row_begin, cols = pooled.col_end - pooled.col_begin;
    if (pooled.values.rows() != rows || pooled.values.cols() != cols || rows == 0 || cols == 0) {
        pooled.visible.resize(0, 0);
        return;
    }
    pooled.visible.resize(rows, cols);
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c)
            pooled.visible(r, c) = mask.visible(pooled.row_begin + static_cast<int>(r), pooled.col_begin + static_cast<int>(c));
}

PooledWeights max_pool(const Matrix& weights, int row_begin, int row_end, int col_begin, int col_end, int bins_rows,
                       int bins_cols) {
    const PooledGrid grid = pooled_grid(row_begin, row_end, col_begin, col_end, bins_rows, bins_cols);
    PooledWeights pooled = empty_grid(grid);
    const int rows = row_end - row_begin, cols = col_end - col_begin;
    bins_rows = grid.bins_rows;
    bins_cols = grid.bins_cols;
    for (int rb = 0; rb < bins_rows && rows > 0; ++rb)
        for (int cb = 0; cb < bins_cols && cols > 0; ++cb) {
            const int r0 = row_begin + static_cast<int>(static_cast<long long>(rb) * rows / bins_rows);
            const int r1 = row_begin + static_cast<int>(static_cast<long long>(rb + 1) * rows / bins_rows);
            const int c0 = col_begin + static_cast<int>(static_cast<long long>(cb) * cols / bins_cols);
            const int c1 = col_begin + static_cast<int>(static_cast<long long>(cb + 1) * cols / bins_cols);
            pooled.values(rb, cb) = weights.block(r0, c0, r1 - r0, c1 - c0).maxCoeff<Eigen::PropagateNaN>();  // a NaN wins, as on every path
        }
    return pooled;
}

}  // namespace attn
