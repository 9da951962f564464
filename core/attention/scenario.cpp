#include "attention/scenario.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

namespace attn {

void own_weight_holders(Scenario& s) {
    for (SharedMatrix* w : {&s.w_q, &s.w_k, &s.w_v, &s.w_o, &s.block.w_1, &s.block.w_2, &s.block.w_gate}) *w = w->own_holder();
    s.block.moe.router = s.block.moe.router.own_holder();
    for (SharedMatrix* w : {&s.block.moe.shared.w_gate, &s.block.moe.shared.w_1, &s.block.moe.shared.w_2, &s.block.moe.shared_gate,
                            &s.latent.w_q_a, &s.latent.w_q_b, &s.latent.w_kv_a, &s.latent.w_kv_b, &s.output_gate.w_g})
        *w = w->own_holder();
    for (Expert& e : s.block.moe.weights)
        for (SharedMatrix* w : {&e.w_gate, &e.w_1, &e.w_2}) *w = w->own_holder();
}

const char* to_string(InputMode m) { return m == InputMode::Direct ? "direct" : "embeddings"; }

const char* to_string(PositionalEncoding p) {
    switch (p) {
        case PositionalEncoding::None: return "none";
        case PositionalEncoding::Sinusoidal: return "sinusoidal";
        case PositionalEncoding::Learned: return "learned";
        case PositionalEncoding::Rotary: return "rope";
        case PositionalEncoding::ALiBi: return "alibi";
    }
    return "none";
}

const char* to_string(MaskKind m) {
    switch (m) {
        case MaskKind::None: return "none";
        case MaskKind::Causal: return "causal";
        case MaskKind::Padding: return "padding";
        case MaskKind::SlidingWindow: return "window";
        case MaskKind::Custom: return "custom";
        case MaskKind::Chunked: return "chunked";
        case MaskKind::Band: return "band";
    }
    return "none";
}

const char* to_string(SoftmaxKind s) { return s == SoftmaxKind::Naive ? "naive" : "stable"; }
const char* to_string(AttentionKind a) { return a == AttentionKind::Cross ? "cross" : "self"; }

std::optional<PositionalEncoding> positional_from_string(const std::string& s) {
    for (auto p : {PositionalEncoding::None, PositionalEncoding::Sinusoidal, PositionalEncoding::Learned,
                   PositionalEncoding::Rotary, PositionalEncoding::ALiBi})
        if (s == to_string(p)) return p;
    if (s == "rotary") return PositionalEncoding::Rotary;
    return std::nullopt;
}

std::optional<MaskKind> mask_from_string(const std::string& s) {
    for (auto m : {MaskKind::None, MaskKind::Causal, MaskKind::Padding, MaskKind::SlidingWindow, MaskKind::Custom, MaskKind::Chunked, MaskKind::Band})
        if (s == to_string(m)) return m;
    if (s == "sliding_window" || s == "sliding-window") return MaskKind::SlidingWindow;
    return std::nullopt;
}

std::optional<SoftmaxKind> softmax_from_string(const std::string& s) {
    if (s == "stable") return SoftmaxKind::Stable;
    if (s == "naive") return SoftmaxKind::Naive;
    return std::nullopt;
}

const char* to_string(NormPlacement n) { return n == NormPlacement::Pre ? "pre" : "post"; }
// "gelu" is the tanh form, as GPT-2's files (and this app's since the first) write it;
// Hugging Face's exact "gelu" is "gelu_erf" here.
const char* to_string(Activation a) {
    switch (a) {
        case Activation::ReLU: return "relu";
        case Activation::GeluTanh: return "gelu";
        case Activation::GeluErf: return "gelu_erf";
        case Activation::SiLU: return "silu";
    }
    return "relu";
}
const char* to_string(NormKind k) { return k == NormKind::RMSNorm ? "rms_norm" : "layer_norm"; }
const char* to_string(RopePairing p) { return p == RopePairing::RotateHalf ? "rotate_half" : "interleaved"; }
const char* to_string(RopeScalingKind k) {
    switch (k) {
        case RopeScalingKind::None: return "none";
        case RopeScalingKind::Linear: return "linear";
        case RopeScalingKind::Llama3: return "llama3";
        case RopeScalingKind::LongRope: return "longrope";
        case RopeScalingKind::Yarn: return "yarn";
    }
    return "none";
}

std::optional<RopePairing> rope_pairing_from_string(const std::string& s) {
    if (s == "interleaved") return RopePairing::Interleaved;
    if (s == "rotate_half") return RopePairing::RotateHalf;
    return std::nullopt;
}

std::optional<RopeScalingKind> rope_scaling_from_string(const std::string& s) {
    if (s == "none") return RopeScalingKind::None;
    if (s == "linear") return RopeScalingKind::Linear;
    if (s == "llama3") return RopeScalingKind::Llama3;
    if (s == "longrope") return RopeScalingKind::LongRope;
    if (s == "yarn") return RopeScalingKind::Yarn;
    return std::nullopt;
}

const char* to_string(RouterKind k) {
    switch (k) {
        case RouterKind::SoftmaxThenTopK: return "softmax_then_top_k";
        case RouterKind::TopKThenSoftmax: return "top_k_then_softmax";
        case RouterKind::SigmoidGrouped: return "sigmoid_grouped";
        case RouterKind::TopKThenSigmoid: return "top_k_then_sigmoid";
    }
    return "?";
}
std::optional<RouterKind> router_kind_from_string(const std::string& s) {
    if (s == "softmax_then_top_k") return RouterKind::SoftmaxThenTopK;
    if (s == "top_k_then_softmax") return RouterKind::TopKThenSoftmax;
    if (s == "sigmoid_grouped") return RouterKind::SigmoidGrouped;
    if (s == "top_k_then_sigmoid") return RouterKind::TopKThenSigmoid;
    return std::nullopt;
}

std::optional<NormPlacement> norm_placement_from_string(const std::string& s) {
    if (s == "post") return NormPlacement::Post;
    if (s == "pre") return NormPlacement::Pre;
    return std::nullopt;
}

std::optional<Activation> activation_from_string(const std::string& s) {
    if (s == "relu") return Activation::ReLU;
    if (s == "gelu" || s == "gelu_new" || s == "gelu_tanh" || s == "gelu_pytorch_tanh") return Activation::GeluTanh;
    if (s == "gelu_erf" || s == "gelu_exact") return Activation::GeluErf;
    if (s == "silu" || s == "swish") return Activation::SiLU;
    return std::nullopt;
}

std::optional<NormKind> norm_kind_from_string(const std::string& s) {
    if (s == "layer_norm") return NormKind::LayerNorm;
    if (s == "rms_norm") return NormKind::RMSNorm;
    return std::nullopt;
}

bool MixtureOfExperts::is_ablated(int expert) const {
    return std::binary_search(ablated.begin(), ablated.end(), expert);
}

std::vector<BlockConflict> block_conflicts(const BlockOptions& b) {
    std::vector<BlockConflict> conflicts;
    if (!b.residual && !b.layer_norm && !b.feed_forward) return conflicts;  // the block is off: its switches wait
    const bool rms = b.norm_kind == NormKind::RMSNorm;
    const bool pre = b.norm == NormPlacement::Pre;
    if (b.gamma_plus_one && !rms)
        conflicts.push_back({"gamma_plus_one", "the (1 + \xCE\xB3) scale is Gemma's RMSNorm: it needs \"norm_kind\": \"rms_norm\""});
    if (rms)
        for (const auto& [key, norm] : {std::pair{"norm_1.beta", &b.norm_1}, std::pair{"norm_2.beta", &b.norm_2},
                                        std::pair{"norm_post_attention.beta", &b.norm_post_attention},
                                        std::pair{"norm_post_feed_forward.beta", &b.norm_post_feed_forward}})
            if (norm->beta.size() != 0) conflicts.push_back({key, "RMSNorm has no \xCE\xB2 (it subtracts no mean and adds no bias)"});
    if (b.gated)
        for (const auto& [key, bias] : {std::pair{"b_1", &b.b_1}, std::pair{"b_2", &b.b_2}})
            if (bias->size() != 0) conflicts.push_back({key, "a gated feed-forward has no biases, as in Llama and Gemma"});
    if (b.parallel_residual) {
        if (!pre) conflicts.push_back({"parallel_residual", "both sublayers read the block's input through their own norm: it needs \"norm\": \"pre\""});
        if (!b.residual) conflicts.push_back({"parallel_residual", "it adds both sublayers to the input: it needs \"residual\": true"});
        if (!b.feed_forward) conflicts.push_back({"parallel_residual", "there is no feed-forward to run beside attention: it needs \"feed_forward\": true"});
        if (b.sandwich_norm) conflicts.push_back({"parallel_residual", "Gemma's sandwich norms are sequential: choose one of parallel_residual and sandwich_norm"});
    }
    if (!b.attention_norm && (!pre || !b.layer_norm))
        conflicts.push_back({"attention_norm", "it leaves out the norm before attention of a pre-norm block with norms: it needs "
                                               "\"norm\": \"pre\" and \"layer_norm\": true"});
    if (b.sandwich_norm) {
        if (!pre) conflicts.push_back({"sandwich_norm", "the sandwich adds norms after each sublayer of a pre-norm block: it needs \"norm\": \"pre\""});
    }
    if (b.moe.routed()) {
        if (!b.gated) conflicts.push_back({"moe", "its experts are gated feed-forwards: it needs \"gated\": true"});
        for (const auto& [key, weight] : {std::pair{"w_1", &b.w_1}, std::pair{"w_2", &b.w_2}, std::pair{"w_gate", &b.w_gate}})
            if (weight->size() != 0) conflicts.push_back({key, "the experts' own weights replace the block's one feed-forward: it would be ignored"});
    }
    return conflicts;
}

std::optional<AttentionKind> attention_from_string(const std::string& s) {
    if (s == "self") return AttentionKind::Self;
    if (s == "cross") return AttentionKind::Cross;
    return std::nullopt;
}

std::vector<std::string> tokenize(const std::string& raw_text) {
    const std::string text = valid_utf8(raw_text);
    std::vector<std::string> tokens;
    std::string current;
    auto flush = [&] {
        if (!current.empty()) tokens.push_back(current);
        current.clear();
    };
    for (unsigned char c : text) {
        if (std::isspace(c)) {
            flush();
        } else if (c < 0x80 && std::ispunct(c) && c != '\'' && c != '-') {
            flush();
            tokens.emplace_back(1, static_cast<char>(c));
        } else {
            current.push_back(static_cast<char>(c));
        }
    }
    flush();
    return tokens;
}

float query_temperature(const QueryTemperature& t, int position) {
    if (!t.on()) return 1.0f;
    // torch.log1p(torch.floor((p + 1.0) / floor_scale)) * attn_scale + 1.0, in float32
    const float steps = std::floor((static_cast<float>(position) + 1.0f) / t.floor_scale);
    return std::log1p(steps) * t.attn_scale + 1.0f;
}

float differential_term(const Vector& lambda_q, const Vector& lambda_k) {
    // torch.exp(torch.sum(λ_q·λ_k, dtype=float32)): the products summed in order, in float32
    float sum = 0.0f;
    for (Eigen::Index i = 0; i < std::min(lambda_q.size(), lambda_k.size()); ++i) sum += lambda_q(i) * lambda_k(i);
    return std::exp(sum);
}

float differential_lambda(const DifferentialAttention& d) {
    return differential_term(d.lambda_q1, d.lambda_k1) - differential_term(d.lambda_q2, d.lambda_k2) + d.lambda_init;
}

}  // namespace attn
