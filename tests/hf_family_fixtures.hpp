#pragma once
// Tiny random checkpoints of every Hugging Face family Attention Lab reads, written by the
// tests in the exact layout transformers saves (config.json with the key set of a real small
// model of the family, scaled down; model.safetensors, or shards with their index, with the
// family's tensor names and dtype), and a plain-loop reference forward pass for each family,
// written from transformers' modeling_<family>.py: the truth the engine's runs of these
// families are checked against.
//
//   checkpoint          like               dtype  head     files
//   llama_checkpoint    SmolLM2-135M       BF16   tied     one; GQA 6 : 2
//   llama3_checkpoint   Llama-3.2-1B       F32    untied   two shards; head_dim ≠ d/H, llama3 rope_scaling
//   mistral_checkpoint  Mistral-7B-v0.1    BF16   untied   one; every layer sliding (window 3), GQA 4 : 2
//   ministral_checkpoint MinistralConfig   BF16   untied   one; layer_types: layer 1 sliding (window 3), layer 2 global
//   qwen2_checkpoint    Qwen2.5-0.5B       F16    tied     one; Q/K/V biases, use_sliding_window false
//   qwen3_checkpoint    Qwen3-0.6B         BF16   tied     one; QK-norm, head_dim ≠ d/H
//   gemma2_checkpoint   gemma-2-2b         F32    tied     one; sandwich norms, soft-caps, sliding layer 0
//   gemma3_checkpoint   gemma-3-1b         BF16   tied     one; QK-norm, local RoPE base, MQA, 2 : 1 pattern
//   olmo2_checkpoint    OLMo-2-0425-1B     F32    untied   one; norms after each sublayer, QK-norm over the
//                                                          whole projection, GQA 4 : 2
//   phi3_checkpoint     Phi-4-mini         BF16   tied     one; fused qkv_proj and gate_up_proj, 6 of 8
//                                                          dims turned, LongRoPE (4 → 128 positions),
//                                                          every layer sliding (window 5), GQA 3 : 1
//   smollm3_checkpoint  SmolLM3-3B         BF16   tied     one; layer 3 of 4 NoPE (no_rope_layers), GQA 4 : 2
//   qwen3_moe_checkpoint Qwen3-30B-A3B     BF16   untied   one; 8 experts, 3 kept, renormalised; layer 1 of 3 dense
//   qwen2_moe_checkpoint Qwen1.5-MoE-A2.7B BF16   untied   one; 6 experts, 2 kept; a gated shared expert; layer 1 of 3 dense
//   mixtral_checkpoint  Mixtral-8x7B       BF16   untied   one; 4 experts in every layer, 2 kept, always renormalised
//   gpt_oss_checkpoint  gpt-oss-20b        BF16   untied   one; sinks, sliding and full layers, YaRN, biased attention,
//                                                          4 fused experts, top 2 logits then softmax, clamped SwiGLU
//   deepseek_v3_checkpoint DeepSeek-V3      BF16   untied   one; latent attention (q_lora_rank, interleaved RoPE), YaRN
//                                                          with mscale; layer 0 dense, 8 experts in 4 groups, 2 groups
//                                                          kept, 2 experts, σ scores, a biased choice, shared experts;
//                                                          the multi-token prediction layer (model.layers.61)
//   qwen3_next_checkpoint Qwen3-Next-80B-A3B BF16  untied   one; 3 Gated DeltaNet layers : 1 gated full layer, partial RoPE,
//                                                          (1 + w) norms, 6 experts, 2 kept, a gated shared expert; mtp.*
//   qwen3_5_checkpoint  Qwen3.5-9B         BF16   untied   one; the multimodal folder: text_config, model.language_model.*,
//                                                          model.visual.*, mtp.*; Qwen3-Next's layers, projections apart,
//                                                          mrope_section, a dense MLP
//   qwen3_5_moe_checkpoint Qwen3.5-35B-A3B BF16  untied   one; Qwen3.5's folder with 6 experts in every layer, 2 kept,
//                                                          always renormalised, a gated shared expert; experts apart
//                                                          (the published layout, fused: with_fused_experts)
//   neox_checkpoint     pythia-70m         F16    untied   one; fused QKV, rotary_pct, parallel residual
//   bert_checkpoint     bert-base-uncased  F32    tied     one; gamma/beta names, pooler and NSP head
//   modernbert_checkpoint ModernBERT-base  F32    tied     one; fused Wqkv and Wi, no attn_norm in layer 0, LayerNorms
//                                                          without a bias, layers 1 and 2 of 4 local (a band of ±2),
//                                                          two RoPE bases, the MLM head and decoder.bias
//
// The values are drawn already rounded to the file's dtype, so reading them back is exact.
//
// The reference works on the stored tensors by their Hugging Face names (nn.Linear: y = x·Wᵀ + b,
// W (out × in); Conv1D: y = x·W + b), in double, with plain loops over tokens, heads and
// dims: no Eigen expression, no code of core/model/hf but the ModelSpec's values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensor/safetensors.hpp"
#include "model/hf/spec.hpp"

namespace attn::testing::families {

using Rows = std::vector<std::vector<double>>;   // [row][column]

struct HfTensor {
    std::vector<std::int64_t> shape;
    std::vector<float> values;   // row-major, as stored
};
using HfTensors = std::map<std::string, HfTensor>;   // by stored name

struct FamilyCheckpoint {
    std::string label;               // "llama3": which fixture
    nlohmann::json config;           // config.json
    HfTensors tensors;               // every tensor of the file(s)
    safetensors::Dtype dtype = safetensors::Dtype::F32;
    bool sharded = false;            // model-00001-of-00002.safetensors, …-00002-…, and the index
};

// [SECTION] Writing

inline float rounded(float value, safetensors::Dtype dtype) {
    if (dtype == safetensors::Dtype::BF16) return safetensors::bf16_to_f32(safetensors::f32_to_bf16(value));
    if (dtype == safetensors::Dtype::F16) return safetensors::f16_to_f32(safetensors::f32_to_f16(value));
    return value;
}

// Draws tensors N(mean, stddev²), rounded to the dtype; the same seed gives the same values.
struct TensorMaker {
    FamilyCheckpoint& checkpoint;
    std::mt19937_64 rng;
    TensorMaker(FamilyCheckpoint& c, std::uint64_t seed) : checkpoint(c), rng(seed) {}
    void operator()(const std::string& name, std::vector<std::int64_t> shape, double stddev, double mean = 0.0) {
        std::int64_t count = 1;
        for (auto n : shape) count *= n;
        std::normal_distribution<double> normal(mean, stddev);
        HfTensor t{std::move(shape), std::vector<float>(static_cast<std::size_t>(count))};
        for (float& v : t.values) v = rounded(static_cast<float>(normal(rng)), checkpoint.dtype);
        checkpoint.tensors[name] = std::move(t);
    }
};

inline std::vector<safetensors::NamedTensor> named(const HfTensors& tensors) {
    std::vector<safetensors::NamedTensor> out;
    for (const auto& [name, t] : tensors) out.emplace_back(name, t.shape, t.values.data());
    return out;
}

// The folder as save_pretrained writes it. Sharded: the tensors split in two files by name
// order, with model.safetensors.index.json's weight_map.
inline void write_family_checkpoint(const std::string& folder, const FamilyCheckpoint& c) {
    namespace fs = std::filesystem;
    fs::remove_all(folder);
    fs::create_directories(folder);
    std::ofstream(fs::path(folder) / "config.json") << c.config.dump(2) << "\n";
    std::string error;
    const std::map<std::string, std::string> metadata = {{"format", "pt"}};
    if (!c.sharded) {
        if (!safetensors::write_safetensors((fs::path(folder) / "model.safetensors").string(), named(c.tensors), metadata, c.dtype, &error))
            throw std::runtime_error(error);
        return;
    }
    HfTensors halves[2];
    std::size_t i = 0;
    nlohmann::json weight_map = nlohmann::json::object();
    std::uint64_t total = 0;
    const char* files[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    for (const auto& [name, t] : c.tensors) {
        const int half = i++ < c.tensors.size() / 2 ? 0 : 1;
        halves[half][name] = t;
        weight_map[name] = files[half];
        total += t.values.size() * safetensors::dtype_size(c.dtype);
    }
    for (int half = 0; half < 2; ++half)
        if (!safetensors::write_safetensors((fs::path(folder) / files[half]).string(), named(halves[half]), metadata, c.dtype, &error))
            throw std::runtime_error(error);
    const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    std::ofstream(fs::path(folder) / "model.safetensors.index.json") << index.dump(2) << "\n";
}

// A Llama-layout checkpoint `c` whose embedding (and untied head) has a row for each of the
// `vocabulary` tokens of `tokenizer_json` (d_model columns of scale `scale`), written to `folder`
// with that file as its tokenizer.json.
inline void write_with_tokenizer(const std::string& folder, FamilyCheckpoint c, std::int64_t vocabulary, std::int64_t d_model, double scale,
                                 const std::string& tokenizer_json) {
    const bool multimodal = c.config.contains("text_config");  // Qwen3.5's folder: the text model's config and tensors
    (multimodal ? c.config["text_config"] : c.config)["vocab_size"] = vocabulary;
    TensorMaker make(c, 99);
    const bool modernbert = c.tensors.count("model.embeddings.tok_embeddings.weight") != 0;
    make(multimodal ? "model.language_model.embed_tokens.weight" : modernbert ? "model.embeddings.tok_embeddings.weight" : "model.embed_tokens.weight",
         {vocabulary, d_model}, scale);
    if (c.tensors.count("lm_head.weight")) make("lm_head.weight", {vocabulary, d_model}, scale);  // an untied head of as many rows
    if (c.tensors.count("decoder.bias")) make("decoder.bias", {vocabulary}, 0.3);                 // ModernBERT's decoder bias
    write_family_checkpoint(folder, c);
    std::filesystem::copy_file(tokenizer_json, std::filesystem::path(folder) / "tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing);
}

// [SECTION] The families' checkpoints

// Llama, Qwen and Gemma layers: LlamaDecoderLayer's names ("model.layers.N.…").
struct DecoderShape {
    int vocab, d, heads, kv_heads, head_dim, d_ff, layers;
    bool qkv_bias = false, o_bias = false, mlp_bias = false, qk_norm = false, gemma = false, tied = true;
    bool olmo2 = false;   // no norm before the sublayers, one after each; QK-norm over the whole projection
    bool phi3 = false;    // Q, K, V fused in qkv_proj, gate and up in gate_up_proj
    // Qwen3-MoE: every layer but dense_layer a mixture of `experts` gated MLPs of moe_d_ff each;
    // Mixtral's names (block_sparse_moe, w1, w3, w2) with `mixtral`
    int experts = 0, moe_d_ff = 0, dense_layer = -1;
    int shared_d_ff = 0;   // Qwen2-MoE: mlp.shared_expert (gate, up, down) and mlp.shared_expert_gate beside the experts
    bool mixtral = false;
    bool gpt_oss = false;  // self_attn.sinks; mlp.router with a bias, the experts fused in mlp.experts.gate_up_proj, down_proj
};

inline void make_decoder_tensors(FamilyCheckpoint& c, const DecoderShape& s, std::uint64_t seed) {
    TensorMaker make(c, seed);
    const std::int64_t d = s.d, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim, ff = s.d_ff;
    // Gemma stores w of (1 + w): around 0; the others around 1
    const double norm_mean = s.gemma ? 0.0 : 1.0;
    make("model.embed_tokens.weight", {s.vocab, d}, 1.0);
    for (int l = 0; l < s.layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        if (!s.olmo2) make(p + "input_layernorm.weight", {d}, 0.2, norm_mean);
        if (s.phi3) {
            make(p + "self_attn.qkv_proj.weight", {q + 2 * kv, d}, 0.6);
        } else {
            make(p + "self_attn.q_proj.weight", {q, d}, 0.6);
            make(p + "self_attn.k_proj.weight", {kv, d}, 0.6);
            make(p + "self_attn.v_proj.weight", {kv, d}, 0.4);
        }
        make(p + "self_attn.o_proj.weight", {d, q}, 0.3);
        if (s.qkv_bias) {
            make(p + "self_attn.q_proj.bias", {q}, 0.3);
            make(p + "self_attn.k_proj.bias", {kv}, 0.3);
            make(p + "self_attn.v_proj.bias", {kv}, 0.3);
        }
        if (s.o_bias) make(p + "self_attn.o_proj.bias", {d}, 0.3);
        if (s.gpt_oss) make(p + "self_attn.sinks", {s.heads}, 1.0);
        if (s.qk_norm) {
            make(p + "self_attn.q_norm.weight", {s.olmo2 ? q : s.head_dim}, 0.2, norm_mean);
            make(p + "self_attn.k_norm.weight", {s.olmo2 ? kv : s.head_dim}, 0.2, norm_mean);
        }
        make(p + "post_attention_layernorm.weight", {d}, 0.2, norm_mean);
        if (s.olmo2) make(p + "post_feedforward_layernorm.weight", {d}, 0.2, norm_mean);
        if (s.gemma) {
            make(p + "pre_feedforward_layernorm.weight", {d}, 0.2, norm_mean);
            make(p + "post_feedforward_layernorm.weight", {d}, 0.2, norm_mean);
        }
        if (s.gpt_oss) {  // GptOssMLP: router (E × d) and bias, experts as (E, d, 2·d_ff) and (E, d_ff, d) with biases
            make(p + "mlp.router.weight", {s.experts, d}, 0.8);
            make(p + "mlp.router.bias", {s.experts}, 0.5);
            make(p + "mlp.experts.gate_up_proj", {s.experts, d, 2 * s.moe_d_ff}, 0.4);
            make(p + "mlp.experts.gate_up_proj_bias", {s.experts, 2 * s.moe_d_ff}, 0.3);
            make(p + "mlp.experts.down_proj", {s.experts, s.moe_d_ff, d}, 0.3);
            make(p + "mlp.experts.down_proj_bias", {s.experts, d}, 0.2);
            continue;
        }
        if (s.experts > 0 && l != s.dense_layer) {
            const std::string m = p + (s.mixtral ? "block_sparse_moe." : "mlp.");
            make(m + "gate.weight", {s.experts, d}, 0.8);
            for (int e = 0; e < s.experts; ++e) {
                const std::string x = m + "experts." + std::to_string(e) + ".";
                make(x + (s.mixtral ? "w1" : "gate_proj") + ".weight", {s.moe_d_ff, d}, 0.4);
                make(x + (s.mixtral ? "w3" : "up_proj") + ".weight", {s.moe_d_ff, d}, 0.4);
                make(x + (s.mixtral ? "w2" : "down_proj") + ".weight", {d, s.moe_d_ff}, 0.3);
            }
            if (s.shared_d_ff > 0) {
                make(m + "shared_expert.gate_proj.weight", {s.shared_d_ff, d}, 0.4);
                make(m + "shared_expert.up_proj.weight", {s.shared_d_ff, d}, 0.4);
                make(m + "shared_expert.down_proj.weight", {d, s.shared_d_ff}, 0.3);
                make(m + "shared_expert_gate.weight", {1, d}, 1.0);
            }
            continue;
        }
        if (s.phi3) {
            make(p + "mlp.gate_up_proj.weight", {2 * ff, d}, 0.4);
        } else {
            make(p + "mlp.gate_proj.weight", {ff, d}, 0.4);
            make(p + "mlp.up_proj.weight", {ff, d}, 0.4);
        }
        make(p + "mlp.down_proj.weight", {d, ff}, 0.3);
        if (s.mlp_bias) {
            make(p + "mlp.gate_proj.bias", {ff}, 0.2);
            make(p + "mlp.up_proj.bias", {ff}, 0.2);
            make(p + "mlp.down_proj.bias", {d}, 0.2);
        }
    }
    make("model.norm.weight", {d}, 0.2, norm_mean);
    if (!s.tied) make("lm_head.weight", {s.vocab, d}, 0.5);
}

// SmolLM2-135M's config.json, scaled down: GQA 6 query heads on 2 K/V heads, tied, BF16.
inline FamilyCheckpoint llama_checkpoint(std::uint64_t seed = 1) {
    FamilyCheckpoint c{"llama", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 0,
      "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 24, "initializer_range": 0.041666666666666664,
      "intermediate_size": 40, "is_llama_config": true, "max_position_embeddings": 8192, "mlp_bias": false,
      "model_type": "llama", "num_attention_heads": 6, "num_hidden_layers": 2, "num_key_value_heads": 2,
      "pad_token_id": null, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_interleaved": false, "rope_scaling": null,
      "rope_theta": 100000, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.42.3",
      "use_cache": true, "vocab_size": 48})");
    make_decoder_tensors(c, {48, 24, 6, 2, 4, 40, 2}, seed);
    return c;
}

// Llama-3.2-1B's config.json, scaled down: head_dim 8 with d/H = 4, llama3 rope_scaling, untied
// (as TinyLlama and Llama 3.1 8B), two shards.
inline FamilyCheckpoint llama3_checkpoint(std::uint64_t seed = 2) {
    FamilyCheckpoint c{"llama3", {}, {}, safetensors::Dtype::F32, true};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
      "eos_token_id": [128001, 128008, 128009], "head_dim": 8, "hidden_act": "silu", "hidden_size": 16,
      "initializer_range": 0.02, "intermediate_size": 24, "max_position_embeddings": 131072, "mlp_bias": false,
      "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
      "pretraining_tp": 1, "rms_norm_eps": 1e-05,
      "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"},
      "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0",
      "use_cache": true, "vocab_size": 40})");
    make_decoder_tensors(c, {40, 16, 4, 2, 8, 24, 2, false, false, false, false, false, false}, seed);
    return c;
}

// Mistral-7B-v0.1's config.json, scaled down: GQA 4 : 2, every layer sliding (its 4096 → 3, so
// that a short sentence's keys leave the window), untied, BF16.
inline FamilyCheckpoint mistral_checkpoint(std::uint64_t seed = 9) {
    FamilyCheckpoint c{"mistral", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
      "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24, "max_position_embeddings": 32768,
      "model_type": "mistral", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
      "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 3, "tie_word_embeddings": false,
      "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 40})");
    make_decoder_tensors(c, {40, 16, 4, 2, 4, 24, 2, false, false, false, false, false, false}, seed);
    return c;
}

// A diffllama config.json (DiffLlamaConfig's keys, as transformers writes them), scaled down: 4 heads
// in 2 pairs on 2 K/V heads, biases on the projections, untied, F32, three layers (λ_init 0.2, 0.356, 0.471).
inline FamilyCheckpoint diffllama_checkpoint(std::uint64_t seed = 33) {
    FamilyCheckpoint c{"diffllama", {}, {}, safetensors::Dtype::F32, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["DiffLlamaForCausalLM"], "attention_bias": true, "attention_dropout": 0.0, "bos_token_id": 1,
      "eos_token_id": 2, "head_dim": 4, "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02,
      "intermediate_size": 24, "lambda_std_dev": 0.1, "max_position_embeddings": 2048, "model_type": "diffllama",
      "num_attention_heads": 4, "num_hidden_layers": 3, "num_key_value_heads": 2, "pad_token_id": null,
      "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0, "tie_word_embeddings": false,
      "torch_dtype": "float32", "transformers_version": "4.48.0", "use_cache": true, "vocab_size": 40})");
    DecoderShape shape{40, 16, 4, 2, 4, 24, 3};
    shape.qkv_bias = shape.o_bias = true;
    shape.tied = false;
    make_decoder_tensors(c, shape, seed);
    TensorMaker make(c, seed + 100);
    for (int l = 0; l < 3; ++l)  // DiffLlamaAttention's λ vectors: normal(0, lambda_std_dev), here wider so λ moves
        for (const char* name : {"lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"})
            make("model.layers." + std::to_string(l) + ".self_attn." + name, {4}, 0.6);
    return c;
}

// A ministral config.json (MinistralConfig's keys, as transformers 4.57 writes them), scaled
// down: layer 1 slides (window 3), layer 2 is global, GQA 4 : 2, untied, BF16.
inline FamilyCheckpoint ministral_checkpoint(std::uint64_t seed = 31) {
    FamilyCheckpoint c{"ministral", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["MinistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
      "head_dim": 4, "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24,
      "layer_types": ["sliding_attention", "full_attention"], "max_position_embeddings": 131072,
      "model_type": "ministral", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
      "rms_norm_eps": 1e-05, "rope_theta": 100000000.0, "sliding_window": 3, "tie_word_embeddings": false,
      "torch_dtype": "bfloat16", "transformers_version": "4.57.0", "use_cache": true, "vocab_size": 40})");
    make_decoder_tensors(c, {40, 16, 4, 2, 4, 24, 2, false, false, false, false, false, false}, seed);
    return c;
}

// Qwen2.5-0.5B's config.json, scaled down: biases on Q, K, V; a sliding_window that
// use_sliding_window false turns off; tied; F16.
inline FamilyCheckpoint qwen2_checkpoint(std::uint64_t seed = 3) {
    FamilyCheckpoint c{"qwen2", {}, {}, safetensors::Dtype::F16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151643,
      "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24,
      "max_position_embeddings": 32768, "max_window_layers": 1, "model_type": "qwen2", "num_attention_heads": 4,
      "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
      "sliding_window": 3, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.43.1",
      "use_cache": true, "use_sliding_window": false, "vocab_size": 40})");
    make_decoder_tensors(c, {40, 16, 4, 2, 4, 24, 2, true}, seed);
    return c;
}

// Qwen3-0.6B's config.json, scaled down: QK-norm, head_dim 8 with d/H = 4, tied, BF16.
inline FamilyCheckpoint qwen3_checkpoint(std::uint64_t seed = 4) {
    FamilyCheckpoint c{"qwen3", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 151643,
      "eos_token_id": 151645, "head_dim": 8, "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02,
      "intermediate_size": 24, "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
      "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
      "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
      "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
      "vocab_size": 40})");
    DecoderShape s{40, 16, 4, 2, 8, 24, 2};
    s.qk_norm = true;
    make_decoder_tensors(c, s, seed);
    return c;
}

// gemma-2-2b's config.json, scaled down: sandwich norms, (1 + w), soft-caps small enough to
// bite (1.5 on the scores, 2 on the logits), a window of 3 on layer 0, tied, F32.
inline FamilyCheckpoint gemma2_checkpoint(std::uint64_t seed = 5) {
    FamilyCheckpoint c{"gemma2", {}, {}, safetensors::Dtype::F32, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Gemma2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "attn_logit_softcapping": 1.5, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 107],
      "final_logit_softcapping": 2.0, "head_dim": 8, "hidden_act": "gelu_pytorch_tanh",
      "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 32,
      "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 4, "num_hidden_layers": 2,
      "num_key_value_heads": 2, "pad_token_id": 0, "query_pre_attn_scalar": 8, "rms_norm_eps": 1e-06,
      "rope_theta": 10000.0, "sliding_window": 3, "torch_dtype": "float32", "transformers_version": "4.42.4",
      "use_cache": true, "vocab_size": 40})");
    DecoderShape s{40, 16, 4, 2, 8, 32, 2};
    s.gemma = true;
    make_decoder_tensors(c, s, seed);
    return c;
}

// gemma-3-1b's config.json, scaled down: one K/V head, QK-norm, layers 0, 1 sliding (window 3,
// RoPE base 10000) and layer 2 global (base 10⁶), tied, BF16.
inline FamilyCheckpoint gemma3_checkpoint(std::uint64_t seed = 6) {
    FamilyCheckpoint c{"gemma3_text", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106],
      "final_logit_softcapping": null, "head_dim": 8, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 16,
      "initializer_range": 0.02, "intermediate_size": 32, "max_position_embeddings": 32768, "model_type": "gemma3_text",
      "num_attention_heads": 2, "num_hidden_layers": 3, "num_key_value_heads": 1, "pad_token_id": 0,
      "query_pre_attn_scalar": 8, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000, "rope_scaling": null,
      "rope_theta": 1000000, "sliding_window": 3, "sliding_window_pattern": 3, "torch_dtype": "bfloat16",
      "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 40})");
    DecoderShape s{40, 16, 2, 1, 8, 32, 3};
    s.gemma = true;
    s.qk_norm = true;
    make_decoder_tensors(c, s, seed);
    return c;
}

// OLMo-2-0425-1B's config.json, scaled down: no norm before attention or the MLP, one after
// each; QK-norm over every head's q (16 numbers) and every K/V head's k (8); GQA 4 : 2
// (OLMo 2 32B's grouping; the 1B has none), untied, F32.
inline FamilyCheckpoint olmo2_checkpoint(std::uint64_t seed = 10) {
    FamilyCheckpoint c{"olmo2", {}, {}, safetensors::Dtype::F32, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Olmo2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "eos_token_id": 100257,
      "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24,
      "max_position_embeddings": 4096, "model_type": "olmo2", "num_attention_heads": 4, "num_hidden_layers": 2,
      "num_key_value_heads": 2, "pad_token_id": 100277, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 500000,
      "tie_word_embeddings": false, "torch_dtype": "float32", "transformers_version": "4.48.0", "use_cache": true,
      "vocab_size": 40})");
    DecoderShape s{40, 16, 4, 2, 4, 24, 2};
    s.qk_norm = true;
    s.tied = false;
    s.olmo2 = true;
    make_decoder_tensors(c, s, seed);
    return c;
}

// Phi-4-mini-instruct's config.json, scaled down: Q, K, V fused in qkv_proj and gate, up in
// gate_up_proj; partial_rotary_factor 0.75 (6 of head_dim 8 turned); LongRoPE with 3 short and 3
// long factors, original_max_position_embeddings 4 of 128 (its 4096 of 131072: s = 32, the
// attention factor √(1 + ln 32 / ln 4)), so that a text of 5 tokens or more takes the long
// factors; every layer sliding with a window of 5 (Phi-3-mini's 2047); GQA 3 : 1; tied; BF16.
inline FamilyCheckpoint phi3_checkpoint(std::uint64_t seed = 11) {
    FamilyCheckpoint c{"phi3", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Phi3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "auto_map": {"AutoConfig": "configuration_phi3.Phi3Config", "AutoModelForCausalLM": "modeling_phi3.Phi3ForCausalLM"},
      "bos_token_id": 199999, "embd_pdrop": 0.0, "eos_token_id": 199999, "full_attn_mod": 1, "hidden_act": "silu",
      "hidden_size": 24, "initializer_range": 0.02, "intermediate_size": 32, "interpolate_factor": 1, "lm_head_bias": false,
      "max_position_embeddings": 128, "mlp_bias": false, "model_type": "phi3", "num_attention_heads": 3,
      "num_hidden_layers": 2, "num_key_value_heads": 1, "original_max_position_embeddings": 4, "pad_token_id": 199999,
      "partial_rotary_factor": 0.75, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
      "rope_scaling": {"long_factor": [1.1, 4.0, 16.0], "short_factor": [1.0, 1.25, 1.5], "type": "longrope"},
      "rope_theta": 10000.0, "sliding_window": 5, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
      "transformers_version": "4.45.0", "use_cache": true, "vocab_size": 40})");
    DecoderShape s{40, 24, 3, 1, 8, 32, 2};
    s.phi3 = true;
    make_decoder_tensors(c, s, seed);
    return c;
}

// SmolLM3-3B's config.json, scaled down: 4 layers of which the fourth turns neither q nor k
// (no_rope_layers [1, 1, 1, 0], its every fourth of 36), GQA 4 : 2 (its 16 : 4), RoPE base 5·10⁶,
// tied, BF16.
inline FamilyCheckpoint smollm3_checkpoint(std::uint64_t seed = 12) {
    FamilyCheckpoint c{"smollm3", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["SmolLM3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": null,
      "eos_token_id": 128012, "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24,
      "layer_types": ["full_attention", "full_attention", "full_attention", "full_attention"], "max_position_embeddings": 65536,
      "max_window_layers": 28, "mlp_bias": false, "model_type": "smollm3", "no_rope_layer_interval": 4,
      "no_rope_layers": [1, 1, 1, 0], "num_attention_heads": 4, "num_hidden_layers": 4, "num_key_value_heads": 2,
      "pad_token_id": 128004, "pretraining_tp": 2, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 5000000.0,
      "sliding_window": null, "torch_dtype": "bfloat16", "transformers_version": "4.54.0.dev0", "use_cache": false,
      "use_sliding_window": false, "vocab_size": 40})");
    DecoderShape s{40, 16, 4, 2, 4, 24, 4};
    make_decoder_tensors(c, s, seed);
    return c;
}

// Qwen3-30B-A3B's config.json, scaled down: 8 experts of which each token keeps 3, renormalised
// (norm_topk_prob; its 128 and 8), moe_intermediate_size 12; layer 1 of 3 dense (mlp_only_layers,
// intermediate_size 24); QK-norm, head_dim 8 with d/H = 4, GQA 4 : 2, untied, BF16.
inline FamilyCheckpoint qwen3_moe_checkpoint(std::uint64_t seed = 13) {
    FamilyCheckpoint c{"qwen3_moe", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 151643,
      "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 8, "hidden_act": "silu", "hidden_size": 16,
      "initializer_range": 0.02, "intermediate_size": 24, "max_position_embeddings": 40960, "max_window_layers": 48,
      "mlp_only_layers": [1], "model_type": "qwen3_moe", "moe_intermediate_size": 12, "norm_topk_prob": true,
      "num_attention_heads": 4, "num_experts": 8, "num_experts_per_tok": 3, "num_hidden_layers": 3, "num_key_value_heads": 2,
      "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0,
      "router_aux_loss_coef": 0.001, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
      "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 40})");
    DecoderShape s{40, 16, 4, 2, 8, 24, 3};
    s.qk_norm = true;
    s.tied = false;
    s.experts = 8;
    s.moe_d_ff = 12;
    s.dense_layer = 1;
    make_decoder_tensors(c, s, seed);
    return c;
}

// Qwen1.5-MoE-A2.7B's config.json, scaled down: 6 experts (its 60) of which each token keeps 2
// (its 4), not renormalised, moe_intermediate_size 12; beside them a shared expert of 20 (its
// 5632) with its gate; layer 1 of 3 dense (mlp_only_layers, intermediate_size 24); biases on q, k
// and v (qkv_bias's default); 4 heads, no GQA (its 16 : 16); untied, BF16.
inline FamilyCheckpoint qwen2_moe_checkpoint(std::uint64_t seed = 16) {
    FamilyCheckpoint c{"qwen2_moe", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1,
      "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24,
      "max_position_embeddings": 8192, "max_window_layers": 21, "mlp_only_layers": [1], "model_type": "qwen2_moe",
      "moe_intermediate_size": 12, "norm_topk_prob": false, "num_attention_heads": 4, "num_experts": 6, "num_experts_per_tok": 2,
      "num_hidden_layers": 3, "num_key_value_heads": 4, "output_router_logits": false, "rms_norm_eps": 1e-06,
      "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 20, "sliding_window": 32768,
      "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.39.0.dev0", "use_cache": true,
      "use_sliding_window": false, "vocab_size": 40})");
    DecoderShape s{40, 16, 4, 4, 4, 24, 3};
    s.qkv_bias = true;
    s.tied = false;
    s.experts = 6;
    s.moe_d_ff = 12;
    s.dense_layer = 1;
    s.shared_d_ff = 20;
    make_decoder_tensors(c, s, seed);
    return c;
}

// Mixtral-8x7B-v0.1's config.json, scaled down: 4 experts in every layer (its 8), 2 kept and
// renormalised, intermediate_size 12 each; GQA 4 : 2; untied, BF16.
inline FamilyCheckpoint mixtral_checkpoint(std::uint64_t seed = 14) {
    FamilyCheckpoint c{"mixtral", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
      "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 12,
      "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 4, "num_experts_per_tok": 2,
      "num_hidden_layers": 2, "num_key_value_heads": 2, "num_local_experts": 4, "output_router_logits": false,
      "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02, "router_jitter_noise": 0.0,
      "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.36.0.dev0",
      "use_cache": true, "vocab_size": 40})");
    DecoderShape s{40, 16, 4, 2, 4, 12, 2};
    s.tied = false;
    s.experts = 4;
    s.moe_d_ff = 12;
    s.mixtral = true;
    make_decoder_tensors(c, s, seed);
    return c;
}

// gpt-oss-20b's config.json (its BF16 copy: the experts dequantised, no quantization_config),
// scaled down: layer 0 sliding (window 3, its 128), layer 1 full; a learned sink per head; biases on
// q, k, v, o; YaRN with its own factor 32 and original length 4096, so that head_dim 8's four pairs
// fall on both sides of the ramp; 4 experts (its 32) of which 2 are kept (its 4), each of width 12,
// gate and up interleaved in one gate_up_proj; swiglu_limit 0.8 (its 7.0, scaled with the smaller
// activations here so that the clamp bites); GQA 4 : 2 with head_dim 8 ≠ d/H; untied, BF16.
// d_model 16 and d_ff 12 unless given (the MXFP4 checkpoint below needs multiples of 32).
inline FamilyCheckpoint gpt_oss_checkpoint(std::uint64_t seed = 15, int d_model = 16, int d_ff = 12) {
    FamilyCheckpoint c{"gpt_oss", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0, "eos_token_id": 200002,
      "experts_per_token": 2, "head_dim": 8, "hidden_act": "silu", "hidden_size": 16, "initial_context_length": 4096,
      "initializer_range": 0.02, "intermediate_size": 12, "layer_types": ["sliding_attention", "full_attention"],
      "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 4, "num_experts_per_tok": 2,
      "num_hidden_layers": 2, "num_key_value_heads": 2, "num_local_experts": 4, "output_router_logits": false,
      "pad_token_id": 199999, "rms_norm_eps": 1e-05,
      "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                       "rope_type": "yarn", "truncate": false},
      "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 3, "swiglu_limit": 0.8,
      "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.55.0.dev0", "use_cache": true,
      "vocab_size": 40})");
    c.config["hidden_size"] = d_model;
    c.config["intermediate_size"] = d_ff;
    DecoderShape s{40, d_model, 4, 2, 8, d_ff, 2};
    s.qkv_bias = s.o_bias = true;
    s.tied = false;
    s.experts = 4;
    s.moe_d_ff = d_ff;
    s.gpt_oss = true;
    make_decoder_tensors(c, s, seed);
    return c;
}

// DeepSeek-V3's config.json, scaled down: 4 heads of qk_nope_head_dim 4 + qk_rope_head_dim 4 (its 128 +
// 64) and v_head_dim 3 (its 128) from a latent of kv_lora_rank 8 (its 512); queries through q_lora_rank
// 12 (its 1536); rope_interleave; YaRN ×4 on 64 positions with mscale and mscale_all_dim 1 (its ×40 on
// 4096): cos and sin × 1, the scale × mscale(4, 1)², and the rotary key's two pairs on both sides of the
// ramp; layer 0 dense (first_k_dense_replace 1, its 3, intermediate_size 24); layers 1 and 2 a mixture
// of 8 experts (its 256) of width 6 in n_group 4 (its 8), topk_group 2 (its 4), 2 per token (its 8),
// routed_scaling_factor 2.5, norm_topk_prob, a correction bias, 2 shared experts (one MLP of 12);
// the multi-token prediction layer DeepSeek-V3 publishes as model.layers.61; untied, BF16.
inline FamilyCheckpoint deepseek_v3_checkpoint(std::uint64_t seed = 17) {
    FamilyCheckpoint c{"deepseek_v3", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config", "AutoModel": "modeling_deepseek.DeepseekV3Model"},
      "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1, "first_k_dense_replace": 1, "hidden_act": "silu",
      "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24, "kv_lora_rank": 8, "max_position_embeddings": 256,
      "model_type": "deepseek_v3", "moe_intermediate_size": 6, "moe_layer_freq": 1, "n_group": 4, "n_routed_experts": 8,
      "n_shared_experts": 2, "norm_topk_prob": true, "num_attention_heads": 4, "num_experts_per_tok": 2, "num_hidden_layers": 3,
      "num_key_value_heads": 4, "num_nextn_predict_layers": 1, "q_lora_rank": 12, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4,
      "rms_norm_eps": 1e-06,
      "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 4.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                       "original_max_position_embeddings": 64, "type": "yarn"},
      "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": true, "tie_word_embeddings": false,
      "topk_group": 2, "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "transformers_version": "4.33.1", "use_cache": true,
      "v_head_dim": 3, "vocab_size": 40})");
    TensorMaker make(c, seed);
    const std::int64_t d = 16, H = 4, nope = 4, rope = 4, v = 3, r_q = 12, r_kv = 8, ff = 24, experts = 8, eff = 6, shared = 12;
    make("model.embed_tokens.weight", {40, d}, 1.0);
    for (int l = 0; l < 3; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        make(p + "input_layernorm.weight", {d}, 0.2, 1.0);
        make(p + "self_attn.q_a_proj.weight", {r_q, d}, 0.6);
        make(p + "self_attn.q_a_layernorm.weight", {r_q}, 0.2, 1.0);
        make(p + "self_attn.q_b_proj.weight", {H * (nope + rope), r_q}, 0.6);
        make(p + "self_attn.kv_a_proj_with_mqa.weight", {r_kv + rope, d}, 0.6);
        make(p + "self_attn.kv_a_layernorm.weight", {r_kv}, 0.2, 1.0);
        make(p + "self_attn.kv_b_proj.weight", {H * (nope + v), r_kv}, 0.6);
        make(p + "self_attn.o_proj.weight", {d, H * v}, 0.3);
        make(p + "post_attention_layernorm.weight", {d}, 0.2, 1.0);
        if (l == 0) {
            make(p + "mlp.gate_proj.weight", {ff, d}, 0.4);
            make(p + "mlp.up_proj.weight", {ff, d}, 0.4);
            make(p + "mlp.down_proj.weight", {d, ff}, 0.3);
            continue;
        }
        make(p + "mlp.gate.weight", {experts, d}, 0.8);
        make(p + "mlp.gate.e_score_correction_bias", {experts}, 0.1);
        for (int e = 0; e < experts; ++e) {
            const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
            make(x + "gate_proj.weight", {eff, d}, 0.4);
            make(x + "up_proj.weight", {eff, d}, 0.4);
            make(x + "down_proj.weight", {d, eff}, 0.3);
        }
        make(p + "mlp.shared_experts.gate_proj.weight", {shared, d}, 0.4);
        make(p + "mlp.shared_experts.up_proj.weight", {shared, d}, 0.4);
        make(p + "mlp.shared_experts.down_proj.weight", {d, shared}, 0.3);
    }
    make("model.layers.61.eh_proj.weight", {d, 2 * d}, 0.3);  // the multi-token prediction layer, as published
    make("model.layers.61.enorm.weight", {d}, 0.2, 1.0);
    make("model.norm.weight", {d}, 0.2, 1.0);
    make("lm_head.weight", {40, d}, 0.5);
    return c;
}

// Llama 4 Scout's text config (Llama4TextConfig), scaled down: 4 layers, the fourth NoPE and global
// (no_rope_layers by its interval 4), the others chunked by attention_chunk_size 3 (its 8192) with a
// weightless QK-norm; the query temperature on the NoPE layer with floor_scale 2 (its 8192) and
// attn_scale 0.5 (its 0.1), so that seven tokens see τ change; attn_temperature_tuning written 4, as
// Scout's config writes it; interleaved RoPE with llama3 scaling ×8 on 16 positions (its ×16 on 8192);
// layers 1 and 3 a mixture (interleave_moe_layer_step 2, Maverick's) of 4 experts (its 16) of width 6,
// 2 per token (its 1) under Llama4Router, the experts fused as published, an ungated shared expert of
// the same width; layers 0 and 2 a dense MLP of intermediate_size_mlp 20; untied, BF16.
inline FamilyCheckpoint llama4_checkpoint(std::uint64_t seed = 18) {
    FamilyCheckpoint c{"llama4_text", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Llama4ForCausalLM"], "attention_bias": false, "attention_chunk_size": 3, "attention_dropout": 0.0,
      "attn_scale": 0.5, "attn_temperature_tuning": 4, "bos_token_id": 0, "cache_implementation": "hybrid", "eos_token_id": [1, 2],
      "floor_scale": 2, "for_llm_compressor": false, "head_dim": 4, "hidden_act": "silu", "hidden_size": 16,
      "initializer_range": 0.02, "interleave_moe_layer_step": 2, "intermediate_size": 6, "intermediate_size_mlp": 20,
      "max_position_embeddings": 1024, "model_type": "llama4_text", "moe_layers": [1, 3], "no_rope_layers": [1, 1, 1, 0],
      "num_attention_heads": 4, "num_experts_per_tok": 2, "num_hidden_layers": 4, "num_key_value_heads": 2,
      "num_local_experts": 4, "output_router_logits": false, "pad_token_id": 3, "rms_norm_eps": 1e-05,
      "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 16,
                       "rope_type": "llama3"},
      "rope_theta": 500000.0, "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0, "tie_word_embeddings": false,
      "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_qk_norm": true, "vocab_size": 40})");
    TensorMaker make(c, seed);
    const std::int64_t d = 16, H = 4, kv = 2, hd = 4, ff = 20, experts = 4, eff = 6;
    make("model.embed_tokens.weight", {40, d}, 1.0);
    for (int l = 0; l < 4; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        make(p + "input_layernorm.weight", {d}, 0.2, 1.0);
        make(p + "self_attn.q_proj.weight", {H * hd, d}, 0.6);
        make(p + "self_attn.k_proj.weight", {kv * hd, d}, 0.6);
        make(p + "self_attn.v_proj.weight", {kv * hd, d}, 0.4);
        make(p + "self_attn.o_proj.weight", {d, H * hd}, 0.3);
        make(p + "post_attention_layernorm.weight", {d}, 0.2, 1.0);
        const std::string f = p + "feed_forward.";
        if (l % 2 == 0) {
            make(f + "gate_proj.weight", {ff, d}, 0.4);
            make(f + "up_proj.weight", {ff, d}, 0.4);
            make(f + "down_proj.weight", {d, ff}, 0.3);
            continue;
        }
        make(f + "router.weight", {experts, d}, 0.8);
        make(f + "experts.gate_up_proj", {experts, d, 2 * eff}, 0.4);
        make(f + "experts.down_proj", {experts, eff, d}, 0.3);
        make(f + "shared_expert.gate_proj.weight", {eff, d}, 0.4);
        make(f + "shared_expert.up_proj.weight", {eff, d}, 0.4);
        make(f + "shared_expert.down_proj.weight", {d, eff}, 0.3);
    }
    make("model.norm.weight", {d}, 0.2, 1.0);
    make("lm_head.weight", {40, d}, 0.5);
    return c;
}

// Gemma 3 as Google publishes its 4B, 12B and 27B (Gemma3ForConditionalGeneration, gemma-3-4b-it's
// folder scaled down): gemma3_checkpoint's text model as text_config — with final_logit_softcapping
// 30, which the multimodal model never applies — its tensors under language_model.model., its head
// tied, beside a vision tower and a projector (read past). Its passes are the text model's.
inline FamilyCheckpoint gemma3_multimodal_checkpoint() {
    const FamilyCheckpoint text = gemma3_checkpoint();
    FamilyCheckpoint c{"gemma3", {}, {}, text.dtype, false};
    nlohmann::json inner = text.config;
    for (const char* key : {"architectures", "torch_dtype", "transformers_version"}) inner.erase(key);
    inner["final_logit_softcapping"] = 30.0;
    c.config = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"boi_token_index", 35}, {"eoi_token_index", 36},
                {"eos_token_id", {1, 106}}, {"image_token_index", 37}, {"initializer_range", 0.02}, {"mm_tokens_per_image", 4},
                {"model_type", "gemma3"}, {"text_config", inner}, {"torch_dtype", "bfloat16"}, {"transformers_version", "4.50.0.dev0"},
                {"vision_config", {{"model_type", "siglip_vision_model"}, {"hidden_size", 8}, {"num_hidden_layers", 1}, {"patch_size", 14}}}};
    for (const auto& [name, tensor] : text.tensors) c.tensors["language_model." + name] = tensor;
    c.tensors["vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight"] = HfTensor{{4, 8}, std::vector<float>(32, 0.25f)};
    c.tensors["multi_modal_projector.mm_input_projection_weight"] = HfTensor{{8, 16}, std::vector<float>(128, -0.5f)};
    return c;
}

// Llama 4 as Meta publishes it (Llama4ForConditionalGeneration, Llama-4-Scout's folder scaled
// down): llama4_checkpoint's text model as text_config, its tensors under language_model.model.
// and its head language_model.lm_head.weight, beside a vision tower and a projector (read past)
// and the image tokens' ids. The same weights: its passes are the text model's, number for number.
inline FamilyCheckpoint llama4_multimodal_checkpoint() {
    const FamilyCheckpoint text = llama4_checkpoint();
    FamilyCheckpoint c{"llama4", {}, {}, text.dtype, false};
    nlohmann::json inner = text.config;
    for (const char* key : {"architectures", "torch_dtype", "transformers_version"}) inner.erase(key);
    c.config = {{"architectures", {"Llama4ForConditionalGeneration"}}, {"boi_token_index", 35}, {"eoi_token_index", 36},
                {"image_token_index", 37}, {"model_type", "llama4"}, {"text_config", inner}, {"tie_word_embeddings", false},
                {"torch_dtype", "bfloat16"}, {"transformers_version", "4.51.0"},
                {"vision_config", {{"model_type", "llama4_vision_model"}, {"hidden_size", 8}, {"num_hidden_layers", 1}, {"patch_size", 14}}}};
    for (const auto& [name, tensor] : text.tensors)
        c.tensors[name == "lm_head.weight" ? "language_model.lm_head.weight" : "language_model." + name] = tensor;
    c.tensors["vision_model.model.layers.0.mlp.fc1.weight"] = HfTensor{{4, 8}, std::vector<float>(32, 0.25f)};
    c.tensors["multi_modal_projector.linear_1.weight"] = HfTensor{{16, 8}, std::vector<float>(128, -0.5f)};
    return c;
}

// [SECTION] gpt-oss as OpenAI publishes it: the experts in MXFP4

// A stored tensor of any dtype, its bytes as the file holds them.
struct RawTensor {
    std::string dtype;                 // "U8", "BF16", …
    std::vector<std::int64_t> shape;
    std::vector<unsigned char> bytes;
};

// A safetensors file of raw tensors: the header (its length a little-endian u64, padded with
// spaces to a multiple of 8), then each tensor's bytes in name order.
inline void write_raw_safetensors(const std::string& path, const std::map<std::string, RawTensor>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    std::uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
        header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    std::string text = header.dump();
    while (text.size() % 8 != 0) text += ' ';
    std::ofstream out(path, std::ios::binary);
    for (int b = 0; b < 8; ++b) out.put(static_cast<char>((static_cast<std::uint64_t>(text.size()) >> (8 * b)) & 0xFF));
    out << text;
    for (const auto& [name, t] : tensors) out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
}

// E2M1 (sign, two exponent bits, one mantissa bit), as transformers' FP4_VALUES lists them.
inline double e2m1(unsigned nibble) {
    static const double values[16] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};
    return values[nibble & 0x0F];
}

// gpt-oss-20b as released: the same model twice. `stored` is the folder's tensors as OpenAI
// ships them — each expert projection as MXFP4 blocks (E × out × in/32 × 16 bytes, two numbers
// a byte, the low nibble first) and scales (E × out × in/32, 2^(s − 127) each), the rest BF16 —
// and `dequantised` is the same model as transformers' convert_moe_packed_tensors widens it:
// gate_up_proj (E × d × 2·d_ff) and down_proj (E × d_ff × d), the transposes of the stored
// (out × in), written here from the nibbles by the formula, every value exact in BF16. Sizes are
// multiples of 32 (d 32, d_ff 32), scales 2^−4 … 2^−2, and swiglu_limit 7 as released.
struct Mxfp4Checkpoint {
    FamilyCheckpoint dequantised;
    nlohmann::json config;                    // with its quantization_config
    std::map<std::string, RawTensor> stored;
};
inline Mxfp4Checkpoint gpt_oss_mxfp4_checkpoint(std::uint64_t seed = 16) {
    Mxfp4Checkpoint m;
    FamilyCheckpoint& c = m.dequantised;
    c = gpt_oss_checkpoint(seed, 32, 32);
    c.config["swiglu_limit"] = 7.0;
    m.config = c.config;
    m.config["quantization_config"] = {{"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}},
                                       {"quant_method", "mxfp4"}};
    std::mt19937_64 rng(seed + 1000);
    std::uniform_int_distribution<int> byte(0, 255), exponent(127 - 4, 127 - 2);
    const std::int64_t E = 4, d = 32, ff = 32;
    // one projection: stored (E × out × in) as blocks and scales; dequantised as (E × in × out)
    auto quantised = [&](const std::string& base, std::int64_t out, std::int64_t in) {
        RawTensor blocks{"U8", {E, out, in / 32, 16}, std::vector<unsigned char>(static_cast<std::size_t>(E * out * in / 2))};
        RawTensor scales{"U8", {E, out, in / 32}, std::vector<unsigned char>(static_cast<std::size_t>(E * out * in / 32))};
        for (unsigned char& b : blocks.bytes) b = static_cast<unsigned char>(byte(rng));
        for (unsigned char& s : scales.bytes) s = static_cast<unsigned char>(exponent(rng));
        HfTensor widened{{E, in, out}, std::vector<float>(static_cast<std::size_t>(E * in * out))};
        for (std::int64_t e = 0; e < E; ++e)
            for (std::int64_t o = 0; o < out; ++o)
                for (std::int64_t i = 0; i < in; ++i) {
                    const std::size_t at = static_cast<std::size_t>((e * out + o) * in + i);  // the element's place in the stored order
                    const unsigned nibble = (at % 2 == 0) ? blocks.bytes[at / 2] & 0x0F : blocks.bytes[at / 2] >> 4;
                    widened.values[static_cast<std::size_t>((e * in + i) * out + o)] =
                        static_cast<float>(std::ldexp(e2m1(nibble), static_cast<int>(scales.bytes[at / 32]) - 127));
                }
        m.stored[base + "_blocks"] = std::move(blocks);
        m.stored[base + "_scales"] = std::move(scales);
        c.tensors[base] = std::move(widened);
    };
    for (int l = 0; l < 2; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".mlp.experts.";
        quantised(p + "gate_up_proj", 2 * ff, d);
        quantised(p + "down_proj", d, ff);
    }
    for (const auto& [name, t] : c.tensors) {
        if (m.stored.count(name + "_blocks")) continue;
        RawTensor bf16{"BF16", t.shape, std::vector<unsigned char>(2 * t.values.size())};
        for (std::size_t i = 0; i < t.values.size(); ++i) {
            const std::uint16_t bits = safetensors::f32_to_bf16(t.values[i]);
            bf16.bytes[2 * i] = static_cast<unsigned char>(bits & 0xFF);
            bf16.bytes[2 * i + 1] = static_cast<unsigned char>(bits >> 8);
        }
        m.stored[name] = std::move(bf16);
    }
    return m;
}

inline void write_mxfp4_checkpoint(const std::string& folder, const Mxfp4Checkpoint& m) {
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    std::ofstream(std::filesystem::path(folder) / "config.json") << m.config.dump(2) << "\n";
    write_raw_safetensors((std::filesystem::path(folder) / "model.safetensors").string(), m.stored);
}

// Gemma 3 as published: its tokenizer.json holds one token more than the text model's
// embedding (262,145 against 262,144; the last, <image_soft_token>, is the multimodal
// model's). Here the byte-level tokenizer at `tokenizer_json` (402 tokens, ids 0 … 401) with
// <image_soft_token> added as id 402, and a Gemma 3 checkpoint of vocab_size 402.
inline void write_gemma3_with_image_token(const std::string& folder, const std::string& tokenizer_json) {
    FamilyCheckpoint c = gemma3_checkpoint();
    c.config["vocab_size"] = 402;
    TensorMaker make(c, 99);
    make("model.embed_tokens.weight", {402, 16}, 1.0);
    write_family_checkpoint(folder, c);
    std::ifstream in(tokenizer_json);
    nlohmann::json tokenizer = nlohmann::json::parse(in);
    tokenizer["added_tokens"].push_back({{"id", 402}, {"content", "<image_soft_token>"}, {"single_word", false}, {"lstrip", false},
                                         {"rstrip", false}, {"normalized", false}, {"special", true}});
    std::ofstream(std::filesystem::path(folder) / "tokenizer.json") << tokenizer.dump();
}

// A Qwen3-Next or Qwen3.5 layer's norms ((1 + w): around 0) and its attention, at prefix p: a Gated
// DeltaNet layer (`linear`), its projections fused as Qwen3-Next stores them (in_proj_qkvz, in_proj_ba) or
// apart as Qwen3.5 does (`fused` false: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a), or a gated full layer
// (q_proj twice as wide: each head's query and gate), with QK-norm.
struct GatedDeltaShape {
    std::int64_t d, H, kv, hd;      // d_model; the full layer's heads, K/V heads, head_dim
    std::int64_t hk, dk, hv, dv, K; // the linear layer's key heads and dim, value heads and dim, conv taps
};
inline void make_gated_delta_layer(TensorMaker& make, const std::string& p, bool linear, bool fused, const GatedDeltaShape& s) {
    const std::int64_t d = s.d, channels = 2 * s.hk * s.dk + s.hv * s.dv;
    make(p + "input_layernorm.weight", {d}, 0.2);
    make(p + "post_attention_layernorm.weight", {d}, 0.2);
    if (linear) {
        const std::string a = p + "linear_attn.";
        if (fused) {
            make(a + "in_proj_qkvz.weight", {channels + s.hv * s.dv, d}, 0.6);
            make(a + "in_proj_ba.weight", {2 * s.hv, d}, 0.6);
        } else {
            make(a + "in_proj_qkv.weight", {channels, d}, 0.6);
            make(a + "in_proj_z.weight", {s.hv * s.dv, d}, 0.6);
            make(a + "in_proj_b.weight", {s.hv, d}, 0.6);
            make(a + "in_proj_a.weight", {s.hv, d}, 0.6);
        }
        make(a + "conv1d.weight", {channels, 1, s.K}, 0.6);
        make(a + "dt_bias", {s.hv}, 0.3, 1.0);
        make(a + "A_log", {s.hv}, 0.5, 0.0);
        make(a + "norm.weight", {s.dv}, 0.2, 1.0);
        make(a + "out_proj.weight", {d, s.hv * s.dv}, 0.4);
        return;
    }
    make(p + "self_attn.q_proj.weight", {2 * s.H * s.hd, d}, 0.6);
    make(p + "self_attn.k_proj.weight", {s.kv * s.hd, d}, 0.6);
    make(p + "self_attn.v_proj.weight", {s.kv * s.hd, d}, 0.4);
    make(p + "self_attn.o_proj.weight", {d, s.H * s.hd}, 0.3);
    make(p + "self_attn.q_norm.weight", {s.hd}, 0.2);
    make(p + "self_attn.k_norm.weight", {s.hd}, 0.2);
}

// Qwen3-Next's and Qwen3.5-MoE's mixture at m ("….mlp."): the router, each expert's gate, up and down
// apart, the shared expert and its gate.
inline void make_gated_shared_mixture(TensorMaker& make, const std::string& m, std::int64_t d, std::int64_t experts, std::int64_t eff,
                                      std::int64_t shared) {
    make(m + "gate.weight", {experts, d}, 0.8);
    for (std::int64_t e = 0; e < experts; ++e) {
        const std::string x = m + "experts." + std::to_string(e) + ".";
        make(x + "gate_proj.weight", {eff, d}, 0.4);
        make(x + "up_proj.weight", {eff, d}, 0.4);
        make(x + "down_proj.weight", {d, eff}, 0.3);
    }
    make(m + "shared_expert.gate_proj.weight", {shared, d}, 0.4);
    make(m + "shared_expert.up_proj.weight", {shared, d}, 0.4);
    make(m + "shared_expert.down_proj.weight", {d, shared}, 0.3);
    make(m + "shared_expert_gate.weight", {1, d}, 1.0);
}

// Qwen3-Next-80B-A3B-Instruct's config.json, scaled down: 4 layers, three Gated DeltaNet layers to one
// full layer (full_attention_interval 4); the linear layers 2 key heads of 4 read by 4 value heads of 4
// (its 16 of 128 by 32 of 128), a convolution of 4 taps; the full layer 4 heads of 8 on 2 K/V heads
// (its 16 : 2 of 256), the output gate, (1 + w) QK-norm, partial RoPE 0.25 (2 of 8 dims turned); a mixture
// of 6 experts (its 512) of 12, 2 kept (its 10), renormalised, beside a gated shared expert of 20; layer 1
// dense (mlp_only_layers) of intermediate_size 24; the multi-token prediction module (mtp.*) beside them;
// untied, BF16.
inline FamilyCheckpoint qwen3_next_checkpoint(std::uint64_t seed = 19) {
    FamilyCheckpoint c{"qwen3_next", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Qwen3NextForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 151643,
      "decoder_sparse_step": 1, "eos_token_id": 151645, "full_attention_interval": 4, "head_dim": 8, "hidden_act": "silu",
      "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 4,
      "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_value_head_dim": 4, "max_position_embeddings": 262144,
      "mlp_only_layers": [1], "model_type": "qwen3_next", "moe_intermediate_size": 12, "mtp_num_hidden_layers": 1,
      "mtp_use_dedicated_embeddings": false, "norm_topk_prob": true, "num_attention_heads": 4, "num_experts": 6,
      "num_experts_per_tok": 2, "num_hidden_layers": 4, "num_key_value_heads": 2, "output_router_logits": false,
      "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06, "rope_theta": 10000000, "router_aux_loss_coef": 0.001,
      "shared_expert_intermediate_size": 20, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
      "transformers_version": "4.57.0.dev0", "use_cache": true, "vocab_size": 40})");
    TensorMaker make(c, seed);
    const std::int64_t d = 16, H = 4, kv = 2, hd = 8, hk = 2, dk = 4, hv = 4, dv = 4, K = 4, experts = 6, eff = 12;
    make("model.embed_tokens.weight", {40, d}, 1.0);
    for (int l = 0; l < 4; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        make_gated_delta_layer(make, p, l < 3, true, {d, H, kv, hd, hk, dk, hv, dv, K});
        if (l == 1) {
            make(p + "mlp.gate_proj.weight", {24, d}, 0.4);
            make(p + "mlp.up_proj.weight", {24, d}, 0.4);
            make(p + "mlp.down_proj.weight", {d, 24}, 0.3);
            continue;
        }
        make_gated_shared_mixture(make, p + "mlp.", d, experts, eff, 20);
    }
    make("model.norm.weight", {d}, 0.2);
    make("lm_head.weight", {40, d}, 0.5);
    make("mtp.fc.weight", {d, 2 * d}, 0.3);  // the multi-token prediction module: not in the forward pass
    return c;
}

// Qwen3.5-9B's folder as published (Qwen3_5ForConditionalGeneration), scaled down: its config.json nests
// the text model's under text_config, the text model's tensors lie under model.language_model., beside
// a vision tower (model.visual.*) and the multi-token prediction module (mtp.*). The text model:
// Qwen3-Next's layers (three Gated DeltaNet layers to one gated full layer) with the linear layers'
// projections stored apart (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a), 2 key heads of 4 read by
// 4 value heads of 4, a convolution of 4 taps; the full layer 4 heads of 16 on 2 K/V heads, partial
// RoPE 0.25 (4 of 16 dims) as mrope_section [1, 1, 0]; a dense gated MLP of 24 in every layer;
// untied, BF16.
inline FamilyCheckpoint qwen3_5_checkpoint(std::uint64_t seed = 29) {
    FamilyCheckpoint c{"qwen3_5", {}, {}, safetensors::Dtype::BF16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["Qwen3_5ForConditionalGeneration"], "image_token_id": 36, "model_type": "qwen3_5",
      "text_config": {
        "attention_bias": false, "attention_dropout": 0.0, "attn_output_gate": true, "bos_token_id": null, "dtype": "bfloat16",
        "eos_token_id": 39, "full_attention_interval": 4, "head_dim": 16, "hidden_act": "silu", "hidden_size": 16,
        "initializer_range": 0.02, "intermediate_size": 24,
        "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 4, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
        "linear_value_head_dim": 4, "max_position_embeddings": 262144, "mlp_only_layers": [], "model_type": "qwen3_5_text",
        "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": false, "num_attention_heads": 4, "num_hidden_layers": 4,
        "num_key_value_heads": 2, "pad_token_id": null, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
        "rope_parameters": {"mrope_interleaved": true, "mrope_section": [1, 1, 0], "rope_type": "default",
                            "rope_theta": 10000000, "partial_rotary_factor": 0.25},
        "tie_word_embeddings": false, "use_cache": true, "vocab_size": 40},
      "tie_word_embeddings": false, "transformers_version": "4.57.0.dev0", "video_token_id": 37,
      "vision_config": {"deepstack_visual_indexes": [], "depth": 1, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 8,
                        "in_channels": 3, "intermediate_size": 16, "model_type": "qwen3_5", "num_heads": 2,
                        "num_position_embeddings": 16, "out_hidden_size": 16, "patch_size": 2, "spatial_merge_size": 2,
                        "temporal_patch_size": 2},
      "vision_end_token_id": 35, "vision_start_token_id": 34})");
    TensorMaker make(c, seed);
    const std::int64_t d = 16, H = 4, kv = 2, hd = 16, hk = 2, dk = 4, hv = 4, dv = 4, K = 4, ff = 24;
    const std::string m = "model.language_model.";
    make(m + "embed_tokens.weight", {40, d}, 1.0);
    for (int l = 0; l < 4; ++l) {
        const std::string p = m + "layers." + std::to_string(l) + ".";
        make_gated_delta_layer(make, p, l < 3, false, {d, H, kv, hd, hk, dk, hv, dv, K});
        make(p + "mlp.gate_proj.weight", {ff, d}, 0.4);
        make(p + "mlp.up_proj.weight", {ff, d}, 0.4);
        make(p + "mlp.down_proj.weight", {d, ff}, 0.3);
    }
    make(m + "norm.weight", {d}, 0.2);
    make("lm_head.weight", {40, d}, 0.5);
    make("model.visual.patch_embed.proj.weight", {8, 3, 2, 2, 2}, 0.3);  // the vision tower: not the text model's
    make("model.visual.blocks.0.attn.qkv.weight", {24, 8}, 0.3);
    make("mtp.fc.weight", {d, 2 * d}, 0.3);  // the multi-token prediction module: not in the forward pass
    return c;
}

// Qwen3.5-35B-A3B's folder as published (Qwen3_5MoeForConditionalGeneration), scaled down: Qwen3.5's
// (qwen3_5_checkpoint) with a mixture in every layer: 6 experts of 12 (its 256 of 512), 2 kept (its 8),
// always renormalised, beside a gated shared expert of 20; each expert's tensors apart
// (mlp.experts.E.gate_proj, as transformers 4 re-saves them: the published folder keeps each layer's
// experts in two tensors, mlp.experts.gate_up_proj and down_proj, which test_hf_families.cpp's
// with_fused_experts writes of this one); no intermediate_size in its config.
inline FamilyCheckpoint qwen3_5_moe_checkpoint(std::uint64_t seed = 31) {
    FamilyCheckpoint c = qwen3_5_checkpoint(seed);
    c.label = "qwen3_5_moe";
    c.config["architectures"] = {"Qwen3_5MoeForConditionalGeneration"};
    c.config["model_type"] = "qwen3_5_moe";
    nlohmann::json& text = c.config["text_config"];
    text["model_type"] = "qwen3_5_moe_text";
    text.erase("intermediate_size");
    text.erase("mlp_only_layers");
    text["num_experts"] = 6;
    text["num_experts_per_tok"] = 2;
    text["moe_intermediate_size"] = 12;
    text["shared_expert_intermediate_size"] = 20;
    text["router_aux_loss_coef"] = 0.001;
    text["output_router_logits"] = false;
    c.config["vision_config"]["model_type"] = "qwen3_5_moe";
    const std::int64_t d = 16, experts = 6, eff = 12;
    TensorMaker make(c, seed + 1);
    for (int l = 0; l < 4; ++l) {
        const std::string p = "model.language_model.layers." + std::to_string(l) + ".mlp.";
        for (const char* dense : {"gate_proj.weight", "up_proj.weight", "down_proj.weight"}) c.tensors.erase(p + dense);
        make_gated_shared_mixture(make, p, d, experts, eff, 20);
    }
    return c;
}

// pythia-70m's config.json, scaled down: 2 heads of 16, a quarter of each rotating, the fused
// per-head QKV, parallel residual, untied embed_out, F16; with the old files' buffers.
inline FamilyCheckpoint neox_checkpoint(std::uint64_t seed = 7, bool parallel_residual = true) {
    FamilyCheckpoint c{"gpt_neox", {}, {}, safetensors::Dtype::F16, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "gelu",
      "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64, "layer_norm_eps": 1e-05,
      "max_position_embeddings": 2048, "model_type": "gpt_neox", "num_attention_heads": 2, "num_hidden_layers": 2,
      "rotary_emb_base": 10000, "rotary_pct": 0.25, "tie_word_embeddings": false, "torch_dtype": "float16",
      "transformers_version": "4.24.0", "use_cache": true, "use_parallel_residual": true, "vocab_size": 40})");
    c.config["use_parallel_residual"] = parallel_residual;
    TensorMaker make(c, seed);
    const std::int64_t d = 32, ff = 64, V = 40;
    make("gpt_neox.embed_in.weight", {V, d}, 1.0);
    for (int l = 0; l < 2; ++l) {
        const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
        make(p + "input_layernorm.weight", {d}, 0.2, 1.0);
        make(p + "input_layernorm.bias", {d}, 0.2);
        make(p + "post_attention_layernorm.weight", {d}, 0.2, 1.0);
        make(p + "post_attention_layernorm.bias", {d}, 0.2);
        make(p + "attention.query_key_value.weight", {3 * d, d}, 0.5);
        make(p + "attention.query_key_value.bias", {3 * d}, 0.3);
        make(p + "attention.dense.weight", {d, d}, 0.3);
        make(p + "attention.dense.bias", {d}, 0.2);
        make(p + "mlp.dense_h_to_4h.weight", {ff, d}, 0.3);
        make(p + "mlp.dense_h_to_4h.bias", {ff}, 0.2);
        make(p + "mlp.dense_4h_to_h.weight", {d, ff}, 0.2);
        make(p + "mlp.dense_4h_to_h.bias", {d}, 0.2);
        // buffers the old exports carry: recomputed by transformers, read past
        make(p + "attention.rotary_emb.inv_freq", {2}, 0.1);
        make(p + "attention.masked_bias", {}, 0.1);
    }
    make("gpt_neox.final_layer_norm.weight", {d}, 0.2, 1.0);
    make("gpt_neox.final_layer_norm.bias", {d}, 0.2);
    make("embed_out.weight", {V, d}, 0.5);
    return c;
}

// bert-base-uncased's config.json, scaled down, and its file's names: LayerNorm gamma/beta,
// the pooler and the next-sentence head (which BertForMaskedLM drops), the decoder tied to the
// word embeddings; F32.
inline FamilyCheckpoint bert_checkpoint(std::uint64_t seed = 8) {
    FamilyCheckpoint c{"bert", {}, {}, safetensors::Dtype::F32, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": false,
      "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 16, "initializer_range": 0.02,
      "intermediate_size": 32, "layer_norm_eps": 1e-12, "max_position_embeddings": 16, "model_type": "bert",
      "num_attention_heads": 4, "num_hidden_layers": 2, "pad_token_id": 0, "position_embedding_type": "absolute",
      "transformers_version": "4.6.0.dev0", "type_vocab_size": 2, "use_cache": true, "vocab_size": 40})");
    TensorMaker make(c, seed);
    const std::int64_t d = 16, ff = 32, V = 40;
    make("bert.embeddings.word_embeddings.weight", {V, d}, 1.0);
    make("bert.embeddings.position_embeddings.weight", {16, d}, 0.5);
    make("bert.embeddings.token_type_embeddings.weight", {2, d}, 0.5);
    make("bert.embeddings.LayerNorm.gamma", {d}, 0.2, 1.0);
    make("bert.embeddings.LayerNorm.beta", {d}, 0.2);
    for (int l = 0; l < 2; ++l) {
        const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
        for (const char* m : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
            make(p + m + ".weight", {d, d}, 0.5);
            make(p + m + ".bias", {d}, 0.3);
        }
        make(p + "attention.output.LayerNorm.gamma", {d}, 0.2, 1.0);
        make(p + "attention.output.LayerNorm.beta", {d}, 0.2);
        make(p + "intermediate.dense.weight", {ff, d}, 0.3);
        make(p + "intermediate.dense.bias", {ff}, 0.2);
        make(p + "output.dense.weight", {d, ff}, 0.3);
        make(p + "output.dense.bias", {d}, 0.2);
        make(p + "output.LayerNorm.gamma", {d}, 0.2, 1.0);
        make(p + "output.LayerNorm.beta", {d}, 0.2);
    }
    make("bert.pooler.dense.weight", {d, d}, 0.3);
    make("bert.pooler.dense.bias", {d}, 0.3);
    make("cls.predictions.bias", {V}, 0.3);
    make("cls.predictions.transform.dense.weight", {d, d}, 0.4);
    make("cls.predictions.transform.dense.bias", {d}, 0.2);
    make("cls.predictions.transform.LayerNorm.gamma", {d}, 0.2, 1.0);
    make("cls.predictions.transform.LayerNorm.beta", {d}, 0.2);
    make("cls.seq_relationship.weight", {2, d}, 0.3);
    make("cls.seq_relationship.bias", {2}, 0.3);
    return c;
}

// ModernBERT-base's config.json as published (transformers 4.48), scaled down: every third layer global
// (0 and 3 of 4), the others local with local_attention 4 (keys within ±2), RoPE bases 160000 and 10000;
// its file's names, the decoder's weight tied to the embedding and not stored; F32.
inline FamilyCheckpoint modernbert_checkpoint(std::uint64_t seed = 32) {
    FamilyCheckpoint c{"modernbert", {}, {}, safetensors::Dtype::F32, false};
    c.config = nlohmann::json::parse(R"({
      "architectures": ["ModernBertForMaskedLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 1,
      "classifier_activation": "gelu", "classifier_bias": false, "classifier_dropout": 0.0, "classifier_pooling": "mean",
      "cls_token_id": 1, "decoder_bias": true, "deterministic_flash_attn": false, "embedding_dropout": 0.0, "eos_token_id": 2,
      "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0, "gradient_checkpointing": false, "hidden_activation": "gelu",
      "hidden_size": 16, "initializer_cutoff_factor": 2.0, "initializer_range": 0.02, "intermediate_size": 24, "layer_norm_eps": 1e-05,
      "local_attention": 4, "local_rope_theta": 10000.0, "max_position_embeddings": 64, "mlp_bias": false, "mlp_dropout": 0.0,
      "model_type": "modernbert", "norm_bias": false, "norm_eps": 1e-05, "num_attention_heads": 4, "num_hidden_layers": 4,
      "pad_token_id": 3, "position_embedding_type": "absolute", "repad_logits_with_grad": false, "sep_token_id": 2,
      "sparse_pred_ignore_index": -100, "sparse_prediction": false, "torch_dtype": "float32", "transformers_version": "4.48.0",
      "vocab_size": 40})");
    TensorMaker make(c, seed);
    const std::int64_t d = 16, ff = 24, V = 40;
    make("model.embeddings.tok_embeddings.weight", {V, d}, 1.0);
    make("model.embeddings.norm.weight", {d}, 0.2, 1.0);
    for (int l = 0; l < 4; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        if (l > 0) make(p + "attn_norm.weight", {d}, 0.2, 1.0);
        make(p + "attn.Wqkv.weight", {3 * d, d}, 0.5);
        make(p + "attn.Wo.weight", {d, d}, 0.4);
        make(p + "mlp_norm.weight", {d}, 0.2, 1.0);
        make(p + "mlp.Wi.weight", {2 * ff, d}, 0.4);
        make(p + "mlp.Wo.weight", {d, ff}, 0.3);
    }
    make("model.final_norm.weight", {d}, 0.2, 1.0);
    make("head.dense.weight", {d, d}, 0.4);
    make("head.norm.weight", {d}, 0.2, 1.0);
    make("decoder.bias", {V}, 0.3);
    return c;
}

inline std::vector<FamilyCheckpoint> all_family_checkpoints() {
    return {llama_checkpoint(), llama3_checkpoint(), mistral_checkpoint(), ministral_checkpoint(), qwen2_checkpoint(), qwen3_checkpoint(),
            gemma2_checkpoint(), gemma3_checkpoint(), olmo2_checkpoint(), phi3_checkpoint(), smollm3_checkpoint(), qwen3_moe_checkpoint(),
            qwen2_moe_checkpoint(), mixtral_checkpoint(), gpt_oss_checkpoint(), deepseek_v3_checkpoint(), llama4_checkpoint(), qwen3_next_checkpoint(), qwen3_5_checkpoint(), qwen3_5_moe_checkpoint(),
            neox_checkpoint(), diffllama_checkpoint(),
            bert_checkpoint(), modernbert_checkpoint()};
}

// Every tensor of a folder's safetensors file(s), as stored (for checkpoints written elsewhere).
inline HfTensors read_tensors(const std::vector<std::string>& paths) {
    HfTensors out;
    for (const std::string& path : paths) {
        std::vector<std::string> errors;
        auto file = safetensors::SafetensorsFile::open(path, errors);
        if (!file) throw std::runtime_error(path + ": cannot be opened");
        for (const std::string& name : file->names()) {
            HfTensor t{file->info(name)->shape, {}};
            if (!file->read(name, t.values, errors)) throw std::runtime_error(path + ": " + name);
            out[name] = std::move(t);
        }
    }
    return out;
}

// [SECTION] The reference forward pass

// What the engine is checked against: per layer, every query head's attention weights, the
// keys each head used (after QK-norm and RoPE) and the scores it soft-capped, and the logits.
struct Reference {
    std::vector<std::vector<Rows>> attention;   // [layer][head] (n × n): row i, query i's weights over the keys
    std::vector<std::vector<Rows>> keys;        // [layer][head] (n × head_dim): the keys head h's scores read
    std::vector<std::vector<Rows>> scores;      // [layer][head] (n × n): scaled and soft-capped, before the mask
    std::vector<Rows> outputs;                  // [layer] the residual stream leaving the layer (n × d)
    Rows logits;                                // (n × V): every row's (BERT: the MLM logits)
};

// A stored tensor by name, with or without the class prefix (and BERT's gamma/beta for weight/bias).
inline const HfTensor& tensor(const HfTensors& t, const std::string& name) {
    for (const std::string prefix : {"", "model.", "model.language_model.", "gpt_neox.", "bert.", "transformer."}) {
        if (auto it = t.find(prefix + name); it != t.end()) return it->second;
        for (const auto& [from, to] : {std::pair<std::string, std::string>{".weight", ".gamma"}, {".bias", ".beta"}})
            if (name.size() > from.size() && name.compare(name.size() - from.size(), from.size(), from) == 0)
                if (auto g = t.find(prefix + name.substr(0, name.size() - from.size()) + to); g != t.end()) return g->second;
    }
    throw std::runtime_error("the reference needs tensor '" + name + "'");
}
inline bool has_tensor(const HfTensors& t, const std::string& name) {
    try {
        tensor(t, name);
        return true;
    } catch (const std::runtime_error&) {
        return false;
    }
}

// nn.Linear: y = x·Wᵀ + b, W (out × in) as stored.
inline Rows linear(const Rows& x, const HfTensor& w, const HfTensor* b) {
    const std::size_t out = static_cast<std::size_t>(w.shape[0]), in = static_cast<std::size_t>(w.shape[1]);
    Rows y(x.size(), std::vector<double>(out));
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t o = 0; o < out; ++o) {
            double sum = b ? b->values[o] : 0.0;
            for (std::size_t k = 0; k < in; ++k) sum += x[i][k] * w.values[o * in + k];
            y[i][o] = sum;
        }
    return y;
}
// GPT-2's Conv1D: y = x·W + b, W (in × out) as stored.
inline Rows conv1d(const Rows& x, const HfTensor& w, const HfTensor& b) {
    const std::size_t in = static_cast<std::size_t>(w.shape[0]), out = static_cast<std::size_t>(w.shape[1]);
    Rows y(x.size(), std::vector<double>(out));
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t o = 0; o < out; ++o) {
            double sum = b.values[o];
            for (std::size_t k = 0; k < in; ++k) sum += x[i][k] * w.values[k * out + o];
            y[i][o] = sum;
        }
    return y;
}

// LayerNorm (biased variance) or RMSNorm (Gemma: ·(1 + w)) of each row.
inline std::vector<double> norm_row(const std::vector<double>& x, const hf::NormSpec& spec, const HfTensor& w, const HfTensor* b) {
    const double n = static_cast<double>(x.size());
    std::vector<double> y(x.size());
    if (spec.kind == hf::NormKind::layer_norm) {
        double mean = 0, var = 0;
        for (double v : x) mean += v / n;
        for (double v : x) var += (v - mean) * (v - mean) / n;
        for (std::size_t j = 0; j < x.size(); ++j)
            y[j] = (x[j] - mean) / std::sqrt(var + spec.epsilon) * w.values[j] + (b ? b->values[j] : 0.0);
    } else {
        double mean_square = 0;
        for (double v : x) mean_square += v * v / n;
        for (std::size_t j = 0; j < x.size(); ++j)
            y[j] = x[j] / std::sqrt(mean_square + spec.epsilon) * ((spec.one_plus_weight ? 1.0 : 0.0) + w.values[j]);
    }
    return y;
}
inline Rows norm_rows(const Rows& x, const hf::NormSpec& spec, const HfTensors& t, const std::string& base) {
    const HfTensor* bias = spec.kind == hf::NormKind::layer_norm && spec.bias ? &tensor(t, base + ".bias") : nullptr;  // ModernBERT: none
    Rows y;
    for (const auto& row : x) y.push_back(norm_row(row, spec, tensor(t, base + ".weight"), bias));
    return y;
}

// The RoPE frequencies of a layer as transformers' rope_init functions form them (float32).
// LongRoPE: 1 / (ext_factors · θ^(2i/r)), ext the long factors for a text longer than
// original_max_position_embeddings (`length` tokens), else the short ones.
inline std::vector<float> reference_inv_freq(double theta, int rotary_dim, const hf::RopeScaling& scaling, int length = 0) {
    std::vector<float> inv(static_cast<std::size_t>(rotary_dim / 2));
    for (int i = 0; i < rotary_dim / 2; ++i)
        inv[static_cast<std::size_t>(i)] = 1.0f / std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / static_cast<float>(rotary_dim));
    if (scaling.kind == hf::RopeScalingKind::longrope) {
        const std::vector<double>& ext = length > scaling.original_max_position_embeddings ? scaling.long_factor : scaling.short_factor;
        for (int i = 0; i < rotary_dim / 2; ++i)
            inv[static_cast<std::size_t>(i)] =
                1.0f / (static_cast<float>(ext[static_cast<std::size_t>(i)]) *
                        std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / static_cast<float>(rotary_dim)));
    }
    if (scaling.kind == hf::RopeScalingKind::yarn) {
        // _compute_yarn_parameters: the ramp's ends from the turns beta_fast and beta_slow within
        // original_max_position_embeddings (Python floats), the blend in float32
        const double r = rotary_dim;
        const auto dim_of = [&](double turns) {
            return r * std::log(scaling.original_max_position_embeddings / (turns * 2 * M_PI)) / (2 * std::log(theta));
        };
        double low = dim_of(scaling.beta_fast), high = dim_of(scaling.beta_slow);
        if (scaling.truncate) low = std::floor(low), high = std::ceil(high);
        low = std::max(low, 0.0);
        high = std::min(high, r - 1);
        if (low == high) high += 0.001;
        for (int i = 0; i < rotary_dim / 2; ++i) {
            const float pos_freq = std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / static_cast<float>(rotary_dim));
            const float ramp = std::min(1.0f, std::max(0.0f, (static_cast<float>(i) - static_cast<float>(low)) / static_cast<float>(high - low)));
            const float extrapolation_factor = 1.0f - ramp;
            inv[static_cast<std::size_t>(i)] = 1.0f / (static_cast<float>(scaling.factor) * pos_freq) * (1.0f - extrapolation_factor) +
                                               1.0f / pos_freq * extrapolation_factor;
        }
    }
    for (float& f : inv) {
        if (scaling.kind == hf::RopeScalingKind::linear) f = static_cast<float>(f / scaling.factor);
        if (scaling.kind != hf::RopeScalingKind::llama3) continue;
        const double wavelen = 2 * M_PI / f;
        const double low_wavelen = scaling.original_max_position_embeddings / scaling.low_freq_factor;
        const double high_wavelen = scaling.original_max_position_embeddings / scaling.high_freq_factor;
        if (wavelen > low_wavelen) f = static_cast<float>(f / scaling.factor);        // long waves: interpolated
        else if (wavelen >= high_wavelen) {                                             // between: blended
            const double smooth = (scaling.original_max_position_embeddings / wavelen - scaling.low_freq_factor) /
                                  (scaling.high_freq_factor - scaling.low_freq_factor);
            f = static_cast<float>((1 - smooth) * f / scaling.factor + smooth * f);
        }                                                                               // short waves: as they are
    }
    return inv;
}

// rotate_half RoPE on the first rotary_dim dims of one head's row: dims i and i + r/2 turn by
// angle float32(inv_freq[i]·position), cos and sin times the attention factor; the rest pass.
inline std::vector<double> apply_rope(std::vector<double> x, int position, const std::vector<float>& inv_freq, double attention_factor = 1.0) {
    const std::size_t half = inv_freq.size();
    for (std::size_t i = 0; i < half; ++i) {
        const double angle = static_cast<float>(inv_freq[i] * static_cast<float>(position));
        const double c = std::cos(angle) * attention_factor, s = std::sin(angle) * attention_factor;
        const double x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c - x2 * s;
        x[i + half] = x2 * c + x1 * s;
    }
    return x;
}

// DeepseekV3Attention, from its input rows a (n × d): q_b_proj(q_a_layernorm(q_a_proj(a))) (or q_proj(a)),
// split per head into q_pass and q_rot; kv_a_proj_with_mqa(a) split into the latent and k_rot;
// kv_b_proj(kv_a_layernorm(latent)) split per head into k_pass and the value; q_rot and k_rot (one, every
// head's) rotated — with rope_interleave, first viewed (d/2, 2), transposed and flattened (the even dims,
// then the odd), then rotate_half —; query [q_pass | q_rot], key [k_pass | k_rot]; eager attention at the
// scale; o_proj of the heads' outputs. The keys kept in r.keys are put back in the stored order (the
// permutation undone): a permutation of the rotary dims, the same in q and k, changes no score.
inline Rows reference_latent_attention(const hf::ModelSpec& s, const HfTensors& t, int layer, const Rows& a, Reference& r) {
    const std::size_t n = a.size();
    const hf::LatentSpec& L = s.latent;
    const int H = s.n_heads, nope = L.nope_dim, rope = L.rope_dim, vd = L.v_dim, qk = nope + rope;
    const std::string p = "layers." + std::to_string(layer) + ".self_attn.";
    const hf::NormSpec rms{hf::NormKind::rms_norm, false, s.norm.epsilon, false};
    const Rows q = L.q_rank > 0 ? linear(norm_rows(linear(a, tensor(t, p + "q_a_proj.weight"), s.qkv_bias ? &tensor(t, p + "q_a_proj.bias") : nullptr),
                                                   rms, t, p + "q_a_layernorm"),
                                         tensor(t, p + "q_b_proj.weight"), nullptr)
                                : linear(a, tensor(t, p + "q_proj.weight"), nullptr);
    const Rows compressed = linear(a, tensor(t, p + "kv_a_proj_with_mqa.weight"), s.qkv_bias ? &tensor(t, p + "kv_a_proj_with_mqa.bias") : nullptr);
    Rows latent;
    for (const auto& row : compressed) latent.emplace_back(row.begin(), row.begin() + L.kv_rank);
    const Rows kv = linear(norm_rows(latent, rms, t, p + "kv_a_layernorm"), tensor(t, p + "kv_b_proj.weight"), nullptr);
    const hf::LayerSpec& ls = s.layers[static_cast<std::size_t>(layer)];
    const std::vector<float> inv_freq = reference_inv_freq(ls.rope_theta, rope, ls.rope_scaling, static_cast<int>(n));
    const double attention_factor = ls.rope_scaling.kind == hf::RopeScalingKind::yarn ? static_cast<float>(ls.rope_scaling.attention_factor) : 1.0;
    // apply_rotary_pos_emb_interleave: x.view(d/2, 2).transpose → [x0, x2, …, x1, x3, …], then rotate_half
    const auto turned = [&](std::vector<double> x, int position) {
        if (L.interleave) {
            std::vector<double> permuted(x.size());
            for (std::size_t i = 0; i < x.size() / 2; ++i) permuted[i] = x[2 * i], permuted[x.size() / 2 + i] = x[2 * i + 1];
            x = permuted;
        }
        return apply_rope(x, position, inv_freq, attention_factor);
    };
    const auto stored_order = [&](const std::vector<double>& x) {  // the permutation undone
        if (!L.interleave) return x;
        std::vector<double> back(x.size());
        for (std::size_t i = 0; i < x.size() / 2; ++i) back[2 * i] = x[i], back[2 * i + 1] = x[x.size() / 2 + i];
        return back;
    };
    std::vector<std::vector<double>> k_rot(n);
    for (std::size_t i = 0; i < n; ++i)
        k_rot[i] = turned(std::vector<double>(compressed[i].begin() + L.kv_rank, compressed[i].end()), static_cast<int>(i));
    Rows concat(n, std::vector<double>(static_cast<std::size_t>(H * vd), 0.0));
    r.attention.emplace_back();
    r.keys.emplace_back();
    r.scores.emplace_back();
    for (int h = 0; h < H; ++h) {
        Rows qh, kh, keys_kept;
        for (std::size_t i = 0; i < n; ++i) {
            std::vector<double> query(q[i].begin() + h * qk, q[i].begin() + h * qk + nope);
            const std::vector<double> q_rot = turned(std::vector<double>(q[i].begin() + h * qk + nope, q[i].begin() + (h + 1) * qk), static_cast<int>(i));
            query.insert(query.end(), q_rot.begin(), q_rot.end());
            std::vector<double> key(kv[i].begin() + h * (nope + vd), kv[i].begin() + h * (nope + vd) + nope);
            std::vector<double> kept = key;
            key.insert(key.end(), k_rot[i].begin(), k_rot[i].end());
            const std::vector<double> unpermuted = stored_order(k_rot[i]);
            kept.insert(kept.end(), unpermuted.begin(), unpermuted.end());
            qh.push_back(query);
            kh.push_back(key);
            keys_kept.push_back(kept);
        }
        Rows scores(n, std::vector<double>(n)), weights(n, std::vector<double>(n, 0.0));
        for (std::size_t i = 0; i < n; ++i) {
            double max_score = -INFINITY, sum = 0.0;
            for (std::size_t j = 0; j < n; ++j) {
                double dot = 0;
                for (int c = 0; c < qk; ++c) dot += qh[i][static_cast<std::size_t>(c)] * kh[j][static_cast<std::size_t>(c)];
                scores[i][j] = dot * s.attention_scale;
                if (j <= i) max_score = std::max(max_score, scores[i][j]);
            }
            for (std::size_t j = 0; j <= i; ++j) sum += weights[i][j] = std::exp(scores[i][j] - max_score);
            for (std::size_t j = 0; j <= i; ++j) {
                weights[i][j] /= sum;
                for (int c = 0; c < vd; ++c)
                    concat[i][static_cast<std::size_t>(h * vd + c)] += weights[i][j] * kv[j][static_cast<std::size_t>(h * (nope + vd) + nope + c)];
            }
        }
        r.attention.back().push_back(weights);
        r.keys.back().push_back(keys_kept);
        r.scores.back().push_back(scores);
    }
    return linear(concat, tensor(t, p + "o_proj.weight"), s.o_bias ? &tensor(t, p + "o_proj.bias") : nullptr);
}

// One layer's self-attention from its input rows a (n × d); the output before the residual.
// Llama4TextAttention, from its input rows a (n × d), in its own order: q, k, v projected; on a RoPE
// layer q and k turned as complex pairs (view_as_complex: dims 2i and 2i + 1 by position·inv_freq[i]),
// then, with use_qk_norm, each head's row × rsqrt(mean(x²) + ε) (Llama4TextL2Norm: no weight); on a NoPE
// layer with the temperature, q × (log1p(⌊(p + 1)/floor_scale⌋)·attn_scale + 1) in float32; scores at
// head_dim^−½, causal and, on a chunked layer, only keys of the query's own chunk (chunked_overlay:
// ⌊j/C⌋ = ⌊i/C⌋); softmax; o_proj.
inline Rows reference_llama4_attention(const hf::ModelSpec& s, const HfTensors& t, int layer, const Rows& a, Reference& r) {
    const std::size_t n = a.size();
    const int H = s.n_heads, hd = s.head_dim;
    const std::string p = "layers." + std::to_string(layer) + ".self_attn.";
    const hf::LayerSpec& ls = s.layers[static_cast<std::size_t>(layer)];
    const Rows q = linear(a, tensor(t, p + "q_proj.weight"), nullptr), k = linear(a, tensor(t, p + "k_proj.weight"), nullptr),
               v = linear(a, tensor(t, p + "v_proj.weight"), nullptr);
    const std::vector<float> inv_freq = reference_inv_freq(ls.rope_theta, hd, ls.rope_scaling);
    const auto head_row = [&](const Rows& m, std::size_t i, int head, bool is_q) {
        std::vector<double> x(m[i].begin() + head * hd, m[i].begin() + (head + 1) * hd);
        if (ls.rope) {
            for (int pair = 0; pair < hd / 2; ++pair) {
                const double angle = static_cast<float>(inv_freq[static_cast<std::size_t>(pair)] * static_cast<float>(i));
                const double re = x[static_cast<std::size_t>(2 * pair)], im = x[static_cast<std::size_t>(2 * pair + 1)];
                x[static_cast<std::size_t>(2 * pair)] = re * std::cos(angle) - im * std::sin(angle);
                x[static_cast<std::size_t>(2 * pair + 1)] = re * std::sin(angle) + im * std::cos(angle);
            }
            if (ls.qk_norm) {
                double mean_square = 0;
                for (double value : x) mean_square += value * value / hd;
                for (double& value : x) value /= std::sqrt(mean_square + s.norm.epsilon);
            }
        } else if (ls.temperature && is_q) {
            const float steps = std::floor((static_cast<float>(i) + 1.0f) / static_cast<float>(s.temperature_floor_scale));
            const float tau = std::log1p(steps) * static_cast<float>(s.temperature_attn_scale) + 1.0f;
            for (double& value : x) value *= tau;
        }
        return x;
    };
    Rows concat(n, std::vector<double>(static_cast<std::size_t>(H * hd), 0.0));
    r.attention.emplace_back();
    r.keys.emplace_back();
    r.scores.emplace_back();
    for (int h = 0; h < H; ++h) {
        const int g = h / (H / s.n_kv_heads);
        Rows qh, kh, vh;
        for (std::size_t i = 0; i < n; ++i) {
            qh.push_back(head_row(q, i, h, true));
            kh.push_back(head_row(k, i, g, false));
            vh.emplace_back(v[i].begin() + g * hd, v[i].begin() + (g + 1) * hd);
        }
        Rows scores(n, std::vector<double>(n)), weights(n, std::vector<double>(n, 0.0));
        for (std::size_t i = 0; i < n; ++i) {
            double max_score = -INFINITY, sum = 0;
            const auto visible = [&](std::size_t j) { return j <= i && (ls.chunk == 0 || j / static_cast<std::size_t>(ls.chunk) == i / static_cast<std::size_t>(ls.chunk)); };
            for (std::size_t j = 0; j < n; ++j) {
                double dot = 0;
                for (int c = 0; c < hd; ++c) dot += qh[i][static_cast<std::size_t>(c)] * kh[j][static_cast<std::size_t>(c)];
                scores[i][j] = dot / std::sqrt(static_cast<double>(hd));
                if (visible(j)) max_score = std::max(max_score, scores[i][j]);
            }
            for (std::size_t j = 0; j < n; ++j)
                if (visible(j)) sum += weights[i][j] = std::exp(scores[i][j] - max_score);
            for (std::size_t j = 0; j < n; ++j) {
                weights[i][j] /= sum;
                for (int c = 0; c < hd; ++c) concat[i][static_cast<std::size_t>(h * hd + c)] += weights[i][j] * vh[j][static_cast<std::size_t>(c)];
            }
        }
        r.attention.back().push_back(weights);
        r.keys.back().push_back(kh);
        r.scores.back().push_back(scores);
    }
    return linear(concat, tensor(t, p + "o_proj.weight"), nullptr);
}

// Qwen3NextGatedDeltaNet, as torch_recurrent_gated_delta_rule computes it: in_proj_qkvz and in_proj_ba split
// per key head (fix_query_key_value_ordering), the causal depthwise conv1d over [q | k | v] then SiLU, q and k
// L2-normed (x·rsqrt(Σx² + 1e-6)) and q × dk^−½, β = σ(b), g = −exp(A_log)·softplus(a + dt_bias), q and k
// repeat_interleave'd to the value heads; S = S·e^g, δ = (v − Sᵀk)·β, S += k·δᵀ, o = Sᵀq; RMSNormGated(o, z) =
// o·rsqrt(mean(o²) + ε)·w·silu(z); out_proj. Each head's implied matrix from its definition, A[t,j] =
// β_j·q_tᵀ·(M_t ⋯ M_{j+1})·k_j with M_s = e^{g_s}(I − β_s k_s k_sᵀ) as d_k × d_k matrices, goes in
// r.attention; k in r.keys.
inline Rows reference_delta_net(const hf::ModelSpec& s, const HfTensors& t, int layer, const Rows& a, Reference& r) {
    const std::size_t n = a.size();
    const hf::LinearSpec& L = s.linear;
    const std::size_t hk = static_cast<std::size_t>(L.key_heads), hv = static_cast<std::size_t>(L.value_heads),
                      dk = static_cast<std::size_t>(L.key_dim), dv = static_cast<std::size_t>(L.value_dim),
                      K = static_cast<std::size_t>(L.conv_kernel), per = hv / hk, period = 2 * dk + 2 * per * dv;
    const std::string p = "layers." + std::to_string(layer) + ".linear_attn.";
    const std::size_t channels = 2 * hk * dk + hv * dv;
    Rows mixed(n, std::vector<double>(channels)), z(n, std::vector<double>(hv * dv)), b(n, std::vector<double>(hv)), g_in(n, std::vector<double>(hv));
    if (has_tensor(t, p + "in_proj_qkv.weight")) {  // Qwen3.5 (Qwen3_5GatedDeltaNet): stored apart, [q | k | v] already
        mixed = linear(a, tensor(t, p + "in_proj_qkv.weight"), nullptr);
        z = linear(a, tensor(t, p + "in_proj_z.weight"), nullptr);
        b = linear(a, tensor(t, p + "in_proj_b.weight"), nullptr);
        g_in = linear(a, tensor(t, p + "in_proj_a.weight"), nullptr);
    }
    const Rows qkvz = has_tensor(t, p + "in_proj_qkvz.weight") ? linear(a, tensor(t, p + "in_proj_qkvz.weight"), nullptr) : Rows{},
               ba = has_tensor(t, p + "in_proj_ba.weight") ? linear(a, tensor(t, p + "in_proj_ba.weight"), nullptr) : Rows{};
    for (std::size_t i = 0; i < n && !qkvz.empty(); ++i)
        for (std::size_t g = 0; g < hk; ++g) {
            for (std::size_t c = 0; c < dk; ++c) {
                mixed[i][g * dk + c] = qkvz[i][g * period + c];
                mixed[i][hk * dk + g * dk + c] = qkvz[i][g * period + dk + c];
            }
            for (std::size_t c = 0; c < per * dv; ++c) {
                mixed[i][2 * hk * dk + g * per * dv + c] = qkvz[i][g * period + 2 * dk + c];
                z[i][g * per * dv + c] = qkvz[i][g * period + 2 * dk + per * dv + c];
            }
            for (std::size_t c = 0; c < per; ++c) {
                b[i][g * per + c] = ba[i][g * 2 * per + c];
                g_in[i][g * per + c] = ba[i][g * 2 * per + per + c];
            }
        }
    const HfTensor& conv = tensor(t, p + "conv1d.weight");
    const auto silu = [](double x) { return x / (1.0 + std::exp(-x)); };
    Rows convolved(n, std::vector<double>(channels));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t c = 0; c < channels; ++c) {
            double sum = 0;
            for (std::size_t tap = 0; tap < K; ++tap)
                if (i + tap + 1 >= K) sum += conv.values[c * K + tap] * mixed[i + tap + 1 - K][c];
            convolved[i][c] = silu(sum);
        }
    const HfTensor &a_log = tensor(t, p + "A_log"), &dt_bias = tensor(t, p + "dt_bias"), &norm = tensor(t, p + "norm.weight");
    Rows gated(n, std::vector<double>(hv * dv));
    r.attention.emplace_back();
    r.keys.emplace_back();
    r.scores.emplace_back();
    const auto l2 = [](std::vector<double> x) {
        double sum = 0;
        for (double v : x) sum += v * v;
        for (double& v : x) v /= std::sqrt(sum + 1e-6);
        return x;
    };
    for (std::size_t h = 0; h < hv; ++h) {
        const std::size_t g = h / per;
        Rows q(n), k(n), v(n);
        std::vector<double> beta(n), decay(n);
        for (std::size_t i = 0; i < n; ++i) {
            q[i] = l2(std::vector<double>(convolved[i].begin() + static_cast<std::ptrdiff_t>(g * dk), convolved[i].begin() + static_cast<std::ptrdiff_t>((g + 1) * dk)));
            for (double& x : q[i]) x /= std::sqrt(static_cast<double>(dk));
            k[i] = l2(std::vector<double>(convolved[i].begin() + static_cast<std::ptrdiff_t>(hk * dk + g * dk),
                                          convolved[i].begin() + static_cast<std::ptrdiff_t>(hk * dk + (g + 1) * dk)));
            v[i].assign(convolved[i].begin() + static_cast<std::ptrdiff_t>(2 * hk * dk + h * dv), convolved[i].begin() + static_cast<std::ptrdiff_t>(2 * hk * dk + (h + 1) * dv));
            beta[i] = 1.0 / (1.0 + std::exp(-b[i][h]));
            decay[i] = -std::exp(static_cast<double>(a_log.values[h])) * std::log1p(std::exp(g_in[i][h] + dt_bias.values[h]));
        }
        std::vector<std::vector<double>> state(dk, std::vector<double>(dv, 0.0));
        Rows o(n, std::vector<double>(dv, 0.0));
        for (std::size_t i = 0; i < n; ++i) {
            for (auto& row : state)
                for (double& x : row) x *= std::exp(decay[i]);
            std::vector<double> delta(dv);
            for (std::size_t c = 0; c < dv; ++c) {
                double remembered = 0;
                for (std::size_t j = 0; j < dk; ++j) remembered += state[j][c] * k[i][j];
                delta[c] = (v[i][c] - remembered) * beta[i];
            }
            for (std::size_t j = 0; j < dk; ++j)
                for (std::size_t c = 0; c < dv; ++c) state[j][c] += k[i][j] * delta[c];
            for (std::size_t c = 0; c < dv; ++c)
                for (std::size_t j = 0; j < dk; ++j) o[i][c] += state[j][c] * q[i][j];
        }
        Rows implied(n, std::vector<double>(n, 0.0));
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j <= i; ++j) {
                std::vector<double> u = q[i];  // (M_{j+1} ⋯ M_i) q_i, each M symmetric
                for (std::size_t step = i; step > j; --step) {
                    double ku = 0;
                    for (std::size_t c = 0; c < dk; ++c) ku += k[step][c] * u[c];
                    for (std::size_t c = 0; c < dk; ++c) u[c] = std::exp(decay[step]) * (u[c] - beta[step] * k[step][c] * ku);
                }
                double ku = 0;
                for (std::size_t c = 0; c < dk; ++c) ku += k[j][c] * u[c];
                implied[i][j] = beta[j] * ku;
            }
        for (std::size_t i = 0; i < n; ++i) {
            double mean_square = 0;
            for (double x : o[i]) mean_square += x * x / static_cast<double>(dv);
            for (std::size_t c = 0; c < dv; ++c)
                gated[i][h * dv + c] = o[i][c] / std::sqrt(mean_square + s.norm.epsilon) * norm.values[c] * silu(z[i][h * dv + c]);
        }
        r.attention.back().push_back(implied);
        r.keys.back().push_back(k);
        r.scores.back().push_back(Rows(n, std::vector<double>(n, 0.0)));
    }
    return linear(gated, tensor(t, p + "out_proj.weight"), nullptr);
}

inline Rows reference_attention(const hf::ModelSpec& s, const HfTensors& t, int layer, const Rows& a, Reference& r) {
    if (s.layers[static_cast<std::size_t>(layer)].linear) return reference_delta_net(s, t, layer, a, r);
    if (s.model_type == "deepseek_v3") return reference_latent_attention(s, t, layer, a, r);
    if (s.model_type == "llama4_text") return reference_llama4_attention(s, t, layer, a, r);
    const std::size_t n = a.size();
    const int H = s.n_heads, hd = s.head_dim;
    const std::string l = std::to_string(layer);
    Rows q, k, v;   // (n × H·hd), (n × H_kv·hd), (n × H_kv·hd)
    Rows gate;      // Qwen3-Next: each head's output gate (n × H·hd)
    std::string o_name;
    if (s.model_type == "gpt2") {
        const Rows qkv = conv1d(a, tensor(t, "h." + l + ".attn.c_attn.weight"), tensor(t, "h." + l + ".attn.c_attn.bias"));
        for (const auto& row : qkv) {
            q.emplace_back(row.begin(), row.begin() + s.d_model);
            k.emplace_back(row.begin() + s.d_model, row.begin() + 2 * s.d_model);
            v.emplace_back(row.begin() + 2 * s.d_model, row.end());
        }
    } else if (s.model_type == "gpt_neox") {
        // view(n, H, 3·hd).chunk(3): head h's q, k, v are its 3·hd outputs in that order
        const std::string p = "layers." + l + ".attention.";
        const Rows qkv = linear(a, tensor(t, p + "query_key_value.weight"), s.qkv_bias ? &tensor(t, p + "query_key_value.bias") : nullptr);
        q = k = v = Rows(n, std::vector<double>(static_cast<std::size_t>(H * hd)));
        for (std::size_t i = 0; i < n; ++i)
            for (int h = 0; h < H; ++h)
                for (int c = 0; c < hd; ++c) {
                    const std::size_t at = static_cast<std::size_t>(h * hd + c), from = static_cast<std::size_t>(h * 3 * hd + c);
                    q[i][at] = qkv[i][from];
                    k[i][at] = qkv[i][from + static_cast<std::size_t>(hd)];
                    v[i][at] = qkv[i][from + 2 * static_cast<std::size_t>(hd)];
                }
    } else if (s.model_type == "bert") {
        const std::string p = "encoder.layer." + l + ".attention.self.";
        q = linear(a, tensor(t, p + "query.weight"), &tensor(t, p + "query.bias"));
        k = linear(a, tensor(t, p + "key.weight"), &tensor(t, p + "key.bias"));
        v = linear(a, tensor(t, p + "value.weight"), &tensor(t, p + "value.bias"));
    } else if (s.model_type == "modernbert") {
        // Wqkv(x).view(n, 3, H, hd).unbind(1): the first d outputs are every head's q, then k, then v
        const Rows qkv = linear(a, tensor(t, "layers." + l + ".attn.Wqkv.weight"), nullptr);
        const std::size_t dw = static_cast<std::size_t>(s.d_model);
        for (const auto& row : qkv) {
            q.emplace_back(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(dw));
            k.emplace_back(row.begin() + static_cast<std::ptrdiff_t>(dw), row.begin() + static_cast<std::ptrdiff_t>(2 * dw));
            v.emplace_back(row.begin() + static_cast<std::ptrdiff_t>(2 * dw), row.end());
        }
    } else if (s.model_type == "phi3") {
        // qkv[..., :q], qkv[..., q : q + kv], qkv[..., q + kv :]
        const Rows qkv = linear(a, tensor(t, "layers." + l + ".self_attn.qkv_proj.weight"), nullptr);
        const std::size_t qw = static_cast<std::size_t>(H * hd), kvw = static_cast<std::size_t>(s.n_kv_heads * hd);
        for (const auto& row : qkv) {
            q.emplace_back(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(qw));
            k.emplace_back(row.begin() + static_cast<std::ptrdiff_t>(qw), row.begin() + static_cast<std::ptrdiff_t>(qw + kvw));
            v.emplace_back(row.begin() + static_cast<std::ptrdiff_t>(qw + kvw), row.end());
        }
    } else {
        const std::string p = "layers." + l + ".self_attn.";
        auto bias = [&](const char* m) { return s.qkv_bias ? &tensor(t, p + m + ".bias") : nullptr; };
        q = linear(a, tensor(t, p + "q_proj.weight"), bias("q_proj"));
        if (s.output_gate) {  // Qwen3NextAttention: q_proj(x).view(…, H, 2·hd).chunk(2): each head's query, then its gate
            const Rows both = q;
            q.assign(n, std::vector<double>(static_cast<std::size_t>(H * hd)));
            gate.assign(n, std::vector<double>(static_cast<std::size_t>(H * hd)));
            for (std::size_t i = 0; i < n; ++i)
                for (int h = 0; h < H; ++h)
                    for (int c = 0; c < hd; ++c) {
                        q[i][static_cast<std::size_t>(h * hd + c)] = both[i][static_cast<std::size_t>(h * 2 * hd + c)];
                        gate[i][static_cast<std::size_t>(h * hd + c)] = both[i][static_cast<std::size_t>(h * 2 * hd + hd + c)];
                    }
        }
        k = linear(a, tensor(t, p + "k_proj.weight"), bias("k_proj"));
        v = linear(a, tensor(t, p + "v_proj.weight"), bias("v_proj"));
        if (s.qk_norm_whole) {  // OLMo 2: q_norm(q_proj(x)), k_norm(k_proj(x)), every head's numbers at once
            const hf::NormSpec rms{hf::NormKind::rms_norm, false, s.norm.epsilon, false};
            q = norm_rows(q, rms, t, p + "q_norm");
            k = norm_rows(k, rms, t, p + "k_norm");
        }
    }
    const hf::LayerSpec& ls = s.layers[static_cast<std::size_t>(layer)];
    const std::vector<float> inv_freq =
        s.positions == hf::PositionKind::rope && ls.rope ? reference_inv_freq(ls.rope_theta, s.rotary_dim, ls.rope_scaling, static_cast<int>(n))
                                                         : std::vector<float>{};   // SmolLM3Attention: if self.use_rope
    const double attention_factor = ls.rope_scaling.kind == hf::RopeScalingKind::longrope || ls.rope_scaling.kind == hf::RopeScalingKind::yarn
                                        ? static_cast<float>(ls.rope_scaling.attention_factor)
                                        : 1.0;
    // gpt-oss: each head's sink logit joins the softmax of every row, and its share is dropped
    const HfTensor* sinks = s.sinks ? &tensor(t, "layers." + l + ".self_attn.sinks") : nullptr;
    // head h's slice of row i, QK-normed over head_dim and rotated
    auto head_row = [&](const Rows& m, std::size_t i, int head, const char* norm) {
        std::vector<double> x(m[i].begin() + head * hd, m[i].begin() + (head + 1) * hd);
        if (norm && s.qk_norm && !s.qk_norm_whole) x = norm_row(x, hf::NormSpec{hf::NormKind::rms_norm, s.norm.one_plus_weight, s.norm.epsilon, false},
                                            tensor(t, "layers." + l + ".self_attn." + norm + ".weight"), nullptr);
        if (norm && s.positions == hf::PositionKind::rope && ls.rope) x = apply_rope(x, static_cast<int>(i), inv_freq, attention_factor);
        return x;
    };
    Rows concat(n, std::vector<double>(static_cast<std::size_t>(H * hd), 0.0));
    r.attention.emplace_back();
    r.keys.emplace_back();
    r.scores.emplace_back();
    for (int h = 0; h < H; ++h) {
        const int kv_head = h / (H / s.n_kv_heads);   // repeat_kv: query head h reads K/V head h / group
        Rows qh, kh, vh;
        for (std::size_t i = 0; i < n; ++i) {
            qh.push_back(head_row(q, i, h, "q_norm"));
            kh.push_back(head_row(k, i, kv_head, "k_norm"));
            vh.push_back(head_row(v, i, kv_head, nullptr));
        }
        // a causal layer's window: i − j < W; a bidirectional one's (ModernBERT's local layers): |i − j| ≤ W
        const auto see = [&ls](std::size_t i, std::size_t j) {
            const int distance = static_cast<int>(i) - static_cast<int>(j);
            if (!ls.causal) return ls.window == 0 || std::abs(distance) <= ls.window;
            return distance >= 0 && (ls.window == 0 || distance < ls.window);
        };
        Rows scores(n, std::vector<double>(n)), weights(n, std::vector<double>(n, 0.0));
        for (std::size_t i = 0; i < n; ++i) {
            // pass 1: scaled (and soft-capped) scores, the visible maximum
            double max_score = -INFINITY;
            for (std::size_t j = 0; j < n; ++j) {
                double dot = 0;
                for (int c = 0; c < hd; ++c) dot += qh[i][static_cast<std::size_t>(c)] * kh[j][static_cast<std::size_t>(c)];
                double score = dot * s.attention_scale;
                if (s.attn_logit_softcap > 0) score = s.attn_logit_softcap * std::tanh(score / s.attn_logit_softcap);
                scores[i][j] = score;
                const bool visible = see(i, j);
                if (visible) max_score = std::max(max_score, score);
            }
            // pass 2: softmax over the visible keys (and the sink)
            double sum = 0;
            if (sinks) {
                const double sink = sinks->values[static_cast<std::size_t>(h)];
                max_score = std::max(max_score, sink);
                sum += std::exp(sink - max_score);
            }
            for (std::size_t j = 0; j < n; ++j) {
                const bool visible = see(i, j);
                if (visible) sum += weights[i][j] = std::exp(scores[i][j] - max_score);
            }
            for (std::size_t j = 0; j < n; ++j) weights[i][j] /= sum;
            // pass 3: the weighted values into head h's columns
            for (std::size_t j = 0; j < n; ++j)
                for (int c = 0; c < hd; ++c) concat[i][static_cast<std::size_t>(h * hd + c)] += weights[i][j] * vh[j][static_cast<std::size_t>(c)];
        }
        r.attention.back().push_back(weights);
        r.keys.back().push_back(kh);
        r.scores.back().push_back(scores);
    }
    if (s.model_type == "gpt2") return conv1d(concat, tensor(t, "h." + l + ".attn.c_proj.weight"), tensor(t, "h." + l + ".attn.c_proj.bias"));
    if (s.model_type == "gpt_neox") {
        const std::string p = "layers." + l + ".attention.dense";
        return linear(concat, tensor(t, p + ".weight"), s.o_bias ? &tensor(t, p + ".bias") : nullptr);
    }
    if (s.model_type == "bert") {
        const std::string p = "encoder.layer." + l + ".attention.output.dense";
        return linear(concat, tensor(t, p + ".weight"), &tensor(t, p + ".bias"));
    }
    if (s.model_type == "modernbert") return linear(concat, tensor(t, "layers." + l + ".attn.Wo.weight"), nullptr);
    if (s.differential) {
        // DiffLlamaAttention, written out: λ = exp(Σ λ_q1·λ_k1) − exp(Σ λ_q2·λ_k2) + λ_init with
        // λ_init = 0.8 − 0.6·e^(−0.3·layer); pair p (heads p and p + P) reads [V_p | V_{p+P}] with both
        // of its maps; o = A_p·V' − λ·A_{p+P}·V', then (1 − λ_init)·o / √(mean(o²) + ε) into the pair's 2·hd columns
        const int P = H / 2, group = H / s.n_kv_heads;
        const std::string p = "layers." + l + ".self_attn.";
        const auto term = [&](const char* qn, const char* kn) {
            double sum = 0;
            for (int c = 0; c < hd; ++c)
                sum += tensor(t, p + qn).values[static_cast<std::size_t>(c)] * tensor(t, p + kn).values[static_cast<std::size_t>(c)];
            return std::exp(sum);
        };
        const double lambda_init = 0.8 - 0.6 * std::exp(-0.3 * layer);
        const double lambda = term("lambda_q1", "lambda_k1") - term("lambda_q2", "lambda_k2") + lambda_init;
        const std::vector<Rows>& maps = r.attention.back();
        for (std::size_t i = 0; i < n; ++i)
            for (int pair = 0; pair < P; ++pair) {
                std::vector<double> o(static_cast<std::size_t>(2 * hd), 0.0);
                for (int half = 0; half < 2; ++half) {
                    const int kv_head = (pair + half * P) / group;  // the values of head pair + half·P
                    for (std::size_t j = 0; j < n; ++j) {
                        const double w = maps[static_cast<std::size_t>(pair)][i][j] - lambda * maps[static_cast<std::size_t>(pair + P)][i][j];
                        for (int c = 0; c < hd; ++c)
                            o[static_cast<std::size_t>(half * hd + c)] += w * v[j][static_cast<std::size_t>(kv_head * hd + c)];
                    }
                }
                double mean_square = 0;
                for (double x : o) mean_square += x * x / (2.0 * hd);
                for (int c = 0; c < 2 * hd; ++c)
                    concat[i][static_cast<std::size_t>(pair * 2 * hd + c)] =
                        (1.0 - lambda_init) * o[static_cast<std::size_t>(c)] / std::sqrt(mean_square + s.norm.epsilon);
            }
    }
    if (!gate.empty())  // Qwen3-Next: attn_output * torch.sigmoid(gate), then o_proj
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < concat[i].size(); ++c) concat[i][c] /= 1.0 + std::exp(-gate[i][c]);
    const std::string p = "layers." + l + ".self_attn.o_proj";
    return linear(concat, tensor(t, p + ".weight"), s.o_bias ? &tensor(t, p + ".bias") : nullptr);
}

inline Rows added(Rows a, const Rows& b) {
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < a[i].size(); ++j) a[i][j] += b[i][j];
    return a;
}

inline Rows activated(Rows x, hf::Activation activation) {
    for (auto& row : x)
        for (double& v : row) v = hf::activate(activation, v);
    return x;
}

// A gated MLP: down(act(gate(x)) ⊙ up(x)), each an nn.Linear (with its bias where given).
inline Rows gated_mlp(const Rows& a, const HfTensor& gate_w, const HfTensor& up_w, const HfTensor& down_w, hf::Activation activation,
                      const HfTensor* gate_b = nullptr, const HfTensor* up_b = nullptr, const HfTensor* down_b = nullptr) {
    Rows gate = activated(linear(a, gate_w, gate_b), activation);
    const Rows up = linear(a, up_w, up_b);
    for (std::size_t i = 0; i < gate.size(); ++i)
        for (std::size_t j = 0; j < gate[i].size(); ++j) gate[i][j] *= up[i][j];
    return linear(gate, down_w, down_b);
}

// One layer's MLP from its input rows.
inline Rows reference_mlp(const hf::ModelSpec& s, const HfTensors& t, int layer, const Rows& a) {
    const std::string l = std::to_string(layer);
    if (s.model_type == "gpt2") {
        const std::string p = "h." + l + ".mlp.";
        return conv1d(activated(conv1d(a, tensor(t, p + "c_fc.weight"), tensor(t, p + "c_fc.bias")), s.activation),
                      tensor(t, p + "c_proj.weight"), tensor(t, p + "c_proj.bias"));
    }
    if (s.model_type == "gpt_neox") {
        const std::string p = "layers." + l + ".mlp.";
        return linear(activated(linear(a, tensor(t, p + "dense_h_to_4h.weight"), &tensor(t, p + "dense_h_to_4h.bias")), s.activation),
                      tensor(t, p + "dense_4h_to_h.weight"), &tensor(t, p + "dense_4h_to_h.bias"));
    }
    if (s.model_type == "bert") {
        const std::string p = "encoder.layer." + l + ".";
        return linear(activated(linear(a, tensor(t, p + "intermediate.dense.weight"), &tensor(t, p + "intermediate.dense.bias")), s.activation),
                      tensor(t, p + "output.dense.weight"), &tensor(t, p + "output.dense.bias"));
    }
    if (s.model_type == "phi3" || s.model_type == "modernbert") {
        // Phi-3: gate, up = gate_up_proj(x).chunk(2, dim=-1); down_proj(up * act_fn(gate))
        // ModernBERT: input, gate = Wi(x).chunk(2, dim=-1); Wo(act(input) * gate): the activated half first as well
        const bool modern = s.model_type == "modernbert";
        const std::string p = "layers." + l + ".mlp.";
        const Rows fused = linear(a, tensor(t, p + (modern ? "Wi.weight" : "gate_up_proj.weight")), nullptr);
        const std::size_t ff = static_cast<std::size_t>(s.d_ff);
        Rows product;
        for (const auto& row : fused) {
            std::vector<double> out(ff);
            for (std::size_t j = 0; j < ff; ++j) out[j] = row[ff + j] * hf::activate(s.activation, row[j]);
            product.push_back(out);
        }
        return linear(product, tensor(t, p + (modern ? "Wo.weight" : "down_proj.weight")), nullptr);
    }
    if (s.model_type == "gpt_oss") {
        // GptOssTopKRouter: logits x·Wᵀ + b, the top k, softmax over them; GptOssExperts: gate_up =
        // x·gate_up_proj[e] + bias, gate its even columns and up its odd ones, clamped, then
        // ((up + 1)·gate·σ(α·gate))·down_proj[e] + bias, weighted and added in expert order
        const std::string p = "layers." + l + ".mlp.";
        const Rows logits = linear(a, tensor(t, p + "router.weight"), &tensor(t, p + "router.bias"));
        const std::size_t experts = static_cast<std::size_t>(s.experts.experts), k = static_cast<std::size_t>(s.experts.experts_per_token);
        const std::size_t d = static_cast<std::size_t>(s.d_model), ff = static_cast<std::size_t>(s.experts.d_ff);
        const HfTensor &gate_up = tensor(t, p + "experts.gate_up_proj"), &gate_up_bias = tensor(t, p + "experts.gate_up_proj_bias");
        const HfTensor &down = tensor(t, p + "experts.down_proj"), &down_bias = tensor(t, p + "experts.down_proj_bias");
        const double limit = s.experts.swiglu_limit, alpha = s.experts.swiglu_alpha;
        Rows y(a.size(), std::vector<double>(d, 0.0));
        for (std::size_t i = 0; i < a.size(); ++i) {
            std::vector<std::size_t> order(experts);
            for (std::size_t e = 0; e < experts; ++e) order[e] = e;
            std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t z) { return logits[i][x] > logits[i][z]; });
            double sum = 0.0;
            std::vector<double> weight(experts, 0.0);
            for (std::size_t r = 0; r < k; ++r) sum += weight[order[r]] = std::exp(logits[i][order[r]] - logits[i][order[0]]);
            for (std::size_t e = 0; e < experts; ++e) {
                if (weight[e] == 0.0) continue;
                std::vector<double> glu(ff);
                for (std::size_t j = 0; j < ff; ++j) {
                    double g = gate_up_bias.values[e * 2 * ff + 2 * j], u = gate_up_bias.values[e * 2 * ff + 2 * j + 1];
                    for (std::size_t c = 0; c < d; ++c) {
                        g += a[i][c] * gate_up.values[(e * d + c) * 2 * ff + 2 * j];
                        u += a[i][c] * gate_up.values[(e * d + c) * 2 * ff + 2 * j + 1];
                    }
                    g = std::min(g, limit);
                    u = std::min(std::max(u, -limit), limit);
                    glu[j] = (u + 1) * g / (1 + std::exp(-alpha * g));
                }
                for (std::size_t c = 0; c < d; ++c) {
                    double out = down_bias.values[e * d + c];
                    for (std::size_t j = 0; j < ff; ++j) out += glu[j] * down.values[(e * ff + j) * d + c];
                    y[i][c] += weight[e] / sum * out;
                }
            }
        }
        return y;
    }
    if (s.model_type == "llama4_text") {
        // Llama4TextMLP (feed_forward.gate_proj, up_proj, down_proj), or Llama4TextMoe: the router's logits,
        // the top k kept, σ of those (σ(−∞) = 0 for the rest); every expert reads x × its score, gate_up =
        // x·gate_up_proj[e] split in halves (chunk(2)), (up ⊙ silu(gate))·down_proj[e], summed; then the
        // shared expert added
        const std::string p = "layers." + l + ".feed_forward.";
        if (!s.layers[static_cast<std::size_t>(layer)].moe)
            return gated_mlp(a, tensor(t, p + "gate_proj.weight"), tensor(t, p + "up_proj.weight"), tensor(t, p + "down_proj.weight"), s.activation);
        const Rows logits = linear(a, tensor(t, p + "router.weight"), nullptr);
        const std::size_t experts = static_cast<std::size_t>(s.experts.experts), k = static_cast<std::size_t>(s.experts.experts_per_token);
        const std::size_t d = static_cast<std::size_t>(s.d_model), ff = static_cast<std::size_t>(s.experts.d_ff);
        const HfTensor &gate_up = tensor(t, p + "experts.gate_up_proj"), &down = tensor(t, p + "experts.down_proj");
        Rows y = gated_mlp(a, tensor(t, p + "shared_expert.gate_proj.weight"), tensor(t, p + "shared_expert.up_proj.weight"),
                           tensor(t, p + "shared_expert.down_proj.weight"), s.activation);
        for (std::size_t i = 0; i < a.size(); ++i) {
            std::vector<std::size_t> order(experts);
            for (std::size_t e = 0; e < experts; ++e) order[e] = e;
            std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t z) { return logits[i][x] > logits[i][z]; });
            std::vector<double> score(experts, 0.0);
            for (std::size_t r = 0; r < k; ++r) score[order[r]] = 1.0 / (1.0 + std::exp(-logits[i][order[r]]));
            for (std::size_t e = 0; e < experts; ++e) {
                std::vector<double> glu(ff);
                for (std::size_t j = 0; j < ff; ++j) {
                    double g = 0, u = 0;
                    for (std::size_t c = 0; c < d; ++c) {
                        g += a[i][c] * score[e] * gate_up.values[(e * d + c) * 2 * ff + j];
                        u += a[i][c] * score[e] * gate_up.values[(e * d + c) * 2 * ff + ff + j];
                    }
                    glu[j] = u * hf::activate(s.activation, g);
                }
                for (std::size_t c = 0; c < d; ++c)
                    for (std::size_t j = 0; j < ff; ++j) y[i][c] += glu[j] * down.values[(e * ff + j) * d + c];
            }
        }
        return y;
    }
    if (s.model_type == "deepseek_v3" && s.layers[static_cast<std::size_t>(layer)].moe) {
        // DeepseekV3MoE.route_tokens_to_experts: σ of the logits; the choice + e_score_correction_bias; each
        // group's score the sum of its 2 best choices; the topk_group best groups kept, the choice 0
        // elsewhere; the top k of it; their σ / (Σ + 1e-20) with norm_topk_prob, × routed_scaling_factor;
        // the experts weighted and added, then the shared experts on every token, ungated
        const std::string p = "layers." + l + ".mlp.";
        const Rows logits = linear(a, tensor(t, p + "gate.weight"), nullptr);
        const HfTensor& bias = tensor(t, p + "gate.e_score_correction_bias");
        const std::size_t experts = static_cast<std::size_t>(s.experts.experts), k = static_cast<std::size_t>(s.experts.experts_per_token);
        const std::size_t groups = static_cast<std::size_t>(s.experts.groups), size = experts / groups;
        Rows y(a.size(), std::vector<double>(a.empty() ? 0 : a[0].size(), 0.0));
        for (std::size_t i = 0; i < a.size(); ++i) {
            std::vector<double> score(experts), choice(experts);
            for (std::size_t e = 0; e < experts; ++e) {
                score[e] = 1.0 / (1.0 + std::exp(-logits[i][e]));
                choice[e] = score[e] + bias.values[e];
            }
            std::vector<std::pair<double, std::size_t>> ranked;
            for (std::size_t g = 0; g < groups; ++g) {
                std::vector<double> in(choice.begin() + static_cast<std::ptrdiff_t>(g * size), choice.begin() + static_cast<std::ptrdiff_t>((g + 1) * size));
                std::sort(in.rbegin(), in.rend());
                ranked.push_back({in[0] + in[1], g});
            }
            std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& z) { return x.first > z.first; });
            std::vector<double> masked(experts, 0.0);
            for (std::size_t g = 0; g < static_cast<std::size_t>(s.experts.top_groups); ++g)
                for (std::size_t e = ranked[g].second * size; e < (ranked[g].second + 1) * size; ++e) masked[e] = choice[e];
            std::vector<std::size_t> order(experts);
            for (std::size_t e = 0; e < experts; ++e) order[e] = e;
            std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t z) { return masked[x] > masked[z]; });
            double kept = 0.0;
            for (std::size_t r = 0; r < k; ++r) kept += score[order[r]];
            std::vector<double> weight(experts, 0.0);
            for (std::size_t r = 0; r < k; ++r)
                weight[order[r]] = (s.experts.normalize_top_k ? score[order[r]] / (kept + 1e-20) : score[order[r]]) * s.experts.routed_scale;
            for (std::size_t e = 0; e < experts; ++e) {
                if (weight[e] == 0.0) continue;
                const std::string x = p + "experts." + std::to_string(e) + ".";
                const Rows out = gated_mlp({a[i]}, tensor(t, x + "gate_proj.weight"), tensor(t, x + "up_proj.weight"), tensor(t, x + "down_proj.weight"),
                                           s.activation);
                for (std::size_t j = 0; j < out[0].size(); ++j) y[i][j] += weight[e] * out[0][j];
            }
        }
        const Rows shared = gated_mlp(a, tensor(t, p + "shared_experts.gate_proj.weight"), tensor(t, p + "shared_experts.up_proj.weight"),
                                      tensor(t, p + "shared_experts.down_proj.weight"), s.activation);
        return added(y, shared);
    }
    if (s.layers[static_cast<std::size_t>(layer)].moe) {
        // Qwen3MoeSparseMoeBlock, MixtralSparseMoeBlock: softmax over the router's logits, the top k kept
        // (renormalised with norm_topk_prob; Mixtral always), each kept expert's gated MLP weighted and
        // added, in expert order
        const bool mixtral = s.model_type == "mixtral";
        const std::string p = "layers." + l + (mixtral ? ".block_sparse_moe." : ".mlp.");
        const Rows logits = linear(a, tensor(t, p + "gate.weight"), nullptr);
        const std::size_t experts = static_cast<std::size_t>(s.experts.experts), k = static_cast<std::size_t>(s.experts.experts_per_token);
        Rows y(a.size(), std::vector<double>(a.empty() ? 0 : a[0].size(), 0.0));
        for (std::size_t i = 0; i < a.size(); ++i) {
            double top = logits[i][0], sum = 0.0;
            for (double v : logits[i]) top = std::max(top, v);
            std::vector<double> p_row(experts);
            for (std::size_t e = 0; e < experts; ++e) sum += p_row[e] = std::exp(logits[i][e] - top);
            for (double& v : p_row) v /= sum;
            std::vector<std::size_t> order(experts);
            for (std::size_t e = 0; e < experts; ++e) order[e] = e;
            std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t z) { return p_row[x] > p_row[z]; });
            std::vector<bool> kept(experts, false);
            double kept_sum = 0.0;
            for (std::size_t r = 0; r < k; ++r) kept[order[r]] = true, kept_sum += p_row[order[r]];
            for (std::size_t e = 0; e < experts; ++e) {
                if (!kept[e]) continue;
                const std::string x = p + "experts." + std::to_string(e) + ".";
                const Rows out = gated_mlp({a[i]}, tensor(t, x + (mixtral ? "w1" : "gate_proj") + ".weight"),
                                           tensor(t, x + (mixtral ? "w3" : "up_proj") + ".weight"),
                                           tensor(t, x + (mixtral ? "w2" : "down_proj") + ".weight"), s.activation);
                // Qwen3_5MoeTopKRouter renormalises always (its config has no norm_topk_prob)
                const bool normalize = s.experts.normalize_top_k || s.model_type == "qwen3_5_moe_text";
                const double w = normalize ? p_row[e] / kept_sum : p_row[e];
                for (std::size_t j = 0; j < out[0].size(); ++j) y[i][j] += w * out[0][j];
            }
        }
        if (s.model_type == "qwen2_moe" || s.model_type == "qwen3_next" || s.model_type == "qwen3_5_moe_text") {
            // Qwen2MoeSparseMoeBlock: then every token's shared expert, × F.sigmoid(shared_expert_gate(x))
            const Rows shared = gated_mlp(a, tensor(t, p + "shared_expert.gate_proj.weight"), tensor(t, p + "shared_expert.up_proj.weight"),
                                          tensor(t, p + "shared_expert.down_proj.weight"), s.activation);
            const Rows gate = linear(a, tensor(t, p + "shared_expert_gate.weight"), nullptr);
            for (std::size_t i = 0; i < a.size(); ++i)
                for (std::size_t j = 0; j < y[i].size(); ++j) y[i][j] += shared[i][j] / (1.0 + std::exp(-gate[i][0]));
        }
        return y;
    }
    // down_proj(act_fn(gate_proj(x)) * up_proj(x))
    const std::string p = "layers." + l + ".mlp.";
    auto bias = [&](const char* m) { return s.mlp_bias ? &tensor(t, p + m + ".bias") : nullptr; };
    return gated_mlp(a, tensor(t, p + "gate_proj.weight"), tensor(t, p + "up_proj.weight"), tensor(t, p + "down_proj.weight"), s.activation,
                     bias("gate_proj"), bias("up_proj"), bias("down_proj"));
}

// The names of a layer's norms by their place (spec.hpp's layouts).
struct LayerNormNames {
    std::string attn, post_attn, mlp, post_mlp;   // empty: none
};
inline LayerNormNames layer_norm_names(const hf::ModelSpec& s, int layer) {
    const std::string l = std::to_string(layer);
    if (s.model_type == "gpt2") return {"h." + l + ".ln_1", "", "h." + l + ".ln_2", ""};
    if (s.model_type == "bert")
        return {"", "encoder.layer." + l + ".attention.output.LayerNorm", "", "encoder.layer." + l + ".output.LayerNorm"};
    if (s.model_type == "modernbert")  // ModernBertEncoderLayer: attn_norm is nn.Identity() in layer 0
        return {layer == 0 ? "" : "layers." + l + ".attn_norm", "", "layers." + l + ".mlp_norm", ""};
    const std::string p = "layers." + l + ".";
    if (s.layout == hf::BlockLayout::sandwich)
        return {p + "input_layernorm", p + "post_attention_layernorm", p + "pre_feedforward_layernorm", p + "post_feedforward_layernorm"};
    if (s.layout == hf::BlockLayout::after_sublayers) return {"", p + "post_attention_layernorm", "", p + "post_feedforward_layernorm"};
    return {p + "input_layernorm", "", p + "post_attention_layernorm", ""};
}

// The whole pass over ids (BERT: token types all 0 unless given).
inline Reference reference_forward(const hf::ModelSpec& s, const HfTensors& t, const std::vector<int>& ids,
                                   const std::vector<int>& token_types = {}) {
    const std::size_t n = ids.size(), d = static_cast<std::size_t>(s.d_model);
    const char* embedding = s.model_type == "gpt2" ? "wte.weight" : s.model_type == "gpt_neox" ? "embed_in.weight"
                          : s.model_type == "bert" ? "embeddings.word_embeddings.weight"
                          : s.model_type == "modernbert" ? "embeddings.tok_embeddings.weight" : "embed_tokens.weight";
    const HfTensor& table = tensor(t, embedding);
    Rows x(n, std::vector<double>(d));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < d; ++j) {
            // Gemma: embedding · float32(√d), a float32 product
            x[i][j] = static_cast<float>(table.values[static_cast<std::size_t>(ids[i]) * d + j] * s.embedding_scale);
            if (s.model_type == "gpt2") x[i][j] += tensor(t, "wpe.weight").values[i * d + j];
            if (s.model_type == "bert") {
                const std::size_t type = token_types.empty() ? 0 : static_cast<std::size_t>(token_types[i]);
                x[i][j] += tensor(t, "embeddings.position_embeddings.weight").values[i * d + j] +
                           tensor(t, "embeddings.token_type_embeddings.weight").values[type * d + j];
            }
        }
    if (s.embedding_norm) x = norm_rows(x, s.norm, t, s.model_type == "modernbert" ? "embeddings.norm" : "embeddings.LayerNorm");
    Reference r;
    for (int layer = 0; layer < s.n_layers; ++layer) {
        const LayerNormNames names = layer_norm_names(s, layer);
        switch (s.layout) {
            case hf::BlockLayout::pre_norm: {
                x = added(x, reference_attention(s, t, layer, names.attn.empty() ? x : norm_rows(x, s.norm, t, names.attn), r));
                x = added(x, reference_mlp(s, t, layer, norm_rows(x, s.norm, t, names.mlp)));
                break;
            }
            case hf::BlockLayout::parallel_residual: {
                const Rows attention = reference_attention(s, t, layer, norm_rows(x, s.norm, t, names.attn), r);
                const Rows mlp = reference_mlp(s, t, layer, norm_rows(x, s.norm, t, names.mlp));
                x = added(added(x, attention), mlp);
                break;
            }
            case hf::BlockLayout::sandwich: {
                x = added(x, norm_rows(reference_attention(s, t, layer, norm_rows(x, s.norm, t, names.attn), r), s.norm, t, names.post_attn));
                x = added(x, norm_rows(reference_mlp(s, t, layer, norm_rows(x, s.norm, t, names.mlp)), s.norm, t, names.post_mlp));
                break;
            }
            case hf::BlockLayout::after_sublayers: {  // Olmo2DecoderLayer
                x = added(x, norm_rows(reference_attention(s, t, layer, x, r), s.norm, t, names.post_attn));
                x = added(x, norm_rows(reference_mlp(s, t, layer, x), s.norm, t, names.post_mlp));
                break;
            }
            case hf::BlockLayout::post_norm: {
                x = norm_rows(added(x, reference_attention(s, t, layer, x, r)), s.norm, t, names.post_attn);
                x = norm_rows(added(x, reference_mlp(s, t, layer, x)), s.norm, t, names.post_mlp);
                break;
            }
        }
        r.outputs.push_back(x);
    }
    // The head: the final norm (BERT: the MLM transform), then h·Uᵀ + b, then the soft-cap.
    const HfTensor* bias = nullptr;
    if (s.model_type == "bert") {
        x = norm_rows(activated(linear(x, tensor(t, "cls.predictions.transform.dense.weight"),
                                       &tensor(t, "cls.predictions.transform.dense.bias")), s.mlm_activation),
                      s.norm, t, "cls.predictions.transform.LayerNorm");
        bias = &tensor(t, "cls.predictions.bias");
    } else if (s.model_type == "modernbert") {  // ModernBertForMaskedLM: decoder(head(final_norm(x)))
        x = norm_rows(activated(linear(norm_rows(x, s.norm, t, "final_norm"), tensor(t, "head.dense.weight"), nullptr), s.mlm_activation),
                      s.norm, t, "head.norm");
        bias = &tensor(t, "decoder.bias");
    } else {
        x = norm_rows(x, s.norm, t, s.model_type == "gpt2" ? "ln_f" : s.model_type == "gpt_neox" ? "final_layer_norm" : "norm");
    }
    const char* head = !s.tied_lm_head ? (s.model_type == "gpt_neox" ? "embed_out.weight"
                                          : s.model_type == "bert" ? "cls.predictions.decoder.weight" : "lm_head.weight")
                                       : embedding;
    r.logits = linear(x, tensor(t, head), bias);
    if (s.final_logit_softcap > 0)
        for (auto& row : r.logits)
            for (double& v : row) v = s.final_logit_softcap * std::tanh(v / s.final_logit_softcap);
    return r;
}

}  // namespace attn::testing::families
