#pragma once
// What the forward pass of a Hugging Face checkpoint needs, family-neutral: one ModelSpec read
// from config.json. The families read are those of transformers' own modeling code, whose
// semantics (eager attention, float32) the spec describes exactly:
//
//   model_type    classes                       what sets it apart
//   gpt2          GPT2LMHeadModel               learned positions, LayerNorm, Conv1D (in × out) weights
//   llama         LlamaForCausalLM              RMSNorm, RoPE, gated SiLU MLP, GQA (SmolLM2, TinyLlama, Llama 3.x)
//   mistral       MistralForCausalLM            Llama with every layer sliding when sliding_window is set
//   qwen2         Qwen2ForCausalLM              Llama with biases on Q, K, V
//   qwen3         Qwen3ForCausalLM              Llama with an RMSNorm on each head's q and k (QK-norm)
//   gemma2        Gemma2ForCausalLM             (1 + w) RMSNorm, four norms a block, √d embedding scale,
//                                               soft-capped scores and logits, every other layer sliding
//   gemma3_text   Gemma3ForCausalLM             Gemma 2's block with QK-norm, 5 sliding layers : 1 global,
//                                               a local RoPE base on the sliding ones
//   gpt_neox      GPTNeoXForCausalLM            partial RoPE, fused per-head QKV, parallel residual (Pythia)
//   bert          BertForMaskedLM               bidirectional, post-norm, token types, the MLM head
//   modernbert    ModernBertForMaskedLM         bidirectional, pre-norm LayerNorms without a bias (none before the
//                                               first layer's attention), RoPE, fused Wqkv, GeGLU; two layers of
//                                               three local (a band of keys on both sides), a RoPE base each kind;
//                                               the final norm, then BERT's MLM transform and a tied decoder
//   olmo2         Olmo2ForCausalLM              Llama with norms after each sublayer only, QK-norm over
//                                               the whole projection (every head at once)
//   phi3          Phi3ForCausalLM               Llama with fused qkv_proj and gate_up_proj, partial RoPE,
//                                               LongRoPE (Phi-3, Phi-4-mini)
//   smollm3       SmolLM3ForCausalLM            Llama with NoPE layers: every fourth turns neither q nor k
//   qwen3_moe     Qwen3MoeForCausalLM           Qwen3 with a mixture of experts in place of the MLP: a router,
//                                               softmax, the top k experts, each a gated MLP of its own
//   qwen2_moe     Qwen2MoeForCausalLM           Qwen2 with Qwen3-MoE's mixture, and beside it a shared expert on
//                                               every token, scaled by σ(x·shared_expert_gate)
//   mixtral       MixtralForCausalLM            Mistral with a mixture of experts in every layer, the kept
//                                               weights always renormalised
//   gpt_oss       GptOssForCausalLM             learned sinks, sliding and full layers alternating, YaRN,
//                                               biases on attention, a mixture of experts every layer: the
//                                               top k logits then softmax, biased experts, a clamped SwiGLU
//   deepseek_v3   DeepseekV3ForCausalLM         multi-head latent attention (K and V from one compressed
//                                               latent, a rotary key shared by the heads), YaRN with mscale;
//                                               after the first dense layers a mixture: σ scores, groups of
//                                               experts, a biased choice, scaled weights, ungated shared experts
//   qwen3_next    Qwen3NextForCausalLM          three Gated DeltaNet layers (linear attention: a convolution, a
//                                               decaying state written by the delta rule) to one gated softmax layer
//                                               (each head's output × σ(gate)), partial RoPE, (1 + w) RMSNorms,
//                                               Qwen2-MoE's mixture with a gated shared expert
//   qwen3_5_text  Qwen3_5ForCausalLM            Qwen3-Next's layers (Gated DeltaNet and gated softmax layers) with a
//                 (or the text model of         dense MLP in each, the linear layers' projections stored apart, and
//                 Qwen3_5ForConditionalGeneration, multimodal RoPE (for a text, plain partial RoPE); as published
//                 model_type qwen3_5)           a multimodal folder: text_config, tensors under model.language_model.
//   qwen3_5_moe_text Qwen3_5MoeForCausalLM      Qwen3.5 with a mixture in every layer (always renormalised) and a
//                 (model_type qwen3_5_moe)      gated shared expert; as published a multimodal folder as Qwen3.5's
//   llama4_text   Llama4ForCausalLM             chunked attention on its RoPE layers, every fourth layer global
//                                               without RoPE and with a query temperature, a weightless QK-norm,
//                                               interleaved RoPE; a mixture: the top k logits, each kept expert
//                                               weighed by σ of its own and reading its input scaled by it, and an
//                                               ungated shared expert; dense and MoE layers interleaved
//
// The block, for each layout (x: the residual stream (n × d); attn and mlp include their projections):
//   pre_norm           x += attn(attn_norm(x));                 x += mlp(mlp_norm(x))
//                      (ModernBERT's first layer: x += attn(x), its attn_norm an identity)
//   parallel_residual  x  = x + attn(attn_norm(x)) + mlp(mlp_norm(x))
//   sandwich (Gemma)   x += post_attn_norm(attn(attn_norm(x))); x += post_mlp_norm(mlp(mlp_norm(x)))
//   post_norm (BERT)   x  = post_attn_norm(x + attn(x));        x  = post_mlp_norm(x + mlp(x))
//   after_sublayers    x += post_attn_norm(attn(x));            x += post_mlp_norm(mlp(x))   (OLMo 2)
// Norms:  LayerNorm   y = (x − mean)/√(var + ε)·w + b          (var biased)
//         RMSNorm     y = x/√(mean(x²) + ε)·w, or ·(1 + w) with one_plus_weight (Gemma)
// Latent attention (DeepSeek-V3): q = q_b(RMSNorm(q_a(x))) (or q_proj(x)); [c | k_rope] = kv_a(x);
//   [k_nope_h | v_h] = kv_b(RMSNorm(c)); q_h = [q_nope | RoPE(q_rope)], k_h = [k_nope_h | RoPE(k_rope)], the same
//   k_rope in every head; RoPE over the qk_rope_head_dim dims alone (pairs (2i, 2i+1) with rope_interleave)
// Attention, head h (query heads H, K/V heads H_kv; head h reads K/V head h / (H / H_kv)):
//   q, k: (n × head_dim); with qk_norm each row of q and k is RMS-normed over head_dim, then RoPE;
//   with qk_norm_whole each row of the whole projection (n × H·head_dim; K: H_kv·head_dim) is
//   RMS-normed, a weight per head and dim, before the heads are split (OLMo 2)
//   s = q·kᵀ·attention_scale; with attn_logit_softcap c: s → c·tanh(s/c); then the mask; softmax per row
//   mask: key j is seen by query i when (not causal or j ≤ i) and (window == 0 or i − j < window)
//         and (chunk == 0 or ⌊j/chunk⌋ = ⌊i/chunk⌋) (Llama 4's chunked layers); a bidirectional layer with a
//         window (ModernBERT's local layers) sees |i − j| ≤ window, window = local_attention / 2
//   Llama 4: on a NoPE layer with attn_temperature_tuning, q_i × (ln(⌊(i + 1)/floor_scale⌋ + 1)·attn_scale + 1);
//   with use_qk_norm, on its RoPE layers, q and k RMS-normed without a weight after RoPE (a rotation keeps
//   a row's length, so the engine's QK-norm before RoPE with a weight of ones is the same numbers)
// MLP:    plain  act(x·W_up + b_up)·W_down + b_down
//         gated  (act(x·W_gate) ⊙ (x·W_up))·W_down
//         mixture of experts  p = softmax(x·W_routerᵀ); K = the top k of p; y = Σ_{e∈K} w_e·gated_e(x),
//                w_e = p_e (or p_e / Σ_K p with norm_topk_prob), summed in expert order;
//                Qwen2-MoE then y += σ(x·gᵀ)·gated_shared(x), every token;
//                DeepSeek-V3: p = σ(x·W_routerᵀ); c = p + e_score_correction_bias; the topk_group best of n_group
//                groups (a group's score: its 2 largest c), c = 0 elsewhere; K = the top k of c;
//                w = p_K (/ (Σ p_K + 1e-20) with norm_topk_prob) × routed_scaling_factor; y += shared(x), ungated;
//                gpt-oss: r = x·W_routerᵀ + b; K = the top k of r; w = softmax over K of r;
//                gated_e(x) = ((clamp(u, ±L) + 1)·g·σ(α·g))·W_down + b_down, g = min(x·W_gate + b_gate, L)
// Sinks (gpt-oss): row i's softmax over [s_i0 … s_in, sink_h], the sink's share dropped (rows sum below 1).
// RoPE rotate_half (HF Llama/NeoX): dims i and i + r/2 of the first r = rotary_dim dims rotate
//   together by angle position·inv_freq[i], i < r/2; dims ≥ r pass as they are. cos and sin are
//   multiplied by the attention factor (LongRoPE's; 1 elsewhere). LongRoPE's inverse frequencies
//   depend on the text's length n: 1/(e_i·θ^(2i/r)), e the short factors when n ≤
//   original_max_position_embeddings, the long ones beyond.
//   YaRN's: pairs that turn more than beta_fast times within original_max_position_embeddings keep
//   θ^(−2i/r), those turning fewer than beta_slow times take θ^(−2i/r)/factor, a linear ramp between;
//   its attention factor 0.1·ln(factor) + 1 unless given (DeepSeek: the ratio of two such with mscale).
//   interleaved (GPT-J): dims 2i and 2i+1 rotate together. No family read here uses it.
// Logits: h = final_norm(x_L) (or BERT's MLM transform), logits = h·Uᵀ + b (U the LM head (V × d),
//   tied: the token embedding); with final_logit_softcap c: logits → c·tanh(logits/c).
//
// Every config key that would change the computation is either honoured or refused with a
// message naming the key and its value; keys that do not (architectures, torch_dtype, dropout
// rates, …) are listed as informational; a key in neither list is refused, naming it.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "attention/scenario.hpp"

namespace attn::hf {

enum class NormKind { layer_norm, rms_norm };
enum class Activation { gelu_tanh, gelu_exact, silu, relu };
enum class MlpKind { plain, gated };
enum class BlockLayout { pre_norm, parallel_residual, sandwich, post_norm, after_sublayers };
enum class PositionKind { learned_absolute, rope };
enum class RopeStyle { rotate_half, interleaved };
enum class RopeScalingKind { none, linear, llama3, longrope, yarn };
enum class HeadKind { causal_lm, masked_lm };
// How a family's checkpoint names and lays out its tensors (weights.cpp): Llama's
// (model.layers.N.self_attn.q_proj, …; Qwen, Gemma and Mistral too), GPT-2's (h.N.attn.c_attn,
// Conv1D), GPT-NeoX's (a fused per-head query_key_value), BERT's, and Phi-3's (Llama's names
// with Q, K, V fused in qkv_proj and the gate and up projections in gate_up_proj), and Mixtral's
// (Llama's names, the mixture of experts as block_sparse_moe.gate and experts.E.w1, w3, w2), and
// gpt-oss's (Llama's attention names with self_attn.sinks, the experts fused in three-dimensional
// mlp.experts.gate_up_proj (E × d × 2·d_ff, gate and up interleaved by column) and down_proj (E × d_ff × d),
// each with a bias, and the router as mlp.router).
// DeepSeek-V3's: Llama's names with the latent attention's (self_attn.q_a_proj, q_a_layernorm, q_b_proj or
// q_proj; kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj), the router's mlp.gate.e_score_correction_bias
// and mlp.shared_experts; the first first_k_dense_replace layers Llama's MLP.
// Llama 4's: Llama's attention names; the MLP as feed_forward (gate_proj, up_proj, down_proj on
// dense layers), a mixture as feed_forward.router, feed_forward.shared_expert and the experts fused
// in feed_forward.experts.gate_up_proj (E × d × 2·d_ff, the gate the first d_ff columns, up the
// next) and down_proj (E × d_ff × d), used as stored.
// Qwen3-Next's: Llama's names, q_proj twice as wide (per head its query's rows, then its gate's), and
// on the linear layers linear_attn.in_proj_qkvz (per key head: q, k, then its value heads' v and z),
// in_proj_ba (per key head: its value heads' b, then their a), conv1d.weight (C × 1 × K), dt_bias,
// A_log, norm.weight and out_proj; the experts Qwen2-MoE's (mlp.gate, mlp.experts.E.*, mlp.shared_expert,
// mlp.shared_expert_gate). The multi-token prediction module (mtp.*) is read past, as transformers does.
// ModernBERT's: model.embeddings.tok_embeddings and norm, model.layers.N.attn_norm (none on layer 0), attn.Wqkv
// (Q, K, V by rows), attn.Wo, mlp_norm, mlp.Wi (the activated half's rows, then the other's), mlp.Wo, model.final_norm,
// head.dense, head.norm and decoder.bias (its weight tied to the embedding).
enum class TensorLayout { llama, gpt2, gpt_neox, bert, phi3, mixtral, gpt_oss, deepseek_v3, llama4, qwen3_next, qwen3_5, modernbert };

const char* to_string(NormKind kind);         // "layer_norm", "rms_norm"
const char* to_string(Activation activation); // "gelu_tanh", "gelu_exact", "silu", "relu"
const char* to_string(MlpKind kind);
const char* to_string(BlockLayout layout);
const char* to_string(PositionKind kind);
const char* to_string(RopeScalingKind kind);

struct NormSpec {
    NormKind kind = NormKind::layer_norm;
    bool one_plus_weight = false;   // Gemma's RMSNorm: x/rms·(1 + w)
    double epsilon = 1e-5;          // added to the variance (LayerNorm) or mean square (RMSNorm)
    bool bias = true;               // LayerNorm's β; RMSNorm has none
};

// RoPE's frequencies, as transformers' rope_init functions compute them.
struct RopeScaling {
    RopeScalingKind kind = RopeScalingKind::none;
    double factor = 1.0;                             // linear: inv_freq / factor; llama3: the low band's divisor
    double low_freq_factor = 1.0;                    // llama3
    double high_freq_factor = 4.0;                   // llama3
    int original_max_position_embeddings = 8192;     // llama3; longrope: the short factors' length
    std::vector<double> short_factor, long_factor;   // longrope: one divisor per turned pair
    double attention_factor = 1.0;                   // longrope, yarn: multiplies cos and sin
    double beta_fast = 32.0, beta_slow = 1.0;        // yarn: the ramp's ends, in turns within original_max_position_embeddings
    bool truncate = true;                            // yarn: the ramp's ends rounded out to whole dims
    double mscale_all_dim = 0;                       // yarn: DeepSeek-V3's; its mscale² multiplies the attention scale
    // Multimodal RoPE (Qwen3.5's mrope_section): the rotary pairs split among a token's time, height and
    // width positions. A text gives each token one position in all three, so the pairs turn as plain RoPE
    // turns them; kept to check the sections cover the rotary pairs. 0: none.
    int mrope_pairs = 0;
};

// What differs from layer to layer.
struct LayerSpec {
    int window = 0;              // 0: every earlier key (global); W: keys j with i − j < W (sliding); a bidirectional
                                 // layer's W: keys j with |i − j| ≤ W (ModernBERT's local layers)
    bool causal = true;          // false: BERT, every query sees every key
    double rope_theta = 10000;   // the RoPE base of this layer (Gemma 3: rope_local_base_freq on sliding layers)
    RopeScaling rope_scaling;    // Gemma 3 scales the global layers' RoPE only
    bool rope = true;            // false: a NoPE layer (SmolLM3's no_rope_layers): q and k are not turned
    bool moe = false;            // its MLP is the model's mixture of experts (ModelSpec::experts)
    int chunk = 0;               // > 0: chunked attention (Llama 4): keys of the query's own chunk of C
    bool temperature = false;    // Llama 4: the queries × τ_i (ModelSpec::temperature_floor_scale, _attn_scale)
    bool qk_norm = false;        // Llama 4: a weightless RMSNorm of each head's q and k (use_qk_norm, on RoPE layers)
    bool linear = false;         // Qwen3-Next: a Gated DeltaNet layer (ModelSpec::linear) in place of softmax attention
    bool attn_norm = true;       // false: attention reads the stream as it is (ModernBERT's first layer)
};

// Qwen3-Next's Gated DeltaNet layers (Qwen3NextGatedDeltaNet): the sizes of scenario.hpp's GatedDeltaNet.
struct LinearSpec {
    int key_heads = 0, value_heads = 0;  // linear_num_key_heads, linear_num_value_heads (a multiple of it)
    int key_dim = 0, value_dim = 0;      // linear_key_head_dim, linear_value_head_dim
    int conv_kernel = 4;                 // linear_conv_kernel_dim
};

// A mixture of experts in place of a layer's MLP (Qwen3-MoE, Mixtral): each token's router logits
// x·W_routerᵀ, their softmax, the top experts_per_token kept (renormalised to sum 1 with
// normalize_top_k), and the kept experts' gated MLPs (d_ff wide each), weighted and summed.
struct MixtureSpec {
    int experts = 0;             // E (num_experts, Mixtral's num_local_experts); 0: no layer has one
    int experts_per_token = 0;   // k (num_experts_per_tok)
    bool normalize_top_k = false;  // norm_topk_prob; Mixtral always
    int d_ff = 0;                // each expert's inner width (moe_intermediate_size, Mixtral's intermediate_size)
    // gpt-oss (GptOssTopKRouter, GptOssExperts): the top k logits first, softmax over them; a bias on
    // the router and on each expert's projections; the clamped SwiGLU
    bool top_k_then_softmax = false;
    bool biases = false;         // mlp.router.bias, and the experts' gate_up_proj_bias, down_proj_bias
    double swiglu_limit = 0;     // > 0: g = min(gate, L), u = clamp(up, −L, L), (u + 1)·g·σ(α·g)
    double swiglu_alpha = 1.702;
    bool mxfp4 = false;          // gpt-oss as published: the experts' weights stored as MXFP4 blocks and scales
    // Every expert of a layer in two tensors, as transformers 5 keeps them and Qwen3.5-MoE is published:
    // mlp.experts.gate_up_proj (E × 2·d_ff × d: each expert's gate rows, then its up rows) and down_proj
    // (E × d × d_ff), each expert's slice nn.Linear's (out × in); Mixtral's router then mlp.gate. Set by
    // the weights' reader when the folder holds them, in place of the experts.E.* of transformers 4.
    bool fused = false;
    // Qwen2-MoE: a shared expert on every token (a gated MLP of shared_d_ff), added after the
    // routed ones, scaled by σ(x·shared_expert_gate) with shared_gate
    int shared_d_ff = 0;         // shared_expert_intermediate_size; 0: none
    bool shared_gate = false;
    // DeepSeek-V3 (DeepseekV3MoE): σ scores, the choice biased by mlp.gate.e_score_correction_bias, the
    // best top_groups of groups first, the weights × routed_scale; the shared experts (n_shared_experts ×
    // moe_intermediate_size wide, one gated MLP) without a gate
    bool sigmoid_grouped = false;
    int groups = 1, top_groups = 1;  // n_group, topk_group
    double routed_scale = 1.0;       // routed_scaling_factor
    // Llama 4 (Llama4Router, Llama4TextMoe): the top k logits, each kept expert's weight σ of its logit,
    // multiplying the expert's input; the shared expert (shared_d_ff) ungated
    bool top_k_then_sigmoid = false;
};

// Multi-head latent attention (DeepseekV3Attention): the sizes of scenario.hpp's LatentAttention.
struct LatentSpec {
    int kv_rank = 0;             // kv_lora_rank; 0: the usual attention
    int q_rank = 0;              // q_lora_rank; 0 (null): q_proj
    int nope_dim = 0, rope_dim = 0, v_dim = 0;  // qk_nope_head_dim, qk_rope_head_dim, v_head_dim
    bool interleave = true;      // rope_interleave: RoPE turns the pairs (2i, 2i+1) of the rotary dims
};

// Where a multimodal folder keeps its text model's tensors, its head and its other towers'.
struct TensorNaming {
    std::string tensor_prefix;         // "model.language_model."
    std::string head_prefix;           // before the untied head's "lm_head.weight"
    std::vector<std::string> skipped;  // the other towers': "model.visual."
};

struct ModelSpec {
    std::string model_type;      // "llama", "gpt2", … as config.json names it
    TensorLayout tensors = TensorLayout::llama;  // its family's (Family::tensors)
    std::string source;          // the config's file name, for messages
    // A multimodal folder's text model (Qwen3.5 as published): the folder's own model_type, where the
    // text model's tensors lie, and the prefixes of the tensors read past (the vision tower's)
    std::string multimodal_type;         // "qwen3_5"; empty: the folder is the text model itself
    std::string tensor_prefix = "model.";  // of a decoder's tensors: "model.layers.N.…", "model.language_model.layers.N.…"
    std::string head_prefix;               // of its head: "lm_head.weight", Llama 4's multimodal "language_model.lm_head.weight"
    std::vector<std::string> skipped_prefixes;  // "model.visual."
    // The multimodal folder's other layout (Family::Multimodal::resaved), where it has one
    std::optional<TensorNaming> resaved_layout;
    // Reads the folder in that other layout: the weights' reader calls it when the folder's
    // embedding lies there and not under tensor_prefix.
    void use_resaved_layout() {
        tensor_prefix = resaved_layout->tensor_prefix;
        head_prefix = resaved_layout->head_prefix;
        skipped_prefixes = resaved_layout->skipped;
        resaved_layout.reset();
    }
    // A tensor of the multimodal folder's other towers (under one of skipped_prefixes): read past.
    bool in_other_tower(const std::string& name) const {
        for (const std::string& prefix : skipped_prefixes)
            if (name.compare(0, prefix.size(), prefix) == 0) return true;
        return false;
    }

    // Sizes
    int vocab_size = 0;          // V: rows of the embedding table and of the LM head
    int d_model = 0;             // hidden_size / n_embd
    int n_layers = 0;
    int n_heads = 0;             // query heads H
    int n_kv_heads = 0;          // K/V heads H_kv (H divisible by it; H_kv == H without GQA)
    int head_dim = 0;            // independent of d_model (Gemma: 256 with d_model 2304)
    int d_ff = 0;                // the MLP's inner width
    int max_positions = 0;       // learned positions: rows of the position table; RoPE: informational
    std::string positions_key;   // learned positions: the config key that gave max_positions ("n_positions")

    // Norms (every norm of the model has this kind and ε; the final norm too)
    NormSpec norm;

    // Attention
    bool qkv_bias = false;       // biases on Q, K, V
    bool o_bias = false;         // bias on the output projection
    bool qk_norm = false;        // RMSNorm over head_dim on each head's q and k, before RoPE (Qwen3, Gemma 3)
    bool qk_norm_whole = false;  // with qk_norm: over the whole projection, every head at once (OLMo 2)
    double attention_scale = 0;  // multiplies q·kᵀ: head_dim^−½, or query_pre_attn_scalar^−½ (Gemma)
    double attn_logit_softcap = 0;    // 0: none; c: s → c·tanh(s/c) before the mask (Gemma 2)
    bool differential = false;   // DiffLlama: heads in pairs, the difference of their two maps (self_attn.lambda_q1, …)
    bool sinks = false;          // a learned logit per query head joins each row's softmax and is dropped (gpt-oss's self_attn.sinks)
    LatentSpec latent;           // DeepSeek-V3's latent attention (head_dim is then d_nope + d_rope; n_kv_heads = n_heads)
    double final_logit_softcap = 0;   // 0: none; c: logits → c·tanh(logits/c) (Gemma 2)
    double temperature_floor_scale = 0, temperature_attn_scale = 0.1;  // Llama 4's query temperature (LayerSpec::temperature)
    bool output_gate = false;    // Qwen3-Next: q_proj gives each head [query | gate]; the head's output × σ(gate) before o_proj
    LinearSpec linear;           // Qwen3-Next's Gated DeltaNet, on the layers with LayerSpec::linear

    // Positions
    PositionKind positions = PositionKind::rope;
    RopeStyle rope_style = RopeStyle::rotate_half;
    int rotary_dim = 0;          // r: the leading dims of each head that rotate (Pythia: head_dim·rotary_pct)
    std::vector<LayerSpec> layers;   // n_layers entries: window, causality and RoPE base per layer

    // MLP
    MixtureSpec experts;         // the layers with LayerSpec::moe
    MlpKind mlp = MlpKind::gated;
    Activation activation = Activation::silu;
    bool mlp_bias = false;

    // Block and embeddings
    BlockLayout layout = BlockLayout::pre_norm;
    float embedding_scale = 1.0f;    // Gemma: √d_model as a float32, as HF forms it (torch.tensor(d**0.5) in the
                                     // embedding's dtype, float32 here); 1 elsewhere
    int type_vocab_size = 0;         // BERT: rows of the token-type table (type 0 is added when none is given)
    bool embedding_norm = false;     // BERT: LayerNorm on the summed embeddings

    // Head
    HeadKind head = HeadKind::causal_lm;
    bool tied_lm_head = true;        // U = the token embedding; else the file's own LM head (V × d)
    bool final_norm = true;          // a norm on x_L before the head (BERT: none; its MLM transform has one)
    bool lm_head_bias = false;       // BERT's decoder bias
    bool mlm_dense_bias = true;      // the MLM transform's dense has a bias (ModernBERT's classifier_bias)
    Activation mlm_activation = Activation::gelu_exact;   // BERT: the MLM transform's act (hidden_act)

    // Special tokens, when the config names them
    std::optional<int> bos_token_id, pad_token_id, mask_token_id;
    std::vector<int> eos_token_ids;

    int kv_group() const { return n_kv_heads > 0 ? n_heads / n_kv_heads : 0; }   // query heads per K/V head
    // The most heads a layer has: Qwen3-Next's Gated DeltaNet layers may have more value heads than its
    // softmax layers have query heads (the model view's columns, the heads a pass can ablate).
    int most_heads() const {
        for (const LayerSpec& l : layers)
            if (l.linear) return std::max(n_heads, linear.value_heads);
        return n_heads;
    }
    int kv_head_of(int query_head) const { return kv_group() > 0 ? query_head / kv_group() : 0; }
};

// The keys a family's reader honours (they change the computation and are read) and those it
// accepts as informational (they do not).
struct KeyLists {
    std::vector<std::string> honoured;
    std::vector<std::string> informational;
};

// A config's keys as a family's reader reads them, each once, every fault naming its key (spec.cpp).
class ConfigReader;

// The families the app opens, one row each: config.json's model_type, the name people give
// it, its config's keys, its reader, and how its checkpoint lays out its tensors. Everything
// that asks which families there are, what one is called or how its files are read, asks
// this table: a family whose tensors are laid out as one already read is one row.
struct Family {
    std::string model_type;  // "gemma3_text"
    std::string name;        // "Gemma 3"
    KeyLists keys;
    void (*read)(ConfigReader& config, ModelSpec& spec);
    TensorLayout tensors = TensorLayout::llama;
    // The multimodal model this family is the text model of, as its folders are published: its
    // config.json nests this family's config under text_config; the text model's tensors lie under
    // tensor_prefix, beside the other towers' (skipped, read past). Empty model_type: none.
    struct Multimodal {
        std::string model_type;                 // "qwen3_5"
        std::string architecture;               // "Qwen3_5ForConditionalGeneration", for messages
        std::string tensor_prefix;              // "model.language_model."
        std::vector<std::string> skipped;       // "model.visual."
        std::vector<std::string> informational; // its own keys beside text_config and tie_word_embeddings
        std::string head_prefix;                // before the untied head's "lm_head.weight": "language_model." (Llama 4)
        // The layout transformers 4.52 and later save the same model in, where it differs (Gemma 3:
        // the text model under "model.language_model.", the head "lm_head.weight", the towers under
        // "model."): a folder whose embedding lies there is read that way, as transformers'
        // checkpoint conversion mapping reads both. None: one layout.
        std::optional<TensorNaming> resaved;
        // The multimodal model's logits are lm_head(h), whatever text_config's final_logit_softcapping
        // says (Gemma3ForConditionalGeneration; Gemma3ForCausalLM alone soft-caps them).
        bool uncapped_logits = false;
    };
    Multimodal multimodal = {};
};
const std::vector<Family>& families();                 // in the order messages list them
const Family* find_family(const std::string& model_type);  // nullptr: not a family read here
const Family* find_multimodal(const std::string& model_type);  // the family whose Multimodal::model_type it is, or nullptr
std::string family_name(const std::string& model_type);    // "Gemma 3"; an unknown model_type as it is
std::string family_names();                            // "GPT-2, Llama, …, BERT and ModernBERT"
const KeyLists* config_keys(const std::string& model_type);  // nullptr for an unknown model_type

// config.json's text → the spec, or nullopt with "SOURCE: key 'K': …" messages appended to
// errors: an unknown model_type (naming it and the supported ones), a key in neither list, a
// value outside what the family computes (an unsupported rope_scaling type, an activation
// transformers does not name, a K/V head count that does not divide the heads, …). A multimodal
// model's config (Family::Multimodal) gives its text model's spec, its text_config read by the family
// and its messages naming "SOURCE, text_config".
std::optional<ModelSpec> spec_from_config(const std::string& text, const std::string& source_name,
                                          std::vector<std::string>& errors);

// RoPE's inverse frequencies of layer ℓ for a text of `length` tokens, rotary_dim / 2 of them,
// in float32 as transformers computes them: inv_freq[i] = 1 / θ^(2i / r), then the layer's
// scaling (linear: / factor; llama3: the low band / factor, the middle band smoothed;
// longrope: θ^(2i/r) times the short or long factor first). HF's angle is then the float32
// product inv_freq[i]·position, and cos, sin of it (times the attention factor).
// Layer `layer`'s RoPE as the engine's scenario takes it (its base, the dimensions turned, the
// scaling), and its inverse frequencies (core/attention/positional.hpp computes them, in float32 as
// Hugging Face does).
attn::RopeOptions rope_options(const ModelSpec& spec, int layer);
std::vector<float> rope_inverse_frequencies(const ModelSpec& spec, int layer, int length);

// The activations, as transformers' ACT2FN computes them (gelu_tanh: 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)));
// gelu_exact: 0.5x(1 + erf(x/√2)); silu: x·σ(x)).
double activate(Activation activation, double x);

}  // namespace attn::hf
