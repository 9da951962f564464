#pragma once
// A Scenario is plain data describing one attention computation: the inputs and every
// switch. The engine turns it into a Trace; the UI and the files edit it.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tensor/matrix.hpp"
#include "io/messages.hpp"  // valid_utf8
#include "tensor/shared_matrix.hpp"

namespace attn {

enum class InputMode {
    Embeddings,  // tokens → X (n × d_model) → Q = XW_Q, K = XW_K, V = XW_V
    Direct,      // Q, K, V given as they are (the articles' worked examples)
};

enum class PositionalEncoding {
    None,
    Sinusoidal,  // "Attention Is All You Need": PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...)
    Learned,     // a seeded table of one vector per position, added like the sinusoid
    Rotary,      // RoPE: rotates each (2i, 2i+1) pair of q and k by p·10000^(−2i/d_k)
    ALiBi,       // adds −m_h·|i − j| to the scaled scores, m_h = 2^(−8(h+1)/H)
};

enum class MaskKind {
    None,
    Causal,         // key j visible to query i iff j ≤ i
    Padding,        // key j hidden iff padding[j]
    SlidingWindow,  // causal window: i − w < j ≤ i
    Custom,         // custom_mask(i, j), true = visible
    Chunked,        // chunked causal (Llama 4's attention_chunk_size C): j ≤ i and ⌊j/C⌋ = ⌊i/C⌋
    Band,           // bidirectional window (ModernBERT's local layers): |i − j| ≤ w, keys on both sides
};

enum class SoftmaxKind {
    Stable,  // exp(s − max s) / Σ exp(s − max s)
    Naive,   // exp(s) / Σ exp(s): overflows to inf/NaN above s ≈ 88 in float32
};

enum class AttentionKind {
    Self,   // Q, K, V from one sequence
    Cross,  // Q from the target sequence, K and V from the source sequence
};

// RoPE's variants (used with PositionalEncoding::Rotary).
enum class RopePairing {
    Interleaved,  // pairs (2i, 2i+1): RoFormer, GPT-J; the app's rotary since its first version
    RotateHalf,   // pairs (i, i + r/2): Hugging Face's Llama, Qwen, Gemma, GPT-NeoX (rotate_half)
};
enum class RopeScalingKind {
    None,
    Linear,  // every inverse frequency ÷ factor (positions stretched): Gemma 3's global layers
    Llama3,  // Llama 3.1's: long wavelengths ÷ factor, short ones kept, a smooth blend between
    LongRope,  // Phi-3's: each inverse frequency ÷ its own factor, the short list for a text of up to
               // original_max_positions tokens, the long list beyond
    Yarn,      // YaRN (gpt-oss, DeepSeek-V3, Qwen3 long context): pairs that turn many times within
               // original_max_positions kept, slow ones ÷ factor, a linear ramp between (beta_fast,
               // beta_slow: the turns that bound it); cos and sin × attention_factor
};
struct RopeOptions {
    RopePairing pairing = RopePairing::Interleaved;
    float theta = 10000.0f;        // the base: inverse frequency θ^(−2i/r)
    int rotary_dims = 0;           // r: the first r of each head's d_k columns turn (Pythia's rotary_pct); 0: all
    RopeScalingKind scaling = RopeScalingKind::None;
    float factor = 1.0f;           // Linear, Llama3 and Yarn
    float low_freq_factor = 1.0f, high_freq_factor = 4.0f;  // Llama3
    int original_max_positions = 8192;                      // Llama3, Yarn; LongRope: the short factors up to this length
    float beta_fast = 32.0f, beta_slow = 1.0f;              // Yarn: the ramp's ends, in turns within original_max_positions
    bool truncate = true;                                   // Yarn: the ramp's ends rounded out to whole dims
    Vector short_factor, long_factor;  // LongRope: one divisor per turned pair (r/2 each)
    float attention_factor = 1.0f;     // multiplies cos and sin (LongRoPE's √(1 + ln(s)/ln(L))): q·k over the
                                       // turned dims grows by its square
};

// One sequence of tokens. embeddings may be empty: each row is then derived from the
// token's text (token_embedding), so a repeated word shares its vector.
struct Sequence {
    std::vector<std::string> tokens;
    Matrix embeddings;                  // (n × d_model) or empty
    std::vector<bool> padding;          // one flag per token (mask kind Padding); may be empty
};

// Where LayerNorm stands in the block.
enum class NormPlacement {
    Post,  // the 2017 paper: y = LN(x + sublayer(x)), after each residual
    Pre,   // GPT-2: y = x + sublayer(LN(x)); attention reads LN₁(x), the block ends unnormalised
};

// The feed-forward's activation (in a gated feed-forward, the gate's).
enum class Activation {
    ReLU,      // max(0, x), the 2017 paper
    GeluTanh,  // GPT-2's gelu_new, Gemma's gelu_pytorch_tanh: ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    GeluErf,   // the exact GELU, Hugging Face's "gelu" (GPT-NeoX, Pythia): ½·x·(1 + erf(x/√2))
    SiLU,      // Llama's and Qwen's "silu": x·σ(x) = x / (1 + e^(−x))
};

// Which normalisation every norm of the block is.
enum class NormKind {
    LayerNorm,  // γ ⊙ (x − mean)/√(var + ε) + β
    RMSNorm,    // Llama, Qwen, Gemma: x / √(mean(x²) + ε) ⊙ γ; no mean subtracted, no β
};

// A norm's gain and bias: LayerNorm y = γ ⊙ (x − mean) / √(var + ε) + β, the variance biased
// (÷ d, not d − 1); RMSNorm y = x / √(mean(x²) + ε) ⊙ γ, or ⊙ (1 + γ) (Gemma). Empty → γ = 1
// (γ = 0 in the (1 + γ) form: the same identity scale), β = 0.
struct LayerNormParams {
    Vector gamma, beta;  // (1 × d_model) each, or empty; RMSNorm has no β
};

// The most experts a mixture may have (DeepSeek-V3 and Qwen3-MoE route among 256 and 128).
inline constexpr int kMaxExperts = 1024;

// One expert of a mixture: a gated feed-forward of its own, with the block's activation and d_ff.
struct Expert {
    SharedMatrix w_gate, w_1, w_2;  // (d_model × d_ff) gate, (d_model × d_ff) up, (d_ff × d_model) down; empty → seeded
    Vector b_gate, b_1, b_2;        // (1 × d_ff), (1 × d_ff), (1 × d_model); empty → 0 (gpt-oss's experts have them)
};

// How the router turns its logits into each token's kept experts and their weights.
enum class RouterKind {
    SoftmaxThenTopK,  // Qwen3-MoE, Mixtral: softmax over all E, keep the top k (renormalised or not)
    TopKThenSoftmax,  // gpt-oss: keep the top k logits, softmax over those k only
    SigmoidGrouped,   // DeepSeek-V3: σ of each logit, the best groups first, then the top k within them
    TopKThenSigmoid,  // Llama 4: keep the top k logits, each kept expert's weight σ of its own logit
};

// A mixture of experts in place of the block's one feed-forward (transformers'
// Qwen3MoeSparseMoeBlock and MixtralSparseMoeBlock). For each token x (a row of what the feed-forward reads):
//   r = x·W_router                (1 × E): the router's logits
//   p = softmax(r)                (1 × E): the routing probabilities, in float32
//   K = the top_k largest of p    ties: the smaller expert first
//   w_e = p_e, or p_e / Σ_{K} p   with normalize_top_k (norm_topk_prob), for e in K; 0 elsewhere
//   y = Σ_{e ∈ K} w_e·expert_e(x) in expert order, expert_e(x) = (act(x·W_gate,e) ⊙ x·W₁,e)·W₂,e
// Only the kept experts run. An ablated expert keeps its place in the routing (the weights of the
// others are unchanged) and adds nothing to y.
// gpt-oss (GptOssTopKRouter, GptOssExperts) differs in three places:
//   r = x·W_router + b_router; K = the top_k largest of r; w_e = softmax over K of r (TopKThenSoftmax)
//   each projection has a bias (Expert's b_gate, b_1, b_2)
//   a clamped SwiGLU (swiglu_limit L > 0): g = min(x·W_gate + b_gate, L), u = clamp(x·W₁ + b₁, −L, L),
//   expert(x) = ((u + 1) ⊙ g·σ(α·g))·W₂ + b₂, α = swiglu_alpha (the block's activation must be SiLU:
//   g·σ(α·g) is its form with a gain)
// DeepSeek-V3 (DeepseekV3MoE.route_tokens_to_experts, SigmoidGrouped) scores each expert on its own:
//   p = σ(r)                        (1 × E): each expert's score, in float32 (router_probabilities)
//   c = p + b_choice                (e_score_correction_bias): what the choice ranks, never a weight
//   the E experts in `groups` groups of E/groups; a group's score is the sum of its 2 largest c;
//   the top_groups best groups kept; c set to 0 outside them (router_choice)
//   K = the top_k largest of that c; w_e = p_e, or p_e / (Σ_K p + 1e-20) with normalize_top_k;
//   then w_e × routed_scale (routed_scaling_factor)
// Ties, among groups and experts: the smaller first.
// Llama 4 (Llama4Router, Llama4TextMoe; TopKThenSigmoid) weighs each kept expert on its own and
// scales what the expert reads, not what it writes (weight_input):
//   K = the top_k largest of r; w_e = σ(r_e) for e in K, 0 elsewhere
//   y = Σ_{e ∈ K} expert_e(w_e·x)   (a SwiGLU expert of w·x is not w times the expert of x)
// A shared expert (shared_d_ff > 0; Qwen2-MoE, and DeepSeek-V3 and Llama 4 without its gate) runs
// on every token beside the routed ones, a gated feed-forward of its own width, and is added after
// them (Qwen2MoeSparseMoeBlock):
//   shared(x) = (act(x·W_gate,s) ⊙ x·W₁,s)·W₂,s;   y += σ(x·g)·shared(x)   (shared_gated: g (d_model × 1))
//                                                    y += shared(x)           (otherwise)
struct MixtureOfExperts {
    int experts = 0;                // E; 0: the block's one feed-forward
    int top_k = 1;                  // k, 1 ≤ k ≤ E
    bool normalize_top_k = false;   // SoftmaxThenTopK only (TopKThenSoftmax's weights already sum to 1)
    RouterKind router_kind = RouterKind::SoftmaxThenTopK;
    SharedMatrix router;            // W_router (d_model × E); empty → seeded Xavier-uniform
    Vector router_bias;             // b_router (1 × E); empty → 0
    float swiglu_limit = 0.0f;      // L > 0: gpt-oss's clamped SwiGLU; 0: act(x·W_gate) ⊙ x·W₁
    float swiglu_alpha = 1.702f;    // α, with swiglu_limit
    std::vector<Expert> weights;    // E experts, or empty → each seeded
    std::vector<int> ablated;       // experts whose output is dropped, ascending, each in [0, E)
    int shared_d_ff = 0;            // > 0: a shared expert of this width on every token; 0: none
    Expert shared;                  // its weights (no biases); empty → seeded
    bool shared_gated = false;      // σ(x·g) scales its output (Qwen2-MoE's shared_expert_gate)
    SharedMatrix shared_gate;       // g (d_model × 1); empty → seeded Xavier-uniform
    // SigmoidGrouped only (DeepSeek-V3): the choice's bias, the groups and the scale of the weights
    Vector choice_bias;             // b_choice (1 × E); empty → 0
    int groups = 1;                 // n_group: E divisible by it, at least 2 experts a group
    int top_groups = 1;             // topk_group: 1 ≤ it ≤ groups
    float routed_scale = 1.0f;      // routed_scaling_factor
    bool weight_input = false;      // Llama 4: each kept expert reads w_e·x and its output is added as it is
    bool routed() const { return experts > 0; }
    bool has_shared() const { return routed() && shared_d_ff > 0; }
    bool is_ablated(int expert) const;
};

// Multi-head latent attention (DeepSeek-V2 and V3; transformers' DeepseekV3Attention), in
// embedding mode and self-attention. Keys and values come from one compressed latent per token,
// and one rotary key shared by every head; queries through an optional low-rank path:
//   [c | k_rope] = x·W_kv_a + b_kv_a         c (n × r_kv), k_rope (n × d_rope)
//   ĉ = RMSNorm(c)⊙γ_kv                      over its r_kv numbers, the block's ε
//   [k_nope,h | v_h] = ĉ·W_kv_b, per head h  (n × d_nope), (n × d_v): columns h·(d_nope + d_v) onwards
//   k_h = [k_nope,h | RoPE(k_rope)]          (n × (d_nope + d_rope)): the same turned key in every head
//   q = RMSNorm(x·W_q_a + b_q_a)⊙γ_q · W_q_b (q_rank > 0), else q = x·W_Q (+ b_q)
//   q_h = [q_nope,h | RoPE(q_rope,h)]         (n × (d_nope + d_rope))
// Each head is then the usual attention with d_k = d_nope + d_rope and d_v its own; W_O reads
// H·d_v columns. RoPE (when on) turns only the last d_rope dims of q_h and k_h, all of them,
// with the scenario's RoPE options (DeepSeek's rope_interleave is the interleaved pairing). A
// cache of this attention keeps ĉ and the turned k_rope: r_kv + d_rope numbers a token, where
// multi-head attention keeps 2·H·d_k.
// Llama 4's attention temperature (attn_temperature_tuning, on its NoPE layers): query i, at
// position p = i (0-based), is multiplied before its scores by
//   τ_i = ln(⌊(p + 1) / floor_scale⌋ + 1)·attn_scale + 1
// which is 1 for the first floor_scale − 1 positions and grows slowly after them, so that
// attention without positions stays sharp over long texts (arXiv 2501.19399).
struct QueryTemperature {
    float floor_scale = 0.0f;  // > 0: on (8192 in Llama 4); 0: off
    float attn_scale = 0.1f;
    bool on() const { return floor_scale > 0.0f; }
};
// τ for query position p (0-based), 1 when off: in float32, as transformers computes it.
float query_temperature(const QueryTemperature& t, int position);

// Gated attention (Qwen3-Next, Qwen3.5; Qiu et al. 2025): before W_O every head's output is
// multiplied, number by number, by a gate of its own computed from the token the query stands at:
//   g = σ(x·W_G + b_G)              (n_q × H·d_v), x what the projections read (X + PE, or LN₁ of it)
//   gated = concat ⊙ g;  output = gated·W_O + b_O
// A gate near 0 lets a head say nothing for a token: what an attention sink does, without one.
// Qwen3-Next's q_proj computes W_G beside W_Q (each head's 2·d_k outputs: its query, then its gate).
struct OutputGate {
    bool on = false;
    SharedMatrix w_g;  // (d_model × H·d_v); empty → seeded Xavier-uniform
    Vector b_g;        // (1 × H·d_v); empty → 0
};

// Gated DeltaNet (Qwen3-Next's linear-attention layers; Yang, Kautz and Hatamizadeh 2024): no
// softmax and no growing cache, but a fixed state S (d_k × d_v) per head that each token
// decays, corrects and writes to. Over the n tokens of the text, x what the layer reads:
//   mixed = x·[W_Q | W_K | W_V]             (n × (2·H_k·d_k + H·d_v)): the channels the convolution mixes
//   conv  = SiLU(causal depthwise conv)     each channel c: Σ_i w[c,i]·mixed[t − (K−1) + i, c], 0 before the text
//   q, k  = L2-normed per head (H_k heads, each read by H / H_k value heads); q × 1/√d_k
//   β_t   = σ(x·W_b)   g_t = −exp(A_log)·softplus(x·W_a + dt_bias)     (n × H) each
//   S_t   = e^{g_t}·S_{t−1};  δ_t = β_t·(v_t − S_tᵀk_t);  S_t += k_t·δ_tᵀ;  o_t = S_tᵀ·q_t
//   out   = RMSNorm(o_h)⊙w ⊙ SiLU(x·W_Z)    per head, then ·W_O
// The output is still a weighted sum of the values, o_t = Σ_j A[t,j]·v_j, with the implied
// matrix A[t,j] = β_j·q_tᵀ·P_{t,j}·k_j, P_{t,j} = Π_{s=t…j+1} e^{g_s}(I − β_s k_s k_sᵀ) (P_{t,t} = I):
// v never enters A, so A·V is exactly the recurrence's output (HeadTrace::implied_weights).
// The scenario's heads are the value heads H (head_dim d_v), W_Q and W_K are (d_model × H_k·d_k),
// W_V (d_model × H·d_v), W_O (H·d_v × d_model); the mask must be causal and there is no RoPE.
struct GatedDeltaNet {
    bool on = false;
    int key_heads = 0;       // H_k (linear_num_key_heads), dividing H; 0: H
    int key_dim = 0;         // d_k (linear_key_head_dim); 0: the value heads' d_v
    int conv_kernel = 4;     // K (linear_conv_kernel_dim), at least 1
    SharedMatrix w_z;        // (d_model × H·d_v): the output gate z; empty → seeded Xavier-uniform
    SharedMatrix w_b, w_a;   // (d_model × H): β's and the decay's inputs; empty → seeded
    Matrix conv;             // (2·H_k·d_k + H·d_v) × K: each channel's taps, oldest first; empty → seeded
    Vector a_log, dt_bias;   // (1 × H); empty → A_log = ln(1 + h), dt_bias = 1
    Vector norm;             // the gated RMSNorm's w (1 × d_v); empty → ones
};

// Differential attention (DiffLlama; Ye et al. 2024, arXiv 2410.05258): the H softmax heads work in
// P = H/2 pairs (p, p + P). Each head's map is an ordinary softmax, but head h reads the values of
// both heads of its pair side by side, V'_h = [V_p | V_{p+P}] (n_k × 2·d_k, p = h mod P), and a pair
// outputs the difference of its two maps' readings:
//   λ     = exp(Σ λ_q1⊙λ_k1) − exp(Σ λ_q2⊙λ_k2) + λ_init          one number per layer
//   o_p   = A_p·V'_p − λ·A_{p+P}·V'_p                              (n_q × 2·d_k)
//   out_p = (1 − λ_init)·RMSNorm(o_p)                              over its 2·d_k numbers, the block's ε, no weight
//   concat = [out_1 | … | out_P]                                   (n_q × H·d_k), which W_O reads
// What the two maps share (weight spread over every key) cancels; what differs stays. W_V, the
// cache and W_O keep d_v = d_k per head (value_dim_of); the trace's heads read 2·d_k (Trace::d_v).
struct DifferentialAttention {
    bool on = false;
    float lambda_init = 0.8f;                           // DiffLlama: 0.8 − 0.6·e^(−0.3·ℓ) in layer ℓ (from 0)
    Vector lambda_q1, lambda_k1, lambda_q2, lambda_k2;  // (1 × d_k) each; empty → zeros (λ = λ_init)
};
// exp(Σ λ_q⊙λ_k), in float32 as transformers computes it (an empty vector sums to 0: 1).
float differential_term(const Vector& lambda_q, const Vector& lambda_k);
// λ = exp(Σ λ_q1⊙λ_k1) − exp(Σ λ_q2⊙λ_k2) + λ_init.
float differential_lambda(const DifferentialAttention& d);

struct LatentAttention {
    int kv_rank = 0;    // r_kv (kv_lora_rank); 0: off, the usual W_Q, W_K, W_V
    int q_rank = 0;     // r_q (q_lora_rank); 0: q = x·W_Q
    int nope_dim = 0;   // d_nope (qk_nope_head_dim): the dims of q and k that RoPE leaves
    int rope_dim = 0;   // d_rope (qk_rope_head_dim): the dims it turns, k's shared by every head
    int v_dim = 0;      // d_v (v_head_dim)
    SharedMatrix w_q_a;   // (d_model × r_q); empty → seeded Xavier-uniform
    SharedMatrix w_q_b;   // (r_q × H·(d_nope + d_rope))
    SharedMatrix w_kv_a;  // (d_model × (r_kv + d_rope)): c's columns first, then k_rope's
    SharedMatrix w_kv_b;  // (r_kv × H·(d_nope + d_v)): each head's k_nope columns, then its v columns
    Vector b_q_a, b_kv_a;        // (1 × r_q), (1 × (r_kv + d_rope)); empty → 0
    Vector q_a_norm, kv_a_norm;  // γ_q (1 × r_q), γ_kv (1 × r_kv); empty → ones
    bool on() const { return kv_rank > 0; }
};

struct BlockOptions {
    bool residual = false;    // x + sublayer(…): the residual adds X + PE
    bool layer_norm = false;
    bool feed_forward = false;
    int d_ff = 0;             // 0 → 4·d_model
    NormPlacement norm = NormPlacement::Post;
    Activation activation = Activation::ReLU;
    float epsilon = 1e-5f;    // LayerNorm's ε
    SharedMatrix w_1, w_2;    // (d_model × d_ff), (d_ff × d_model); empty → seeded Xavier-uniform
    Vector b_1, b_2;          // (1 × d_ff), (1 × d_model); empty → 0
    LayerNormParams norm_1, norm_2;  // around attention and around the feed-forward
    // Modern blocks; every one off by default (the 2017 and GPT-2 blocks above).
    NormKind norm_kind = NormKind::LayerNorm;
    bool gamma_plus_one = false;  // RMSNorm scales by (1 + γ), γ as a Gemma checkpoint stores it
    // Gated feed-forward (SwiGLU with SiLU, GeGLU with GELU): act(x·W_gate) ⊙ (x·W₁), then ·W₂;
    // W₁ is the up projection, W₂ the down one, and there are no biases (Llama, Gemma).
    bool gated = false;
    SharedMatrix w_gate;          // (d_model × d_ff); empty → seeded Xavier-uniform
    // GPT-NeoX / Pythia: x + Attention(LN₁(x)) + FFN(LN₂(x)), both sublayers reading x (pre-norm).
    bool parallel_residual = false;
    // Gemma 2/3 (pre-norm): each sublayer's output is normalised again before its residual add:
    // x + N_post_attention(Attention(N₁(x))), then y + N_post_ffn(FFN(N₂(y))). Without layer_norm
    // it is OLMo 2's block, norms after each sublayer only: x + N_post_attention(Attention(x)),
    // then y + N_post_ffn(FFN(y)).
    bool sandwich_norm = false;
    LayerNormParams norm_post_attention, norm_post_feed_forward;
    // Pre-norm: false leaves N₁ out, attention reading the stream as it is; N₂ stays
    // (ModernBERT's first layer, whose attn_norm is an identity): x + Attention(x), then y + FFN(N₂(y)).
    bool attention_norm = true;
    // Whether the block has an N₁: post-norm's after attention, pre-norm's before it unless left out.
    bool has_norm_1() const { return layer_norm && (norm != NormPlacement::Pre || attention_norm); }
    // Whether attention reads N₁ of the stream rather than the stream itself: pre-norm with its N₁.
    bool normalises_attention_input() const { return norm == NormPlacement::Pre && layer_norm && attention_norm; }
    // Routed experts in place of W_gate, W₁, W₂ (gated only): see MixtureOfExperts.
    MixtureOfExperts moe;
};

struct Scenario {
    std::string name;         // for display and file names; not used by the engine
    InputMode input = InputMode::Embeddings;
    AttentionKind attention = AttentionKind::Self;

    // Embedding mode.
    Sequence target;          // the queries' sequence (and keys/values in self-attention)
    Sequence source;          // keys/values in cross-attention
    int d_model = 8;
    int heads = 1;            // query heads H; d_k = d_v = head_dim, or d_model / heads
    // Grouped-query attention: H_kv K/V heads (dividing H), query head h reading K/V head
    // h / (H / H_kv); 1 is multi-query attention. 0: H_kv = H (every head its own K and V).
    int kv_heads = 0;
    int head_dim = 0;         // d_k = d_v of every head; 0: d_model / heads
    // Weights are shared with the model they came from until edited (shared_matrix.hpp).
    // W_Q (d_model × H·d_k), W_K and W_V (d_model × H_kv·d_k), W_O (H·d_k × d_model): with
    // neither kv_heads nor head_dim, each (d_model × d_model). Empty → seeded Xavier-uniform.
    SharedMatrix w_q, w_k, w_v;
    SharedMatrix w_o;
    // Biases of the projections: Q = X·W_Q + b_q, …, output = concat·W_O + b_o. Each
    // (1 × columns of its W), or empty → none (GPT-2 has them; the articles do not).
    Vector b_q, b_k, b_v, b_o;
    std::uint64_t seed = 1;   // weights and the learned position table

    // Direct mode: Q (n_q × H·d_k), K (n_k × H_kv·d_k), V (n_k × H_kv·d_v); heads split columns.
    Matrix q, k, v;
    std::vector<std::string> direct_query_labels, direct_key_labels;  // optional

    PositionalEncoding positional = PositionalEncoding::None;
    RopeOptions rope;                 // with Rotary
    MaskKind mask = MaskKind::None;
    int window = 2;                   // sliding window size w ≥ 1; a band's half-width w ≥ 0
    int chunk = 4;                    // chunked mask: the chunk's size C ≥ 1
    MaskMatrix custom_mask;           // (n_q × n_k), true = visible
    float masked_fill = -std::numeric_limits<float>::infinity();  // or e.g. −1e9
    bool scale = true;                // divide scores by √d_k
    // With scale on: scores × this in place of 1/√d_k when > 0 (Gemma's
    // query_pre_attn_scalar^−½); 0: 1/√d_k. With scale off the scores are unscaled (× 1), and a
    // scale given here is kept for when scaling is turned on again (a family's own scale
    // survives the toggle, in the window and in a saved scenario).
    float score_scale = 0.0f;
    // Logit soft-capping (Gemma 2): each scaled score s → c·tanh(s/c) before the mask; 0: off.
    float softcap = 0.0f;
    SoftmaxKind softmax = SoftmaxKind::Stable;
    // QK-norm (Qwen3, Gemma 3): each head's q and k, row by row, go through RMSNorm over their
    // d_k numbers after the projection and before RoPE, q·(1/√(mean(q²) + ε))⊙w with ε the
    // block's epsilon and one weight vector (1 × d_k) for q and one for k, shared by every head.
    // qk_norm_plus_one is Gemma's form, ⊙(1 + w). Empty weights are the identity: ones (zeros
    // in the (1 + w) form). Kept while qk_norm is off, so turning it on again restores them.
    // qk_norm_whole is OLMo 2's form: each row of the whole projection, every head at once, is
    // normalised over its H·d_k numbers (K: H_kv·d_k), with weights (1 × H·d_k) and
    // (1 × H_kv·d_k), a weight per head and dim; the heads are split from the normed rows.
    bool qk_norm = false;
    bool qk_norm_plus_one = false;
    bool qk_norm_whole = false;
    Vector q_norm, k_norm;
    // Attention sinks (gpt-oss): one learned logit b_h per query head that joins each softmax
    // row's max and sum and then takes its share of the weight away (attention_rules.hpp).
    // Empty: none.
    Vector sinks;
    // Multi-head latent attention in place of W_K and W_V (and, with q_rank, of W_Q).
    LatentAttention latent;
    QueryTemperature temperature;   // Llama 4's NoPE layers: queries × τ_i
    OutputGate output_gate;         // Qwen3-Next's gated attention: the heads' outputs × σ(x·W_G + b_G)
    GatedDeltaNet delta_net;        // Qwen3-Next's linear-attention layers in place of softmax attention
    DifferentialAttention differential;  // DiffLlama: heads in pairs, the difference of their two maps

    BlockOptions block;
};

// H_kv (kv_heads, or heads) and, in embedding mode, d_k (head_dim, or d_model / heads) and d_v
// (d_k). Latent attention has a K and a V per head, d_k = d_nope + d_rope and its own d_v.
inline int kv_heads_of(const Scenario& s) { return s.latent.on() || s.delta_net.on ? s.heads : s.kv_heads > 0 ? s.kv_heads : s.heads; }
// Gated DeltaNet: d_k is its key_dim, d_v the heads' head_dim.
inline int plain_head_dim(const Scenario& s) { return s.head_dim > 0 ? s.head_dim : s.heads > 0 ? s.d_model / s.heads : 0; }
inline int head_dim_of(const Scenario& s) {
    if (s.latent.on()) return s.latent.nope_dim + s.latent.rope_dim;
    if (s.delta_net.on && s.delta_net.key_dim > 0) return s.delta_net.key_dim;
    return plain_head_dim(s);
}
inline int value_dim_of(const Scenario& s) { return s.latent.on() ? s.latent.v_dim : s.delta_net.on ? plain_head_dim(s) : head_dim_of(s); }
// The rows of W_O that head h's output meets, [begin, begin + count): [h·d_v, (h+1)·d_v), or in
// differential attention its pair's, [p·2·d_k, (p+1)·2·d_k) with p = h mod H/2 (the two maps of a pair
// share one output, normalised together).
struct RowRange {
    int begin = 0, count = 0;
};
inline RowRange output_rows_of(const Scenario& s, int h) {
    if (s.differential.on && s.heads >= 2) {
        const int pairs = s.heads / 2, width = 2 * head_dim_of(s);
        return {(h % pairs) * width, width};
    }
    return {h * value_dim_of(s), value_dim_of(s)};
}
// Gated DeltaNet's H_k (its q and k heads), else 0.
inline int delta_key_heads(const Scenario& s) { return !s.delta_net.on ? 0 : s.delta_net.key_heads > 0 ? s.delta_net.key_heads : s.heads; }
// Gated DeltaNet's channels C = 2·H_k·d_k + H·d_v: q's, k's and v's, which its convolution mixes.
inline int delta_channels(const Scenario& s) { return 2 * delta_key_heads(s) * head_dim_of(s) + s.heads * value_dim_of(s); }
// QK-norm's weight count for heads of d_k: d_k, shared by every head; over the whole projection
// (qk_norm_whole), one per head and dimension, `heads` being H for q and H_kv for k.
inline int qk_norm_length(bool whole, int d_k, int heads) { return whole ? d_k * (heads > 0 ? heads : 1) : d_k; }

const char* to_string(InputMode);
const char* to_string(PositionalEncoding);
const char* to_string(MaskKind);
const char* to_string(SoftmaxKind);
const char* to_string(AttentionKind);
const char* to_string(NormPlacement);
const char* to_string(Activation);
const char* to_string(RopePairing);
const char* to_string(RopeScalingKind);
std::optional<RopePairing> rope_pairing_from_string(const std::string&);
std::optional<RopeScalingKind> rope_scaling_from_string(const std::string&);
const char* to_string(RouterKind);  // "softmax_then_top_k", "top_k_then_softmax", "sigmoid_grouped", "top_k_then_sigmoid"
std::optional<RouterKind> router_kind_from_string(const std::string&);
const char* to_string(NormKind);
// Parse the names written by to_string; nullopt for an unknown name.
std::optional<PositionalEncoding> positional_from_string(const std::string&);
std::optional<MaskKind> mask_from_string(const std::string&);
std::optional<SoftmaxKind> softmax_from_string(const std::string&);
std::optional<AttentionKind> attention_from_string(const std::string&);
std::optional<NormPlacement> norm_placement_from_string(const std::string&);
std::optional<Activation> activation_from_string(const std::string&);
std::optional<NormKind> norm_kind_from_string(const std::string&);

// Settings of a block that contradict each other, each under the key of the scenario file's
// "block" that names it ("gamma_plus_one", "norm_1.beta") and why. The engine refuses them
// and so does the file reader, which names the key. A block that is off (no residual, norm
// or feed-forward) has none: its switches wait for it to be turned on again.
struct BlockConflict {
    std::string key;
    std::string why;
};
std::vector<BlockConflict> block_conflicts(const BlockOptions& block);

// The scenario's weights (W_Q, W_K, W_V, W_O, the block's W_1, W_2, W_gate) each in a holder of
// its own (SharedMatrix::own_holder): a checkpoint's layer shown in a view is widened to float32
// for that view alone, and the model keeps its weights as its file stores them.
void own_weight_holders(Scenario& scenario);

// Splits text into tokens: whitespace separates, punctuation stands alone. Invalid UTF-8
// is replaced by U+FFFD, so every token can be drawn and written to JSON.
std::vector<std::string> tokenize(const std::string& text);

}  // namespace attn
