// The reference attention engine: every step kept, in the order the articles teach it. Whether
// a scenario can run, and what its full trace would keep, is validate.cpp's.
//
// [SECTION] Inputs: embeddings, positional encoding, weights
// [SECTION] One head
// [SECTION] The block: residual, LayerNorm, feed-forward
// [SECTION] run()
#include "attention/engine.hpp"
#include "attention/linear_attention.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <new>
#include <numeric>
#include <sstream>

#include "attention/attention_rules.hpp"
#include "attention/mask.hpp"
#include "attention/positional.hpp"
#include "tensor/product.hpp"
#include "tensor/random.hpp"
#include "attention/softmax.hpp"
#include "attention/streaming.hpp"
#include "tensor/worker_errors.hpp"

namespace attn {

namespace {

// σ(z) = 1 / (1 + e^−z), in float32 as torch.sigmoid: the routers' scores, the gates.
float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

}  // namespace

// [SECTION] Inputs: embeddings, positional encoding, weights

Matrix resolved_embeddings(const Sequence& seq, int d_model) {
    if (seq.embeddings.size() != 0) return seq.embeddings;
    Matrix x(static_cast<Eigen::Index>(seq.tokens.size()), d_model);
    for (size_t i = 0; i < seq.tokens.size(); ++i) x.row(static_cast<Eigen::Index>(i)) = token_embedding(seq.tokens[i], d_model);
    return x;
}

SharedMatrix resolved_weight(const SharedMatrix& given, int rows, int cols, std::uint64_t seed, int which) {
    if (given.size() != 0) return given;  // shared, not copied
    return xavier_uniform(rows, cols, seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(which) * 7919u + 17u);
}

SharedMatrix latent_weight(const Scenario& s, LatentWeight which) {
    const LatentAttention& l = s.latent;
    const int d_qk = l.nope_dim + l.rope_dim;
    switch (which) {
        case LatentWeight::QA: return resolved_weight(l.w_q_a, s.d_model, l.q_rank, s.seed, 40);
        case LatentWeight::QB: return resolved_weight(l.w_q_b, l.q_rank, s.heads * d_qk, s.seed, 41);
        case LatentWeight::KVA: return resolved_weight(l.w_kv_a, s.d_model, l.kv_rank + l.rope_dim, s.seed, 42);
        case LatentWeight::KVB: return resolved_weight(l.w_kv_b, l.kv_rank, s.heads * (l.nope_dim + l.v_dim), s.seed, 43);
    }
    return SharedMatrix();
}

SharedMatrix gate_weight(const Scenario& s) {
    return resolved_weight(s.output_gate.w_g, s.d_model, s.heads * value_dim_of(s), s.seed, 44);
}

Matrix output_gate_values(const Matrix& x, const SharedMatrix& w_g, const Vector& b_g, bool any_order) {
    Matrix g;
    product_into(x, w_g, g, any_order ? ProductKernel::any_order : ProductKernel::row_major);  // (n, d_model)·(d_model, H·d_v)
    if (b_g.size() != 0) g.rowwise() += b_g;
    return g.unaryExpr(&sigmoid);
}

DeltaNetWeights delta_net_weights(const Scenario& s) {
    const GatedDeltaNet& n = s.delta_net;
    const int heads = s.heads, key_heads = delta_key_heads(s), d_k = head_dim_of(s), d_v = value_dim_of(s);
    DeltaNetWeights w;
    w.w_q = resolved_weight(s.w_q, s.d_model, key_heads * d_k, s.seed, 0);
    w.w_k = resolved_weight(s.w_k, s.d_model, key_heads * d_k, s.seed, 1);
    w.w_v = resolved_weight(s.w_v, s.d_model, heads * d_v, s.seed, 2);
    w.w_z = resolved_weight(n.w_z, s.d_model, heads * d_v, s.seed, 45);
    w.w_b = resolved_weight(n.w_b, s.d_model, heads, s.seed, 46);
    w.w_a = resolved_weight(n.w_a, s.d_model, heads, s.seed, 47);
    w.conv = n.conv.size() != 0 ? n.conv : resolved_weight(SharedMatrix(), delta_channels(s), n.conv_kernel, s.seed, 48).get();
    w.a_log = n.a_log.size() != 0 ? n.a_log : Vector(Vector::LinSpaced(heads, 1.0f, static_cast<float>(heads)).array().log());
    w.dt_bias = n.dt_bias.size() != 0 ? n.dt_bias : Vector(Vector::Ones(heads));
    w.norm = n.norm.size() != 0 ? n.norm : Vector(Vector::Ones(d_v));
    return w;
}

void delta_net_inputs(const Scenario& s, const DeltaNetWeights& w, const Matrix& x, const Matrix* history, LinearTrace& steps, Matrix& q_all,
                      Matrix& k_all, Matrix& v_all, bool any_order) {
    const int heads = s.heads, key_heads = delta_key_heads(s), d_k = head_dim_of(s), d_v = value_dim_of(s);
    const float scale = s.scale ? 1.0f / std::sqrt(static_cast<float>(d_k)) : 1.0f;  // q × 1/√d_k (a custom scale is refused)
    const int key_width = key_heads * d_k, value_width = heads * d_v;
    const ProductKernel kernel = any_order ? ProductKernel::any_order : ProductKernel::row_major;
    Matrix q, k, v, b, a;
    product_into(x, w.w_q, q, kernel);  // (n, d_model)·(d_model, H_k·d_k)
    product_into(x, w.w_k, k, kernel);
    product_into(x, w.w_v, v, kernel);  // (n, d_model)·(d_model, H·d_v)
    steps.mixed.resize(x.rows(), 2 * key_width + value_width);
    steps.mixed << q, k, v;
    steps.convolved = linear::causal_conv_silu(steps.mixed, w.conv, history);  // each channel over its last K tokens, then SiLU
    product_into(x, w.w_z, steps.z, kernel);
    product_into(x, w.w_b, b, kernel);  // (n, H)
    product_into(x, w.w_a, a, kernel);
    steps.beta = b.unaryExpr(&sigmoid);
    steps.decay.resize(x.rows(), heads);
    for (Eigen::Index t = 0; t < x.rows(); ++t)
        for (int h = 0; h < heads; ++h)
            steps.decay(t, h) = -std::exp(w.a_log(h)) * linear::softplus(a(t, h) + w.dt_bias(h));  // g ≤ 0: the state fades by e^g
    // q and k per key head, L2-normed (q × scale), then repeated for the value heads that read them
    const Matrix q_heads = linear::l2_normalized(steps.convolved.leftCols(key_width), d_k) * scale;
    const Matrix k_heads = linear::l2_normalized(steps.convolved.middleCols(key_width, key_width), d_k);
    const int group = heads / key_heads;
    q_all = group == 1 ? q_heads : repeat_kv_heads(q_heads, key_heads, group, d_k);
    k_all = group == 1 ? k_heads : repeat_kv_heads(k_heads, key_heads, group, d_k);
    v_all = steps.convolved.rightCols(value_width);
}

Matrix delta_net_gated(const Matrix& concat, const Matrix& z, const Vector& norm, int d_v, float epsilon, Matrix* normed) {
    Matrix out(concat.rows(), concat.cols());
    for (Eigen::Index h = 0; h * d_v < concat.cols(); ++h)
        out.middleCols(h * d_v, d_v) = rms_norm(concat.middleCols(h * d_v, d_v), epsilon, norm);  // RMSNorm(o_h)⊙w, each head alone
    if (normed != nullptr) *normed = out;
    return out.cwiseProduct(z.unaryExpr([](float v) { return v * sigmoid(v); }));  // ⊙ SiLU(z)
}

Matrix pair_values(const Matrix& v_per_head, int heads, int d_k) {
    const int pairs = heads / 2;
    Matrix paired(v_per_head.rows(), static_cast<Eigen::Index>(heads) * 2 * d_k);
    for (int h = 0; h < heads; ++h) {  // torch.cat(torch.chunk(v, 2, dim=heads), dim=-1).repeat(1, 2, 1, 1)
        const int p = h % pairs;
        paired.middleCols(static_cast<Eigen::Index>(h) * 2 * d_k, d_k) = v_per_head.middleCols(static_cast<Eigen::Index>(p) * d_k, d_k);
        paired.middleCols(static_cast<Eigen::Index>(h) * 2 * d_k + d_k, d_k) =
            v_per_head.middleCols(static_cast<Eigen::Index>(p + pairs) * d_k, d_k);
    }
    return paired;
}

Matrix differential_pairs(const Matrix& read, int heads, int d_k, float lambda, float lambda_init, float epsilon, Matrix* difference) {
    const int pairs = heads / 2, width = 2 * d_k;
    Matrix diff(read.rows(), static_cast<Eigen::Index>(pairs) * width);
    for (int p = 0; p < pairs; ++p)  // attn_output1 − λ·attn_output2: the first P heads against the last P
        diff.middleCols(static_cast<Eigen::Index>(p) * width, width) =
            read.middleCols(static_cast<Eigen::Index>(p) * width, width) - lambda * read.middleCols(static_cast<Eigen::Index>(p + pairs) * width, width);
    Matrix out(diff.rows(), diff.cols());
    for (int p = 0; p < pairs; ++p)  // (1 − λ_init)·RMSNorm(o_p), each pair alone, no weight
        out.middleCols(static_cast<Eigen::Index>(p) * width, width) =
            (1.0f - lambda_init) * rms_norm(diff.middleCols(static_cast<Eigen::Index>(p) * width, width), epsilon);
    if (difference != nullptr) *difference = std::move(diff);
    return out;
}

Matrix layer_norm(const Matrix& x, float epsilon, const LayerNormParams& params) {
    Matrix out(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const float mean = x.row(i).mean();
        const float var = (x.row(i).array() - mean).square().mean();  // biased: ÷ d
        out.row(i) = (x.row(i).array() - mean) / std::sqrt(var + epsilon);
    }
    if (params.gamma.size() != 0) out.array().rowwise() *= params.gamma.array();
    if (params.beta.size() != 0) out.rowwise() += params.beta;
    return out;
}

Matrix rms_norm(const Matrix& x, float epsilon, const Vector& gamma, bool gamma_plus_one) {
    Matrix out(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const float mean_square = x.row(i).array().square().mean();  // no mean subtracted
        out.row(i) = x.row(i) * (1.0f / std::sqrt(mean_square + epsilon));
    }
    if (gamma.size() != 0) {
        const Vector scale = gamma_plus_one ? Vector((gamma.array() + 1.0f).matrix()) : gamma;  // Gemma: (1 + γ), in float32
        out.array().rowwise() *= scale.array();
    }
    return out;
}

Matrix activate(const Matrix& x, Activation activation) {
    switch (activation) {
        case Activation::ReLU: return x.cwiseMax(0.0f);
        case Activation::GeluTanh: {
            // GPT-2's gelu_new: ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
            const float c = std::sqrt(2.0f / 3.14159265358979f);
            return (0.5f * x.array() * (1.0f + (c * (x.array() + 0.044715f * x.array().cube())).tanh())).matrix();
        }
        case Activation::GeluErf:  // ½·x·(1 + erf(x/√2)): x times the standard normal's CDF at x
            return x.unaryExpr([](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); });
        case Activation::SiLU:  // x·σ(x)
            return x.unaryExpr([](float v) { return v / (1.0f + std::exp(-v)); });
    }
    return x;
}

bool has_block(const Scenario& s) {
    return s.input == InputMode::Embeddings && (s.block.residual || s.block.layer_norm || s.block.feed_forward);
}

std::vector<std::string> labels_or_numbers(const std::vector<std::string>& given, int n, const char* prefix) {
    if (static_cast<int>(given.size()) == n) return given;
    std::vector<std::string> labels;
    for (int i = 0; i < n; ++i) labels.push_back(prefix + std::to_string(i + 1));
    return labels;
}

namespace {

template <typename M>  // a Matrix or a SharedMatrix: one value read
void note_non_finite_at(Trace& t, const char* name, const M& m, Cell c) {
    if (!c.valid()) return;
    t.non_finite_inputs.push_back({name, c});
    std::ostringstream msg;
    msg << name << "(" << c.row + 1 << "," << c.col + 1 << ") is " << m(c.row, c.col)   // counted from 1, as users count
        << ": every matrix computed from it carries the non-finite value";
    t.warnings.push_back(msg.str());
}

}  // namespace

void note_non_finite(Trace& t, const char* name, const Matrix& m) { note_non_finite_at(t, name, m, first_non_finite(m)); }
void note_non_finite(Trace& t, const char* name, const SharedMatrix& m) { note_non_finite_at(t, name, m, m.first_non_finite()); }

// [SECTION] Pieces every backend shares

std::optional<PooledGrid> pooled_grid(const RunOptions& o, int n_q, int n_k, std::string* error) {
    const int row_end = o.region_row_end > 0 ? o.region_row_end : n_q;
    const int col_end = o.region_col_end > 0 ? o.region_col_end : n_k;
    if (o.region_row_begin < 0 || o.region_row_begin >= row_end || row_end > n_q || o.region_col_begin < 0 ||
        o.region_col_begin >= col_end || col_end > n_k) {
        if (error) {
            std::ostringstream msg;
            msg << "the heatmap region rows [" << o.region_row_begin << ", " << row_end << ") × keys [" << o.region_col_begin
                << ", " << col_end << ") is not inside the " << n_q << "×" << n_k << " weights";
            *error = msg.str();
        }
        return std::nullopt;
    }
    return pooled_grid(o.region_row_begin, row_end, o.region_col_begin, col_end,
                       o.pooled_rows > 0 ? o.pooled_rows : std::min(n_q, 512), o.pooled_cols > 0 ? o.pooled_cols : std::min(n_k, 512));
}

void head_inputs(const Scenario& s, const Trace& t, const Matrix& q_all, const Matrix& k_all, const Matrix& v_all, int h,
                 HeadTrace& head, bool keep_unrotated) {
    for (Matrix* m : {&head.q_before_norm, &head.k_before_norm, &head.q_normed, &head.k_normed, &head.q_unrotated, &head.k_unrotated})
        m->resize(0, 0);
    head.q = q_all.middleCols(h * t.d_k, t.d_k);  // (n_q, d_k): head h's slice of the projection
    head.k = k_all.middleCols(h * t.d_k, t.d_k);  // (n_k, d_k)
    head.v = v_all.middleCols(h * t.d_v, t.d_v);  // (n_k, d_v)
    if (s.qk_norm && s.qk_norm_whole) {
        // QK-norm over the whole projection (OLMo 2): q_all and k_all are normed already
        // (prepare_inputs); the head's slices of them before and after.
        if (keep_unrotated) {
            const int g = h / (t.heads / t.kv_heads);  // the K/V head it reads
            head.q_before_norm = t.q_projected.middleCols(h * t.d_k, t.d_k);
            head.k_before_norm = t.k_projected.middleCols(g * t.d_k, t.d_k);
            head.q_normed = head.q;
            head.k_normed = head.k;
        }
    } else if (s.qk_norm) {
        // QK-norm, before RoPE: each row of q and of k over its d_k numbers, q/√(mean(q²) + ε)⊙w.
        if (keep_unrotated) {
            head.q_before_norm = head.q;
            head.k_before_norm = head.k;
        }
        head.q = rms_norm(head.q, s.block.epsilon, t.q_norm.row(0), s.qk_norm_plus_one);  // (n_q, d_k)
        head.k = rms_norm(head.k, s.block.epsilon, t.k_norm.row(0), s.qk_norm_plus_one);  // (n_k, d_k)
        if (keep_unrotated) {
            head.q_normed = head.q;
            head.k_normed = head.k;
        }
    }
    if (s.positional == PositionalEncoding::Rotary) {
        if (keep_unrotated) {
            head.q_unrotated = head.q;
            head.k_unrotated = head.k;
        }
        if (s.input == InputMode::Embeddings && s.latent.on()) {
            // Latent attention turns the last d_rope dims only: q's own, and the k_rope every head shares
            const int d_rope = s.latent.rope_dim;
            head.q.rightCols(d_rope) = apply_rotary(head.q.rightCols(d_rope), s.rope);
            head.k.rightCols(d_rope) = t.latent.k_rope;
        } else {
            head.q = apply_rotary(head.q, s.rope);  // turn each pair of row p by p·θ_i (a text of n tokens)
            head.k = apply_rotary(head.k, s.rope);
        }
    }
    // Llama 4's query temperature: row i × τ_i, after QK-norm and RoPE (its NoPE layers turn nothing)
    if (t.temperature.size() != 0) head.q.array().colwise() *= t.temperature.col(0).array();
    head.alibi_slope = s.positional == PositionalEncoding::ALiBi ? alibi_slope(h, t.heads) : 0.0f;
    head.sink = head_sink(s, h);  // −∞: no sink
    head.sink_weights.resize(0, 0);
}

namespace {

void add_head_warnings(const Scenario& s, Trace& t) {
    for (int h = 0; h < s.heads; ++h) {
        const HeadTrace& head = t.head[static_cast<size_t>(h)];
        if (!head.fully_masked_rows.empty()) {
            std::string rows;
            for (int r : head.fully_masked_rows) rows += (rows.empty() ? "" : ", ") + t.query_tokens[static_cast<size_t>(r)];
            // Every cell of the row is the fill: its sum is zero (−∞, or a naive exponential
            // that underflows) or every cell weighs the same; a sink weighs beside them.
            const RowStart start = row_start(s.softmax, head.sink);
            const float shift = row_shift(s.softmax, row_max_with_sink(s.masked_fill, start.max));
            const bool weighs_nothing = cell_exp(s.masked_fill, shift) == 0.0f;
            const bool sink = head.sink != kMinusInfinity;
            const char* why = std::isinf(s.masked_fill) ? " (every key masked with −∞)"
                              : weighs_nothing ? (sink ? " (every key filled with a value whose exponential is 0 beside the sink's)"
                                                       : " (every key filled with a value whose naive exponential underflows to 0)")
                                               : " (every key filled with the same finite value)";
            const char* what = weighs_nothing ? (sink ? ": the sink takes all of its weight, its weights are 0 and its output is 0"
                                                      : ": its weights are 0 and its output is 0")
                                              : (sink ? ": its weights are equal, beside the sink's" : ": its weights are uniform");
            t.warnings.push_back("head " + std::to_string(h + 1) + ": query " + rows + " sees no key" + why + what);
        }
        if (head.softmax_overflow)
            t.warnings.push_back("head " + std::to_string(h + 1) +
                                 ": the naive softmax overflowed (exp of a score above ~88 is inf in float32); "
                                 "the stable softmax subtracts the row max first");
    }
}

}  // namespace

void finish_trace(const Scenario& s, Trace& t) {
    // Gated attention: each head's output × σ(x·W_G + b_G), number by number, before W_O
    const bool gated = s.output_gate.on && s.input == InputMode::Embeddings;
    t.output_gate.resize(0, 0);
    t.gated.resize(0, 0);
    if (gated) {
        t.output_gate = output_gate_values(attention_input(t), t.w_g, s.output_gate.b_g);  // (n_q, H·d_v)
        t.gated = t.concat.cwiseProduct(t.output_gate);
    }
    if (s.delta_net.on && s.input == InputMode::Embeddings)  // Gated DeltaNet: each head's RMSNorm, ⊙ SiLU(z)
        t.linear.gated = delta_net_gated(t.concat, t.linear.z, t.linear.norm.row(0), t.d_v, s.block.epsilon, &t.linear.normed);
    if (s.differential.on && s.input == InputMode::Embeddings) {  // differential attention: each pair's difference, normed
        DifferentialTrace& d = t.differential;
        d.normed = differential_pairs(t.concat, t.heads, t.d_k, d.lambda, d.lambda_init, s.block.epsilon, &d.difference);
    }
    const Matrix& heads_out = output_projection_input(t).m;
    if (t.w_o.size() != 0) product_into(heads_out, t.w_o, t.output);  // (n_q, h·d_v)·(h·d_v, d_model) → (n_q, d_model)
    else t.output = heads_out;
    const MaskRule mask = mask_rule(s, t.n_keys);
    const std::vector<int> fully_masked = fully_masked_rows(mask, t.n_queries);
    for (HeadTrace& head : t.head) {
        head.fully_masked_rows = fully_masked;
        // An output-only run (CPU or GPU) keeps each row's m and l: the sink's share follows.
        if (head.sink != kMinusInfinity && head.sink_weights.size() == 0 && head.row_sum.size() == t.n_queries) {
            head.sink_weights.resize(t.n_queries, 1);
            for (int i = 0; i < t.n_queries; ++i)
                head.sink_weights(i, 0) = row_weight(head.sink, row_shift(s.softmax, head.row_max(i)), head.row_sum(i));
        }
        if (head.pooled_weights.visible.size() == 0) mark_visible(head.pooled_weights, mask);  // a GPU run's grid
        // The overflow rule: exp(s) of a naive softmax is inf above s ≈ 88.7; with finite
        // inputs, a non-finite output can only come from there.
        head.softmax_overflow = !s.delta_net.on && s.softmax == SoftmaxKind::Naive && !head.output.allFinite() && head.q.allFinite() &&
                                head.k.allFinite() && head.v.allFinite();
    }
    add_head_warnings(s, t);
    if (s.b_o.size() != 0) t.output.rowwise() += s.b_o;  // + b_o
    t.has_block = has_block(s);
    if (t.has_block) run_block(s, t.x_pe, t.output, t.block);
    t.ok = true;
}

namespace {

// [SECTION] One head

// Writes into head, reusing its storage: a recompute after an edit allocates nothing.
void run_head(const Scenario& s, const Trace& t, const Matrix& q_all, const Matrix& k_all, const Matrix& v_all, int h,
              HeadTrace& head) {
    head.position_bias.resize(0, 0);
    head.implied_weights.resize(0, 0);
    head.state.resize(0, 0);
    head.pooled_weights = PooledWeights{};
    head_inputs(s, t, q_all, k_all, v_all, h, head, true);
    const ScoreRule rule = score_rule(s, t.scale, head.alibi_slope, t.n_keys, head.sink);
    head.scores.resize(t.n_queries, t.n_keys);
    head.scores.noalias() = head.q * head.k.transpose();  // (n_q, d_k)·(d_k, n_k) → (n_q, n_k)
    // masked_score of every cell (attention_rules.hpp), each step kept for the trace
    if (s.positional == PositionalEncoding::ALiBi) head.position_bias = alibi_terms(head.alibi_slope, t.n_queries, t.n_keys);
    head.scaled_scores = head.scores;
    scale_scores(rule, 0, 0, head.scaled_scores);  // ÷√d_k, then farther keys lose −m·|i − j|
    head.capped_scores.resize(0, 0);
    if (rule.softcap > 0.0f) {
        head.capped_scores = head.scaled_scores;
        cap_scores(rule, head.capped_scores);      // c·tanh(s/c)
    }
    head.masked_scores = rule.softcap > 0.0f ? head.capped_scores : head.scaled_scores;
    mask_scores(rule, 0, 0, head.masked_scores);   // the fill value where the mask hides a key
    if (head.sink != kMinusInfinity)  // each row → a distribution over the keys and the sink, which is then dropped
        softmax_rows_into(head.masked_scores, s.softmax, head.sink, head.weights, head.sink_weights);
    else
        softmax_rows_into(head.masked_scores, s.softmax, head.weights);  // each row → a distribution
    head.output.resize(t.n_queries, t.d_v);
    head.output.noalias() = head.weights * head.v;  // (n_q, n_k)·(n_k, d_v) → (n_q, d_v)
}

// A Gated DeltaNet head: its recurrence gives the output and the state; its implied matrix
// (o = A·V) is kept in a full trace, and pooled for the heatmap in an output-only one. Every
// softmax step stays empty.
void run_delta_head(const Trace& t, const Matrix& q_all, const Matrix& k_all, const Matrix& v_all, int h,
                    bool full, const std::optional<PooledGrid>& grid, HeadTrace& head) {
    for (Matrix* m : {&head.q_before_norm, &head.k_before_norm, &head.q_normed, &head.k_normed, &head.q_unrotated, &head.k_unrotated,
                      &head.scores, &head.position_bias, &head.scaled_scores, &head.capped_scores, &head.masked_scores, &head.weights,
                      &head.sink_weights})
        m->resize(0, 0);
    head.row_max.resize(0);
    head.row_sum.resize(0);
    head.pooled_weights = PooledWeights{};
    head.alibi_slope = 0.0f;
    head.sink = kMinusInfinity;
    head.q = q_all.middleCols(h * t.d_k, t.d_k);  // (n, d_k): L2-normed, × 1/√d_k
    head.k = k_all.middleCols(h * t.d_k, t.d_k);  // (n, d_k): L2-normed
    head.v = v_all.middleCols(h * t.d_v, t.d_v);  // (n, d_v)
    const Vector beta = t.linear.beta.col(h).transpose(), decay = t.linear.decay.col(h).transpose();
    head.state = Matrix::Zero(t.d_k, t.d_v);
    head.output = linear::delta_rule(head.q, head.k, head.v, beta, decay, head.state);
    Matrix implied = linear::implied_weights(head.q, head.k, beta, decay);  // (n, n)
    if (full) {
        head.implied_weights = std::move(implied);
    } else {
        head.implied_weights.resize(0, 0);
        if (grid) head.pooled_weights = max_pool(implied, grid->row_begin, grid->row_end, grid->col_begin, grid->col_end, grid->bins_rows,
                                                 grid->bins_cols);
    }
}

// The same head without any (n_q × n_k) matrix: the output by streaming, and the weights
// only as the pooled grid the display needs.
// What the streaming pass and the pooled weights read of one head.
StreamingInputs streaming_inputs(const Scenario& s, const Trace& t, const HeadTrace& head, const std::atomic<bool>* cancel) {
    StreamingInputs in;
    in.q = &head.q;
    in.k = &head.k;
    in.v = &head.v;
    in.rule = score_rule(s, t.scale, head.alibi_slope, t.n_keys, head.sink);
    in.softmax = s.softmax;
    in.cancel = cancel;
    return in;
}

void run_head_streaming(const Scenario& s, const Trace& t, const Matrix& q_all, const Matrix& k_all,
                        const Matrix& v_all, int h, const std::optional<PooledGrid>& grid,
                        const std::atomic<bool>* cancel, HeadTrace& head) {
    head = HeadTrace{};
    head_inputs(s, t, q_all, k_all, v_all, h, head, false);
    const StreamingInputs in = streaming_inputs(s, t, head, cancel);
    StreamingHead result = streaming_attention(in);
    if (grid && !in.cancelled()) head.pooled_weights = pooled_weights(in, result, *grid);
    head.output = std::move(result.output);
    head.row_max = std::move(result.row_max);
    head.row_sum = std::move(result.row_sum);
}

}  // namespace

// [SECTION] The block: residual, LayerNorm, feed-forward

namespace {

// γ and β as used: the given ones, or the identity's: γ = 1 (0 in RMSNorm's (1 + γ) form)
// and β = 0. RMSNorm has no β.
LayerNormParams resolved_norm(const BlockOptions& o, const LayerNormParams& given, int d_model) {
    LayerNormParams p;
    p.gamma = given.gamma.size() != 0 ? given.gamma : Vector::Constant(d_model, o.gamma_plus_one ? 0.0f : 1.0f);
    if (o.norm_kind == NormKind::LayerNorm) p.beta = given.beta.size() != 0 ? given.beta : Vector::Zero(d_model);
    return p;
}

// The block's norm of each row of x: LayerNorm or RMSNorm.
Matrix block_norm(const BlockOptions& o, const Matrix& x, const LayerNormParams& p) {
    return o.norm_kind == NormKind::RMSNorm ? rms_norm(x, o.epsilon, p.gamma, o.gamma_plus_one) : layer_norm(x, o.epsilon, p);
}

// The trace keeps vectors as (1 × n) matrices: every matrix of it can be drawn and exported alike.
Matrix as_row(const Vector& v) { return v; }

}  // namespace

// One expert on its tokens' rows (m × d_model): its gated feed-forward, biases and clamp
// included, before the routing weight.
void expert_forward(const MixtureOfExperts& m, Activation activation, const Expert& used, const Matrix& rows, Matrix& down, bool any_order) {
    const auto kernel = [any_order](ProductKernel k) { return any_order ? ProductKernel::any_order : k; };
    Matrix gate, up;
    product_into(rows, used.w_gate, gate, kernel(ProductKernel::row_major));    // (m, d_model)·(d_model, d_ff) → (m, d_ff)
    product_into(rows, used.w_1, up, kernel(ProductKernel::column_major));      // (m, d_model)·(d_model, d_ff) → (m, d_ff)
    if (used.b_gate.size() != 0) gate.rowwise() += used.b_gate;
    if (used.b_1.size() != 0) up.rowwise() += used.b_1;
    if (m.swiglu_limit > 0.0f) {
        // gpt-oss: g = min(gate, L), u = clamp(up, −L, L), (u + 1) ⊙ g·σ(α·g)
        const float limit = m.swiglu_limit, alpha = m.swiglu_alpha;
        gate = gate.unaryExpr([limit, alpha](float g) {
            g = std::min(g, limit);
            return g * sigmoid(g * alpha);
        });
        up = up.unaryExpr([limit](float u) { return std::clamp(u, -limit, limit) + 1.0f; });
        gate = gate.cwiseProduct(up);
    } else {
        gate = activate(gate, activation).cwiseProduct(up);                     // act(gate) ⊙ up
    }
    product_into(gate, used.w_2, down, kernel(ProductKernel::column_major));    // (m, d_ff)·(d_ff, d_model) → (m, d_model)
    if (used.b_2.size() != 0) down.rowwise() += used.b_2;
}

// DeepSeek-V3's choice (scenario.hpp's MixtureOfExperts, SigmoidGrouped) from each token's σ scores
// (n × E): σ + b_choice in the top_groups best groups (a group's score: its 2 largest), 0 elsewhere.
Matrix grouped_choice(const MixtureOfExperts& m, const Matrix& scores) {
    const int experts = static_cast<int>(scores.cols()), size = experts / m.groups;
    Matrix choice = scores;
    if (m.choice_bias.size() != 0) choice.rowwise() += m.choice_bias;
    std::vector<float> group_score(static_cast<size_t>(m.groups));
    std::vector<int> group_order(static_cast<size_t>(m.groups));
    for (Eigen::Index i = 0; i < choice.rows(); ++i) {
        for (int g = 0; g < m.groups; ++g) {
            float first = -std::numeric_limits<float>::infinity(), second = first;
            for (int e = g * size; e < (g + 1) * size; ++e) {
                const float c = choice(i, e);
                if (c > first) second = first, first = c;
                else if (c > second) second = c;
            }
            group_score[static_cast<size_t>(g)] = first + second;
        }
        std::iota(group_order.begin(), group_order.end(), 0);
        const auto rank = [&](int g) {  // a NaN group last
            const float v = group_score[static_cast<size_t>(g)];
            return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v;
        };
        std::stable_sort(group_order.begin(), group_order.end(), [&](int a, int c) { return rank(a) > rank(c); });
        for (int r = m.top_groups; r < m.groups; ++r) choice.row(i).segment(group_order[static_cast<size_t>(r)] * size, size).setZero();
    }
    return choice;
}

// The mixture of experts (scenario.hpp's MixtureOfExperts) on what the feed-forward reads (n × d_model).
void run_experts(const Scenario& s, const Matrix& x, BlockTrace& b, bool any_order) {
    const auto kernel = [any_order](ProductKernel k) { return any_order ? ProductKernel::any_order : k; };
    const MixtureOfExperts& m = s.block.moe;
    const int d_model = s.d_model, experts = m.experts;
    const int d_ff = s.block.d_ff > 0 ? s.block.d_ff : 4 * d_model;
    const Eigen::Index n = x.rows();
    b.router = resolved_weight(m.router, d_model, experts, s.seed, 20);
    product_into(x, b.router, b.router_logits, kernel(ProductKernel::row_major));  // (n, d_model)·(d_model, E) → (n, E)
    if (m.router_bias.size() != 0) b.router_logits.rowwise() += m.router_bias;      // gpt-oss: F.linear(x, W, b)
    const bool softmax_first = m.router_kind == RouterKind::SoftmaxThenTopK;
    const bool grouped = m.router_kind == RouterKind::SigmoidGrouped;
    const bool sigmoid_kept = m.router_kind == RouterKind::TopKThenSigmoid;
    // Softmax first (Qwen3-MoE, Mixtral): each row sums to 1 and the top k are chosen from it.
    // Top-k first (gpt-oss): the top k logits are chosen and softmax runs over those k only;
    // there is no probability over all E to show.
    // Sigmoid, grouped (DeepSeek-V3): each expert's σ; the choice ranks σ + b_choice in the best groups.
    // Top-k then sigmoid (Llama 4): the top k logits, each kept expert weighed by σ of its own.
    b.router_choice.resize(0, 0);
    if (softmax_first) b.router_probabilities = softmax_rows(b.router_logits, SoftmaxKind::Stable);
    else if (grouped) {
        b.router_probabilities = b.router_logits.unaryExpr(&sigmoid);
        b.router_choice = grouped_choice(m, b.router_probabilities);
    } else b.router_probabilities.resize(0, 0);
    const Matrix& ranked = softmax_first ? b.router_probabilities : grouped ? b.router_choice : b.router_logits;
    // Each token's kept experts: the top_k largest, ties to the smaller expert.
    b.routing = Matrix::Zero(n, experts);
    std::vector<std::vector<Eigen::Index>> tokens_of(static_cast<size_t>(experts));
    std::vector<int> order(static_cast<size_t>(experts));
    std::vector<float> top(static_cast<size_t>(m.top_k));
    for (Eigen::Index i = 0; i < n; ++i) {
        std::iota(order.begin(), order.end(), 0);
        const auto p = ranked.row(i);
        std::partial_sort(order.begin(), order.begin() + m.top_k, order.end(), [&p](int a, int c) {
            return p(a) > p(c) || (p(a) == p(c) && a < c) || (std::isnan(p(c)) && !std::isnan(p(a)));
        });
        if (grouped) {
            // the kept experts' σ (not the choice's), renormalised or not, then scaled
            float kept = 0.0f;
            for (int r = 0; r < m.top_k; ++r) kept += b.router_probabilities(i, order[static_cast<size_t>(r)]);
            for (int r = 0; r < m.top_k; ++r) {
                const float score = b.router_probabilities(i, order[static_cast<size_t>(r)]);
                top[static_cast<size_t>(r)] = (m.normalize_top_k ? score / (kept + 1e-20f) : score) * m.routed_scale;
            }
        } else if (sigmoid_kept) {
            for (int r = 0; r < m.top_k; ++r) top[static_cast<size_t>(r)] = sigmoid(p(order[static_cast<size_t>(r)]));
        } else if (softmax_first) {
            float kept = 0.0f;  // Σ of the kept probabilities, largest first (torch's sum over topk's values)
            for (int r = 0; r < m.top_k; ++r) kept += p(order[static_cast<size_t>(r)]);
            for (int r = 0; r < m.top_k; ++r) {
                const int e = order[static_cast<size_t>(r)];
                top[static_cast<size_t>(r)] = m.normalize_top_k ? p(e) / kept : p(e);
            }
        } else {
            // softmax over the kept logits, largest first: exp(r − max) / Σ, in float32
            const float largest = p(order[0]);
            float sum = 0.0f;
            for (int r = 0; r < m.top_k; ++r) sum += (top[static_cast<size_t>(r)] = std::exp(p(order[static_cast<size_t>(r)]) - largest));
            for (float& w : top) w /= sum;
        }
        for (int r = 0; r < m.top_k; ++r) {
            const int e = order[static_cast<size_t>(r)];
            b.routing(i, e) = top[static_cast<size_t>(r)];
            tokens_of[static_cast<size_t>(e)].push_back(i);
        }
    }
    // Each kept expert on its own tokens, added in expert order: y_i += w_ie·expert_e(x_i)
    // (weight_input: y_i += expert_e(w_ie·x_i)).
    b.experts.assign(static_cast<size_t>(experts), Expert{});
    b.ffn_output = Matrix::Zero(n, d_model);
    Matrix rows, down;
    for (int e = 0; e < experts; ++e) {
        const Expert given = m.weights.empty() ? Expert{} : m.weights[static_cast<size_t>(e)];
        Expert& used = b.experts[static_cast<size_t>(e)];
        const int which = 100 + 3 * e;  // each seeded expert its own weights
        used.w_gate = resolved_weight(given.w_gate, d_model, d_ff, s.seed, which);
        used.w_1 = resolved_weight(given.w_1, d_model, d_ff, s.seed, which + 1);
        used.w_2 = resolved_weight(given.w_2, d_ff, d_model, s.seed, which + 2);
        used.b_gate = given.b_gate, used.b_1 = given.b_1, used.b_2 = given.b_2;
        const std::vector<Eigen::Index>& tokens = tokens_of[static_cast<size_t>(e)];
        if (tokens.empty() || m.is_ablated(e)) continue;  // an ablated expert adds nothing
        rows.resize(static_cast<Eigen::Index>(tokens.size()), d_model);
        for (size_t j = 0; j < tokens.size(); ++j) rows.row(static_cast<Eigen::Index>(j)) = x.row(tokens[j]);
        if (m.weight_input)  // Llama 4: the expert reads w_ie·x_i, and what it writes is added as it is
            for (size_t j = 0; j < tokens.size(); ++j) rows.row(static_cast<Eigen::Index>(j)) *= b.routing(tokens[j], e);
        expert_forward(m, s.block.activation, used, rows, down, any_order);
        for (size_t j = 0; j < tokens.size(); ++j)
            b.ffn_output.row(tokens[j]) += (m.weight_input ? 1.0f : b.routing(tokens[j], e)) * down.row(static_cast<Eigen::Index>(j));
    }
    // The shared expert on every token, added after the routed ones: y += σ(x·g) ⊙ shared(x)
    // (shared_gated), or y += shared(x).
    b.shared_expert = Expert{};
    b.shared_gate = SharedMatrix();
    b.shared_output.resize(0, 0);
    b.shared_gate_values.resize(0, 0);
    if (!m.has_shared()) return;
    const int shared_ff = m.shared_d_ff;
    Expert& shared = b.shared_expert;
    shared.w_gate = resolved_weight(m.shared.w_gate, d_model, shared_ff, s.seed, 90);
    shared.w_1 = resolved_weight(m.shared.w_1, d_model, shared_ff, s.seed, 91);
    shared.w_2 = resolved_weight(m.shared.w_2, shared_ff, d_model, s.seed, 92);
    shared.b_gate = m.shared.b_gate, shared.b_1 = m.shared.b_1, shared.b_2 = m.shared.b_2;
    expert_forward(m, s.block.activation, shared, x, b.shared_output, any_order);  // (n, d_model)
    if (m.shared_gated) {
        b.shared_gate = resolved_weight(m.shared_gate, d_model, 1, s.seed, 93);
        product_into(x, b.shared_gate, b.shared_gate_values, kernel(ProductKernel::row_major));  // (n, d_model)·(d_model, 1) → (n, 1)
        b.shared_gate_values = b.shared_gate_values.unaryExpr(&sigmoid);
        for (Eigen::Index i = 0; i < n; ++i) b.shared_output.row(i) *= b.shared_gate_values(i, 0);
    }
    b.ffn_output += b.shared_output;
}

void run_block(const Scenario& s, const Matrix& x, const Matrix& attention_output, BlockTrace& b, bool any_order) {
    const auto kernel = [any_order](ProductKernel k) { return any_order ? ProductKernel::any_order : k; };
    const BlockOptions& o = s.block;
    const int d_model = s.d_model;
    const int d_ff = o.d_ff > 0 ? o.d_ff : 4 * d_model;
    const LayerNormParams norm_1 = resolved_norm(o, o.norm_1, d_model), norm_2 = resolved_norm(o, o.norm_2, d_model);
    if (o.attention_norm) {  // ModernBERT's first layer has no N₁: no γ₁ or β₁ to show
        b.gamma_1 = as_row(norm_1.gamma);
        b.beta_1 = as_row(norm_1.beta);
    }
    b.gamma_2 = as_row(norm_2.gamma);
    b.beta_2 = as_row(norm_2.beta);
    const bool pre = o.norm == NormPlacement::Pre;
    // Attention, with its residual: x + Attention(x) (post), x + Attention(LN₁(x)) (pre); a
    // sandwich normalises attention's output once more before adding it.
    const Matrix* attention_added = &attention_output;
    if (o.sandwich_norm) {
        const LayerNormParams post = resolved_norm(o, o.norm_post_attention, d_model);
        b.gamma_post_attention = as_row(post.gamma);
        b.beta_post_attention = as_row(post.beta);
        b.post_attention_norm = block_norm(o, attention_output, post);
        attention_added = &b.post_attention_norm;
    }
    b.residual = o.residual ? Matrix(x + *attention_added) : *attention_added;
    if (!pre) b.norm1 = o.layer_norm ? block_norm(o, b.residual, norm_1) : b.residual;
    // Pre-norm: the feed-forward reads LN₂ of the stream after attention, or with a parallel
    // residual LN₂ of the block's input, beside attention.
    const Matrix& norm2_input = o.parallel_residual ? x : b.residual;
    if (pre) b.norm2 = o.layer_norm ? block_norm(o, norm2_input, norm_2) : norm2_input;
    const Matrix& ffn_input = pre ? b.norm2 : b.norm1;
    if (!o.feed_forward) {
        b.output = pre ? b.residual : b.norm1;
        return;
    }
    if (!o.moe.routed()) {  // a mixture's experts have weights of their own
        b.w_1 = resolved_weight(o.w_1, d_model, d_ff, s.seed, 10);
        b.w_2 = resolved_weight(o.w_2, d_ff, d_model, s.seed, 11);
    }
    if (o.moe.routed()) {
        run_experts(s, ffn_input, b, any_order);
    } else if (o.gated) {
        // SwiGLU / GeGLU: the gate's activation decides how much of each up-projected unit passes.
        // Each product keeps the kernel its numbers always came from (product.hpp: Matrix(a·b) for
        // the gate, `m = a·b`, a column-major temporary, for up and down).
        b.w_gate = resolved_weight(o.w_gate, d_model, d_ff, s.seed, 12);
        if (any_order) {  // one row: both read in one region
            row_products_into(ffn_input, {{&b.w_gate, &b.ffn_gate}, {&b.w_1, &b.ffn_up}});
        } else {
            product_into(ffn_input, b.w_gate, b.ffn_gate, kernel(ProductKernel::row_major));  // (n, d_model)·(d_model, d_ff) → (n, d_ff)
            product_into(ffn_input, b.w_1, b.ffn_up, kernel(ProductKernel::column_major));     // (n, d_model)·(d_model, d_ff) → (n, d_ff)
        }
        b.ffn_gate = activate(b.ffn_gate, o.activation);
        b.ffn_product = b.ffn_gate.cwiseProduct(b.ffn_up);                                      // element by element, (n, d_ff)
        product_into(b.ffn_product, b.w_2, b.ffn_output, kernel(ProductKernel::column_major));  // (n, d_ff)·(d_ff, d_model) → (n, d_model)
    } else {
        b.b_1 = o.b_1.size() != 0 ? as_row(o.b_1) : Matrix::Zero(1, d_ff);
        b.b_2 = o.b_2.size() != 0 ? as_row(o.b_2) : Matrix::Zero(1, d_model);
        product_plus_bias_into(ffn_input, b.w_1, b.b_1, b.ffn_hidden, 0, kernel(ProductKernel::column_major));     // (n, d_model)·(d_model, d_ff) + b_1 → (n, d_ff)
        b.ffn_hidden = activate(b.ffn_hidden, o.activation);
        product_plus_bias_into(b.ffn_hidden, b.w_2, b.b_2, b.ffn_output, 0, kernel(ProductKernel::column_major));  // (n, d_ff)·(d_ff, d_model) + b_2 → (n, d_model)
    }
    const Matrix* ffn_added = &b.ffn_output;
    if (o.sandwich_norm) {
        const LayerNormParams post = resolved_norm(o, o.norm_post_feed_forward, d_model);
        b.gamma_post_feed_forward = as_row(post.gamma);
        b.beta_post_feed_forward = as_row(post.beta);
        b.post_feed_forward_norm = block_norm(o, b.ffn_output, post);
        ffn_added = &b.post_feed_forward_norm;
    }
    const Matrix& around_ffn = pre ? b.residual : b.norm1;  // what the second residual adds back
    b.residual2 = o.residual ? Matrix(around_ffn + *ffn_added) : *ffn_added;
    b.output = !pre && o.layer_norm ? block_norm(o, b.residual2, norm_2) : b.residual2;
}

// [SECTION] run()

Matrix repeat_kv_heads(const Matrix& per_kv_head, int kv_heads, int group, int width) {
    Matrix out(per_kv_head.rows(), static_cast<Eigen::Index>(kv_heads) * group * width);
    for (int g = 0; g < kv_heads; ++g)
        for (int r = 0; r < group; ++r) out.middleCols((g * group + r) * width, width) = per_kv_head.middleCols(g * width, width);
    return out;
}

void latent_projections(const Scenario& s, const Matrix& x, LatentTrace& lt, SharedMatrix& w_q, Matrix& q_all, Matrix& k_all,
                        Matrix& v_all, bool any_order) {
    const LatentAttention& l = s.latent;
    const ProductKernel kernel = any_order ? ProductKernel::any_order : ProductKernel::row_major;
    const int heads = s.heads, n = static_cast<int>(x.rows()), d_qk = l.nope_dim + l.rope_dim, d_kv = l.nope_dim + l.v_dim;
    if (l.q_rank > 0) {
        lt.w_q_a = latent_weight(s, LatentWeight::QA);
        lt.w_q_b = latent_weight(s, LatentWeight::QB);
        lt.b_q_a = as_row(l.b_q_a);
        lt.q_a_norm = l.q_a_norm.size() != 0 ? as_row(l.q_a_norm) : Matrix::Ones(1, l.q_rank);
        product_into(x, lt.w_q_a, lt.q_compressed, kernel);  // (n, d_model)·(d_model, r_q) → (n, r_q)
        if (l.b_q_a.size() != 0) lt.q_compressed.rowwise() += l.b_q_a;
        lt.q_latent = rms_norm(lt.q_compressed, s.block.epsilon, lt.q_a_norm.row(0));  // RMSNorm over r_q, ⊙γ_q
        product_into(lt.q_latent, lt.w_q_b, q_all, kernel);  // (n, r_q)·(r_q, H·d_qk) → (n, H·d_qk)
        w_q = SharedMatrix();  // no W_Q: the queries' low-rank path
    } else {
        w_q = resolved_weight(s.w_q, s.d_model, heads * d_qk, s.seed, 0);
        product_into(x, w_q, q_all, kernel);  // (n, d_model)·(d_model, H·d_qk) → (n, H·d_qk)
        if (s.b_q.size() != 0) q_all.rowwise() += s.b_q;
    }
    lt.w_kv_a = latent_weight(s, LatentWeight::KVA);
    lt.w_kv_b = latent_weight(s, LatentWeight::KVB);
    lt.b_kv_a = as_row(l.b_kv_a);
    lt.kv_a_norm = l.kv_a_norm.size() != 0 ? as_row(l.kv_a_norm) : Matrix::Ones(1, l.kv_rank);
    product_into(x, lt.w_kv_a, lt.compressed, kernel);  // (n, d_model)·(d_model, r_kv + d_rope) → (n, r_kv + d_rope)
    if (l.b_kv_a.size() != 0) lt.compressed.rowwise() += l.b_kv_a;
    lt.latent = rms_norm(lt.compressed.leftCols(l.kv_rank), s.block.epsilon, lt.kv_a_norm.row(0));  // ĉ: RMSNorm(c)⊙γ_kv
    lt.k_rope = lt.compressed.rightCols(l.rope_dim);
    if (s.positional == PositionalEncoding::Rotary && l.rope_dim > 0) lt.k_rope = apply_rotary(lt.k_rope, s.rope);
    product_into(lt.latent, lt.w_kv_b, lt.expanded, kernel);  // (n, r_kv)·(r_kv, H·(d_nope + d_v)) → (n, H·(d_nope + d_v))
    k_all.resize(n, static_cast<Eigen::Index>(heads) * d_qk);
    v_all.resize(n, static_cast<Eigen::Index>(heads) * l.v_dim);
    for (int h = 0; h < heads; ++h) {
        k_all.middleCols(h * d_qk, l.nope_dim) = lt.expanded.middleCols(h * d_kv, l.nope_dim);              // k_nope,h
        k_all.middleCols(h * d_qk + l.nope_dim, l.rope_dim) = lt.compressed.rightCols(l.rope_dim);       // k_rope, every head
        v_all.middleCols(h * l.v_dim, l.v_dim) = lt.expanded.middleCols(h * d_kv + l.nope_dim, l.v_dim);  // v_h
    }
}

void prepare_inputs(const Scenario& s, Trace& t, Matrix& q_all, Matrix& k_all, Matrix& v_all) {
    t.heads = s.heads;
    TraceSettings& settings = t.settings;
    settings.scenario_name = s.name;
    settings.preset.clear();
    settings.input = s.input;
    settings.attention = s.attention;
    settings.positional = s.positional;
    settings.rope = s.rope;
    settings.mask = s.mask;
    settings.window = s.window;
    settings.chunk = s.chunk;
    settings.temperature = s.temperature;
    settings.output_gate = s.output_gate.on;
    settings.delta_net = s.delta_net.on;
    settings.differential = s.differential.on;
    t.linear = LinearTrace{};
    t.differential = DifferentialTrace{};
    settings.masked_fill = s.masked_fill;
    settings.scale = s.scale;
    settings.score_scale = s.score_scale;
    settings.softcap = s.softcap;
    settings.qk_norm = s.qk_norm;
    settings.qk_norm_plus_one = s.qk_norm_plus_one;
    settings.qk_norm_whole = s.qk_norm_whole;
    settings.sinks = s.sinks.size() != 0;
    // latent attention's sizes, the whole of it but its weights (the trace's own), so that no size is left behind
    settings.latent = s.latent;
    settings.latent.w_q_a = settings.latent.w_q_b = settings.latent.w_kv_a = settings.latent.w_kv_b = SharedMatrix();
    settings.latent.b_q_a = settings.latent.b_kv_a = settings.latent.q_a_norm = settings.latent.kv_a_norm = Vector();
    t.latent = LatentTrace{};
    settings.softmax = s.softmax;
    settings.heads = s.heads;
    settings.block = BlockOptions{};  // the switches; the weights are the trace's own
    settings.block.residual = s.block.residual;
    settings.block.layer_norm = s.block.layer_norm;
    settings.block.feed_forward = s.block.feed_forward;
    settings.block.d_ff = s.block.d_ff;
    settings.block.norm = s.block.norm;
    settings.block.activation = s.block.activation;
    settings.block.epsilon = s.block.epsilon;
    settings.block.norm_kind = s.block.norm_kind;
    settings.block.gamma_plus_one = s.block.gamma_plus_one;
    settings.block.gated = s.block.gated;
    settings.block.parallel_residual = s.block.parallel_residual;
    settings.block.sandwich_norm = s.block.sandwich_norm;
    settings.block.attention_norm = s.block.attention_norm;
    // The mixture's switches (and its E router biases, which its tooltips write out), not its
    // weights: the whole of it but the router and the experts, so that no switch is left behind.
    settings.block.moe = s.block.moe;
    settings.block.moe.router = SharedMatrix();
    settings.block.moe.weights.clear();
    settings.block.moe.shared = Expert{};
    settings.block.moe.shared_gate = SharedMatrix();
    settings.seed = s.seed;
    t.has_block = has_block(s);
    if (s.input == InputMode::Embeddings) {
        t.d_model = s.d_model;
        const bool cross = s.attention == AttentionKind::Cross;
        t.x = resolved_embeddings(s.target, s.d_model);
        t.n_queries = static_cast<int>(t.x.rows());
        t.query_tokens = labels_or_numbers(s.target.tokens, t.n_queries, "t");
        t.pe = additive_encoding(s.positional, t.n_queries, s.d_model, s.seed);
        t.x_pe = t.x + t.pe;  // (n, d_model): order enters here (sinusoidal, learned)
        if (cross) {
            t.source_x = resolved_embeddings(s.source, s.d_model);
            t.source_pe = additive_encoding(s.positional, static_cast<int>(t.source_x.rows()), s.d_model, s.seed);
            t.source_x_pe = t.source_x + t.source_pe;  // the source's positions start again at 0
        }
        // A pre-norm block's attention reads LN₁(X + PE); in cross-attention the queries'
        // stream is normalised and the source is read as given (as a decoder reads its memory).
        if (has_block(s) && s.block.norm == NormPlacement::Pre) {
            t.block.norm1 = s.block.normalises_attention_input()
                                ? block_norm(s.block, t.x_pe, resolved_norm(s.block, s.block.norm_1, s.d_model))
                                : t.x_pe;
        }
        const Matrix& queries_from = attention_input(t);
        const Matrix& keys_from = cross ? t.source_x_pe : queries_from;
        t.n_keys = static_cast<int>(keys_from.rows());
        t.key_tokens = cross ? labels_or_numbers(s.source.tokens, t.n_keys, "s") : t.query_tokens;
        const int d_k = head_dim_of(s), d_v = value_dim_of(s), kv = kv_heads_of(s);
        t.w_o = resolved_weight(s.w_o, s.heads * d_v, s.d_model, s.seed, 3);
        t.b_o = as_row(s.b_o);
        note_non_finite(t, "X", t.x);
        if (cross) note_non_finite(t, "source X", t.source_x);
        t.b_q = as_row(s.b_q);
        if (s.delta_net.on) {
            // Gated DeltaNet: its own projections, convolution and normed q and k (one per value head)
            const DeltaNetWeights w = delta_net_weights(s);
            delta_net_inputs(s, w, queries_from, nullptr, t.linear, q_all, k_all, v_all);
            t.w_q = w.w_q;
            t.w_k = w.w_k;
            t.w_v = w.w_v;
            t.linear.w_z = w.w_z;
            t.linear.w_b = w.w_b;
            t.linear.w_a = w.w_a;
            t.linear.conv = w.conv;
            t.linear.a_log = as_row(w.a_log);
            t.linear.dt_bias = as_row(w.dt_bias);
            t.linear.norm = as_row(w.norm);
            t.linear.key_heads = delta_key_heads(s);
            t.linear.conv_kernel = s.delta_net.conv_kernel;
            for (const auto& [name, m] : {std::pair{"W_Q", &t.w_q}, std::pair{"W_K", &t.w_k}, std::pair{"W_V", &t.w_v},
                                          std::pair{"W_Z", &t.linear.w_z}, std::pair{"W_b", &t.linear.w_b}, std::pair{"W_a", &t.linear.w_a}})
                note_non_finite(t, name, *m);
            note_non_finite(t, "conv", t.linear.conv);
        } else if (s.latent.on()) {
            latent_projections(s, queries_from, t.latent, t.w_q, q_all, k_all, v_all);
            for (const auto& [name, w] : {std::pair{"W_Q", &t.w_q}, std::pair{"W_q_a", &t.latent.w_q_a}, std::pair{"W_q_b", &t.latent.w_q_b},
                                          std::pair{"W_kv_a", &t.latent.w_kv_a}, std::pair{"W_kv_b", &t.latent.w_kv_b}})
                if (w->size() != 0) note_non_finite(t, name, *w);
        } else {
            t.w_q = resolved_weight(s.w_q, s.d_model, s.heads * d_k, s.seed, 0);
            t.w_k = resolved_weight(s.w_k, s.d_model, kv * d_k, s.seed, 1);
            t.w_v = resolved_weight(s.w_v, s.d_model, kv * d_k, s.seed, 2);
            note_non_finite(t, "W_Q", t.w_q);
            note_non_finite(t, "W_K", t.w_k);
            note_non_finite(t, "W_V", t.w_v);
            product_into(queries_from, t.w_q, q_all);  // (n_q, d_model)·(d_model, H·d_k) → (n_q, H·d_k)
            product_into(keys_from, t.w_k, k_all);     // (n_k, d_model)·(d_model, H_kv·d_k) → (n_k, H_kv·d_k)
            product_into(keys_from, t.w_v, v_all);     // (n_k, d_model)·(d_model, H_kv·d_v) → (n_k, H_kv·d_v)
            t.b_k = as_row(s.b_k);
            t.b_v = as_row(s.b_v);
            if (s.b_q.size() != 0) q_all.rowwise() += s.b_q;  // + b_q
            if (s.b_k.size() != 0) k_all.rowwise() += s.b_k;
            if (s.b_v.size() != 0) v_all.rowwise() += s.b_v;
        }
        note_non_finite(t, "W_O", t.w_o);
        t.w_g = s.output_gate.on ? gate_weight(s) : SharedMatrix();
        t.b_g = s.output_gate.on ? as_row(s.output_gate.b_g) : Matrix();
        if (s.output_gate.on) note_non_finite(t, "W_G", t.w_g);
        t.d_k = d_k;
        t.d_v = d_v;
    } else {
        q_all = s.q;
        k_all = s.k;
        v_all = s.v;
        t.d_k = static_cast<int>(s.q.cols()) / s.heads;
        t.d_v = static_cast<int>(s.v.cols()) / kv_heads_of(s);
        t.n_queries = static_cast<int>(s.q.rows());
        t.n_keys = static_cast<int>(s.k.rows());
        t.query_tokens = labels_or_numbers(s.direct_query_labels, t.n_queries, "q");
        t.key_tokens = labels_or_numbers(s.direct_key_labels, t.n_keys, "k");
        if (s.w_o.size() != 0) t.w_o = s.w_o;
        t.b_o = as_row(s.b_o);
        note_non_finite(t, "Q", s.q);
        note_non_finite(t, "K", s.k);
        note_non_finite(t, "V", s.v);
        if (s.positional == PositionalEncoding::Sinusoidal || s.positional == PositionalEncoding::Learned)
            t.warnings.push_back(std::string(to_string(s.positional)) +
                                 " position encoding is added to embeddings; direct Q, K, V have none, so it is not applied");
    }
    // QK-norm's weights as used: the identity's unless given (ones, or zeros in the (1 + w) form).
    t.q_norm.resize(0, 0);
    t.k_norm.resize(0, 0);
    t.q_projected.resize(0, 0);
    t.k_projected.resize(0, 0);
    if (s.qk_norm) {
        const float identity = s.qk_norm_plus_one ? 0.0f : 1.0f;
        const int q_width = s.qk_norm_whole ? static_cast<int>(q_all.cols()) : t.d_k;
        const int k_width = s.qk_norm_whole ? static_cast<int>(k_all.cols()) : t.d_k;
        t.q_norm = s.q_norm.size() != 0 ? as_row(s.q_norm) : Matrix::Constant(1, q_width, identity);
        t.k_norm = s.k_norm.size() != 0 ? as_row(s.k_norm) : Matrix::Constant(1, k_width, identity);
        if (s.qk_norm_whole) {
            // OLMo 2: each row of Q, every head at once, over its H·d_k numbers (K: H_kv·d_k),
            // before the heads are split and before RoPE.
            t.q_projected = q_all;
            t.k_projected = k_all;
            q_all = rms_norm(q_all, s.block.epsilon, t.q_norm.row(0), s.qk_norm_plus_one);  // (n_q, H·d_k)
            k_all = rms_norm(k_all, s.block.epsilon, t.k_norm.row(0), s.qk_norm_plus_one);  // (n_k, H_kv·d_k)
        }
    }
    t.scale = !s.scale ? 1.0f : s.score_scale > 0.0f ? s.score_scale : 1.0f / std::sqrt(static_cast<float>(t.d_k));
    // Llama 4's query temperature: τ_i of each query's position, which head_inputs multiplies q by
    t.temperature.resize(0, 0);
    if (s.temperature.on() && s.input == InputMode::Embeddings) {
        t.temperature.resize(t.n_queries, 1);
        for (int i = 0; i < t.n_queries; ++i) t.temperature(i, 0) = query_temperature(s.temperature, i);
    }
    t.kv_heads = kv_heads_of(s);
    settings.kv_heads = t.kv_heads;
    settings.head_dim = s.head_dim;
    // Grouped-query attention: each K/V head's columns repeated for the query heads that read
    // it, so that every later step, and every backend, sees one K and one V per query head.
    if (t.kv_heads != t.heads) {
        k_all = repeat_kv_heads(k_all, t.kv_heads, t.heads / t.kv_heads, t.d_k);
        v_all = repeat_kv_heads(v_all, t.kv_heads, t.heads / t.kv_heads, t.d_v);
    }
    // Differential attention: each head reads its pair's values side by side, 2·d_k wide (d_v from here on)
    if (s.differential.on && s.input == InputMode::Embeddings) {
        DifferentialTrace& d = t.differential;
        d.pairs = t.heads / 2;
        d.lambda_init = s.differential.lambda_init;
        const auto or_zeros = [&t](const Vector& v) { return v.size() != 0 ? Matrix(v) : Matrix(Matrix::Zero(1, t.d_k)); };
        d.lambda_q1 = or_zeros(s.differential.lambda_q1);
        d.lambda_k1 = or_zeros(s.differential.lambda_k1);
        d.lambda_q2 = or_zeros(s.differential.lambda_q2);
        d.lambda_k2 = or_zeros(s.differential.lambda_k2);
        d.lambda_1 = differential_term(s.differential.lambda_q1, s.differential.lambda_k1);
        d.lambda_2 = differential_term(s.differential.lambda_q2, s.differential.lambda_k2);
        d.lambda = differential_lambda(s.differential);
        v_all = pair_values(v_all, t.heads, t.d_v);
        t.d_v *= 2;
    }
}

Trace run(const Scenario& s) { return run(s, RunOptions{}); }

Trace run(const Scenario& s, const RunOptions& options) {
    Trace t;
    run_into(s, options, t);
    return t;
}

namespace {
std::atomic<std::uint64_t> runs_started{0};
}  // namespace

std::uint64_t engine_runs() { return runs_started.load(std::memory_order_relaxed); }

namespace {

void run_unguarded(const Scenario& s, const RunOptions& options, Trace& t) {
    // Everything but the matrices' storage starts afresh; a matrix not produced by this run
    // is emptied where it would otherwise keep the previous run's values.
    t.ok = false;
    t.errors.clear();
    t.warnings.clear();
    t.non_finite_inputs.clear();
    t.query_tokens.clear();
    t.key_tokens.clear();
    t.settings = TraceSettings{};
    t.backend = "cpu";
    t.milliseconds = 0.0;
    t.d_model = t.n_queries = t.n_keys = t.d_k = t.d_v = 0;
    t.has_block = false;
    for (Matrix* m : {&t.x, &t.pe, &t.x_pe, &t.source_x, &t.source_pe, &t.source_x_pe}) m->resize(0, 0);
    for (SharedMatrix* w : {&t.w_q, &t.w_k, &t.w_v, &t.w_o}) *w = SharedMatrix();
    t.visible.resize(0, 0);
    t.block = BlockTrace{};
    t.detail = options.detail;
    t.errors = validate(s, options.detail);
    if (!t.errors.empty()) {
        t.head.clear();
        return;
    }
    const bool full = options.detail == Detail::Full;
    const auto start = std::chrono::steady_clock::now();

    Matrix q_all, k_all, v_all;  // every head's columns side by side
    prepare_inputs(s, t, q_all, k_all, v_all);
    std::optional<PooledGrid> grid;
    if (!full && options.pool_weights) {
        std::string error;
        grid = pooled_grid(options, t.n_queries, t.n_keys, &error);
        if (!grid) {
            t.errors.push_back(error);
            t.head.clear();
            return;
        }
    }
    if (full) t.visible = mask_matrix(mask_rule(s, t.n_keys), t.n_queries);

    t.concat.resize(t.n_queries, static_cast<Eigen::Index>(t.d_v) * s.heads);
    t.head.resize(static_cast<size_t>(s.heads));
    // Full traces: heads in parallel (each head's products then run on one thread).
    // Output-only: heads in turn, each parallel over its query blocks.
    const double head_work = static_cast<double>(t.n_queries) * t.n_keys * t.d_k;
    WorkerErrors errors;
#pragma omp parallel for schedule(dynamic, 1) if (full && s.heads > 1 && head_work > (1 << 18))
    for (int h = 0; h < s.heads; ++h) errors.run([&] {
        if (s.delta_net.on) run_delta_head(t, q_all, k_all, v_all, h, full, grid, t.head[static_cast<size_t>(h)]);
        else if (full) run_head(s, t, q_all, k_all, v_all, h, t.head[static_cast<size_t>(h)]);
        else run_head_streaming(s, t, q_all, k_all, v_all, h, grid, options.cancel, t.head[static_cast<size_t>(h)]);
        t.concat.middleCols(h * t.d_v, t.d_v) = t.head[static_cast<size_t>(h)].output;  // head h → columns [h·d_v, (h+1)·d_v)
    });
    errors.rethrow();
    if (options.cancel != nullptr && options.cancel->load()) {
        t.errors.push_back("cancelled");
        t.head.clear();
        return;
    }
    finish_trace(s, t);
    t.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void run_into(const Scenario& s, const RunOptions& options, Trace& t) {
    runs_started.fetch_add(1, std::memory_order_relaxed);
    // Running out of memory is a message, on whichever thread it happened (WorkerErrors carries
    // it out of a parallel region): the trace says so and keeps nothing half-made.
    try {
        run_unguarded(s, options, t);
    } catch (const std::bad_alloc&) {
        t.ok = false;
        t.head.clear();
        t.head.shrink_to_fit();
        t.errors.assign(1, "not enough memory to compute this attention (" + std::to_string(t.n_queries) + " \xC3\x97 " +
                               std::to_string(t.n_keys) + " scores, " + std::to_string(s.heads) + " heads): use fewer tokens");
    }
}

std::optional<std::vector<PooledWeights>> repool_weights(const Scenario& s, const Trace& t, const RunOptions& options,
                                                         std::string* error) {
    const auto fail = [&](std::string why) -> std::optional<std::vector<PooledWeights>> {
        if (error) *error = std::move(why);
        return std::nullopt;
    };
    if (!t.ok || t.detail != Detail::OutputOnly || t.head.size() != static_cast<size_t>(s.heads))
        return fail("the trace is not an output-only run of this scenario");
    for (const HeadTrace& head : t.head)
        if (head.row_max.size() != t.n_queries || head.row_sum.size() != t.n_queries || head.q.rows() != t.n_queries ||
            head.k.rows() != t.n_keys)
            return fail("the trace keeps no row statistics to draw another region from");
    const std::optional<PooledGrid> grid = pooled_grid(options, t.n_queries, t.n_keys, error);
    if (!grid) return std::nullopt;
    std::vector<PooledWeights> pooled(t.head.size());
    for (size_t h = 0; h < t.head.size(); ++h) {
        const HeadTrace& head = t.head[h];
        const StreamingInputs in = streaming_inputs(s, t, head, options.cancel);
        StreamingHead rows;  // the output pass's row max and sum, as pooled_weights reads them
        rows.row_max = head.row_max;
        rows.row_sum = head.row_sum;
        pooled[h] = pooled_weights(in, rows, *grid);
        if (in.cancelled()) return fail("cancelled");
    }
    return pooled;
}

}  // namespace attn
