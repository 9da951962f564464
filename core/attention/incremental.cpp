#include "attention/incremental.hpp"

#include <chrono>
#include <cstring>
#include <cmath>
#include <vector>

#include "attention/attention_rules.hpp"
#include "attention/engine.hpp"
#include "attention/positional.hpp"
#include "tensor/reflect.hpp"
#include "attention/softmax.hpp"
#include "tensor/worker_errors.hpp"

namespace attn {

namespace {

// The rows of the target embeddings that differ, or nothing when anything else differs.
std::optional<std::vector<int>> changed_rows(const Scenario& before, const Scenario& after, const Trace& trace) {
    if (!trace.ok || trace.detail != Detail::Full || after.input != InputMode::Embeddings ||
        after.attention != AttentionKind::Self || after.latent.on() || after.output_gate.on || after.differential.on || before.differential.on || after.delta_net.on || before.delta_net.on || after.block.residual || after.block.layer_norm || (after.qk_norm && after.qk_norm_whole) ||
        after.block.feed_forward || after.softmax != SoftmaxKind::Stable || after.target.embeddings.size() == 0 ||
        after.b_q.size() != 0 || after.b_k.size() != 0 || after.b_v.size() != 0 || after.b_o.size() != 0 ||
        before.target.embeddings.rows() != after.target.embeddings.rows() ||
        before.target.embeddings.cols() != after.target.embeddings.cols())
        return std::nullopt;
    // Every field the engine reads but the target's embeddings, compared field by field
    // without a hand-kept list (reflect.hpp): a field added to Scenario is compared too.
    if (!reflect::equal(before, after, &before.target.embeddings)) return std::nullopt;
    std::vector<int> rows;
    for (Eigen::Index i = 0; i < after.target.embeddings.rows(); ++i)
        if (after.target.embeddings.row(i) != before.target.embeddings.row(i)) {
            if (!after.target.embeddings.row(i).allFinite()) return std::nullopt;  // a full run locates it
            rows.push_back(static_cast<int>(i));
        }
    return rows;
}

}  // namespace

bool update_after_embedding_edit(const Scenario& before, const Scenario& after, Trace& t) {
    const auto rows = changed_rows(before, after, t);
    if (!rows) return false;
    if (rows->empty()) return true;
    if (!t.non_finite_inputs.empty() && t.non_finite_inputs[0].matrix == "X") return false;  // the note may go away
    const auto start = std::chrono::steady_clock::now();
    const int n = t.n_queries, d_k = t.d_k, d_v = t.d_v;
    // Queries that weigh an edited key: their softmax row changes (its normaliser does), or
    // their output does (the key's value). A query weighs the keys it sees, and under a
    // finite fill a hidden key too wherever its weight is not 0 (row_weight: a fully masked
    // row is uniform, a fill close to the row's scores weighs). A hidden cell keeps the fill
    // and the row keeps its max, so its weight before the edit says.
    const bool hidden_may_weigh = !fill_is_minus_inf(after.masked_fill);
    std::vector<char> affected(static_cast<size_t>(n), 0);
    for (int r : *rows) {
        affected[static_cast<size_t>(r)] = 1;
        for (int i = 0; i < n; ++i) {
            bool weighs = t.visible(i, r);
            for (size_t h = 0; h < t.head.size() && hidden_may_weigh && !weighs; ++h) weighs = t.head[h].weights(i, r) != 0.0f;
            if (weighs) affected[static_cast<size_t>(i)] = 1;
        }
    }
    std::vector<int> affected_rows;
    for (int i = 0; i < n; ++i)
        if (affected[static_cast<size_t>(i)]) affected_rows.push_back(i);

    for (int r : *rows) {
        t.x.row(r) = after.target.embeddings.row(r);
        t.x_pe.row(r) = t.x.row(r) + t.pe.row(r);
    }
    const bool rope = after.positional == PositionalEncoding::Rotary;
    WorkerErrors errors;
#pragma omp parallel for schedule(dynamic, 1) if (t.heads > 1 && static_cast<long long>(affected_rows.size()) * n * d_k > (1 << 18))
    for (int h = 0; h < t.heads; ++h) errors.run([&] {
        HeadTrace& head = t.head[static_cast<size_t>(h)];
        for (int r : *rows) {
            // (1, d_model)·(d_model, d_k): the edited token's slice of the projections
            Vector q = t.x_pe.row(r) * t.w_q->middleCols(h * d_k, d_k);
            const int g = h / (t.heads / t.kv_heads);  // the K/V head it reads (grouped-query attention)
            Vector k = t.x_pe.row(r) * t.w_k->middleCols(g * d_k, d_k);
            head.v.row(r) = t.x_pe.row(r) * t.w_v->middleCols(g * d_v, d_v);
            if (after.qk_norm) {  // QK-norm of the row, as head_inputs does it, before RoPE
                head.q_before_norm.row(r) = q;
                head.k_before_norm.row(r) = k;
                q = rms_norm(q, after.block.epsilon, t.q_norm.row(0), after.qk_norm_plus_one);
                k = rms_norm(k, after.block.epsilon, t.k_norm.row(0), after.qk_norm_plus_one);
                head.q_normed.row(r) = q;
                head.k_normed.row(r) = k;
            }
            if (rope) {
                head.q_unrotated.row(r) = q;
                head.k_unrotated.row(r) = k;
            }
            head.q.row(r) = rope ? rotate_row(q, r, after.rope, n) : q;
            if (t.temperature.size() != 0) head.q.row(r) *= t.temperature(r, 0);  // Llama 4's query temperature, as head_inputs
            head.k.row(r) = rope ? rotate_row(k, r, after.rope, n) : k;
        }
        for (int r : *rows) {
            head.scores.row(r).noalias() = head.q.row(r) * head.k.transpose();  // row r: (1, d_k)·(d_k, n)
            head.scores.col(r).noalias() = head.q * head.k.row(r).transpose();  // column r: (n, d_k)·(d_k, 1)
        }
        const ScoreRule rule = score_rule(after, t.scale, head.alibi_slope, n, head.sink);
        const auto refresh = [&](int i, int j) {  // attention_rules.hpp, one cell
            head.scaled_scores(i, j) = scaled_score(rule, head.scores(i, j), i, j);
            if (rule.softcap > 0.0f) head.capped_scores(i, j) = capped_score(rule, head.scaled_scores(i, j));
            head.masked_scores(i, j) = masked_score(rule, head.scores(i, j), i, j);
        };
        for (int r : *rows)
            for (int j = 0; j < n; ++j) {
                refresh(r, j);
                refresh(j, r);
            }
        if (affected_rows.size() * 2 > static_cast<size_t>(n)) {
            // Most rows see an edited key (no mask): the whole-matrix softmax and product
            // are faster than row by row, and compute the same values.
            if (head.sink != kMinusInfinity) softmax_rows_into(head.masked_scores, after.softmax, head.sink, head.weights, head.sink_weights);
            else softmax_rows_into(head.masked_scores, after.softmax, head.weights);
            head.output.noalias() = head.weights * head.v;  // (n, n)·(n, d_v)
            t.concat.middleCols(h * d_v, d_v) = head.output;
        } else {
            // Gather the affected rows, softmax them, one product, scatter back.
            const auto m = static_cast<Eigen::Index>(affected_rows.size());
            Matrix block(m, n), weights, sink_weights, out;
            for (Eigen::Index a = 0; a < m; ++a) block.row(a) = head.masked_scores.row(affected_rows[static_cast<size_t>(a)]);
            if (head.sink != kMinusInfinity) softmax_rows_into(block, after.softmax, head.sink, weights, sink_weights);
            else softmax_rows_into(block, after.softmax, weights);
            out.noalias() = weights * head.v;  // (m, n)·(n, d_v)
            for (Eigen::Index a = 0; a < m; ++a) {
                const int i = affected_rows[static_cast<size_t>(a)];
                head.weights.row(i) = weights.row(a);
                if (head.sink != kMinusInfinity) head.sink_weights(i, 0) = sink_weights(a, 0);
                head.output.row(i) = out.row(a);
                t.concat.row(i).segment(h * d_v, d_v) = out.row(a);
            }
        }
    });
    errors.rethrow();
    if (affected_rows.size() * 2 > static_cast<size_t>(n)) {
        t.output.noalias() = t.concat * *t.w_o;  // (n, h·d_v)·(h·d_v, d_model)
    } else {
        Matrix rows_concat(static_cast<Eigen::Index>(affected_rows.size()), t.concat.cols());
        for (size_t a = 0; a < affected_rows.size(); ++a) rows_concat.row(static_cast<Eigen::Index>(a)) = t.concat.row(affected_rows[a]);
        const Matrix rows_output = rows_concat * *t.w_o;  // (m, h·d_v)·(h·d_v, d_model)
        for (size_t a = 0; a < affected_rows.size(); ++a) t.output.row(affected_rows[a]) = rows_output.row(static_cast<Eigen::Index>(a));
    }
    t.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return true;
}

}  // namespace attn
