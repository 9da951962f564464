// The reference attention engine: every step kept, in the order the articles teach it.
//
// [SECTION] Validation
// [SECTION] Inputs: embeddings, positional encoding, weights
// [SECTION] One head
// [SECTION] The block: residual, LayerNorm, feed-forward
// [SECTION] run()
#include "engine.hpp"

#include <chrono>
#include <cmath>
#include <sstream>

#include "mask.hpp"
#include "positional.hpp"
#include "random.hpp"
#include "softmax.hpp"
#include "streaming.hpp"

namespace attn {

namespace {

// The largest trace the CPU engine builds in full: every head keeps five (n_q × n_k) float
// matrices. Beyond this the scenario is refused up front, saying how much it would need.
constexpr double kMaxTraceBytes = 4.0 * 1024 * 1024 * 1024;
constexpr int kMaxDModel = 8192;

std::string shape(Eigen::Index rows, Eigen::Index cols) {
    std::ostringstream s;
    s << rows << "×" << cols;
    return s.str();
}

void check_shape(std::vector<std::string>& errors, const char* name, const Matrix& m, Eigen::Index rows,
                 Eigen::Index cols) {
    if (m.size() == 0) return;  // empty = derived by the engine
    if (m.rows() != rows || m.cols() != cols)
        errors.push_back(std::string(name) + " is " + shape(m.rows(), m.cols()) + ", expected " + shape(rows, cols));
}

void check_sequence(std::vector<std::string>& errors, const char* which, const Sequence& seq, int d_model) {
    const auto n = static_cast<Eigen::Index>(seq.tokens.size());
    if (n == 0 && seq.embeddings.rows() == 0) {
        errors.push_back(std::string(which) + " sequence has no tokens: attention needs at least one");
        return;
    }
    if (seq.embeddings.size() != 0) {
        if (n != 0 && seq.embeddings.rows() != n)
            errors.push_back(std::string(which) + " embeddings have " + std::to_string(seq.embeddings.rows()) +
                             " rows for " + std::to_string(n) + " tokens");
        if (seq.embeddings.cols() != d_model)
            errors.push_back(std::string(which) + " embeddings have " + std::to_string(seq.embeddings.cols()) +
                             " columns, expected d_model = " + std::to_string(d_model));
    }
    if (seq.padding.size() > static_cast<size_t>(std::max<Eigen::Index>(n, seq.embeddings.rows())))
        errors.push_back(std::string(which) + " has " + std::to_string(seq.padding.size()) +
                         " padding flags for " + std::to_string(n) + " tokens");
}

int sequence_length(const Sequence& seq) {
    return seq.tokens.empty() ? static_cast<int>(seq.embeddings.rows()) : static_cast<int>(seq.tokens.size());
}

}  // namespace

// [SECTION] Validation

std::vector<std::string> validate(const Scenario& s, Detail detail) {
    std::vector<std::string> errors;
    if (s.heads < 1) errors.push_back("heads is " + std::to_string(s.heads) + ": at least 1 head is needed");

    int n_q = 0, n_k = 0;
    if (s.input == InputMode::Embeddings) {
        if (s.d_model < 1 || s.d_model > kMaxDModel) {
            errors.push_back("d_model is " + std::to_string(s.d_model) + ": expected 1 to " + std::to_string(kMaxDModel));
            return errors;
        }
        if (s.heads >= 1 && s.d_model % s.heads != 0)
            errors.push_back("d_model " + std::to_string(s.d_model) + " is not divisible by " + std::to_string(s.heads) +
                             " heads: each head needs d_k = d_model / heads columns");
        check_sequence(errors, "target", s.target, s.d_model);
        if (s.attention == AttentionKind::Cross) check_sequence(errors, "source", s.source, s.d_model);
        check_shape(errors, "W_Q", s.w_q, s.d_model, s.d_model);
        check_shape(errors, "W_K", s.w_k, s.d_model, s.d_model);
        check_shape(errors, "W_V", s.w_v, s.d_model, s.d_model);
        check_shape(errors, "W_O", s.w_o, s.d_model, s.d_model);
        n_q = sequence_length(s.target);
        n_k = s.attention == AttentionKind::Cross ? sequence_length(s.source) : n_q;
    } else {
        if (s.q.size() == 0 || s.k.size() == 0 || s.v.size() == 0) {
            errors.push_back("direct input needs q, k and v, each with at least one row and one column");
            return errors;
        }
        if (s.q.cols() != s.k.cols())
            errors.push_back("q has " + std::to_string(s.q.cols()) + " columns and k has " + std::to_string(s.k.cols()) +
                             ": a query and a key must have the same length d_k to take their dot product");
        if (s.v.rows() != s.k.rows())
            errors.push_back("v has " + std::to_string(s.v.rows()) + " rows and k has " + std::to_string(s.k.rows()) +
                             ": every key needs exactly one value");
        if (s.heads >= 1 && (s.q.cols() % s.heads != 0 || s.v.cols() % s.heads != 0))
            errors.push_back("q has " + std::to_string(s.q.cols()) + " and v has " + std::to_string(s.v.cols()) +
                             " columns: not divisible by " + std::to_string(s.heads) + " heads");
        check_shape(errors, "W_O", s.w_o, s.v.cols(), s.w_o.cols());
        if (s.block.residual || s.block.layer_norm || s.block.feed_forward)
            errors.push_back("the block (residual, LayerNorm, feed-forward) needs embeddings: direct input has no X to add back");
        n_q = static_cast<int>(s.q.rows());
        n_k = static_cast<int>(s.k.rows());
    }

    if (s.mask == MaskKind::SlidingWindow && s.window < 1)
        errors.push_back("sliding window size is " + std::to_string(s.window) + ": expected at least 1");
    if (s.mask == MaskKind::Custom && (s.custom_mask.rows() != n_q || s.custom_mask.cols() != n_k))
        errors.push_back("custom mask is " + shape(s.custom_mask.rows(), s.custom_mask.cols()) + ", expected " +
                         shape(n_q, n_k) + " (queries × keys)");
    if (std::isnan(s.masked_fill)) errors.push_back("masked fill is NaN: expected −inf or a number such as −1e9");

    // Refuse sizes that do not fit before allocating anything.
    const double heads = std::max(1, s.heads);
    const double width = s.input == InputMode::Direct ? static_cast<double>(s.q.cols() + s.k.cols() + s.v.cols())
                                                      : 6.0 * s.d_model;
    const double bytes = detail == Detail::Full ? 5.0 * heads * n_q * static_cast<double>(n_k) * sizeof(float)
                                                : 2.0 * (n_q + n_k) * width * sizeof(float);
    if (errors.empty() && bytes > kMaxTraceBytes) {
        std::ostringstream msg;
        msg.precision(3);
        msg << (detail == Detail::Full ? "a full trace of " : "an output-only run of ") << n_q << "×" << n_k
            << " scores with " << s.heads << " heads needs " << bytes / (1024.0 * 1024 * 1024) << " GiB (limit "
            << kMaxTraceBytes / (1024.0 * 1024 * 1024) << " GiB): use fewer tokens"
            << (detail == Detail::Full ? " or the output-only mode" : "");
        errors.push_back(msg.str());
    }
    return errors;
}

// [SECTION] Inputs: embeddings, positional encoding, weights

Matrix resolved_embeddings(const Sequence& seq, int d_model) {
    if (seq.embeddings.size() != 0) return seq.embeddings;
    Matrix x(static_cast<Eigen::Index>(seq.tokens.size()), d_model);
    for (size_t i = 0; i < seq.tokens.size(); ++i) x.row(static_cast<Eigen::Index>(i)) = token_embedding(seq.tokens[i], d_model);
    return x;
}

Matrix resolved_weight(const Matrix& given, int rows, int cols, std::uint64_t seed, int which) {
    if (given.size() != 0) return given;
    return xavier_uniform(rows, cols, seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(which) * 7919u + 17u);
}

Matrix layer_norm(const Matrix& x, float epsilon) {
    Matrix out(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const float mean = x.row(i).mean();
        const float var = (x.row(i).array() - mean).square().mean();
        out.row(i) = (x.row(i).array() - mean) / std::sqrt(var + epsilon);
    }
    return out;
}

std::vector<std::string> labels_or_numbers(const std::vector<std::string>& given, int n, const char* prefix) {
    if (static_cast<int>(given.size()) == n) return given;
    std::vector<std::string> labels;
    for (int i = 0; i < n; ++i) labels.push_back(prefix + std::to_string(i + 1));
    return labels;
}

void note_non_finite(Trace& t, const char* name, const Matrix& m) {
    const Cell c = first_non_finite(m);
    if (!c.valid()) return;
    t.non_finite_inputs.push_back({name, c});
    std::ostringstream msg;
    msg << name << "(" << c.row << "," << c.col << ") is " << m(c.row, c.col)
        << ": every matrix computed from it carries the non-finite value";
    t.warnings.push_back(msg.str());
}

namespace {

// [SECTION] One head

// Writes into head, reusing its storage: a recompute after an edit allocates nothing.
void run_head(const Scenario& s, const Trace& t, const Matrix& q_all, const Matrix& k_all, const Matrix& v_all, int h,
              HeadTrace& head) {
    head.q_unrotated.resize(0, 0);
    head.k_unrotated.resize(0, 0);
    head.position_bias.resize(0, 0);
    head.alibi_slope = 0.0f;
    head.pooled_weights = PooledWeights{};
    head.q = q_all.middleCols(h * t.d_k, t.d_k);  // (n_q, d_k): head h's slice of the projection
    head.k = k_all.middleCols(h * t.d_k, t.d_k);  // (n_k, d_k)
    head.v = v_all.middleCols(h * t.d_v, t.d_v);  // (n_k, d_v)
    if (s.positional == PositionalEncoding::Rotary) {
        head.q_unrotated = head.q;
        head.k_unrotated = head.k;
        head.q = apply_rotary(head.q);  // rotate pair (2i, 2i+1) of row p by p·θ_i
        head.k = apply_rotary(head.k);
    }
    head.scores.resize(t.n_queries, t.n_keys);
    head.scores.noalias() = head.q * head.k.transpose();  // (n_q, d_k)·(d_k, n_k) → (n_q, n_k)
    head.scaled_scores = head.scores * t.scale;  // ÷√d_k keeps the variance near 1
    if (s.positional == PositionalEncoding::ALiBi) {
        head.alibi_slope = alibi_slope(h, t.heads);
        head.position_bias = alibi_bias(t.n_queries, t.n_keys, head.alibi_slope);
        head.scaled_scores += head.position_bias;  // farther keys lose −m·|i − j|
    }
    head.masked_scores = head.scaled_scores;  // then the fill value where the mask hides a key
    if (s.mask != MaskKind::None) {
        const bool* visible = t.visible.data();
        float* masked = head.masked_scores.data();
        for (Eigen::Index c = 0; c < head.masked_scores.size(); ++c) masked[c] = visible[c] ? masked[c] : s.masked_fill;
    }
    std::vector<int> unused_rows;  // the mask decides which rows are fully masked, below
    softmax_rows_into(head.masked_scores, s.softmax, head.weights, unused_rows, head.softmax_overflow);  // each row → a distribution
    head.fully_masked_rows.clear();
    for (int i = 0; i < t.n_queries; ++i)  // no visible key, whatever the fill value
        if (!t.visible.row(i).any()) head.fully_masked_rows.push_back(i);
    head.output.resize(t.n_queries, t.d_v);
    head.output.noalias() = head.weights * head.v;  // (n_q, n_k)·(n_k, d_v) → (n_q, d_v)
}

// The same head without any (n_q × n_k) matrix: the output by streaming, and the weights
// only as the pooled grid the display needs.
void run_head_streaming(const Scenario& s, const Trace& t, const Matrix& q_all, const Matrix& k_all,
                        const Matrix& v_all, int h, const RunOptions& options, HeadTrace& head) {
    head = HeadTrace{};
    head.q = q_all.middleCols(h * t.d_k, t.d_k);
    head.k = k_all.middleCols(h * t.d_k, t.d_k);
    head.v = v_all.middleCols(h * t.d_v, t.d_v);
    if (s.positional == PositionalEncoding::Rotary) {
        head.q = apply_rotary(head.q);
        head.k = apply_rotary(head.k);
    }
    if (s.positional == PositionalEncoding::ALiBi) head.alibi_slope = alibi_slope(h, t.heads);
    const std::vector<bool>& key_padding =
        s.input == InputMode::Embeddings && s.attention == AttentionKind::Cross ? s.source.padding : s.target.padding;
    StreamingInputs in;
    in.q = &head.q;
    in.k = &head.k;
    in.v = &head.v;
    in.scale = t.scale;
    in.alibi_slope = head.alibi_slope;
    in.masked_fill = s.masked_fill;
    in.softmax = s.softmax;
    in.mask = MaskRule{s.mask, s.window, &key_padding, &s.custom_mask};
    StreamingHead result = streaming_attention(in);
    head.output = std::move(result.output);
    for (int i = 0; i < t.n_queries; ++i) {  // no visible key, whatever the fill value (stops at the first visible)
        int j = 0;
        while (j < t.n_keys && !in.mask.visible(i, j)) ++j;
        if (j == t.n_keys) head.fully_masked_rows.push_back(i);
    }
    head.softmax_overflow = s.softmax == SoftmaxKind::Naive && !head.output.allFinite() && q_all.allFinite() &&
                            k_all.allFinite() && v_all.allFinite();
    if (!options.pool_weights) return;
    const int row_end = options.region_row_end > 0 ? options.region_row_end : t.n_queries;
    const int col_end = options.region_col_end > 0 ? options.region_col_end : t.n_keys;
    const int bins_rows = options.pooled_rows > 0 ? options.pooled_rows : std::min(t.n_queries, 512);
    const int bins_cols = options.pooled_cols > 0 ? options.pooled_cols : std::min(t.n_keys, 512);
    head.pooled_weights = pooled_weights(in, result, options.region_row_begin, row_end, options.region_col_begin,
                                         col_end, bins_rows, bins_cols);
}

}  // namespace

// [SECTION] The block: residual, LayerNorm, feed-forward

BlockTrace run_block(const Scenario& s, const Matrix& x, const Matrix& attention_output) {
    BlockTrace b;
    const int d_model = s.d_model;
    const int d_ff = s.block.d_ff > 0 ? s.block.d_ff : 4 * d_model;
    b.residual = s.block.residual ? Matrix(x + attention_output) : attention_output;  // x + Attention(x)
    b.norm1 = s.block.layer_norm ? layer_norm(b.residual) : b.residual;
    if (s.block.feed_forward) {
        b.w_1 = resolved_weight(Matrix(), d_model, d_ff, s.seed, 10);
        b.w_2 = resolved_weight(Matrix(), d_ff, d_model, s.seed, 11);
        b.b_1 = Vector::Zero(d_ff);
        b.b_2 = Vector::Zero(d_model);
        b.ffn_hidden = ((b.norm1 * b.w_1).rowwise() + b.b_1).cwiseMax(0.0f);  // (n, d_model)·(d_model, d_ff), ReLU
        b.ffn_output = (b.ffn_hidden * b.w_2).rowwise() + b.b_2;             // (n, d_ff)·(d_ff, d_model)
        b.residual2 = s.block.residual ? Matrix(b.norm1 + b.ffn_output) : b.ffn_output;
        b.output = s.block.layer_norm ? layer_norm(b.residual2) : b.residual2;
    } else {
        b.output = b.norm1;
    }
    return b;
}

// [SECTION] run()

void prepare_inputs(const Scenario& s, Trace& t, Matrix* q_all, Matrix* k_all, Matrix* v_all) {
    t.heads = s.heads;
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
            t.source_x_pe = t.source_x + t.source_pe;
        }
        const Matrix& keys_from = cross ? t.source_x_pe : t.x_pe;
        t.n_keys = static_cast<int>(keys_from.rows());
        t.key_tokens = cross ? labels_or_numbers(s.source.tokens, t.n_keys, "s") : t.query_tokens;
        t.w_q = resolved_weight(s.w_q, s.d_model, s.d_model, s.seed, 0);
        t.w_k = resolved_weight(s.w_k, s.d_model, s.d_model, s.seed, 1);
        t.w_v = resolved_weight(s.w_v, s.d_model, s.d_model, s.seed, 2);
        t.w_o = resolved_weight(s.w_o, s.d_model, s.d_model, s.seed, 3);
        note_non_finite(t, "X", t.x);
        if (cross) note_non_finite(t, "source X", t.source_x);
        note_non_finite(t, "W_Q", t.w_q);
        note_non_finite(t, "W_K", t.w_k);
        note_non_finite(t, "W_V", t.w_v);
        note_non_finite(t, "W_O", t.w_o);
        if (q_all) {
            *q_all = t.x_pe * t.w_q;     // (n_q, d_model)·(d_model, d_model) → (n_q, h·d_k)
            *k_all = keys_from * t.w_k;  // (n_k, d_model)·(d_model, d_model) → (n_k, h·d_k)
            *v_all = keys_from * t.w_v;  // (n_k, d_model)·(d_model, d_model) → (n_k, h·d_v)
        }
        t.d_k = t.d_v = s.d_model / s.heads;
    } else {
        if (q_all) {
            *q_all = s.q;
            *k_all = s.k;
            *v_all = s.v;
        }
        t.d_k = static_cast<int>(s.q.cols()) / s.heads;
        t.d_v = static_cast<int>(s.v.cols()) / s.heads;
        t.n_queries = static_cast<int>(s.q.rows());
        t.n_keys = static_cast<int>(s.k.rows());
        t.query_tokens = labels_or_numbers(s.direct_query_labels, t.n_queries, "q");
        t.key_tokens = labels_or_numbers(s.direct_key_labels, t.n_keys, "k");
        if (s.w_o.size() != 0) t.w_o = s.w_o;
        note_non_finite(t, "Q", s.q);
        note_non_finite(t, "K", s.k);
        note_non_finite(t, "V", s.v);
        if (s.positional == PositionalEncoding::Sinusoidal || s.positional == PositionalEncoding::Learned)
            t.warnings.push_back(std::string(to_string(s.positional)) +
                                 " position encoding is added to embeddings; direct Q, K, V have none, so it is not applied");
    }
    t.scale = s.scale ? 1.0f / std::sqrt(static_cast<float>(t.d_k)) : 1.0f;
}

void add_head_warnings(const Scenario& s, Trace& t) {
    for (int h = 0; h < s.heads; ++h) {
        const HeadTrace& head = t.head[h];
        if (!head.fully_masked_rows.empty()) {
            std::string rows;
            for (int r : head.fully_masked_rows) rows += (rows.empty() ? "" : ", ") + t.query_tokens[r];
            t.warnings.push_back(
                "head " + std::to_string(h + 1) + ": query " + rows + " sees no key" +
                (std::isinf(s.masked_fill) ? std::string(" (every key masked with −∞): its weights are 0 and its output is 0")
                                           : std::string(" (every key filled with the same finite value): its weights are uniform")));
        }
        if (head.softmax_overflow)
            t.warnings.push_back("head " + std::to_string(h + 1) +
                                 ": the naive softmax overflowed (exp of a score above ~88 is inf in float32); "
                                 "the stable softmax subtracts the row max first");
    }
}

Trace run(const Scenario& s) { return run(s, RunOptions{}); }

Trace run(const Scenario& s, const RunOptions& options) {
    Trace t;
    run_into(s, options, t);
    return t;
}

void run_into(const Scenario& s, const RunOptions& options, Trace& t) {
    // Everything but the matrices' storage starts afresh; a matrix not produced by this run
    // is emptied where it would otherwise keep the previous run's values.
    t.ok = false;
    t.errors.clear();
    t.warnings.clear();
    t.non_finite_inputs.clear();
    t.query_tokens.clear();
    t.key_tokens.clear();
    t.backend = "cpu";
    t.milliseconds = 0.0;
    t.d_model = t.n_queries = t.n_keys = t.d_k = t.d_v = 0;
    t.has_block = false;
    for (Matrix* m : {&t.x, &t.pe, &t.x_pe, &t.source_x, &t.source_pe, &t.source_x_pe, &t.w_q, &t.w_k, &t.w_v, &t.w_o})
        m->resize(0, 0);
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
    prepare_inputs(s, t, &q_all, &k_all, &v_all);
    t.scale = s.scale ? 1.0f / std::sqrt(static_cast<float>(t.d_k)) : 1.0f;

    const std::vector<bool>& key_padding =
        s.input == InputMode::Embeddings && s.attention == AttentionKind::Cross ? s.source.padding : s.target.padding;
    if (full) t.visible = build_mask(s.mask, t.n_queries, t.n_keys, s.window, key_padding, s.custom_mask);

    t.concat.resize(t.n_queries, static_cast<Eigen::Index>(t.d_v) * s.heads);
    t.head.resize(static_cast<size_t>(s.heads));
    // Full traces: heads in parallel (each head's products then run on one thread).
    // Output-only: heads in turn, each parallel over its query blocks.
    const double head_work = static_cast<double>(t.n_queries) * t.n_keys * t.d_k;
#pragma omp parallel for schedule(dynamic, 1) if (full && s.heads > 1 && head_work > (1 << 18))
    for (int h = 0; h < s.heads; ++h) {
        if (full) run_head(s, t, q_all, k_all, v_all, h, t.head[static_cast<size_t>(h)]);
        else run_head_streaming(s, t, q_all, k_all, v_all, h, options, t.head[static_cast<size_t>(h)]);
        t.concat.middleCols(h * t.d_v, t.d_v) = t.head[static_cast<size_t>(h)].output;  // head h → columns [h·d_v, (h+1)·d_v)
    }
    t.output = t.w_o.size() != 0 ? Matrix(t.concat * t.w_o) : t.concat;  // (n_q, h·d_v)·(h·d_v, d_model)
    t.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    add_head_warnings(s, t);

    if (s.input == InputMode::Embeddings && (s.block.residual || s.block.layer_norm || s.block.feed_forward)) {
        t.has_block = true;
        t.block = run_block(s, t.x_pe, t.output);
    }
    t.ok = true;
}

}  // namespace attn
