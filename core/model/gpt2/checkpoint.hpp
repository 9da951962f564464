#pragma once
// A GPT-2-family checkpoint in the Hugging Face layout: a folder holding
//   config.json         n_layer, n_head, n_embd, n_positions, vocab_size, …
//   model.safetensors   the weights (names with or without the "transformer." prefix)
//   vocab.json          token → id
//   merges.txt          the BPE merges, best first
//
// Layouts, as stored (d = n_embd, d_ff = n_inner, V = vocab_size, P = n_positions):
//   wte (V × d), wpe (P × d): one row per token id / per position.
//   GPT-2's Conv1D keeps its weight as (in × out), NOT nn.Linear's (out × in): a layer is
//   y = x·W + b with x (n × in), so every weight below is used as it is, row-major:
//     c_attn     (d × 3d)   x·c_attn = [Q | K | V], each (n × d); head h owns columns
//                            [h·d_k, (h+1)·d_k) of Q, K and V (d_k = d / n_head)
//     c_proj_w   (d × d)    concat(heads) (n × d) · c_proj_w → the attention's output
//     c_fc_w     (d × d_ff) the MLP's expansion, then gelu_new
//     mlp_proj_w (d_ff × d) back to d
//   Biases and LayerNorm γ, β are (1 × n) row vectors, stored as 1-D tensors [n].
// The LM head is tied to wte (logits = h·wteᵀ).
//
// This is GPT-2's writer: the tests and benchmarks make checkpoints with it (random_checkpoint,
// write_checkpoint). Every folder, GPT-2's included, is opened by the family table
// (model/hf/model.hpp), which reads what is written here as it reads a published checkpoint.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/bpe.hpp"
#include "tensor/safetensors.hpp"
#include "tensor/matrix.hpp"
#include "tensor/shared_matrix.hpp"

namespace attn::gpt2 {

// GPT-2's tokenizer: the byte-level BPE of its vocab.json and merges.txt (tokenizer/bpe.hpp).
using Tokenizer = tok::ByteLevelBpe;

struct Config {
    int n_layer = 0;
    int n_head = 0;
    int n_embd = 0;        // d
    int n_positions = 0;   // P: the longest context (config.json's n_positions, or n_ctx)
    int vocab_size = 0;    // V: rows of wte (may exceed the tokenizer's size: padding)
    int n_inner = 0;       // d_ff: 4·d when config.json has null or nothing
    float layer_norm_epsilon = 1e-5f;
    std::string activation = "gelu_new";   // or "gelu_pytorch_tanh": the same tanh approximation

    int head_dim() const { return n_head > 0 ? n_embd / n_head : 0; }
};

// A layer's weights. The matrices are shared with every scenario and trace a pass builds from
// them (shared_matrix.hpp): a pass copies none. Opened from a file, each is read where the
// file stores it (stored_matrix.hpp), and c_attn.weight is three views of its (d × d) thirds,
// W_Q | W_K | W_V (c_attn() joins them again).
struct LayerWeights {
    Vector ln_1_gamma, ln_1_beta;    // (1 × d)
    SharedMatrix w_q, w_k, w_v;      // (d × d) each: c_attn.weight's columns [0, d), [d, 2d), [2d, 3d)
    Vector c_attn_b;                 // (1 × 3d)
    SharedMatrix c_proj_w;           // (d × d)
    Vector c_proj_b;                 // (1 × d)
    Vector ln_2_gamma, ln_2_beta;    // (1 × d)
    SharedMatrix c_fc_w;             // (d × d_ff)
    Vector c_fc_b;                   // (1 × d_ff)
    SharedMatrix mlp_proj_w;         // (d_ff × d)
    Vector mlp_proj_b;               // (1 × d)
};

// c_attn.weight as the file stores it: [W_Q | W_K | W_V], (d × 3d).
Matrix c_attn(const LayerWeights& layer);
// Sets W_Q, W_K and W_V from a (d × 3d) c_attn.weight (its columns in thirds).
void set_c_attn(LayerWeights& layer, const Matrix& c_attn_w);

struct Checkpoint {
    std::string folder;
    Config config;
    SharedMatrix wte;                // (V × d): read in place from the file it was opened from
    SharedMatrix wpe;                // (P × d)
    std::vector<LayerWeights> layers;
    Vector ln_f_gamma, ln_f_beta;    // (1 × d)
    Tokenizer tokenizer;
};

// config.json as Hugging Face writes it (model_type "gpt2", n_inner null when it is 4·d).
std::string config_json(const Config& config);

// The weights' file names (without prefix) and shapes for a config, in the order written.
struct WeightShape {
    std::string name;                    // "h.0.attn.c_attn.weight"
    std::vector<std::int64_t> shape;     // [d, 3d]
};
std::vector<WeightShape> weight_shapes(const Config& config);

struct CheckpointWriteOptions {
    safetensors::Dtype dtype = safetensors::Dtype::F32;
    bool transformer_prefix = false;   // "transformer.wte.weight" as GPT2LMHeadModel saves, or "wte.weight" as GPT2Model
    bool mask_buffers = false;         // also h.N.attn.bias (1×1×P×P causal mask) and h.N.attn.masked_bias, as old exports have
    bool lm_head = false;              // also lm_head.weight (a copy of wte)
};

// The checkpoint's weights as tensors to write, borrowed from checkpoint (c_attn.weight is
// joined, and owned by its tensor); false with *error when a matrix's shape disagrees with
// checkpoint.config.
bool checkpoint_tensors(const Checkpoint& checkpoint, bool transformer_prefix, std::vector<safetensors::NamedTensor>& tensors,
                        std::string* error);
// The four files in folder (created if needed), each written atomically.
bool write_checkpoint(const std::string& folder, const Checkpoint& checkpoint, const CheckpointWriteOptions& options,
                      std::string* error);

// Weights N(0, 0.02) (biases too, so a swapped bias shows), LayerNorm γ = 1, β = 0; the same
// seed gives the same checkpoint. For tests and the benchmark.
Checkpoint random_checkpoint(const Config& config, std::uint64_t seed, Tokenizer tokenizer = Tokenizer());

}  // namespace attn::gpt2
