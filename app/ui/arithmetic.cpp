// Tooltip arithmetic: each function writes the steps of one kind of cell.
//
// Index
// [SECTION] Formatting
// [SECTION] Inputs: X, PE, W
// [SECTION] Projections: Q, K, V
// [SECTION] Scores, scaling, mask
// [SECTION] Softmax
// [SECTION] Outputs
// [SECTION] The block: norms, feed-forward, residuals
// [SECTION] Dispatch
#include "ui/arithmetic.hpp"

#include "attention/engine.hpp"
#include "attention/positional.hpp"
#include "tensor/product.hpp"
#include "attention/registry.hpp"

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <limits>

namespace attn::ui {

// [SECTION] Formatting (numbers themselves: format_value in registry.hpp)

namespace {

constexpr const char* kTimes = "\xC2\xB7";       // ·
constexpr const char* kSqrt = "\xE2\x88\x9A";     // √
constexpr const char* kSigma = "\xCE\xA3";        // Σ
constexpr const char* kArrow = "\xE2\x86\x92";    // →
constexpr const char* kMinusInf = "\xE2\x88\x92\xE2\x88\x9E";
constexpr const char* kMinus = "\xE2\x88\x92";
constexpr const char* kTau = "\xCF\x84";          // τ

std::string num(float v) { return format_value(v, 4); }

// Where column c of a router's row ranks, from 1: ties to the smaller expert, as the engine's top k.
template <typename Row>
int rank_in_row(const Row& row, Eigen::Index c) {
    int rank = 1;
    for (Eigen::Index j = 0; j < row.size(); ++j) rank += row(j) > row(c) || (row(j) == row(c) && j < c);
    return rank;
}

// "(" a ")" when negative, so "a · (−b)" reads as a product.
std::string factor(float v) {
    const std::string s = num(v);
    return v < 0 ? "(" + s + ")" : s;
}

// The terms a_t·b_t of a dot product, several per line, at most max_terms written.
std::vector<std::string> product_terms(const std::vector<float>& a, const std::vector<float>& b, const char* lead,
                                       size_t max_terms = 16, size_t per_line = 4) {
    std::vector<std::string> lines;
    std::string line = lead;
    const size_t n = a.size();
    for (size_t t = 0; t < n && t < max_terms; ++t) {
        if (t > 0 && t % per_line == 0) {
            lines.push_back(line);
            line = "   ";
        }
        line += (t == 0 ? std::string() : std::string(" + ")) + factor(a[t]) + kTimes + factor(b[t]);
    }
    if (n > max_terms) line += " + \xE2\x80\xA6 (" + std::to_string(n - max_terms) + " more terms)";
    lines.push_back(line);
    return lines;
}

std::vector<float> row_of(const Matrix& m, int r) {
    std::vector<float> out(static_cast<size_t>(m.cols()));
    for (Eigen::Index c = 0; c < m.cols(); ++c) out[static_cast<size_t>(c)] = m(r, c);
    return out;
}
std::vector<float> col_of(const Matrix& m, int c) {
    std::vector<float> out(static_cast<size_t>(m.rows()));
    for (Eigen::Index r = 0; r < m.rows(); ++r) out[static_cast<size_t>(r)] = m(r, c);
    return out;
}

// "[a, b, c]" — long rows show a window around `focus`, marked with ⟨ ⟩.
std::string list(const std::vector<float>& v, int focus) {
    const int n = static_cast<int>(v.size());
    int begin = 0, end = n;
    if (n > 9) {
        begin = std::max(0, focus - 3);
        end = std::min(n, begin + 7);
        begin = std::max(0, end - 7);
    }
    std::string s = "[";
    if (begin > 0) s += "\xE2\x80\xA6 ";
    for (int i = begin; i < end; ++i) {
        if (i > begin) s += ", ";
        const std::string value = num(v[static_cast<size_t>(i)]);
        s += i == focus && n > 1 ? "\xE2\x9F\xA8" + value + "\xE2\x9F\xA9" : value;
    }
    if (end < n) s += " \xE2\x80\xA6";
    return s + "]";
}

// Rows, columns, tokens and heads are counted from 1 everywhere on screen (the legend says
// so); formulas that need a 0-based position (the sinusoid, RoPE) say "p = …".
std::string ix(int i) { return std::to_string(i + 1); }

std::string quoted(const std::vector<std::string>& labels, int i) {
    if (i < 0 || i >= static_cast<int>(labels.size())) return "#" + ix(i);
    return "'" + labels[static_cast<size_t>(i)] + "'";
}

// The matrix's entry and head (registry.hpp), as the dispatch found them.
using Where = MatrixRef;

// What the projections read, in words: "(X+PE)", "X", "LN₁(X+PE)".
std::string projection_input(const Trace& t) {
    const bool additive = t.settings.positional == PositionalEncoding::Sinusoidal || t.settings.positional == PositionalEncoding::Learned;
    if (&attention_input(t) == &t.block.norm1)
        return std::string(t.settings.block.norm_kind == NormKind::RMSNorm ? "RMSNorm" : "LN") + "\xE2\x82\x81" + (additive ? "(X+PE)" : "(X)");
    return additive ? "(X+PE)" : "X";
}

// [SECTION] Inputs: X, PE, W

void explain_input(const Trace& t, const TraceSettings& s, const Where& w, int r, int c, const std::string& x_meaning, Explanation& e) {
    const bool source = w.entry->rows == Axis::Key;  // a source sentence's rows count the keys
    const std::vector<std::string>& tokens = source ? t.key_tokens : t.query_tokens;
    const Matrix& x = source ? t.source_x : t.x;
    const Matrix& pe = source ? t.source_pe : t.pe;
    if (w.entry->arithmetic == Arithmetic::Embedding) {
        e.heading = "X[" + ix(r) + "," + ix(c) + "]: token " + quoted(tokens, r) +
                    ", dimension " + ix(c);
        e.lines.push_back("= " + num(x(r, c)));
        e.lines.push_back(!x_meaning.empty() && !source ? x_meaning
                          : "the token's embedding: given, edited, or derived from its text (seeded N(0, 1), same word \xE2\x86\x92 same vector)");
        e.lines.push_back("drag to scrub, double-click to type a value (NaN allowed)");
    } else if (w.entry->arithmetic == Arithmetic::Encoding) {
        e.heading = "PE[" + ix(r) + "," + ix(c) + "]: token " + ix(r) + " (position p = " + ix(r) + " in the formula), dimension " + ix(c);
        if (s.positional == PositionalEncoding::Sinusoidal) {
            const int i = c / 2;
            const double exponent = 2.0 * i / t.d_model;
            const double angle = r / std::pow(10000.0, exponent);
            char buffer[200];
            std::snprintf(buffer, sizeof buffer, "angle = p / 10000^(2i/d) = %d / 10000^(%d/%d) = %.4f", r, 2 * i,
                          t.d_model, angle);
            e.lines.push_back(buffer);
            e.lines.push_back(std::string(c % 2 == 0 ? "sin" : "cos") + "(" + num(static_cast<float>(angle)) +
                              ") = " + num(pe(r, c)) + (c % 2 == 0 ? "   (sin: dimension 2i + 1, counting from 1)" : "   (cos: dimension 2i + 2, counting from 1)"));
        } else {
            e.lines.push_back("learned table, row " + ix(r) + " = " + num(pe(r, c)));
        }
    } else {  // X + PE
        e.heading = "(X + PE)[" + ix(r) + "," + ix(c) + "]: token " + quoted(tokens, r);
        e.lines.push_back("X + PE = " + num(x(r, c)) + " + " + factor(pe(r, c)) + " = " +
                          num(x(r, c) + pe(r, c)));
    }
}

void explain_weight(const Trace& t, const Where& w, int r, int c, Explanation& e) {
    const std::string label = w.entry->label;
    const Matrix& m = *matrix_of(t, w);
    e.heading = label + "[" + ix(r) + "," + ix(c) + "] = " + num(m(r, c));
    if (w.entry->arithmetic == Arithmetic::OutputWeight && t.settings.differential) {
        const int width = std::max(1, t.d_v), pairs = std::max(1, t.differential.pairs);
        e.lines.push_back("row " + ix(r) + " reads normed column " + ix(r) + " (pair " + std::to_string(r / width + 1) + ": heads " +
                          std::to_string(r / width + 1) + " and " + std::to_string(r / width + 1 + pairs) + "), column " + ix(c) +
                          " writes output dimension " + ix(c));
    } else if (w.entry->arithmetic == Arithmetic::OutputWeight) {
        const int d_v = std::max(1, t.d_v);
        e.lines.push_back("row " + ix(r) + " reads concat column " + ix(r) + " (head " +
                          std::to_string(r / d_v + 1) + "), column " + ix(c) + " writes output dimension " +
                          ix(c));
    } else {
        const int d_k = std::max(1, w.entry->arithmetic == Arithmetic::ValueWeight ? projected_value_dim(t) : t.d_k);
        const bool kv = w.entry->edit == Editable::WK || w.entry->edit == Editable::WV;
        if (kv && t.kv_heads > 0 && t.kv_heads != t.heads) {  // grouped-query attention
            const int g = c / d_k, group = t.heads / t.kv_heads;
            e.lines.push_back("input dimension " + ix(r) + " " + kArrow + " column " + ix(c) + ": K/V head " + std::to_string(g + 1) +
                              " of " + std::to_string(t.kv_heads) + ", its column " + ix(c % d_k) + ", read by query heads " +
                              std::to_string(g * group + 1) + "\xE2\x80\x93" + std::to_string(g * group + group));
        } else {
            e.lines.push_back("input dimension " + ix(r) + " " + kArrow + " column " + ix(c) + ": head " + std::to_string(c / d_k + 1) +
                              " of " + std::to_string(t.heads) + ", its column " + ix(c % d_k));
        }
    }
    e.lines.push_back("drag to scrub, double-click to type a value (NaN allowed)");
}

// [SECTION] Projections: Q, K, V

// input[r,:] · weight[:,c] (+ bias[c]) term by term, and the sum.
float explain_product(const Matrix& input, const Matrix& weight, const Matrix& bias, int r, int c, Explanation& e) {
    const std::vector<float> xs = row_of(input, r), ws = col_of(weight, c);
    for (auto& line : product_terms(xs, ws, "= ")) e.lines.push_back(line);
    float sum = 0.0f;
    for (size_t i = 0; i < xs.size(); ++i) sum += xs[i] * ws[i];
    if (bias.size() != 0) {
        e.lines.push_back("= " + num(sum) + " + " + factor(bias(0, c)));
        sum += bias(0, c);
    }
    e.lines.push_back("= " + num(sum));
    return sum;
}

// Latent attention's Q, K or V of a head (scenario.hpp's LatentAttention): q from x·W_Q or the
// queries' latent, k's first d_nope dims and v from the latent ĉ, k's last d_rope the shared k_rope.
void explain_latent_projection(const Trace& t, const TraceSettings& s, const Where& w, int r, int c, Explanation& e) {
    const Arithmetic kind = w.entry->arithmetic;
    const bool is_q = kind == Arithmetic::Query || kind == Arithmetic::QueryBeforeRope;
    const bool is_v = kind == Arithmetic::Value;
    const bool rotated = kind == Arithmetic::Query || kind == Arithmetic::Key;
    const LatentAttention& l = s.latent;
    const LatentTrace& lt = t.latent;
    const Matrix& m = *matrix_of(t, w);
    const std::string label = is_q ? "Q" : is_v ? "V" : "K";
    e.heading = label + "[" + ix(r) + "," + ix(c) + "] (head " + std::to_string(w.head + 1) + "), token " +
                quoted(is_q ? t.query_tokens : t.key_tokens, r) + " = " + num(m(r, c));
    const int d_kv = l.nope_dim + l.v_dim, d_qk = l.nope_dim + l.rope_dim;
    const bool rope_dim = !is_v && c >= l.nope_dim;
    if (!is_q && rope_dim) {
        const int j = c - l.nope_dim;
        e.lines.push_back("dimension " + ix(c) + " is k_rope's " + ix(j) + ": the one rotary key every head shares, column " +
                          ix(l.kv_rank + j) + " of [c | k_rope] = " + num(lt.compressed(r, l.kv_rank + j)));
        if (s.positional == PositionalEncoding::Rotary)
            e.lines.push_back(rotated ? "turned by RoPE at position p = " + ix(r) + " " + kArrow + " " + num(lt.k_rope(r, j)) +
                                            " (hover the k_rope card for the pair)"
                                      : std::string("not yet turned (RoPE turns it in K)"));
        e.lines.push_back("a cache keeps this once a token, not once a head");
        return;
    }
    if (is_q && l.q_rank > 0) {
        const int column = w.head * d_qk + c;
        e.lines.push_back("Q[" + ix(r) + "," + ix(c) + "] = q latent[" + ix(r) + ",:] " + kTimes + " W_q_b[:," + ix(column) + "]");
        explain_product(lt.q_latent, lt.w_q_b, Matrix(), r, column, e);
    } else if (is_q) {
        const int column = w.head * d_qk + c;
        e.lines.push_back("Q[" + ix(r) + "," + ix(c) + "] = " + projection_input(t) + "[" + ix(r) + ",:] " + kTimes + " W_Q[:," + ix(column) + "]" +
                          (t.b_q.size() ? " + b_q[" + ix(column) + "]" : ""));
        explain_product(attention_input(t), t.w_q, t.b_q, r, column, e);
    } else {
        // k_nope and v: this head's columns of the latent's expansion
        const int column = w.head * d_kv + (is_v ? l.nope_dim : 0) + c;
        e.lines.push_back(label + "[" + ix(r) + "," + ix(c) + "] = ĉ[" + ix(r) + ",:] " + kTimes + " W_kv_b[:," + ix(column) + "]" +
                          (is_v ? "   (this head's v columns)" : "   (this head's k_nope columns)"));
        explain_product(lt.latent, lt.w_kv_b, Matrix(), r, column, e);
    }
    if (is_q && rope_dim && s.positional == PositionalEncoding::Rotary)
        e.lines.push_back(rotated ? "a rotary dimension: then RoPE turns it at position p = " + ix(r) + " " + kArrow + " " + num(m(r, c))
                                  : std::string("a rotary dimension: RoPE turns it in Q"));
    else if (is_q && rope_dim)
        e.lines.push_back("a rotary dimension (RoPE is off: as projected)");
    else if (!is_v)
        e.lines.push_back("a dimension RoPE leaves (the first d_nope = " + std::to_string(l.nope_dim) + ")");
}

void explain_projection(const Trace& t, const TraceSettings& s, const Where& w, int r, int c, Explanation& e) {
    if (s.latent.on()) {
        explain_latent_projection(t, s, w, r, c, e);
        return;
    }
    const Arithmetic kind = w.entry->arithmetic;
    const bool is_q = kind == Arithmetic::Query || kind == Arithmetic::QueryBeforeRope || kind == Arithmetic::QueryBeforeNorm;
    const bool is_v = kind == Arithmetic::Value;
    const bool rotated = kind == Arithmetic::Query || kind == Arithmetic::Key;
    // With QK-norm every Q and K card but the ones before it holds the normed rows.
    const bool normed = s.qk_norm && !is_v && kind != Arithmetic::QueryBeforeNorm && kind != Arithmetic::KeyBeforeNorm;
    const std::string norm_note = std::string("then QK-norm: the row over ") +
                                  (s.qk_norm_whole ? "the whole projection's numbers, every head's," : "its d_k numbers") + " / its RMS " + kTimes +
                                  (s.qk_norm_plus_one ? " (1 + w)" : " w") + " (hover the QK-norm card for the numbers)";
    const std::string label = is_q ? "Q" : is_v ? "V" : "K";
    const Matrix& m = *matrix_of(t, w);
    const std::vector<std::string>& tokens = is_q ? t.query_tokens : t.key_tokens;
    const int width = is_v ? projected_value_dim(t) : t.d_k;
    // K and V: the columns of the K/V head this query head reads (grouped-query attention). A
    // differential head's V is its pair's two side by side: column c < d_k is head p's, the rest head p + P's.
    const int group = t.kv_heads > 0 ? std::max(1, t.heads / t.kv_heads) : 1;
    const int pairs = std::max(1, t.differential.pairs);
    const int read_head = is_v && s.differential ? w.head % pairs + (c < width ? 0 : pairs) : w.head;
    const int column_head = !is_q && t.kv_heads > 0 ? read_head / group : read_head;
    const int global = column_head * width + (is_v && s.differential ? c % width : c);
    e.heading = label + "[" + ix(r) + "," + ix(c) + "] (head " + std::to_string(w.head + 1) +
                "), token " + quoted(tokens, r) + " = " + num(m(r, c));
    if (s.input == InputMode::Direct) {
        e.lines.push_back("given directly (direct input): column " + ix(global) + " of " + label +
                          ", " + (column_head != w.head || (!is_q && t.kv_heads != t.heads) ? "K/V head " + std::to_string(column_head + 1)
                                                                                             : "head " + std::to_string(w.head + 1)) +
                          " owns columns " + ix(column_head * width) + "\xE2\x80\x93" + std::to_string((column_head + 1) * width));
        if (normed) e.lines.push_back(norm_note);
        e.lines.push_back("drag to scrub, double-click to type a value (NaN allowed)");
        return;
    }
    const bool cross = s.attention == AttentionKind::Cross && !is_q;
    const Matrix& inputs = cross ? t.source_x_pe : attention_input(t);
    const Matrix& weights = is_q ? t.w_q : is_v ? t.w_v : t.w_k;
    const Matrix& bias = is_q ? t.b_q : is_v ? t.b_v : t.b_k;
    const std::string wname = "W_" + label;
    e.lines.push_back(label + "[" + ix(r) + "," + ix(c) + "] = " + (cross ? "(X+PE)" : projection_input(t)) + "[" +
                      ix(r) + ",:] " + kTimes + " " + wname + "[:," + ix(global) + "]" +
                      (bias.size() ? " + b[" + ix(global) + "]" : "") + (cross ? "   (source sentence)" : ""));
    explain_product(inputs, weights, bias, r, global, e);
    if (normed) e.lines.push_back(norm_note);
    if (s.positional == PositionalEncoding::Rotary && rotated) {
        // The pair this column turns with: (2i, 2i+1), or (i, i + r/2) in the rotate-half pairing.
        const int r_dims = s.rope.rotary_dims > 0 ? std::min(s.rope.rotary_dims, width) : width;
        if (c >= r_dims - r_dims % 2) {
            e.lines.push_back("RoPE turns the first " + std::to_string(r_dims) + " dimensions only: this one stays " + num(m(r, c)));
        } else {
            const bool half = s.rope.pairing == RopePairing::RotateHalf;
            const int a = half ? c % (r_dims / 2) : c / 2 * 2, b = half ? a + r_dims / 2 : a + 1;
            e.lines.push_back(std::string("then RoPE rotates the pair (") + ix(a) + ", " + ix(b) + ") by position p = " + ix(r) + " " +
                              kArrow + " " + num(m(r, c)));
            if (s.rope.scaling == RopeScalingKind::LongRope || s.rope.scaling == RopeScalingKind::Yarn || s.rope.attention_factor != 1.0f) {
                // The pair's frequency and the factor on cos and sin, as the rotation used them.
                const int pair = half ? a : a / 2;
                const std::vector<float> inv_freq = rope_inverse_frequencies(s.rope, width, t.n_keys);
                const float f = inv_freq[static_cast<std::size_t>(pair)];
                std::string line = "pair " + std::to_string(pair) + " turns by p" + kTimes + "f = " + ix(r) + " " + kTimes + " " + num(f) +
                                   " = " + num(static_cast<float>(r) * f) + " rad";
                if (s.rope.scaling == RopeScalingKind::LongRope) {
                    const bool long_factors = long_rope_factors(s.rope, t.n_keys);
                    const Vector& ext = long_factors ? s.rope.long_factor : s.rope.short_factor;
                    const float e_i = pair < ext.size() ? ext(pair) : 1.0f;
                    line += std::string(", f = 1 / (") + num(e_i) + " " + kTimes + " \xCE\xB8^(" + std::to_string(2 * pair) + "/" +
                            std::to_string(r_dims) + ")): LongRoPE's " + (long_factors ? "long" : "short") + " factor " +
                            std::to_string(pair) + " (the text has " + std::to_string(t.n_keys) + (long_factors ? " > " : " \xE2\x89\xA4 ") +
                            std::to_string(s.rope.original_max_positions) + " tokens)";
                }
                if (s.rope.scaling == RopeScalingKind::Yarn) {
                    // YaRN's blend: the pair's own frequency where it turns fast, ÷ factor where it turns slowly
                    const float own = 1.0f / std::pow(s.rope.theta, static_cast<float>(2 * pair) / static_cast<float>(r_dims));
                    const float slow = own / s.rope.factor;
                    const float kept = slow == own ? 1.0f : (f - slow) / (own - slow);
                    line += ", YaRN: " + num(kept) + " " + kTimes + " θ^(" + kMinus + std::to_string(2 * pair) + "/" + std::to_string(r_dims) +
                            ") + " + num(1.0f - kept) + " " + kTimes + " that ÷ " + num(s.rope.factor) +
                            (kept >= 1.0f ? " (a fast pair: kept)" : kept <= 0.0f ? " (a slow pair: interpolated)" : " (on the ramp between)");
                }
                e.lines.push_back(line);
                if (s.rope.attention_factor != 1.0f)
                    e.lines.push_back("cos and sin are multiplied by the attention factor " + num(s.rope.attention_factor) +
                                      ": the turned dims grow by it, q" + kTimes + "k over them by its square");
            }
        }
    }
    if (kind == Arithmetic::Query && t.temperature.size() != 0 && r < t.temperature.rows())
        e.lines.push_back(std::string("then ") + kTimes + " the query temperature " + kTau + "[" + ix(r) + "] = " + num(t.temperature(r, 0)) + " " +
                          kArrow + " " + num(m(r, c)) + " (hover the " + kTau + " card for its formula)");
}

// Gated attention's gate σ(x·W_G + b_G) and the heads' outputs it scales.
void explain_gate(const Trace& t, const Where& w, int r, int c, Explanation& e) {
    const int d_v = std::max(1, t.d_v);
    const std::string where = "head " + std::to_string(c / d_v + 1) + ", its column " + ix(c % d_v);
    if (w.entry->arithmetic == Arithmetic::Gated) {
        e.heading = "gated[" + ix(r) + "," + ix(c) + "] = " + num(t.gated(r, c));
        e.lines.push_back("concat " + num(t.concat(r, c)) + " " + kTimes + " gate " + num(t.output_gate(r, c)) + " = " + num(t.gated(r, c)) + " (" +
                          where + ")");
        e.lines.push_back("W_O reads these in place of the heads' outputs");
        return;
    }
    e.heading = "gate[" + ix(r) + "," + ix(c) + "], query " + quoted(t.query_tokens, r) + " = " + num(t.output_gate(r, c));
    e.lines.push_back(projection_input(t) + "[" + ix(r) + ",:] " + kTimes + " W_G[:," + ix(c) + "]" + (t.b_g.size() ? " + b_G[" + ix(c) + "]" : "") +
                      ", then \xCF\x83: " + where);
    const float z = explain_product(attention_input(t), t.w_g, t.b_g, r, c, e);
    e.lines.push_back("\xCF\x83(" + num(z) + ") = 1 / (1 + exp(" + num(-z) + ")) = " + num(t.output_gate(r, c)));
    e.lines.push_back("\xCF\x83 near 0: this head writes (almost) nothing for this token; near 1: all of it");
}

// Gated DeltaNet's steps: the convolution, β, the decay, an implied weight, the state, each
// head's RMSNorm and the gate.
void explain_delta(const Trace& t, const Where& w, int r, int c, Explanation& e) {
    const LinearTrace& l = t.linear;
    const int d_k = std::max(1, t.d_k), d_v = std::max(1, t.d_v), key_heads = std::max(1, l.key_heads);
    const int key_width = key_heads * d_k;
    const std::string silu = "SiLU(u) = u / (1 + exp(\xE2\x88\x92u))";
    switch (w.entry->arithmetic) {
        case Arithmetic::DeltaConv: {
            const std::string channel = c < key_width       ? "q of key head " + std::to_string(c / d_k + 1)
                                        : c < 2 * key_width ? "k of key head " + std::to_string((c - key_width) / d_k + 1)
                                                            : "v of head " + std::to_string((c - 2 * key_width) / d_v + 1);
            e.heading = "convolved[" + ix(r) + "," + ix(c) + "], token " + quoted(t.query_tokens, r) + " = " + num(l.convolved(r, c));
            e.lines.push_back("channel " + ix(c) + " (" + channel + "), over this token and the " + std::to_string(l.conv_kernel - 1) + " before it:");
            float sum = 0.0f;
            const int kernel = static_cast<int>(l.conv.cols());
            for (int i = 0; i < kernel; ++i) {
                const int row = r - (kernel - 1) + i;
                const float x = row >= 0 ? l.mixed(row, c) : 0.0f;
                sum += l.conv(c, i) * x;
                e.lines.push_back("  tap " + ix(i) + " " + num(l.conv(c, i)) + " " + kTimes + " " +
                                  (row >= 0 ? "mixed[" + ix(row) + "] " + num(x) : std::string("0 (before the text)")));
            }
            e.lines.push_back("sum u = " + num(sum) + ", then " + silu + " = " + num(l.convolved(r, c)));
            return;
        }
        case Arithmetic::DeltaBeta: {
            e.heading = "\xCE\xB2[" + ix(r) + "], head " + std::to_string(c + 1) + " = " + num(l.beta(r, c));
            const float z = explain_product(attention_input(t), l.w_b, Matrix(), r, c, e);
            e.lines.push_back("\xCF\x83(" + num(z) + ") = " + num(l.beta(r, c)) + ": the share of this token's correction " +
                              "\xCE\xB4 = \xCE\xB2" + kTimes + "(v \xE2\x88\x92 S\xE1\xB5\x80k) written into the state (1: all of it)");
            return;
        }
        case Arithmetic::DeltaDecay: {
            e.heading = "g[" + ix(r) + "], head " + std::to_string(c + 1) + " = " + num(l.decay(r, c));
            const float a = explain_product(attention_input(t), l.w_a, Matrix(), r, c, e);
            const float inner = a + l.dt_bias(0, c);
            e.lines.push_back("softplus(" + num(a) + " + dt_bias " + num(l.dt_bias(0, c)) + ") = ln(1 + exp(" + num(inner) + ")) = " +
                              num(l.decay(r, c) / -std::exp(l.a_log(0, c))));
            e.lines.push_back("\xE2\x88\x92" "exp(A_log " + num(l.a_log(0, c)) + ") " + kTimes + " it = " + num(l.decay(r, c)));
            e.lines.push_back("before this token is written, the state keeps e^g = " + num(std::exp(l.decay(r, c))) + " of itself");
            return;
        }
        case Arithmetic::ImpliedWeight: {
            const HeadTrace& head = t.head[static_cast<size_t>(w.head)];
            e.heading = "A[" + ix(r) + "," + ix(c) + "], head " + std::to_string(w.head + 1) + ": query " + quoted(t.query_tokens, r) + ", token " +
                        quoted(t.key_tokens, c) + " = " + num(head.implied_weights(r, c));
            if (c > r) {
                e.lines.push_back("0: the recurrence has not read token " + ix(c) + " when token " + ix(r) + " is written");
                return;
            }
            // u = q_r carried back through tokens r … c + 1: u ← e^g(u − β·k·(k·u))
            Vector u = head.q.row(r);
            float decayed = 1.0f;
            for (int j = r; j > c; --j) {
                const float ku = head.k.row(j).dot(u);
                u = std::exp(l.decay(j, w.head)) * (u - l.beta(j, w.head) * ku * head.k.row(j));
                decayed *= std::exp(l.decay(j, w.head));
            }
            const float ku = head.k.row(c).dot(u);
            e.lines.push_back("\xCE\xB2_" + ix(c) + " " + num(l.beta(c, w.head)) + " " + kTimes + " k_" + ix(c) + kTimes + "u = " + num(ku) + " " + kArrow +
                              " " + num(head.implied_weights(r, c)));
            e.lines.push_back("u = q_" + ix(r) + " carried back through the " + std::to_string(r - c) + " later tokens, each decaying it by e^g and " +
                              "taking out what it overwrote (I \xE2\x88\x92 \xCE\xB2" + kTimes + "k" + kTimes + "k\xE1\xB5\x80)");
            e.lines.push_back("the decays alone: " + num(decayed) + "; without overwrites A would be " + num(decayed * l.beta(c, w.head)) +
                              " " + kTimes + " q" + kTimes + "k = " + num(decayed * l.beta(c, w.head) * head.q.row(r).dot(head.k.row(c))));
            e.lines.push_back("the output's row " + ix(r) + " = \xCE\xA3_j A[" + ix(r) + ",j]" + kTimes + "v_j: what a softmax's weights do, "
                              "but no softmax made these (a row need not sum to 1, a cell may be negative)");
            return;
        }
        case Arithmetic::DeltaState: {
            const HeadTrace& head = t.head[static_cast<size_t>(w.head)];
            e.heading = "S[" + ix(r) + "," + ix(c) + "], head " + std::to_string(w.head + 1) + " = " + num(head.state(r, c));
            e.lines.push_back("after the last token: key dimension " + ix(r) + ", value dimension " + ix(c));
            e.lines.push_back("the head's whole memory of the text: " + std::to_string(head.state.rows()) + kTimes + std::to_string(head.state.cols()) +
                              " numbers at any length, where softmax attention keeps every token's k and v");
            return;
        }
        case Arithmetic::DeltaNormed: {
            const int h = c / d_v;
            const auto o = t.concat.row(r).segment(h * d_v, d_v);
            const float rms = std::sqrt(o.squaredNorm() / d_v + t.settings.block.epsilon);
            e.heading = "normed[" + ix(r) + "," + ix(c) + "] = " + num(l.normed(r, c));
            e.lines.push_back("head " + std::to_string(h + 1) + "'s o " + num(t.concat(r, c)) + " / rms " + num(rms) + " " + kTimes + " w[" + ix(c % d_v) +
                              "] " + num(l.norm(0, c % d_v)) + " = " + num(l.normed(r, c)));
            e.lines.push_back("rms over the head's " + std::to_string(d_v) + " numbers: \xE2\x88\x9A(mean(o\xC2\xB2) + \xCE\xB5)");
            return;
        }
        case Arithmetic::DeltaGated: {
            const float z = l.z(r, c), gate = z / (1.0f + std::exp(-z));
            e.heading = "gated[" + ix(r) + "," + ix(c) + "] = " + num(l.gated(r, c));
            e.lines.push_back("normed " + num(l.normed(r, c)) + " " + kTimes + " SiLU(z " + num(z) + ") " + num(gate) + " = " + num(l.gated(r, c)));
            e.lines.push_back("W_O reads these: the gate can shut a head's number for a token (SiLU near 0)");
            return;
        }
        default: {
            const Matrix* m = matrix_of(t, w);
            e.heading = std::string(w.entry->label) + "[" + ix(r) + "," + ix(c) + "] = " + num(m ? (*m)(r, c) : 0.0f);
            const std::string key = w.entry->key;
            if (key == "linear.a_log") e.lines.push_back("head " + std::to_string(c + 1) + ": A = exp(A_log) = " + num(std::exp(l.a_log(0, c))) + ", how fast its state fades");
            else if (key == "linear.conv") e.lines.push_back("channel " + ix(r) + "'s tap " + ix(c) + " (the last tap reads the token itself)");
            else e.lines.push_back("a weight of the layer, as the scenario or the checkpoint gives it");
            return;
        }
    }
}

// Llama 4's query temperature τ_i of query i.
void explain_temperature(const Trace& t, const TraceSettings& s, int r, Explanation& e) {
    const QueryTemperature& q = s.temperature;
    const float steps = std::floor((static_cast<float>(r) + 1.0f) / q.floor_scale);
    e.heading = std::string(kTau) + "[" + ix(r) + "], query " + quoted(t.query_tokens, r) + " = " + num(t.temperature(r, 0));
    e.lines.push_back(std::string(kTau) + " = ln(floor((p + 1) / floor_scale) + 1) " + kTimes + " attn_scale + 1, p = " +
                      std::to_string(r) + " (counted from 0)");
    e.lines.push_back(std::string("= ln(floor(") + std::to_string(r + 1) + " / " + num(q.floor_scale) + ") + 1) " + kTimes + " " +
                      num(q.attn_scale) + " + 1 = ln(" + num(steps) + " + 1) " + kTimes + " " + num(q.attn_scale) + " + 1");
    e.lines.push_back(steps == 0.0f ? "the first floor_scale " + std::string(kMinus) + " 1 positions keep their queries as they are (" + kTau + " = 1)"
                                    : "every head's q of this token is multiplied by it: later tokens' scores grow slowly sharper, "
                                      "which a layer without positions needs over a long text");
}

// Latent attention's own steps (scenario.hpp's LatentAttention) and weights.
// Differential attention: λ from its vectors, a pair's difference, its RMSNorm.
void explain_differential(const Trace& t, const Where& w, int r, int c, Explanation& e) {
    const DifferentialTrace& d = t.differential;
    const int width = std::max(1, t.d_v), pairs = std::max(1, d.pairs);
    const std::string lambda = "\xCE\xBB";
    switch (w.entry->arithmetic) {
        case Arithmetic::DifferentialLambda: {
            const Matrix& m = *matrix_of(t, w);
            e.heading = std::string(w.entry->label) + "[" + ix(c) + "] = " + num(m(r, c));
            e.lines.push_back(lambda + " = exp(\xCE\xA3 " + lambda + "_q1" + kTimes + lambda + "_k1) \xE2\x88\x92 exp(\xCE\xA3 " + lambda + "_q2" + kTimes +
                              lambda + "_k2) + " + lambda + "_init");
            e.lines.push_back("= " + num(d.lambda_1) + " \xE2\x88\x92 " + num(d.lambda_2) + " + " + num(d.lambda_init) + " = " + num(d.lambda));
            e.lines.push_back("one " + lambda + " for every pair of the layer: how much of the second map to take away");
            return;
        }
        case Arithmetic::DifferentialDifference: {
            const int p = c / width;
            const float first = t.concat(r, p * width + c % width), second = t.concat(r, (p + pairs) * width + c % width);
            e.heading = "o[" + ix(r) + "," + ix(c) + "], pair " + std::to_string(p + 1) + " = " + num(d.difference(r, c));
            e.lines.push_back("head " + std::to_string(p + 1) + "'s A" + kTimes + "V' " + num(first) + " \xE2\x88\x92 " + lambda + " " + num(d.lambda) + " " +
                              kTimes + " head " + std::to_string(p + pairs + 1) + "'s A" + kTimes + "V' " + num(second) + " = " + num(d.difference(r, c)));
            e.lines.push_back("what both maps give every key cancels; what the first gives more stays");
            return;
        }
        case Arithmetic::DifferentialNormed: {
            const int p = c / width;
            const auto o = d.difference.row(r).segment(static_cast<Eigen::Index>(p) * width, width);
            const float rms = std::sqrt(o.squaredNorm() / static_cast<float>(width) + t.settings.block.epsilon);
            e.heading = "normed[" + ix(r) + "," + ix(c) + "], pair " + std::to_string(p + 1) + " = " + num(d.normed(r, c));
            e.lines.push_back("(1 \xE2\x88\x92 " + lambda + "_init " + num(d.lambda_init) + ") " + kTimes + " o " + num(d.difference(r, c)) + " / rms " +
                              num(rms) + " = " + num(d.normed(r, c)));
            e.lines.push_back("rms over the pair's " + std::to_string(width) + " numbers: \xE2\x88\x9A(mean(o\xC2\xB2) + \xCE\xB5); W_O reads these");
            return;
        }
        default: return;
    }
}

void explain_latent(const Trace& t, const TraceSettings& s, const Where& w, int r, int c, Explanation& e) {
    const LatentAttention& l = s.latent;
    const LatentTrace& lt = t.latent;
    const Matrix& m = *matrix_of(t, w);
    const std::string key = w.entry->key;
    const std::string label = w.entry->label;
    e.heading = label + "[" + ix(r) + "," + ix(c) + "] = " + num(m(r, c));
    switch (w.entry->arithmetic) {
        case Arithmetic::LatentDown: {
            const bool queries = key == "latent.q_compressed";
            const Matrix& weight = queries ? lt.w_q_a : lt.w_kv_a;
            const Matrix& bias = queries ? lt.b_q_a : lt.b_kv_a;
            const std::string wname = queries ? "W_q_a" : "W_kv_a";
            e.heading += ", token " + quoted(t.query_tokens, r);
            e.lines.push_back(label + "[" + ix(r) + "," + ix(c) + "] = " + projection_input(t) + "[" + ix(r) + ",:] " + kTimes + " " + wname +
                              "[:," + ix(c) + "]" + (bias.size() ? " + b[" + ix(c) + "]" : ""));
            explain_product(attention_input(t), weight, bias, r, c, e);
            if (!queries)
                e.lines.push_back(c < l.kv_rank ? "column " + ix(c) + " of c, the compressed keys and values (RMSNorm next)"
                                                : "column " + ix(c - l.kv_rank) + " of k_rope, the rotary key every head shares");
            break;
        }
        case Arithmetic::LatentNorm: {
            const bool queries = key == "latent.q_latent";
            const Matrix before = queries ? lt.q_compressed : Matrix(lt.compressed.leftCols(l.kv_rank));
            const Matrix& gamma = queries ? lt.q_a_norm : lt.kv_a_norm;
            const float epsilon = s.block.epsilon;
            e.heading += ", token " + quoted(t.query_tokens, r);
            e.lines.push_back(std::string("RMSNorm over the row's ") + std::to_string(before.cols()) + " numbers: x / " + kSqrt +
                              "(mean(x²) + ε) " + kTimes + " γ, ε = " + format_value(epsilon, 6));
            e.lines.push_back("row " + ix(r) + " before = " + list(row_of(before, r), c));
            const float mean_square = before.row(r).array().square().mean();
            const float rms = std::sqrt(mean_square + epsilon);
            e.lines.push_back("mean(x²) = " + num(mean_square) + ", RMS = " + kSqrt + "(" + num(mean_square) + " + ε) = " + num(rms));
            e.lines.push_back("= " + num(before(r, c)) + " / " + num(rms) + " " + kTimes + " " + factor(gamma(0, c)) + " = " + num(m(r, c)));
            if (!queries) e.lines.push_back("the latent: what a cache of this layer keeps a token, with the turned k_rope");
            break;
        }
        case Arithmetic::LatentUp: {
            const int d_kv = l.nope_dim + l.v_dim;
            const int head = c / std::max(1, d_kv), within = c % std::max(1, d_kv);
            e.heading += ", token " + quoted(t.query_tokens, r);
            e.lines.push_back(label + "[" + ix(r) + "," + ix(c) + "] = ĉ[" + ix(r) + ",:] " + kTimes + " W_kv_b[:," + ix(c) + "]");
            explain_product(lt.latent, lt.w_kv_b, Matrix(), r, c, e);
            e.lines.push_back(within < l.nope_dim ? "head " + std::to_string(head + 1) + "'s k_nope, its dimension " + ix(within)
                                                  : "head " + std::to_string(head + 1) + "'s v, its dimension " + ix(within - l.nope_dim));
            break;
        }
        case Arithmetic::LatentRopeKey: {
            e.heading += ", token " + quoted(t.query_tokens, r);
            const float before = lt.compressed(r, l.kv_rank + c);
            if (s.positional != PositionalEncoding::Rotary) {
                e.lines.push_back("column " + ix(l.kv_rank + c) + " of [c | k_rope] = " + num(before) + " (RoPE is off: as projected)");
                break;
            }
            const bool half = s.rope.pairing == RopePairing::RotateHalf;
            const int d = l.rope_dim, a = half ? c % (d / 2) : c / 2 * 2, b = half ? a + d / 2 : a + 1;
            e.lines.push_back("column " + ix(l.kv_rank + c) + " of [c | k_rope] = " + num(before) + ", turned with its pair (" + ix(a) + ", " +
                              ix(b) + ") by position p = " + ix(r) + " " + kArrow + " " + num(m(r, c)));
            e.lines.push_back("one rotary key for every head: it is the last " + std::to_string(d) + " dims of each head's K");
            break;
        }
        default: {  // the weights, biases and γ
            if (key == "latent.w_q_a") e.lines.push_back("input dimension " + ix(r) + " " + kArrow + " the queries' latent, dimension " + ix(c));
            else if (key == "latent.w_kv_a")
                e.lines.push_back("input dimension " + ix(r) + " " + kArrow + (c < l.kv_rank ? " c, dimension " + ix(c) : " k_rope, dimension " + ix(c - l.kv_rank)));
            else if (key == "latent.w_q_b") {
                const int d_qk = std::max(1, l.nope_dim + l.rope_dim), within = c % d_qk;
                e.lines.push_back("latent dimension " + ix(r) + " " + kArrow + " head " + std::to_string(c / d_qk + 1) + "'s q, dimension " +
                                  ix(within) + (within < l.nope_dim ? " (no RoPE)" : " (rotary)"));
            } else if (key == "latent.w_kv_b") {
                const int d_kv = std::max(1, l.nope_dim + l.v_dim), within = c % d_kv;
                e.lines.push_back("latent dimension " + ix(r) + " " + kArrow + " head " + std::to_string(c / d_kv + 1) + "'s " +
                                  (within < l.nope_dim ? "k_nope, dimension " + ix(within) : "v, dimension " + ix(within - l.nope_dim)));
            } else {
                e.lines.push_back(key == "latent.q_a_norm" || key == "latent.kv_a_norm" ? "the RMSNorm's scale for dimension " + ix(c)
                                                                                        : "added to column " + ix(c));
            }
            e.lines.push_back("drag to scrub, double-click to type a value (NaN allowed)");
            break;
        }
    }
}

// QK-norm of one cell: the row's RMS over the head's d_k numbers, then the weight, shared by
// every head (Gemma 3: 1 + w).
void explain_qk_norm(const Trace& t, const TraceSettings& s, const Where& w, int r, int c, Explanation& e) {
    const bool is_q = w.entry->arithmetic == Arithmetic::QueryNorm;
    const HeadTrace& head = t.head[static_cast<size_t>(w.head)];
    const Matrix& before = is_q ? head.q_before_norm : head.k_before_norm;
    const Matrix& after = is_q ? head.q_normed : head.k_normed;
    const Matrix& weight = is_q ? t.q_norm : t.k_norm;
    const std::string label = is_q ? "q" : "k";
    const std::vector<std::string>& tokens = is_q ? t.query_tokens : t.key_tokens;
    e.heading = "QK-norm of " + label + "[" + ix(r) + "," + ix(c) + "] (head " + std::to_string(w.head + 1) + "), token " +
                quoted(tokens, r) + " = " + num(after(r, c));
    const float epsilon = s.block.epsilon;
    const std::string norm = "x / " + std::string(kSqrt) + "(mean(x\xC2\xB2) + \xCE\xB5) " + kTimes + (s.qk_norm_plus_one ? " (1 + w)" : " w") +
                             ", \xCE\xB5 = " + format_value(epsilon, 6);
    if (s.qk_norm_whole) {
        // OLMo 2: the row of the whole projection, every head's numbers, is what is normalised.
        const Matrix& whole = is_q ? t.q_projected : t.k_projected;
        const int g = is_q ? w.head : w.head / std::max(1, t.heads / std::max(1, t.kv_heads));
        const int column = g * t.d_k + c;  // this cell's column in the whole projection, and in w
        e.lines.push_back("RMSNorm over the whole projection's " + std::to_string(whole.cols()) + " numbers of the row (every " +
                          (is_q ? "query" : "K/V") + " head's, at once), before the heads are split: " + norm);
        const float mean_square = whole.row(r).array().square().mean();
        const float rms = std::sqrt(mean_square + epsilon);
        e.lines.push_back("mean(x\xC2\xB2) over the " + std::to_string(whole.cols()) + " numbers = " + num(mean_square) + ", RMS = " + kSqrt +
                          "(" + num(mean_square) + " + \xCE\xB5) = " + num(rms));
        const float wc = weight(0, column);
        e.lines.push_back("= " + num(before(r, c)) + " / " + num(rms) + " " + kTimes + " w[" + ix(column) + "] " + num(wc) + " = " +
                          num(after(r, c)));
        e.lines.push_back("w_" + label + " has a weight for each head and dimension: column " + ix(c) + " of this head is its column " +
                          ix(column));
        return;
    }
    e.lines.push_back("RMSNorm over the head's d_k = " + std::to_string(t.d_k) + " numbers of the row: " + norm);
    e.lines.push_back(label + " row " + ix(r) + " before the norm = " + list(row_of(before, r), c));
    const float mean_square = before.row(r).array().square().mean();
    const float rms = std::sqrt(mean_square + epsilon);
    e.lines.push_back("mean(x\xC2\xB2) = " + num(mean_square) + ", RMS = " + kSqrt + "(" + num(mean_square) + " + \xCE\xB5) = " + num(rms));
    const float wc = weight(0, c);
    const std::string scale = s.qk_norm_plus_one ? "(1 + " + factor(wc) + ")" : factor(wc);
    e.lines.push_back("= " + num(before(r, c)) + " / " + num(rms) + " " + kTimes + " " + scale + " = " + num(before(r, c) / rms) + " " +
                      kTimes + " " + num(s.qk_norm_plus_one ? 1.0f + wc : wc) + " = " + num(after(r, c)));
    e.lines.push_back("w_" + label + " is one vector for every head: the same " + scale + " scales column " + ix(c) + " of each head's " + label);
}

// [SECTION] Scores, scaling, mask

void explain_scores(const Trace& t, const TraceSettings& s, const Where& w, int r, int c, Explanation& e) {
    const HeadTrace& head = t.head[static_cast<size_t>(w.head)];
    const std::string pair = "query " + quoted(t.query_tokens, r) + " " + kArrow + " key " + quoted(t.key_tokens, c);
    const float raw = head.scores(r, c);
    const Arithmetic kind = w.entry->arithmetic;
    if (kind == Arithmetic::RawScore) {
        e.heading = "raw score q" + ix(r) + " " + kTimes + " k" + ix(c) + ", " + pair;
        const std::vector<float> q = row_of(head.q, r), k = row_of(head.k, c);
        for (auto& line : product_terms(q, k, (std::string(kSigma) + " q[t]" + kTimes + "k[t] = ").c_str()))
            e.lines.push_back(line);
        e.lines.push_back("= " + num(raw));
        return;
    }
    const float d_k = static_cast<float>(t.d_k);
    const std::string scaled_text =
        !s.scale               ? num(raw) + "   (scaling off: no division by " + kSqrt + "d_k)"
        : has_custom_scale(t) ? num(raw) + " \xC3\x97 " + num(t.scale) + " (the custom scale, in place of 1/" + kSqrt + std::to_string(t.d_k) +
                                    " = " + num(1.0f / std::sqrt(d_k)) + ") = " + num(raw * t.scale)
                               : num(raw) + " / " + kSqrt + std::to_string(t.d_k) + " = " + num(raw) + " / " + num(std::sqrt(d_k)) +
                                     " = " + num(raw * t.scale);
    if (kind == Arithmetic::PositionBias) {
        e.heading = "ALiBi bias, " + pair;
        e.lines.push_back("\xE2\x88\x92m" + std::string(kTimes) + "|i \xE2\x88\x92 j| = " +
                          "\xE2\x88\x92" + num(head.alibi_slope) + kTimes + std::to_string(std::abs(r - c)) + " = " +
                          num(head.position_bias(r, c)));
        return;
    }
    if (kind == Arithmetic::ScaledScore) {
        e.heading = "scaled score, " + pair;
        e.lines.push_back((has_custom_scale(t) ? std::string("score \xC3\x97 scale = ") : std::string("score / ") + kSqrt + "d_k = ") + scaled_text);
        if (head.position_bias.size() != 0)
            e.lines.push_back("+ ALiBi bias " + num(head.position_bias(r, c)) + " = " + num(head.scaled_scores(r, c)));
        return;
    }
    if (kind == Arithmetic::CappedScore) {
        const float cap = s.softcap, scaled = head.scaled_scores(r, c);
        e.heading = "soft-capped score, " + pair;
        e.lines.push_back("c" + std::string(kTimes) + "tanh(s / c) = " + num(cap) + kTimes + "tanh(" + num(scaled) + " / " + num(cap) +
                          ") = " + num(cap) + kTimes + "tanh(" + num(scaled / cap) + ")");
        e.lines.push_back("= " + num(cap) + kTimes + num(std::tanh(scaled / cap)) + " = " + num(head.capped_scores(r, c)));
        e.lines.push_back("no score leaves (" + std::string(kMinus) + num(cap) + ", " + num(cap) + "): one key cannot take all the weight");
        return;
    }
    // Arithmetic::MaskedScore
    e.heading = "masked score, " + pair;
    const bool capped = head.capped_scores.size() != 0;
    const float before_mask = capped ? head.capped_scores(r, c) : head.scaled_scores(r, c);
    if (t.visible(r, c)) {
        e.lines.push_back("key visible " + std::string(kArrow) + " unchanged: " + num(before_mask));
        return;
    }
    std::string why;
    switch (s.mask) {
        case MaskKind::Causal: why = "causal: key " + ix(c) + " > query " + ix(r) + " (the future)"; break;
        case MaskKind::Padding: why = "padding: key " + quoted(t.key_tokens, c) + " is padding"; break;
        case MaskKind::SlidingWindow:
            why = "sliding window " + std::to_string(s.window) + ": key outside (" + std::to_string(r + 1 - s.window) + ", " +
                  ix(r) + "]";
            break;
        case MaskKind::Custom: why = "custom mask: cell painted hidden"; break;
        case MaskKind::Chunked:
            why = c > r ? "chunked: key " + ix(c) + " > query " + ix(r) + " (the future)"
                        : "chunked " + std::to_string(s.chunk) + ": key " + ix(c) + " is in an earlier chunk than query " + ix(r) + " (its chunk starts at " +
                              ix(r - r % std::max(s.chunk, 1)) + ")";
            break;
        case MaskKind::Band:
            why = "band \xC2\xB1" + std::to_string(s.window) + ": key " + ix(c) + " is " + std::to_string(std::abs(c - r)) +
                  " positions from query " + ix(r) + ", beyond " + std::to_string(s.window);
            break;
        case MaskKind::None: why = "masked"; break;
    }
    e.lines.push_back(why);
    e.lines.push_back((capped ? "soft-capped score " : "scaled score ") + num(before_mask) + " replaced by the fill " + num(s.masked_fill) +
                      (std::isinf(s.masked_fill) ? "  (exp(" + std::string(kMinusInf) + ") = 0)" : ""));
}

// [SECTION] Softmax

void explain_weights(const Trace& t, const TraceSettings& s, const Where& w, int r, int c, Explanation& e) {
    const HeadTrace& head = t.head[static_cast<size_t>(w.head)];
    e.heading = "attention weight, query " + quoted(t.query_tokens, r) + " " + kArrow + " key " +
                quoted(t.key_tokens, c) + " = " + num(head.weights(r, c));
    const std::vector<float> scores = row_of(head.masked_scores, r);
    const bool sink = head.sink_weights.size() != 0;
    for (int fully : head.fully_masked_rows)
        if (fully == r && std::isinf(s.masked_fill)) {
            if (sink)
                e.lines.push_back("every key of this row is masked with " + std::string(kMinusInf) + ": the sink b = " + num(head.sink) +
                                  " is the row's only cell, so it takes all of the weight: weights 0, output 0");
            else
                e.lines.push_back("every key of this row is masked with " + std::string(kMinusInf) +
                                  ": no distribution exists; the rule gives weights 0 and output 0");
            return;
        }
    const bool stable = s.softmax == SoftmaxKind::Stable;
    float max = sink ? head.sink : -INFINITY;  // the sink is one more cell of the row's max and sum
    for (float v : scores) max = std::max(max, v);
    const float shift = stable ? max : 0.0f;
    std::vector<float> shifted, exps;
    const float sink_exp = sink ? std::exp(head.sink - shift) : 0.0f;
    float sum = sink_exp;
    for (float v : scores) {
        shifted.push_back(v - shift);
        exps.push_back(std::exp(v - shift));
        sum += exps.back();
    }
    e.lines.push_back("scores s (row " + ix(r) + ", after scale and mask) = " + list(scores, c));
    if (sink) e.lines.push_back("sink b = " + num(head.sink) + ": joins the max and the sum, then is dropped (gpt-oss)");
    if (stable) {
        e.lines.push_back("max = " + num(max) + (sink ? "   (of b and s; " : "   (") + "stable softmax subtracts it: exp never overflows)");
        e.lines.push_back("s \xE2\x88\x92 max = " + list(shifted, c));
        e.lines.push_back("exp(s \xE2\x88\x92 max) = " + list(exps, c));
        if (sink) e.lines.push_back("exp(b \xE2\x88\x92 max) = " + num(sink_exp));
    } else {
        e.lines.push_back("naive softmax: exp(s) directly (overflows above s \xE2\x89\x88 88)");
        e.lines.push_back("exp(s) = " + list(exps, c));
        if (sink) e.lines.push_back("exp(b) = " + num(sink_exp));
    }
    e.lines.push_back(std::string(kSigma) + (sink ? " = exp(b\xE2\x80\xA6) + " + std::string(kSigma) + " exp(s\xE2\x80\xA6) = " : std::string(" = ")) + num(sum));
    const float numerator = exps[static_cast<size_t>(c)];
    e.lines.push_back("weight = exp" + std::string(stable ? "(s_j \xE2\x88\x92 max)" : "(s_j)") + " / " + kSigma +
                      " = " + num(numerator) + " / " + num(sum) + " = " + num(head.weights(r, c)));
    if (sink) {
        const float row_sum = head.weights.row(r).sum(), taken = head.sink_weights(r, 0);
        e.lines.push_back("this row's weights sum to " + num(row_sum) + ", not 1: the sink took " + num(taken) + " (" + num(row_sum) +
                          " + " + num(taken) + " = " + num(row_sum + taken) + ")");
    }
}

// The sink's share of a row: exp(b − max) / Σ, what the row's weights fall short of 1.
void explain_sink(const Trace& t, const TraceSettings& s, const Where& w, int r, Explanation& e) {
    const HeadTrace& head = t.head[static_cast<size_t>(w.head)];
    const float taken = head.sink_weights(r, 0);
    e.heading = "sink weight, head " + std::to_string(w.head + 1) + ", query " + quoted(t.query_tokens, r) + " = " + num(taken);
    e.lines.push_back("the head's sink logit b = " + num(head.sink) + " joins row " + ix(r) + " as one more cell, never drawn as a key");
    if (head.weights.rows() > r) {
        const std::vector<float> scores = row_of(head.masked_scores, r);
        const bool stable = s.softmax == SoftmaxKind::Stable;
        float max = head.sink;
        for (float v : scores) max = std::max(max, v);
        const float shift = stable ? max : 0.0f;
        float sum = std::exp(head.sink - shift);
        for (float v : scores) sum += std::exp(v - shift);
        e.lines.push_back(stable ? "max(b, s) = " + num(max) + ", exp(b \xE2\x88\x92 max) = " + num(std::exp(head.sink - shift))
                                 : "naive: exp(b) = " + num(std::exp(head.sink)));
        e.lines.push_back("sink weight = " + num(std::exp(head.sink - shift)) + " / " + kSigma + " " + num(sum) + " = " + num(taken));
        e.lines.push_back("the row's weights sum to 1 " + std::string(kMinus) + " " + num(taken) + " = " + num(head.weights.row(r).sum()) +
                          ": the sink's share goes to no value, so the output is that much smaller");
    } else {
        e.lines.push_back("from the row's max m and sum l: exp(b \xE2\x88\x92 m) / l (output-only run)");
    }
    e.lines.push_back("real models park attention on a sink, or on the first token (Xiao et al. 2023)");
}

// [SECTION] Outputs

void explain_head_output(const Trace& t, const Where& w, int r, int c, Explanation& e) {
    const HeadTrace& head = t.head[static_cast<size_t>(w.head)];
    e.heading = "head " + std::to_string(w.head + 1) + " output[" + ix(r) + "," + ix(c) +
                "], query " + quoted(t.query_tokens, r) + " = " + num(head.output(r, c));
    e.lines.push_back(std::string(kSigma) + "_j weight[" + ix(r) + ",j] " + kTimes + " V[j," +
                      ix(c) + "]");
    const std::vector<float> ws = row_of(head.weights, r), vs = col_of(head.v, c);
    for (auto& line : product_terms(ws, vs, "= ")) e.lines.push_back(line);
    e.lines.push_back("= " + num(head.output(r, c)));
}

void explain_output(const Trace& t, const Where& w, int r, int c, Explanation& e) {
    if (w.entry->arithmetic == Arithmetic::Concat) {
        const int d_v = std::max(1, t.d_v);
        e.heading = "concat[" + ix(r) + "," + ix(c) + "] = " + num(t.concat(r, c));
        e.lines.push_back("head " + std::to_string(c / d_v + 1) + " output, its column " + ix(c % d_v) +
                          " (head h owns columns (h\xE2\x88\x92" "1)" + kTimes + "d_v + 1 to h" + kTimes + "d_v)");
        return;
    }
    e.heading = "output[" + ix(r) + "," + ix(c) + "], query " + quoted(t.query_tokens, r) +
                " = " + num(t.output(r, c));
    if (t.w_o.size() == 0) {
        e.lines.push_back("no W_O in this scenario: the output is the concatenation");
        return;
    }
    const OutputInput read = output_projection_input(t);  // the concat, or the gated heads or the normed pairs
    e.lines.push_back(std::string(read.name) + "[" + ix(r) + ",:] " + kTimes + " W_O[:," + ix(c) + "]" +
                      (t.b_o.size() ? " + b_o[" + ix(c) + "]" : ""));
    for (auto& line : product_terms(row_of(read.m, r), col_of(t.w_o, c), "= ")) e.lines.push_back(line);
    if (t.b_o.size() != 0) e.lines.push_back("+ " + factor(t.b_o(0, c)));
    e.lines.push_back("= " + num(t.output(r, c)));
}

// [SECTION] The block: norms, feed-forward, residuals

// The block's norm with its subscript: "LN₁", "RMSNorm₂".
std::string norm_symbol(const TraceSettings& s, const char* subscript) {
    return std::string(s.block.norm_kind == NormKind::RMSNorm ? "RMSNorm" : "LN") + subscript;
}

std::string activation_name(Activation a) {
    switch (a) {
        case Activation::ReLU: return "ReLU";
        case Activation::GeluTanh: return "GELU-tanh";
        case Activation::GeluErf: return "GELU-erf";
        case Activation::SiLU: return "SiLU";
    }
    return "?";
}

// "SiLU(z) = z / (1 + e^(−z)) = v": the activation at z, its value v as the trace holds it.
std::string activation_line(Activation a, float z, float v) {
    const std::string at = activation_name(a) + "(" + num(z) + ")";
    switch (a) {
        case Activation::ReLU: return at + " = max(0, " + num(z) + ") = " + num(v);
        case Activation::GeluTanh:
            return at + " = \xC2\xBD" + kTimes + "z" + kTimes + "(1 + tanh(" + kSqrt + "(2/\xCF\x80)" + kTimes +
                   "(z + 0.044715z\xC2\xB3))) = " + num(v);
        case Activation::GeluErf: return at + " = \xC2\xBD" + kTimes + "z" + kTimes + "(1 + erf(z/" + kSqrt + "2)) = " + num(v);
        case Activation::SiLU: return at + " = z / (1 + e^(\xE2\x88\x92z)) = " + num(v);
    }
    return at + " = " + num(v);
}

// One norm's cell with its numbers: LayerNorm or RMSNorm (and RMSNorm's (1 + γ) form), as the
// trace's settings say. `input` is the matrix the norm read, γ and β as used (β empty: none).
void explain_norm(const TraceSettings& s, const Matrix& input, const Matrix& gamma, const Matrix& beta, int r, int c,
                  Explanation& e) {
    if (!s.block.layer_norm || input.rows() <= r || gamma.cols() <= c) {
        e.lines.push_back("no norm: the row as it is");
        return;
    }
    const std::string eps = format_value(s.block.epsilon, 6);
    const float x = input(r, c);
    if (s.block.norm_kind == NormKind::RMSNorm) {
        const bool plus_one = s.block.gamma_plus_one;
        e.lines.push_back("RMSNorm: x / " + std::string(kSqrt) + "(mean(x\xC2\xB2) + \xCE\xB5) " + kTimes +
                          (plus_one ? " (1 + \xCE\xB3)   (Gemma: \xCE\xB3 as its checkpoint stores it)" : " \xCE\xB3") +
                          ", no mean subtracted, no \xCE\xB2, \xCE\xB5 = " + eps);
        const float mean_square = input.row(r).array().square().mean();
        const float rms = std::sqrt(mean_square + s.block.epsilon);
        e.lines.push_back("row " + ix(r) + " = " + list(row_of(input, r), c));
        e.lines.push_back("mean(x\xC2\xB2) = " + num(mean_square) + ", " + kSqrt + "(" + num(mean_square) + " + \xCE\xB5) = " + num(rms));
        const float g = gamma(0, c);
        e.lines.push_back("= " + num(x) + " / " + num(rms) + " " + kTimes + " " +
                          (plus_one ? "(1 + " + factor(g) + ")" : factor(g)));
        return;
    }
    const float mean = input.row(r).mean();
    const float var = (input.row(r).array() - mean).square().mean();
    e.lines.push_back("\xCE\xB3" + std::string(kTimes) + "(x \xE2\x88\x92 mean) / " + kSqrt +
                      "(var + \xCE\xB5) + \xCE\xB2, var biased (\xC3\xB7 d), \xCE\xB5 = " + eps);
    e.lines.push_back("mean = " + num(mean) + ", var = " + num(var));
    e.lines.push_back("= " + num(gamma(0, c)) + " " + kTimes + " (" + num(x) + " \xE2\x88\x92 " + factor(mean) + ") / " + kSqrt +
                      "(" + num(var) + " + \xCE\xB5) + " + factor(beta.cols() > c ? beta(0, c) : 0.0f));
}

void explain_block(const Trace& t, const Where& w, int r, int c, Explanation& e) {
    const Matrix& m = *matrix_of(t, w);
    e.heading = display_name(matrix_name(w)) + "[" + ix(r) + "," + ix(c) + "] = " + num(m(r, c));
    const Arithmetic kind = w.entry->arithmetic;
    const BlockTrace& b = t.block;
    const TraceSettings& s = t.settings;
    const bool pre = s.block.norm == NormPlacement::Pre;
    const std::string n1 = norm_symbol(s, "\xE2\x82\x81"), n2 = norm_symbol(s, "\xE2\x82\x82");
    const Matrix& ffn_input = pre ? b.norm2 : b.norm1;
    const std::string ffn_input_name = pre ? n2 : n1 + " output";
    switch (kind) {
        case Arithmetic::Residual:
            if (s.block.sandwich_norm)
                e.lines.push_back("(X+PE) + " + norm_symbol(s, "") + "(attention) = " + num(t.x_pe(r, c)) + " + " + factor(b.post_attention_norm(r, c)));
            else
                e.lines.push_back("(X+PE) + attention output = " + num(t.x_pe(r, c)) + " + " + factor(t.output(r, c)));
            break;
        case Arithmetic::Norm1: explain_norm(s, pre ? t.x_pe : b.residual, b.gamma_1, b.beta_1, r, c, e); break;
        case Arithmetic::Norm2:
            if (s.block.parallel_residual) e.lines.push_back("parallel residual: " + n2 + " reads the block's input X + PE, as " + n1 + " does");
            explain_norm(s, s.block.parallel_residual ? t.x_pe : b.residual, b.gamma_2, b.beta_2, r, c, e);
            break;
        case Arithmetic::PostAttentionNorm:
            e.lines.push_back("the sandwich (Gemma 2/3): attention's output is normalised before the residual adds it");
            explain_norm(s, t.output, b.gamma_post_attention, b.beta_post_attention, r, c, e);
            break;
        case Arithmetic::PostFeedForwardNorm:
            e.lines.push_back("the sandwich (Gemma 2/3): the feed-forward's output is normalised before the residual adds it");
            explain_norm(s, b.ffn_output, b.gamma_post_feed_forward, b.beta_post_feed_forward, r, c, e);
            break;
        case Arithmetic::FeedForwardHidden: {
            e.lines.push_back(activation_name(s.block.activation) + "(" + ffn_input_name + "[" + ix(r) + ",:] " + kTimes + " W_1[:," +
                              ix(c) + "] + b_1[" + ix(c) + "])");
            const float z = explain_product(ffn_input, b.w_1, b.b_1, r, c, e);
            e.lines.push_back(activation_line(s.block.activation, z, m(r, c)));
            break;
        }
        case Arithmetic::Gate: {
            e.lines.push_back("gate = " + activation_name(s.block.activation) + "(" + ffn_input_name + "[" + ix(r) + ",:] " + kTimes +
                              " W_gate[:," + ix(c) + "])");
            const float z = explain_product(ffn_input, b.w_gate, Matrix(), r, c, e);
            e.lines.push_back(activation_line(s.block.activation, z, m(r, c)));
            break;
        }
        case Arithmetic::UpProjection:
            e.lines.push_back("up = " + ffn_input_name + "[" + ix(r) + ",:] " + kTimes + " W_1[:," + ix(c) + "]   (no activation)");
            explain_product(ffn_input, b.w_1, Matrix(), r, c, e);
            break;
        case Arithmetic::GateProduct:
            e.lines.push_back("gate[" + ix(r) + "," + ix(c) + "] " + kTimes + " up[" + ix(r) + "," + ix(c) + "] = " + num(b.ffn_gate(r, c)) +
                              " " + kTimes + " " + factor(b.ffn_up(r, c)) + " = " + num(m(r, c)));
            e.lines.push_back("the gate, " + activation_name(s.block.activation) + " of its own projection, says how much of this up unit passes");
            break;
        case Arithmetic::RouterLogit: {
            const Vector& bias = s.block.moe.router_bias;
            e.lines.push_back("router logit = " + ffn_input_name + "[" + ix(r) + ",:] " + kTimes + " W_router[:," + ix(c) + "]" +
                              (bias.size() != 0 ? " + b_router[" + ix(c) + "]" : "") + ": expert " + ix(c) + "'s score for this token");
            explain_product(ffn_input, b.router, bias.size() != 0 ? Matrix(bias) : Matrix(), r, c, e);
            break;
        }
        case Arithmetic::RouterProbability: {
            if (s.block.moe.router_kind == RouterKind::SigmoidGrouped) {
                const float z = b.router_logits(r, c);
                e.lines.push_back("σ(" + num(z) + ") = 1 / (1 + exp(" + num(-z) + ")) = " + num(m(r, c)) + ": expert " + ix(c) +
                                  "'s score on its own (a sigmoid, not a softmax: the row need not sum to 1)");
                break;
            }
            const auto logits = b.router_logits.row(r);
            const float top = logits.maxCoeff();
            float sum = 0.0f;
            for (Eigen::Index j = 0; j < logits.size(); ++j) sum += std::exp(logits(j) - top);
            e.lines.push_back("softmax over token " + ix(r) + "'s " + std::to_string(logits.size()) + " router logits:");
            e.lines.push_back("exp(" + num(logits(c)) + " " + kMinus + " " + num(top) + ") / " + num(sum) + " = " + num(m(r, c)));
            break;
        }
        case Arithmetic::RouterChoice: {
            const MixtureOfExperts& moe = s.block.moe;
            const int size = static_cast<int>(b.routing.cols()) / std::max(1, moe.groups), group = c / std::max(1, size);
            const float bias = moe.choice_bias.size() != 0 ? moe.choice_bias(c) : 0.0f;
            const float choice = b.router_probabilities(r, c) + bias;
            if (m(r, c) == 0.0f && choice != 0.0f) {
                e.lines.push_back("0: expert " + ix(c) + " is in group " + std::to_string(group + 1) + " of " + std::to_string(moe.groups) +
                                  ", not among the token's " + std::to_string(moe.top_groups) + " best groups (a group's score: its 2 best choices)");
                e.lines.push_back("its own would have been σ " + num(b.router_probabilities(r, c)) + " + b_choice " + factor(bias) + " = " + num(choice));
                break;
            }
            e.lines.push_back("σ " + num(b.router_probabilities(r, c)) + " + b_choice[" + ix(c) + "] " + factor(bias) + " = " + num(m(r, c)) +
                              ": expert " + ix(c) + ", group " + std::to_string(group + 1) + " (kept)");
            e.lines.push_back("the bias steers which experts are chosen (balancing their load); the weights use σ alone");
            break;
        }
        case Arithmetic::Routing: {
            const MixtureOfExperts& moe = s.block.moe;
            if (moe.router_kind == RouterKind::SigmoidGrouped) {
                const auto choice = b.router_choice.row(r);
                const int rank = rank_in_row(choice, c);
                if (m(r, c) == 0.0f && rank > moe.top_k) {
                    e.lines.push_back("not kept: expert " + ix(c) + "'s choice " + num(choice(c)) + " ranks " + std::to_string(rank) + " of " +
                                      std::to_string(choice.size()) + ", below the top " + std::to_string(moe.top_k));
                    break;
                }
                const float score = b.router_probabilities(r, c);
                float kept = 0.0f;
                for (Eigen::Index j = 0; j < b.routing.cols(); ++j)
                    if (b.routing(r, j) != 0.0f) kept += b.router_probabilities(r, j);
                e.lines.push_back("kept: expert " + ix(c) + "'s choice " + num(choice(c)) + " ranks " + std::to_string(rank) + " of the top " +
                                  std::to_string(moe.top_k) + "; its weight comes from its σ " + num(score));
                e.lines.push_back((moe.normalize_top_k ? num(score) + " / " + num(kept) + " " : num(score) + " ") + kTimes + " " +
                                  format_value(moe.routed_scale, 4) + " (routed_scaling_factor) = " + num(m(r, c)));
                if (moe.is_ablated(c)) e.lines.push_back("expert " + ix(c) + " is ablated: its output is dropped, the others' weights stay");
                break;
            }
            if (moe.router_kind == RouterKind::TopKThenSigmoid) {
                // Llama 4: the top k logits are kept, each weighed by its own σ, which scales what the expert reads
                const auto logits = b.router_logits.row(r);
                const int rank = rank_in_row(logits, c);
                if (m(r, c) == 0.0f && rank > moe.top_k) {
                    e.lines.push_back("not kept: expert " + ix(c) + "'s logit " + num(logits(c)) + " ranks " + std::to_string(rank) + " of " +
                                      std::to_string(logits.size()) + ", below the top " + std::to_string(moe.top_k) + " (σ(" + kMinusInf + ") = 0)");
                    break;
                }
                e.lines.push_back("kept: expert " + ix(c) + "'s logit " + num(logits(c)) + " ranks " + std::to_string(rank) + " of the top " +
                                  std::to_string(moe.top_k) + "; σ(" + num(logits(c)) + ") = 1 / (1 + exp(" + num(-logits(c)) + ")) = " + num(m(r, c)));
                e.lines.push_back(moe.weight_input ? "the expert reads " + num(m(r, c)) + " " + kTimes + " x and its output is added as it is (Llama 4)"
                                                   : "the expert's output is added " + std::string(kTimes) + " " + num(m(r, c)));
                if (moe.is_ablated(c)) e.lines.push_back("expert " + ix(c) + " is ablated: its output is dropped, the others' weights stay");
                break;
            }
            if (moe.router_kind == RouterKind::TopKThenSoftmax) {
                // gpt-oss: the top k logits are kept, and softmax runs over those k only
                const auto logits = b.router_logits.row(r);
                const int rank = rank_in_row(logits, c);
                if (m(r, c) == 0.0f && rank > moe.top_k) {
                    e.lines.push_back("not kept: expert " + ix(c) + "'s logit " + num(logits(c)) + " ranks " + std::to_string(rank) + " of " +
                                      std::to_string(logits.size()) + ", below the top " + std::to_string(moe.top_k));
                    break;
                }
                float top = -std::numeric_limits<float>::infinity(), sum = 0.0f;
                for (Eigen::Index j = 0; j < b.routing.cols(); ++j)
                    if (b.routing(r, j) != 0.0f) top = std::max(top, logits(j));
                for (Eigen::Index j = 0; j < b.routing.cols(); ++j)
                    if (b.routing(r, j) != 0.0f) sum += std::exp(logits(j) - top);
                e.lines.push_back("kept: expert " + ix(c) + "'s logit " + num(logits(c)) + " ranks " + std::to_string(rank) + " of the top " +
                                  std::to_string(moe.top_k) + " (top k first, then softmax over those k only)");
                e.lines.push_back("exp(" + num(logits(c)) + " " + kMinus + " " + num(top) + ") / " + num(sum) + " = " + num(m(r, c)));
                if (moe.is_ablated(c)) e.lines.push_back("expert " + ix(c) + " is ablated: its output is dropped, the others' weights stay");
                break;
            }
            const auto p = b.router_probabilities.row(r);
            int rank = 1;  // where expert c's probability ranks (ties: the smaller expert first)
            for (Eigen::Index j = 0; j < p.size(); ++j) rank += p(j) > p(c) || (p(j) == p(c) && j < c);
            if (m(r, c) == 0.0f && rank > moe.top_k) {
                e.lines.push_back("not kept: expert " + ix(c) + "'s probability " + num(p(c)) + " ranks " + std::to_string(rank) + " of " +
                                  std::to_string(p.size()) + ", below the top " + std::to_string(moe.top_k));
                break;
            }
            e.lines.push_back("kept: expert " + ix(c) + "'s probability " + num(p(c)) + " ranks " + std::to_string(rank) + " of the top " +
                              std::to_string(moe.top_k));
            if (moe.normalize_top_k) {
                float kept = 0.0f;
                for (Eigen::Index j = 0; j < b.routing.cols(); ++j)
                    if (b.routing(r, j) != 0.0f) kept += p(j);
                e.lines.push_back("renormalised over the kept experts: " + num(p(c)) + " / " + num(kept) + " = " + num(m(r, c)));
            } else {
                e.lines.push_back("taken as it is (no renormalisation): the kept weights sum to less than 1");
            }
            if (moe.is_ablated(c)) e.lines.push_back("expert " + ix(c) + " is ablated: its output is dropped, the others' weights stay");
            break;
        }
        case Arithmetic::SharedGate: {
            e.lines.push_back("gate = " + ffn_input_name + "[" + ix(r) + ",:] " + kTimes + " g, then \xCF\x83: how much of the shared expert token " +
                              ix(r) + " takes");
            const float z = explain_product(ffn_input, b.shared_gate, Matrix(), r, c, e);
            e.lines.push_back("\xCF\x83(" + num(z) + ") = 1 / (1 + exp(" + num(-z) + ")) = " + num(m(r, c)));
            break;
        }
        case Arithmetic::SharedExpertOutput: {
            // The shared expert on this token's row, before and after its gate.
            Matrix down;
            expert_forward(s.block.moe, s.block.activation, b.shared_expert, ffn_input.row(r), down, true);
            e.lines.push_back("shared(" + ffn_input_name + ")[" + ix(r) + "," + ix(c) + "] = (" + activation_name(s.block.activation) +
                              "(x" + kTimes + "W_gate) \xE2\x8A\x99 x" + kTimes + "W_1)" + kTimes + "W_2 = " + num(down(0, c)) +
                              ": every token runs it, whatever the router chose");
            if (s.block.moe.shared_gated && b.shared_gate_values.rows() > r)
                e.lines.push_back(kTimes + std::string(" its gate \xCF\x83(x") + kTimes + "g) = " + num(b.shared_gate_values(r, 0)) + " " +
                                  kTimes + " " + factor(down(0, c)) + " = " + num(m(r, c)));
            break;
        }
        case Arithmetic::FeedForwardOutput: {
            if (s.block.moe.routed()) {
                // Each kept expert's output for this token, weighted, summed in expert order.
                e.lines.push_back("\xCE\xA3 over token " + ix(r) + "'s kept experts of routing " + kTimes + " expert(" + ffn_input_name + ")[" + ix(c) + "]:");
                const Matrix x = ffn_input.row(r);
                float sum = 0.0f;
                for (Eigen::Index j = 0; j < b.routing.cols(); ++j) {
                    const float weight = b.routing(r, j);
                    if (weight == 0.0f || static_cast<size_t>(j) >= b.experts.size()) continue;
                    Matrix down;
                    expert_forward(s.block.moe, s.block.activation, b.experts[static_cast<size_t>(j)], x, down, true);
                    const bool dropped = s.block.moe.is_ablated(static_cast<int>(j));
                    e.lines.push_back("expert " + ix(static_cast<int>(j)) + ": " + num(weight) + " " + kTimes + " " + factor(down(0, c)) +
                                      (dropped ? "   ablated: adds nothing" : ""));
                    if (!dropped) sum += weight * down(0, c);
                }
                if (s.block.moe.has_shared() && b.shared_output.rows() > r) {
                    e.lines.push_back("+ the shared expert: " + factor(b.shared_output(r, c)));
                    sum += b.shared_output(r, c);
                }
                e.lines.push_back("= " + num(sum));
                break;
            }
            const bool gated = s.block.gated;
            e.lines.push_back(std::string(gated ? "(gate \xE2\x8A\x99 up)" : "hidden") + " row " + ix(r) + " " + kTimes + " W_2[:," + ix(c) + "]" +
                              (gated ? "" : " + b_2[" + ix(c) + "]"));
            explain_product(gated ? b.ffn_product : b.ffn_hidden, b.w_2, gated ? Matrix() : b.b_2, r, c, e);
            break;
        }
        case Arithmetic::Residual2: {
            const Matrix& added = s.block.sandwich_norm ? b.post_feed_forward_norm : b.ffn_output;
            const std::string ffn = s.block.sandwich_norm ? norm_symbol(s, "") + "(FFN)" : "FFN";
            if (s.block.parallel_residual)
                e.lines.push_back("parallel: (X+PE) + attention + FFN = " + num(t.x_pe(r, c)) + " + " + factor(t.output(r, c)) + " + " +
                                  factor(added(r, c)));
            else {
                const Matrix& around = pre ? b.residual : b.norm1;
                e.lines.push_back(std::string(pre ? "residual" : n1 + " output") + " + " + ffn + " = " + num(around(r, c)) + " + " +
                                  factor(added(r, c)));
            }
            break;
        }
        case Arithmetic::BlockOutput:
            e.lines.push_back(!pre && s.block.layer_norm ? n2 + " of residual 2 (post-norm, as in the 2017 paper)"
                                                         : "residual 2, as it is (pre-norm: the next layer normalises)");
            break;
        default:
            if (s.block.gamma_plus_one && (w.entry->edit == Editable::Gamma1 || w.entry->edit == Editable::Gamma2 ||
                                           w.entry->edit == Editable::GammaPostAttention || w.entry->edit == Editable::GammaPostFeedForward))
                e.lines.push_back("the norm scales by 1 + \xCE\xB3 = " + num(1.0f + m(r, c)) + " (Gemma): \xCE\xB3 = 0 changes nothing");
            e.lines.push_back("a parameter of the block: drag to scrub, double-click to type a value");
    }
}

}  // namespace

// [SECTION] Dispatch

Explanation explain_cell(const Trace& t, const std::string& matrix, int row, int col, const std::string& x_meaning) {
    const TraceSettings& s = t.settings;  // what produced these numbers
    Explanation e;
    const Matrix* m = find_matrix(t, matrix);
    if (m == nullptr || row < 0 || col < 0 || row >= m->rows() || col >= m->cols()) {
        e.heading = matrix;
        return e;
    }
    const std::optional<MatrixRef> ref = parse_matrix_name(matrix);  // known: find_matrix found it
    const Where& w = *ref;
    using A = Arithmetic;
    switch (w.entry->arithmetic) {
        case A::Plain: break;
        case A::Embedding:
        case A::Encoding:
        case A::WithEncoding: explain_input(t, s, w, row, col, x_meaning, e); break;
        case A::Weight:
        case A::ValueWeight:
        case A::OutputWeight: explain_weight(t, w, row, col, e); break;
        case A::Query:
        case A::Key:
        case A::Value:
        case A::QueryBeforeRope:
        case A::KeyBeforeRope:
        case A::QueryBeforeNorm:
        case A::KeyBeforeNorm: explain_projection(t, s, w, row, col, e); break;
        case A::QueryNorm:
        case A::KeyNorm: explain_qk_norm(t, s, w, row, col, e); break;
        case A::QKNormWeight:
            e.heading = display_name(matrix) + "[" + ix(col) + "] = " + num((*m)(row, col));
            if (s.qk_norm_whole)
                e.lines.push_back("QK-norm's weight for column " + ix(col) + " of the whole " + (w.entry->edit == Editable::QNorm ? "Q" : "K") +
                                  " projection: dimension " + ix(col % std::max(1, t.d_k)) + " of head " +
                                  std::to_string(col / std::max(1, t.d_k) + 1) + " (OLMo 2: a weight per head and dimension)");
            else
                e.lines.push_back("QK-norm's weight for dimension " + ix(col) + " of every head's " +
                                  (w.entry->edit == Editable::QNorm ? "q" : "k") + " (one vector, shared by all heads)");
            if (s.qk_norm_plus_one) e.lines.push_back("the norm scales by 1 + w = " + num(1.0f + (*m)(row, col)) + " (Gemma 3): w = 0 changes nothing");
            e.lines.push_back("drag to scrub, double-click to type a value");
            break;
        case A::RawScore:
        case A::PositionBias:
        case A::ScaledScore:
        case A::CappedScore:
        case A::MaskedScore: explain_scores(t, s, w, row, col, e); break;
        case A::Softmax: explain_weights(t, s, w, row, col, e); break;
        case A::SinkWeight: explain_sink(t, s, w, row, e); break;
        case A::QueryTemperature: explain_temperature(t, s, row, e); break;
        case A::OutputGate:
        case A::Gated: explain_gate(t, w, row, col, e); break;
        case A::HeadOutput: explain_head_output(t, w, row, col, e); break;
        case A::Concat:
        case A::Output: explain_output(t, w, row, col, e); break;
        case A::Residual:
        case A::Norm1:
        case A::Norm2:
        case A::PostAttentionNorm:
        case A::PostFeedForwardNorm:
        case A::FeedForwardHidden:
        case A::Gate:
        case A::UpProjection:
        case A::GateProduct:
        case A::FeedForwardOutput:
        case A::Residual2:
        case A::BlockOutput:
        case A::RouterLogit:
        case A::RouterProbability:
        case A::Routing:
        case A::RouterChoice:
        case A::SharedGate:
        case A::SharedExpertOutput:
        case A::BlockParameter: explain_block(t, w, row, col, e); break;
        case A::LatentDown:
        case A::LatentNorm:
        case A::LatentUp:
        case A::LatentRopeKey:
        case A::LatentParameter: explain_latent(t, s, w, row, col, e); break;
        case A::DeltaConv:
        case A::DeltaBeta:
        case A::DeltaDecay:
        case A::ImpliedWeight:
        case A::DeltaState:
        case A::DeltaNormed:
        case A::DeltaGated:
        case A::DeltaParameter: explain_delta(t, w, row, col, e); break;
        case A::DifferentialLambda:
        case A::DifferentialDifference:
        case A::DifferentialNormed: explain_differential(t, w, row, col, e); break;
    }
    if (e.heading.empty()) e.heading = display_name(matrix) + " = " + num((*m)(row, col));
    return e;
}

}  // namespace attn::ui
