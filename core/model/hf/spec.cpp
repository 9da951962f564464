// config.json → ModelSpec: the family table (a row per model_type: its keys, its reader in
// config_readers.cpp, its tensors and words), and what the table's spec gives the pass.
//
// Index
//   [SECTION] Names
//   [SECTION] The key lists
//   [SECTION] The table
//   [SECTION] RoPE and activations
#include "model/hf/spec.hpp"
#include "model/hf/config_reader.hpp"  // ConfigReader, read_token_ids and each family's reader

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "io/json_read.hpp"
#include "io/messages.hpp"
#include "attention/positional.hpp"

namespace attn::hf {

using nlohmann::json;

// [SECTION] Names

const char* to_string(NormKind kind) { return kind == NormKind::layer_norm ? "layer_norm" : "rms_norm"; }
const char* to_string(Activation activation) {
    switch (activation) {
        case Activation::gelu_tanh: return "gelu_tanh";
        case Activation::gelu_exact: return "gelu_exact";
        case Activation::silu: return "silu";
        case Activation::relu: return "relu";
    }
    return "?";
}
const char* to_string(MlpKind kind) { return kind == MlpKind::plain ? "plain" : "gated"; }
const char* to_string(BlockLayout layout) {
    switch (layout) {
        case BlockLayout::pre_norm: return "pre_norm";
        case BlockLayout::parallel_residual: return "parallel_residual";
        case BlockLayout::sandwich: return "sandwich";
        case BlockLayout::post_norm: return "post_norm";
        case BlockLayout::after_sublayers: return "after_sublayers";
    }
    return "?";
}
const char* to_string(PositionKind kind) { return kind == PositionKind::rope ? "rope" : "learned_absolute"; }
const char* to_string(RopeScalingKind kind) {
    switch (kind) {
        case RopeScalingKind::none: return "none";
        case RopeScalingKind::linear: return "linear";
        case RopeScalingKind::llama3: return "llama3";
        case RopeScalingKind::longrope: return "longrope";
        case RopeScalingKind::yarn: return "yarn";
    }
    return "?";
}

// [SECTION] The key lists
//
// Informational keys change nothing a float32 eager forward pass computes: names, dtypes of the
// stored file, dropout rates (inference), the cache, initialisation, generation's settings, the
// special tokens' ids (recorded in the spec, never used by the pass), and RoPE models'
// max_position_embeddings (a bound of the context, not a table).

namespace {

const std::vector<std::string> kCommonInformational = {
    "_name_or_path", "architectures", "torch_dtype", "dtype", "transformers_version", "use_cache", "initializer_range",
    "bos_token_id", "eos_token_id", "pad_token_id", "mask_token_id", "attention_dropout", "return_dict", "output_attentions",
    "output_hidden_states", "torchscript", "id2label", "label2id", "tokenizer_class", "task_specific_params",
    "problem_type", "finetuning_task", "prefix", "sep_token_id", "decoder_start_token_id", "gradient_checkpointing",
    "chunk_size_feed_forward", "max_length", "min_length", "do_sample", "temperature", "top_k", "top_p",
    "num_beams", "repetition_penalty", "length_penalty", "no_repeat_ngram_size", "bad_words_ids", "early_stopping",
};

// Keys every RoPE decoder (Llama's config and those derived from it) honours.
const std::vector<std::string> kDecoderHonoured = {
    "model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "hidden_act", "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
    "tie_word_embeddings",
};

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// The keys read_qwen3_next_layers reads beyond a decoder's (Qwen3-Next, Qwen3.5, Qwen3.5-MoE).
const std::vector<std::string> kQwen3NextLayers = {"head_dim", "attention_bias", "partial_rotary_factor", "layer_types",
                                                   "full_attention_interval", "linear_conv_kernel_dim", "linear_key_head_dim",
                                                   "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads"};
// Qwen3.5's and Qwen3.5-MoE's multimodal folders: their vision tower's config and its tokens' ids, read past.
const std::vector<std::string> kQwen3_5Folder = {"vision_config", "image_token_id", "video_token_id", "vision_start_token_id",
                                                 "vision_end_token_id"};

// a without the keys in b
std::vector<std::string> without(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.erase(std::remove_if(a.begin(), a.end(), [&](const std::string& k) { return std::find(b.begin(), b.end(), k) != b.end(); }), a.end());
    return a;
}

const std::vector<std::string> kQwenWindow = {"use_sliding_window", "sliding_window", "max_window_layers", "layer_types"};
const std::vector<std::string> kGemma = {"head_dim", "hidden_activation", "attention_bias", "query_pre_attn_scalar",
                                         "sliding_window", "final_logit_softcapping", "attn_logit_softcapping", "layer_types"};
// Gemma's MLP reads hidden_activation; hidden_act is set but never read by the model.
const std::vector<std::string> kGemmaInformational = {"max_position_embeddings", "cache_implementation", "hidden_act"};

}  // namespace

// [SECTION] The table

const std::vector<Family>& families() {
    static const std::vector<Family> table = {
        {"gpt2", "GPT-2",
         {{"model_type", "vocab_size", "n_embd", "n_layer", "n_head", "n_inner", "n_positions", "n_ctx", "layer_norm_epsilon",
           "activation_function", "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "tie_word_embeddings",
           "add_cross_attention", "pruned_heads"},
          joined(kCommonInformational,
                 {"attn_pdrop", "embd_pdrop", "resid_pdrop", "summary_activation", "summary_first_dropout",
                  "summary_proj_to_labels", "summary_type", "summary_use_proj",
                  // upcasts the scores to float32 and reorders the scaling: the same sums in a float32 run
                  "reorder_and_upcast_attn",
                  // the published configs' older keys: OpenAI GPT's special-token settings (gpt2-medium,
                  // -large, -xl), a classifier's label count (distilgpt2), transformers 2's run settings;
                  // GPT-2's attention is causal whatever is_decoder says
                  "n_special", "predict_special_tokens", "_num_labels", "num_labels", "output_past", "use_bfloat16",
                  "is_decoder"})},
         read_gpt2, TensorLayout::gpt2},
        {"llama", "Llama",
         {joined(kDecoderHonoured, {"head_dim", "attention_bias", "mlp_bias", "rope_interleaved"}),
          joined(kCommonInformational,
                 {"max_position_embeddings",
                  // splits each projection into slices summed back: the same products
                  "pretraining_tp",
                  // nanotron's export marker
                  "is_llama_config"})},
         read_llama},
        // DiffLlamaConfig: Llama's keys (no mlp_bias: its MLP is Mistral's) and lambda_std_dev
        {"diffllama", "DiffLlama",
         {joined(kDecoderHonoured, {"head_dim", "attention_bias"}),
          joined(kCommonInformational, {"max_position_embeddings",
                                        // how the λ vectors were first drawn: the checkpoint holds them
                                        "lambda_std_dev"})},
         read_diffllama},
        {"mistral", "Mistral",
         {joined(kDecoderHonoured, {"head_dim", "sliding_window"}), joined(kCommonInformational, {"max_position_embeddings"})},
         read_mistral},
        // MinistralConfig: Mistral's keys and layer_types (MinistralAttention: Qwen2's without biases)
        {"ministral", "Ministral",
         {joined(kDecoderHonoured, {"head_dim", "sliding_window", "layer_types"}), joined(kCommonInformational, {"max_position_embeddings"})},
         read_ministral},
        // Qwen2Attention reads getattr(config, "head_dim", hidden_size // num_attention_heads)
        {"qwen2", "Qwen2",
         {joined(joined(kDecoderHonoured, kQwenWindow), {"use_mrope", "head_dim"}), joined(kCommonInformational, {"max_position_embeddings"})},
         read_qwen2},
        {"qwen3", "Qwen3",
         {joined(joined(kDecoderHonoured, kQwenWindow), {"head_dim", "attention_bias"}),
          joined(kCommonInformational, {"max_position_embeddings"})},
         read_qwen3},
        {"gemma2", "Gemma 2", {joined(kDecoderHonoured, kGemma), joined(kCommonInformational, kGemmaInformational)},
         [](ConfigReader& r, ModelSpec& spec) { read_gemma(r, spec, false); }},
        {"gemma3_text", "Gemma 3",
         {joined(joined(kDecoderHonoured, kGemma),
                 {"rope_local_base_freq", "sliding_window_pattern", "_sliding_window_pattern", "use_bidirectional_attention"}),
          joined(kCommonInformational, kGemmaInformational)},
         [](ConfigReader& r, ModelSpec& spec) { read_gemma(r, spec, true); }, TensorLayout::llama,
         // Gemma3ForConditionalGeneration (Gemma 3 4B, 12B, 27B as Google publishes them): the text model under
         // language_model.model., its head tied; the vision tower and projector read past
         {"gemma3", "Gemma3ForConditionalGeneration", "language_model.model.", {"vision_tower.", "multi_modal_projector."},
          {"vision_config", "boi_token_index", "eoi_token_index", "image_token_index", "mm_tokens_per_image"}, "language_model.",
          // as transformers 4.52 and later save it (Gemma3ForConditionalGeneration's checkpoint conversion mapping)
          TensorNaming{"model.language_model.", "", {"model.vision_tower.", "model.multi_modal_projector."}},
          // its logits are lm_head(h): text_config's final_logit_softcapping is Gemma3ForCausalLM's
          true}},
        // Olmo2Attention reads getattr(config, "head_dim", hidden_size // num_attention_heads)
        {"olmo2", "OLMo 2",
         {joined(kDecoderHonoured, {"head_dim", "attention_bias"}), joined(kCommonInformational, {"max_position_embeddings"})},
         read_olmo2},
        // Phi3Attention reads getattr(config, "head_dim", hidden_size // num_attention_heads); full_attn_mod and
        // interpolate_factor are read by Phi-4-mini's remote code, not by transformers
        {"phi3", "Phi-3",
         {joined(kDecoderHonoured, {"head_dim", "partial_rotary_factor", "max_position_embeddings", "original_max_position_embeddings",
                                    "sliding_window", "attention_bias", "mlp_bias", "lm_head_bias"}),
          joined(kCommonInformational, {"embd_pdrop", "resid_pdrop", "auto_map", "full_attn_mod", "interpolate_factor"})},
         read_phi3, TensorLayout::phi3},
        // SmolLM3Attention is LlamaAttention's: head_dim, attention_bias; max_window_layers is Qwen2's key, which
        // SmolLM3 never reads
        {"smollm3", "SmolLM3",
         {joined(kDecoderHonoured, {"head_dim", "attention_bias", "mlp_bias", "no_rope_layers", "no_rope_layer_interval",
                                    "use_sliding_window", "sliding_window", "layer_types"}),
          joined(kCommonInformational, {"max_position_embeddings", "pretraining_tp", "max_window_layers"})},
         read_smollm3},
        // Qwen3MoeAttention reads head_dim and attention_bias; max_window_layers is Qwen2's key, which Qwen3-MoE never reads
        {"qwen3_moe", "Qwen3-MoE",
         {joined(kDecoderHonoured, {"head_dim", "attention_bias", "use_sliding_window", "sliding_window", "num_experts",
                                    "num_local_experts", "num_experts_per_tok", "norm_topk_prob", "moe_intermediate_size",
                                    "decoder_sparse_step", "mlp_only_layers"}),
          joined(kCommonInformational, {"max_position_embeddings", "max_window_layers",
                                        // the load-balancing loss of training
                                        "router_aux_loss_coef", "output_router_logits"})},
         read_qwen3_moe},
        // Qwen2MoeAttention reads head_dim and qkv_bias; the shared expert's keys are its own
        {"qwen2_moe", "Qwen2-MoE",
         {joined(kDecoderHonoured, {"head_dim", "qkv_bias", "use_sliding_window", "sliding_window", "layer_types",
                                    "num_experts", "num_local_experts", "num_experts_per_tok", "norm_topk_prob", "moe_intermediate_size",
                                    "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers"}),
          // max_window_layers: which layers slide without layer_types, refused there (read_qwen2_moe)
          joined(kCommonInformational, {"max_position_embeddings", "max_window_layers", "router_aux_loss_coef", "output_router_logits"})},
         read_qwen2_moe},
        // Qwen3NextAttention reads head_dim and attention_bias; mtp_*: the multi-token prediction module, which
        // transformers does not load (mtp.* read past)
        {"qwen3_next", "Qwen3-Next",
         {joined(joined(kDecoderHonoured, kQwen3NextLayers),
                 {"num_experts", "num_local_experts", "num_experts_per_tok", "norm_topk_prob", "moe_intermediate_size",
                  "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers"}),
          joined(kCommonInformational, {"max_position_embeddings", "router_aux_loss_coef", "output_router_logits",
                                        "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings"})},
         read_qwen3_next, TensorLayout::qwen3_next},
        // Qwen3_5TextConfig: Qwen3-Next's keys without the mixture's (mlp_only_layers is deleted from the
        // config and read by nothing: every MLP is dense); mtp_*: the multi-token prediction module, not loaded
        {"qwen3_5_text", "Qwen3.5",
         {joined(joined(kDecoderHonoured, kQwen3NextLayers), {"attn_output_gate"}),
          joined(kCommonInformational, {"max_position_embeddings", "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings",
                                        "mlp_only_layers"})},
         read_qwen3_5, TensorLayout::qwen3_5,
         // Qwen3_5ForConditionalGeneration: the vision tower (model.visual.*) and its tokens' ids read past
         {"qwen3_5", "Qwen3_5ForConditionalGeneration", "model.language_model.", {"model.visual."}, kQwen3_5Folder, "", std::nullopt, false}},
        // Qwen3_5MoeTextConfig: Qwen3.5's keys with the mixture's in place of intermediate_size (deleted from the
        // config, as decoder_sparse_step and mlp_only_layers are: read by nothing)
        {"qwen3_5_moe_text", "Qwen3.5-MoE",
         {joined(joined(without(kDecoderHonoured, {"intermediate_size"}), kQwen3NextLayers),
                 {"attn_output_gate", "num_experts", "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob",
                  "shared_expert_intermediate_size"}),
          joined(kCommonInformational, {"max_position_embeddings", "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings",
                                        "mlp_only_layers", "decoder_sparse_step", "intermediate_size", "router_aux_loss_coef",
                                        "output_router_logits"})},
         read_qwen3_5_moe, TensorLayout::qwen3_5,
         {"qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration", "model.language_model.", {"model.visual."}, kQwen3_5Folder, "", std::nullopt, false}},
        // MixtralAttention is Mistral's: head_dim; router_jitter_noise multiplies the input in training only
        {"mixtral", "Mixtral",
         {joined(kDecoderHonoured, {"head_dim", "sliding_window", "num_local_experts", "num_experts_per_tok"}),
          joined(kCommonInformational, {"max_position_embeddings", "router_aux_loss_coef", "output_router_logits", "router_jitter_noise"})},
         read_mixtral, TensorLayout::mixtral},
        // GptOssAttention reads head_dim and attention_bias; initial_context_length and experts_per_token
        // are the original release's names, which transformers never reads
        {"gpt_oss", "gpt-oss",
         // max_position_embeddings: YaRN's factor when its rope_scaling gives none
         {joined(kDecoderHonoured, {"head_dim", "attention_bias", "sliding_window", "layer_types", "num_local_experts",
                                    "num_experts_per_tok", "swiglu_limit", "swiglu_alpha", "quantization_config",
                                    "max_position_embeddings"}),
          joined(kCommonInformational, {"router_aux_loss_coef", "output_router_logits",
                                        "initial_context_length", "experts_per_token"})},
         read_gpt_oss, TensorLayout::gpt_oss},
        {"deepseek_v3", "DeepSeek-V3",
         // max_position_embeddings: YaRN's factor when its rope_scaling gives none; head_dim and qk_head_dim:
         // what DeepseekV3Config derives, checked; scoring_func, topk_method, moe_layer_freq: DeepSeek's own
         // code's keys, checked against what transformers computes
         {joined(kDecoderHonoured, {"max_position_embeddings", "moe_intermediate_size", "n_shared_experts", "n_routed_experts",
                                    "num_local_experts", "routed_scaling_factor", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
                                    "v_head_dim", "qk_nope_head_dim", "qk_head_dim", "head_dim", "n_group", "topk_group",
                                    "num_experts_per_tok", "first_k_dense_replace", "norm_topk_prob", "rope_interleave",
                                    "attention_bias", "scoring_func", "topk_method", "moe_layer_freq", "quantization_config"}),
          joined(kCommonInformational, {"pretraining_tp", "ep_size", "aux_loss_alpha", "seq_aux", "router_aux_loss_coef",
                                        // the multi-token prediction layer (model.layers.61 as published): not in the forward pass
                                        "num_nextn_predict_layers",
                                        // DeepSeek's remote code; transformers' own class reads the folder
                                        "auto_map"})},
         read_deepseek_v3, TensorLayout::deepseek_v3},
        // Llama4TextAttention reads head_dim and attention_bias; router_jitter_noise is read by no module
        {"llama4_text", "Llama 4",
         {joined(kDecoderHonoured, {"head_dim", "attention_bias", "intermediate_size_mlp", "no_rope_layers", "no_rope_layer_interval",
                                    "layer_types", "attention_chunk_size", "use_qk_norm", "attn_temperature_tuning", "floor_scale",
                                    "attn_scale", "num_local_experts", "num_experts_per_tok", "interleave_moe_layer_step", "moe_layers"}),
          joined(kCommonInformational, {"max_position_embeddings", "router_aux_loss_coef", "output_router_logits", "router_jitter_noise",
                                        "pretraining_tp", "cache_implementation", "for_llm_compressor"})},
         read_llama4, TensorLayout::llama4,
         // Llama4ForConditionalGeneration, as Meta publishes Llama 4: the text model under language_model.model. and its
         // head language_model.lm_head; the vision tower and projector read past, with the image tokens' ids
         {"llama4", "Llama4ForConditionalGeneration", "language_model.model.", {"vision_model.", "multi_modal_projector."},
          {"vision_config", "boi_token_index", "eoi_token_index", "image_token_index"}, "language_model.", std::nullopt, false}},
        {"gpt_neox", "GPT-NeoX (Pythia)",
         {{"model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "hidden_act",
           "layer_norm_eps", "rotary_pct", "rotary_emb_base", "rope_scaling", "rope_parameters", "rope_theta",
           "partial_rotary_factor", "use_parallel_residual", "attention_bias", "tie_word_embeddings"},
          joined(kCommonInformational, {"max_position_embeddings", "hidden_dropout", "classifier_dropout",
                                        // GPTNeoXForCausalLM is causal whatever it says
                                        "is_decoder"})},
         read_gpt_neox, TensorLayout::gpt_neox},
        {"bert", "BERT",
         {{"model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "hidden_act",
           "layer_norm_eps", "max_position_embeddings", "type_vocab_size", "position_embedding_type", "is_decoder",
           "add_cross_attention", "tie_word_embeddings"},
          joined(kCommonInformational, {"hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"})},
         read_bert, TensorLayout::bert},
        {"modernbert", "ModernBERT",
         {{"model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
           "hidden_activation", "norm_eps", "norm_bias", "attention_bias", "mlp_bias", "classifier_bias", "classifier_activation",
           "decoder_bias", "tie_word_embeddings", "local_attention", "global_attn_every_n_layers", "layer_types",
           "global_rope_theta", "local_rope_theta", "rope_parameters", "rope_scaling"},
          joined(kCommonInformational,
                 {"max_position_embeddings", "cls_token_id", "initializer_cutoff_factor", "embedding_dropout", "mlp_dropout",
                  "classifier_dropout",
                  // the pooling of the sequence classifier; the MLM head reads each token
                  "classifier_pooling",
                  // which logits ModernBertForMaskedLM returns (only the masked rows), not their values
                  "sparse_prediction", "sparse_pred_ignore_index", "repad_logits_with_grad",
                  // flash attention's and torch.compile's settings; eager attention is read
                  "deterministic_flash_attn", "reference_compile",
                  // read by no ModernBERT class (the published configs carry them): norm_eps is the norms' ε, and the
                  // positions are RoPE's
                  "layer_norm_eps", "position_embedding_type"})},
         read_modernbert, TensorLayout::modernbert},
    };
    return table;
}

const Family* find_family(const std::string& model_type) {
    for (const Family& f : families())
        if (f.model_type == model_type) return &f;
    return nullptr;
}

const Family* find_multimodal(const std::string& model_type) {
    if (model_type.empty()) return nullptr;
    for (const Family& f : families())
        if (f.multimodal.model_type == model_type) return &f;
    return nullptr;
}

std::string family_name(const std::string& model_type) {
    const Family* f = find_family(model_type);
    return f != nullptr ? f->name : model_type;
}

std::string family_names() {
    const std::vector<Family>& all = families();
    std::string names;
    for (size_t i = 0; i < all.size(); ++i) names += (i == 0 ? "" : i + 1 == all.size() ? " and " : ", ") + all[i].name;
    return names;
}

const KeyLists* config_keys(const std::string& model_type) {
    const Family* f = find_family(model_type);
    return f != nullptr ? &f->keys : nullptr;
}

namespace {

// A family's config (the folder's own, or a multimodal model's text_config) → its spec.
std::optional<ModelSpec> family_spec(const json& j, const Family& family, const std::string& source_name, std::vector<std::string>& errors) {
    Faults faults(source_name);
    const std::string& model_type = family.model_type;
    ModelSpec spec;
    spec.model_type = model_type;
    spec.source = source_name;
    ConfigReader r(j, faults);
    r.find("model_type");
    family.read(r, spec);
    spec.tensors = family.tensors;
    const KeyLists& keys = family.keys;
    read_token_ids(j, spec, faults);
    // The [MASK] id chooses the rows BERT's head predicts at: one outside the vocabulary would
    // predict at none (and say nothing).
    if (spec.mask_token_id && spec.vocab_size > 0 && *spec.mask_token_id >= spec.vocab_size)
        faults.add("key 'mask_token_id': " + std::to_string(*spec.mask_token_id) + " is outside the vocabulary (vocab_size " +
                   std::to_string(spec.vocab_size) + ": ids 0 to " + std::to_string(spec.vocab_size - 1) + ")");

    // Every key is honoured (read above) or informational; anything else might change the computation.
    const std::set<std::string> honoured(keys.honoured.begin(), keys.honoured.end());
    const std::set<std::string> informational(keys.informational.begin(), keys.informational.end());
    for (const std::string& key : r.read())
        if (!honoured.count(key))   // a reader reading a key not listed as honoured is this file's own fault
            faults.add("key '" + key + "': read by the " + model_type + " reader but not listed as honoured (spec.cpp)");
    for (const auto& [key, value] : j.items()) {
        if (honoured.count(key) || informational.count(key)) continue;
        faults.add("key '" + printable(key, 60) + "': " + shown(value) + " is not read by the " + model_type +
                   " reader, and might change the computation; refused rather than ignored");
    }
    if (spec.max_positions == 0) {
        const auto it = j.find("max_position_embeddings");
        if (it != j.end() && it->is_number_integer() && it->get<std::int64_t>() > 0 && it->get<std::int64_t>() < kMaxPositions)
            spec.max_positions = static_cast<int>(it->get<std::int64_t>());
    }
    if (spec.positions == PositionKind::rope && spec.rotary_dim % 2 != 0) faults.add("the rotary dims (" + std::to_string(spec.rotary_dim) + ") are odd");
    if (!faults.flush_into(errors)) return std::nullopt;
    return spec;
}

// A multimodal model's config (Family::Multimodal): its text_config read by the family, its own keys
// text_config, tie_word_embeddings and the informational ones (the other towers' configs), nothing else.
std::optional<ModelSpec> multimodal_spec(const json& j, const Family& family, const std::string& source_name,
                                         std::vector<std::string>& errors) {
    const Family::Multimodal& m = family.multimodal;
    Faults faults(source_name);
    const std::string what = "\"" + m.model_type + "\" (" + m.architecture + ", " + family.name + "'s text model beside a vision tower)";
    const auto text = j.find("text_config");
    if (text == j.end() || !text->is_object()) {
        faults.add("key 'text_config': " + (text == j.end() ? std::string("missing") : "found " + shown(*text)) + "; " + what +
                   " keeps its text model's config there (model_type \"" + family.model_type + "\")");
    } else if (const auto t = text->find("model_type"); t != text->end() && *t != family.model_type) {
        faults.add("key 'text_config': its model_type " + shown(*t) + " is not \"" + family.model_type + "\", the text model of " + what);
    }
    std::optional<bool> tied;
    if (const auto it = j.find("tie_word_embeddings"); it != j.end() && !it->is_null()) {
        if (it->is_boolean()) tied = it->get<bool>();
        else faults.add("key 'tie_word_embeddings': expected true or false, found " + shown(*it));
    }
    std::set<std::string> known(kCommonInformational.begin(), kCommonInformational.end());
    known.insert(m.informational.begin(), m.informational.end());
    for (const char* own : {"model_type", "text_config", "tie_word_embeddings"}) known.insert(own);
    for (const auto& [key, value] : j.items())
        if (!known.count(key))
            faults.add("key '" + printable(key, 60) + "': " + shown(value) + " is not read for " + what +
                       " (its text model is read from text_config), and might change the computation; refused rather than ignored");
    if (!faults.flush_into(errors)) return std::nullopt;
    json inner = *text;
    if (!inner.contains("model_type")) inner["model_type"] = family.model_type;
    if (tied) {  // both given: they must agree (transformers' versions tie by one or the other)
        const auto it = inner.find("tie_word_embeddings");
        if (it != inner.end() && it->is_boolean() && it->get<bool>() != *tied) {
            faults.add("key 'tie_word_embeddings': " + shown(json(*tied)) + " disagrees with text_config's " + shown(*it) +
                       "; transformers' versions tie the head by one or the other");
            faults.flush_into(errors);
            return std::nullopt;
        }
        if (it == inner.end() || it->is_null()) inner["tie_word_embeddings"] = *tied;
    }
    std::optional<ModelSpec> spec = family_spec(inner, family, source_name + ", text_config", errors);
    if (spec) {
        spec->multimodal_type = m.model_type;
        spec->tensor_prefix = m.tensor_prefix;
        spec->head_prefix = m.head_prefix;
        spec->skipped_prefixes = m.skipped;
        spec->resaved_layout = m.resaved;
        if (m.uncapped_logits) spec->final_logit_softcap = 0;
    }
    return spec;
}

}  // namespace

std::optional<ModelSpec> spec_from_config(const std::string& text, const std::string& source_name,
                                          std::vector<std::string>& errors) {
    const std::optional<json> document = parse_json(text, source_name, errors, json_limits::kConfig);
    if (!document) return std::nullopt;
    Faults faults(source_name);
    if (!document->is_object()) {
        faults.add("top level: expected a JSON object, found " + std::string(document->type_name()));
        faults.flush_into(errors);
        return std::nullopt;
    }
    const json& j = *document;
    std::string supported;
    for (const Family& f : families()) supported += (supported.empty() ? "\"" : ", \"") + f.model_type + "\"";
    for (const Family& f : families())
        if (!f.multimodal.model_type.empty()) supported += ", \"" + f.multimodal.model_type + "\" (" + f.name + "'s text model)";
    const auto type_it = j.find("model_type");
    if (type_it == j.end() || !type_it->is_string()) {
        faults.add("key 'model_type': " + (type_it == j.end() ? std::string("missing") : "found " + shown(*type_it)) +
                   "; expected one of " + supported);
        faults.flush_into(errors);
        return std::nullopt;
    }
    const std::string model_type = type_it->get<std::string>();
    if (const Family* family = find_family(model_type)) return family_spec(j, *family, source_name, errors);
    if (const Family* family = find_multimodal(model_type)) return multimodal_spec(j, *family, source_name, errors);
    faults.add("key 'model_type': \"" + printable(model_type, 60) + "\" is not supported; supported: " + supported);
    faults.flush_into(errors);
    return std::nullopt;
}

// [SECTION] RoPE and activations

attn::RopeOptions rope_options(const ModelSpec& spec, int layer) {
    const LayerSpec& l = spec.layers.at(static_cast<std::size_t>(layer));
    attn::RopeOptions rope;
    rope.pairing = spec.rope_style == RopeStyle::interleaved ? attn::RopePairing::Interleaved : attn::RopePairing::RotateHalf;
    rope.theta = static_cast<float>(l.rope_theta);
    rope.rotary_dims = spec.latent.kv_rank > 0 ? 0 : spec.rotary_dim;  // latent attention turns all its d_rope dims
    const RopeScaling& s = l.rope_scaling;
    rope.scaling = s.kind == RopeScalingKind::linear     ? attn::RopeScalingKind::Linear
                   : s.kind == RopeScalingKind::llama3   ? attn::RopeScalingKind::Llama3
                   : s.kind == RopeScalingKind::longrope ? attn::RopeScalingKind::LongRope
                   : s.kind == RopeScalingKind::yarn     ? attn::RopeScalingKind::Yarn
                                                         : attn::RopeScalingKind::None;
    if (s.kind == RopeScalingKind::yarn) {
        rope.attention_factor = static_cast<float>(s.attention_factor);
        rope.beta_fast = static_cast<float>(s.beta_fast);
        rope.beta_slow = static_cast<float>(s.beta_slow);
        rope.truncate = s.truncate;
    }
    if (s.kind == RopeScalingKind::longrope) {
        rope.short_factor = Eigen::Map<const Eigen::RowVectorXd>(s.short_factor.data(), static_cast<Eigen::Index>(s.short_factor.size())).cast<float>();
        rope.long_factor = Eigen::Map<const Eigen::RowVectorXd>(s.long_factor.data(), static_cast<Eigen::Index>(s.long_factor.size())).cast<float>();
        rope.attention_factor = static_cast<float>(s.attention_factor);
    }
    rope.factor = static_cast<float>(s.factor);
    rope.low_freq_factor = static_cast<float>(s.low_freq_factor);
    rope.high_freq_factor = static_cast<float>(s.high_freq_factor);
    rope.original_max_positions = s.original_max_position_embeddings;
    return rope;
}

std::vector<float> rope_inverse_frequencies(const ModelSpec& spec, int layer, int length) {
    return attn::rope_inverse_frequencies(rope_options(spec, layer), spec.rotary_dim, length);
}

double activate(Activation activation, double x) {
    switch (activation) {
        case Activation::gelu_tanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        case Activation::gelu_exact: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        case Activation::silu: return x / (1 + std::exp(-x));
        case Activation::relu: return x > 0 ? x : 0;
    }
    return x;
}

}  // namespace attn::hf
