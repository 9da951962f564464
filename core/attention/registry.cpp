// The matrix registry (registry.hpp): one row per matrix of a trace.
//
// Index
// [SECTION] Words and shapes
// [SECTION] The table
// [SECTION] The lesson's steps
// [SECTION] Names
#include "attention/registry.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "attention/positional.hpp"

namespace attn {

namespace {

// [SECTION] Words and shapes

const char* const kTimes = "\xC3\x97";  // ×
const char* const kDot = "\xC2\xB7";    // ·
const char* const kMinus = "\xE2\x88\x92";  // −
const char* const kPlusMinus = "\xC2\xB1";  // ±
const char* const kArrow = "\xE2\x86\x92";
const char* const kT = "\xE1\xB5\x80";  // ᵀ
const char* const kSqrt = "\xE2\x88\x9A";
const char* const kDk = "d\xE2\x82\x96";  // dₖ
const char* const kSub1 = "\xE2\x82\x81";  // ₁
const char* const kSub2 = "\xE2\x82\x82";  // ₂

std::string dims(const Matrix& m) { return std::to_string(m.rows()) + kTimes + std::to_string(m.cols()); }
std::string paren(const Matrix& m) { return "(" + dims(m) + ")"; }
std::string product(const Matrix& a, const Matrix& b, const Matrix& result) {
    return paren(a) + kDot + paren(b) + " " + kArrow + " " + dims(result);
}
std::string number(double v, int decimals) {
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, v);
    return buffer;
}

const HeadTrace* head_of(const Trace& t, int h) {
    return h >= 0 && h < static_cast<int>(t.head.size()) ? &t.head[static_cast<size_t>(h)] : nullptr;
}
// "head 2/4: " (or nothing with one head): the prefix of a head's titles.
std::string prefix(const Trace& t, int h) { return t.heads > 1 ? "head " + std::to_string(h + 1) + ": " : ""; }

bool additive_positions(const Trace& t) {
    return t.settings.positional == PositionalEncoding::Sinusoidal || t.settings.positional == PositionalEncoding::Learned;
}
bool pre_norm(const Trace& t) { return t.has_block && t.settings.block.norm == NormPlacement::Pre; }
bool cross(const Trace& t) { return t.settings.attention == AttentionKind::Cross; }
bool gated(const Trace& t) { return t.has_block && t.settings.block.gated; }
bool not_qk_normed(const Trace& t) { return !t.settings.qk_norm; }

// What the feed-forward reads: LN₂ of pre-norm, LN₁'s output of post-norm.
const Matrix& ffn_input(const Trace& t) { return pre_norm(t) ? t.block.norm2 : t.block.norm1; }

// Whether attention reads N₁ of the stream: a pre-norm block with norms, unless it leaves N₁ out
// (ModernBERT's first layer); a post-norm block's N₁ comes after attention, always there with norms.
bool norm_1_on(const Trace& t) { return t.settings.block.has_norm_1(); }

// The block's norm with its subscript: "LN₁", "RMSNorm₂", "RMSNorm".
std::string norm_symbol(const Trace& t, const char* subscript) {
    return std::string(t.settings.block.norm_kind == NormKind::RMSNorm ? "RMSNorm" : "LN") + subscript;
}
// Its formula, as a norm card's shape line writes it.
std::string norm_formula(const Trace& t) {
    if (!t.settings.block.layer_norm) return "no norm: each row as it is";  // a block built without one (a trained layer)
    const std::string gamma = "\xCE\xB3";
    if (t.settings.block.norm_kind == NormKind::RMSNorm)
        return "x/" + std::string(kSqrt) + "(mean(x\xC2\xB2) + \xCE\xB5)" + kDot + (t.settings.block.gamma_plus_one ? "(1 + " + gamma + ")" : gamma);
    return gamma + kDot + "(x \xE2\x88\x92 mean)/" + kSqrt + "(var + \xCE\xB5) + \xCE\xB2";
}
// "γ₁", or "γ₁ (scale 1 + γ)" in Gemma's form.
std::string gamma_title(const Trace& t, const char* which) {
    const std::string gamma = std::string("\xCE\xB3") + which;
    return t.settings.block.gamma_plus_one ? gamma + " (scale 1 + \xCE\xB3)" : gamma;
}
// The feed-forward's activation as its titles write it.
std::string activation_name(const Trace& t) {
    switch (t.settings.block.activation) {
        case Activation::ReLU: return "ReLU";
        case Activation::GeluTanh: return "GELU-tanh";
        case Activation::GeluErf: return "GELU-erf";
        case Activation::SiLU: return "SiLU";
    }
    return "?";
}

// What the projections read, as a formula: "X", "(X+PE)", "LN₁(X+PE)".
std::string projection_input(const Trace& t) {
    const std::string x = additive_positions(t) ? "(X+PE)" : "X";
    if (pre_norm(t) && norm_1_on(t)) return norm_symbol(t, kSub1) + (additive_positions(t) ? "(X+PE)" : "(X)");
    return x;
}

// Grouped-query attention: which K/V head query head h reads, and which query heads share it:
// " (K/V head 2 of 2, heads 5–8)"; nothing when every head has its own.
std::string kv_note(const Trace& t, int h) {
    if (t.kv_heads <= 0 || t.kv_heads == t.heads) return {};
    const int group = t.heads / t.kv_heads, g = h / group;
    return " (K/V head " + std::to_string(g + 1) + " of " + std::to_string(t.kv_heads) + ", heads " + std::to_string(g * group + 1) +
           "\xE2\x80\x93" + std::to_string(g * group + group) + ")";
}

// W_K and W_V: each K/V head's d_k columns, and how many query heads read them.
std::string kv_weight_title(const Trace& t, const char* label) {
    if (t.kv_heads <= 0 || t.kv_heads == t.heads) return label;
    return std::string(label) + ": " + std::to_string(t.kv_heads) + " K/V heads for " + std::to_string(t.heads) + " query heads";
}

// How RoPE turns q and k: "pair (2i, 2i+1) of row p turned by p·θᵢ", the base, the
// dimensions turned and the scaling when they are not the default.
std::string rope_words(const Trace& t) {
    const RopeOptions& r = t.settings.rope;
    std::string words = r.pairing == RopePairing::RotateHalf ? "pair (i, i+r/2)" : "pair (2i, 2i+1)";
    words += " of row p turned by p\xC2\xB7\xCE\xB8\xE1\xB5\xA2";
    if (r.theta != 10000.0f) words += ", base " + number(r.theta, 0);
    if (r.rotary_dims > 0 && r.rotary_dims < t.d_k) words += ", first " + std::to_string(r.rotary_dims) + " of " + std::to_string(t.d_k) + " dims";
    const std::string scaling = rope_scaling_words(r, t.n_keys);
    return scaling.empty() ? words : words + ", " + scaling;
}

bool latent(const Trace& t) { return t.settings.latent.on(); }
bool delta_net(const Trace& t) { return t.settings.delta_net; }
bool differential(const Trace& t) { return t.settings.differential; }
bool latent_queries(const Trace& t) { return latent(t) && t.settings.latent.q_rank > 0; }

// What a cache of this layer keeps a token, beside multi-head attention's K and V:
// "a cache keeps r_kv + d_rope = 6 numbers a token; multi-head attention's K and V: 2·H·d_k = 24".
std::string latent_cache_words(const Trace& t) {
    const LatentAttention& l = t.settings.latent;
    const long long latent_numbers = l.kv_rank + l.rope_dim;
    const long long mha = static_cast<long long>(t.heads) * (t.d_k + projected_value_dim(t));
    return "a cache keeps r_kv + d_rope = " + std::to_string(latent_numbers) + " numbers a token; multi-head attention's K and V: H" + kDot +
           "(d_k + d_v) = " + std::to_string(mha) + " (" + number(static_cast<double>(mha) / static_cast<double>(latent_numbers), 1) + kTimes + ")";
}

// Latent attention's Q, K and V of a head: where each part comes from.
std::string latent_projection_title(const Trace& t, int h, char letter) {
    const bool rope = t.settings.positional == PositionalEncoding::Rotary;
    const std::string turned = rope ? "RoPE(" : "", closed = rope ? ")" : "";
    if (letter == 'Q')
        return prefix(t, h) + "Q = [q_nope | " + turned + "q_rope" + closed + "], q = " +
               (latent_queries(t) ? "RMSNorm(" + projection_input(t) + kDot + "W_q_a)" + kDot + "W_q_b" : projection_input(t) + kDot + "W_Q");
    if (letter == 'K') return prefix(t, h) + "K = [ĉ" + kDot + "W_kv_b (k_nope) | " + turned + "k_rope" + closed + ", every head's]";
    return prefix(t, h) + "V = ĉ" + kDot + "W_kv_b (its v columns)";
}
std::string latent_projection_shape(const Trace& t, int h, char letter) {
    const HeadTrace* head = head_of(t, h);
    if (head == nullptr) return {};
    const LatentAttention& l = t.settings.latent;
    const std::string n = std::to_string(t.n_queries);
    if (letter == 'V')
        return "(" + n + kTimes + std::to_string(l.kv_rank) + ")" + kDot + "(" + std::to_string(l.kv_rank) + kTimes + std::to_string(l.v_dim) +
               ") " + kArrow + " " + dims(head->v);
    const std::string rope_part = std::to_string(l.rope_dim) + " rotary";
    if (letter == 'Q')
        return dims(head->q) + ": " + std::to_string(l.nope_dim) + " without RoPE, " + rope_part + " of this head's own";
    return dims(head->k) + ": " + std::to_string(l.nope_dim) + " from the latent, " + rope_part + " shared by all " +
           std::to_string(t.heads) + " heads";
}

std::string projection_title(const Trace& t, int h, const char* letter, const Matrix& bias) {
    if (latent(t)) return latent_projection_title(t, h, letter[0]);
    if (delta_net(t)) {  // Gated DeltaNet: its convolution's channels, q and k L2-normed
        const int group = t.heads / std::max(1, t.linear.key_heads);
        const std::string shared = letter[0] != 'V' && group > 1 ? " (key head " + std::to_string(h / group + 1) + ")" : std::string();
        if (letter[0] == 'Q') return prefix(t, h) + "q" + shared + " = L2norm(conv q) / \xE2\x88\x9A" "d_k";
        if (letter[0] == 'K') return prefix(t, h) + "k" + shared + " = L2norm(conv k)";
        return prefix(t, h) + "v = conv v";
    }
    if (differential(t) && letter[0] == 'V') {  // the pair's two values side by side
        const int pairs = std::max(1, t.differential.pairs), p = h % pairs;
        return prefix(t, h) + "V' = [V of head " + std::to_string(p + 1) + " | V of head " + std::to_string(p + pairs + 1) + "]: its pair's values";
    }
    const std::string shared = letter[0] == 'Q' ? std::string() : kv_note(t, h);
    if (t.settings.input == InputMode::Direct) return prefix(t, h) + letter + shared + " (given)";
    // cross-attention's keys and values are projected from the source, as given (no norm)
    const std::string input = letter[0] != 'Q' && cross(t) ? (additive_positions(t) ? "(source X+PE)" : "source X") : projection_input(t);
    std::string title = prefix(t, h) + letter + shared + " = " + input + kDot + "W_" + letter;
    if (bias.size() != 0) title += std::string(" + b_") + static_cast<char>(std::tolower(letter[0]));
    if (t.settings.qk_norm && letter[0] != 'V') title += ", QK-normed";
    if (t.settings.positional == PositionalEncoding::Rotary && letter[0] != 'V') title += ", rotated (RoPE)";
    return title;
}

std::string projection_shape(const Trace& t, int h, bool keys, int width) {
    if (latent(t)) return latent_projection_shape(t, h, keys ? 'K' : 'Q');
    const HeadTrace* head = head_of(t, h);
    if (head == nullptr) return {};
    if (delta_net(t)) return dims(keys ? head->k : head->q) + ", each row of length " + (keys ? "1" : "1/\xE2\x88\x9A" "d_k");
    const Matrix& m = keys ? head->k : head->q;
    if (t.settings.input == InputMode::Direct) return dims(m);
    const Matrix& input = keys && cross(t) ? t.source_x_pe : attention_input(t);
    return paren(input) + kDot + "(" + std::to_string(input.cols()) + kTimes + std::to_string(width) + ") " + kArrow + " " + dims(m);
}

Column fixed_inputs(const Trace&) { return Column::Inputs; }
Column fixed_positions(const Trace&) { return Column::Positions; }
Column fixed_with_positions(const Trace&) { return Column::InputsWithPositions; }
Column fixed_weights(const Trace&) { return Column::Weights; }
Column fixed_biases(const Trace&) { return Column::Biases; }
Column fixed_unrotated(const Trace&) { return Column::Unrotated; }
Column fixed_before_qk_norm(const Trace&) { return Column::BeforeQKNorm; }
Column fixed_qk_norm(const Trace&) { return Column::QKNorm; }
Column fixed_latent(const Trace&) { return Column::Latent; }
Column fixed_convolution(const Trace&) { return Column::Convolution; }
// QK-norm's weights: shared by every head (d_k of them), or over the whole projection (OLMo 2),
// one per head and dimension.
std::string qk_norm_weight_title(const Trace& t, const char* w) {
    const std::string scale = t.settings.qk_norm_plus_one ? std::string(" (scale 1 + w)") : std::string();
    return std::string(w) + scale + (t.settings.qk_norm_whole ? ": every head's own, one norm over all of them" : ", every head");
}
// What each row of a QK-normed q or k is normalised over.
std::string qk_norm_over(const Trace& t, const Matrix& weight) {
    if (t.settings.qk_norm_whole)
        return ", each row normed over the whole projection's " + std::to_string(weight.cols()) + " numbers (every head), then split";
    return ", each row over its d\xE2\x82\x96 = " + std::to_string(t.d_k);
}
Column fixed_projections(const Trace&) { return Column::Projections; }
Column fixed_scores(const Trace&) { return Column::Scores; }
Column fixed_scaled(const Trace&) { return Column::Scaled; }
Column fixed_capped(const Trace&) { return Column::Capped; }
Column fixed_masked(const Trace&) { return Column::Masked; }
Column fixed_softmax(const Trace&) { return Column::Softmax; }
Column fixed_sink(const Trace&) { return Column::Sink; }
Column fixed_head_output(const Trace&) { return Column::HeadOutput; }
Column fixed_concat(const Trace&) { return Column::Concat; }
Column fixed_output(const Trace&) { return Column::Output; }
Column fixed_block(const Trace&) { return Column::Block; }
Column fixed_gate_and_up(const Trace&) { return Column::GateAndUp; }
Column fixed_feed_forward(const Trace&) { return Column::FeedForward; }
Column fixed_router(const Trace&) { return Column::Router; }
bool routed(const Trace& t) { return t.has_block && t.settings.block.moe.routed(); }
Column fixed_block_output(const Trace&) { return Column::BlockOutput; }


// [SECTION] The table

// A field of the trace as the matrix it holds (a weight is a SharedMatrix: its matrix).
const Matrix& held(const Matrix& m) { return m; }

#define TRACE_GET(field) [](const Trace& t, const HeadTrace*) -> const Matrix* { return &held(t.field); }
#define HEAD_GET(field) [](const Trace&, const HeadTrace* h) -> const Matrix* { return h ? &h->field : nullptr; }
#define SHAPE_OF(field) [](const Trace& t, int) { return dims(t.field); }
#define LATENT_GET(field) [](const Trace& t, const HeadTrace*) -> const Matrix* { return &held(t.latent.field); }
#define LINEAR_GET(field) [](const Trace& t, const HeadTrace*) -> const Matrix* { return &held(t.linear.field); }
#define DIFFERENTIAL_GET(field) [](const Trace& t, const HeadTrace*) -> const Matrix* { return &held(t.differential.field); }
#define BLOCK_GET(field) [](const Trace& t, const HeadTrace*) -> const Matrix* { return t.has_block ? &t.block.field : nullptr; }
// A norm's γ or β: only where the block normalises.
#define NORM_GET(field) \
    [](const Trace& t, const HeadTrace*) -> const Matrix* { return t.has_block && t.settings.block.layer_norm ? &t.block.field : nullptr; }
#define NORM_1_GET(field) [](const Trace& t, const HeadTrace*) -> const Matrix* { return t.has_block && norm_1_on(t) ? &t.block.field : nullptr; }

// The table's shorthand.
using A = Axis;
using V = ValueKind;
using E = Editable;
using Ar = Arithmetic;

// X, its positional encoding and X + PE (a source's too, for cross-attention), and norm 1.
void add_inputs(std::vector<MatrixEntry>& r) {
    // Inputs.
    r.push_back({"x", false, Stage::Embeddings, A::Query, A::Dim, V::Signed, E::X, "X", Ar::Embedding, TRACE_GET(x),
                 [](const Trace& t, int) { return std::string(cross(t) ? "X (target)" : "X  embeddings"); },
                 [](const Trace& t, int) { return "n" + std::string(kTimes) + "d_model = " + dims(t.x); }, fixed_inputs});
    r.push_back({"source_x", false, Stage::Embeddings, A::Key, A::Dim, V::Signed, E::SourceX, "source X", Ar::Embedding, TRACE_GET(source_x),
                 [](const Trace&, int) { return std::string("X (source)"); }, SHAPE_OF(source_x), fixed_inputs});
    r.push_back({"pe", false, Stage::Positional, A::Query, A::Dim, V::Signed, E::None, "PE", Ar::Encoding,
                 TRACE_GET(pe),
                 [](const Trace& t, int) { return std::string("PE  ") + to_string(t.settings.positional); }, SHAPE_OF(pe),
                 fixed_positions, additive_positions});
    r.push_back({"source_pe", false, Stage::Positional, A::Key, A::Dim, V::Signed, E::None, "source PE", Ar::Encoding,
                 TRACE_GET(source_pe),
                 [](const Trace&, int) { return std::string("PE (source, positions from 0)"); }, SHAPE_OF(source_pe), fixed_positions, additive_positions});
    r.push_back({"x_pe", false, Stage::Positional, A::Query, A::Dim, V::Signed, E::None, "X + PE", Ar::WithEncoding,
                 TRACE_GET(x_pe),
                 [](const Trace&, int) { return std::string("X + PE"); }, SHAPE_OF(x_pe), fixed_with_positions, additive_positions});
    r.push_back({"source_x_pe", false, Stage::Positional, A::Key, A::Dim, V::Signed, E::None, "source X + PE", Ar::WithEncoding,
                 TRACE_GET(source_x_pe),
                 [](const Trace&, int) { return std::string("X + PE (source)"); }, SHAPE_OF(source_x_pe), fixed_with_positions, additive_positions});
    // Block: norm 1 — before attention in a pre-norm block (what the projections read),
    // after the first residual in a post-norm one.
    r.push_back({"block.norm1", false, Stage::Block, A::Query, A::Dim, V::Signed, E::None, "norm 1", Ar::Norm1,
                 BLOCK_GET(norm1),
                 [](const Trace& t, int) {
                     const std::string n1 = norm_symbol(t, kSub1);
                     if (!norm_1_on(t)) return std::string(pre_norm(t) ? "no norm: the input as it is" : "x + attention (no norm)");
                     return pre_norm(t) ? n1 + (additive_positions(t) ? "(X + PE)" : "(X)") + ": what attention reads"
                                        : n1 + "(X + attention)";
                 },
                 [](const Trace& t, int) { return dims(t.block.norm1) + ", " + norm_formula(t); },
                 [](const Trace& t) { return pre_norm(t) ? Column::AttentionInput : Column::Block; }});
}

// W_Q, W_K, W_V and their biases.
void add_projection_weights(std::vector<MatrixEntry>& r) {
    // Weights and biases.
    r.push_back({"w_q", false, Stage::Projections, A::Dim, A::Dim, V::Signed, E::WQ, "W_Q", Ar::Weight, TRACE_GET(w_q),
                 [](const Trace&, int) { return std::string("W_Q"); }, SHAPE_OF(w_q), fixed_weights});
    r.push_back({"w_k", false, Stage::Projections, A::Dim, A::Dim, V::Signed, E::WK, "W_K", Ar::Weight, TRACE_GET(w_k),
                 [](const Trace& t, int) { return kv_weight_title(t, "W_K"); }, SHAPE_OF(w_k), fixed_weights});
    r.push_back({"w_v", false, Stage::Projections, A::Dim, A::Dim, V::Signed, E::WV, "W_V", Ar::ValueWeight, TRACE_GET(w_v),
                 [](const Trace& t, int) { return kv_weight_title(t, "W_V"); }, SHAPE_OF(w_v), fixed_weights});
    r.push_back({"b_q", false, Stage::Projections, A::Hidden, A::Dim, V::Signed, E::BQ, "b_q", Ar::Plain, TRACE_GET(b_q),
                 [](const Trace&, int) { return std::string("b_q"); }, SHAPE_OF(b_q), fixed_biases});
    r.push_back({"b_k", false, Stage::Projections, A::Hidden, A::Dim, V::Signed, E::BK, "b_k", Ar::Plain, TRACE_GET(b_k),
                 [](const Trace&, int) { return std::string("b_k"); }, SHAPE_OF(b_k), fixed_biases});
    r.push_back({"b_v", false, Stage::Projections, A::Hidden, A::Dim, V::Signed, E::BV, "b_v", Ar::Plain, TRACE_GET(b_v),
                 [](const Trace&, int) { return std::string("b_v"); }, SHAPE_OF(b_v), fixed_biases});
}

// Gated DeltaNet's weights, and its steps before the heads split.
void add_delta_net_inputs(std::vector<MatrixEntry>& r) {
    // Gated DeltaNet's weights: the gate z's, β's and the decay's, the convolution's taps, and its vectors.
    r.push_back({"linear.w_z", false, Stage::Projections, A::Dim, A::Dim, V::Signed, E::None, "W_Z", Ar::DeltaParameter, LINEAR_GET(w_z),
                 [](const Trace&, int) { return std::string("W_Z  the output gate z"); }, SHAPE_OF(linear.w_z), fixed_weights});
    r.push_back({"linear.w_b", false, Stage::Projections, A::Dim, A::Hidden, V::Signed, E::None, "W_b", Ar::DeltaParameter, LINEAR_GET(w_b),
                 [](const Trace&, int) { return std::string("W_b  \xCE\xB2's, a column per head"); }, SHAPE_OF(linear.w_b), fixed_biases});
    r.push_back({"linear.w_a", false, Stage::Projections, A::Dim, A::Hidden, V::Signed, E::None, "W_a", Ar::DeltaParameter, LINEAR_GET(w_a),
                 [](const Trace&, int) { return std::string("W_a  the decay's, a column per head"); }, SHAPE_OF(linear.w_a), fixed_biases});
    r.push_back({"linear.conv", false, Stage::Projections, A::Dim, A::Hidden, V::Signed, E::None, "conv taps", Ar::DeltaParameter,
                 LINEAR_GET(conv),
                 [](const Trace& t, int) { return "conv taps: " + std::to_string(t.linear.conv_kernel) + " per channel, oldest first"; },
                 SHAPE_OF(linear.conv), fixed_convolution});
    r.push_back({"linear.a_log", false, Stage::Projections, A::Hidden, A::Hidden, V::Signed, E::None, "A_log", Ar::DeltaParameter,
                 LINEAR_GET(a_log), [](const Trace&, int) { return std::string("A_log  each head's decay rate, ln A"); }, SHAPE_OF(linear.a_log),
                 fixed_biases});
    r.push_back({"linear.dt_bias", false, Stage::Projections, A::Hidden, A::Hidden, V::Signed, E::None, "dt_bias", Ar::DeltaParameter,
                 LINEAR_GET(dt_bias), [](const Trace&, int) { return std::string("dt_bias"); }, SHAPE_OF(linear.dt_bias), fixed_biases});
    r.push_back({"linear.norm", false, Stage::Projections, A::Hidden, A::Dim, V::Signed, E::None, "norm w", Ar::DeltaParameter,
                 LINEAR_GET(norm), [](const Trace&, int) { return std::string("w  each head's RMSNorm"); }, SHAPE_OF(linear.norm), fixed_biases});
    // Its steps before the heads split: the channels, their convolution, β and the decay.
    r.push_back({"linear.mixed", false, Stage::Projections, A::Query, A::Dim, V::Signed, E::None, "mixed", Ar::Plain, LINEAR_GET(mixed),
                 [](const Trace& t, int) { return projection_input(t) + kDot + "[W_Q | W_K | W_V]  before the convolution"; },
                 [](const Trace& t, int) {
                     return dims(t.linear.mixed) + ": " + std::to_string(t.linear.key_heads) + " q heads, " + std::to_string(t.linear.key_heads) +
                            " k heads, " + std::to_string(t.heads) + " v heads";
                 },
                 fixed_convolution});
    r.push_back({"linear.convolved", false, Stage::Projections, A::Query, A::Dim, V::Signed, E::None, "convolved", Ar::DeltaConv,
                 LINEAR_GET(convolved),
                 [](const Trace& t, int) {
                     return "SiLU(causal conv): each channel over its last " + std::to_string(t.linear.conv_kernel) + " tokens";
                 },
                 [](const Trace& t, int) { return dims(t.linear.convolved) + ", channel by channel"; }, fixed_convolution});
    r.push_back({"linear.beta", false, Stage::Projections, A::Query, A::Hidden, V::Weights, E::None, "\xCE\xB2", Ar::DeltaBeta, LINEAR_GET(beta),
                 [](const Trace& t, int) { return "\xCE\xB2 = \xCF\x83(" + projection_input(t) + kDot + "W_b): how much of each correction is written"; },
                 [](const Trace& t, int) { return dims(t.linear.beta) + ", a column per head"; }, fixed_convolution});
    r.push_back({"linear.decay", false, Stage::Projections, A::Query, A::Hidden, V::Signed, E::None, "decay g", Ar::DeltaDecay, LINEAR_GET(decay),
                 [](const Trace&, int) { return std::string("g = \xE2\x88\x92" "exp(A_log)") + kDot + "softplus(x" + kDot + "W_a + dt_bias): the state \xC3\x97 e^g"; },
                 [](const Trace& t, int) { return dims(t.linear.decay) + ", each \xE2\x89\xA4 0"; }, fixed_convolution});
}

// Latent attention, from its weights to each head's k_nope and v.
void add_latent_attention(std::vector<MatrixEntry>& r) {
    // Latent attention: its weights, the queries' low-rank path, the compressed latent and the
    // rotary key every head shares, and the expansion into each head's k_nope and v.
    r.push_back({"latent.w_q_a", false, Stage::Projections, A::Dim, A::Hidden, V::Signed, E::LatentWQA, "W_q_a", Ar::LatentParameter,
                 LATENT_GET(w_q_a), [](const Trace&, int) { return std::string("W_q_a  queries down to r_q"); }, SHAPE_OF(latent.w_q_a),
                 fixed_weights});
    r.push_back({"latent.w_q_b", false, Stage::Projections, A::Hidden, A::Dim, V::Signed, E::LatentWQB, "W_q_b", Ar::LatentParameter,
                 LATENT_GET(w_q_b), [](const Trace&, int) { return std::string("W_q_b  r_q up to every head's q"); },
                 SHAPE_OF(latent.w_q_b), fixed_weights});
    r.push_back({"latent.w_kv_a", false, Stage::Projections, A::Dim, A::Hidden, V::Signed, E::LatentWKVA, "W_kv_a", Ar::LatentParameter,
                 LATENT_GET(w_kv_a), [](const Trace&, int) { return std::string("W_kv_a  down to [c | k_rope]"); },
                 SHAPE_OF(latent.w_kv_a), fixed_weights});
    r.push_back({"latent.w_kv_b", false, Stage::Projections, A::Hidden, A::Dim, V::Signed, E::LatentWKVB, "W_kv_b", Ar::LatentParameter,
                 LATENT_GET(w_kv_b), [](const Trace&, int) { return std::string("W_kv_b  ĉ up to every head's [k_nope | v]"); },
                 SHAPE_OF(latent.w_kv_b), fixed_weights});
    r.push_back({"latent.b_q_a", false, Stage::Projections, A::Hidden, A::Hidden, V::Signed, E::LatentBQA, "b_q_a", Ar::LatentParameter,
                 LATENT_GET(b_q_a), [](const Trace&, int) { return std::string("b_q_a"); }, SHAPE_OF(latent.b_q_a), fixed_biases});
    r.push_back({"latent.b_kv_a", false, Stage::Projections, A::Hidden, A::Hidden, V::Signed, E::LatentBKVA, "b_kv_a", Ar::LatentParameter,
                 LATENT_GET(b_kv_a), [](const Trace&, int) { return std::string("b_kv_a"); }, SHAPE_OF(latent.b_kv_a), fixed_biases});
    r.push_back({"latent.q_compressed", false, Stage::Projections, A::Query, A::Hidden, V::Signed, E::None, "queries compressed",
                 Ar::LatentDown, LATENT_GET(q_compressed),
                 [](const Trace& t, int) { return projection_input(t) + kDot + "W_q_a" + (t.latent.b_q_a.size() ? " + b_q_a" : "") + "  queries compressed"; },
                 [](const Trace& t, int) { return product(attention_input(t), t.latent.w_q_a, t.latent.q_compressed); }, fixed_latent});
    r.push_back({"latent.q_a_norm", false, Stage::Projections, A::Hidden, A::Hidden, V::Signed, E::LatentQNorm, "latent q norm γ",
                 Ar::LatentParameter, LATENT_GET(q_a_norm), [](const Trace&, int) { return std::string("γ_q"); },
                 SHAPE_OF(latent.q_a_norm), fixed_latent});
    r.push_back({"latent.q_latent", false, Stage::Projections, A::Query, A::Hidden, V::Signed, E::None, "queries' latent", Ar::LatentNorm,
                 LATENT_GET(q_latent), [](const Trace&, int) { return std::string("RMSNorm(q compressed)·γ_q: what W_q_b reads"); },
                 [](const Trace& t, int) { return dims(t.latent.q_latent) + ", each row over its r_q = " + std::to_string(t.settings.latent.q_rank); },
                 fixed_latent});
    r.push_back({"latent.compressed", false, Stage::Projections, A::Query, A::Hidden, V::Signed, E::None, "[c | k_rope]", Ar::LatentDown,
                 LATENT_GET(compressed),
                 [](const Trace& t, int) {
                     return "[c | k_rope] = " + projection_input(t) + kDot + "W_kv_a" + (t.latent.b_kv_a.size() ? " + b_kv_a" : "");
                 },
                 [](const Trace& t, int) {
                     return product(attention_input(t), t.latent.w_kv_a, t.latent.compressed) + ": " + std::to_string(t.settings.latent.kv_rank) +
                            " of c, " + std::to_string(t.settings.latent.rope_dim) + " of k_rope";
                 },
                 fixed_latent});
    r.push_back({"latent.kv_a_norm", false, Stage::Projections, A::Hidden, A::Hidden, V::Signed, E::LatentKVNorm, "latent norm γ",
                 Ar::LatentParameter, LATENT_GET(kv_a_norm), [](const Trace&, int) { return std::string("γ_kv"); },
                 SHAPE_OF(latent.kv_a_norm), fixed_latent});
    r.push_back({"latent.latent", false, Stage::Projections, A::Query, A::Hidden, V::Signed, E::None, "latent ĉ", Ar::LatentNorm,
                 LATENT_GET(latent),
                 [](const Trace&, int) { return std::string("ĉ = RMSNorm(c)·γ_kv  the latent a cache keeps"); },
                 [](const Trace& t, int) { return dims(t.latent.latent) + "; " + latent_cache_words(t); }, fixed_latent});
    r.push_back({"latent.k_rope", false, Stage::Projections, A::Query, A::Hidden, V::Signed, E::None, "k_rope", Ar::LatentRopeKey,
                 LATENT_GET(k_rope),
                 [](const Trace& t, int) {
                     return std::string(t.settings.positional == PositionalEncoding::Rotary ? "RoPE(k_rope)" : "k_rope (no RoPE)") +
                            ": one rotary key for every head";
                 },
                 [](const Trace& t, int) {
                     std::string shape = dims(t.latent.k_rope);
                     if (t.settings.positional == PositionalEncoding::Rotary) shape += ", " + rope_words(t);
                     return shape;
                 },
                 fixed_latent, [](const Trace& t) { return t.settings.latent.rope_dim > 0; }});
    r.push_back({"latent.expanded", false, Stage::Projections, A::Query, A::Hidden, V::Signed, E::None, "latent expanded", Ar::LatentUp,
                 LATENT_GET(expanded),
                 [](const Trace&, int) { return std::string("ĉ") + kDot + "W_kv_b  every head's [k_nope | v]"; },
                 [](const Trace& t, int) { return product(t.latent.latent, t.latent.w_kv_b, t.latent.expanded); }, fixed_latent,
                 // exported, not drawn: each head's K (its first d_nope columns) and V cards are its slices
                 [](const Trace&) { return false; }});
}

// Each head's Q, K and V, and the steps that make them: QK-norm, RoPE, Llama 4's temperature.
void add_queries_keys_values(std::vector<MatrixEntry>& r) {
    // QK-norm: each head's q and k as projected, the weights shared by every head, and the
    // rows after RMSNorm (what RoPE then rotates).
    r.push_back({"q_before_norm", true, Stage::Projections, A::Query, A::Dim, V::Signed, E::None, "Q before QK-norm", Ar::QueryBeforeNorm,
                 HEAD_GET(q_before_norm),
                 [](const Trace& t, int h) { return prefix(t, h) + "Q before QK-norm"; },
                 [](const Trace& t, int h) { return projection_shape(t, h, false, t.d_k); }, fixed_before_qk_norm});
    r.push_back({"k_before_norm", true, Stage::Projections, A::Key, A::Dim, V::Signed, E::None, "K before QK-norm", Ar::KeyBeforeNorm,
                 HEAD_GET(k_before_norm),
                 [](const Trace& t, int h) { return prefix(t, h) + "K" + kv_note(t, h) + " before QK-norm"; },
                 [](const Trace& t, int h) { return projection_shape(t, h, true, t.d_k); }, fixed_before_qk_norm});
    r.push_back({"q_norm", false, Stage::Projections, A::Hidden, A::Dim, V::Signed, E::QNorm, "QK-norm w (q)", Ar::QKNormWeight, TRACE_GET(q_norm),
                 [](const Trace& t, int) { return qk_norm_weight_title(t, "w_q"); },
                 SHAPE_OF(q_norm), fixed_qk_norm});
    r.push_back({"k_norm", false, Stage::Projections, A::Hidden, A::Dim, V::Signed, E::KNorm, "QK-norm w (k)", Ar::QKNormWeight, TRACE_GET(k_norm),
                 [](const Trace& t, int) { return qk_norm_weight_title(t, "w_k"); },
                 SHAPE_OF(k_norm), fixed_qk_norm});
    r.push_back({"q_normed", true, Stage::Projections, A::Query, A::Dim, V::Signed, E::None, "Q after QK-norm", Ar::QueryNorm, HEAD_GET(q_normed),
                 [](const Trace& t, int h) { return prefix(t, h) + "RMSNorm(Q)" + kDot + (t.settings.qk_norm_plus_one ? "(1 + w_q)" : "w_q"); },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     return head ? dims(head->q_normed) + qk_norm_over(t, t.q_norm) : std::string();
                 },
                 fixed_qk_norm});
    r.push_back({"k_normed", true, Stage::Projections, A::Key, A::Dim, V::Signed, E::None, "K after QK-norm", Ar::KeyNorm, HEAD_GET(k_normed),
                 [](const Trace& t, int h) {
                     return prefix(t, h) + "RMSNorm(K)" + kDot + (t.settings.qk_norm_plus_one ? "(1 + w_k)" : "w_k") + kv_note(t, h);
                 },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     return head ? dims(head->k_normed) + qk_norm_over(t, t.k_norm) : std::string();
                 },
                 fixed_qk_norm});
    // RoPE: Q and K before the rotation (with QK-norm, the normed ones: not drawn twice).
    r.push_back({"q_unrotated", true, Stage::Projections, A::Query, A::Dim, V::Signed, E::None, "Q before RoPE", Ar::QueryBeforeRope,
                 HEAD_GET(q_unrotated),
                 [](const Trace& t, int h) { return prefix(t, h) + "Q before RoPE"; },
                 [](const Trace& t, int h) { return projection_shape(t, h, false, t.d_k); }, fixed_unrotated, not_qk_normed});
    r.push_back({"k_unrotated", true, Stage::Projections, A::Key, A::Dim, V::Signed, E::None, "K before RoPE", Ar::KeyBeforeRope,
                 HEAD_GET(k_unrotated),
                 [](const Trace& t, int h) { return prefix(t, h) + "K" + kv_note(t, h) + " before RoPE"; },
                 [](const Trace& t, int h) { return projection_shape(t, h, true, t.d_k); }, fixed_unrotated, not_qk_normed});
    // Llama 4's query temperature: each query's τ, which every head's q was multiplied by.
    r.push_back({"temperature", false, Stage::Projections, A::Query, A::Hidden, V::Signed, E::None, "query temperature \xCF\x84",
                 Ar::QueryTemperature, TRACE_GET(temperature),
                 [](const Trace&, int) { return std::string("\xCF\x84 query temperature: q \xC3\x97 \xCF\x84"); },
                 [](const Trace& t, int) {
                     return dims(t.temperature) + ": ln(floor((p + 1)/" + format_value(t.settings.temperature.floor_scale, 4) +
                            ") + 1)\xC2\xB7" + format_value(t.settings.temperature.attn_scale, 4) + " + 1";
                 },
                 fixed_projections});
    r.push_back({"q", true, Stage::Projections, A::Query, A::Dim, V::Signed, E::Q, "Q", Ar::Query, HEAD_GET(q),
                 [](const Trace& t, int h) {
                     return projection_title(t, h, "Q", t.b_q) + (t.temperature.size() != 0 ? " \xC3\x97 \xCF\x84" : "");
                 },
                 [](const Trace& t, int h) {
                     std::string shape = projection_shape(t, h, false, t.d_k);
                     if (t.settings.positional == PositionalEncoding::Rotary) shape += ", " + rope_words(t);
                     return shape;
                 },
                 fixed_projections});
    r.push_back({"k", true, Stage::Projections, A::Key, A::Dim, V::Signed, E::K, "K", Ar::Key, HEAD_GET(k),
                 [](const Trace& t, int h) { return projection_title(t, h, "K", t.b_k); },
                 [](const Trace& t, int h) { return projection_shape(t, h, true, t.d_k); }, fixed_projections});
    r.push_back({"v", true, Stage::Projections, A::Key, A::Dim, V::Signed, E::V, "V", Ar::Value, HEAD_GET(v),
                 [](const Trace& t, int h) { return projection_title(t, h, "V", t.b_v); },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     if (!head) return std::string();
                     if (t.settings.input == InputMode::Direct || delta_net(t)) return dims(head->v);
                     if (differential(t)) return dims(head->v) + ": 2" + kTimes + "d_k, each half " + projection_input(t) + kDot + "W_V's head columns";
                     if (latent(t)) return latent_projection_shape(t, h, 'V');
                     const Matrix& input = cross(t) ? t.source_x_pe : attention_input(t);
                     return paren(input) + kDot + "(" + std::to_string(input.cols()) + kTimes + std::to_string(t.d_v) + ") " +
                            kArrow + " " + dims(head->v);
                 },
                 fixed_projections});
}

// Each head's scores: raw, scaled (and ALiBi's bias), soft-capped and masked.
void add_head_scores(std::vector<MatrixEntry>& r) {
    // Scores, scaling, ALiBi, mask, softmax, weights·V.
    r.push_back({"scores", true, Stage::Scores, A::Query, A::Key, V::Signed, E::None, "scores", Ar::RawScore, HEAD_GET(scores),
                 [](const Trace& t, int h) { return prefix(t, h) + "Q" + kDot + "K" + kT; },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     return head ? paren(head->q) + kDot + "(" + std::to_string(head->k.cols()) + kTimes +
                                       std::to_string(head->k.rows()) + ") " + kArrow + " " + dims(head->scores)
                                 : std::string();
                 },
                 fixed_scores});
    r.push_back({"position_bias", true, Stage::Scaled, A::Query, A::Key, V::Signed, E::None, "ALiBi bias", Ar::PositionBias, HEAD_GET(position_bias),
                 [](const Trace& t, int h) { return prefix(t, h) + "ALiBi bias"; },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     return "\xE2\x88\x92m|i\xE2\x88\x92j|, m = 2^(\xE2\x88\x92" + std::string("8") + kDot + std::to_string(h + 1) + "/" +
                            std::to_string(t.heads) + ") = " + number(head ? head->alibi_slope : 0.0, 4);
                 },
                 fixed_scaled});
    r.push_back({"scaled_scores", true, Stage::Scaled, A::Query, A::Key, V::Signed, E::None, "scaled scores", Ar::ScaledScore, HEAD_GET(scaled_scores),
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     const bool bias = head && head->position_bias.size() != 0;
                     const std::string scaling = !t.settings.scale       ? std::string("unscaled")
                                                 : has_custom_scale(t) ? std::string(kTimes) + " " + number(t.settings.score_scale, 4) + " (custom)"
                                                                       : std::string("\xC3\xB7 ") + kSqrt + kDk;
                     return prefix(t, h) + scaling + (bias ? " + ALiBi bias" : "");
                 },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     if (!head) return std::string();
                     if (!t.settings.scale) return std::string("scaling off (") + kTimes + "1)";
                     if (has_custom_scale(t))  // both numbers: the scale used, and the 1/√d_k it replaces
                         return "a custom scale " + number(t.settings.score_scale, 4) + " in place of 1/" + std::string(kSqrt) + std::to_string(t.d_k) +
                                " = " + number(1.0 / std::sqrt(static_cast<double>(t.d_k)), 4) + " " + kArrow + " " + dims(head->scaled_scores);
                     return std::string(kSqrt) + std::to_string(t.d_k) + " = " + number(std::sqrt(static_cast<double>(t.d_k)), 3) + " " +
                            kArrow + " " + dims(head->scaled_scores);
                 },
                 fixed_scaled});
    r.push_back({"capped_scores", true, Stage::Scaled, A::Query, A::Key, V::Signed, E::None, "soft-capped scores", Ar::CappedScore,
                 HEAD_GET(capped_scores),
                 [](const Trace& t, int h) { return prefix(t, h) + "soft-cap c" + kDot + "tanh(s/c)"; },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     return head ? "c = " + number(t.settings.softcap, 4) + ": every score inside (" + kMinus + "c, c) " + kArrow + " " +
                                       dims(head->capped_scores)
                                 : std::string();
                 },
                 fixed_capped});
    r.push_back({"masked_scores", true, Stage::Masked, A::Query, A::Key, V::Signed, E::None, "masked scores", Ar::MaskedScore, HEAD_GET(masked_scores),
                 [](const Trace& t, int h) {
                     std::string title = prefix(t, h) + "mask: " + to_string(t.settings.mask);
                     if (t.settings.mask == MaskKind::SlidingWindow) title += " " + std::to_string(t.settings.window);
                     if (t.settings.mask == MaskKind::Band) title += " " + std::string(kPlusMinus) + std::to_string(t.settings.window);
                     if (t.settings.mask == MaskKind::Chunked) title += " " + std::to_string(t.settings.chunk);
                     return title;
                 },
                 [](const Trace& t, int) {
                     const float fill = t.settings.masked_fill;
                     return "hidden " + std::string(kArrow) + " " +
                            format_value(fill, 1);
                 },
                 fixed_masked});
}

// Each head's weights (softmax's, a linear layer's implied ones, a sink's share) and its output.
void add_head_weights_and_output(std::vector<MatrixEntry>& r) {
    r.push_back({"weights", true, Stage::Weights, A::Query, A::Key, V::Weights, E::None, "weights", Ar::Softmax, HEAD_GET(weights),
                 [](const Trace& t, int h) {
                     return prefix(t, h) + "softmax " + (t.settings.softmax == SoftmaxKind::Stable ? "(stable)" : "(naive)");
                 },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     if (!head) return std::string();
                     if (head->sink_weights.size() != 0) return "each row sums to 1 " + std::string(kMinus) + " its sink weight " + kArrow + " " + dims(head->weights);
                     return "each row sums to 1 " + std::string(kArrow) + " " + dims(head->weights);
                 },
                 fixed_softmax});
    // Gated DeltaNet: the weights its recurrence implies, o = A·V, drawn where a softmax's are.
    r.push_back({"implied_weights", true, Stage::Weights, A::Query, A::Key, V::Signed, E::None, "implied weights", Ar::ImpliedWeight,
                 HEAD_GET(implied_weights),
                 [](const Trace& t, int h) { return prefix(t, h) + "implied weights A: o = A" + kDot + "V, no softmax"; },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     return head ? dims(head->implied_weights) + ", A[t,j] = \xCE\xB2_j" + kDot + "q_t" + kDot + "P" + kDot + "k_j: rows need not sum to 1"
                                 : std::string();
                 },
                 fixed_softmax});
    // Attention sinks: the share of each row the head's sink logit took, beside the weights.
    r.push_back({"sink_weights", true, Stage::Weights, A::Query, A::Hidden, V::Weights, E::None, "sink weight", Ar::SinkWeight,
                 HEAD_GET(sink_weights),
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     return prefix(t, h) + "sink b = " + (head ? format_value(head->sink, 2) : std::string());
                 },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     return head ? dims(head->sink_weights) + ": 1 " + kMinus + " the row's weights" : std::string();
                 },
                 fixed_sink});
    r.push_back({"pooled_weights", true, Stage::Weights, A::Query, A::Key, V::Weights, E::None, "weights (pooled)", Ar::Plain,
                 [](const Trace&, const HeadTrace* h) -> const Matrix* { return h ? &h->pooled_weights.values : nullptr; },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     if (!head) return std::string();
                     const PooledWeights& p = head->pooled_weights;
                     const bool full = p.values.rows() == p.row_end - p.row_begin && p.values.cols() == p.col_end - p.col_begin;
                     return prefix(t, h) + "softmax weights, " + (full ? "one cell per token" : "max-pooled");
                 },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     if (!head) return std::string();
                     const PooledWeights& p = head->pooled_weights;
                     const bool whole = p.row_end - p.row_begin == t.n_queries && p.col_end - p.col_begin == t.n_keys;
                     const std::string region = whole ? std::to_string(t.n_queries) + kTimes + std::to_string(t.n_keys)
                                                      : "queries " + position_span(p.row_begin, p.row_end) + ", keys " +
                                                            position_span(p.col_begin, p.col_end);
                     return region + " " + kArrow + " " + dims(p.values) + " (output-only)";
                 },
                 fixed_softmax});
    r.push_back({"output", true, Stage::Output, A::Query, A::Dim, V::Signed, E::None, "output", Ar::HeadOutput, HEAD_GET(output),
                 [](const Trace& t, int h) {
                     return prefix(t, h) + (delta_net(t) ? std::string("o_t = S_t") + kT + kDot + "q_t (= A" + kDot + "V)" : "weights" + std::string(kDot) + "V");
                 },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     if (!head) return std::string();
                     if (delta_net(t)) return head->implied_weights.size() != 0 ? product(head->implied_weights, head->v, head->output)
                                                                                : "the recurrence " + std::string(kArrow) + " " + dims(head->output);
                     if (t.detail == Detail::OutputOnly) return "streamed, online softmax " + std::string(kArrow) + " " + dims(head->output);
                     return product(head->weights, head->v, head->output);
                 },
                 fixed_head_output});
    r.push_back({"state", true, Stage::Output, A::Dim, A::Dim, V::Signed, E::None, "state S", Ar::DeltaState, HEAD_GET(state),
                 [](const Trace& t, int h) { return prefix(t, h) + "state S after the last token: all the layer keeps"; },
                 [](const Trace& t, int h) {
                     const HeadTrace* head = head_of(t, h);
                     return head ? "d_k" + std::string(kTimes) + "d_v = " + dims(head->state) + ", whatever the length" : std::string();
                 },
                 fixed_head_output});
}

// The heads concatenated, gated where the layer gates them, and W_O.
void add_concat_and_output(std::vector<MatrixEntry>& r) {
    // Concatenation, W_O, the output.
    r.push_back({"concat", false, Stage::Concat, A::Query, A::Dim, V::Signed, E::None, "concat", Ar::Concat,
                 TRACE_GET(concat),
                 [](const Trace&, int) { return std::string("concat heads"); },
                 [](const Trace& t, int) {
                     return std::to_string(t.n_queries) + kTimes + "(" + std::to_string(t.heads) + kDot + std::to_string(t.d_v) + ") " +
                            kArrow + " " + dims(t.concat);
                 },
                 fixed_concat, [](const Trace& t) { return t.heads > 1; }});  // one head's concat is its output
    // Differential attention (DiffLlama): λ from its four vectors, each pair's difference, and its norm.
    r.push_back({"differential.lambda_q1", false, Stage::Concat, A::Hidden, A::Dim, V::Signed, E::None, "\xCE\xBB_q1", Ar::DifferentialLambda,
                 DIFFERENTIAL_GET(lambda_q1), [](const Trace&, int) { return std::string("\xCE\xBB_q1  (\xCE\xBB_1 = exp(\xCE\xA3 \xCE\xBB_q1\xE2\x8A\x99\xCE\xBB_k1))"); },
                 SHAPE_OF(differential.lambda_q1), fixed_concat});
    r.push_back({"differential.lambda_k1", false, Stage::Concat, A::Hidden, A::Dim, V::Signed, E::None, "\xCE\xBB_k1", Ar::DifferentialLambda,
                 DIFFERENTIAL_GET(lambda_k1), [](const Trace&, int) { return std::string("\xCE\xBB_k1"); }, SHAPE_OF(differential.lambda_k1), fixed_concat});
    r.push_back({"differential.lambda_q2", false, Stage::Concat, A::Hidden, A::Dim, V::Signed, E::None, "\xCE\xBB_q2", Ar::DifferentialLambda,
                 DIFFERENTIAL_GET(lambda_q2), [](const Trace&, int) { return std::string("\xCE\xBB_q2  (\xCE\xBB_2 = exp(\xCE\xA3 \xCE\xBB_q2\xE2\x8A\x99\xCE\xBB_k2))"); },
                 SHAPE_OF(differential.lambda_q2), fixed_concat});
    r.push_back({"differential.lambda_k2", false, Stage::Concat, A::Hidden, A::Dim, V::Signed, E::None, "\xCE\xBB_k2", Ar::DifferentialLambda,
                 DIFFERENTIAL_GET(lambda_k2), [](const Trace&, int) { return std::string("\xCE\xBB_k2"); }, SHAPE_OF(differential.lambda_k2), fixed_concat});
    r.push_back({"differential.difference", false, Stage::Concat, A::Query, A::Dim, V::Signed, E::None, "pair difference",
                 Ar::DifferentialDifference, DIFFERENTIAL_GET(difference),
                 [](const Trace& t, int) {
                     const DifferentialTrace& d = t.differential;
                     return "o_p = A_p" + std::string(kDot) + "V'_p \xE2\x88\x92 \xCE\xBB" + kDot + "A_(p+" + std::to_string(d.pairs) + ")" + kDot +
                            "V'_p, \xCE\xBB = " + format_value(d.lambda_1, 4) + " \xE2\x88\x92 " + format_value(d.lambda_2, 4) + " + " +
                            format_value(d.lambda_init, 4) + " = " + format_value(d.lambda, 4);
                 },
                 [](const Trace& t, int) {
                     return dims(t.differential.difference) + ": " + std::to_string(t.differential.pairs) + " pairs of " + std::to_string(t.d_v) +
                            " (head p and head p + " + std::to_string(t.differential.pairs) + ")";
                 },
                 fixed_concat});
    r.push_back({"differential.normed", false, Stage::Concat, A::Query, A::Dim, V::Signed, E::None, "normed pairs",
                 Ar::DifferentialNormed, DIFFERENTIAL_GET(normed),
                 [](const Trace& t, int) {
                     return "(1 \xE2\x88\x92 \xCE\xBB_init)" + std::string(kDot) + "RMSNorm(o_p), \xCE\xBB_init = " +
                            format_value(t.differential.lambda_init, 4) + ": what W_O reads";
                 },
                 [](const Trace& t, int) { return dims(t.differential.normed) + ", over each pair's " + std::to_string(t.d_v); }, fixed_concat});
    // Gated attention (Qwen3-Next): W_G and b_G, the gate σ(x·W_G + b_G), and the heads' outputs gated.
    r.push_back({"w_g", false, Stage::Concat, A::Dim, A::Dim, V::Signed, E::GateW, "W_G", Ar::ValueWeight, TRACE_GET(w_g),
                 [](const Trace&, int) { return std::string("W_G  the output gate's weights"); }, SHAPE_OF(w_g), fixed_concat});
    r.push_back({"b_g", false, Stage::Concat, A::Hidden, A::Dim, V::Signed, E::GateB, "b_G", Ar::Plain, TRACE_GET(b_g),
                 [](const Trace&, int) { return std::string("b_G"); }, SHAPE_OF(b_g), fixed_concat});
    r.push_back({"output_gate", false, Stage::Concat, A::Query, A::Dim, V::Weights, E::None, "output gate", Ar::OutputGate, TRACE_GET(output_gate),
                 [](const Trace& t, int) {
                     return "gate = \xCF\x83(" + projection_input(t) + kDot + "W_G" + (t.b_g.size() ? " + b_G" : "") + "): how much of each head's output passes";
                 },
                 [](const Trace& t, int) { return product(attention_input(t), t.w_g, t.output_gate) + ", then \xCF\x83"; }, fixed_concat});
    r.push_back({"gated", false, Stage::Concat, A::Query, A::Dim, V::Signed, E::None, "gated heads", Ar::Gated, TRACE_GET(gated),
                 [](const Trace&, int) { return std::string("gated = concat \xE2\x8A\x99 gate: what W_O reads"); },
                 [](const Trace& t, int) { return dims(t.gated) + ", number by number"; }, fixed_concat});
    // Gated DeltaNet's end: each head's RMSNorm, and the gate SiLU(z).
    r.push_back({"linear.z", false, Stage::Concat, A::Query, A::Dim, V::Signed, E::None, "z", Ar::Plain, LINEAR_GET(z),
                 [](const Trace& t, int) { return "z = " + projection_input(t) + kDot + "W_Z"; },
                 [](const Trace& t, int) { return product(attention_input(t), t.linear.w_z, t.linear.z); }, fixed_concat});
    r.push_back({"linear.normed", false, Stage::Concat, A::Query, A::Dim, V::Signed, E::None, "normed heads", Ar::DeltaNormed, LINEAR_GET(normed),
                 [](const Trace&, int) { return std::string("RMSNorm(o_h) \xE2\x8A\x99 w, each head alone"); },
                 [](const Trace& t, int) { return dims(t.linear.normed) + ", over each head's " + std::to_string(t.d_v); }, fixed_concat});
    r.push_back({"linear.gated", false, Stage::Concat, A::Query, A::Dim, V::Signed, E::None, "gated heads", Ar::DeltaGated, LINEAR_GET(gated),
                 [](const Trace&, int) { return std::string("normed \xE2\x8A\x99 SiLU(z): what W_O reads"); },
                 [](const Trace& t, int) { return dims(t.linear.gated) + ", number by number"; }, fixed_concat});
    r.push_back({"w_o", false, Stage::Concat, A::Dim, A::Dim, V::Signed, E::WO, "W_O", Ar::OutputWeight, TRACE_GET(w_o),
                 [](const Trace&, int) { return std::string("W_O"); }, SHAPE_OF(w_o), fixed_concat});
    r.push_back({"b_o", false, Stage::Concat, A::Hidden, A::Dim, V::Signed, E::BO, "b_o", Ar::Plain, TRACE_GET(b_o),
                 [](const Trace&, int) { return std::string("b_o"); }, SHAPE_OF(b_o), fixed_concat});
    r.push_back({"output", false, Stage::Final, A::Query, A::Dim, V::Signed, E::None, "output", Ar::Output,
                 TRACE_GET(output),
                 [](const Trace& t, int) {
                     return "output = " + std::string(output_projection_input(t).name) + kDot + "W_O" + (t.b_o.size() ? " + b_o" : "");
                 },
                 [](const Trace& t, int) { return product(output_projection_input(t).m, t.w_o, t.output); }, fixed_output,
                 [](const Trace& t) { return t.w_o.size() != 0; }});  // without W_O, the output is the concat
}

// The block around attention: the sandwich's norm, residual 1, norm 2 and their weights.
void add_block_norms(std::vector<MatrixEntry>& r) {
    // The rest of the block. Gemma's sandwich: attention's output normalised before the residual adds it.
    r.push_back({"block.post_attention_norm", false, Stage::Block, A::Query, A::Dim, V::Signed, E::None, "post-attention norm",
                 Ar::PostAttentionNorm, BLOCK_GET(post_attention_norm),
                 [](const Trace& t, int) { return norm_symbol(t, "") + "(attention output): before the residual adds it"; },
                 [](const Trace& t, int) { return dims(t.block.post_attention_norm) + ", " + norm_formula(t); }, fixed_block});
    r.push_back({"block.gamma_post_attention", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::GammaPostAttention,
                 "post-attention norm \xCE\xB3", Ar::BlockParameter, BLOCK_GET(gamma_post_attention),
                 [](const Trace& t, int) { return gamma_title(t, " post-attention"); }, SHAPE_OF(block.gamma_post_attention), fixed_block});
    r.push_back({"block.beta_post_attention", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::BetaPostAttention,
                 "post-attention norm \xCE\xB2", Ar::BlockParameter, BLOCK_GET(beta_post_attention),
                 [](const Trace&, int) { return std::string("\xCE\xB2 post-attention"); }, SHAPE_OF(block.beta_post_attention), fixed_block});
    r.push_back({"block.residual", false, Stage::Block, A::Query, A::Dim, V::Signed, E::None, "residual 1", Ar::Residual,
                 BLOCK_GET(residual),
                 [](const Trace& t, int) {
                     const std::string attention = t.settings.block.sandwich_norm ? norm_symbol(t, "") + "(attention)" : "attention";
                     if (!t.settings.block.residual) return attention + " (no residual)";
                     return "residual: " + std::string(additive_positions(t) ? "(X + PE) + " : "X + ") + attention;
                 },
                 SHAPE_OF(block.residual), fixed_block});
    r.push_back({"block.gamma_1", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::Gamma1, "norm 1 \xCE\xB3", Ar::BlockParameter,
                 NORM_1_GET(gamma_1),
                 [](const Trace& t, int) { return gamma_title(t, kSub1); }, SHAPE_OF(block.gamma_1),
                 [](const Trace& t) { return pre_norm(t) ? Column::AttentionInput : Column::Block; }});
    r.push_back({"block.beta_1", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::Beta1, "norm 1 \xCE\xB2", Ar::BlockParameter,
                 NORM_1_GET(beta_1),
                 [](const Trace&, int) { return std::string("\xCE\xB2") + kSub1; }, SHAPE_OF(block.beta_1),
                 [](const Trace& t) { return pre_norm(t) ? Column::AttentionInput : Column::Block; }});
    r.push_back({"block.norm2", false, Stage::Block, A::Query, A::Dim, V::Signed, E::None, "norm 2", Ar::Norm2,
                 BLOCK_GET(norm2),
                 [](const Trace& t, int) {
                     const std::string n2 = t.settings.block.layer_norm ? norm_symbol(t, kSub2) : std::string("no norm: ");
                     if (t.settings.block.parallel_residual)
                         return n2 + (additive_positions(t) ? "(X + PE)" : "(X)") + ": the block's input, read beside attention";
                     return n2 + "(residual): what the feed-forward reads";
                 },
                 [](const Trace& t, int) { return dims(t.block.norm2) + ", " + norm_formula(t); }, fixed_block});
    r.push_back({"block.gamma_2", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::Gamma2, "norm 2 \xCE\xB3", Ar::BlockParameter,
                 NORM_GET(gamma_2),
                 [](const Trace& t, int) { return gamma_title(t, kSub2); }, SHAPE_OF(block.gamma_2), fixed_block});
    r.push_back({"block.beta_2", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::Beta2, "norm 2 \xCE\xB2", Ar::BlockParameter,
                 NORM_GET(beta_2),
                 [](const Trace&, int) { return std::string("\xCE\xB2") + kSub2; }, SHAPE_OF(block.beta_2), fixed_block});
}

// The feed-forward and a mixture's router.
void add_feed_forward(std::vector<MatrixEntry>& r) {
    // The feed-forward. Gated (SwiGLU, GeGLU): the gate and the up projection side by side,
    // then their product; plain: one hidden layer.
    r.push_back({"block.w_gate", false, Stage::Block, A::Dim, A::Hidden, V::Signed, E::WGate, "W_gate", Ar::BlockParameter,
                 [](const Trace& t, const HeadTrace*) -> const Matrix* { return t.has_block ? &t.block.w_gate.get() : nullptr; },
                 [](const Trace&, int) { return std::string("W_gate"); }, SHAPE_OF(block.w_gate), fixed_gate_and_up});
    r.push_back({"block.ffn_gate", false, Stage::Block, A::Query, A::Hidden, V::Signed, E::None, "gate", Ar::Gate,
                 BLOCK_GET(ffn_gate),
                 [](const Trace& t, int) { return "gate = " + activation_name(t) + "(x" + kDot + "W_gate)"; },
                 [](const Trace& t, int) { return product(ffn_input(t), t.block.w_gate, t.block.ffn_gate); }, fixed_gate_and_up});
    r.push_back({"block.w_1", false, Stage::Block, A::Dim, A::Hidden, V::Signed, E::W1, "W_1", Ar::BlockParameter,
                 [](const Trace& t, const HeadTrace*) -> const Matrix* { return t.has_block ? &t.block.w_1.get() : nullptr; },
                 [](const Trace& t, int) { return std::string("W") + kSub1 + (gated(t) ? " (up)" : ""); }, SHAPE_OF(block.w_1),
                 [](const Trace& t) { return gated(t) ? Column::GateAndUp : Column::FeedForward; }});
    r.push_back({"block.b_1", false, Stage::Block, A::Hidden, A::Hidden, V::Signed, E::B1, "b_1", Ar::BlockParameter,
                 BLOCK_GET(b_1),
                 [](const Trace&, int) { return std::string("b") + kSub1; }, SHAPE_OF(block.b_1), fixed_feed_forward});
    r.push_back({"block.ffn_up", false, Stage::Block, A::Query, A::Hidden, V::Signed, E::None, "up", Ar::UpProjection,
                 BLOCK_GET(ffn_up),
                 [](const Trace&, int) { return "up = x" + std::string(kDot) + "W" + kSub1; },
                 [](const Trace& t, int) { return product(ffn_input(t), t.block.w_1, t.block.ffn_up); }, fixed_gate_and_up});
    r.push_back({"block.ffn_hidden", false, Stage::Block, A::Query, A::Hidden, V::Signed, E::None, "feed-forward hidden", Ar::FeedForwardHidden,
                 BLOCK_GET(ffn_hidden),
                 [](const Trace& t, int) { return activation_name(t) + "(x" + kDot + "W" + kSub1 + " + b" + kSub1 + ")"; },
                 SHAPE_OF(block.ffn_hidden), fixed_feed_forward});
    r.push_back({"block.ffn_product", false, Stage::Block, A::Query, A::Hidden, V::Signed, E::None, "gate \xE2\x8A\x99 up", Ar::GateProduct,
                 BLOCK_GET(ffn_product),
                 [](const Trace&, int) { return std::string("gate \xE2\x8A\x99 up: cell by cell"); }, SHAPE_OF(block.ffn_product),
                 fixed_feed_forward});
    r.push_back({"block.w_2", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::W2, "W_2", Ar::BlockParameter,
                 [](const Trace& t, const HeadTrace*) -> const Matrix* { return t.has_block ? &t.block.w_2.get() : nullptr; },
                 [](const Trace& t, int) { return std::string("W") + kSub2 + (gated(t) ? " (down)" : ""); }, SHAPE_OF(block.w_2),
                 fixed_feed_forward});
    r.push_back({"block.b_2", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::B2, "b_2", Ar::BlockParameter,
                 BLOCK_GET(b_2),
                 [](const Trace&, int) { return std::string("b") + kSub2; }, SHAPE_OF(block.b_2), fixed_feed_forward});
    // A mixture of experts: the router's logits, their softmax, and the weights of the kept experts.
    r.push_back({"block.router", false, Stage::Block, A::Dim, A::Expert, V::Signed, E::Router, "W_router", Ar::BlockParameter,
                 [](const Trace& t, const HeadTrace*) -> const Matrix* { return routed(t) ? &t.block.router.get() : nullptr; },
                 [](const Trace&, int) { return std::string("W_router"); }, SHAPE_OF(block.router), fixed_router});
    r.push_back({"block.router_logits", false, Stage::Block, A::Query, A::Expert, V::Signed, E::None, "router logits", Ar::RouterLogit,
                 BLOCK_GET(router_logits),
                 [](const Trace& t, int) {
                     return "router logits = x" + std::string(kDot) + "W_router" + (t.settings.block.moe.router_bias.size() != 0 ? " + b_router" : "");
                 },
                 [](const Trace& t, int) { return product(ffn_input(t), t.block.router, t.block.router_logits); }, fixed_router});
    r.push_back({"block.router_probabilities", false, Stage::Block, A::Query, A::Expert, V::Weights, E::None, "router probabilities",
                 // empty, so no card, with a top-k-then-softmax router (gpt-oss): it forms no softmax over all E
                 Ar::RouterProbability, BLOCK_GET(router_probabilities),
                 [](const Trace& t, int) {
                     if (t.settings.block.moe.router_kind == RouterKind::SigmoidGrouped)
                         return std::string("σ(router logits): each expert on its own");
                     return std::string("softmax(router logits): each row sums to 1");
                 },
                 SHAPE_OF(block.router_probabilities), fixed_router});
    r.push_back({"block.router_choice", false, Stage::Block, A::Query, A::Expert, V::Signed, E::None, "router choice", Ar::RouterChoice,
                 BLOCK_GET(router_choice),
                 [](const Trace& t, int) {
                     const MixtureOfExperts& m = t.settings.block.moe;
                     return "choice: σ + b in the " + std::to_string(m.top_groups) + " best of " + std::to_string(m.groups) + " groups";
                 },
                 SHAPE_OF(block.router_choice), fixed_router});
    r.push_back({"block.routing", false, Stage::Block, A::Query, A::Expert, V::Weights, E::None, "routing", Ar::Routing,
                 BLOCK_GET(routing),
                 [](const Trace& t, int) {
                     const MixtureOfExperts& m = t.settings.block.moe;
                     if (m.router_kind == RouterKind::TopKThenSoftmax)
                         return "routing: each token's top " + std::to_string(m.top_k) + " of " + std::to_string(m.experts) +
                                " logits, softmax over those " + std::to_string(m.top_k);
                     if (m.router_kind == RouterKind::SigmoidGrouped)
                         return "routing: top " + std::to_string(m.top_k) + " choices, σ" + (m.normalize_top_k ? " renormalised" : "") + " " + kTimes + " " +
                                format_value(m.routed_scale, 3);
                     if (m.router_kind == RouterKind::TopKThenSigmoid)
                         return "routing: each token's top " + std::to_string(m.top_k) + " of " + std::to_string(m.experts) + " logits, each's own σ" +
                                (m.weight_input ? std::string(", scaling the expert's input") : std::string());
                     return "routing: each token's top " + std::to_string(m.top_k) + " of " + std::to_string(m.experts) + " experts" +
                            (m.normalize_top_k ? ", renormalised to sum 1" : ", their probabilities as they are");
                 },
                 SHAPE_OF(block.routing), fixed_router});
}

// The shared expert, the sandwich's last norm, residual 2 and the block's output.
void add_block_end(std::vector<MatrixEntry>& r) {
    // The shared expert beside them (Qwen2-MoE): every token runs it; a gate σ(x·g) scales it.
    r.push_back({"block.shared_gate_values", false, Stage::Block, A::Query, A::Hidden, V::Weights, E::None, "shared expert gate",
                 Ar::SharedGate, BLOCK_GET(shared_gate_values),
                 [](const Trace&, int) { return "shared expert's gate = \xCF\x83(x" + std::string(kDot) + "g): how much of it each token takes"; },
                 [](const Trace& t, int) { return product(ffn_input(t), t.block.shared_gate, t.block.shared_gate_values) + ", then \xCF\x83"; },
                 fixed_router});
    r.push_back({"block.shared_output", false, Stage::Block, A::Query, A::Dim, V::Signed, E::None, "shared expert", Ar::SharedExpertOutput,
                 BLOCK_GET(shared_output),
                 [](const Trace& t, int) {
                     const bool gated_shared = t.settings.block.moe.shared_gated;
                     return std::string(gated_shared ? "\xCF\x83(x" + std::string(kDot) + "g) " + kTimes + " " : "") +
                            "shared(x): the expert every token runs (width " + std::to_string(t.settings.block.moe.shared_d_ff) + ")";
                 },
                 SHAPE_OF(block.shared_output), fixed_router});
    r.push_back({"block.ffn_output", false, Stage::Block, A::Query, A::Dim, V::Signed, E::None, "feed-forward output", Ar::FeedForwardOutput,
                 BLOCK_GET(ffn_output),
                 [](const Trace& t, int) {
                     if (routed(t) && t.settings.block.moe.has_shared())
                         return std::string("\xCE\xA3 routing") + kDot + "expert(x) + the shared expert's output";
                     if (routed(t)) return std::string("\xCE\xA3 routing") + kDot + "expert(x): the kept experts' outputs, weighted";
                     if (gated(t)) return std::string("(gate \xE2\x8A\x99 up)") + kDot + "W" + kSub2;
                     return std::string("hidden") + kDot + "W" + kSub2 + " + b" + kSub2;
                 },
                 SHAPE_OF(block.ffn_output), fixed_feed_forward});
    // Gemma's sandwich: the feed-forward's output normalised before the residual adds it.
    r.push_back({"block.post_feed_forward_norm", false, Stage::Block, A::Query, A::Dim, V::Signed, E::None, "post-feed-forward norm",
                 Ar::PostFeedForwardNorm, BLOCK_GET(post_feed_forward_norm),
                 [](const Trace& t, int) { return norm_symbol(t, "") + "(feed-forward output): before the residual adds it"; },
                 [](const Trace& t, int) { return dims(t.block.post_feed_forward_norm) + ", " + norm_formula(t); }, fixed_block_output});
    r.push_back({"block.gamma_post_feed_forward", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::GammaPostFeedForward,
                 "post-feed-forward norm \xCE\xB3", Ar::BlockParameter, BLOCK_GET(gamma_post_feed_forward),
                 [](const Trace& t, int) { return gamma_title(t, " post-FFN"); }, SHAPE_OF(block.gamma_post_feed_forward),
                 fixed_block_output});
    r.push_back({"block.beta_post_feed_forward", false, Stage::Block, A::Hidden, A::Dim, V::Signed, E::BetaPostFeedForward,
                 "post-feed-forward norm \xCE\xB2", Ar::BlockParameter, BLOCK_GET(beta_post_feed_forward),
                 [](const Trace&, int) { return std::string("\xCE\xB2 post-FFN"); }, SHAPE_OF(block.beta_post_feed_forward),
                 fixed_block_output});
    r.push_back({"block.residual2", false, Stage::Block, A::Query, A::Dim, V::Signed, E::None, "residual 2", Ar::Residual2,
                 BLOCK_GET(residual2),
                 [](const Trace& t, int) {
                     const BlockOptions& b = t.settings.block;
                     const std::string ffn = b.sandwich_norm ? norm_symbol(t, "") + "(feed-forward)" : "feed-forward";
                     if (!b.residual) return ffn + " (no residual)";
                     if (b.parallel_residual) return std::string(additive_positions(t) ? "(X + PE)" : "X") + " + attention + feed-forward";
                     return std::string(pre_norm(t) ? "residual + " : "norm 1 output + ") + ffn;
                 },
                 SHAPE_OF(block.residual2), fixed_block_output});
    r.push_back({"block.output", false, Stage::Block, A::Query, A::Dim, V::Signed, E::None, "block output", Ar::BlockOutput,
                 BLOCK_GET(output),
                 [](const Trace& t, int) {
                     if (!t.settings.block.feed_forward) return std::string("block output (no feed-forward)");
                     return !pre_norm(t) && t.settings.block.layer_norm ? "block output = " + norm_symbol(t, kSub2) + "(residual 2)"
                                                                        : std::string("block output = residual 2");
                 },
                 SHAPE_OF(block.output), fixed_block_output});
}

// The table's columns for the lesson (`reads`, `taught_in`): what each result reads, and where
// the trace moves it. The names are the registry's ("block.norm1", "x_pe"); the matrices they
// stand for are trace.cpp's attention_input and the engine's keys_from.

using Reads = std::vector<std::string>;

bool rotary(const Trace& t) { return t.settings.positional == PositionalEncoding::Rotary; }
// What the projections read: norm 1 in a pre-norm block, else X + PE or X.
std::string input_name(const Trace& t) { return pre_norm(t) ? "block.norm1" : additive_positions(t) ? "x_pe" : "x"; }
// What the keys and values are projected from: cross-attention's source (as given: a pre-norm
// block normalises the queries' stream alone), else the queries' input.
std::string key_input(const Trace& t) {
    if (!cross(t)) return input_name(t);
    return additive_positions(t) ? "source_x_pe" : "source_x";
}
// Q, K and V as projected (before RoPE turns Q and K): from the input and W, or latent
// attention's path (the queries' latent; the compressed latent, its norm and the shared rotary key).
Reads projected_q(const Trace& t) {
    if (t.settings.latent.on()) return {input_name(t), "latent.q_latent"};
    return {input_name(t), "w_q", "b_q"};
}
Reads projected_k(const Trace& t) {
    if (t.settings.latent.on()) return {"latent.compressed", "latent.latent", "latent.k_rope"};
    return {key_input(t), "w_k", "b_k"};
}
Reads projected_v(const Trace& t) {
    if (t.settings.latent.on()) return {"latent.latent"};
    return {key_input(t), "w_v", "b_v"};
}
// QK-norm: RMSNorm(x·W)·w, each head's row (or the whole projection's, OLMo 2).
Reads normed_q(const Trace& t) {
    Reads r = projected_q(t);
    r.push_back("q_norm");
    return r;
}
Reads normed_k(const Trace& t) {
    Reads r = projected_k(t);
    r.push_back("k_norm");
    return r;
}
// Q and K as the scores read them: turned by RoPE from the projection (QK-normed where the
// layer norms them), and Llama 4's temperature on its NoPE layers' queries.
Reads final_q(const Trace& t) {
    Reads r = rotary(t) ? Reads{t.settings.qk_norm ? "q_normed" : "q_unrotated"} : t.settings.qk_norm ? Reads{"q_normed"} : projected_q(t);
    r.push_back("temperature");
    return r;
}
Reads final_k(const Trace& t) {
    return rotary(t) ? Reads{t.settings.qk_norm ? "k_normed" : "k_unrotated"} : t.settings.qk_norm ? Reads{"k_normed"} : projected_k(t);
}
std::optional<Stage> turned_by_rope(const Trace& t) { return rotary(t) ? Stage::Positional : Stage::Projections; }
// Q and K before RoPE: the projections' results, unless QK-norm's rows are (they are the same).
std::optional<Stage> projected_before_rope(const Trace& t) {
    return rotary(t) && !t.settings.qk_norm ? std::optional<Stage>(Stage::Projections) : std::nullopt;
}
std::optional<Stage> with_additive_positions(const Trace& t) {
    return additive_positions(t) ? std::optional<Stage>(Stage::Positional) : std::nullopt;
}

// The lesson's columns of the table: for each matrix a step draws as its result, what it reads
// and where the trace's settings move it.
void teach_lesson_steps(std::vector<MatrixEntry>& r) {
    struct Step {
        const char* key;
        bool per_head;
        Reads (*reads)(const Trace&);
        std::optional<Stage> (*taught_in)(const Trace&);
    };
    const Step steps[] = {
        {"x", false, [](const Trace&) { return Reads{}; }, nullptr},
        {"source_x", false, [](const Trace&) { return Reads{}; }, nullptr},
        {"x_pe", false, [](const Trace&) { return Reads{"x", "pe"}; }, with_additive_positions},
        {"source_x_pe", false, [](const Trace&) { return Reads{"source_x", "source_pe"}; }, with_additive_positions},
        {"q_unrotated", true, projected_q, projected_before_rope},
        {"k_unrotated", true, projected_k, projected_before_rope},
        {"q_normed", true, normed_q, nullptr},
        {"k_normed", true, normed_k, nullptr},
        {"q", true, final_q, turned_by_rope},
        {"k", true, final_k, turned_by_rope},
        {"v", true, projected_v, nullptr},
        {"scores", true, [](const Trace&) { return Reads{"q", "k"}; }, nullptr},
        {"scaled_scores", true, [](const Trace&) { return Reads{"scores", "position_bias"}; }, nullptr},
        {"capped_scores", true, [](const Trace&) { return Reads{"scaled_scores"}; }, nullptr},
        {"masked_scores", true, [](const Trace& t) { return Reads{t.settings.softcap > 0.0f ? "capped_scores" : "scaled_scores"}; }, nullptr},
        {"weights", true, [](const Trace&) { return Reads{"masked_scores"}; },
         [](const Trace& t) { return t.settings.delta_net ? std::nullopt : std::optional<Stage>(Stage::Weights); }},
        // Gated DeltaNet: β and the decay make its implied weights; there are no scores
        {"implied_weights", true, [](const Trace&) { return Reads{"linear.beta", "linear.decay"}; }, nullptr},
        {"output", true, [](const Trace& t) { return Reads{t.settings.delta_net ? "implied_weights" : "weights", "v"}; }, nullptr},
        {"concat", false,
         [](const Trace& t) {
             Reads heads;  // the first four heads' outputs stand for all of them
             for (int h = 0; h < t.heads && h < 4; ++h) heads.push_back("head" + std::to_string(h) + ".output");
             return heads;
         },
         nullptr},
        // Differential attention: each pair's difference from the heads' readings and λ, then its norm
        {"differential.difference", false,
         [](const Trace&) {
             return Reads{"concat", "differential.lambda_q1", "differential.lambda_k1", "differential.lambda_q2", "differential.lambda_k2"};
         },
         nullptr},
        {"differential.normed", false, [](const Trace&) { return Reads{"differential.difference"}; }, nullptr},
        {"output", false,
         [](const Trace& t) {
             return Reads{t.settings.differential ? "differential.normed" : t.heads > 1 ? "concat" : "head0.output", "w_o", "b_o"};
         },
         nullptr},
        // Each design's own steps where it has them: the sandwich's norms, the gate, up and their
        // product, a mixture's router probabilities and the weights each token kept.
        {"block.output", false,
         [](const Trace&) {
             return Reads{"output", "block.post_attention_norm", "block.residual", "block.norm1", "block.norm2", "block.ffn_hidden",
                          "block.ffn_gate", "block.ffn_up", "block.ffn_product", "block.router_probabilities", "block.router_choice",
                          "block.routing", "block.shared_gate_values", "block.shared_output", "block.ffn_output",
                          "block.post_feed_forward_norm"};
         },
         nullptr},
    };
    for (const Step& step : steps) {
        const auto it = std::find_if(r.begin(), r.end(), [&](const MatrixEntry& e) { return e.per_head == step.per_head && std::string(e.key) == step.key; });
        if (it == r.end()) throw std::logic_error(std::string("the lesson's steps name a matrix the table does not have: ") + step.key);
        it->reads = step.reads;
        it->taught_in = step.taught_in;
    }
}

std::vector<MatrixEntry> build_registry() {
    std::vector<MatrixEntry> r;
    add_inputs(r);
    add_projection_weights(r);
    add_delta_net_inputs(r);
    add_latent_attention(r);
    add_queries_keys_values(r);
    add_head_scores(r);
    add_head_weights_and_output(r);
    add_concat_and_output(r);
    add_block_norms(r);
    add_feed_forward(r);
    add_block_end(r);
    teach_lesson_steps(r);
    return r;
}

#undef TRACE_GET
#undef HEAD_GET
#undef SHAPE_OF
#undef BLOCK_GET
#undef NORM_GET
#undef LATENT_GET

}  // namespace

const char* to_string(Editable e) {
    switch (e) {
        case Editable::None: return "none";
        case Editable::X: return "X";
        case Editable::SourceX: return "source X";
        case Editable::Q: return "Q";
        case Editable::K: return "K";
        case Editable::V: return "V";
        case Editable::WQ: return "W_Q";
        case Editable::WK: return "W_K";
        case Editable::WV: return "W_V";
        case Editable::WO: return "W_O";
        case Editable::BQ: return "b_q";
        case Editable::BK: return "b_k";
        case Editable::BV: return "b_v";
        case Editable::BO: return "b_o";
        case Editable::W1: return "W_1";
        case Editable::B1: return "b_1";
        case Editable::W2: return "W_2";
        case Editable::B2: return "b_2";
        case Editable::Gamma1: return "norm 1 gamma";
        case Editable::Beta1: return "norm 1 beta";
        case Editable::Gamma2: return "norm 2 gamma";
        case Editable::Beta2: return "norm 2 beta";
        case Editable::WGate: return "W_gate";
        case Editable::GammaPostAttention: return "post-attention norm gamma";
        case Editable::BetaPostAttention: return "post-attention norm beta";
        case Editable::GammaPostFeedForward: return "post-feed-forward norm gamma";
        case Editable::BetaPostFeedForward: return "post-feed-forward norm beta";
        case Editable::QNorm: return "QK-norm weight of q";
        case Editable::KNorm: return "QK-norm weight of k";
        case Editable::Router: return "W_router";
        case Editable::LatentWQA: return "W_q_a";
        case Editable::LatentWQB: return "W_q_b";
        case Editable::LatentWKVA: return "W_kv_a";
        case Editable::LatentWKVB: return "W_kv_b";
        case Editable::LatentBQA: return "b_q_a";
        case Editable::LatentBKVA: return "b_kv_a";
        case Editable::LatentQNorm: return "latent q norm gamma";
        case Editable::LatentKVNorm: return "latent kv norm gamma";
        case Editable::GateW: return "W_G";
        case Editable::GateB: return "b_G";
    }
    return "?";
}

const std::vector<MatrixEntry>& matrix_registry() {
    static const std::vector<MatrixEntry> registry = build_registry();
    return registry;
}

// [SECTION] The lesson's steps

std::vector<StepMatrix> step_matrices(const Trace& trace, Stage stage, int head) {
    if (trace.head.empty()) return {};
    if (stage == Stage::Tokens) stage = Stage::Embeddings;  // the tokens' step draws their embeddings
    if (stage == Stage::ScalingPlot) stage = Stage::Scaled;
    const int h = std::clamp(head, 0, std::max(0, trace.heads - 1));
    const std::string hp = "head" + std::to_string(h) + ".";
    const auto present = [&](const std::string& name) {
        const std::optional<MatrixRef> ref = parse_matrix_name(name);
        return ref && matrix_of(trace, *ref) != nullptr;
    };
    std::vector<std::string> results;
    if (trace.settings.input == InputMode::Direct &&
        (stage == Stage::Embeddings || stage == Stage::Positional || stage == Stage::Projections)) {
        for (const char* given : {"q", "k", "v"})  // Q, K and V given: no tokens, no projections
            if (present(hp + given)) results.push_back(hp + given);
    } else {
        for (const MatrixEntry& e : matrix_registry()) {
            if (e.reads == nullptr) continue;
            const std::optional<Stage> taught = e.taught_in != nullptr ? e.taught_in(trace) : std::optional<Stage>(e.stage);
            const std::string name = e.per_head ? hp + e.key : std::string(e.key);
            if (taught == stage && present(name)) results.push_back(name);
        }
    }
    // A key a result reads, by name: the same head's for a per-head result, another head's as
    // written ("head2.output"), else the trace's own.
    const auto qualified = [&](const std::string& key, bool per_head) {
        if (key.rfind("head", 0) == 0 && parse_matrix_name(key)) return key;
        if (per_head && parse_matrix_name(hp + key)) return hp + key;
        return parse_matrix_name(key) ? key : hp + key;
    };
    std::vector<StepMatrix> cards;
    const auto has = [&](const std::string& name) {
        return std::any_of(cards.begin(), cards.end(), [&](const StepMatrix& c) { return c.name == name; });
    };
    for (const std::string& name : results) {
        const MatrixEntry& e = *parse_matrix_name(name)->entry;
        for (const std::string& key : e.reads(trace)) {
            const std::string read = qualified(key, e.per_head);
            if (present(read) && !has(read)) cards.push_back({read, false});
        }
    }
    for (const std::string& name : results)
        if (!has(name)) cards.push_back({name, true});  // one that another result reads is drawn with what it reads
    return cards;
}

// [SECTION] Names

std::optional<MatrixRef> parse_matrix_name(const std::string& name) {
    MatrixRef ref;
    std::string key = name;
    if (name.rfind("head", 0) == 0 && name.size() > 4 && name[4] >= '0' && name[4] <= '9') {
        const auto dot = name.find('.');
        if (dot == std::string::npos) return std::nullopt;
        long index = 0;
        for (size_t i = 4; i < dot; ++i) {
            if (name[i] < '0' || name[i] > '9' || index > 100000) return std::nullopt;
            index = index * 10 + (name[i] - '0');
        }
        ref.head = static_cast<int>(index);
        key = name.substr(dot + 1);
    }
    for (const MatrixEntry& e : matrix_registry())
        if (e.per_head == (ref.head >= 0) && key == e.key) {
            ref.entry = &e;
            return ref;
        }
    return std::nullopt;
}

std::string matrix_name(const MatrixRef& ref) {
    if (ref.entry == nullptr) return {};
    return ref.entry->per_head ? "head" + std::to_string(ref.head) + "." + ref.entry->key : ref.entry->key;
}

std::optional<Column> column_named(const std::string& label) {
    for (int c = static_cast<int>(Column::Inputs); c <= static_cast<int>(Column::BlockOutput); ++c)
        if (label == column_label(static_cast<Column>(c))) return static_cast<Column>(c);
    return std::nullopt;
}

const char* column_label(Column column) {
    switch (column) {
        case Column::Inputs: return "X";
        case Column::Positions: return "PE";
        case Column::InputsWithPositions: return "X + PE";
        case Column::AttentionInput: return "norm 1";
        case Column::Weights: return "W_Q W_K W_V";
        case Column::Biases: return "biases";
        case Column::Latent: return "latent";
        case Column::Convolution: return "conv, \xCE\xB2, g";
        case Column::BeforeQKNorm: return "before QK-norm";
        case Column::QKNorm: return "QK-norm";
        case Column::Unrotated: return "before RoPE";
        case Column::Projections: return "Q K V";
        case Column::Scores: return "Q\xC2\xB7K\xE1\xB5\x80";
        case Column::Scaled: return "scaled";
        case Column::Capped: return "soft-cap";
        case Column::Masked: return "mask";
        case Column::Softmax: return "softmax";
        case Column::Sink: return "sink";
        case Column::HeadOutput: return "weights\xC2\xB7V";
        case Column::Concat: return "concat \xC2\xB7 W_O";
        case Column::Output: return "output";
        case Column::Block: return "residual, norm 2";
        case Column::Router: return "router";
        case Column::GateAndUp: return "gate, up";
        case Column::FeedForward: return "feed-forward";
        case Column::BlockOutput: return "block output";
    }
    return "?";
}

const Matrix* sibling_of(const Trace& trace, const MatrixRef& ref, const std::string& key) {
    if (ref.entry == nullptr) return nullptr;
    for (const MatrixEntry& e : matrix_registry())
        if (e.per_head == ref.entry->per_head && key == e.key) return matrix_of(trace, MatrixRef{&e, ref.head});
    return nullptr;
}

std::string display_name(const std::string& name) {
    const auto ref = parse_matrix_name(name);
    if (!ref) return name;
    return ref->entry->per_head ? "head " + std::to_string(ref->head + 1) + " \xC2\xB7 " + ref->entry->label : ref->entry->label;
}

const Matrix* matrix_of(const Trace& trace, const MatrixRef& ref) {
    if (ref.entry == nullptr) return nullptr;
    const HeadTrace* head = nullptr;
    if (ref.entry->per_head) {
        if (ref.head < 0 || ref.head >= static_cast<int>(trace.head.size())) return nullptr;
        head = &trace.head[static_cast<size_t>(ref.head)];
    }
    const Matrix* m = ref.entry->get(trace, head);
    return m != nullptr && m->size() != 0 ? m : nullptr;
}

bool is_vector(const MatrixEntry& entry) {
    switch (entry.edit) {
        case Editable::BQ: case Editable::BK: case Editable::BV: case Editable::BO: case Editable::B1: case Editable::B2:
        case Editable::Gamma1: case Editable::Beta1: case Editable::Gamma2: case Editable::Beta2:
        case Editable::GammaPostAttention: case Editable::BetaPostAttention: case Editable::GammaPostFeedForward:
        case Editable::BetaPostFeedForward: case Editable::QNorm: case Editable::KNorm: case Editable::LatentBQA:
        case Editable::LatentBKVA: case Editable::LatentQNorm: case Editable::LatentKVNorm: case Editable::GateB: return true;
        default: return false;
    }
}

bool is_weight(const MatrixEntry& entry) {
    if (entry.arithmetic == Arithmetic::DeltaParameter) return true;  // Gated DeltaNet's weights and vectors
    switch (entry.edit) {
        case Editable::WQ: case Editable::WK: case Editable::WV: case Editable::WO:
        case Editable::W1: case Editable::W2: case Editable::WGate: case Editable::Router: case Editable::LatentWQA:
        case Editable::LatentWQB: case Editable::LatentWKVA: case Editable::LatentWKVB: case Editable::GateW: return true;
        default: return false;
    }
}

const SharedMatrix* weight_of(const Trace& t, const MatrixEntry& entry) {
    switch (entry.edit) {
        case Editable::WQ: return &t.w_q;
        case Editable::WK: return &t.w_k;
        case Editable::WV: return &t.w_v;
        case Editable::WO: return &t.w_o;
        case Editable::W1: return t.has_block ? &t.block.w_1 : nullptr;  // as the entries' get
        case Editable::W2: return t.has_block ? &t.block.w_2 : nullptr;
        case Editable::WGate: return t.has_block ? &t.block.w_gate : nullptr;
        case Editable::Router: return t.has_block ? &t.block.router : nullptr;
        case Editable::LatentWQA: return &t.latent.w_q_a;
        case Editable::LatentWQB: return &t.latent.w_q_b;
        case Editable::LatentWKVA: return &t.latent.w_kv_a;
        case Editable::LatentWKVB: return &t.latent.w_kv_b;
        case Editable::GateW: return &t.w_g;
        default: break;
    }
    if (entry.arithmetic == Arithmetic::DeltaParameter) {  // Gated DeltaNet's projections, read in place from a checkpoint
        const std::string key = entry.key;
        if (key == "linear.w_z") return &t.linear.w_z;
        if (key == "linear.w_b") return &t.linear.w_b;
        if (key == "linear.w_a") return &t.linear.w_a;
    }
    return nullptr;
}

const Matrix* find_matrix(const Trace& trace, const std::string& name) {
    const auto ref = parse_matrix_name(name);
    return ref ? matrix_of(trace, *ref) : nullptr;
}

std::vector<std::string> matrix_names(const Trace& trace) {
    std::vector<std::string> names;
    for (const MatrixEntry& e : matrix_registry()) {
        if (!e.per_head) {
            // a weight's presence is its shape: one read in place is not widened to be listed
            const SharedMatrix* weight = weight_of(trace, e);
            if (weight ? weight->size() != 0 : matrix_of(trace, MatrixRef{&e, -1}) != nullptr) names.emplace_back(e.key);
            continue;
        }
        for (size_t h = 0; h < trace.head.size(); ++h)
            if (matrix_of(trace, MatrixRef{&e, static_cast<int>(h)})) names.push_back(matrix_name(MatrixRef{&e, static_cast<int>(h)}));
    }
    return names;
}

std::string position_span(long long begin, long long end) {
    if (end - begin <= 1) return std::to_string(begin + 1);
    return std::to_string(begin + 1) + "\xE2\x80\x93" + std::to_string(end);
}

std::string rope_scaling_words(const RopeOptions& r, int length) {
    std::string words;
    auto add = [&words](const std::string& w) { words += (words.empty() ? "" : ", ") + w; };
    if (r.scaling == RopeScalingKind::Linear) add("positions \xC3\xB7 " + format_value(r.factor, 2));
    if (r.scaling == RopeScalingKind::Llama3) add("Llama 3 scaling \xC3\x97" + format_value(r.factor, 2));
    if (r.scaling == RopeScalingKind::Yarn)
        add("YaRN \xC3\x97" + format_value(r.factor, 2) + " (fast pairs kept, slow ones \xC3\xB7 " + format_value(r.factor, 2) +
            ", trained on " + std::to_string(r.original_max_positions) + ")");
    if (r.scaling == RopeScalingKind::LongRope)
        add(long_rope_factors(r, length) ? "LongRoPE's long factors (n = " + std::to_string(length) + " > " +
                                               std::to_string(r.original_max_positions) + ")"
                                         : "LongRoPE's short factors (n = " + std::to_string(length) + " \xE2\x89\xA4 " +
                                               std::to_string(r.original_max_positions) + ")");
    if (r.attention_factor != 1.0f) add("cos and sin \xC3\x97 " + format_value(r.attention_factor, 4));
    return words;
}

std::string format_value(float value, int decimals) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value < 0 ? "\xE2\x88\x92\xE2\x88\x9E" : "\xE2\x88\x9E";
    char buffer[64];
    const float magnitude = std::fabs(value);
    // Large values, and small ones that `decimals` would round to zero (a weight of 0.0002
    // is not "0.00"), in short scientific notation: "1e9", "2.5e−4".
    const bool tiny = magnitude > 0.0f && static_cast<double>(magnitude) < 0.5 * std::pow(10.0, -decimals);
    std::string text;
    if (magnitude >= 1e5f || tiny) {
        std::snprintf(buffer, sizeof buffer, "%.*e", std::max(0, decimals - 1), static_cast<double>(magnitude));
        std::string mantissa = buffer;
        const auto e = mantissa.find('e');
        const int exponent = std::atoi(mantissa.c_str() + e + 1);
        mantissa.resize(e);
        if (mantissa.find('.') != std::string::npos) {  // 1.0 → 1, 2.50 → 2.5
            while (mantissa.back() == '0') mantissa.pop_back();
            if (mantissa.back() == '.') mantissa.pop_back();
        }
        text = mantissa + "e" + (exponent < 0 ? "\xE2\x88\x92" : "") + std::to_string(std::abs(exponent));
    } else {
        std::snprintf(buffer, sizeof buffer, "%.*f", decimals, static_cast<double>(magnitude));
        text = buffer;
    }
    // "-0.00" would read as a sign without a value: a rounded zero is written without one.
    bool all_zero = true;
    for (char ch : text)
        if (ch >= '1' && ch <= '9') all_zero = false;
    if (value < 0 && !all_zero) text = "\xE2\x88\x92" + text;
    return text;
}

}  // namespace attn
