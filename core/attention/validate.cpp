// Whether a scenario can run, every reason said: validate() and what a full trace would keep.
#include "attention/engine.hpp"
#include "attention/linear_attention.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "attention/attention_rules.hpp"
#include "attention/mask.hpp"
#include "attention/positional.hpp"

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

template <typename M>  // a Matrix or a SharedMatrix: its shape, never its values
void check_shape(std::vector<std::string>& errors, const char* name, const M& m, Eigen::Index rows, Eigen::Index cols) {
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
    const size_t tokens = static_cast<size_t>(std::max<Eigen::Index>(n, seq.embeddings.rows()));
    if (!seq.padding.empty() && seq.padding.size() != tokens)
        errors.push_back(std::string(which) + " has " + std::to_string(seq.padding.size()) + " padding flags for " +
                         std::to_string(tokens) + " tokens: give one flag per token (or none)");
}

void check_vector(std::vector<std::string>& errors, const char* name, const Vector& v, Eigen::Index length) {
    if (v.size() != 0 && v.size() != length)
        errors.push_back(std::string(name) + " has " + std::to_string(v.size()) + " numbers, expected " + std::to_string(length));
}

void check_experts(std::vector<std::string>& errors, const Scenario& s) {
    const MixtureOfExperts& m = s.block.moe;
    if (m.experts == 0) return;
    const int d_ff = s.block.d_ff > 0 ? s.block.d_ff : 4 * s.d_model;
    if (m.experts < 0 || m.experts > kMaxExperts) {
        errors.push_back("block moe.experts is " + std::to_string(m.experts) + ": expected 1 to " + std::to_string(kMaxExperts));
        return;
    }
    if (m.top_k < 1 || m.top_k > m.experts)
        errors.push_back("block moe.top_k is " + std::to_string(m.top_k) + ": each token keeps 1 to E = " + std::to_string(m.experts) + " experts");
    check_shape(errors, "block W_router", m.router, s.d_model, m.experts);
    check_vector(errors, "block b_router", m.router_bias, m.experts);
    if (m.router_kind == RouterKind::TopKThenSoftmax && m.normalize_top_k)
        errors.push_back("block moe: normalize_top_k with a top-k-then-softmax router would change nothing (its weights sum to 1)");
    if (m.router_kind == RouterKind::TopKThenSigmoid && m.normalize_top_k)
        errors.push_back("block moe: a top-k-then-sigmoid router (Llama 4) weighs each kept expert by its own \xCF\x83: normalize_top_k "
                         "would be ignored");
    if (m.router_kind == RouterKind::SigmoidGrouped) {
        check_vector(errors, "block moe choice_bias", m.choice_bias, m.experts);
        if (m.router_bias.size() != 0)
            errors.push_back("block moe: a sigmoid-grouped router has no bias on its logits (its choice_bias is added to the scores): "
                             "router_bias would be ignored");
        if (m.groups < 1 || m.experts % m.groups != 0 || m.experts / m.groups < 2)
            errors.push_back("block moe.groups is " + std::to_string(m.groups) + ": the " + std::to_string(m.experts) +
                             " experts must split into groups of at least 2 (a group's score is its 2 best experts)");
        else if (m.top_groups < 1 || m.top_groups > m.groups)
            errors.push_back("block moe.top_groups is " + std::to_string(m.top_groups) + ": expected 1 to groups = " + std::to_string(m.groups));
        else if (m.top_k > m.top_groups * (m.experts / m.groups))
            errors.push_back("block moe.top_k is " + std::to_string(m.top_k) + ", more than the " + std::to_string(m.top_groups * (m.experts / m.groups)) +
                             " experts of the kept groups");
        if (!std::isfinite(m.routed_scale) || !(m.routed_scale > 0.0f))
            errors.push_back("block moe.routed_scale is " + std::to_string(m.routed_scale) + ": expected a number above 0 (2.5 in DeepSeek-V3)");
    } else if (m.choice_bias.size() != 0 || m.groups != 1 || m.top_groups != 1 || m.routed_scale != 1.0f) {
        errors.push_back("block moe: choice_bias, groups, top_groups and routed_scale belong to the sigmoid-grouped router (DeepSeek-V3): "
                         "with this router they would be ignored");
    }
    if (!std::isfinite(m.swiglu_limit) || m.swiglu_limit < 0.0f)
        errors.push_back("block moe.swiglu_limit is " + std::to_string(m.swiglu_limit) + ": expected a number above 0 (7 in gpt-oss), or 0 for none");
    else if (m.swiglu_limit > 0.0f && !std::isfinite(m.swiglu_alpha))
        errors.push_back("block moe.swiglu_alpha is " + std::to_string(m.swiglu_alpha) + ": expected a number (1.702 in gpt-oss)");
    else if (m.swiglu_limit > 0.0f && s.block.activation != Activation::SiLU)
        errors.push_back(std::string("block moe: the clamped SwiGLU (swiglu_limit) is g\xC2\xB7\xCF\x83(\xCE\xB1\xC2\xB7g), a SiLU with a gain: the block's "
                                     "activation must be silu, not ") + to_string(s.block.activation));
    // Seeded experts are drawn again on every run: at most 2^26 numbers (256 MB) of them.
    const double seeded = m.weights.empty() ? 3.0 * m.experts * static_cast<double>(s.d_model) * d_ff : 0.0;
    if (seeded > static_cast<double>(1 << 26))
        errors.push_back("block moe: " + std::to_string(m.experts) + " seeded experts of " + std::to_string(s.d_model) + " \xC3\x97 " +
                         std::to_string(d_ff) + " would draw " + std::to_string(static_cast<long long>(seeded / 1e6)) +
                         " million numbers on every run (at most 67 million): give the experts' weights, or fewer or smaller experts");
    if (!m.weights.empty() && static_cast<int>(m.weights.size()) != m.experts)
        errors.push_back("block moe has weights for " + std::to_string(m.weights.size()) + " experts, expected E = " + std::to_string(m.experts) + " (or none)");
    for (size_t e = 0; e < m.weights.size(); ++e) {
        const std::string name = "block expert " + std::to_string(e) + " ";
        check_shape(errors, (name + "W_gate").c_str(), m.weights[e].w_gate, s.d_model, d_ff);
        check_shape(errors, (name + "W_1").c_str(), m.weights[e].w_1, s.d_model, d_ff);
        check_shape(errors, (name + "W_2").c_str(), m.weights[e].w_2, d_ff, s.d_model);
        check_vector(errors, (name + "b_gate").c_str(), m.weights[e].b_gate, d_ff);
        check_vector(errors, (name + "b_1").c_str(), m.weights[e].b_1, d_ff);
        check_vector(errors, (name + "b_2").c_str(), m.weights[e].b_2, s.d_model);
    }
    // The shared expert: its width, weights and gate; nothing of it given without a width
    if (m.shared_d_ff < 0 || m.shared_d_ff > (1 << 20)) {
        errors.push_back("block moe.shared_d_ff is " + std::to_string(m.shared_d_ff) + ": expected 0 (no shared expert) to 1048576");
    } else if (m.shared_d_ff == 0) {
        const Expert& x = m.shared;
        if (m.shared_gated || m.shared_gate.size() != 0 || x.w_gate.size() != 0 || x.w_1.size() != 0 || x.w_2.size() != 0 || x.b_gate.size() != 0 ||
            x.b_1.size() != 0 || x.b_2.size() != 0)
            errors.push_back("block moe: a shared expert's gate or weights are given without its width (shared_d_ff 0): they would be ignored");
    } else {
        check_shape(errors, "block shared expert W_gate", m.shared.w_gate, s.d_model, m.shared_d_ff);
        check_shape(errors, "block shared expert W_1", m.shared.w_1, s.d_model, m.shared_d_ff);
        check_shape(errors, "block shared expert W_2", m.shared.w_2, m.shared_d_ff, s.d_model);
        check_vector(errors, "block shared expert b_gate", m.shared.b_gate, m.shared_d_ff);
        check_vector(errors, "block shared expert b_1", m.shared.b_1, m.shared_d_ff);
        check_vector(errors, "block shared expert b_2", m.shared.b_2, s.d_model);
        check_shape(errors, "block shared expert gate g", m.shared_gate, s.d_model, 1);
        if (!m.shared_gated && m.shared_gate.size() != 0)
            errors.push_back("block moe: the shared expert's gate g is given but shared_gated is off: it would be ignored");
        if (m.swiglu_limit > 0.0f)
            errors.push_back("block moe: a shared expert beside gpt-oss's clamped SwiGLU (swiglu_limit): no model has both, and which "
                             "of them the clamp would reach is not defined");
        if (m.shared.w_gate.size() == 0 && static_cast<double>(m.shared_d_ff) * 3.0 * s.d_model > static_cast<double>(1 << 26))
            errors.push_back("block moe: a seeded shared expert of " + std::to_string(s.d_model) + " \xC3\x97 " + std::to_string(m.shared_d_ff) +
                             " would draw more than 67 million numbers on every run: give its weights, or a smaller width");
    }
    for (size_t i = 0; i < m.ablated.size(); ++i) {
        const int e = m.ablated[i];
        if (e < 0 || e >= m.experts) errors.push_back("block moe ablates expert " + std::to_string(e) + ": the experts are 0 to " + std::to_string(m.experts - 1));
        else if (i > 0 && e <= m.ablated[i - 1]) errors.push_back("block moe's ablated experts must be listed once each, ascending");
    }
}

// Latent attention (scenario.hpp's LatentAttention): its sizes and weights, and the settings it
// takes the place of, which would be ignored.
void check_latent(std::vector<std::string>& errors, const Scenario& s) {
    const LatentAttention& l = s.latent;
    if (!l.on()) {
        if (l.kv_rank < 0) errors.push_back("latent kv_rank is " + std::to_string(l.kv_rank) + ": expected 0 (off) or more");
        else if (l.q_rank != 0 || l.nope_dim != 0 || l.rope_dim != 0 || l.v_dim != 0 || l.w_q_a.size() != 0 || l.w_q_b.size() != 0 ||
                 l.w_kv_a.size() != 0 || l.w_kv_b.size() != 0 || l.b_q_a.size() != 0 || l.b_kv_a.size() != 0 || l.q_a_norm.size() != 0 ||
                 l.kv_a_norm.size() != 0)
            errors.push_back("latent attention's sizes or weights are given without its kv_rank (0: off): they would be ignored");
        return;
    }
    const auto in_range = [&](const char* key, int value, int low) {
        if (value < low || value > kMaxDModel) {
            errors.push_back(std::string("latent ") + key + " is " + std::to_string(value) + ": expected " + std::to_string(low) + " to " +
                             std::to_string(kMaxDModel));
            return false;
        }
        return true;
    };
    bool sizes = true;
    for (const auto& [key, value, low] : {std::tuple{"kv_rank", l.kv_rank, 1}, std::tuple{"q_rank", l.q_rank, 0},
                                          std::tuple{"nope_dim", l.nope_dim, 0}, std::tuple{"rope_dim", l.rope_dim, 0},
                                          std::tuple{"v_dim", l.v_dim, 1}})
        if (!in_range(key, value, low)) sizes = false;
    if (sizes && l.rope_dim % 2 != 0) {
        errors.push_back("latent rope_dim is " + std::to_string(l.rope_dim) + ": RoPE turns dimensions in pairs, expected an even number");
        sizes = false;
    }
    if (sizes && l.nope_dim + l.rope_dim < 1) {
        errors.push_back("latent nope_dim and rope_dim are both 0: a query and a key need at least one dimension");
        sizes = false;
    }
    if (s.attention != AttentionKind::Self)
        errors.push_back("latent attention compresses one sequence into its keys and values: it is self-attention only, not cross-attention");
    if (s.head_dim != 0)
        errors.push_back("head_dim is given, but latent attention's d_k is nope_dim + rope_dim and its d_v is v_dim: leave head_dim out");
    if (s.kv_heads != 0 && s.kv_heads != s.heads)
        errors.push_back("kv_heads is " + std::to_string(s.kv_heads) + ", but latent attention gives every query head its own K and V "
                         "from the one latent: leave kv_heads out");
    for (const auto& [name, given] : {std::pair{"W_K", s.w_k.size() != 0}, std::pair{"W_V", s.w_v.size() != 0},
                                      std::pair{"b_k", s.b_k.size() != 0}, std::pair{"b_v", s.b_v.size() != 0}})
        if (given) errors.push_back(std::string(name) + " is given, but latent attention makes K and V from its latent: it would be ignored");
    if (s.qk_norm) errors.push_back("QK-norm with latent attention: no model has both, and which of q and k's parts it would norm is not defined");
    if (l.q_rank > 0 && (s.w_q.size() != 0 || s.b_q.size() != 0))
        errors.push_back("W_Q or b_q is given, but with q_rank the queries come from W_q_a and W_q_b: it would be ignored");
    if (l.q_rank == 0 && (l.w_q_a.size() != 0 || l.w_q_b.size() != 0 || l.b_q_a.size() != 0 || l.q_a_norm.size() != 0))
        errors.push_back("latent W_q_a, W_q_b, b_q_a or the q norm's γ is given without q_rank: the queries are x·W_Q, so they would be ignored");
    if (!sizes || s.heads < 1) return;
    const int heads = s.heads, d_qk = l.nope_dim + l.rope_dim;
    check_shape(errors, "latent W_q_a", l.w_q_a, s.d_model, l.q_rank);
    check_shape(errors, "latent W_q_b", l.w_q_b, l.q_rank, heads * d_qk);
    check_shape(errors, "latent W_kv_a", l.w_kv_a, s.d_model, l.kv_rank + l.rope_dim);
    check_shape(errors, "latent W_kv_b", l.w_kv_b, l.kv_rank, heads * (l.nope_dim + l.v_dim));
    check_vector(errors, "latent b_q_a", l.b_q_a, l.q_rank);
    check_vector(errors, "latent b_kv_a", l.b_kv_a, l.kv_rank + l.rope_dim);
    check_vector(errors, "latent q norm gamma", l.q_a_norm, l.q_rank);
    check_vector(errors, "latent kv norm gamma", l.kv_a_norm, l.kv_rank);
    // Seeded weights are drawn again on every run: at most 2^26 numbers of them.
    const double seeded = (l.w_kv_a.size() == 0 ? static_cast<double>(s.d_model) * (l.kv_rank + l.rope_dim) : 0.0) +
                          (l.w_kv_b.size() == 0 ? static_cast<double>(l.kv_rank) * heads * (l.nope_dim + l.v_dim) : 0.0) +
                          (l.q_rank > 0 && l.w_q_b.size() == 0 ? static_cast<double>(l.q_rank) * heads * d_qk : 0.0);
    if (seeded > static_cast<double>(1 << 26))
        errors.push_back("latent attention's seeded weights would draw " + std::to_string(static_cast<long long>(seeded / 1e6)) +
                         " million numbers on every run (at most 67 million): give its weights, or smaller ranks");
    if (!(s.block.epsilon > 0.0f) || !std::isfinite(s.block.epsilon))
        errors.push_back("block epsilon is " + std::to_string(s.block.epsilon) + ": latent attention's RMSNorms need a small positive number such as 1e-6");
}

// Gated DeltaNet (scenario.hpp's GatedDeltaNet): its sizes and weights, and the settings of
// softmax attention it has no place for, which would be ignored.
void check_differential(std::vector<std::string>& errors, const Scenario& s) {
    const DifferentialAttention& d = s.differential;
    if (!d.on) return;  // its λ vectors are kept while it is off (a scenario file writes them only while on)
    const auto refuse = [&](bool given, const std::string& why) {
        if (given) errors.push_back("differential attention " + why);
    };
    refuse(s.heads < 2 || s.heads % 2 != 0, "pairs its heads (p with p + H/2): it needs an even number of heads, not " + std::to_string(s.heads));
    refuse(s.latent.on(), "and latent attention are two ways of reading the values: choose one");
    refuse(s.delta_net.on, "subtracts two softmax maps; Gated DeltaNet has none: choose one");
    refuse(s.output_gate.on, "normalises each pair's output itself: turn the sigmoid output gate off");
    refuse(s.sinks.size() != 0, "has no sinks (a sink's share would change the two maps it subtracts): leave sinks out");
    refuse(!std::isfinite(d.lambda_init), "\xCE\xBB_init is not a finite number");
    const int d_k = head_dim_of(s);
    check_vector(errors, "differential lambda_q1", d.lambda_q1, d_k);
    check_vector(errors, "differential lambda_k1", d.lambda_k1, d_k);
    check_vector(errors, "differential lambda_q2", d.lambda_q2, d_k);
    check_vector(errors, "differential lambda_k2", d.lambda_k2, d_k);
}

void check_delta_net(std::vector<std::string>& errors, const Scenario& s) {
    const GatedDeltaNet& n = s.delta_net;
    if (!n.on) {
        if (n.key_heads != 0 || n.key_dim != 0 || n.w_z.size() != 0 || n.w_b.size() != 0 || n.w_a.size() != 0 || n.conv.size() != 0 ||
            n.a_log.size() != 0 || n.dt_bias.size() != 0 || n.norm.size() != 0)
            errors.push_back("Gated DeltaNet's sizes or weights are given while it is off: they would be ignored");
        return;
    }
    const auto refuse = [&](bool given, const std::string& why) {
        if (given) errors.push_back("Gated DeltaNet " + why);
    };
    refuse(s.attention != AttentionKind::Self, "runs over one text (self-attention): it has no source to read");
    refuse(s.mask != MaskKind::Causal, "is a recurrence over each token and the ones before it: its mask is causal (\"mask\": \"causal\")");
    refuse(s.positional == PositionalEncoding::Rotary || s.positional == PositionalEncoding::ALiBi,
           "has no RoPE or ALiBi: the order of the tokens is in its recurrence and its convolution (positional: none)");
    refuse(s.latent.on(), "and latent attention are two ways of making q, k and v: choose one");
    refuse(s.sinks.size() != 0, "has no softmax for a sink to join: leave sinks out");
    refuse(s.softcap > 0.0f, "has no scores to soft-cap: leave softcap at 0");
    refuse(s.qk_norm, "L2-normalises q and k itself: turn QK-norm off");
    refuse(s.temperature.on(), "has no query temperature: turn it off");
    refuse(s.output_gate.on, "has its own gate (SiLU(x\xC2\xB7W_Z) after each head's RMSNorm): turn the sigmoid output gate off");
    refuse(s.b_q.size() != 0 || s.b_k.size() != 0 || s.b_v.size() != 0, "has no biases on its projections: leave b_q, b_k and b_v out");
    refuse(s.score_scale > 0.0f, "multiplies q by 1/\xE2\x88\x9A" "d_k: leave score_scale at 0");
    refuse(s.kv_heads != 0 && s.kv_heads != s.heads,
           "gives each value head its own v and shares q and k by key_heads, not kv_heads: leave kv_heads out");
    const int heads = std::max(1, s.heads);
    if (n.key_heads < 0 || n.key_heads > heads || (n.key_heads > 0 && heads % n.key_heads != 0)) {
        errors.push_back("Gated DeltaNet key_heads is " + std::to_string(n.key_heads) + ": expected a number of q and k heads that divides the " +
                         std::to_string(heads) + " value heads (0: as many)");
        return;
    }
    if (n.key_dim < 0 || n.key_dim > kMaxDModel) {
        errors.push_back("Gated DeltaNet key_dim is " + std::to_string(n.key_dim) + ": expected 1 to " + std::to_string(kMaxDModel) + " (0: d_v)");
        return;
    }
    if (n.conv_kernel < 1 || n.conv_kernel > 64) {
        errors.push_back("Gated DeltaNet conv_kernel is " + std::to_string(n.conv_kernel) + ": expected 1 to 64 (4 in Qwen3-Next)");
        return;
    }
    const int key_heads = delta_key_heads(s), d_k = head_dim_of(s), d_v = value_dim_of(s), channels = delta_channels(s);
    check_shape(errors, "W_Q", s.w_q, s.d_model, key_heads * d_k);
    check_shape(errors, "W_K", s.w_k, s.d_model, key_heads * d_k);
    check_shape(errors, "W_V", s.w_v, s.d_model, heads * d_v);
    check_shape(errors, "Gated DeltaNet W_Z", n.w_z, s.d_model, heads * d_v);
    check_shape(errors, "Gated DeltaNet W_b", n.w_b, s.d_model, heads);
    check_shape(errors, "Gated DeltaNet W_a", n.w_a, s.d_model, heads);
    check_shape(errors, "Gated DeltaNet conv", n.conv, channels, n.conv_kernel);
    check_vector(errors, "Gated DeltaNet A_log", n.a_log, heads);
    check_vector(errors, "Gated DeltaNet dt_bias", n.dt_bias, heads);
    check_vector(errors, "Gated DeltaNet norm", n.norm, d_v);
    // Seeded weights are drawn again on every run: at most 2^26 numbers of them.
    const double seeded = (s.w_q.size() == 0 ? 2.0 * s.d_model * key_heads * d_k : 0.0) + (s.w_v.size() == 0 ? 1.0 * s.d_model * heads * d_v : 0.0) +
                          (n.w_z.size() == 0 ? 1.0 * s.d_model * heads * d_v : 0.0) + (n.conv.size() == 0 ? 1.0 * channels * n.conv_kernel : 0.0);
    if (seeded > static_cast<double>(1 << 26))
        errors.push_back("Gated DeltaNet's seeded weights would draw " + std::to_string(static_cast<long long>(seeded / 1e6)) +
                         " million numbers on every run (at most 67 million): give its weights, or fewer or smaller heads");
    if (!(s.block.epsilon > 0.0f) || !std::isfinite(s.block.epsilon))
        errors.push_back("block epsilon is " + std::to_string(s.block.epsilon) + ": Gated DeltaNet's RMSNorm needs a small positive number such as 1e-6");
}

void check_block(std::vector<std::string>& errors, const Scenario& s) {
    const BlockOptions& b = s.block;
    const int d_ff = b.d_ff > 0 ? b.d_ff : 4 * s.d_model;
    check_shape(errors, "block W_1", b.w_1, s.d_model, d_ff);
    check_shape(errors, "block W_2", b.w_2, d_ff, s.d_model);
    check_vector(errors, "block b_1", b.b_1, d_ff);
    check_vector(errors, "block b_2", b.b_2, s.d_model);
    check_vector(errors, "block LayerNorm 1 gamma", b.norm_1.gamma, s.d_model);
    check_vector(errors, "block LayerNorm 1 beta", b.norm_1.beta, s.d_model);
    check_vector(errors, "block LayerNorm 2 gamma", b.norm_2.gamma, s.d_model);
    check_vector(errors, "block LayerNorm 2 beta", b.norm_2.beta, s.d_model);
    check_shape(errors, "block W_gate", b.w_gate, s.d_model, d_ff);
    check_vector(errors, "block post-attention norm gamma", b.norm_post_attention.gamma, s.d_model);
    check_vector(errors, "block post-attention norm beta", b.norm_post_attention.beta, s.d_model);
    check_vector(errors, "block post-feed-forward norm gamma", b.norm_post_feed_forward.gamma, s.d_model);
    check_vector(errors, "block post-feed-forward norm beta", b.norm_post_feed_forward.beta, s.d_model);
    check_experts(errors, s);
    if (!(b.epsilon > 0.0f) || !std::isfinite(b.epsilon))
        errors.push_back("block epsilon is " + std::to_string(b.epsilon) + ": a norm needs a small positive number such as 1e-5");
    for (const BlockConflict& c : block_conflicts(b)) errors.push_back("block " + c.key + ": " + c.why);
}

int sequence_length(const Sequence& seq) {
    return seq.tokens.empty() ? static_cast<int>(seq.embeddings.rows()) : static_cast<int>(seq.tokens.size());
}

}  // namespace

// [SECTION] What a trace keeps

double full_trace_bytes(const Scenario& s) {
    if (s.input != InputMode::Embeddings) return 0.0;
    const double n_q = sequence_length(s.target);
    const double n_k = s.attention == AttentionKind::Cross ? sequence_length(s.source) : n_q;
    const double d = s.d_model, heads = std::max(1, s.heads), d_k = head_dim_of(s);
    // Each head (HeadTrace): q, k, v and the output; QK-norm's and RoPE's earlier q and k; the
    // (n_q × n_k) maps: scores, scaled, masked, weights, and ALiBi's bias and the capped scores.
    const double d_v = value_dim_of(s);
    double per_head = (n_q + n_k) * d_k + (n_q + n_k) * d_v;
    if (s.qk_norm) per_head += 2.0 * (n_q + n_k) * d_k;
    if (s.positional == PositionalEncoding::Rotary) per_head += (n_q + n_k) * d_k;
    const double maps = 4.0 + (s.positional == PositionalEncoding::ALiBi ? 1.0 : 0.0) + (s.softcap > 0.0f ? 1.0 : 0.0);
    per_head += maps * n_q * n_k;
    // The trace: X, PE, X + PE (and the source's), the concatenation and the output.
    double floats = heads * per_head + 3.0 * (n_q + (n_k != n_q ? n_k : 0.0)) * d + n_q * heads * d_v + n_q * d;
    if (s.latent.on()) {  // its steps: the queries' low-rank path, c and k_rope, ĉ, the turned k_rope, the expansion
        const LatentAttention& l = s.latent;
        floats += n_q * (2.0 * l.q_rank + 2.0 * l.kv_rank + 2.0 * l.rope_dim + heads * (l.nope_dim + l.v_dim));
    }
    if (s.output_gate.on) floats += 2.0 * n_q * heads * d_v;  // the gate and the gated heads
    if (s.differential.on) floats += n_q * heads * d_v + (n_q + n_k) * heads * d_v + 2.0 * n_q * heads * d_v;  // wider v, output, concat; the pairs' steps
    const BlockOptions& b = s.block;
    if (b.residual || b.layer_norm || b.feed_forward) {
        const double d_ff = b.feed_forward ? (b.d_ff > 0 ? b.d_ff : 4.0 * d) : 0.0;
        floats += 8.0 * n_q * d;  // norms, residuals, output
        if (b.moe.routed()) floats += (b.moe.router_kind == RouterKind::SigmoidGrouped ? 4.0 : 3.0) * n_q * b.moe.experts + (b.moe.has_shared() ? n_q * (d + 1.0) : 0.0);  // router, routing; shared expert
        else floats += (b.gated ? 3.0 : 1.0) * n_q * d_ff;              // the hidden layer
    }
    return floats * sizeof(float) + n_q * n_k;  // and the visible mask, a byte a cell
}

// [SECTION] Validation

std::vector<std::string> validate(const Scenario& s, Detail detail) {
    std::vector<std::string> errors;
    if (s.heads < 1) errors.push_back("heads is " + std::to_string(s.heads) + ": at least 1 head is needed");
    if (s.kv_heads < 0 || (s.heads >= 1 && s.kv_heads > 0 && s.heads % s.kv_heads != 0))
        errors.push_back("kv_heads is " + std::to_string(s.kv_heads) + ": grouped-query attention needs a number of K/V heads that divides the " +
                         std::to_string(s.heads) + " query heads (1: multi-query; 0: one per query head)");
    if (!errors.empty()) return errors;

    int n_q = 0, n_k = 0;
    if (s.input == InputMode::Embeddings) {
        if (s.d_model < 1 || s.d_model > kMaxDModel) {
            errors.push_back("d_model is " + std::to_string(s.d_model) + ": expected 1 to " + std::to_string(kMaxDModel));
            return errors;
        }
        if (s.head_dim < 0 || s.head_dim > kMaxDModel)
            errors.push_back("head_dim is " + std::to_string(s.head_dim) + ": expected 1 to " + std::to_string(kMaxDModel) +
                             " (or 0 for d_model / heads)");
        else if (s.heads >= 1 && s.head_dim == 0 && s.d_model % s.heads != 0)
            errors.push_back("d_model " + std::to_string(s.d_model) + " is not divisible by " + std::to_string(s.heads) +
                             " heads: each head needs d_k = d_model / heads columns (or give head_dim)");
        check_sequence(errors, "target", s.target, s.d_model);
        if (s.attention == AttentionKind::Cross) check_sequence(errors, "source", s.source, s.d_model);
        const int d_k = head_dim_of(s), d_v = value_dim_of(s), heads = std::max(1, s.heads), kv = std::max(1, kv_heads_of(s));
        check_latent(errors, s);
        check_delta_net(errors, s);
        check_differential(errors, s);
        if (!s.delta_net.on) check_shape(errors, "W_Q", s.w_q, s.d_model, heads * d_k);
        if (!s.latent.on() && !s.delta_net.on) {
            check_shape(errors, "W_K", s.w_k, s.d_model, kv * d_k);
            check_shape(errors, "W_V", s.w_v, s.d_model, kv * d_k);
            check_vector(errors, "b_k", s.b_k, kv * d_k);
            check_vector(errors, "b_v", s.b_v, kv * d_k);
        }
        check_shape(errors, "W_O", s.w_o, heads * d_v, s.d_model);
        check_vector(errors, "b_q", s.b_q, heads * d_k);
        check_vector(errors, "b_o", s.b_o, s.d_model);
        check_block(errors, s);
        n_q = sequence_length(s.target);
        n_k = s.attention == AttentionKind::Cross ? sequence_length(s.source) : n_q;
    } else {
        if (s.q.size() == 0 || s.k.size() == 0 || s.v.size() == 0) {
            errors.push_back("direct input needs q, k and v, each with at least one row and one column");
            return errors;
        }
        if (s.head_dim != 0)
            errors.push_back("head_dim is given, but direct Q, K, V say d_k themselves (Q's columns / heads): leave it out");
        if (s.latent.kv_rank != 0)
            errors.push_back("latent attention needs embeddings: it makes K and V from X, and direct input gives them as they are");
        if (s.delta_net.on)
            errors.push_back("Gated DeltaNet needs embeddings: it makes q, k, v, \xCE\xB2 and its decay from X, and direct input gives only Q, K, V");
        if (s.differential.on)
            errors.push_back("differential attention needs embeddings: it pairs the values it projects from X and normalises what W_O reads");
        const int heads = std::max(1, s.heads), kv = std::max(1, kv_heads_of(s));
        if (s.heads >= 1 && s.q.cols() % heads != 0)
            errors.push_back("q has " + std::to_string(s.q.cols()) + " columns: not divisible by " + std::to_string(s.heads) + " heads");
        else if (s.k.cols() * heads != s.q.cols() * kv)
            errors.push_back("q has " + std::to_string(s.q.cols()) + " columns and k has " + std::to_string(s.k.cols()) + ": with " +
                             std::to_string(heads) + " query heads and " + std::to_string(kv) + " K/V heads, k needs " +
                             std::to_string(s.q.cols() / heads * kv) + " (a query and a key must have the same length d_k)");
        if (s.v.rows() != s.k.rows())
            errors.push_back("v has " + std::to_string(s.v.rows()) + " rows and k has " + std::to_string(s.k.rows()) +
                             ": every key needs exactly one value");
        if (s.v.cols() % kv != 0)
            errors.push_back("v has " + std::to_string(s.v.cols()) + " columns: not divisible by " + std::to_string(kv) + " K/V heads");
        check_shape(errors, "W_O", s.w_o, s.v.cols() / std::max(1, kv_heads_of(s)) * std::max(1, s.heads), s.w_o.cols());
        check_vector(errors, "b_o", s.b_o, s.w_o.size() != 0 ? s.w_o.cols() : s.v.cols());
        for (const auto& [name, bias] : {std::pair{"b_q", &s.b_q}, std::pair{"b_k", &s.b_k}, std::pair{"b_v", &s.b_v}})
            if (bias->size() != 0)
                errors.push_back(std::string(name) + " is given, but direct Q, K, V are not projected: there is nothing to add it to");
        if (!s.target.padding.empty() && s.target.padding.size() != static_cast<size_t>(s.k.rows()))
            errors.push_back("padding has " + std::to_string(s.target.padding.size()) + " flags for " +
                             std::to_string(s.k.rows()) + " rows of k: give one flag per key (or none)");
        if (s.block.residual || s.block.layer_norm || s.block.feed_forward)
            errors.push_back("the block (residual, LayerNorm, feed-forward) needs embeddings: direct input has no X to add back");
        n_q = static_cast<int>(s.q.rows());
        n_k = static_cast<int>(s.k.rows());
    }

    if (s.mask == MaskKind::SlidingWindow && s.window < 1)
        errors.push_back("sliding window size is " + std::to_string(s.window) + ": expected at least 1");
    if (s.output_gate.on) {
        if (s.input != InputMode::Embeddings)
            errors.push_back("the output gate is computed from each token's embedding (x\xC2\xB7W_G): it needs embeddings, not direct Q, K, V");
        else {
            check_shape(errors, "W_G (the output gate)", s.output_gate.w_g, s.d_model, s.heads * value_dim_of(s));
            check_vector(errors, "b_G (the output gate)", s.output_gate.b_g, s.heads * value_dim_of(s));
        }
    }
    if (s.mask == MaskKind::Band && s.window < 0)
        errors.push_back("band half-width is " + std::to_string(s.window) + ": expected 0 or more (keys up to w on either side)");
    if (s.mask == MaskKind::Band && s.attention == AttentionKind::Cross)
        errors.push_back("a band mask counts the distance from a query to a key of the same sequence: it needs self-attention");
    if (s.mask == MaskKind::Chunked && s.chunk < 1)
        errors.push_back("chunk size is " + std::to_string(s.chunk) + ": expected at least 1");
    if (s.temperature.on() || s.temperature.floor_scale != 0.0f) {
        if (!std::isfinite(s.temperature.floor_scale) || s.temperature.floor_scale < 0.0f)
            errors.push_back("query temperature floor_scale is " + std::to_string(s.temperature.floor_scale) +
                             ": expected a number above 0 (8192 in Llama 4), or 0 for none");
        if (!std::isfinite(s.temperature.attn_scale))
            errors.push_back("query temperature attn_scale is " + std::to_string(s.temperature.attn_scale) + ": expected a number (0.1 in Llama 4)");
        if (s.input != InputMode::Embeddings || s.attention != AttentionKind::Self)
            errors.push_back("the query temperature scales each query by its position: it needs embeddings and self-attention");
    }
    if (s.mask == MaskKind::Custom && (s.custom_mask.rows() != n_q || s.custom_mask.cols() != n_k))
        errors.push_back("custom mask is " + shape(s.custom_mask.rows(), s.custom_mask.cols()) + ", expected " +
                         shape(n_q, n_k) + " (queries × keys)");
    if (std::isnan(s.masked_fill)) errors.push_back("masked fill is NaN: expected −inf or a number such as −1e9");
    if (!std::isfinite(s.score_scale) || s.score_scale < 0.0f)
        errors.push_back("score scale is " + std::to_string(s.score_scale) + ": expected a finite number > 0 (or 0 for 1/√d_k)");
    if (s.positional == PositionalEncoding::Rotary) {
        const RopeOptions& r = s.rope;
        // Latent attention turns its d_rope dims, all of them.
        const bool latent = s.input == InputMode::Embeddings && s.latent.on();
        const int d_k = s.input == InputMode::Direct ? (s.heads > 0 ? static_cast<int>(s.q.cols()) / s.heads : 0)
                        : latent                     ? s.latent.rope_dim
                                                     : head_dim_of(s);
        if (latent && r.rotary_dims != 0)
            errors.push_back("RoPE turns " + std::to_string(r.rotary_dims) + " dimensions, but latent attention turns its rope_dim = " +
                             std::to_string(s.latent.rope_dim) + " dimensions, all of them: leave rotary_dims at 0");
        if (!std::isfinite(r.theta) || r.theta <= 1.0f)
            errors.push_back("RoPE's base θ is " + std::to_string(r.theta) + ": expected a number above 1 (10000 in most models)");
        if (r.rotary_dims < 0 || r.rotary_dims % 2 != 0 || r.rotary_dims > d_k)
            errors.push_back("RoPE turns " + std::to_string(r.rotary_dims) + " dimensions: expected an even number up to d_k = " +
                             std::to_string(d_k) + " (0: all)");
        if (r.scaling != RopeScalingKind::None && !(std::isfinite(r.factor) && r.factor > 0.0f))
            errors.push_back("RoPE's scaling factor is " + std::to_string(r.factor) + ": expected a number above 0");
        if (r.scaling == RopeScalingKind::Llama3 &&
            !(r.low_freq_factor > 0.0f && r.high_freq_factor > r.low_freq_factor && r.original_max_positions > 0))
            errors.push_back("Llama 3's RoPE scaling needs 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0");
        if (r.scaling == RopeScalingKind::LongRope) {
            // one factor per turned pair, each a number above 0, in both lists
            const int pairs = (r.rotary_dims > 0 ? std::min(r.rotary_dims, d_k) : d_k) / 2;
            for (const auto& [list, name] : {std::pair{&r.short_factor, "short_factor"}, std::pair{&r.long_factor, "long_factor"}}) {
                if (list->size() != pairs)
                    errors.push_back(std::string("LongRoPE's ") + name + " has " + std::to_string(list->size()) + " factors: expected " +
                                     std::to_string(pairs) + ", one for each pair RoPE turns");
                else if (!(list->array() > 0.0f).all() || !list->allFinite())
                    errors.push_back(std::string("LongRoPE's ") + name + " holds a factor that is not a number above 0");
            }
            if (r.original_max_positions < 1)
                errors.push_back("LongRoPE's original_max_position_embeddings is " + std::to_string(r.original_max_positions) +
                                 ": expected at least 1 (the length its short factors serve)");
        }
        if (r.scaling == RopeScalingKind::Yarn &&
            !(r.original_max_positions > 0 && std::isfinite(r.beta_fast) && std::isfinite(r.beta_slow) && r.beta_fast > 0.0f &&
              r.beta_slow > 0.0f))
            errors.push_back("YaRN needs original_max_position_embeddings > 0 and beta_fast, beta_slow above 0 (32 and 1 in most models)");
        if (!(std::isfinite(r.attention_factor) && r.attention_factor > 0.0f))
            errors.push_back("RoPE's attention factor is " + std::to_string(r.attention_factor) +
                             ": expected a number above 0 (1: cos and sin as they are)");
    }
    if (!std::isfinite(s.softcap) || s.softcap < 0.0f)
        errors.push_back("soft-cap is " + std::to_string(s.softcap) + ": expected a finite number > 0 (or 0 for none)");
    // QK-norm's weights: one number per dimension of a head (d_k), whether it is on or off; over
    // the whole projection (OLMo 2), one per head and dimension (H·d_k for q, H_kv·d_k for k).
    const int d_k = s.input == InputMode::Direct ? static_cast<int>(s.q.cols()) / std::max(1, s.heads) : head_dim_of(s);
    check_vector(errors, "q_norm (QK-norm's weight for q)", s.q_norm, qk_norm_length(s.qk_norm_whole, d_k, s.heads));
    check_vector(errors, "k_norm (QK-norm's weight for k)", s.k_norm, qk_norm_length(s.qk_norm_whole, d_k, kv_heads_of(s)));
    // Attention sinks: one logit per query head, each a number (−∞ would be no sink: leave the list out).
    if (s.sinks.size() != 0 && s.sinks.size() != s.heads)
        errors.push_back("sinks has " + std::to_string(s.sinks.size()) + " logits for " + std::to_string(s.heads) +
                         " heads: give one per query head (or none)");
    else if (s.sinks.size() != 0 && !s.sinks.allFinite())
        errors.push_back("a sink logit is not a finite number: each head's sink needs one, such as 2.5");
    if (s.qk_norm && s.input == InputMode::Direct && !(s.block.epsilon > 0.0f && std::isfinite(s.block.epsilon)))
        errors.push_back("block epsilon is " + std::to_string(s.block.epsilon) + ": QK-norm needs a small positive number such as 1e-6");

    // Refuse sizes that do not fit before allocating anything.
    const double heads = std::max(1, s.heads);
    const double width = s.input == InputMode::Direct ? static_cast<double>(s.q.cols() + s.k.cols() + s.v.cols())
                                                      : 6.0 * s.d_model;
    double bytes = detail == Detail::Full ? 5.0 * heads * n_q * static_cast<double>(n_k) * sizeof(float)
                                          : 2.0 * (n_q + n_k) * width * sizeof(float);
    // Gated DeltaNet computes each head's implied matrix in full, output-only runs too (one head at a time)
    if (s.delta_net.on && detail == Detail::OutputOnly) bytes = std::max(bytes, static_cast<double>(n_q) * n_k * sizeof(float));
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

}  // namespace attn
