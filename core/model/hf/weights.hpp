#pragma once
// The weights of a Hugging Face checkpoint folder, by each family's tensor names, in the
// engine's convention.
//
// Files: config.json (→ ModelSpec, spec.hpp) and either model.safetensors or
// model.safetensors.index.json, whose "weight_map" names the shard holding each tensor (every
// shard must exist, every tensor it names be in that shard, and no tensor be in two files).
// Matrices stay where the files store them, F32, F16 or BF16, memory-mapped and read in place
// (stored_matrix.hpp: a BF16 checkpoint stays BF16 in memory); vectors (biases, norms) are
// read as float32.
//
// Conventions (d = d_model, H = query heads, H_kv = K/V heads, hd = head_dim, V = vocab_size):
//   * Matrices are row-major and used as x·W, x (n × in): Hugging Face's nn.Linear stores its
//     weight (out × in), so it is used as its transpose (in × out), read in place. GPT-2's
//     Conv1D already stores (in × out) and is taken as it is.
//       w_q (d × H·hd), w_k, w_v (d × H_kv·hd): head h owns columns [h·hd, (h+1)·hd)
//       w_o (H·hd × d)
//       plain MLP: w_up (d × d_ff) (fc, dense_h_to_4h, intermediate.dense), w_down (d_ff × d)
//       gated MLP: w_gate, w_up (d × d_ff), w_down (d_ff × d): (act(x·w_gate) ⊙ x·w_up)·w_down
//   * GPT-NeoX fuses Q, K, V per head: query_key_value.weight (3·H·hd × d) is viewed as
//     (H, 3, hd) along its rows, so rows [h·3hd, h·3hd + hd) are head h's q, the next hd its k,
//     the next hd its v (modeling_gpt_neox.py: view(…, -1, 3·head_size).chunk(3)); the bias
//     likewise. w_q, w_k, w_v are three views of the one stored tensor; b_q, b_k, b_v are read apart.
//   * GPT-2's c_attn.weight (d × 3d) is [W_Q | W_K | W_V] by columns; c_attn.bias likewise.
//   * Qwen3-MoE's sparse layers: mlp.gate.weight (E × d), the router, used as (d × E); each expert's
//     mlp.experts.E.gate_proj, up_proj, down_proj as a gated MLP's, moe_intermediate_size wide.
//     Mixtral's: block_sparse_moe.gate.weight, and block_sparse_moe.experts.E.w1 (gate), w3 (up),
//     w2 (down), intermediate_size wide.
//   * DeepSeek-V3's attention: self_attn.q_a_proj, q_a_layernorm, q_b_proj (or q_proj without
//     q_lora_rank), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; its mixtures mlp.gate.weight
//     and mlp.gate.e_score_correction_bias, mlp.experts.E.gate_proj, up_proj, down_proj, and
//     mlp.shared_experts.gate_proj, up_proj, down_proj. The multi-token prediction layer DeepSeek-V3
//     publishes as model.layers.61 is read past, as transformers does.
//   * Phi-3 fuses Q, K, V by rows: qkv_proj.weight (H·hd + 2·H_kv·hd × d) is Q's rows, then K's,
//     then V's; gate_up_proj.weight (2·d_ff × d) the gate's rows, then up's. Each part is a view
//     of the one stored tensor.
//   * Qwen3-Next's q_proj.weight (H·2hd × d) is viewed (H, 2, hd) along its rows: head h's query rows
//     [h·2hd, h·2hd + hd), then its gate's (Qwen3NextAttention: view(…, -1, 2·head_dim).chunk(2));
//     its linear layers' in_proj_qkvz.weight (2·H_k·d_k + 2·H·d_v × d) per key head g the rows
//     [q_g (d_k) | k_g (d_k) | v (r·d_v) | z (r·d_v)], r = H / H_k value heads each, and in_proj_ba.weight
//     (2·H × d) per key head [b (r) | a (r)] (fix_query_key_value_ordering); each part a view.
//     Qwen3.5 stores them apart: in_proj_qkv.weight's rows [q (H_k·d_k) | k (H_k·d_k) | v (H·d_v)] (views),
//     in_proj_z, in_proj_b, in_proj_a. Its folders as published are multimodal: the text model's
//     tensors under model.language_model., the vision tower's (model.visual.*) read past.
//   * Biases and norm weights are (1 × n) row vectors, stored as 1-D tensors [n]; a bias the
//     spec does not have is empty. An RMSNorm has no bias.
//   * The embedding tables are kept as stored: token_embedding (V × d), one row per id;
//     position_embedding (P × d); token_type_embedding (T × d). The LM head is kept (V × d)
//     too, as HF stores lm_head.weight / embed_out.weight / cls.predictions.decoder.weight:
//     logits = h·Uᵀ (+ b). Tied: lm_head is empty and U is token_embedding.
//   * Norms by their place in the block (spec.hpp's layouts), not by HF's names:
//       attn_norm       before attention: input_layernorm (Llama, Qwen, Gemma, NeoX), ln_1 (GPT-2)
//       post_attn_norm  after attention: Gemma's post_attention_layernorm, BERT's attention.output.LayerNorm
//       mlp_norm        before the MLP: Llama/Qwen/NeoX's post_attention_layernorm, Gemma's
//                       pre_feedforward_layernorm, GPT-2's ln_2
//       post_mlp_norm   after the MLP: Gemma's post_feedforward_layernorm, BERT's output.LayerNorm
//       q_norm, k_norm  QK-norm over head_dim (1 × hd), one for every head
// Names are taken with or without the model class's prefix ("model.", "gpt_neox.", "bert.",
// "transformer."), and BERT's old LayerNorm "gamma"/"beta" as "weight"/"bias". Buffers HF
// recomputes (rotary_emb.inv_freq, GPT-2's and NeoX's attn.bias / masked_bias masks, BERT's
// position_ids) and heads BertForMaskedLM drops (the pooler, the next-sentence head) are
// listed as ignored; any other tensor is refused.
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "model/hf/spec.hpp"
#include "tensor/matrix.hpp"
#include "tensor/shared_matrix.hpp"

namespace attn::hf {

struct NormWeights {
    Vector weight;   // (1 × n); Gemma's stored w, used as (1 + w)
    Vector bias;     // (1 × n) for a LayerNorm; empty for an RMSNorm
    bool present() const { return weight.size() > 0; }
};

// One expert of a mixture (Qwen3-MoE's mlp.experts.E, Mixtral's block_sparse_moe.experts.E): a
// gated MLP of its own, the spec's experts.d_ff wide.
struct ExpertWeights {
    SharedMatrix w_gate, w_up, w_down;  // (d × d_ff), (d × d_ff), (d_ff × d)
    Vector b_gate, b_up, b_down;        // gpt-oss: (1 × d_ff), (1 × d_ff), (1 × d)
};

struct LayerWeights {
    NormWeights attn_norm, post_attn_norm, mlp_norm, post_mlp_norm;
    SharedMatrix w_q, w_k, w_v;        // (d × H·hd), (d × H_kv·hd), (d × H_kv·hd)
    Vector b_q, b_k, b_v;              // with spec.qkv_bias
    NormWeights q_norm, k_norm;        // with spec.qk_norm: (1 × hd)
    SharedMatrix w_o;                  // (H·hd × d)
    Vector b_o;                        // with spec.o_bias
    SharedMatrix w_gate, w_up, w_down; // w_gate only for a gated MLP
    Vector b_gate, b_up, b_down;       // with spec.mlp_bias (gated: b_gate, b_up, b_down; plain: b_up, b_down)
    // A layer with LayerSpec::moe, in place of w_gate, w_up, w_down: the router (mlp.gate or
    // block_sparse_moe.gate, E × d, used as its transpose (d × E)) and the experts.
    SharedMatrix router;
    Vector router_bias;                // gpt-oss: mlp.router.bias (1 × E)
    std::vector<ExpertWeights> experts;
    ExpertWeights shared_expert;       // Qwen2-MoE: mlp.shared_expert (experts.shared_d_ff wide)
    SharedMatrix shared_gate;          // and mlp.shared_expert_gate (1 × d, used as its transpose (d × 1))
    Vector choice_bias;                // DeepSeek-V3: mlp.gate.e_score_correction_bias (1 × E)
    Vector sinks;                      // with spec.sinks: self_attn.sinks (1 × H)
    Vector lambda_q1, lambda_k1, lambda_q2, lambda_k2;  // with spec.differential: self_attn.lambda_* (1 × head_dim)
    // DeepSeek-V3's latent attention (spec.latent), in place of w_q (with q_lora_rank), w_k and w_v:
    // q_a_proj (d × r_q), q_a_layernorm, q_b_proj (r_q × H·(d_nope + d_rope)); kv_a_proj_with_mqa
    // (d × (r_kv + d_rope)), kv_a_layernorm, kv_b_proj (r_kv × H·(d_nope + d_v)), each used as its transpose
    SharedMatrix w_q_a, w_q_b, w_kv_a, w_kv_b;
    Vector b_q_a, b_kv_a;              // with attention_bias
    NormWeights q_a_norm, kv_a_norm;
    // Qwen3-Next: the output gate's columns of q_proj (d × H·hd), with spec.output_gate
    SharedMatrix w_g;
    // Qwen3-Next's Gated DeltaNet layers (LayerSpec::linear), in place of w_q … w_o: views of
    // linear_attn.in_proj_qkvz (w_q, w_k (d × H_k·d_k), w_v and w_z (d × H·d_v)) and in_proj_ba (w_b, w_a
    // (d × H)); conv1d.weight (C × K); dt_bias, A_log (1 × H); norm.weight (1 × d_v); out_proj as w_o
    SharedMatrix w_z, w_b, w_a;
    Matrix conv;
    Vector dt_bias, a_log, delta_norm;
};

struct Weights {
    SharedMatrix token_embedding;       // (V × d)
    SharedMatrix position_embedding;    // (P × d), learned positions only
    SharedMatrix token_type_embedding;  // (T × d), BERT only
    NormWeights embedding_norm;         // BERT only
    std::vector<LayerWeights> layers;
    NormWeights final_norm;             // spec.final_norm
    SharedMatrix lm_head;               // (V × d) when untied; empty when tied to token_embedding
    Vector lm_head_bias;                // (1 × V), BERT's decoder bias
    // BERT's MLM transform: h = LayerNorm(act(x·mlm_dense + b))
    SharedMatrix mlm_dense;             // (d × d)
    Vector mlm_dense_bias;
    NormWeights mlm_norm;

    const SharedMatrix& unembedding() const { return lm_head.size() > 0 ? lm_head : token_embedding; }
};

struct ModelLoad {
    std::optional<ModelSpec> spec;
    std::optional<Weights> weights;
    std::vector<std::string> errors;    // each names the file and the key or tensor
    std::vector<std::string> ignored;   // stored names of tensors read past (buffers, dropped heads)
    std::vector<std::string> files;     // the safetensors files read
};

// config.json and the weights of a folder.
ModelLoad load_model(const std::string& folder);
// The weights alone, for a spec already read (a multimodal folder saved in its other layout
// switches the spec to it: ModelSpec::use_resaved_layout).
void load_weights(const std::string& folder, ModelSpec& spec, ModelLoad& load);

// The stored names of what follows the last layer, for messages: the final norm (its
// ".weight" and ".bias"), the token embedding, and the untied head (empty when tied).
struct HeadTensorNames {
    std::string final_norm;   // "ln_f", "model.norm"
    std::string embedding;    // "wte.weight", "model.embed_tokens.weight"
    std::string embedding_short;  // "wte", "embed_tokens"
    std::string lm_head;      // "lm_head.weight"; empty: tied to the embedding
};
HeadTensorNames head_tensor_names(const ModelSpec& spec);

// Where layer ℓ's weight matrices are stored, by the trace's keys ("w_q", "block.w_1", …), in
// PyTorch's words: "model.layers.0.self_attn.q_proj.weight.T" (nn.Linear's weight, used as
// its transpose); GPT-NeoX's "….query_key_value.weight.view(H, 3, hd, d)[:, 0].reshape(H·hd, d).T".
std::vector<std::pair<std::string, std::string>> layer_weight_names(const ModelSpec& spec, int layer);

// The stored name of every tensor a spec needs, canonical (with the prefix the *For… class
// saves: "model.layers.0.self_attn.q_proj.weight"), and its shape as stored.
struct TensorShape {
    std::string name;
    std::vector<std::int64_t> shape;
};
std::vector<TensorShape> expected_tensors(const ModelSpec& spec);

}  // namespace attn::hf
