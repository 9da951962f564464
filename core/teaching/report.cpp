#include "teaching/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "attention/registry.hpp"

namespace attn {

namespace {

// Display width of UTF-8 text (counts code points, which is right for the labels used here).
int display_width(const std::string& s) {
    int w = 0;
    for (unsigned char c : s) w += (c & 0xC0) != 0x80;
    return w;
}

std::string pad_left(const std::string& s, int width) {
    return std::string(static_cast<size_t>(std::max(0, width - display_width(s))), ' ') + s;
}

std::string number(double x, int decimals) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
    return buf;
}

std::string list(const std::vector<double>& values, int decimals) {
    std::string s = "[";
    for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + number(values[i], decimals);
    return s + "]";
}

}  // namespace

std::string format_matrix(const std::string& title, const Matrix& m, const std::vector<std::string>& row_labels,
                          const std::vector<std::string>& col_labels, int decimals) {
    std::ostringstream out;
    out << title << "  (" << m.rows() << "×" << m.cols() << ")\n";
    int label_width = 0;
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        if (i < static_cast<Eigen::Index>(row_labels.size())) label_width = std::max(label_width, display_width(row_labels[i]));
    int cell_width = 0;
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) cell_width = std::max(cell_width, display_width(number(m(i, j), decimals)));
    for (Eigen::Index j = 0; j < m.cols(); ++j)
        if (j < static_cast<Eigen::Index>(col_labels.size())) cell_width = std::max(cell_width, display_width(col_labels[j]));
    if (!col_labels.empty()) {
        out << std::string(static_cast<size_t>(label_width), ' ');
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            out << "  " << pad_left(j < static_cast<Eigen::Index>(col_labels.size()) ? col_labels[j] : "", cell_width);
        out << "\n";
    }
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        out << pad_left(i < static_cast<Eigen::Index>(row_labels.size()) ? row_labels[i] : "", label_width);
        for (Eigen::Index j = 0; j < m.cols(); ++j) out << "  " << pad_left(number(m(i, j), decimals), cell_width);
        out << "\n";
    }
    return out.str();
}

std::vector<std::string> numbered_columns(int n, const char* prefix) {
    std::vector<std::string> labels;
    for (int i = 1; i <= n; ++i) labels.push_back(prefix + std::to_string(i));
    return labels;
}

std::string format_head(const Trace& t, int h, const std::string& prefix, int decimals) {
    const HeadTrace& head = t.head[static_cast<size_t>(h)];
    const auto& qt = t.query_tokens;
    const auto& kt = t.key_tokens;
    std::ostringstream out;
    if (t.settings.delta_net) {  // Gated DeltaNet: its recurrence's steps in place of the softmax's
        const std::vector<std::string> one_column = {"h" + std::to_string(h + 1)};
        out << format_matrix(prefix + "q = L2norm(conv q) / \xE2\x88\x9A" "d_k", head.q, qt, numbered_columns(t.d_k, "d"), decimals) << "\n";
        out << format_matrix(prefix + "k = L2norm(conv k)", head.k, kt, numbered_columns(t.d_k, "d"), decimals) << "\n";
        out << format_matrix(prefix + "v = conv v", head.v, kt, numbered_columns(t.d_v, "d"), decimals) << "\n";
        if (t.linear.beta.cols() > h) {
            out << format_matrix(prefix + "\xCE\xB2 = \xCF\x83(x\xC2\xB7W_b)", t.linear.beta.col(h), qt, one_column, decimals) << "\n";
            out << format_matrix(prefix + "decay g = \xE2\x88\x92" "exp(A_log)\xC2\xB7softplus(x\xC2\xB7W_a + dt_bias)", t.linear.decay.col(h), qt,
                                 one_column, decimals) << "\n";
        }
        if (head.implied_weights.size())
            out << format_matrix(prefix + "implied weights A (o = A\xC2\xB7V; no softmax: rows need not sum to 1)", head.implied_weights, qt, kt,
                                 decimals) << "\n";
        out << format_matrix(prefix + "output o_t = S_t\xE1\xB5\x80q_t (= A\xC2\xB7V)", head.output, qt, numbered_columns(t.d_v, "d"), decimals) << "\n";
        out << format_matrix(prefix + "state S after the last token (d_k \xC3\x97 d_v, whatever the length)", head.state,
                             numbered_columns(t.d_k, "k"), numbered_columns(t.d_v, "v"), decimals) << "\n";
        return out.str();
    }
    if (head.q_before_norm.size()) {
        out << format_matrix(prefix + "Q before QK-norm", head.q_before_norm, qt, numbered_columns(t.d_k, "d"), decimals) << "\n";
        out << format_matrix(prefix + "K before QK-norm", head.k_before_norm, kt, numbered_columns(t.d_k, "d"), decimals) << "\n";
        out << format_matrix(prefix + "Q after QK-norm", head.q_normed, qt, numbered_columns(t.d_k, "d"), decimals) << "\n";
        out << format_matrix(prefix + "K after QK-norm", head.k_normed, kt, numbered_columns(t.d_k, "d"), decimals) << "\n";
    }
    if (t.temperature.size() != 0)  // Llama 4's query temperature: each query's τ, which Q below is multiplied by
        out << format_matrix(prefix + "query temperature \xCF\x84 = ln(floor((p + 1)/" + format_value(t.settings.temperature.floor_scale, 4) + ") + 1)\xC2\xB7" +
                                 format_value(t.settings.temperature.attn_scale, 4) + " + 1",
                             t.temperature, qt, {"\xCF\x84"}, decimals)
            << "\n";
    out << format_matrix(prefix + (t.temperature.size() != 0 ? "Q \xC3\x97 \xCF\x84" : "Q"), head.q, qt, numbered_columns(t.d_k, "d"), decimals) << "\n";
    out << format_matrix(prefix + "K", head.k, kt, numbered_columns(t.d_k, "d"), decimals) << "\n";
    out << format_matrix(prefix + "V", head.v, kt, numbered_columns(t.d_v, "d"), decimals) << "\n";
    out << format_matrix(prefix + "scores Q·Kᵀ", head.scores, qt, kt, decimals) << "\n";
    if (head.position_bias.size()) out << format_matrix(prefix + "ALiBi bias", head.position_bias, qt, kt, decimals) << "\n";
    const std::string scaled = t.scale == 1.0f ? "scores (unscaled)"
                               : has_custom_scale(t) ? "scaled scores Q·Kᵀ × " + format_value(t.scale, 4) + " (custom, in place of 1/√" +
                                                               std::to_string(t.d_k) + ")"
                                                               : "scaled scores Q·Kᵀ/√d_k";
    out << format_matrix(prefix + scaled, head.scaled_scores, qt, kt, decimals) << "\n";
    if (head.capped_scores.size())
        out << format_matrix(prefix + "soft-capped scores c·tanh(s/c), c = " + format_value(t.settings.softcap, 4), head.capped_scores, qt, kt,
                             decimals) << "\n";
    if (!t.visible.all()) out << format_matrix(prefix + "masked scores", head.masked_scores, qt, kt, decimals) << "\n";
    out << format_matrix(prefix + "attention weights softmax(·)", head.weights, qt, kt, decimals) << "\n";
    if (head.sink_weights.size())
        out << format_matrix(prefix + "sink weight (sink b = " + format_value(head.sink, 4) + "): 1 − each row's weights", head.sink_weights, qt,
                             {"sink"}, decimals) << "\n";
    out << format_matrix(prefix + "output weights·V", head.output, qt, numbered_columns(t.d_v, "d"), decimals) << "\n";
    return out.str();
}

std::string format_trace(const Trace& t, int decimals) {
    std::ostringstream out;
    if (!t.ok) {
        for (auto& e : t.errors) out << "error: " << e << "\n";
        return out.str();
    }
    out << "queries: " << t.n_queries << ", keys: " << t.n_keys << ", heads: " << t.heads << ", d_k = " << t.d_k
        << ", d_v = " << t.d_v << ", scale = " << (t.scale == 1.0f ? std::string("1 (off)") : has_custom_scale(t) ? format_value(t.scale, 4) + " (custom)" : "1/√" + std::to_string(t.d_k))
        << "\n\n";
    const auto& qt = t.query_tokens;
    const auto& kt = t.key_tokens;
    const auto columns = numbered_columns;
    if (t.x.size()) {
        out << format_matrix("X (embeddings)", t.x, qt, columns(t.d_model, "d"), decimals) << "\n";
        if (!t.pe.isZero(0)) {
            out << format_matrix("PE (positional encoding)", t.pe, qt, columns(t.d_model, "d"), decimals) << "\n";
            out << format_matrix("X + PE", t.x_pe, qt, columns(t.d_model, "d"), decimals) << "\n";
        }
    }
    if (t.source_x.size()) out << format_matrix("source X + PE", t.source_x_pe, kt, columns(t.d_model, "d"), decimals) << "\n";
    if (t.settings.latent.on()) {  // latent attention: the steps before the heads split
        const LatentAttention& l = t.settings.latent;
        if (t.latent.q_latent.size())
            out << format_matrix("queries' latent, RMSNorm(x\xC2\xB7W_q_a)\xC2\xB7\xCE\xB3_q", t.latent.q_latent, qt, columns(l.q_rank, "r"), decimals) << "\n";
        out << format_matrix("latent \xC4\x89 = RMSNorm(c)\xC2\xB7\xCE\xB3_kv: what a cache keeps, with k_rope (" + std::to_string(l.kv_rank + l.rope_dim) +
                                 " numbers a token)",
                             t.latent.latent, qt, columns(l.kv_rank, "r"), decimals)
            << "\n";
        if (t.latent.k_rope.size())
            out << format_matrix("k_rope: one rotary key for every head", t.latent.k_rope, qt, columns(l.rope_dim, "d"), decimals) << "\n";
    }
    for (size_t h = 0; h < t.head.size(); ++h)
        out << format_head(t, static_cast<int>(h), t.heads > 1 ? "head " + std::to_string(h + 1) + ": " : "", decimals);
    if (t.heads > 1) out << format_matrix("concat(heads)", t.concat, qt, columns(static_cast<int>(t.concat.cols()), "d"), decimals) << "\n";
    if (t.w_o.size()) out << format_matrix("output concat·W_O", t.output, qt, columns(static_cast<int>(t.output.cols()), "d"), decimals) << "\n";
    if (t.has_block) out << format_matrix("block output", t.block.output, qt, columns(t.d_model, "d"), decimals) << "\n";
    for (auto& w : t.warnings) out << "warning: " << w << "\n";
    return out.str();
}

std::string format_verdicts(const std::vector<Verdict>& verdicts) {
    std::ostringstream out;
    std::string preset;
    int matches = 0;
    for (const Verdict& v : verdicts) {
        if (v.preset != preset) {
            preset = v.preset;
            out << "\n== " << v.preset << " — " << v.article << "\n";
        }
        int decimals = std::max(0, static_cast<int>(std::lround(-std::log10(std::max(1e-9, v.tolerance - 1e-6) * 2.0))));
        out << (v.match ? "  MATCH     " : "  MISMATCH  ") << v.quantity << "\n";
        out << "            printed  " << list(v.printed, decimals) << "\n";
        out << "            computed " << list(v.computed, std::max(decimals, 4)) << "   (tolerance ±"
            << number(v.tolerance - 1e-6, decimals + 1) << ")\n";
        if (!v.match) out << "            why: " << v.explanation << "\n";
        matches += v.match;
    }
    out << "\n" << matches << " of " << verdicts.size() << " printed quantities match; "
        << verdicts.size() - matches << " do not.\n";
    return out.str();
}

}  // namespace attn
