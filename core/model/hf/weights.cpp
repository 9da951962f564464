// A Hugging Face folder's weights by each family's tensor names (weights.hpp states the layout).
//
// Index
//   [SECTION] The tensors of each family
//   [SECTION] The files: one, or shards by an index
//   [SECTION] Loading
#include "model/hf/weights.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <string_view>
#include <set>

#include <nlohmann/json.hpp>

#include "tensor/safetensors.hpp"
#include "io/json_read.hpp"
#include "io/messages.hpp"
#include "io/path_kind.hpp"
#include "tensor/stored_matrix.hpp"

namespace attn::hf {

namespace fs = std::filesystem;
using nlohmann::json;
using safetensors::SafetensorsFile;
using safetensors::TensorInfo;

// [SECTION] The tensors of each family

namespace {

using Shape = std::vector<std::int64_t>;

// One tensor the spec needs: its canonical stored name, the other names it may be stored
// under, its stored shape, and where its values go: `store` is given them as float32,
// row-major as stored (vectors); `hold` is given the stored tensor itself, (rows × cols) as
// stored, to read in place (matrices: stored_matrix.hpp).
struct Ref {
    std::string name;
    std::vector<std::string> also;
    Shape shape;
    std::function<void(const std::vector<float>&)> store;
    std::function<void(const StoredMatrix&)> hold;
    // A U8 tensor of a quantised format (MXFP4's blocks and scales): given its bytes in place.
    std::function<void(std::shared_ptr<const void>, const unsigned char*)> bytes;
};

Vector as_vector(const std::vector<float>& v) { return Eigen::Map<const Vector>(v.data(), static_cast<Eigen::Index>(v.size())); }

struct RefList {
    std::string prefix;       // "model.": names are also taken without it
    std::vector<Ref> refs;

    void add(const std::string& bare, Shape shape, std::function<void(const std::vector<float>&)> store, bool prefixed = true,
             std::vector<std::string> also = {}) {
        Ref ref{prefixed ? prefix + bare : bare, std::move(also), std::move(shape), std::move(store), nullptr, nullptr};
        if (prefixed && !prefix.empty()) ref.also.insert(ref.also.begin(), bare);
        refs.push_back(std::move(ref));
    }
    // A matrix read in place: hold(stored) sets its targets.
    void matrix(const std::string& bare, Shape shape, std::function<void(const StoredMatrix&)> hold, bool prefixed = true) {
        add(bare, std::move(shape), nullptr, prefixed);
        refs.back().hold = std::move(hold);
    }
    // nn.Linear (out × in), used as its transpose (in × out)
    void linear(const std::string& bare, std::int64_t out, std::int64_t in, SharedMatrix& target, bool prefixed = true) {
        matrix(bare, {out, in}, [&target](const StoredMatrix& stored) { target = SharedMatrix(stored.transpose()); }, prefixed);
    }
    // used as stored: embeddings (rows × d), Conv1D (in × out)
    void table(const std::string& bare, std::int64_t rows, std::int64_t cols, SharedMatrix& target, bool prefixed = true) {
        matrix(bare, {rows, cols}, [&target](const StoredMatrix& stored) { target = SharedMatrix(stored); }, prefixed);
    }
    // U8 bytes read in place (a quantised format's blocks or scales)
    void u8(const std::string& bare, Shape shape, std::function<void(std::shared_ptr<const void>, const unsigned char*)> take) {
        add(bare, std::move(shape), nullptr);
        refs.back().bytes = std::move(take);
    }
    void vector(const std::string& bare, std::int64_t n, Vector& target, bool prefixed = true, std::vector<std::string> also = {}) {
        add(bare, {n}, [&target](const std::vector<float>& v) { target = as_vector(v); }, prefixed, std::move(also));
    }
    // a norm's weight (and a LayerNorm's bias); BERT's old files say gamma and beta
    void norm(const std::string& bare, std::int64_t n, NormWeights& target, bool with_bias, bool gamma_beta = false) {
        std::vector<std::string> w_also, b_also;
        if (gamma_beta) {
            w_also.push_back(prefix + bare + ".gamma");
            w_also.push_back(bare + ".gamma");
            b_also.push_back(prefix + bare + ".beta");
            b_also.push_back(bare + ".beta");
        }
        vector(bare + ".weight", n, target.weight, true, w_also);
        if (with_bias) vector(bare + ".bias", n, target.bias, true, b_also);
    }
};

std::int64_t i64(int v) { return static_cast<std::int64_t>(v); }

// Where a family stores a layer's mixture of experts: the module, and each expert's gate, up and down.
struct MixtureNames {
    const char *module, *gate, *up, *down;
};
MixtureNames mixture_names(const ModelSpec& s) {
    // transformers 5 keeps Mixtral's mixture as mlp (the router mlp.gate), its experts fused
    if (s.tensors == TensorLayout::mixtral && !s.experts.fused) return {"block_sparse_moe", "w1", "w3", "w2"};
    return {"mlp", "gate_proj", "up_proj", "down_proj"};  // Qwen3-MoE
}

// Expert e's (rows × cols) slice of a stored (E·rows × cols) tensor of every expert, in place.
StoredMatrix expert_slice(const StoredMatrix& all, std::int64_t e, std::int64_t rows) {
    return StoredMatrix::as_stored(all.owner, all.bytes + static_cast<std::size_t>(e * rows * all.cols) * all.element_size(), all.dtype, rows,
                                   all.cols);
}

// The gate and the up projection of a fused (d × 2·ff) view whose first ff columns are the gate's (the
// activated half) and the next ff the up's (.chunk(2, dim=-1)): Phi-3's gate_up_proj, ModernBERT's Wi,
// Llama 4's experts and those transformers 5 fuses.
void gate_then_up(const StoredMatrix& fused, std::int64_t ff, SharedMatrix& gate, SharedMatrix& up) {
    gate = SharedMatrix(fused.columns(0, ff, 2 * ff, ff));
    up = SharedMatrix(fused.columns(ff, ff, 2 * ff, ff));
}

// W_Q, W_K and W_V as the three (d × d) column thirds of a fused (d × 3·d) view, [W_Q | W_K | W_V], and
// their biases as the thirds of the fused bias: GPT-2's c_attn (a Conv1D, used as stored) and
// ModernBERT's Wqkv (an nn.Linear, transposed).
void q_k_v_thirds(const StoredMatrix& fused, std::int64_t d, LayerWeights& L) {
    L.w_q = SharedMatrix(fused.columns(0, d, 3 * d, d));
    L.w_k = SharedMatrix(fused.columns(d, d, 3 * d, d));
    L.w_v = SharedMatrix(fused.columns(2 * d, d, 3 * d, d));
}
void q_k_v_bias_thirds(const std::vector<float>& fused, std::int64_t d, LayerWeights& L) {
    const Vector b = as_vector(fused);
    L.b_q = b.leftCols(d), L.b_k = b.middleCols(d, d), L.b_v = b.rightCols(d);
}

// The shared expert's module: Qwen2-MoE's mlp.shared_expert, DeepSeek-V3's mlp.shared_experts.
const char* shared_expert_module(const ModelSpec& s) { return s.tensors == TensorLayout::deepseek_v3 ? "mlp.shared_experts" : "mlp.shared_expert"; }

// DeepSeek-V3's latent attention (DeepseekV3Attention): the queries through q_a_proj, q_a_layernorm
// and q_b_proj (or q_proj without q_lora_rank), the keys and values through kv_a_proj_with_mqa,
// kv_a_layernorm and kv_b_proj; with attention_bias, q_a_proj and kv_a_proj_with_mqa have biases.
void latent_attention(RefList& r, const ModelSpec& s, const std::string& p, LayerWeights& L) {
    const LatentSpec& l = s.latent;
    const std::int64_t d = s.d_model, H = s.n_heads, qk = i64(l.nope_dim + l.rope_dim);
    if (l.q_rank > 0) {
        r.linear(p + "self_attn.q_a_proj.weight", l.q_rank, d, L.w_q_a);
        if (s.qkv_bias) r.vector(p + "self_attn.q_a_proj.bias", l.q_rank, L.b_q_a);
        r.norm(p + "self_attn.q_a_layernorm", l.q_rank, L.q_a_norm, false);
        r.linear(p + "self_attn.q_b_proj.weight", H * qk, l.q_rank, L.w_q_b);
    } else {
        r.linear(p + "self_attn.q_proj.weight", H * qk, d, L.w_q);  // no bias, whatever attention_bias says
    }
    r.linear(p + "self_attn.kv_a_proj_with_mqa.weight", i64(l.kv_rank + l.rope_dim), d, L.w_kv_a);
    if (s.qkv_bias) r.vector(p + "self_attn.kv_a_proj_with_mqa.bias", i64(l.kv_rank + l.rope_dim), L.b_kv_a);
    r.norm(p + "self_attn.kv_a_layernorm", l.kv_rank, L.kv_a_norm, false);
    r.linear(p + "self_attn.kv_b_proj.weight", H * i64(l.nope_dim + l.v_dim), l.kv_rank, L.w_kv_b);
}

// gpt-oss's mixture (GptOssMLP): mlp.router (E × d, with a bias), and every expert in one tensor
// each: gate_up_proj (E × d × 2·d_ff) used as stored, expert e's gate its even columns and its up
// the odd ones (gate_up[..., ::2], gate_up[..., 1::2]), gate_up_proj_bias (E × 2·d_ff) split alike,
// down_proj (E × d_ff × d) and down_proj_bias (E × d).
void gpt_oss_experts(RefList& r, const ModelSpec& s, const std::string& p, LayerWeights& L) {
    const int experts = s.experts.experts;
    const std::int64_t d = s.d_model, eff = s.experts.d_ff, E = experts;
    r.linear(p + "mlp.router.weight", E, d, L.router);
    r.vector(p + "mlp.router.bias", E, L.router_bias);
    L.experts.resize(static_cast<std::size_t>(experts));  // sized once: the refs below hold its elements
    std::vector<ExpertWeights>& x = L.experts;
    // gate_up[..., ::2] and gate_up[..., 1::2] of an expert's (d × 2·d_ff) gate_up, however stored
    const auto split_gate_up = [eff](ExpertWeights& expert, const StoredMatrix& gate_up) {
        expert.w_gate = SharedMatrix(gate_up.columns(0, 1, 2, eff));
        expert.w_up = SharedMatrix(gate_up.columns(1, 1, 2, eff));
    };
    if (s.experts.mxfp4) {
        // OpenAI's release: each projection as MXFP4 blocks (E × out × in/32 × 16 bytes) and scales
        // (E × out × in/32), stored (out × in), the transpose of the dequantised tensor: expert e's
        // gate_up is (2·d_ff × d), its gate the even rows and up the odd ones; its down (d × d_ff).
        struct Held {
            std::shared_ptr<const void> owner;
            const unsigned char* blocks = nullptr;
        };
        auto gate_up = std::make_shared<Held>(), down = std::make_shared<Held>();
        const auto hold = [](const std::shared_ptr<Held>& h) {
            return [h](std::shared_ptr<const void> owner, const unsigned char* bytes) { h->owner = std::move(owner), h->blocks = bytes; };
        };
        r.u8(p + "mlp.experts.gate_up_proj_blocks", {E, 2 * eff, d / 32, 16}, hold(gate_up));
        r.u8(p + "mlp.experts.gate_up_proj_scales", {E, 2 * eff, d / 32},
             [&x, gate_up, split_gate_up, d, eff](std::shared_ptr<const void>, const unsigned char* scales) {
                 for (std::size_t e = 0; e < x.size(); ++e) {  // the gate: stored rows 0, 2, 4, …
                     const std::size_t at = e * static_cast<std::size_t>(2 * eff * d);
                     split_gate_up(x[e], StoredMatrix::as_mxfp4(gate_up->owner, gate_up->blocks + at / 2, scales + at / 32, 2 * eff, d).transpose());
                 }
             });
        r.u8(p + "mlp.experts.down_proj_blocks", {E, d, eff / 32, 16}, hold(down));
        r.u8(p + "mlp.experts.down_proj_scales", {E, d, eff / 32}, [&x, down, d, eff](std::shared_ptr<const void>, const unsigned char* scales) {
            for (std::size_t e = 0; e < x.size(); ++e) {
                const std::size_t at = e * static_cast<std::size_t>(d * eff);
                x[e].w_down = SharedMatrix(StoredMatrix::as_mxfp4(down->owner, down->blocks + at / 2, scales + at / 32, d, eff).transpose());
            }
        });
    } else {
        r.matrix(p + "mlp.experts.gate_up_proj", {E, d, 2 * eff}, [&x, split_gate_up, d](const StoredMatrix& all) {
            for (std::size_t e = 0; e < x.size(); ++e) split_gate_up(x[e], expert_slice(all, static_cast<std::int64_t>(e), d));  // (d × 2·d_ff)
        });
        r.matrix(p + "mlp.experts.down_proj", {E, eff, d}, [&x, eff](const StoredMatrix& all) {
            for (std::size_t e = 0; e < x.size(); ++e) x[e].w_down = SharedMatrix(expert_slice(all, static_cast<std::int64_t>(e), eff));
        });
    }
    r.add(p + "mlp.experts.gate_up_proj_bias", {E, 2 * eff}, [&x, eff](const std::vector<float>& v) {
        for (std::size_t e = 0; e < x.size(); ++e) {
            x[e].b_gate.resize(eff), x[e].b_up.resize(eff);
            for (std::int64_t c = 0; c < eff; ++c) {
                x[e].b_gate(c) = v[static_cast<std::size_t>(static_cast<std::int64_t>(e) * 2 * eff + 2 * c)];
                x[e].b_up(c) = v[static_cast<std::size_t>(static_cast<std::int64_t>(e) * 2 * eff + 2 * c + 1)];
            }
        }
    });
    r.add(p + "mlp.experts.down_proj_bias", {E, d}, [&x, d](const std::vector<float>& v) {
        for (std::size_t e = 0; e < x.size(); ++e)
            x[e].b_down = Eigen::Map<const Vector>(v.data() + static_cast<std::int64_t>(e) * d, static_cast<Eigen::Index>(d));
    });
}

// Llama 4's feed-forward (Llama4TextMoe, Llama4TextMLP), module feed_forward: a dense layer's
// gate_proj, up_proj, down_proj (d_ff = intermediate_size_mlp wide); a mixture's router (E × d), its
// ungated shared_expert, and every expert in one tensor each, used as stored: gate_up_proj
// (E × d × 2·d_ff), expert e's gate its first d_ff columns and up the next (gate_up.chunk(2, dim=-1)),
// and down_proj (E × d_ff × d).
void llama4_feed_forward(RefList& r, const ModelSpec& s, const std::string& p, bool moe, LayerWeights& L) {
    const std::int64_t d = s.d_model;
    const std::string f = p + "feed_forward.";
    if (!moe) {
        const std::int64_t ff = s.d_ff;
        r.linear(f + "gate_proj.weight", ff, d, L.w_gate);
        r.linear(f + "up_proj.weight", ff, d, L.w_up);
        r.linear(f + "down_proj.weight", d, ff, L.w_down);
        return;
    }
    const std::int64_t E = s.experts.experts, eff = s.experts.d_ff, sff = s.experts.shared_d_ff;
    r.linear(f + "router.weight", E, d, L.router);
    L.experts.resize(static_cast<std::size_t>(E));  // sized once: the refs below hold its elements
    std::vector<ExpertWeights>& x = L.experts;
    r.matrix(f + "experts.gate_up_proj", {E, d, 2 * eff}, [&x, d, eff](const StoredMatrix& all) {
        for (std::size_t e = 0; e < x.size(); ++e)
            gate_then_up(expert_slice(all, static_cast<std::int64_t>(e), d), eff, x[e].w_gate, x[e].w_up);  // (d × 2·d_ff)
    });
    r.matrix(f + "experts.down_proj", {E, eff, d}, [&x, eff](const StoredMatrix& all) {
        for (std::size_t e = 0; e < x.size(); ++e) x[e].w_down = SharedMatrix(expert_slice(all, static_cast<std::int64_t>(e), eff));
    });
    r.linear(f + "shared_expert.gate_proj.weight", sff, d, L.shared_expert.w_gate);
    r.linear(f + "shared_expert.up_proj.weight", sff, d, L.shared_expert.w_up);
    r.linear(f + "shared_expert.down_proj.weight", d, sff, L.shared_expert.w_down);
}

// Qwen3-Next's Gated DeltaNet (Qwen3NextGatedDeltaNet): the fused projections as views, per key head
// group g of r = H / H_k value heads: in_proj_qkvz's rows [q_g | k_g | v_g | z_g] and in_proj_ba's [b_g | a_g]
// (fix_query_key_value_ordering); the convolution's taps, dt_bias, A_log, the gated norm's weight, out_proj.
// Qwen3.5's (Qwen3_5GatedDeltaNet) stores them apart: in_proj_qkv's rows [q (H_k·d_k) | k (H_k·d_k) | v (H·d_v)],
// in_proj_z, in_proj_b and in_proj_a, each head's rows in order.
void delta_net(RefList& r, const ModelSpec& s, const std::string& p, LayerWeights& L) {
    const LinearSpec& n = s.linear;
    const std::int64_t d = s.d_model, dk = n.key_dim, dv = n.value_dim, hk = n.key_heads, hv = n.value_heads, per = hv / std::max(1, n.key_heads);
    const std::int64_t period = 2 * dk + 2 * per * dv, channels = 2 * hk * dk + hv * dv;
    const std::string a = p + "linear_attn.";
    if (s.tensors == TensorLayout::qwen3_5) {
        r.matrix(a + "in_proj_qkv.weight", {channels, d}, [&L, dk, dv, hk, hv, channels](const StoredMatrix& stored) {
            const StoredMatrix fused = stored.transpose();  // (d × C)
            L.w_q = SharedMatrix(fused.columns(0, hk * dk, channels, hk * dk));
            L.w_k = SharedMatrix(fused.columns(hk * dk, hk * dk, channels, hk * dk));
            L.w_v = SharedMatrix(fused.columns(2 * hk * dk, hv * dv, channels, hv * dv));
        });
        r.linear(a + "in_proj_z.weight", hv * dv, d, L.w_z);
        r.linear(a + "in_proj_b.weight", hv, d, L.w_b);
        r.linear(a + "in_proj_a.weight", hv, d, L.w_a);
    } else {
    r.matrix(a + "in_proj_qkvz.weight", {hk * period, d}, [&L, dk, dv, hk, hv, per, period](const StoredMatrix& stored) {
        const StoredMatrix fused = stored.transpose();  // (d × H_k·period)
        L.w_q = SharedMatrix(fused.columns(0, dk, period, hk * dk));
        L.w_k = SharedMatrix(fused.columns(dk, dk, period, hk * dk));
        L.w_v = SharedMatrix(fused.columns(2 * dk, per * dv, period, hv * dv));
        L.w_z = SharedMatrix(fused.columns(2 * dk + per * dv, per * dv, period, hv * dv));
    });
    r.matrix(a + "in_proj_ba.weight", {2 * hv, d}, [&L, hv, per](const StoredMatrix& stored) {
        const StoredMatrix fused = stored.transpose();  // (d × 2·H)
        L.w_b = SharedMatrix(fused.columns(0, per, 2 * per, hv));
        L.w_a = SharedMatrix(fused.columns(per, per, 2 * per, hv));
    });
    }
    const std::int64_t kernel = n.conv_kernel;
    r.add(a + "conv1d.weight", {channels, 1, kernel}, [&L, channels, kernel](const std::vector<float>& v) {
        L.conv = Eigen::Map<const Matrix>(v.data(), channels, kernel);  // (C, 1, K) → C × K, row by row
    });
    r.vector(a + "dt_bias", hv, L.dt_bias);
    r.vector(a + "A_log", hv, L.a_log);
    r.vector(a + "norm.weight", dv, L.delta_norm);
    r.linear(a + "out_proj.weight", d, hv * dv, L.w_o);
}

RefList decoder_refs(const ModelSpec& s, Weights& w) {
    // Llama, Qwen 2/3, Gemma 2/3: LlamaForCausalLM's names ("model.…"; a multimodal folder's text model
    // "model.language_model.…")
    RefList r{s.tensor_prefix, {}};
    const std::int64_t d = s.d_model, q = i64(s.n_heads * s.head_dim), kv = i64(s.n_kv_heads * s.head_dim), ff = s.d_ff;
    const bool gemma = s.layout == BlockLayout::sandwich, olmo2 = s.layout == BlockLayout::after_sublayers;
    const bool phi3 = s.tensors == TensorLayout::phi3;
    r.table("embed_tokens.weight", s.vocab_size, d, w.token_embedding);
    for (int l = 0; l < s.n_layers; ++l) {
        LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
        const std::string p = "layers." + std::to_string(l) + ".";
        if (!olmo2) r.norm(p + "input_layernorm", d, L.attn_norm, false);  // OLMo 2: no norm before attention
        const bool linear = s.layers[static_cast<std::size_t>(l)].linear;
        if (linear) {
            delta_net(r, s, p, L);
        } else if (s.output_gate) {
            // q_proj (H·2hd × d): per head its query's hd rows, then its gate's
            const std::int64_t hd = s.head_dim;
            r.matrix(p + "self_attn.q_proj.weight", {2 * q, d}, [&L, q, hd](const StoredMatrix& stored) {
                const StoredMatrix fused = stored.transpose();  // (d × H·2hd)
                L.w_q = SharedMatrix(fused.columns(0, hd, 2 * hd, q));
                L.w_g = SharedMatrix(fused.columns(hd, hd, 2 * hd, q));
            });
            r.linear(p + "self_attn.k_proj.weight", kv, d, L.w_k);
            r.linear(p + "self_attn.v_proj.weight", kv, d, L.w_v);
        } else if (phi3) {
            // qkv_proj (q + 2·kv × d): rows [0, q) are Q's, the next kv K's, the last kv V's
            // (Phi3Attention slices qkv[..., :q], [q : q + kv], [q + kv :]); three views of the one tensor
            r.matrix(p + "self_attn.qkv_proj.weight", {q + 2 * kv, d}, [&L, q, kv](const StoredMatrix& stored) {
                const StoredMatrix fused = stored.transpose();  // (d × q + 2·kv)
                L.w_q = SharedMatrix(fused.columns(0, q, q + 2 * kv, q));
                L.w_k = SharedMatrix(fused.columns(q, kv, q + 2 * kv, kv));
                L.w_v = SharedMatrix(fused.columns(q + kv, kv, q + 2 * kv, kv));
            });
        } else if (s.latent.kv_rank > 0) {
            latent_attention(r, s, p, L);
        } else {
            r.linear(p + "self_attn.q_proj.weight", q, d, L.w_q);
            r.linear(p + "self_attn.k_proj.weight", kv, d, L.w_k);
            r.linear(p + "self_attn.v_proj.weight", kv, d, L.w_v);
        }
        if (s.qkv_bias && s.latent.kv_rank == 0 && !linear) {
            r.vector(p + "self_attn.q_proj.bias", q, L.b_q);
            r.vector(p + "self_attn.k_proj.bias", kv, L.b_k);
            r.vector(p + "self_attn.v_proj.bias", kv, L.b_v);
        }
        if (s.qk_norm && !linear) {  // over head_dim, or over the whole projection (OLMo 2: q, kv numbers)
            r.norm(p + "self_attn.q_norm", s.qk_norm_whole ? q : s.head_dim, L.q_norm, false);
            r.norm(p + "self_attn.k_norm", s.qk_norm_whole ? kv : s.head_dim, L.k_norm, false);
        }
        if (!linear) r.linear(p + "self_attn.o_proj.weight", d, s.latent.kv_rank > 0 ? i64(s.n_heads * s.latent.v_dim) : q, L.w_o);
        if (s.o_bias && !linear) r.vector(p + "self_attn.o_proj.bias", d, L.b_o);
        if (s.sinks) r.vector(p + "self_attn.sinks", s.n_heads, L.sinks);
        if (s.differential) {  // DiffLlamaAttention's λ vectors, head_dim each
            const std::int64_t hd = s.head_dim;
            r.vector(p + "self_attn.lambda_q1", hd, L.lambda_q1);
            r.vector(p + "self_attn.lambda_k1", hd, L.lambda_k1);
            r.vector(p + "self_attn.lambda_q2", hd, L.lambda_q2);
            r.vector(p + "self_attn.lambda_k2", hd, L.lambda_k2);
        }
        if (gemma) {
            r.norm(p + "post_attention_layernorm", d, L.post_attn_norm, false);
            r.norm(p + "pre_feedforward_layernorm", d, L.mlp_norm, false);
            r.norm(p + "post_feedforward_layernorm", d, L.post_mlp_norm, false);
        } else if (olmo2) {  // the norms after each sublayer, and none before
            r.norm(p + "post_attention_layernorm", d, L.post_attn_norm, false);
            r.norm(p + "post_feedforward_layernorm", d, L.post_mlp_norm, false);
        } else {
            r.norm(p + "post_attention_layernorm", d, L.mlp_norm, false);   // Llama's name for the norm before the MLP
        }
        if (s.layers[static_cast<std::size_t>(l)].moe && s.tensors == TensorLayout::gpt_oss) {
            gpt_oss_experts(r, s, p, L);
            continue;
        }
        if (s.tensors == TensorLayout::llama4) {
            llama4_feed_forward(r, s, p, s.layers[static_cast<std::size_t>(l)].moe, L);
            continue;
        }
        if (s.layers[static_cast<std::size_t>(l)].moe) {
            // The router, then each expert's gated MLP: Qwen3MoeSparseMoeBlock's mlp.gate and
            // mlp.experts.E.gate_proj, up_proj, down_proj; MixtralSparseMoeBlock's block_sparse_moe.gate
            // and block_sparse_moe.experts.E.w1 (gate), w3 (up), w2 (down)
            const int experts = s.experts.experts;
            const std::int64_t eff = s.experts.d_ff;
            const MixtureNames n = mixture_names(s);
            r.linear(p + n.module + ".gate.weight", experts, d, L.router);
            if (s.experts.sigmoid_grouped) r.vector(p + "mlp.gate.e_score_correction_bias", experts, L.choice_bias);
            L.experts.resize(static_cast<std::size_t>(experts));  // sized once: the refs below hold its elements
            if (s.experts.fused) {  // transformers 5: expert e's gate_up_proj[e] (2·d_ff × d) and down_proj[e] (d × d_ff), nn.Linear's
                std::vector<ExpertWeights>& x = L.experts;
                r.matrix(p + n.module + ".experts.gate_up_proj", {experts, 2 * eff, d}, [&x, eff](const StoredMatrix& all) {
                    for (std::size_t e = 0; e < x.size(); ++e)  // (d × 2·d_ff)
                        gate_then_up(expert_slice(all, static_cast<std::int64_t>(e), 2 * eff).transpose(), eff, x[e].w_gate, x[e].w_up);
                });
                r.matrix(p + n.module + ".experts.down_proj", {experts, d, eff}, [&x, d](const StoredMatrix& all) {
                    for (std::size_t e = 0; e < x.size(); ++e) x[e].w_down = SharedMatrix(expert_slice(all, static_cast<std::int64_t>(e), d).transpose());
                });
            } else {  // transformers 4: each expert's three projections apart
                for (int e = 0; e < experts; ++e) {
                    ExpertWeights& x = L.experts[static_cast<std::size_t>(e)];
                    const std::string q_e = p + n.module + ".experts." + std::to_string(e) + ".";
                    r.linear(q_e + n.gate + ".weight", eff, d, x.w_gate);
                    r.linear(q_e + n.up + ".weight", eff, d, x.w_up);
                    r.linear(q_e + n.down + ".weight", d, eff, x.w_down);
                }
            }
            if (s.experts.shared_d_ff > 0) {  // Qwen2MoeSparseMoeBlock.shared_expert and shared_expert_gate; DeepseekV3MoE.shared_experts
                const std::int64_t sff = s.experts.shared_d_ff;
                const std::string shared = p + shared_expert_module(s) + ".";
                r.linear(shared + "gate_proj.weight", sff, d, L.shared_expert.w_gate);
                r.linear(shared + "up_proj.weight", sff, d, L.shared_expert.w_up);
                r.linear(shared + "down_proj.weight", d, sff, L.shared_expert.w_down);
                if (s.experts.shared_gate) r.linear(p + "mlp.shared_expert_gate.weight", 1, d, L.shared_gate);
            }
            continue;
        }
        if (phi3) {
            // gate_up_proj (2·ff × d): the first ff rows the gate's, the next ff up's (Phi3MLP: .chunk(2, dim=-1))
            r.matrix(p + "mlp.gate_up_proj.weight", {2 * ff, d},
                     [&L, ff](const StoredMatrix& stored) { gate_then_up(stored.transpose(), ff, L.w_gate, L.w_up); });  // (d × 2·ff)
        } else {
            r.linear(p + "mlp.gate_proj.weight", ff, d, L.w_gate);
            r.linear(p + "mlp.up_proj.weight", ff, d, L.w_up);
        }
        r.linear(p + "mlp.down_proj.weight", d, ff, L.w_down);
        if (s.mlp_bias) {
            r.vector(p + "mlp.gate_proj.bias", ff, L.b_gate);
            r.vector(p + "mlp.up_proj.bias", ff, L.b_up);
            r.vector(p + "mlp.down_proj.bias", d, L.b_down);
        }
    }
    r.norm("norm", d, w.final_norm, false);
    if (!s.tied_lm_head) r.table(s.head_prefix + "lm_head.weight", s.vocab_size, d, w.lm_head, false);
    return r;
}

RefList neox_refs(const ModelSpec& s, Weights& w) {
    RefList r{"gpt_neox.", {}};
    const std::int64_t d = s.d_model, ff = s.d_ff;
    const int H = s.n_heads, hd = s.head_dim;
    r.table("embed_in.weight", s.vocab_size, d, w.token_embedding);
    for (int l = 0; l < s.n_layers; ++l) {
        LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
        const std::string p = "layers." + std::to_string(l) + ".";
        r.norm(p + "input_layernorm", d, L.attn_norm, true);
        r.norm(p + "post_attention_layernorm", d, L.mlp_norm, true);
        // (3·H·hd × d): rows viewed as (H, 3, hd) → head h's q, k, v rows
        r.matrix(p + "attention.query_key_value.weight", {3 * i64(H * hd), d}, [&L, H, hd](const StoredMatrix& stored) {
            // (d × 3·H·hd) as used: head h's q, k, v are columns [3h·hd, 3h·hd + hd), the next hd, the next
            const StoredMatrix fused = stored.transpose();
            L.w_q = SharedMatrix(fused.columns(0, hd, 3 * hd, H * hd));
            L.w_k = SharedMatrix(fused.columns(hd, hd, 3 * hd, H * hd));
            L.w_v = SharedMatrix(fused.columns(2 * hd, hd, 3 * hd, H * hd));
        });
        if (s.qkv_bias)
            r.add(p + "attention.query_key_value.bias", {3 * i64(H * hd)}, [&L, H, hd](const std::vector<float>& v) {
                L.b_q.resize(H * hd), L.b_k.resize(H * hd), L.b_v.resize(H * hd);
                for (int h = 0; h < H; ++h)
                    for (int c = 0; c < hd; ++c) {
                        L.b_q(h * hd + c) = v[static_cast<std::size_t>((3 * h + 0) * hd + c)];
                        L.b_k(h * hd + c) = v[static_cast<std::size_t>((3 * h + 1) * hd + c)];
                        L.b_v(h * hd + c) = v[static_cast<std::size_t>((3 * h + 2) * hd + c)];
                    }
            });
        r.linear(p + "attention.dense.weight", d, i64(H * hd), L.w_o);
        if (s.o_bias) r.vector(p + "attention.dense.bias", d, L.b_o);
        r.linear(p + "mlp.dense_h_to_4h.weight", ff, d, L.w_up);
        r.vector(p + "mlp.dense_h_to_4h.bias", ff, L.b_up);
        r.linear(p + "mlp.dense_4h_to_h.weight", d, ff, L.w_down);
        r.vector(p + "mlp.dense_4h_to_h.bias", d, L.b_down);
    }
    r.norm("final_layer_norm", d, w.final_norm, true);
    if (!s.tied_lm_head) r.table("embed_out.weight", s.vocab_size, d, w.lm_head, false);
    return r;
}

RefList bert_refs(const ModelSpec& s, Weights& w) {
    RefList r{"bert.", {}};
    const std::int64_t d = s.d_model, ff = s.d_ff;
    r.table("embeddings.word_embeddings.weight", s.vocab_size, d, w.token_embedding);
    r.table("embeddings.position_embeddings.weight", s.max_positions, d, w.position_embedding);
    r.table("embeddings.token_type_embeddings.weight", s.type_vocab_size, d, w.token_type_embedding);
    r.norm("embeddings.LayerNorm", d, w.embedding_norm, true, true);
    for (int l = 0; l < s.n_layers; ++l) {
        LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
        const std::string p = "encoder.layer." + std::to_string(l) + ".";
        r.linear(p + "attention.self.query.weight", d, d, L.w_q);
        r.vector(p + "attention.self.query.bias", d, L.b_q);
        r.linear(p + "attention.self.key.weight", d, d, L.w_k);
        r.vector(p + "attention.self.key.bias", d, L.b_k);
        r.linear(p + "attention.self.value.weight", d, d, L.w_v);
        r.vector(p + "attention.self.value.bias", d, L.b_v);
        r.linear(p + "attention.output.dense.weight", d, d, L.w_o);
        r.vector(p + "attention.output.dense.bias", d, L.b_o);
        r.norm(p + "attention.output.LayerNorm", d, L.post_attn_norm, true, true);
        r.linear(p + "intermediate.dense.weight", ff, d, L.w_up);
        r.vector(p + "intermediate.dense.bias", ff, L.b_up);
        r.linear(p + "output.dense.weight", d, ff, L.w_down);
        r.vector(p + "output.dense.bias", d, L.b_down);
        r.norm(p + "output.LayerNorm", d, L.post_mlp_norm, true, true);
    }
    r.linear("cls.predictions.transform.dense.weight", d, d, w.mlm_dense, false);   // cls.* has no prefix
    r.vector("cls.predictions.transform.dense.bias", d, w.mlm_dense_bias, false);
    r.vector("cls.predictions.transform.LayerNorm.weight", d, w.mlm_norm.weight, false, {"cls.predictions.transform.LayerNorm.gamma"});
    r.vector("cls.predictions.transform.LayerNorm.bias", d, w.mlm_norm.bias, false, {"cls.predictions.transform.LayerNorm.beta"});
    // the decoder's bias is tied to cls.predictions.bias: either name (both: equal, checked)
    r.vector("cls.predictions.bias", s.vocab_size, w.lm_head_bias, false, {"cls.predictions.decoder.bias"});
    if (!s.tied_lm_head) r.table("cls.predictions.decoder.weight", s.vocab_size, d, w.lm_head, false);
    return r;
}

// ModernBERT (ModernBertForMaskedLM): Wqkv's rows are Q's, K's, then V's (view(…, 3, H, head_dim)), Wi's the
// activated half's, then the other's (Wi(x).chunk(2): act(input) ⊙ gate); no attn_norm in layer 0.
RefList modernbert_refs(const ModelSpec& s, Weights& w) {
    RefList r{"model.", {}};
    const std::int64_t d = s.d_model, ff = s.d_ff;
    const bool norm_bias = s.norm.bias;
    r.table("embeddings.tok_embeddings.weight", s.vocab_size, d, w.token_embedding);
    r.norm("embeddings.norm", d, w.embedding_norm, norm_bias);
    for (int l = 0; l < s.n_layers; ++l) {
        LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
        const std::string p = "layers." + std::to_string(l) + ".";
        if (s.layers[static_cast<std::size_t>(l)].attn_norm) r.norm(p + "attn_norm", d, L.attn_norm, norm_bias);
        r.matrix(p + "attn.Wqkv.weight", {3 * d, d}, [&L, d](const StoredMatrix& stored) { q_k_v_thirds(stored.transpose(), d, L); });
        if (s.qkv_bias) r.add(p + "attn.Wqkv.bias", {3 * d}, [&L, d](const std::vector<float>& v) { q_k_v_bias_thirds(v, d, L); });
        r.linear(p + "attn.Wo.weight", d, d, L.w_o);
        if (s.o_bias) r.vector(p + "attn.Wo.bias", d, L.b_o);
        r.norm(p + "mlp_norm", d, L.mlp_norm, norm_bias);
        r.matrix(p + "mlp.Wi.weight", {2 * ff, d},
                 [&L, ff](const StoredMatrix& stored) { gate_then_up(stored.transpose(), ff, L.w_gate, L.w_up); });  // (d × 2·ff)
        r.linear(p + "mlp.Wo.weight", d, ff, L.w_down);
    }
    r.norm("final_norm", d, w.final_norm, norm_bias);
    r.linear("head.dense.weight", d, d, w.mlm_dense, false);  // head.* and decoder.* have no prefix
    if (s.mlm_dense_bias) r.vector("head.dense.bias", d, w.mlm_dense_bias, false);
    r.vector("head.norm.weight", d, w.mlm_norm.weight, false);
    if (norm_bias) r.vector("head.norm.bias", d, w.mlm_norm.bias, false);
    if (s.lm_head_bias) r.vector("decoder.bias", s.vocab_size, w.lm_head_bias, false);
    if (!s.tied_lm_head) r.table("decoder.weight", s.vocab_size, d, w.lm_head, false);
    return r;
}

RefList gpt2_refs(const ModelSpec& s, Weights& w) {
    RefList r{"transformer.", {}};
    const std::int64_t d = s.d_model, ff = s.d_ff;
    r.table("wte.weight", s.vocab_size, d, w.token_embedding);
    r.table("wpe.weight", s.max_positions, d, w.position_embedding);
    for (int l = 0; l < s.n_layers; ++l) {
        LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
        const std::string p = "h." + std::to_string(l) + ".";
        r.norm(p + "ln_1", d, L.attn_norm, true);
        // Conv1D (in × out): [W_Q | W_K | W_V] by columns
        r.matrix(p + "attn.c_attn.weight", {d, 3 * d}, [&L, d](const StoredMatrix& c_attn) { q_k_v_thirds(c_attn, d, L); });
        r.add(p + "attn.c_attn.bias", {3 * d}, [&L, d](const std::vector<float>& v) { q_k_v_bias_thirds(v, d, L); });
        r.table(p + "attn.c_proj.weight", d, d, L.w_o);
        r.vector(p + "attn.c_proj.bias", d, L.b_o);
        r.norm(p + "ln_2", d, L.mlp_norm, true);
        r.table(p + "mlp.c_fc.weight", d, ff, L.w_up);
        r.vector(p + "mlp.c_fc.bias", ff, L.b_up);
        r.table(p + "mlp.c_proj.weight", ff, d, L.w_down);
        r.vector(p + "mlp.c_proj.bias", d, L.b_down);
    }
    r.norm("ln_f", d, w.final_norm, true);
    if (!s.tied_lm_head) r.table("lm_head.weight", s.vocab_size, d, w.lm_head, false);
    return r;
}

RefList refs_of(const ModelSpec& s, Weights& w) {
    w.layers.resize(static_cast<std::size_t>(std::max(s.n_layers, 0)));
    switch (s.tensors) {
        case TensorLayout::gpt2: return gpt2_refs(s, w);
        case TensorLayout::gpt_neox: return neox_refs(s, w);
        case TensorLayout::bert: return bert_refs(s, w);
        case TensorLayout::modernbert: return modernbert_refs(s, w);
        case TensorLayout::llama:
        case TensorLayout::phi3:
        case TensorLayout::mixtral:
        case TensorLayout::gpt_oss:
        case TensorLayout::deepseek_v3:
        case TensorLayout::llama4:
        case TensorLayout::qwen3_next:
        case TensorLayout::qwen3_5: break;
    }
    return decoder_refs(s, w);
}

// The stored names of the head when it is tied (read past, but checked equal to the embedding).
std::vector<std::string> tied_head_names(const ModelSpec& s) {
    if (!s.tied_lm_head) return {};
    if (s.tensors == TensorLayout::gpt_neox) return {"embed_out.weight"};
    if (s.tensors == TensorLayout::bert) return {"cls.predictions.decoder.weight"};
    if (s.tensors == TensorLayout::modernbert) return {"decoder.weight"};
    return {s.head_prefix + "lm_head.weight"};
}

// Tensor names are read by hand, left to right, never by a backtracking regex: a name is text
// the file controls, and std::regex's recursion overflowed the stack on a 50,000-character one.
// Each reader consumes what it matches from `rest` and says whether it did.
bool take(std::string_view& rest, std::string_view word) {
    if (rest.substr(0, word.size()) != word) return false;
    rest.remove_prefix(word.size());
    return true;
}
bool take_digits(std::string_view& rest) {
    std::size_t n = 0;
    while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
    rest.remove_prefix(n);
    return n > 0;
}
bool ends_with(std::string_view text, std::string_view end) {
    return text.size() >= end.size() && text.substr(text.size() - end.size()) == end;
}

// "[PREFIX.]LAYERS.N.MODULE.(bias|masked_bias)": the causal masks GPT-2 and GPT-NeoX stored.
bool is_stored_mask(std::string_view name, std::string_view prefix, std::string_view layers, std::string_view module) {
    take(name, prefix);
    if (!take(name, layers) || !take_digits(name) || !take(name, module)) return false;
    return name == "bias" || name == "masked_bias";
}

// Buffers transformers recomputes and modules BertForMaskedLM drops.
bool ignorable(const ModelSpec& s, const std::string& full_name) {
    const std::string_view name = full_name;
    if (s.tensors == TensorLayout::gpt2) return is_stored_mask(name, "transformer.", "h.", ".attn.");
    if (s.tensors == TensorLayout::bert) {
        std::string_view rest = name;
        take(rest, "bert.");
        return rest.substr(0, 7) == "pooler." || name.substr(0, 21) == "cls.seq_relationship." ||
               rest == "embeddings.position_ids";
    }
    if (s.tensors == TensorLayout::gpt_neox && is_stored_mask(name, "gpt_neox.", "layers.", ".attention.")) return true;
    // DeepSeek-V3's multi-token prediction layer (DeepseekV3Model's _keys_to_ignore_on_load_unexpected: model.layers.61.*)
    if (s.tensors == TensorLayout::deepseek_v3 && name.substr(0, 16) == "model.layers.61.") return true;
    // Qwen3-Next's multi-token prediction module (Qwen3NextPreTrainedModel's _keys_to_ignore_on_load_unexpected: ^mtp.*)
    if ((s.tensors == TensorLayout::qwen3_next || s.tensors == TensorLayout::qwen3_5) && name.substr(0, 4) == "mtp.") return true;
    // A multimodal folder's other towers (Qwen3.5's vision tower, model.visual.*)
    if (s.in_other_tower(full_name)) return true;
    // ".*\.rotary_emb\.inv_freq": anything, then that ending.
    return s.positions == PositionKind::rope && ends_with(name, ".rotary_emb.inv_freq");
}

std::string shown_name(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 80); }

std::string shape_text(const Shape& shape) {
    std::string t = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
    return t + "]";
}

}  // namespace

std::vector<TensorShape> expected_tensors(const ModelSpec& spec) {
    Weights scratch;
    std::vector<TensorShape> out;
    for (const Ref& ref : refs_of(spec, scratch).refs) out.push_back({ref.name, ref.shape});
    return out;
}

HeadTensorNames head_tensor_names(const ModelSpec& s) {
    const std::string lm_head = s.head_prefix + "lm_head.weight";
    switch (s.tensors) {
        case TensorLayout::gpt2: return {"ln_f", "wte.weight", "wte", ""};
        case TensorLayout::gpt_neox: return {"gpt_neox.final_layer_norm", "gpt_neox.embed_in.weight", "embed_in",
                                             s.tied_lm_head ? "" : "embed_out.weight"};
        case TensorLayout::bert: return {"", "bert.embeddings.word_embeddings.weight", "word_embeddings", ""};
        case TensorLayout::modernbert: return {"model.final_norm", "model.embeddings.tok_embeddings.weight", "tok_embeddings",
                                               s.tied_lm_head ? "" : "decoder.weight"};
        default: return {s.tensor_prefix + "norm", s.tensor_prefix + "embed_tokens.weight", "embed_tokens", s.tied_lm_head ? "" : lm_head};
    }
}

std::vector<std::pair<std::string, std::string>> layer_weight_names(const ModelSpec& s, int layer) {
    const std::string l = std::to_string(layer);
    if (s.tensors == TensorLayout::gpt2) {  // Conv1D: used as stored; W_Q, W_K, W_V are c_attn's thirds
        const std::string p = "h." + l + ".", d = std::to_string(s.d_model), d2 = std::to_string(2 * s.d_model),
                          d3 = std::to_string(3 * s.d_model);
        return {{"w_q", p + "attn.c_attn.weight[:, 0:" + d + "]"}, {"w_k", p + "attn.c_attn.weight[:, " + d + ":" + d2 + "]"},
                {"w_v", p + "attn.c_attn.weight[:, " + d2 + ":" + d3 + "]"}, {"w_o", p + "attn.c_proj.weight"},
                {"block.w_1", p + "mlp.c_fc.weight"}, {"block.w_2", p + "mlp.c_proj.weight"}};
    }
    if (s.tensors == TensorLayout::gpt_neox) {
        const std::string p = "gpt_neox.layers." + l + ".";
        const std::string H = std::to_string(s.n_heads), hd = std::to_string(s.head_dim), d = std::to_string(s.d_model),
                          rows = std::to_string(s.n_heads * s.head_dim);
        auto part = [&](int k) {
            return p + "attention.query_key_value.weight.view(" + H + ", 3, " + hd + ", " + d + ")[:, " + std::to_string(k) + "].reshape(" +
                   rows + ", " + d + ").T";
        };
        return {{"w_q", part(0)}, {"w_k", part(1)}, {"w_v", part(2)}, {"w_o", p + "attention.dense.weight.T"},
                {"block.w_1", p + "mlp.dense_h_to_4h.weight.T"}, {"block.w_2", p + "mlp.dense_4h_to_h.weight.T"}};
    }
    if (s.tensors == TensorLayout::bert) {
        const std::string p = "bert.encoder.layer." + l + ".";
        return {{"w_q", p + "attention.self.query.weight.T"}, {"w_k", p + "attention.self.key.weight.T"},
                {"w_v", p + "attention.self.value.weight.T"}, {"w_o", p + "attention.output.dense.weight.T"},
                {"block.w_1", p + "intermediate.dense.weight.T"}, {"block.w_2", p + "output.dense.weight.T"}};
    }
    if (s.tensors == TensorLayout::modernbert) {  // Q, K, V and the MLP's halves: slices of the fused rows
        const std::string p = "model.layers." + l + ".", d = std::to_string(s.d_model), d2 = std::to_string(2 * s.d_model),
                          d3 = std::to_string(3 * s.d_model), ff = std::to_string(s.d_ff), ff2 = std::to_string(2 * s.d_ff);
        return {{"w_q", p + "attn.Wqkv.weight[0:" + d + "].T"}, {"w_k", p + "attn.Wqkv.weight[" + d + ":" + d2 + "].T"},
                {"w_v", p + "attn.Wqkv.weight[" + d2 + ":" + d3 + "].T"}, {"w_o", p + "attn.Wo.weight.T"},
                {"block.w_gate", p + "mlp.Wi.weight[0:" + ff + "].T"}, {"block.w_1", p + "mlp.Wi.weight[" + ff + ":" + ff2 + "].T"},
                {"block.w_2", p + "mlp.Wo.weight.T"}};
    }
    if (s.tensors == TensorLayout::phi3) {  // Q, K, V and gate, up: slices of the fused rows
        const std::string p = "model.layers." + l + ".";
        const std::string q = std::to_string(s.n_heads * s.head_dim), qk = std::to_string((s.n_heads + s.n_kv_heads) * s.head_dim),
                          qkv = std::to_string((s.n_heads + 2 * s.n_kv_heads) * s.head_dim), ff = std::to_string(s.d_ff),
                          ff2 = std::to_string(2 * s.d_ff);
        return {{"w_q", p + "self_attn.qkv_proj.weight[0:" + q + "].T"}, {"w_k", p + "self_attn.qkv_proj.weight[" + q + ":" + qk + "].T"},
                {"w_v", p + "self_attn.qkv_proj.weight[" + qk + ":" + qkv + "].T"}, {"w_o", p + "self_attn.o_proj.weight.T"},
                {"block.w_gate", p + "mlp.gate_up_proj.weight[0:" + ff + "].T"},
                {"block.w_1", p + "mlp.gate_up_proj.weight[" + ff + ":" + ff2 + "].T"}, {"block.w_2", p + "mlp.down_proj.weight.T"}};
    }
    const std::string p = s.tensor_prefix + "layers." + l + ".";  // Llama's layout: Llama, Mistral, Qwen 2/3, Gemma 2/3, OLMo 2
    // Llama's attention names, before each layout's MLP
    std::vector<std::pair<std::string, std::string>> names = {
        {"w_q", p + "self_attn.q_proj.weight.T"}, {"w_k", p + "self_attn.k_proj.weight.T"},
        {"w_v", p + "self_attn.v_proj.weight.T"}, {"w_o", p + "self_attn.o_proj.weight.T"}};
    if (s.latent.kv_rank > 0) {  // DeepSeek-V3: the latent's projections in place of W_K, W_V (and W_Q with q_lora_rank)
        names = {{"w_o", p + "self_attn.o_proj.weight.T"},
                 {"latent.w_kv_a", p + "self_attn.kv_a_proj_with_mqa.weight.T"},
                 {"latent.w_kv_b", p + "self_attn.kv_b_proj.weight.T"}};
        if (s.latent.q_rank > 0)
            names.insert(names.begin(), {{"latent.w_q_a", p + "self_attn.q_a_proj.weight.T"}, {"latent.w_q_b", p + "self_attn.q_b_proj.weight.T"}});
        else names.insert(names.begin(), {"w_q", p + "self_attn.q_proj.weight.T"});
    }
    if (s.tensors == TensorLayout::qwen3_next && s.layers[static_cast<std::size_t>(layer)].linear) {  // views of the fused projections
        const std::string a = p + "linear_attn.", g = std::to_string(s.linear.key_heads),
                          period = std::to_string(2 * s.linear.key_dim + 2 * s.linear.value_heads / std::max(1, s.linear.key_heads) * s.linear.value_dim);
        names = {{"w_q", a + "in_proj_qkvz.weight.view(" + g + ", " + period + ", d)[:, q].T"},
                 {"w_k", a + "in_proj_qkvz.weight.view(" + g + ", " + period + ", d)[:, k].T"},
                 {"w_v", a + "in_proj_qkvz.weight.view(" + g + ", " + period + ", d)[:, v].T"},
                 {"linear.w_z", a + "in_proj_qkvz.weight.view(" + g + ", " + period + ", d)[:, z].T"},
                 {"linear.w_b", a + "in_proj_ba.weight (b rows).T"},
                 {"linear.w_a", a + "in_proj_ba.weight (a rows).T"},
                 {"w_o", a + "out_proj.weight.T"}};
    } else if (s.tensors == TensorLayout::qwen3_5 && s.layers[static_cast<std::size_t>(layer)].linear) {  // in_proj_qkv's rows, the rest apart
        const std::string qk = std::to_string(s.linear.key_heads * s.linear.key_dim), qk2 = std::to_string(2 * s.linear.key_heads * s.linear.key_dim),
                          c = std::to_string(2 * s.linear.key_heads * s.linear.key_dim + s.linear.value_heads * s.linear.value_dim);
        const std::string a = p + "linear_attn.";
        names = {{"w_q", a + "in_proj_qkv.weight[0:" + qk + "].T"}, {"w_k", a + "in_proj_qkv.weight[" + qk + ":" + qk2 + "].T"},
                 {"w_v", a + "in_proj_qkv.weight[" + qk2 + ":" + c + "].T"}, {"linear.w_z", a + "in_proj_z.weight.T"},
                 {"linear.w_b", a + "in_proj_b.weight.T"}, {"linear.w_a", a + "in_proj_a.weight.T"}, {"w_o", a + "out_proj.weight.T"}};
    } else if (s.output_gate) {
        const std::string H = std::to_string(s.n_heads), hd = std::to_string(s.head_dim);
        names[0] = {"w_q", p + "self_attn.q_proj.weight.view(" + H + ", 2, " + hd + ", d)[:, 0].T"};
        names.push_back({"w_g", p + "self_attn.q_proj.weight.view(" + H + ", 2, " + hd + ", d)[:, 1].T"});
    }
    if (s.layers[static_cast<std::size_t>(layer)].moe && s.tensors == TensorLayout::gpt_oss) {  // the experts fused, used as stored
        names.push_back({"block.moe.router", p + "mlp.router.weight.T"});
        for (int e = 0; e < s.experts.experts; ++e) {
            const std::string x = p + "mlp.experts.", k = "block.moe.experts." + std::to_string(e) + ".", at = "[" + std::to_string(e) + "]";
            if (s.experts.mxfp4) {  // blocks and scales stored (out × in): the transposes of the rows taken
                names.push_back({k + "w_gate", x + "gate_up_proj_blocks" + at + "[0::2].T (MXFP4, gate_up_proj_scales)"});
                names.push_back({k + "w_1", x + "gate_up_proj_blocks" + at + "[1::2].T (MXFP4, gate_up_proj_scales)"});
                names.push_back({k + "w_2", x + "down_proj_blocks" + at + ".T (MXFP4, down_proj_scales)"});
                continue;
            }
            names.push_back({k + "w_gate", x + "gate_up_proj" + at + "[:, 0::2]"});
            names.push_back({k + "w_1", x + "gate_up_proj" + at + "[:, 1::2]"});
            names.push_back({k + "w_2", x + "down_proj" + at});
        }
        return names;
    }
    if (s.tensors == TensorLayout::llama4) {  // feed_forward: dense, or the router, the fused experts and the shared expert
        const std::string f = p + "feed_forward.";
        if (!s.layers[static_cast<std::size_t>(layer)].moe) {
            names.insert(names.end(), {{"block.w_gate", f + "gate_proj.weight.T"}, {"block.w_1", f + "up_proj.weight.T"},
                                       {"block.w_2", f + "down_proj.weight.T"}});
            return names;
        }
        const std::string ff = std::to_string(s.experts.d_ff), ff2 = std::to_string(2 * s.experts.d_ff);
        names.push_back({"block.moe.router", f + "router.weight.T"});
        for (int e = 0; e < s.experts.experts; ++e) {
            const std::string k = "block.moe.experts." + std::to_string(e) + ".", at = "[" + std::to_string(e) + "]";
            names.push_back({k + "w_gate", f + "experts.gate_up_proj" + at + "[:, 0:" + ff + "]"});
            names.push_back({k + "w_1", f + "experts.gate_up_proj" + at + "[:, " + ff + ":" + ff2 + "]"});
            names.push_back({k + "w_2", f + "experts.down_proj" + at});
        }
        names.insert(names.end(), {{"block.moe.shared_weights.w_gate", f + "shared_expert.gate_proj.weight.T"},
                                   {"block.moe.shared_weights.w_1", f + "shared_expert.up_proj.weight.T"},
                                   {"block.moe.shared_weights.w_2", f + "shared_expert.down_proj.weight.T"}});
        return names;
    }
    if (s.layers[static_cast<std::size_t>(layer)].moe) {  // a mixture of experts: the router and each expert
        const MixtureNames n = mixture_names(s);
        const std::string m = p + n.module + ".";
        names.push_back({"block.moe.router", m + "gate.weight.T"});
        const std::string ff = std::to_string(s.experts.d_ff), ff2 = std::to_string(2 * s.experts.d_ff);
        for (int e = 0; e < s.experts.experts; ++e) {
            const std::string x = m + "experts." + std::to_string(e) + ".", k = "block.moe.experts." + std::to_string(e) + ".";
            if (s.experts.fused) {  // transformers 5's: every expert in two tensors
                const std::string at = "[" + std::to_string(e) + "]";
                names.push_back({k + "w_gate", m + "experts.gate_up_proj" + at + "[0:" + ff + "].T"});
                names.push_back({k + "w_1", m + "experts.gate_up_proj" + at + "[" + ff + ":" + ff2 + "].T"});
                names.push_back({k + "w_2", m + "experts.down_proj" + at + ".T"});
                continue;
            }
            names.push_back({k + "w_gate", x + n.gate + ".weight.T"});
            names.push_back({k + "w_1", x + n.up + ".weight.T"});
            names.push_back({k + "w_2", x + n.down + ".weight.T"});
        }
        if (s.experts.shared_d_ff > 0) {
            const std::string shared = p + shared_expert_module(s) + ".";
            names.insert(names.end(), {{"block.moe.shared_weights.w_gate", shared + "gate_proj.weight.T"},
                                       {"block.moe.shared_weights.w_1", shared + "up_proj.weight.T"},
                                       {"block.moe.shared_weights.w_2", shared + "down_proj.weight.T"}});
            if (s.experts.shared_gate) names.push_back({"block.moe.shared_gate", m + "shared_expert_gate.weight.T"});
        }
        return names;
    }
    names.insert(names.end(), {{"block.w_gate", p + "mlp.gate_proj.weight.T"}, {"block.w_1", p + "mlp.up_proj.weight.T"},
                               {"block.w_2", p + "mlp.down_proj.weight.T"}});
    return names;
}

// [SECTION] The files: one, or shards by an index

namespace {

struct Located {
    std::size_t file = 0;
    const TensorInfo* info = nullptr;
};

// Opens model.safetensors, or the shards model.safetensors.index.json names; every tensor of
// every file in `where` (a tensor found twice is an error).
bool open_files(const fs::path& folder, std::vector<SafetensorsFile>& files, std::map<std::string, Located>& where,
                std::vector<std::string>& file_names, std::vector<std::string>& errors) {
    const fs::path single = folder / "model.safetensors", index_path = folder / "model.safetensors.index.json";
    std::error_code ec;
    if (fs::exists(single, ec) || !fs::exists(index_path, ec)) {
        if (!fs::exists(single, ec)) {
            errors.push_back(single.string() + ": missing, and there is no model.safetensors.index.json" +
                             (fs::exists(folder / "pytorch_model.bin", ec) ? "; pytorch_model.bin is there, but only safetensors are read" : ""));
            return false;
        }
        auto file = SafetensorsFile::open(single.string(), errors);
        if (!file) return false;
        for (const std::string& name : file->names()) where[name] = {0, file->info(name)};
        files.push_back(std::move(*file));
        file_names.push_back(single.string());
        return true;
    }
    const std::string source = index_path.string();
    const auto text = read_text_file(source, 64u << 20, "safetensors index", errors);
    if (!text) return false;
    const auto index = parse_json(*text, source, errors, JsonLimits{"safetensors index", 4, 1u << 22});
    if (!index) return false;
    Faults faults(source);
    const auto map_it = index->is_object() ? index->find("weight_map") : index->end();
    if (map_it == index->end() || !map_it->is_object()) {
        faults.add("key 'weight_map': missing or not an object of tensor name → shard file");
        faults.flush_into(errors);
        return false;
    }
    // shard file → the tensors the index puts there
    std::map<std::string, std::vector<std::string>> shards;
    for (const auto& [tensor, shard] : map_it->items()) {
        const std::string file = shard.is_string() ? shard.get<std::string>() : "";
        if (tensor.size() > safetensors::kMaxTensorNameBytes)
            faults.add("weight_map has a tensor name of " + std::to_string(tensor.size()) + " bytes ('" +
                       printable(tensor, 60) + "'): a name is at most " + std::to_string(safetensors::kMaxTensorNameBytes) +
                       " bytes");
        else if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos || file.find('\\') != std::string::npos ||
            file.find('\0') != std::string::npos)
            faults.add("weight_map['" + printable(tensor, 80) + "']: " + shown_name(shard) +
                       " is not a file name in this folder");
        else shards[file].push_back(tensor);
    }
    if (!faults.flush_into(errors)) return false;
    bool ok = true;
    for (const auto& [shard, tensors] : shards) {
        const fs::path path = folder / shard;
        if (!fs::exists(path, ec)) {
            // A symlink loop or a folder without permission is there but cannot be reached: say so.
            errors.push_back(path.string() + (ec ? ": cannot be reached (" + reason_of_errno(ec.value()) + ")" : std::string(": missing")) + "; " + source + " names it for " + std::to_string(tensors.size()) +
                             " tensor" + (tensors.size() == 1 ? "" : "s") + " ('" + printable(tensors.front(), 80) + "', …)");
            ok = false;
            continue;
        }
        auto file = SafetensorsFile::open(path.string(), errors);
        if (!file) {
            ok = false;
            continue;
        }
        const std::size_t k = files.size();
        for (const std::string& tensor : tensors)
            if (!file->has(tensor)) {
                errors.push_back(path.string() + ": tensor '" + printable(tensor, 80) + "' is missing, but " + source +
                                 " says it is in this shard");
                ok = false;
            }
        for (const std::string& name : file->names()) {
            if (const auto seen = where.find(name); seen != where.end()) {
                errors.push_back(path.string() + ": tensor '" + printable(name, 80) + "' is also in " +
                                 file_names[seen->second.file] + "; a tensor must be stored once");
                ok = false;
                continue;
            }
            const auto listed = map_it->find(name);
            if (listed == map_it->end() || *listed != shard) {
                errors.push_back(path.string() + ": tensor '" + printable(name, 80) + "' is not in " + source +
                                 "'s weight_map for this shard");
                ok = false;
            }
            where[name] = {k, file->info(name)};
        }
        files.push_back(std::move(*file));
        file_names.push_back(path.string());
    }
    return ok;
}

}  // namespace

// [SECTION] Loading

void load_weights(const std::string& folder, ModelSpec& spec, ModelLoad& load) {
    const fs::path root(folder);
    std::vector<SafetensorsFile> files;
    std::map<std::string, Located> where;
    if (!open_files(root, files, where, load.files, load.errors)) return;
    // A multimodal folder saved by a newer transformers (Gemma 3's): read in the layout it is saved in
    if (spec.resaved_layout && !where.count(spec.tensor_prefix + "embed_tokens.weight") &&
        where.count(spec.resaved_layout->tensor_prefix + "embed_tokens.weight"))
        spec.use_resaved_layout();
    // Experts saved as transformers 5 keeps them (Qwen3.5-MoE as published; Mixtral's mixture renamed mlp
    // there): every expert of a layer in two tensors, read in place of the experts.E.* of transformers 4
    if (spec.experts.experts > 0 && spec.tensors != TensorLayout::gpt_oss && spec.tensors != TensorLayout::llama4) {
        for (std::size_t l = 0; l < spec.layers.size() && !spec.experts.fused; ++l)
            spec.experts.fused = spec.layers[l].moe && where.count(spec.tensor_prefix + "layers." + std::to_string(l) + ".mlp.experts.gate_up_proj");
    }

    Weights weights;
    RefList list = refs_of(spec, weights);
    Faults faults(folder);
    // Pass 1: every name and shape, before a value is read.
    auto names_of = [](const Ref& ref) { auto all = ref.also; all.insert(all.begin(), ref.name); return all; };
    std::vector<std::vector<std::string>> found_of(list.refs.size());
    std::size_t missing = 0;
    for (std::size_t i = 0; i < list.refs.size(); ++i) {
        for (const std::string& name : names_of(list.refs[i]))
            if (where.count(name)) found_of[i].push_back(name);
        missing += found_of[i].empty();
    }
    if (missing == list.refs.size()) {  // nothing of the family's: said once instead of listing every tensor
        std::string some;
        int shown = 0;
        for (auto it = where.begin(); it != where.end() && shown < 3; ++it, ++shown) some += (shown ? ", '" : "'") + printable(it->first, 60) + "'";
        faults.add("none of " + spec.model_type + "'s tensors is here (no '" + list.refs.front().name + "'); the weights hold " +
                   std::to_string(where.size()) + (where.size() == 1 ? " tensor" : " tensors") + (where.empty() ? "" : ", such as " + some) +
                   ": not a " + spec.model_type + " checkpoint?");
        faults.flush_into(load.errors);
        return;
    }
    // A layer none of whose tensors is here is one fault, not one per tensor: its tensors are
    // those whose name has the layer's number as its first numbered part ("h.2.", "model.layers.2.").
    struct LayerOf {
        std::string stem;  // "transformer.h.2."
        int index = -1;
    };
    auto layer_of = [](const std::string& name) {
        for (std::size_t begin = 0, dot; (dot = name.find('.', begin)) != std::string::npos; begin = dot + 1) {
            const std::size_t digits = dot - begin;
            if (digits == 0 || digits > 9) continue;  // at most 9 digits: an int
            if (std::all_of(name.begin() + static_cast<std::ptrdiff_t>(begin), name.begin() + static_cast<std::ptrdiff_t>(dot),
                            [](char c) { return c >= '0' && c <= '9'; }))
                return LayerOf{name.substr(0, dot + 1), std::stoi(name.substr(begin, digits))};
        }
        return LayerOf{};
    };
    std::map<std::string, std::pair<std::size_t, std::size_t>> layer_tensors;  // stem → (tensors, missing)
    for (std::size_t i = 0; i < list.refs.size(); ++i)
        if (const LayerOf layer = layer_of(list.refs[i].name); layer.index >= 0) {
            ++layer_tensors[layer.stem].first;
            layer_tensors[layer.stem].second += found_of[i].empty();
        }
    std::set<std::string> said;
    std::set<std::string> used;
    std::vector<std::string> stored(list.refs.size());
    for (std::size_t i = 0; i < list.refs.size(); ++i) {
        const Ref& ref = list.refs[i];
        const std::vector<std::string>& found = found_of[i];
        if (found.empty()) {
            const LayerOf layer = layer_of(ref.name);
            if (const auto it = layer_tensors.find(layer.stem); layer.index >= 0 && it->second.first == it->second.second) {
                if (said.insert(layer.stem).second) {
                    const bool prefixed = !list.prefix.empty() && layer.stem.compare(0, list.prefix.size(), list.prefix) == 0;
                    faults.add("layer " + std::to_string(layer.index) + " (counted from 0) is missing: no tensor '" + layer.stem +
                               "\xE2\x80\xA6'" + (prefixed ? " nor '" + layer.stem.substr(list.prefix.size()) + "\xE2\x80\xA6'" : std::string()) +
                               " is here, but config.json gives " + std::to_string(spec.layers.size()) + " layers");
                }
                continue;
            }
            std::string others;
            for (const auto& a : ref.also) others += (others.empty() ? " (nor '" : "', '") + a;
            faults.add("tensor '" + ref.name + "' is missing" + (others.empty() ? "" : others + "')") + ": " + spec.model_type +
                       " with this config.json needs it, shape " + shape_text(ref.shape));
            continue;
        }
        if (found.size() > 1) {
            // BERT's two names of the decoder bias are one tied parameter: equal values are fine (checked below)
            if (ref.name != "cls.predictions.bias")
                faults.add("tensor '" + ref.name + "' is stored under " + std::to_string(found.size()) + " names ('" + found[0] +
                           "', '" + found[1] + "'); which one transformers would load is not defined");
            for (std::size_t k = 1; k < found.size(); ++k) used.insert(found[k]);
        }
        stored[i] = found[0];
        used.insert(found[0]);
        const Located& at = where.at(found[0]);
        if (at.info->shape != ref.shape) {
            const bool transposed = ref.shape.size() == 2 && at.info->shape == Shape{ref.shape[1], ref.shape[0]};
            faults.add(load.files[at.file] + ": tensor '" + found[0] + "' is " + shape_text(at.info->shape) + "; expected " +
                       shape_text(ref.shape) + " for this config.json" +
                       (transposed ? std::string(": it is stored transposed (") +
                                         (spec.tensors == TensorLayout::gpt2 ? "GPT-2's Conv1D stores (in, out)" : "nn.Linear stores (out, in)") + ")"
                                   : std::string()));
        }
        else if (ref.bytes && at.info->dtype != "U8")
            faults.add(load.files[at.file] + ": tensor '" + found[0] + "' is " + at.info->dtype + "; MXFP4's blocks and scales are U8");
        else if (!ref.bytes && !at.info->floating)
            faults.add(load.files[at.file] + ": tensor '" + found[0] + "' is " + at.info->dtype + "; only F32, F16 and BF16 are read");
    }
    const std::vector<std::string> tied = tied_head_names(spec);
    for (const auto& [name, at] : where) {
        if (used.count(name)) continue;
        if (ignorable(spec, name) || std::find(tied.begin(), tied.end(), name) != tied.end()) {
            load.ignored.push_back(name);
            continue;
        }
        // A layer beyond config.json's: one fault for all its tensors.
        if (const LayerOf layer = layer_of(name); layer.index >= static_cast<int>(spec.layers.size())) {
            if (said.insert(load.files[at.file] + layer.stem).second)
                faults.add(load.files[at.file] + ": tensors '" + printable(layer.stem, 100) + "\xE2\x80\xA6' belong to layer " +
                           std::to_string(layer.index) + " (counted from 0), but config.json gives " + std::to_string(spec.layers.size()) +
                           (spec.layers.size() == 1 ? " layer" : " layers") + ": refused rather than ignored");
            continue;
        }
        faults.add(load.files[at.file] + ": tensor '" + printable(name, 100) + "' is not one of a " + spec.model_type +
                   " checkpoint's (with this config.json); refused rather than ignored");
    }
    if (!faults.flush_into(load.errors)) return;

    // The matrices are read where the files store them: the stored bytes become resident as
    // the passes read them, so they are checked against what the machine can still give.
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < list.refs.size(); ++i) bytes += where.at(stored[i]).info->end - where.at(stored[i]).info->begin;
    if (const auto available = available_memory_bytes(); available && bytes > *available) {
        load.errors.push_back(folder + ": its weights need " + byte_size_text(bytes) + " of memory, but only " +
                              byte_size_text(*available) + " is available");
        return;
    }

    // Pass 2: matrices held where the files store them (the mapping stays while they live);
    // vectors read as float32, the file's pages released after each.
    std::vector<float> values;
    for (std::size_t i = 0; i < list.refs.size(); ++i) {
        const Located& at = where.at(stored[i]);
        const Ref& ref = list.refs[i];
        if (ref.bytes) {  // U8, checked in pass 1
            const auto raw = files[at.file].stored_bytes(stored[i]);
            ref.bytes(raw->owner, raw->bytes);
            continue;
        }
        if (ref.hold) {
            const auto bytes = files[at.file].stored(stored[i]);  // floating, checked in pass 1
            // (rows × cols) as stored; a three-dimensional tensor (gpt-oss's experts) as (E·rows × cols)
            std::int64_t rows = 1;
            for (std::size_t k = 0; k + 1 < ref.shape.size(); ++k) rows *= ref.shape[k];
            ref.hold(StoredMatrix::as_stored(bytes->owner, bytes->bytes, bytes->dtype, rows, ref.shape.back()));
            continue;
        }
        if (!files[at.file].read(stored[i], values, load.errors)) return;
        files[at.file].release(stored[i]);
        ref.store(values);
    }
    // A tied head stored beside the embedding, and BERT's second name of the decoder bias, must
    // hold the same values as the parameter they are tied to.
    auto differs = [&](const std::string& name, const std::string& tied_to) {
        const auto it = where.find(name);
        load.errors.push_back(load.files[it->second.file] + ": tensor '" + name + "' differs from " + tied_to + ", but " +
                              "tie_word_embeddings ties them: transformers would use one of them for both");
    };
    for (const std::string& name : tied) {
        // compared row by row where both are stored: neither is widened whole
        const auto it = where.find(name);
        if (it == where.end()) continue;
        const SharedMatrix& embedding = weights.token_embedding;
        const Shape embedding_shape = {embedding.rows(), embedding.cols()};
        if (it->second.info->shape != embedding_shape) {  // the shape, not only the count: [d, V] is not [V, d]
            load.errors.push_back(load.files[it->second.file] + ": tensor '" + name + "' is " + shape_text(it->second.info->shape) +
                                  "; tie_word_embeddings ties it to the token embedding, " + shape_text(embedding_shape) +
                                  ": transformers would refuse the mismatch");
            continue;
        }
        const auto bytes = files[it->second.file].stored(name);
        bool same = bytes.has_value();
        if (same) {
            const StoredMatrix head = StoredMatrix::as_stored(bytes->owner, bytes->bytes, bytes->dtype, embedding.rows(), embedding.cols());
            Vector a(embedding.cols()), b(embedding.cols());
            for (Eigen::Index r = 0; r < embedding.rows() && same; ++r) {
                embedding.row_into(r, a.data());
                head.widen_row(r, b.data());
                same = a == b;
            }
        }
        if (!same) differs(name, "the token embedding");
    }
    if (spec.tensors == TensorLayout::bert)
        for (const std::string& name : {std::string("cls.predictions.decoder.bias"), std::string("cls.predictions.bias")}) {
            const auto it = where.find(name);
            if (it == where.end() || std::find(stored.begin(), stored.end(), name) != stored.end()) continue;
            const Vector& expected = weights.lm_head_bias;
            if (const Shape bias_shape = {expected.size()}; it->second.info->shape != bias_shape) {
                load.errors.push_back(load.files[it->second.file] + ": tensor '" + name + "' is " + shape_text(it->second.info->shape) +
                                      "; the decoder's bias it is tied to is " + shape_text(bias_shape));
                continue;
            }
            if (
                !files[it->second.file].read(name, values, load.errors) || !std::equal(values.begin(), values.end(), expected.data()))
                differs(name, "the decoder's bias");
        }
    if (!load.errors.empty()) return;
    load.weights = std::move(weights);
}

ModelLoad load_model(const std::string& folder) {
    return guard_memory<ModelLoad>(folder, "model", [&] {
        ModelLoad load;
        const std::string config_path = (fs::path(folder) / "config.json").string();
        if (const auto text = read_text_file(config_path, json_limits::kConfigBytes, "config", load.errors))
            load.spec = spec_from_config(*text, config_path, load.errors);
        if (load.spec) load_weights(folder, *load.spec, load);
        return load;
    });
}

}  // namespace attn::hf
