// Hugging Face checkpoints of every family read (core/model/hf): each fixture of
// hf_family_fixtures.hpp written in the exact layout and read back bit for bit, the specs its
// config.json gives, every refusal, and the plain-loop reference forward pass's own sanity —
// tied to the tested GPT-2 engine by running both on one GPT-2 checkpoint.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "bad_model_catalogue.hpp"
#include "attention/engine.hpp"
#include "model/gpt2/checkpoint.hpp"
#include "hf_family_fixtures.hpp"
#include "model/hf/model.hpp"
#include "model/hf/weights.hpp"
#include "joined.hpp"
#include "model/language_model.hpp"
#include "tensor/memory_room.hpp"
#include "attention/positional.hpp"
#include "tensor/stored_matrix.hpp"
#include "model/weights_comparison.hpp"

using namespace attn;
using namespace attn::testing::families;
using attn::testing::joined;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// What a head's weights are: a softmax's, or a Gated DeltaNet head's implied ones (o = A·V).
const Matrix& head_map(const HeadTrace& head) { return head.implied_weights.size() != 0 ? head.implied_weights : head.weights; }

// [SECTION] Helpers

Matrix stored(const FamilyCheckpoint& c, const std::string& name) {
    const HfTensor& t = c.tensors.at(name);
    REQUIRE(t.shape.size() == 2);
    return Eigen::Map<const Matrix>(t.values.data(), t.shape[0], t.shape[1]);
}
Vector stored_vector(const FamilyCheckpoint& c, const std::string& name) {
    const HfTensor& t = c.tensors.at(name);
    REQUIRE(t.shape.size() == 1);
    return Eigen::Map<const Vector>(t.values.data(), t.shape[0]);
}
// Bit for bit: same shape, every float equal.
void check_same(const Matrix& got, const Matrix& expected, const std::string& what) {
    INFO(what);
    REQUIRE(got.rows() == expected.rows());
    REQUIRE(got.cols() == expected.cols());
    CHECK(got == expected);
}

// A folder of its own under the system temporary folder (never the working directory).
std::string folder_for(const std::string& label) {
    return (std::filesystem::temp_directory_path() / ("attnlab-test-hf-families-" + label)).string();
}

hf::ModelLoad written_and_read(const FamilyCheckpoint& c, const std::string& folder) {
    write_family_checkpoint(folder, c);
    hf::ModelLoad load = hf::load_model(folder);
    INFO(joined(load.errors));
    REQUIRE(load.spec);
    REQUIRE(load.weights);
    return load;
}

// The checkpoint written to the folder and opened as the engine takes it (its layers' scenarios).
hf::OpenedModel written_and_opened(const FamilyCheckpoint& c, const std::string& folder) {
    write_family_checkpoint(folder, c);
    hf::OpenedModelLoad opened = hf::open_model(folder, false);
    INFO(joined(opened.errors));
    REQUIRE(opened.model);
    return std::move(*opened.model);
}

hf::ModelSpec spec_of(const json& config) {
    std::vector<std::string> errors;
    auto spec = hf::spec_from_config(config.dump(), "config.json", errors);
    INFO(joined(errors));
    REQUIRE(spec);
    return *spec;
}
std::string refusal_of(const json& config) {
    std::vector<std::string> errors;
    CHECK_FALSE(hf::spec_from_config(config.dump(), "config.json", errors));
    return joined(errors);
}

// Llama/Qwen/Gemma: every matrix is nn.Linear's (out × in) transposed, every vector as stored.
void check_decoder_weights(const FamilyCheckpoint& c, const hf::ModelSpec& s, const hf::Weights& w) {
    check_same(w.token_embedding, stored(c, s.tensor_prefix + "embed_tokens.weight"), "embed_tokens");
    for (int l = 0; l < s.n_layers; ++l) {
        const hf::LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
        const std::string p = s.tensor_prefix + "layers." + std::to_string(l) + ".";
        if (s.tensors == hf::TensorLayout::phi3) {
            // Phi-3: Q's rows, then K's, then V's of qkv_proj; the gate's rows, then up's of gate_up_proj
            const Matrix qkv = stored(c, p + "self_attn.qkv_proj.weight"), gate_up = stored(c, p + "mlp.gate_up_proj.weight");
            const int q = s.n_heads * s.head_dim, kv = s.n_kv_heads * s.head_dim;
            REQUIRE(qkv.rows() == q + 2 * kv);
            check_same(L.w_q, qkv.topRows(q).transpose(), p + "qkv_proj[0:q]");
            check_same(L.w_k, qkv.middleRows(q, kv).transpose(), p + "qkv_proj[q:q+kv]");
            check_same(L.w_v, qkv.bottomRows(kv).transpose(), p + "qkv_proj[q+kv:]");
            check_same(L.w_gate, gate_up.topRows(s.d_ff).transpose(), p + "gate_up_proj[0:ff]");
            check_same(L.w_up, gate_up.bottomRows(s.d_ff).transpose(), p + "gate_up_proj[ff:]");
        } else if (s.latent.kv_rank > 0) {
            // DeepSeek-V3: the latent's projections and norms, no W_K or W_V
            check_same(L.w_q_a, stored(c, p + "self_attn.q_a_proj.weight").transpose(), p + "q_a_proj");
            check_same(L.w_q_b, stored(c, p + "self_attn.q_b_proj.weight").transpose(), p + "q_b_proj");
            check_same(L.w_kv_a, stored(c, p + "self_attn.kv_a_proj_with_mqa.weight").transpose(), p + "kv_a_proj_with_mqa");
            check_same(L.w_kv_b, stored(c, p + "self_attn.kv_b_proj.weight").transpose(), p + "kv_b_proj");
            check_same(L.q_a_norm.weight, stored_vector(c, p + "self_attn.q_a_layernorm.weight"), p + "q_a_layernorm");
            check_same(L.kv_a_norm.weight, stored_vector(c, p + "self_attn.kv_a_layernorm.weight"), p + "kv_a_layernorm");
            CHECK(L.w_k.size() == 0);
            CHECK(L.w_v.size() == 0);
            if (s.layers[static_cast<std::size_t>(l)].moe) {
                check_same(L.choice_bias, stored_vector(c, p + "mlp.gate.e_score_correction_bias"), p + "e_score_correction_bias");
                check_same(L.shared_expert.w_up, stored(c, p + "mlp.shared_experts.up_proj.weight").transpose(), p + "shared_experts.up_proj");
            }
        } else if (s.layers[static_cast<std::size_t>(l)].linear && s.tensors == hf::TensorLayout::qwen3_5) {
            // Qwen3.5's Gated DeltaNet: in_proj_qkv's rows [q | k | v], the rest stored apart
            const hf::LinearSpec& n = s.linear;
            const Matrix qkv = stored(c, p + "linear_attn.in_proj_qkv.weight");
            const int qk = n.key_heads * n.key_dim;
            REQUIRE(qkv.rows() == 2 * qk + n.value_heads * n.value_dim);
            check_same(L.w_q, qkv.topRows(qk).transpose(), p + "in_proj_qkv q");
            check_same(L.w_k, qkv.middleRows(qk, qk).transpose(), p + "in_proj_qkv k");
            check_same(L.w_v, qkv.bottomRows(n.value_heads * n.value_dim).transpose(), p + "in_proj_qkv v");
            check_same(L.w_z, stored(c, p + "linear_attn.in_proj_z.weight").transpose(), p + "in_proj_z");
            check_same(L.w_b, stored(c, p + "linear_attn.in_proj_b.weight").transpose(), p + "in_proj_b");
            check_same(L.w_a, stored(c, p + "linear_attn.in_proj_a.weight").transpose(), p + "in_proj_a");
            const HfTensor& conv = c.tensors.at(p + "linear_attn.conv1d.weight");
            check_same(L.conv, Eigen::Map<const Matrix>(conv.values.data(), conv.shape[0], conv.shape[2]), p + "conv1d");
            check_same(L.a_log, stored_vector(c, p + "linear_attn.A_log"), p + "A_log");
            check_same(L.w_o, stored(c, p + "linear_attn.out_proj.weight").transpose(), p + "out_proj");
        } else if (s.layers[static_cast<std::size_t>(l)].linear) {
            // Qwen3-Next's Gated DeltaNet: per key head g the rows [q_g | k_g | v | z] of in_proj_qkvz and [b | a] of
            // in_proj_ba, written out here row by row from the definition (fix_query_key_value_ordering)
            const hf::LinearSpec& n = s.linear;
            const int per = n.value_heads / n.key_heads, period = 2 * n.key_dim + 2 * per * n.value_dim;
            const Matrix qkvz = stored(c, p + "linear_attn.in_proj_qkvz.weight"), ba = stored(c, p + "linear_attn.in_proj_ba.weight");
            Matrix q(n.key_heads * n.key_dim, s.d_model), k = q, v(n.value_heads * n.value_dim, s.d_model), z = v, b(n.value_heads, s.d_model), a = b;
            for (int g = 0; g < n.key_heads; ++g) {
                q.middleRows(g * n.key_dim, n.key_dim) = qkvz.middleRows(g * period, n.key_dim);
                k.middleRows(g * n.key_dim, n.key_dim) = qkvz.middleRows(g * period + n.key_dim, n.key_dim);
                v.middleRows(g * per * n.value_dim, per * n.value_dim) = qkvz.middleRows(g * period + 2 * n.key_dim, per * n.value_dim);
                z.middleRows(g * per * n.value_dim, per * n.value_dim) = qkvz.middleRows(g * period + 2 * n.key_dim + per * n.value_dim, per * n.value_dim);
                b.middleRows(g * per, per) = ba.middleRows(g * 2 * per, per);
                a.middleRows(g * per, per) = ba.middleRows(g * 2 * per + per, per);
            }
            check_same(L.w_q, q.transpose(), p + "in_proj_qkvz q");
            check_same(L.w_k, k.transpose(), p + "in_proj_qkvz k");
            check_same(L.w_v, v.transpose(), p + "in_proj_qkvz v");
            check_same(L.w_z, z.transpose(), p + "in_proj_qkvz z");
            check_same(L.w_b, b.transpose(), p + "in_proj_ba b");
            check_same(L.w_a, a.transpose(), p + "in_proj_ba a");
            const HfTensor& conv = c.tensors.at(p + "linear_attn.conv1d.weight");
            check_same(L.conv, Eigen::Map<const Matrix>(conv.values.data(), conv.shape[0], conv.shape[2]), p + "conv1d");
            check_same(L.a_log, stored_vector(c, p + "linear_attn.A_log"), p + "A_log");
            check_same(L.dt_bias, stored_vector(c, p + "linear_attn.dt_bias"), p + "dt_bias");
            check_same(L.delta_norm, stored_vector(c, p + "linear_attn.norm.weight"), p + "norm");
            check_same(L.w_o, stored(c, p + "linear_attn.out_proj.weight").transpose(), p + "out_proj");
        } else if (s.output_gate) {
            // Qwen3-Next's full layers: q_proj's rows per head, its query's hd, then its gate's hd
            const Matrix both = stored(c, p + "self_attn.q_proj.weight");
            Matrix q(s.n_heads * s.head_dim, s.d_model), gate = q;
            for (int h = 0; h < s.n_heads; ++h) {
                q.middleRows(h * s.head_dim, s.head_dim) = both.middleRows(2 * h * s.head_dim, s.head_dim);
                gate.middleRows(h * s.head_dim, s.head_dim) = both.middleRows((2 * h + 1) * s.head_dim, s.head_dim);
            }
            check_same(L.w_q, q.transpose(), p + "q_proj (queries)");
            check_same(L.w_g, gate.transpose(), p + "q_proj (gates)");
            check_same(L.w_k, stored(c, p + "self_attn.k_proj.weight").transpose(), p + "k_proj");
            check_same(L.w_v, stored(c, p + "self_attn.v_proj.weight").transpose(), p + "v_proj");
        } else {
            check_same(L.w_q, stored(c, p + "self_attn.q_proj.weight").transpose(), p + "q_proj");
            check_same(L.w_k, stored(c, p + "self_attn.k_proj.weight").transpose(), p + "k_proj");
            check_same(L.w_v, stored(c, p + "self_attn.v_proj.weight").transpose(), p + "v_proj");
        }
        if (!s.layers[static_cast<std::size_t>(l)].linear) check_same(L.w_o, stored(c, p + "self_attn.o_proj.weight").transpose(), p + "o_proj");
        if (s.tensors == hf::TensorLayout::gpt_oss) {
            // gpt-oss: the router and its bias; expert e's gate the even columns of gate_up_proj[e] and
            // its up the odd ones, their biases alike; down_proj[e] as stored; each head's sink
            const std::string m = p + "mlp.";
            check_same(L.router, stored(c, m + "router.weight").transpose(), m + "router");
            check_same(L.router_bias, stored_vector(c, m + "router.bias"), m + "router.bias");
            check_same(L.sinks, stored_vector(c, p + "self_attn.sinks"), p + "self_attn.sinks");
            const HfTensor &gate_up = c.tensors.at(m + "experts.gate_up_proj"), &gate_up_bias = c.tensors.at(m + "experts.gate_up_proj_bias");
            const HfTensor &down = c.tensors.at(m + "experts.down_proj"), &down_bias = c.tensors.at(m + "experts.down_proj_bias");
            const int d = s.d_model, ff = s.experts.d_ff;
            REQUIRE(L.experts.size() == static_cast<std::size_t>(s.experts.experts));
            for (int e = 0; e < s.experts.experts; ++e) {
                Matrix gate(d, ff), up(d, ff);
                Vector gate_b(ff), up_b(ff);
                for (int r = 0; r < d; ++r)
                    for (int k = 0; k < ff; ++k) {
                        gate(r, k) = gate_up.values[static_cast<std::size_t>((e * d + r) * 2 * ff + 2 * k)];
                        up(r, k) = gate_up.values[static_cast<std::size_t>((e * d + r) * 2 * ff + 2 * k + 1)];
                    }
                for (int k = 0; k < ff; ++k) {
                    gate_b(k) = gate_up_bias.values[static_cast<std::size_t>(e * 2 * ff + 2 * k)];
                    up_b(k) = gate_up_bias.values[static_cast<std::size_t>(e * 2 * ff + 2 * k + 1)];
                }
                const hf::ExpertWeights& w = L.experts[static_cast<std::size_t>(e)];
                const std::string x = m + "experts[" + std::to_string(e) + "] ";
                check_same(w.w_gate, gate, x + "gate (even columns)");
                check_same(w.w_up, up, x + "up (odd columns)");
                check_same(w.b_gate, gate_b, x + "gate bias");
                check_same(w.b_up, up_b, x + "up bias");
                check_same(w.w_down, Eigen::Map<const Matrix>(down.values.data() + static_cast<std::ptrdiff_t>(e) * ff * d, ff, d), x + "down");
                check_same(w.b_down, Eigen::Map<const Vector>(down_bias.values.data() + static_cast<std::ptrdiff_t>(e) * d, d), x + "down bias");
            }
        } else if (s.tensors == hf::TensorLayout::llama4) {
            // Llama 4: feed_forward's dense MLP, or its router, the shared expert and expert e's gate the first
            // d_ff columns of gate_up_proj[e] and its up the next d_ff; down_proj[e] as stored
            const std::string f = p + "feed_forward.";
            if (!s.layers[static_cast<std::size_t>(l)].moe) {
                CHECK(L.experts.empty());
                check_same(L.w_gate, stored(c, f + "gate_proj.weight").transpose(), f + "gate_proj");
                check_same(L.w_up, stored(c, f + "up_proj.weight").transpose(), f + "up_proj");
                check_same(L.w_down, stored(c, f + "down_proj.weight").transpose(), f + "down_proj");
            } else {
                check_same(L.router, stored(c, f + "router.weight").transpose(), f + "router");
                check_same(L.shared_expert.w_gate, stored(c, f + "shared_expert.gate_proj.weight").transpose(), f + "shared_expert.gate_proj");
                check_same(L.shared_expert.w_up, stored(c, f + "shared_expert.up_proj.weight").transpose(), f + "shared_expert.up_proj");
                check_same(L.shared_expert.w_down, stored(c, f + "shared_expert.down_proj.weight").transpose(), f + "shared_expert.down_proj");
                const HfTensor &gate_up = c.tensors.at(f + "experts.gate_up_proj"), &down = c.tensors.at(f + "experts.down_proj");
                const int d = s.d_model, ff = s.experts.d_ff;
                REQUIRE(L.experts.size() == static_cast<std::size_t>(s.experts.experts));
                for (int e = 0; e < s.experts.experts; ++e) {
                    Matrix gate(d, ff), up(d, ff);
                    for (int r = 0; r < d; ++r)
                        for (int k = 0; k < ff; ++k) {
                            gate(r, k) = gate_up.values[static_cast<std::size_t>((e * d + r) * 2 * ff + k)];
                            up(r, k) = gate_up.values[static_cast<std::size_t>((e * d + r) * 2 * ff + ff + k)];
                        }
                    const hf::ExpertWeights& w = L.experts[static_cast<std::size_t>(e)];
                    const std::string x = f + "experts[" + std::to_string(e) + "] ";
                    check_same(w.w_gate, gate, x + "gate (the first d_ff columns)");
                    check_same(w.w_up, up, x + "up (the next d_ff)");
                    check_same(w.w_down, Eigen::Map<const Matrix>(down.values.data() + static_cast<std::ptrdiff_t>(e) * ff * d, ff, d), x + "down");
                }
            }
        } else if (s.layers[static_cast<std::size_t>(l)].moe) {  // Qwen3-MoE, Mixtral, Qwen3-Next: the router and every expert, no dense MLP
            const bool mixtral = s.tensors == hf::TensorLayout::mixtral;
            const std::string m = p + (mixtral ? "block_sparse_moe." : "mlp.");
            CHECK(L.w_gate.size() == 0);
            check_same(L.router, stored(c, m + "gate.weight").transpose(), m + "gate");
            REQUIRE(L.experts.size() == static_cast<std::size_t>(s.experts.experts));
            for (int e = 0; e < s.experts.experts; ++e) {
                const std::string x = m + "experts." + std::to_string(e) + ".";
                const hf::ExpertWeights& w = L.experts[static_cast<std::size_t>(e)];
                check_same(w.w_gate, stored(c, x + (mixtral ? "w1" : "gate_proj") + ".weight").transpose(), x + "gate");
                check_same(w.w_up, stored(c, x + (mixtral ? "w3" : "up_proj") + ".weight").transpose(), x + "up");
                check_same(w.w_down, stored(c, x + (mixtral ? "w2" : "down_proj") + ".weight").transpose(), x + "down");
            }
        } else if (s.tensors != hf::TensorLayout::phi3) {
            CHECK(L.experts.empty());
            check_same(L.w_gate, stored(c, p + "mlp.gate_proj.weight").transpose(), p + "gate_proj");
            check_same(L.w_up, stored(c, p + "mlp.up_proj.weight").transpose(), p + "up_proj");
        }
        if (!s.layers[static_cast<std::size_t>(l)].moe && s.tensors != hf::TensorLayout::llama4)
            check_same(L.w_down, stored(c, p + "mlp.down_proj.weight").transpose(), p + "down_proj");
        if (s.layout == hf::BlockLayout::after_sublayers) {  // OLMo 2: no norm before either sublayer, one after each
            CHECK_FALSE(L.attn_norm.present());
            CHECK_FALSE(L.mlp_norm.present());
            check_same(L.post_attn_norm.weight, stored_vector(c, p + "post_attention_layernorm.weight"), p + "post_attention_layernorm");
            check_same(L.post_mlp_norm.weight, stored_vector(c, p + "post_feedforward_layernorm.weight"), p + "post_feedforward_layernorm");
            CHECK(L.q_norm.weight.size() == s.n_heads * s.head_dim);  // over the whole projection
            CHECK(L.k_norm.weight.size() == s.n_kv_heads * s.head_dim);
        } else {
            check_same(L.attn_norm.weight, stored_vector(c, p + "input_layernorm.weight"), p + "input_layernorm");
        }
        CHECK(L.attn_norm.bias.size() == 0);
        if (s.layout == hf::BlockLayout::after_sublayers) {
        } else if (s.layout == hf::BlockLayout::sandwich) {
            check_same(L.post_attn_norm.weight, stored_vector(c, p + "post_attention_layernorm.weight"), p + "post_attention_layernorm");
            check_same(L.mlp_norm.weight, stored_vector(c, p + "pre_feedforward_layernorm.weight"), p + "pre_feedforward_layernorm");
            check_same(L.post_mlp_norm.weight, stored_vector(c, p + "post_feedforward_layernorm.weight"), p + "post_feedforward_layernorm");
        } else {
            check_same(L.mlp_norm.weight, stored_vector(c, p + "post_attention_layernorm.weight"), p + "post_attention_layernorm");
            CHECK_FALSE(L.post_attn_norm.present());
        }
        if (s.qkv_bias) {
            check_same(L.b_q, stored_vector(c, p + "self_attn.q_proj.bias"), p + "q_proj.bias");
            check_same(L.b_k, stored_vector(c, p + "self_attn.k_proj.bias"), p + "k_proj.bias");
            check_same(L.b_v, stored_vector(c, p + "self_attn.v_proj.bias"), p + "v_proj.bias");
        } else {
            CHECK(L.b_q.size() == 0);
        }
        if (s.o_bias) check_same(L.b_o, stored_vector(c, p + "self_attn.o_proj.bias"), p + "o_proj.bias");
        else CHECK(L.b_o.size() == 0);
        if (!s.sinks) CHECK(L.sinks.size() == 0);
        if (s.differential)  // DiffLlama: its four λ vectors, head_dim each
            for (const auto& [name, v] : {std::pair{"lambda_q1", &L.lambda_q1}, std::pair{"lambda_k1", &L.lambda_k1},
                                          std::pair{"lambda_q2", &L.lambda_q2}, std::pair{"lambda_k2", &L.lambda_k2}})
                check_same(*v, stored_vector(c, p + "self_attn." + name), p + "self_attn." + name);
        else
            CHECK(L.lambda_q1.size() == 0);
        if (s.qk_norm && !s.layers[static_cast<std::size_t>(l)].linear) {
            check_same(L.q_norm.weight, stored_vector(c, p + "self_attn.q_norm.weight"), p + "q_norm");
            check_same(L.k_norm.weight, stored_vector(c, p + "self_attn.k_norm.weight"), p + "k_norm");
        }
    }
    check_same(w.final_norm.weight, stored_vector(c, s.tensor_prefix + "norm.weight"), "norm");
    if (s.tied_lm_head) {
        CHECK(w.lm_head.size() == 0);
        CHECK(w.unembedding().shares(w.token_embedding));
    } else {
        check_same(w.lm_head, stored(c, "lm_head.weight"), "lm_head");
    }
}

void check_neox_weights(const FamilyCheckpoint& c, const hf::ModelSpec& s, const hf::Weights& w) {
    check_same(w.token_embedding, stored(c, "gpt_neox.embed_in.weight"), "embed_in");
    check_same(w.lm_head, stored(c, "embed_out.weight"), "embed_out");
    const int H = s.n_heads, hd = s.head_dim, d = s.d_model;
    for (int l = 0; l < s.n_layers; ++l) {
        const hf::LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
        const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
        const Matrix fused = stored(c, p + "attention.query_key_value.weight");
        const Vector fused_bias = stored_vector(c, p + "attention.query_key_value.bias");
        // rows of the fused weight, per head: q (hd rows), k (hd), v (hd)
        for (int h = 0; h < H; ++h)
            for (int ch = 0; ch < hd; ++ch) {
                for (int k = 0; k < d; ++k) {
                    CHECK(L.w_q(k, h * hd + ch) == fused((3 * h + 0) * hd + ch, k));
                    CHECK(L.w_k(k, h * hd + ch) == fused((3 * h + 1) * hd + ch, k));
                    CHECK(L.w_v(k, h * hd + ch) == fused((3 * h + 2) * hd + ch, k));
                }
                CHECK(L.b_q(h * hd + ch) == fused_bias((3 * h + 0) * hd + ch));
                CHECK(L.b_k(h * hd + ch) == fused_bias((3 * h + 1) * hd + ch));
                CHECK(L.b_v(h * hd + ch) == fused_bias((3 * h + 2) * hd + ch));
            }
        check_same(L.w_o, stored(c, p + "attention.dense.weight").transpose(), p + "dense");
        check_same(L.b_o, stored_vector(c, p + "attention.dense.bias"), p + "dense.bias");
        check_same(L.w_up, stored(c, p + "mlp.dense_h_to_4h.weight").transpose(), p + "dense_h_to_4h");
        check_same(L.b_up, stored_vector(c, p + "mlp.dense_h_to_4h.bias"), p + "dense_h_to_4h.bias");
        check_same(L.w_down, stored(c, p + "mlp.dense_4h_to_h.weight").transpose(), p + "dense_4h_to_h");
        check_same(L.b_down, stored_vector(c, p + "mlp.dense_4h_to_h.bias"), p + "dense_4h_to_h.bias");
        check_same(L.attn_norm.weight, stored_vector(c, p + "input_layernorm.weight"), p + "input_layernorm");
        check_same(L.attn_norm.bias, stored_vector(c, p + "input_layernorm.bias"), p + "input_layernorm.bias");
        check_same(L.mlp_norm.weight, stored_vector(c, p + "post_attention_layernorm.weight"), p + "post_attention_layernorm");
        check_same(L.mlp_norm.bias, stored_vector(c, p + "post_attention_layernorm.bias"), p + "post_attention_layernorm.bias");
        CHECK(L.w_gate.size() == 0);
    }
    check_same(w.final_norm.weight, stored_vector(c, "gpt_neox.final_layer_norm.weight"), "final_layer_norm");
    check_same(w.final_norm.bias, stored_vector(c, "gpt_neox.final_layer_norm.bias"), "final_layer_norm.bias");
}

void check_bert_weights(const FamilyCheckpoint& c, const hf::ModelSpec& s, const hf::Weights& w) {
    check_same(w.token_embedding, stored(c, "bert.embeddings.word_embeddings.weight"), "word_embeddings");
    check_same(w.position_embedding, stored(c, "bert.embeddings.position_embeddings.weight"), "position_embeddings");
    check_same(w.token_type_embedding, stored(c, "bert.embeddings.token_type_embeddings.weight"), "token_type_embeddings");
    check_same(w.embedding_norm.weight, stored_vector(c, "bert.embeddings.LayerNorm.gamma"), "embeddings.LayerNorm.gamma");
    check_same(w.embedding_norm.bias, stored_vector(c, "bert.embeddings.LayerNorm.beta"), "embeddings.LayerNorm.beta");
    for (int l = 0; l < s.n_layers; ++l) {
        const hf::LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
        const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
        check_same(L.w_q, stored(c, p + "attention.self.query.weight").transpose(), p + "query");
        check_same(L.b_q, stored_vector(c, p + "attention.self.query.bias"), p + "query.bias");
        check_same(L.w_k, stored(c, p + "attention.self.key.weight").transpose(), p + "key");
        check_same(L.b_k, stored_vector(c, p + "attention.self.key.bias"), p + "key.bias");
        check_same(L.w_v, stored(c, p + "attention.self.value.weight").transpose(), p + "value");
        check_same(L.b_v, stored_vector(c, p + "attention.self.value.bias"), p + "value.bias");
        check_same(L.w_o, stored(c, p + "attention.output.dense.weight").transpose(), p + "attention.output.dense");
        check_same(L.b_o, stored_vector(c, p + "attention.output.dense.bias"), p + "attention.output.dense.bias");
        check_same(L.post_attn_norm.weight, stored_vector(c, p + "attention.output.LayerNorm.gamma"), p + "attention LN gamma");
        check_same(L.post_attn_norm.bias, stored_vector(c, p + "attention.output.LayerNorm.beta"), p + "attention LN beta");
        check_same(L.w_up, stored(c, p + "intermediate.dense.weight").transpose(), p + "intermediate.dense");
        check_same(L.b_up, stored_vector(c, p + "intermediate.dense.bias"), p + "intermediate.dense.bias");
        check_same(L.w_down, stored(c, p + "output.dense.weight").transpose(), p + "output.dense");
        check_same(L.b_down, stored_vector(c, p + "output.dense.bias"), p + "output.dense.bias");
        check_same(L.post_mlp_norm.weight, stored_vector(c, p + "output.LayerNorm.gamma"), p + "output LN gamma");
        check_same(L.post_mlp_norm.bias, stored_vector(c, p + "output.LayerNorm.beta"), p + "output LN beta");
    }
    check_same(w.mlm_dense, stored(c, "cls.predictions.transform.dense.weight").transpose(), "transform.dense");
    check_same(w.mlm_dense_bias, stored_vector(c, "cls.predictions.transform.dense.bias"), "transform.dense.bias");
    check_same(w.mlm_norm.weight, stored_vector(c, "cls.predictions.transform.LayerNorm.gamma"), "transform LN gamma");
    check_same(w.mlm_norm.bias, stored_vector(c, "cls.predictions.transform.LayerNorm.beta"), "transform LN beta");
    check_same(w.lm_head_bias, stored_vector(c, "cls.predictions.bias"), "cls.predictions.bias");
    CHECK(w.lm_head.size() == 0);
}

// ModernBERT: Wqkv's rows Q, K, V and Wi's the activated half then the other, each a view of the file; no
// attn_norm in layer 0 and no norm bias; the MLM head without a dense bias, the decoder's bias, the head tied.
void check_modernbert_weights(const FamilyCheckpoint& c, const hf::ModelSpec& s, const hf::Weights& w) {
    const Eigen::Index d = s.d_model, ff = s.d_ff;
    check_same(w.token_embedding, stored(c, "model.embeddings.tok_embeddings.weight"), "tok_embeddings");
    check_same(w.embedding_norm.weight, stored_vector(c, "model.embeddings.norm.weight"), "embeddings.norm");
    CHECK(w.embedding_norm.bias.size() == 0);
    for (int l = 0; l < s.n_layers; ++l) {
        const hf::LayerWeights& L = w.layers[static_cast<std::size_t>(l)];
        const std::string p = "model.layers." + std::to_string(l) + ".";
        if (l == 0) CHECK(L.attn_norm.weight.size() == 0);
        else check_same(L.attn_norm.weight, stored_vector(c, p + "attn_norm.weight"), p + "attn_norm");
        CHECK(L.attn_norm.bias.size() == 0);
        const Matrix qkv = stored(c, p + "attn.Wqkv.weight");  // (3d × d)
        check_same(L.w_q, qkv.topRows(d).transpose(), p + "Wqkv (q)");
        check_same(L.w_k, qkv.middleRows(d, d).transpose(), p + "Wqkv (k)");
        check_same(L.w_v, qkv.bottomRows(d).transpose(), p + "Wqkv (v)");
        check_same(L.w_o, stored(c, p + "attn.Wo.weight").transpose(), p + "attn.Wo");
        check_same(L.mlp_norm.weight, stored_vector(c, p + "mlp_norm.weight"), p + "mlp_norm");
        const Matrix wi = stored(c, p + "mlp.Wi.weight");  // (2ff × d)
        check_same(L.w_gate, wi.topRows(ff).transpose(), p + "Wi (the activated half)");
        check_same(L.w_up, wi.bottomRows(ff).transpose(), p + "Wi (the other half)");
        check_same(L.w_down, stored(c, p + "mlp.Wo.weight").transpose(), p + "mlp.Wo");
        CHECK(L.b_q.size() == 0);
    }
    check_same(w.final_norm.weight, stored_vector(c, "model.final_norm.weight"), "final_norm");
    check_same(w.mlm_dense, stored(c, "head.dense.weight").transpose(), "head.dense");
    CHECK(w.mlm_dense_bias.size() == 0);
    check_same(w.mlm_norm.weight, stored_vector(c, "head.norm.weight"), "head.norm");
    check_same(w.lm_head_bias, stored_vector(c, "decoder.bias"), "decoder.bias");
    CHECK(w.lm_head.size() == 0);
}

}  // namespace

// [SECTION] Reading back

TEST_CASE("every family's checkpoint, written in the Hugging Face layout, reads back bit for bit", "[families][weights]") {
    for (const FamilyCheckpoint& c : all_family_checkpoints()) {
        DYNAMIC_SECTION(c.label) {
            const hf::ModelLoad load = written_and_read(c, folder_for(c.label));
            const hf::ModelSpec& s = *load.spec;
            // a multimodal folder (Qwen3.5 as published) opens as its text model
            CHECK(s.model_type == (c.config.contains("text_config") ? c.config["text_config"]["model_type"] : c.config["model_type"]));
            CHECK(load.files.size() == (c.sharded ? 2u : 1u));
            REQUIRE(load.weights->layers.size() == static_cast<std::size_t>(s.n_layers));
            if (s.model_type == "gpt_neox") {
                check_neox_weights(c, s, *load.weights);
                CHECK_THAT(joined(load.ignored), Contains("gpt_neox.layers.1.attention.rotary_emb.inv_freq") &&
                                                     Contains("gpt_neox.layers.0.attention.masked_bias"));
            } else if (s.model_type == "bert") {
                check_bert_weights(c, s, *load.weights);
                CHECK_THAT(joined(load.ignored), Contains("bert.pooler.dense.weight") && Contains("cls.seq_relationship.bias"));
            } else if (s.model_type == "modernbert") {
                check_modernbert_weights(c, s, *load.weights);
                CHECK(load.ignored.empty());
            } else if (s.model_type == "deepseek_v3") {  // its multi-token prediction layer, read past as transformers does
                check_decoder_weights(c, s, *load.weights);
                CHECK(load.ignored == std::vector<std::string>{"model.layers.61.eh_proj.weight", "model.layers.61.enorm.weight"});
            } else if (s.model_type == "qwen3_next") {  // its multi-token prediction module, read past as transformers does
                check_decoder_weights(c, s, *load.weights);
                CHECK(load.ignored == std::vector<std::string>{"mtp.fc.weight"});
            } else if (s.model_type == "qwen3_5_text" || s.model_type == "qwen3_5_moe_text") {  // the vision tower and mtp.*, read past
                check_decoder_weights(c, s, *load.weights);
                CHECK_THAT(joined(load.ignored), Contains("model.visual.patch_embed.proj.weight") &&
                                                     Contains("model.visual.blocks.0.attn.qkv.weight") && Contains("mtp.fc.weight"));
                CHECK(load.ignored.size() == 3);
            } else {
                check_decoder_weights(c, s, *load.weights);
                CHECK(load.ignored.empty());
            }
        }
    }
}

TEST_CASE("names are read without the class prefix, and BERT's LayerNorm as weight/bias", "[families][weights]") {
    SECTION("Llama saved as LlamaModel has no 'model.' (and a tied head)") {
        FamilyCheckpoint c = llama_checkpoint();
        HfTensors bare;
        for (auto& [name, t] : c.tensors) bare[name.rfind("model.", 0) == 0 ? name.substr(6) : name] = t;
        FamilyCheckpoint renamed = c;
        renamed.tensors = bare;
        const hf::ModelLoad load = written_and_read(renamed, folder_for("llama_bare"));
        check_same(load.weights->layers[1].w_k, stored(c, "model.layers.1.self_attn.k_proj.weight").transpose(), "k_proj");
    }
    SECTION("BERT with weight/bias names and the decoder's bias under its own name") {
        FamilyCheckpoint c = bert_checkpoint();
        HfTensors renamed;
        for (auto& [name, t] : c.tensors) {
            std::string n = name;
            if (n.size() > 6 && n.compare(n.size() - 6, 6, ".gamma") == 0) n = n.substr(0, n.size() - 6) + ".weight";
            if (n.size() > 5 && n.compare(n.size() - 5, 5, ".beta") == 0) n = n.substr(0, n.size() - 5) + ".bias";
            if (n == "cls.predictions.bias") n = "cls.predictions.decoder.bias";
            renamed[n] = t;
        }
        FamilyCheckpoint r = c;
        r.tensors = renamed;
        const hf::ModelLoad load = written_and_read(r, folder_for("bert_renamed"));
        check_same(load.weights->layers[0].post_mlp_norm.bias, stored_vector(c, "bert.encoder.layer.0.output.LayerNorm.beta"), "beta");
        check_same(load.weights->lm_head_bias, stored_vector(c, "cls.predictions.bias"), "decoder bias");
    }
    SECTION("a tied head stored beside the embedding, equal to it, is read past") {
        FamilyCheckpoint c = qwen3_checkpoint();
        c.tensors["lm_head.weight"] = c.tensors.at("model.embed_tokens.weight");
        const hf::ModelLoad load = written_and_read(c, folder_for("qwen3_tied_copy"));
        CHECK_THAT(joined(load.ignored), Contains("lm_head.weight"));
        CHECK(load.weights->lm_head.size() == 0);
    }
}

TEST_CASE("expected_tensors lists exactly the tensors each fixture's model needs, with their stored shapes", "[families][weights]") {
    for (const FamilyCheckpoint& c : all_family_checkpoints()) {
        DYNAMIC_SECTION(c.label) {
            const hf::ModelSpec s = spec_of(c.config);
            std::size_t listed = 0;
            for (const hf::TensorShape& t : hf::expected_tensors(s)) {
                // BERT's old files say gamma/beta
                std::string name = t.name;
                if (!c.tensors.count(name) && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0)
                    name = name.substr(0, name.size() - 7) + ".gamma";
                if (!c.tensors.count(name) && name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0)
                    name = name.substr(0, name.size() - 5) + ".beta";
                INFO(t.name);
                REQUIRE(c.tensors.count(name));
                CHECK(c.tensors.at(name).shape == t.shape);
                ++listed;
            }
            // buffers, pooler, NSP; DeepSeek-V3's multi-token prediction layer
            // and Qwen3-Next's multi-token prediction module
            // and Qwen3.5's vision tower (two tensors here) and multi-token prediction module
            const std::size_t extra = s.model_type == "gpt_neox" ? 4 : s.model_type == "bert" ? 4 : s.model_type == "deepseek_v3" ? 2
                                    : s.model_type == "qwen3_next" ? 1 : s.model_type == "qwen3_5_text" || s.model_type == "qwen3_5_moe_text" ? 3 : 0;
            CHECK(listed + extra == c.tensors.size());
        }
    }
}

// [SECTION] Specs

TEST_CASE("each family's config.json gives its forward pass", "[families][spec]") {
    SECTION("mistral (Mistral 7B v0.1): Llama's decoder with every layer sliding; a null sliding_window slides none") {
        json config = mistral_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::llama);
        CHECK(s.n_kv_heads == 2);
        CHECK_FALSE(s.qkv_bias);
        CHECK_FALSE(s.o_bias);
        CHECK_FALSE(s.tied_lm_head);
        CHECK(s.layers[0].window == 3);
        CHECK(s.layers[1].window == 3);
        CHECK(s.attention_scale == Approx(0.5));
        config["sliding_window"] = nullptr;  // Mistral 7B v0.2 on
        s = spec_of(config);
        CHECK(s.layers[0].window == 0);
        CHECK(s.layers[1].window == 0);
    }
    SECTION("ministral: Mistral's decoder, its layers sliding as layer_types says, every layer without it, none with a null window") {
        json config = ministral_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::llama);
        CHECK(s.n_kv_heads == 2);
        CHECK_FALSE(s.qkv_bias);  // MinistralAttention: Qwen2's without the q, k and v biases
        CHECK_FALSE(s.o_bias);
        CHECK_FALSE(s.tied_lm_head);
        CHECK(s.layers[0].window == 3);
        CHECK(s.layers[1].window == 0);
        CHECK(s.layers[1].rope_theta == Approx(1e8));
        config.erase("layer_types");  // MinistralConfig's default: every layer slides while sliding_window is set
        s = spec_of(config);
        CHECK(s.layers[0].window == 3);
        CHECK(s.layers[1].window == 3);
        config["sliding_window"] = nullptr;
        s = spec_of(config);
        CHECK(s.layers[0].window == 0);
        CHECK(s.layers[1].window == 0);
        config["layer_types"] = {"sliding_attention", "full_attention"};  // a sliding layer needs a window
        CHECK_THAT(refusal_of(config), Contains("layer_types") && Contains("layer 0 is \"sliding_attention\" but sliding_window is null"));
        config["sliding_window"] = 3;
        config["layer_types"] = {"sliding_attention", "chunked_attention"};
        CHECK_THAT(refusal_of(config), Contains("\"chunked_attention\" is not supported"));
    }
    SECTION("llama (SmolLM2): GQA 6 : 2, RMSNorm, gated SiLU, tied") {
        const hf::ModelSpec s = spec_of(llama_checkpoint().config);
        CHECK(s.n_heads == 6);
        CHECK(s.n_kv_heads == 2);
        CHECK(s.kv_head_of(2) == 0);
        CHECK(s.kv_head_of(3) == 1);
        CHECK(s.head_dim == 4);
        CHECK(s.norm.kind == hf::NormKind::rms_norm);
        CHECK_FALSE(s.norm.one_plus_weight);
        CHECK(s.norm.epsilon == 1e-5);
        CHECK(s.mlp == hf::MlpKind::gated);
        CHECK(s.activation == hf::Activation::silu);
        CHECK(s.tied_lm_head);
        CHECK(s.layers[1].rope_theta == 100000);
        CHECK(s.layers[1].window == 0);
        CHECK(s.rotary_dim == 4);
        CHECK(s.attention_scale == Approx(0.5));
        CHECK(s.bos_token_id == 0);
        CHECK_FALSE(s.pad_token_id);
    }
    SECTION("llama 3.2: head_dim independent of d_model, llama3 frequencies, untied, three eos ids") {
        const hf::ModelSpec s = spec_of(llama3_checkpoint().config);
        CHECK(s.head_dim == 8);
        CHECK(s.d_model == 16);
        CHECK_FALSE(s.tied_lm_head);
        CHECK(s.eos_token_ids == std::vector<int>{128001, 128008, 128009});
        CHECK(s.layers[0].rope_scaling.kind == hf::RopeScalingKind::llama3);
        CHECK(s.layers[0].rope_scaling.factor == 32);
        // θ = 500000, r = 8: wavelengths 2π, 167, 4447, 118k against the bands 2048 and 8192
        const std::vector<float> inv = hf::rope_inverse_frequencies(s, 0, 0);
        REQUIRE(inv.size() == 4);
        CHECK(inv[0] == 1.0f);                                                  // short: as it is
        CHECK(inv[1] == Approx(std::pow(500000.0, -0.25)).epsilon(1e-6));
        const double f2 = std::pow(500000.0, -0.5), smooth = (8192 / (2 * M_PI / f2) - 1) / 3;
        CHECK(inv[2] == Approx((1 - smooth) * f2 / 32 + smooth * f2).epsilon(1e-5));   // middle: blended
        CHECK(inv[3] == Approx(std::pow(500000.0, -0.75) / 32).epsilon(1e-6));   // long: / factor
        const std::vector<float> ref = reference_inv_freq(500000.0, 8, s.layers[0].rope_scaling);
        for (std::size_t i = 0; i < 4; ++i) CHECK(inv[i] == Approx(ref[i]).epsilon(1e-6));
    }
    SECTION("qwen2: Q/K/V biases, no O bias; use_sliding_window false means no window; true slides from max_window_layers") {
        json config = qwen2_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.qkv_bias);
        CHECK_FALSE(s.o_bias);
        CHECK(s.layers[0].window == 0);
        CHECK(s.layers[1].window == 0);
        config["use_sliding_window"] = true;
        s = spec_of(config);
        CHECK(s.layers[0].window == 0);   // below max_window_layers 1
        CHECK(s.layers[1].window == 3);
        config["layer_types"] = {"sliding_attention", "full_attention"};
        s = spec_of(config);
        CHECK(s.layers[0].window == 3);
        CHECK(s.layers[1].window == 0);
    }
    SECTION("qwen3: QK-norm, head_dim 8") {
        const hf::ModelSpec s = spec_of(qwen3_checkpoint().config);
        CHECK(s.qk_norm);
        CHECK(s.head_dim == 8);
        CHECK_FALSE(s.qkv_bias);
        CHECK(s.layers[0].rope_theta == 1e6);
    }
    SECTION("gemma2: (1 + w), sandwich, √d in float32, query_pre_attn_scalar, soft-caps, even layers slide") {
        const hf::ModelSpec s = spec_of(gemma2_checkpoint().config);
        CHECK(s.norm.one_plus_weight);
        CHECK(s.layout == hf::BlockLayout::sandwich);
        CHECK(s.activation == hf::Activation::gelu_tanh);
        CHECK(s.embedding_scale == static_cast<float>(std::sqrt(16.0)));
        CHECK(s.attention_scale == Approx(1 / std::sqrt(8.0)));
        CHECK(s.attn_logit_softcap == 1.5);
        CHECK(s.final_logit_softcap == 2.0);
        CHECK(s.layers[0].window == 3);
        CHECK(s.layers[1].window == 0);
        CHECK_FALSE(s.qk_norm);
        // Gemma 2's defaults when the config leaves them out: caps 50 and 30, window 4096
        json bare = gemma2_checkpoint().config;
        for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping", "sliding_window"}) bare.erase(key);
        const hf::ModelSpec d = spec_of(bare);
        CHECK(d.attn_logit_softcap == 50);
        CHECK(d.final_logit_softcap == 30);
        CHECK(d.layers[0].window == 4096);
    }
    SECTION("olmo2: norms after each sublayer only, QK-norm over the whole projection, rms_norm_eps 1e-5 by default") {
        json config = olmo2_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::llama);
        CHECK(s.layout == hf::BlockLayout::after_sublayers);
        CHECK(s.qk_norm);
        CHECK(s.qk_norm_whole);
        CHECK_FALSE(s.norm.one_plus_weight);
        CHECK(s.norm.epsilon == 1e-6);
        CHECK(s.n_kv_heads == 2);
        CHECK_FALSE(s.tied_lm_head);
        CHECK(s.layers[0].rope_theta == 500000);
        CHECK(s.layers[1].window == 0);
        config.erase("rms_norm_eps");
        CHECK(spec_of(config).norm.epsilon == 1e-5);
        config["attention_bias"] = true;
        s = spec_of(config);
        CHECK(s.qkv_bias);
        CHECK(s.o_bias);
        // Olmo2MLP has no bias, and OLMo 1's clip_qkv is not OLMo 2's: keys transformers' Olmo2 never reads
        for (const char* key : {"mlp_bias", "clip_qkv"}) {
            json other = olmo2_checkpoint().config;
            other[key] = key == std::string("clip_qkv") ? json(8.0) : json(true);
            std::vector<std::string> errors;
            CHECK_FALSE(hf::spec_from_config(other.dump(), "config.json", errors));
            REQUIRE_FALSE(errors.empty());
            CHECK_THAT(errors.front(), Contains(key));
        }
    }
    SECTION("phi3 (Phi-4-mini): fused tensors, 6 of 8 dims turned, LongRoPE with its attention factor, every layer sliding") {
        json config = phi3_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::phi3);
        CHECK(s.layout == hf::BlockLayout::pre_norm);
        CHECK(s.head_dim == 8);
        CHECK(s.rotary_dim == 6);   // int(8 · 0.75)
        CHECK(s.n_kv_heads == 1);
        CHECK(s.tied_lm_head);
        CHECK_FALSE(s.qkv_bias);
        CHECK(s.norm.epsilon == 1e-5);
        CHECK(s.layers[1].window == 5);
        const hf::RopeScaling& r = s.layers[0].rope_scaling;
        CHECK(r.kind == hf::RopeScalingKind::longrope);
        CHECK(r.short_factor == std::vector<double>{1.0, 1.25, 1.5});
        CHECK(r.long_factor == std::vector<double>{1.1, 4.0, 16.0});
        CHECK(r.original_max_position_embeddings == 4);
        CHECK(r.factor == 32);   // max_position_embeddings / original_max_position_embeddings
        CHECK(r.attention_factor == Approx(std::sqrt(1 + std::log(32.0) / std::log(4.0))).epsilon(1e-12));
        // the short factors for a text of up to 4 tokens, the long ones beyond: 1 / (e_i · 10000^(2i/6))
        for (int length : {4, 5}) {
            const std::vector<float> inv = hf::rope_inverse_frequencies(s, 0, length);
            REQUIRE(inv.size() == 3);
            const std::vector<double>& e = length > 4 ? r.long_factor : r.short_factor;
            for (int i = 0; i < 3; ++i) CHECK(inv[static_cast<size_t>(i)] == Approx(1.0 / (e[static_cast<size_t>(i)] * std::pow(10000.0, i / 3.0))).epsilon(1e-6));
        }
        const RopeOptions rope = hf::rope_options(s, 0);
        CHECK(rope.scaling == RopeScalingKind::LongRope);
        CHECK(rope.attention_factor == static_cast<float>(r.attention_factor));
        CHECK(rope.rotary_dims == 6);
        // rope_parameters as transformers 5 saves it: the theta, the partial factor and the lists in one object
        json five = config;
        five.erase("rope_scaling");
        five.erase("rope_theta");
        five.erase("partial_rotary_factor");
        five["rope_parameters"] = {{"rope_type", "longrope"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.75},
                                   {"short_factor", {1.0, 1.25, 1.5}}, {"long_factor", {1.1, 4.0, 16.0}},
                                   {"original_max_position_embeddings", 4}};
        const hf::ModelSpec s5 = spec_of(five);
        CHECK(s5.rotary_dim == 6);
        CHECK(s5.layers[0].rope_scaling.attention_factor == r.attention_factor);
        // the older "su" is LongRoPE; an attention_factor given is taken as it is
        config["rope_scaling"]["type"] = "su";
        config["rope_scaling"]["attention_factor"] = 1.25;
        CHECK(spec_of(config).layers[0].rope_scaling.attention_factor == 1.25);
        // no rope_scaling: plain RoPE on 6 dims; no sliding_window: no window
        json plain = phi3_checkpoint().config;
        plain["rope_scaling"] = nullptr;
        plain.erase("sliding_window");
        const hf::ModelSpec p = spec_of(plain);
        CHECK(p.layers[0].rope_scaling.kind == hf::RopeScalingKind::none);
        CHECK(p.layers[0].window == 0);
        // refused: lists of another length, a factor that disagrees with the ratio, biases transformers' Phi-3 never adds
        json bad = phi3_checkpoint().config;
        bad["rope_scaling"]["short_factor"] = {1.0, 1.0};
        CHECK_THAT(refusal_of(bad), Contains("'short_factor' has 2 factors: expected 3"));
        bad = phi3_checkpoint().config;
        bad["rope_scaling"]["long_factor"] = {1.0, -2.0, 1.0};
        CHECK_THAT(refusal_of(bad), Contains("'long_factor'") && Contains("-2.0"));
        bad = phi3_checkpoint().config;
        bad["rope_scaling"]["factor"] = 8.0;
        CHECK_THAT(refusal_of(bad), Contains("'factor' 8.0 differs from max_position_embeddings / original_max_position_embeddings"));
        bad = phi3_checkpoint().config;
        bad["rope_scaling"].erase("long_factor");
        CHECK_THAT(refusal_of(bad), Contains("needs 'long_factor'"));
        for (const char* key : {"attention_bias", "mlp_bias", "lm_head_bias"}) {
            json other = phi3_checkpoint().config;
            other[key] = true;
            CHECK_THAT(refusal_of(other), Contains(key));
        }
        // LongRoPE is Phi-3's here: Llama refuses it, naming the type
        json llama = llama3_checkpoint().config;
        llama["rope_scaling"] = phi3_checkpoint().config["rope_scaling"];
        CHECK_THAT(refusal_of(llama), Contains("\"longrope\" is not supported"));
    }
    SECTION("smollm3: NoPE layers from no_rope_layers or every no_rope_layer_interval-th; the NoPE layers slide when asked") {
        json config = smollm3_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::llama);
        CHECK(s.tied_lm_head);
        CHECK(s.layers[0].rope_theta == 5e6);
        for (int l = 0; l < 4; ++l) CHECK(s.layers[static_cast<size_t>(l)].rope == (l != 3));
        for (int l = 0; l < 4; ++l) CHECK(s.layers[static_cast<size_t>(l)].window == 0);
        // no list: every second layer with an interval of 2; the RoPE base defaults to 2·10⁶
        json derived = config;
        derived.erase("no_rope_layers");
        derived.erase("rope_theta");
        derived["no_rope_layer_interval"] = 2;
        s = spec_of(derived);
        CHECK(s.layers[0].rope);
        CHECK_FALSE(s.layers[1].rope);
        CHECK(s.layers[2].rope);
        CHECK_FALSE(s.layers[3].rope);
        CHECK(s.layers[0].rope_theta == 2e6);
        // without layer_types, use_sliding_window slides the NoPE layers only
        json sliding = config;
        sliding.erase("layer_types");
        sliding["use_sliding_window"] = true;
        sliding["sliding_window"] = 3;
        s = spec_of(sliding);
        CHECK(s.layers[3].window == 3);
        CHECK(s.layers[0].window == 0);
        // a sliding layer slides by the model's mask even without use_sliding_window (which only
        // sets the window SmolLM3Attention hands to kernels other than eager's)
        json unused = config;
        unused["layer_types"][1] = "sliding_attention";
        unused["sliding_window"] = 3;
        CHECK(spec_of(unused).layers[1].window == 3);
        CHECK(spec_of(unused).layers[0].window == 0);
        // refused: a list too short, an entry neither 0 nor 1, a sliding layer with no window
        json bad = config;
        bad["no_rope_layers"] = {1, 0};
        CHECK_THAT(refusal_of(bad), Contains("no_rope_layers") && Contains("at least 4"));
        bad["no_rope_layers"] = {1, 1, 2, 0};
        CHECK_THAT(refusal_of(bad), Contains("entry 2 is 2"));
        bad = config;
        bad["use_sliding_window"] = true;
        bad["layer_types"][0] = "sliding_attention";
        CHECK_THAT(refusal_of(bad), Contains("sliding_window is null"));
        // the layer's scenario: the NoPE layer has no rotation, the others RoPE
        const hf::ModelSpec spec = spec_of(config);
        CHECK(hf::rope_options(spec, 3).theta == 5e6f);
    }
    SECTION("mixtral: Mistral's attention, a mixture of experts in every layer, the kept always renormalised") {
        json config = mixtral_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::mixtral);
        CHECK(s.experts.experts == 4);
        CHECK(s.experts.experts_per_token == 2);
        CHECK(s.experts.normalize_top_k);
        CHECK(s.experts.d_ff == 12);
        for (const hf::LayerSpec& l : s.layers) CHECK((l.moe && l.window == 0));
        config["sliding_window"] = 3;  // Mistral's: every layer slides
        for (const hf::LayerSpec& l : spec_of(config).layers) CHECK(l.window == 3);
        config.erase("num_local_experts");  // MixtralConfig's defaults: 8 experts, 2 kept, base 10⁶
        config.erase("num_experts_per_tok");
        config.erase("rope_theta");
        s = spec_of(config);
        CHECK(s.experts.experts == 8);
        CHECK(s.experts.experts_per_token == 2);
        CHECK(s.layers[0].rope_theta == 1e6);
        json bad = mixtral_checkpoint().config;
        bad["num_experts_per_tok"] = 5;
        CHECK_THAT(refusal_of(bad), Contains("num_experts_per_tok") && Contains("more than num_local_experts 4"));
        bad = mixtral_checkpoint().config;
        bad["num_experts"] = 4;  // Qwen's key: Mixtral's config has none
        CHECK_THAT(refusal_of(bad), Contains("num_experts"));
    }
    SECTION("gpt_oss: sinks, layer_types, YaRN, biases, and a mixture of experts in every layer: top k then softmax, clamped") {
        json config = gpt_oss_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::gpt_oss);
        CHECK(s.sinks);
        CHECK((s.qkv_bias && s.o_bias));
        CHECK_FALSE(s.tied_lm_head);
        CHECK(s.head_dim == 8);
        CHECK(s.layers[0].window == 3);
        CHECK(s.layers[1].window == 0);
        for (const hf::LayerSpec& l : s.layers) {
            CHECK(l.moe);
            CHECK(l.rope_scaling.kind == hf::RopeScalingKind::yarn);
            CHECK(l.rope_scaling.factor == 32.0);
            CHECK(l.rope_scaling.original_max_position_embeddings == 4096);
            CHECK_FALSE(l.rope_scaling.truncate);
            CHECK(l.rope_scaling.attention_factor == Approx(0.1 * std::log(32.0) + 1.0).epsilon(1e-12));  // get_mscale(32)
        }
        CHECK(s.experts.experts == 4);
        CHECK(s.experts.experts_per_token == 2);
        CHECK(s.experts.top_k_then_softmax);
        CHECK(s.experts.biases);
        CHECK(s.experts.swiglu_limit == 0.8);
        CHECK(s.experts.swiglu_alpha == 1.702);
        CHECK(s.experts.d_ff == 12);
        const attn::RopeOptions rope = hf::rope_options(s, 0);
        CHECK(rope.scaling == attn::RopeScalingKind::Yarn);
        CHECK(rope.attention_factor == Approx(1.3465736f));
        CHECK(rope.theta == 150000.0f);
        // GptOssConfig's defaults: the even layers slide by 128, YaRN ×32 on 4096 when no rope_scaling is given
        json defaults = config;
        defaults.erase("layer_types");
        defaults.erase("sliding_window");
        defaults.erase("rope_scaling");
        defaults.erase("swiglu_limit");
        s = spec_of(defaults);
        CHECK(s.layers[0].window == 128);
        CHECK(s.layers[1].window == 0);
        CHECK(s.layers[1].rope_scaling.kind == hf::RopeScalingKind::yarn);
        CHECK(s.layers[1].rope_scaling.factor == 32.0);
        CHECK(s.experts.swiglu_limit == 7.0);
        // YaRN without a factor takes max_position_embeddings / original; DeepSeek's mscale pair sets the attention factor
        json yarn = config;
        yarn["rope_scaling"].erase("factor");
        yarn["rope_scaling"]["mscale"] = 1.0;
        yarn["rope_scaling"]["mscale_all_dim"] = 0.707;
        s = spec_of(yarn);
        CHECK(s.layers[0].rope_scaling.factor == 32.0);  // 131072 / 4096
        CHECK(s.layers[0].rope_scaling.attention_factor ==
              Approx((0.1 * std::log(32.0) + 1.0) / (0.1 * 0.707 * std::log(32.0) + 1.0)).epsilon(1e-12));
        // refused, naming the key: MXFP4 of sizes it cannot block, a sliding layer without a window, YaRN without its length, more kept than there are
        json bad = config;
        bad["quantization_config"] = {{"quant_method", "mxfp4"}, {"modules_to_not_convert", {"model.layers.*.self_attn"}}};
        CHECK_THAT(refusal_of(bad), Contains("quantization_config") && Contains("must be multiples of 32"));  // d 16 cannot be blocked
        bad = config;
        bad["sliding_window"] = nullptr;
        CHECK_THAT(refusal_of(bad), Contains("layer 0 is \"sliding_attention\" but sliding_window is null"));
        bad = config;
        bad["rope_scaling"].erase("original_max_position_embeddings");
        CHECK_THAT(refusal_of(bad), Contains("needs 'original_max_position_embeddings'"));
        bad = config;
        bad["rope_scaling"]["low_freq_factor"] = 1.0;
        CHECK_THAT(refusal_of(bad), Contains("'low_freq_factor'") && Contains("yarn"));
        bad = config;
        bad["num_experts_per_tok"] = 5;
        CHECK_THAT(refusal_of(bad), Contains("more than num_local_experts 4"));
        // YaRN is gpt-oss's here: Llama's reader still refuses it, naming what it reads
        json llama = llama_checkpoint().config;
        llama["rope_scaling"] = config["rope_scaling"];
        CHECK_THAT(refusal_of(llama), Contains("rope type \"yarn\" is not supported"));
    }
    SECTION("qwen3_moe: the sparse layers from decoder_sparse_step and mlp_only_layers, the router's k and norm_topk_prob") {
        json config = qwen3_moe_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::llama);
        CHECK(s.qk_norm);
        CHECK_FALSE(s.tied_lm_head);
        CHECK(s.experts.experts == 8);
        CHECK(s.experts.experts_per_token == 3);
        CHECK(s.experts.normalize_top_k);
        CHECK(s.experts.d_ff == 12);
        CHECK(s.d_ff == 24);   // the dense layer's
        CHECK(s.layers[0].moe);
        CHECK_FALSE(s.layers[1].moe);
        CHECK(s.layers[2].moe);
        for (const hf::LayerSpec& l : s.layers) CHECK(l.window == 0);
        // every second layer sparse: (ℓ + 1) % 2 == 0; no list; Qwen3MoeConfig's defaults
        json stepped = config;
        stepped["decoder_sparse_step"] = 2;
        stepped.erase("mlp_only_layers");
        stepped.erase("norm_topk_prob");
        s = spec_of(stepped);
        CHECK_FALSE(s.layers[0].moe);
        CHECK(s.layers[1].moe);
        CHECK_FALSE(s.layers[2].moe);
        CHECK_FALSE(s.experts.normalize_top_k);
        // num_local_experts is the attribute num_experts maps to: read, and checked against it
        json local = config;
        local.erase("num_experts");
        local["num_local_experts"] = 6;
        CHECK(spec_of(local).experts.experts == 6);
        local["num_experts"] = 8;
        CHECK_THAT(refusal_of(local), Contains("num_local_experts") && Contains("differs from num_experts 8"));
        // no experts: every layer dense
        json none = config;
        none["num_experts"] = 0;
        for (const hf::LayerSpec& l : spec_of(none).layers) CHECK_FALSE(l.moe);
        // use_sliding_window slides every layer; a null window slides none
        json sliding = config;
        sliding["use_sliding_window"] = true;
        sliding["sliding_window"] = 5;
        for (const hf::LayerSpec& l : spec_of(sliding).layers) CHECK(l.window == 5);
        sliding["sliding_window"] = nullptr;
        for (const hf::LayerSpec& l : spec_of(sliding).layers) CHECK(l.window == 0);
        // refused: more experts kept than there are, a layer list naming no layer, a step of 0
        json bad = config;
        bad["num_experts_per_tok"] = 9;
        CHECK_THAT(refusal_of(bad), Contains("num_experts_per_tok") && Contains("more than num_experts 8"));
        bad = config;
        bad["mlp_only_layers"] = {1, 3};
        CHECK_THAT(refusal_of(bad), Contains("mlp_only_layers") && Contains("from 0 to 2"));
        bad = config;
        bad["decoder_sparse_step"] = 0;
        CHECK_THAT(refusal_of(bad), Contains("decoder_sparse_step"));
        bad = config;
        bad["layer_types"] = {"full_attention", "full_attention", "full_attention"};
        CHECK_THAT(refusal_of(bad), Contains("layer_types"));
    }
    SECTION("qwen2_moe: Qwen2's biases, Qwen3-MoE's experts, a gated shared expert, and no guess at which layers slide") {
        json config = qwen2_moe_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::llama);
        CHECK(s.qkv_bias);  // qkv_bias's default
        CHECK_FALSE(s.o_bias);
        CHECK_FALSE(s.qk_norm);
        CHECK(s.experts.experts == 6);
        CHECK(s.experts.experts_per_token == 2);
        CHECK_FALSE(s.experts.normalize_top_k);
        CHECK(s.experts.d_ff == 12);
        CHECK(s.experts.shared_d_ff == 20);
        CHECK(s.experts.shared_gate);
        CHECK(s.d_ff == 24);
        CHECK(s.layers[0].moe);
        CHECK_FALSE(s.layers[1].moe);
        CHECK(s.layers[2].moe);
        for (const hf::LayerSpec& l : s.layers) CHECK(l.window == 0);
        // Qwen2MoeConfig's defaults: 60 experts, 4 kept, widths 1408 and 5632
        json defaults = config;
        for (const char* key : {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size"})
            defaults.erase(key);
        s = spec_of(defaults);
        CHECK(s.experts.experts == 60);
        CHECK(s.experts.experts_per_token == 4);
        CHECK(s.experts.d_ff == 1408);
        CHECK(s.experts.shared_d_ff == 5632);
        json no_bias = config;
        no_bias["qkv_bias"] = false;
        CHECK_FALSE(spec_of(no_bias).qkv_bias);
        // layer_types says which layers slide, with use_sliding_window
        json sliding = config;
        sliding["use_sliding_window"] = true;
        sliding["sliding_window"] = 5;
        sliding["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
        s = spec_of(sliding);
        CHECK(s.layers[0].window == 5);
        CHECK(s.layers[1].window == 0);
        CHECK(s.layers[2].window == 5);
        // refused: sliding without layer_types (the versions disagree), a sliding layer without the switch
        json bad = config;
        bad["use_sliding_window"] = true;
        CHECK_THAT(refusal_of(bad), Contains("use_sliding_window") && Contains("give layer_types"));
        bad = sliding;
        bad["use_sliding_window"] = false;
        CHECK_THAT(refusal_of(bad), Contains("layer_types") && Contains("use_sliding_window is false"));
        bad = config;
        bad["num_experts_per_tok"] = 7;
        CHECK_THAT(refusal_of(bad), Contains("more than num_experts 6"));
        bad = config;
        bad["shared_expert_intermediate_size"] = 0;
        CHECK_THAT(refusal_of(bad), Contains("shared_expert_intermediate_size"));
    }
    SECTION("deepseek_v3: latent attention's sizes, YaRN's mscale in the scale, the grouped router, dense layers first") {
        json config = deepseek_v3_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::deepseek_v3);
        CHECK(s.latent.kv_rank == 8);
        CHECK(s.latent.q_rank == 12);
        CHECK(s.latent.nope_dim == 4);
        CHECK(s.latent.rope_dim == 4);
        CHECK(s.latent.v_dim == 3);
        CHECK(s.latent.interleave);
        CHECK(s.head_dim == 8);
        CHECK(s.rotary_dim == 4);
        CHECK(s.n_kv_heads == 4);
        // qk_head_dim^−½ × mscale(4, mscale_all_dim 1)²; cos and sin × mscale / mscale_all_dim's = 1
        const double m = 0.1 * std::log(4.0) + 1.0;
        CHECK(s.attention_scale == Approx(m * m / std::sqrt(8.0)).epsilon(1e-12));
        CHECK(s.layers[0].rope_scaling.attention_factor == Approx(1.0));
        CHECK_FALSE(s.layers[0].moe);
        CHECK(s.layers[1].moe);
        CHECK(s.layers[2].moe);
        CHECK(s.experts.sigmoid_grouped);
        CHECK(s.experts.groups == 4);
        CHECK(s.experts.top_groups == 2);
        CHECK(s.experts.routed_scale == 2.5);
        CHECK(s.experts.normalize_top_k);
        CHECK(s.experts.shared_d_ff == 12);  // n_shared_experts 2 × moe_intermediate_size 6
        CHECK_FALSE(s.experts.shared_gate);
        // the engine's RoPE: all of the rotary key's dims, pairs (2i, 2i+1)
        const RopeOptions rope = hf::rope_options(s, 0);
        CHECK(rope.rotary_dims == 0);
        CHECK(rope.pairing == RopePairing::Interleaved);
        // DeepSeek-V2-Lite's shape: no q_lora_rank (q_proj), no scaling (the plain scale)
        json lite = config;
        lite["q_lora_rank"] = nullptr;
        lite.erase("rope_scaling");
        s = spec_of(lite);
        CHECK(s.latent.q_rank == 0);
        CHECK(s.attention_scale == Approx(1.0 / std::sqrt(8.0)).epsilon(1e-12));
        // refused: a K/V head count latent attention cannot have, a softmax router, a rotary width the
        // rotary embedding would read otherwise, FP8 as published, groups that do not split the experts
        json bad = config;
        bad["num_key_value_heads"] = 2;
        CHECK_THAT(refusal_of(bad), Contains("num_key_value_heads") && Contains("repeat_kv"));
        bad = config;
        bad["scoring_func"] = "softmax";
        CHECK_THAT(refusal_of(bad), Contains("scoring_func") && Contains("DeepSeek-V2"));
        bad = config;
        bad["head_dim"] = 8;
        CHECK_THAT(refusal_of(bad), Contains("head_dim") && Contains("qk_rope_head_dim 4"));
        bad = config;
        bad["quantization_config"] = {{"quant_method", "fp8"}, {"weight_block_size", {128, 128}}};
        CHECK_THAT(refusal_of(bad), Contains("quantization_config") && Contains("FP8"));
        bad = config;
        bad["n_group"] = 3;
        CHECK_THAT(refusal_of(bad), Contains("n_group"));
        bad = config;
        bad["num_experts_per_tok"] = 5;
        CHECK_THAT(refusal_of(bad), Contains("num_experts_per_tok") && Contains("kept groups"));
        bad = config;
        bad["moe_layer_freq"] = 2;
        CHECK_THAT(refusal_of(bad), Contains("moe_layer_freq"));
        bad = config;
        bad["qk_rope_head_dim"] = 3;
        CHECK_THAT(refusal_of(bad), Contains("qk_rope_head_dim") && Contains("odd"));
        bad = config;  // the latent's norms keep 1e-6 in transformers
        bad["rms_norm_eps"] = 1e-5;
        CHECK_THAT(refusal_of(bad), Contains("rms_norm_eps") && Contains("q_a_layernorm"));
        bad = config;  // transformers 5 would take 256 / 64 = 4 for the frequencies, the attention's scale 8
        bad["rope_scaling"]["factor"] = 8.0;
        CHECK_THAT(refusal_of(bad), Contains("'factor' 8.0 differs from max_position_embeddings / original_max_position_embeddings = 4.0"));
    }
    SECTION("llama4_text: chunked RoPE layers, a global NoPE layer with the temperature, the weightless QK-norm, interleaved MoE layers") {
        json config = llama4_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::llama4);
        CHECK(s.rope_style == hf::RopeStyle::interleaved);
        CHECK(s.d_ff == 20);  // intermediate_size_mlp: the dense layers'
        CHECK(s.experts.d_ff == 6);
        CHECK(s.experts.shared_d_ff == 6);
        CHECK(s.experts.top_k_then_sigmoid);
        CHECK_FALSE(s.qk_norm);  // per layer, below
        for (int l = 0; l < 3; ++l) {
            INFO("layer " << l);
            CHECK(s.layers[static_cast<std::size_t>(l)].rope);
            CHECK(s.layers[static_cast<std::size_t>(l)].chunk == 3);
            CHECK(s.layers[static_cast<std::size_t>(l)].qk_norm);
            CHECK_FALSE(s.layers[static_cast<std::size_t>(l)].temperature);
            CHECK(s.layers[static_cast<std::size_t>(l)].moe == (l == 1));
        }
        CHECK_FALSE(s.layers[3].rope);
        CHECK(s.layers[3].chunk == 0);
        CHECK_FALSE(s.layers[3].qk_norm);
        CHECK(s.layers[3].temperature);  // attn_temperature_tuning 4: true, as Python reads it
        CHECK(s.layers[3].moe);
        CHECK(s.temperature_floor_scale == 2);
        CHECK(s.temperature_attn_scale == 0.5);
        CHECK(s.layers[0].rope_scaling.kind == hf::RopeScalingKind::llama3);
        // the layer as the engine takes it: a chunked mask, the query temperature, QK-norm of ones
        const hf::OpenedModel opened = written_and_opened(llama4_checkpoint(), folder_for("llama4_spec"));
        const Matrix input = Matrix::Random(5, 16);
        const Scenario chunked = hf::layer_scenario(opened, {"a", "b", "c", "d", "e"}, 1, input);
        CHECK(chunked.mask == MaskKind::Chunked);
        CHECK(chunked.chunk == 3);
        CHECK(chunked.qk_norm);
        CHECK(chunked.q_norm.size() == 0);  // no weight: ones
        CHECK(chunked.positional == PositionalEncoding::Rotary);
        CHECK(chunked.rope.pairing == RopePairing::Interleaved);
        CHECK_FALSE(chunked.temperature.on());
        CHECK(chunked.block.moe.router_kind == RouterKind::TopKThenSigmoid);
        CHECK(chunked.block.moe.weight_input);
        CHECK(chunked.block.moe.shared_d_ff == 6);
        CHECK_FALSE(chunked.block.moe.shared_gated);
        const Scenario global = hf::layer_scenario(opened, {"a", "b", "c", "d", "e"}, 3, input);
        CHECK(global.mask == MaskKind::Causal);
        CHECK(global.positional == PositionalEncoding::None);
        CHECK_FALSE(global.qk_norm);
        CHECK(global.temperature.floor_scale == 2.0f);
        CHECK(global.temperature.attn_scale == 0.5f);
        CHECK(hf::layer_scenario(opened, {"a", "b", "c", "d", "e"}, 2, input).block.d_ff == 20);
        // defaults: every fourth layer NoPE and the others chunked, every layer a mixture; no temperature with null
        json bare = config;
        for (const char* key : {"no_rope_layers", "moe_layers", "interleave_moe_layer_step"}) bare.erase(key);
        bare["attn_temperature_tuning"] = nullptr;
        s = spec_of(bare);
        CHECK(s.layers[2].chunk == 3);
        CHECK(s.layers[3].chunk == 0);
        CHECK_FALSE(s.layers[3].rope);
        CHECK_FALSE(s.layers[3].temperature);
        CHECK(s.layers[0].moe);
        CHECK(s.layers[2].moe);
        json types = config;
        types["layer_types"] = {"full_attention", "chunked_attention", "chunked_attention", "full_attention"};
        s = spec_of(types);
        CHECK(s.layers[0].chunk == 0);
        CHECK(s.layers[1].chunk == 3);
        // refused: a chunked layer without a chunk size, a layer type it does not compute, a MoE layer outside the model
        json bad = config;
        bad["attention_chunk_size"] = nullptr;
        CHECK_THAT(refusal_of(bad), Contains("attention_chunk_size") && Contains("chunked"));
        bad = config;
        bad["layer_types"] = {"sliding_attention", "full_attention", "full_attention", "full_attention"};
        CHECK_THAT(refusal_of(bad), Contains("layer_types") && Contains("sliding_attention"));
        bad = config;
        bad["moe_layers"] = {1, 4};
        CHECK_THAT(refusal_of(bad), Contains("moe_layers"));
        bad = config;
        bad["attn_temperature_tuning"] = "yes";
        CHECK_THAT(refusal_of(bad), Contains("attn_temperature_tuning"));
    }
    SECTION("gemma3 (the multimodal folder as Google publishes it): text_config read as gemma3_text with Gemma3TextConfig's "
            "defaults, its tensors under language_model.model., no final soft-cap") {
        const FamilyCheckpoint published = gemma3_multimodal_checkpoint();
        hf::ModelSpec s = spec_of(published.config);
        CHECK(s.model_type == "gemma3_text");
        CHECK(s.multimodal_type == "gemma3");
        CHECK(s.tensor_prefix == "language_model.model.");
        CHECK(s.skipped_prefixes == std::vector<std::string>{"vision_tower.", "multi_modal_projector."});
        CHECK(s.tied_lm_head);
        CHECK(s.final_logit_softcap == 0);  // Gemma3ForConditionalGeneration's logits are lm_head(h)
        CHECK(spec_of(published.config["text_config"]).final_logit_softcap == 30);  // Gemma3ForCausalLM's are capped
        // its passes are the text model's (whose config has no soft-cap), number for number
        const hf::OpenedModel opened = written_and_opened(published, folder_for("gemma3_multimodal"));
        const hf::OpenedModel text = written_and_opened(gemma3_checkpoint(), folder_for("gemma3_text_alone"));
        const std::vector<int> ids = {1, 5, 3, 7, 2, 9, 4};
        const ModelPass a = hf::forward_ids(opened, ids), b = hf::forward_ids(text, ids);
        REQUIRE(a.ok);
        REQUIRE(b.ok);
        CHECK(a.logits == b.logits);
        const hf::OpenedModelLoad load = hf::open_model(folder_for("gemma3_multimodal"), false);
        REQUIRE(load.model);
        CHECK(load.ignored.size() == 2);
        for (const std::string& name : load.ignored) CHECK(load.model->spec.in_other_tower(name));
        // gemma-3-4b-it's own config: its text_config names five sizes, Gemma3TextConfig gives the rest
        const json original = json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
            "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02,
            "mm_tokens_per_image": 256, "model_type": "gemma3",
            "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
                            "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
            "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
            "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model",
                              "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}})");
        s = spec_of(original);
        CHECK(s.vocab_size == 262208);
        CHECK(s.d_model == 2560);
        CHECK(s.d_ff == 10240);
        CHECK(s.n_layers == 34);
        CHECK(s.n_heads == 8);
        CHECK(s.n_kv_heads == 4);
        CHECK(s.head_dim == 256);
        CHECK(s.attention_scale == Approx(1.0 / 16.0));  // query_pre_attn_scalar 256
        CHECK(s.layers[0].window == 1024);
        CHECK(s.layers[5].window == 0);                  // every sixth layer global
        CHECK(s.layers[5].rope_scaling.kind == hf::RopeScalingKind::linear);
        CHECK(s.layers[0].rope_theta == 10000.0);        // local layers: rope_local_base_freq, unscaled
        CHECK(s.layers[5].rope_theta == 1000000.0);
        // refused: a folder key it does not read
        json bad = published.config;
        bad["vision_feature_layer"] = -1;
        CHECK_THAT(refusal_of(bad), Contains("vision_feature_layer") && Contains("Gemma3ForConditionalGeneration"));
        // the same folder re-saved by transformers 4.52 or later (its checkpoint conversion mapping: the text model
        // under model.language_model., the towers under model.) opens in that layout, every logit equal
        const auto resaved_name = [](const std::string& name) {
            for (const auto& [from, to] : {std::pair<std::string, std::string>{"language_model.model.", "model.language_model."},
                                           {"vision_tower.", "model.vision_tower."},
                                           {"multi_modal_projector.", "model.multi_modal_projector."}})
                if (name.rfind(from, 0) == 0) return to + name.substr(from.size());
            return name;
        };
        FamilyCheckpoint resaved = published;
        resaved.tensors.clear();
        for (const auto& [name, tensor] : published.tensors) resaved.tensors[resaved_name(name)] = tensor;
        REQUIRE(resaved.tensors.count("model.language_model.embed_tokens.weight"));
        const hf::OpenedModel reopened = written_and_opened(resaved, folder_for("gemma3_resaved"));
        CHECK(reopened.spec.tensor_prefix == "model.language_model.");
        CHECK(reopened.spec.skipped_prefixes == std::vector<std::string>{"model.vision_tower.", "model.multi_modal_projector."});
        const ModelPass c = hf::forward_ids(reopened, ids);
        REQUIRE(c.ok);
        CHECK(c.logits == b.logits);
        const hf::OpenedModelLoad resaved_load = hf::open_model(folder_for("gemma3_resaved"), false);
        REQUIRE(resaved_load.model);
        CHECK(resaved_load.ignored.size() == 2);  // the towers, under model.
        for (const std::string& name : resaved_load.ignored) CHECK(resaved_load.model->spec.in_other_tower(name));
        // a folder holding the text model in neither layout is refused naming the tensor it lacks (the published layout's)
        FamilyCheckpoint neither = published;
        neither.tensors.clear();
        for (const auto& [name, tensor] : published.tensors)
            neither.tensors[name.rfind("language_model.model.", 0) == 0 ? "text." + name.substr(21) : name] = tensor;
        write_family_checkpoint(folder_for("gemma3_neither"), neither);
        const hf::OpenedModelLoad refused = hf::open_model(folder_for("gemma3_neither"), false);
        CHECK_FALSE(refused.model);
        CHECK_THAT(joined(refused.errors), Contains("language_model.model.embed_tokens.weight"));
    }
    SECTION("llama4 (the multimodal folder as Meta publishes it): text_config read as llama4_text, its tensors under "
            "language_model.model., its head language_model.lm_head") {
        const FamilyCheckpoint published = llama4_multimodal_checkpoint();
        hf::ModelSpec s = spec_of(published.config);
        CHECK(s.model_type == "llama4_text");
        CHECK(s.multimodal_type == "llama4");
        CHECK(s.tensor_prefix == "language_model.model.");
        CHECK(s.head_prefix == "language_model.");
        CHECK(s.skipped_prefixes == std::vector<std::string>{"vision_model.", "multi_modal_projector."});
        CHECK(s.layers[1].chunk == 3);
        CHECK_FALSE(s.tied_lm_head);
        // its passes are the text model's, number for number (the text model is checked against the reference above)
        const hf::OpenedModel opened = written_and_opened(published, folder_for("llama4_multimodal"));
        const hf::OpenedModel text = written_and_opened(llama4_checkpoint(), folder_for("llama4_text_alone"));
        const std::vector<int> ids = {1, 5, 3, 7, 2, 9, 4};
        const ModelPass a = hf::forward_ids(opened, ids), b = hf::forward_ids(text, ids);
        REQUIRE(a.ok);
        REQUIRE(b.ok);
        CHECK(a.logits == b.logits);
        CHECK(a.layers[1].block.routing == b.layers[1].block.routing);
        // the other towers' tensors read past, counted apart when it opens; the tensors it reads
        const hf::OpenedModelLoad load = hf::open_model(folder_for("llama4_multimodal"), false);
        REQUIRE(load.model);
        CHECK(load.ignored.size() == 2);
        for (const std::string& name : load.ignored) CHECK(load.model->spec.in_other_tower(name));
        std::vector<std::string> names;
        for (const hf::TensorShape& t : hf::expected_tensors(s)) names.push_back(t.name);
        CHECK(std::count(names.begin(), names.end(), "language_model.lm_head.weight") == 1);
        CHECK(std::count(names.begin(), names.end(), "language_model.model.embed_tokens.weight") == 1);
        CHECK(names.size() == llama4_checkpoint().tensors.size());
        // refused: a folder key it does not read, a text_config of another family
        json bad = published.config;
        bad["vision_feature_layer"] = -1;
        CHECK_THAT(refusal_of(bad), Contains("vision_feature_layer") && Contains("Llama4ForConditionalGeneration"));
        bad = published.config;
        bad["text_config"]["model_type"] = "llama";
        CHECK_THAT(refusal_of(bad), Contains("text_config") && Contains("\"llama4_text\""));
    }
    SECTION("qwen3_next: three Gated DeltaNet layers to one gated full layer, partial RoPE, (1 + w) norms, the mixture") {
        const json config = qwen3_next_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::qwen3_next);
        for (int l = 0; l < 3; ++l) CHECK(s.layers[static_cast<std::size_t>(l)].linear);
        CHECK_FALSE(s.layers[3].linear);
        CHECK(s.linear.key_heads == 2);
        CHECK(s.linear.value_heads == 4);
        CHECK(s.linear.key_dim == 4);
        CHECK(s.linear.value_dim == 4);
        CHECK(s.linear.conv_kernel == 4);
        CHECK(s.output_gate);
        CHECK(s.qk_norm);
        CHECK(s.norm.one_plus_weight);
        CHECK(s.rotary_dim == 2);  // head_dim 8 × partial_rotary_factor 0.25
        CHECK(s.experts.normalize_top_k);
        CHECK(s.experts.shared_gate);
        CHECK(s.experts.shared_d_ff == 20);
        CHECK_FALSE(s.layers[1].moe);  // mlp_only_layers
        CHECK(s.layers[2].moe);
        CHECK(s.most_heads() == 4);
        // the layers as the engine takes them
        const hf::OpenedModel opened = written_and_opened(qwen3_next_checkpoint(), folder_for("qwen3_next_spec"));
        const Matrix input = Matrix::Random(5, 16);
        const Scenario linear = hf::layer_scenario(opened, {"a", "b", "c", "d", "e"}, 0, input);
        CHECK(linear.delta_net.on);
        CHECK(linear.delta_net.key_heads == 2);
        CHECK(linear.heads == 4);
        CHECK(linear.mask == MaskKind::Causal);
        CHECK(linear.positional == PositionalEncoding::None);
        CHECK_FALSE(linear.output_gate.on);
        CHECK(validate(linear).empty());
        const Scenario full = hf::layer_scenario(opened, {"a", "b", "c", "d", "e"}, 3, input);
        CHECK_FALSE(full.delta_net.on);
        CHECK(full.output_gate.on);
        CHECK(full.qk_norm_plus_one);
        CHECK(full.rope.rotary_dims == 2);
        CHECK(full.block.moe.shared_gated);
        // defaults: head_dim 256, partial_rotary_factor 0.25, every fourth layer full, norm_topk_prob true
        json bare = config;
        for (const char* key : {"head_dim", "partial_rotary_factor", "full_attention_interval", "norm_topk_prob"}) bare.erase(key);
        s = spec_of(bare);
        CHECK(s.head_dim == 256);
        CHECK(s.rotary_dim == 64);
        CHECK(s.layers[3].linear == false);
        CHECK(s.layers[2].linear);
        CHECK(s.experts.normalize_top_k);
        json types = config;
        types.erase("full_attention_interval");
        types["layer_types"] = {"full_attention", "linear_attention", "full_attention", "linear_attention"};
        s = spec_of(types);
        CHECK_FALSE(s.layers[0].linear);
        CHECK(s.layers[1].linear);
        // refused: value heads that do not share the key heads evenly, a layer type it does not compute, both ways
        // of saying which layers are full
        json bad = config;
        bad["linear_num_value_heads"] = 3;
        CHECK_THAT(refusal_of(bad), Contains("linear_num_value_heads"));
        bad = config;
        bad.erase("full_attention_interval");
        bad["layer_types"] = {"sliding_attention", "full_attention", "full_attention", "full_attention"};
        CHECK_THAT(refusal_of(bad), Contains("layer_types") && Contains("sliding_attention"));
        json both = config;  // as published configs write them: both, agreeing
        both["layer_types"] = {"linear_attention", "linear_attention", "linear_attention", "full_attention"};
        CHECK(spec_of(both).layers[2].linear);
        bad = config;
        bad["layer_types"] = {"linear_attention", "linear_attention", "full_attention", "full_attention"};
        CHECK_THAT(refusal_of(bad), Contains("full_attention_interval") && Contains("disagrees"));
        bad = config;
        bad["linear_chunk_size"] = 64;
        CHECK_THAT(refusal_of(bad), Contains("linear_chunk_size"));
    }
    SECTION("qwen3_5 (the multimodal folder as published): text_config read as qwen3_5_text, its tensors under model.language_model.") {
        const json config = qwen3_5_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.model_type == "qwen3_5_text");
        CHECK(s.multimodal_type == "qwen3_5");
        CHECK(s.tensor_prefix == "model.language_model.");
        CHECK(s.tensors == hf::TensorLayout::qwen3_5);
        for (int l = 0; l < 3; ++l) CHECK(s.layers[static_cast<std::size_t>(l)].linear);
        CHECK_FALSE(s.layers[3].linear);
        CHECK(s.output_gate);
        CHECK(s.qk_norm);
        CHECK(s.norm.one_plus_weight);
        CHECK(s.rotary_dim == 4);  // head_dim 16 × 0.25: mrope_section [1, 1, 0] covers its 2 pairs
        CHECK(s.layers[3].rope_scaling.kind == hf::RopeScalingKind::none);
        CHECK(s.layers[3].rope_scaling.mrope_pairs == 2);
        CHECK(s.layers[3].rope_theta == 10000000.0);
        CHECK(s.experts.experts == 0);  // a dense MLP in every layer
        for (const hf::LayerSpec& l : s.layers) CHECK_FALSE(l.moe);
        CHECK(s.d_ff == 24);
        CHECK_FALSE(s.tied_lm_head);
        // the text model saved alone (Qwen3_5ForCausalLM): its own folder, its tensors under model.
        s = spec_of(config["text_config"]);
        CHECK(s.model_type == "qwen3_5_text");
        CHECK(s.multimodal_type.empty());
        CHECK(s.tensor_prefix == "model.");
        // the layers as the engine takes them: Gated DeltaNet from the projections stored apart
        const hf::OpenedModel opened = written_and_opened(qwen3_5_checkpoint(), folder_for("qwen3_5_spec"));
        const Matrix input = Matrix::Random(5, 16);
        const Scenario linear = hf::layer_scenario(opened, {"a", "b", "c", "d", "e"}, 1, input);
        CHECK(linear.delta_net.on);
        CHECK(linear.delta_net.key_heads == 2);
        CHECK(validate(linear).empty());
        const Scenario full = hf::layer_scenario(opened, {"a", "b", "c", "d", "e"}, 3, input);
        CHECK(full.output_gate.on);
        CHECK(full.rope.rotary_dims == 4);
        CHECK_FALSE(full.block.moe.routed());
        // what opening it says: the text model of the folder, the vision tower counted apart, mtp.* named
        std::filesystem::copy_file(std::filesystem::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json",
                                   std::filesystem::path(folder_for("qwen3_5_spec")) / "tokenizer.json",
                                   std::filesystem::copy_options::overwrite_existing);
        const lm::ModelLoad said = lm::load_model(folder_for("qwen3_5_spec"));
        INFO(joined(said.errors));
        REQUIRE(said.model);
        CHECK(said.model->family() == "Qwen3.5");
        CHECK_THAT(said.ignored, Contains("the text model of a multimodal folder (model_type \"qwen3_5\"), its tensors under model.language_model.") &&
                                     Contains("2 tensors of its other towers (model.visual.") && Contains("ignored 1 tensors") &&
                                     Contains("mtp.fc.weight") && !Contains("model.visual.blocks"));
        // refused: sections that do not cover the rotary pairs, a model without the output gate, a mixture's
        // keys (qwen3_5_moe is another family), a key of the folder's own it does not read, a text_config of
        // another family, tie_word_embeddings said two ways
        json bad = config;
        bad["text_config"]["rope_parameters"]["mrope_section"] = {2, 1, 1};
        CHECK_THAT(refusal_of(bad), Contains("mrope_section") && Contains("covers 4 rotary pairs") && Contains("text_config"));
        bad = config;
        bad["text_config"]["rope_parameters"]["mrope_section"] = {1, 1};
        CHECK_THAT(refusal_of(bad), Contains("'mrope_section': expected three counts"));
        bad = config;
        bad["text_config"]["attn_output_gate"] = false;
        CHECK_THAT(refusal_of(bad), Contains("attn_output_gate"));
        bad = config;
        bad["text_config"]["num_experts"] = 8;
        CHECK_THAT(refusal_of(bad), Contains("num_experts") && Contains("refused rather than ignored"));
        bad = config;
        bad["audio_config"] = json::object();
        CHECK_THAT(refusal_of(bad), Contains("audio_config") && Contains("Qwen3_5ForConditionalGeneration"));
        bad = config;
        bad["text_config"]["model_type"] = "qwen3_next";
        CHECK_THAT(refusal_of(bad), Contains("text_config") && Contains("\"qwen3_5_text\""));
        bad = config;
        bad.erase("text_config");
        CHECK_THAT(refusal_of(bad), Contains("'text_config': missing"));
        bad = config;
        bad["tie_word_embeddings"] = true;
        CHECK_THAT(refusal_of(bad), Contains("tie_word_embeddings") && Contains("disagrees"));
        // multimodal RoPE is read by this family only
        json qwen3 = qwen3_checkpoint().config;
        qwen3["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"mrope_section", {1, 1, 0}}};
        qwen3.erase("rope_theta");
        CHECK_THAT(refusal_of(qwen3), Contains("'mrope_section'"));
    }
    SECTION("qwen3_5_moe: Qwen3.5's layers, a mixture in every layer always renormalised, a gated shared expert") {
        const json config = qwen3_5_moe_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.model_type == "qwen3_5_moe_text");
        CHECK(s.multimodal_type == "qwen3_5_moe");
        CHECK(s.tensors == hf::TensorLayout::qwen3_5);
        CHECK(s.layers[0].linear);
        CHECK_FALSE(s.layers[3].linear);
        for (const hf::LayerSpec& l : s.layers) CHECK(l.moe);
        CHECK(s.experts.experts == 6);
        CHECK(s.experts.experts_per_token == 2);
        CHECK(s.experts.d_ff == 12);
        CHECK(s.experts.normalize_top_k);
        CHECK(s.experts.shared_d_ff == 20);
        CHECK(s.experts.shared_gate);
        CHECK(s.output_gate);
        // defaults: 256 experts, 8 kept, 512 wide, a shared expert of 512
        json bare = config;
        for (const char* key : {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size"})
            bare["text_config"].erase(key);
        s = spec_of(bare);
        CHECK(s.experts.experts == 256);
        CHECK(s.experts.experts_per_token == 8);
        CHECK(s.experts.d_ff == 512);
        CHECK(s.experts.shared_d_ff == 512);
        // intermediate_size, which no layer reads, changes nothing; norm_topk_prob false would be ignored: refused
        json dense = config;
        dense["text_config"]["intermediate_size"] = 99;
        CHECK(spec_of(dense).experts.d_ff == 12);
        json bad = config;
        bad["text_config"]["norm_topk_prob"] = false;
        CHECK_THAT(refusal_of(bad), Contains("norm_topk_prob") && Contains("renormalises"));
        bad = config;
        bad["text_config"]["model_type"] = "qwen3_5_text";
        CHECK_THAT(refusal_of(bad), Contains("\"qwen3_5_moe_text\""));
    }
    SECTION("gemma3_text: QK-norm, MQA, 2 sliding : 1 global, a local RoPE base on sliding layers, √d of a non-square") {
        json config = gemma3_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.qk_norm);
        CHECK(s.n_kv_heads == 1);
        CHECK(s.layers[0].window == 3);
        CHECK(s.layers[1].window == 3);
        CHECK(s.layers[2].window == 0);
        CHECK(s.layers[0].rope_theta == 10000);
        CHECK(s.layers[2].rope_theta == 1e6);
        CHECK(s.attn_logit_softcap == 0);
        CHECK(s.final_logit_softcap == 0);
        config["hidden_size"] = 18;
        CHECK(spec_of(config).embedding_scale == static_cast<float>(std::sqrt(18.0)));
        // linear rope_scaling (gemma-3-4b): the global layers only
        config["rope_scaling"] = {{"factor", 8.0}, {"rope_type", "linear"}};
        s = spec_of(config);
        CHECK(s.layers[2].rope_scaling.kind == hf::RopeScalingKind::linear);
        CHECK(s.layers[0].rope_scaling.kind == hf::RopeScalingKind::none);
        CHECK(hf::rope_inverse_frequencies(s, 2, 0)[1] == Approx(std::pow(1e6, -0.25) / 8).epsilon(1e-6));
        // layer_types, as transformers 4.53+ saves it, wins over the pattern
        config["layer_types"] = {"full_attention", "sliding_attention", "sliding_attention"};
        s = spec_of(config);
        CHECK(s.layers[0].window == 0);
        CHECK(s.layers[0].rope_theta == 1e6);
        CHECK(s.layers[2].window == 3);
    }
    SECTION("gpt_neox (Pythia): a quarter of each head rotates, parallel residual, untied, exact GELU") {
        hf::ModelSpec s = spec_of(neox_checkpoint().config);
        CHECK(s.head_dim == 16);
        CHECK(s.rotary_dim == 4);
        CHECK(s.layout == hf::BlockLayout::parallel_residual);
        CHECK(s.activation == hf::Activation::gelu_exact);
        CHECK(s.norm.kind == hf::NormKind::layer_norm);
        CHECK(s.mlp == hf::MlpKind::plain);
        CHECK_FALSE(s.tied_lm_head);
        CHECK(s.qkv_bias);
        CHECK(spec_of(neox_checkpoint(7, false).config).layout == hf::BlockLayout::pre_norm);
    }
    SECTION("bert: bidirectional, post-norm, learned positions, token types, the MLM head") {
        const hf::ModelSpec s = spec_of(bert_checkpoint().config);
        CHECK_FALSE(s.layers[0].causal);
        CHECK(s.layout == hf::BlockLayout::post_norm);
        CHECK(s.positions == hf::PositionKind::learned_absolute);
        CHECK(s.max_positions == 16);
        CHECK(s.type_vocab_size == 2);
        CHECK(s.embedding_norm);
        CHECK(s.head == hf::HeadKind::masked_lm);
        CHECK(s.lm_head_bias);
        CHECK_FALSE(s.final_norm);
        CHECK(s.norm.epsilon == 1e-12);
        CHECK(s.pad_token_id == 0);
        json with_mask = bert_checkpoint().config;
        with_mask["mask_token_id"] = 39;
        CHECK(spec_of(with_mask).mask_token_id == 39);
    }
    SECTION("diffllama: Llama's decoder with its heads in differential pairs, biases on every projection, λ_init by layer") {
        json config = diffllama_checkpoint().config;
        const hf::ModelSpec s = spec_of(config);
        CHECK(s.differential);
        CHECK(s.qkv_bias);
        CHECK(s.o_bias);
        CHECK_FALSE(s.mlp_bias);
        CHECK(s.n_heads == 4);
        CHECK(s.n_kv_heads == 2);
        config["num_attention_heads"] = 3;
        config["num_key_value_heads"] = 3;
        CHECK_THAT(refusal_of(config), Contains("num_attention_heads") && Contains("even number"));
        config = diffllama_checkpoint().config;
        config["mlp_bias"] = true;  // DiffLlamaMLP is Mistral's: no bias, and no key for one
        CHECK_THAT(refusal_of(config), Contains("mlp_bias"));
    }
    SECTION("modernbert: bidirectional pre-norm, no attention norm in layer 0, a band of local_attention / 2 on two layers of three, a RoPE base each kind") {
        json config = modernbert_checkpoint().config;
        hf::ModelSpec s = spec_of(config);
        CHECK(s.tensors == hf::TensorLayout::modernbert);
        CHECK(s.layout == hf::BlockLayout::pre_norm);
        CHECK(s.positions == hf::PositionKind::rope);
        CHECK(s.rotary_dim == 4);
        CHECK(s.mlp == hf::MlpKind::gated);
        CHECK(s.activation == hf::Activation::gelu_exact);
        CHECK(s.norm.kind == hf::NormKind::layer_norm);
        CHECK_FALSE(s.norm.bias);
        CHECK(s.embedding_norm);
        CHECK(s.final_norm);
        CHECK(s.head == hf::HeadKind::masked_lm);
        CHECK(s.lm_head_bias);
        CHECK_FALSE(s.mlm_dense_bias);
        CHECK_FALSE(s.qkv_bias);
        CHECK(s.attention_scale == Approx(0.5));
        for (int l = 0; l < 4; ++l) {
            INFO("layer " << l);
            const hf::LayerSpec& layer = s.layers[static_cast<std::size_t>(l)];
            CHECK_FALSE(layer.causal);
            CHECK(layer.attn_norm == (l != 0));
            const bool local = l % 3 != 0;  // global_attn_every_n_layers 3: layers 0 and 3 global
            CHECK(layer.window == (local ? 2 : 0));
            CHECK(layer.rope_theta == (local ? 10000.0 : 160000.0));
        }
        // transformers 5: layer_types and rope_parameters per kind of layer (which win over the old keys)
        config["layer_types"] = {"full_attention", "full_attention", "sliding_attention", "full_attention"};
        config["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1000.0}}},
                                     {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 100.0}}}};
        s = spec_of(config);
        CHECK(s.layers[1].window == 0);
        CHECK(s.layers[1].rope_theta == 1000.0);
        CHECK(s.layers[2].window == 2);
        CHECK(s.layers[2].rope_theta == 100.0);
        config["rope_parameters"] = {{"local_attention", {{"rope_type", "default"}}}};
        CHECK_THAT(refusal_of(config), Contains("rope_parameters") && Contains("'local_attention' is not a kind of layer"));
        config.erase("rope_parameters");
        config["mlp_bias"] = true;
        CHECK_THAT(refusal_of(config), Contains("mlp_bias"));
        config["mlp_bias"] = false;
        config["unpad_inputs"] = true;  // a key no ModernBERT class reads is refused, naming it
        CHECK_THAT(refusal_of(config), Contains("unpad_inputs"));
    }
    SECTION("rope_parameters, as transformers 5 saves it, is read like rope_theta and rope_scaling") {
        json config = llama3_checkpoint().config;
        const json scaling = config["rope_scaling"];
        config.erase("rope_scaling");
        config.erase("rope_theta");
        config["rope_parameters"] = scaling;
        config["rope_parameters"]["rope_theta"] = 500000.0;
        const hf::ModelSpec s = spec_of(config);
        CHECK(s.layers[1].rope_theta == 500000.0);
        CHECK(s.layers[1].rope_scaling.kind == hf::RopeScalingKind::llama3);
    }
    SECTION("every key of every fixture's config is honoured or listed as informational") {
        for (const FamilyCheckpoint& c : all_family_checkpoints()) {
            // a multimodal folder's text model: its text_config's keys (the folder's own, its Multimodal row's)
            const json& config = c.config.contains("text_config") ? c.config["text_config"] : c.config;
            const hf::KeyLists* keys = hf::config_keys(config["model_type"]);
            REQUIRE(keys);
            for (const auto& [key, value] : config.items()) {
                INFO(c.label << ": " << key);
                const bool listed = std::count(keys->honoured.begin(), keys->honoured.end(), key) +
                                    std::count(keys->informational.begin(), keys->informational.end(), key);
                CHECK(listed == 1);
            }
        }
    }
}

// [SECTION] Refusals

TEST_CASE("configs that would run as something else are refused, naming the key and value", "[families][spec][refusal]") {
    SECTION("an unknown model_type, naming it and the supported ones") {
        json config = llama_checkpoint().config;
        config["model_type"] = "falcon";
        const std::string e = refusal_of(config);
        CHECK_THAT(e, Contains("\"falcon\" is not supported") && Contains("\"llama\"") && Contains("\"mistral\"") && Contains("\"gemma3_text\"") &&
                          Contains("\"bert\""));
        config.erase("model_type");
        CHECK_THAT(refusal_of(config), Contains("key 'model_type': missing"));
    }
    SECTION("an unsupported rope_scaling type, and a linear one without its factor") {
        json config = llama3_checkpoint().config;
        config["rope_scaling"]["rope_type"] = "yarn";
        CHECK_THAT(refusal_of(config), Contains("key 'rope_scaling'") && Contains("\"yarn\" is not supported"));
        config["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
        CHECK_THAT(refusal_of(config), Contains("\"dynamic\" is not supported"));
        config["rope_scaling"] = {{"rope_type", "linear"}};
        CHECK_THAT(refusal_of(config), Contains("\"linear\" needs a 'factor'"));
        config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
        CHECK_THAT(refusal_of(config), Contains("needs 'low_freq_factor'"));
        config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"beta_fast", 32}};
        CHECK_THAT(refusal_of(config), Contains("'beta_fast'"));
    }
    SECTION("an unknown key, naming it; and a key of another family") {
        json config = qwen3_checkpoint().config;
        config["rope_mystery"] = 3;
        CHECK_THAT(refusal_of(config), Contains("key 'rope_mystery': 3 is not read by the qwen3 reader"));
        json qwen2 = qwen2_checkpoint().config;
        qwen2["attention_bias"] = false;   // Qwen2 has fixed biases; the key is not one of its config
        CHECK_THAT(refusal_of(qwen2), Contains("key 'attention_bias'"));
        json llama = llama_checkpoint().config;
        llama["attn_logit_softcapping"] = 30.0;   // Gemma's, not Llama's
        CHECK_THAT(refusal_of(llama), Contains("key 'attn_logit_softcapping': 30.0"));
    }
    SECTION("values outside what the family computes") {
        json llama = llama_checkpoint().config;
        llama["hidden_act"] = "quick_gelu";
        CHECK_THAT(refusal_of(llama), Contains("key 'hidden_act': \"quick_gelu\" is not supported"));
        llama = llama_checkpoint().config;
        llama["num_key_value_heads"] = 4;
        CHECK_THAT(refusal_of(llama), Contains("key 'num_key_value_heads': 4 does not divide num_attention_heads 6"));
        llama = llama_checkpoint().config;
        llama["rope_interleaved"] = true;
        CHECK_THAT(refusal_of(llama), Contains("key 'rope_interleaved': true is not supported"));
        json gemma3 = gemma3_checkpoint().config;
        gemma3["attn_logit_softcapping"] = 50.0;   // transformers' Gemma 3 would silently not cap
        CHECK_THAT(refusal_of(gemma3), Contains("key 'attn_logit_softcapping'") && Contains("never soft-caps"));
        gemma3 = gemma3_checkpoint().config;
        gemma3["use_bidirectional_attention"] = true;
        CHECK_THAT(refusal_of(gemma3), Contains("key 'use_bidirectional_attention': true"));
        gemma3 = gemma3_checkpoint().config;
        gemma3["layer_types"] = {"full_attention", "chunked_attention", "full_attention"};
        CHECK_THAT(refusal_of(gemma3), Contains("\"chunked_attention\" is not supported"));
        json qwen2 = qwen2_checkpoint().config;
        qwen2["layer_types"] = {"sliding_attention", "full_attention"};   // a sliding layer with use_sliding_window false
        CHECK_THAT(refusal_of(qwen2), Contains("no window"));
        json bert = bert_checkpoint().config;
        bert["position_embedding_type"] = "relative_key";
        CHECK_THAT(refusal_of(bert), Contains("key 'position_embedding_type': \"relative_key\""));
        bert = bert_checkpoint().config;
        bert["is_decoder"] = true;
        CHECK_THAT(refusal_of(bert), Contains("key 'is_decoder': true"));
        json neox = neox_checkpoint().config;
        neox["rotary_pct"] = 0.1875;   // 16·0.1875 = 3 dims: not pairs
        CHECK_THAT(refusal_of(neox), Contains("odd"));
        json gpt2 = json::parse(gpt2::config_json(attn::testing::tiny_config()));
        gpt2["scale_attn_by_inverse_layer_idx"] = true;
        CHECK_THAT(refusal_of(gpt2), Contains("key 'scale_attn_by_inverse_layer_idx': true"));
    }
}

TEST_CASE("folders whose tensors do not match the config are refused, naming the tensor, the file and the shape", "[families][weights][refusal]") {
    SECTION("a missing tensor") {
        FamilyCheckpoint c = gemma2_checkpoint();
        c.tensors.erase("model.layers.1.pre_feedforward_layernorm.weight");
        write_family_checkpoint(folder_for("missing"), c);
        const hf::ModelLoad load = hf::load_model(folder_for("missing"));
        CHECK_FALSE(load.weights);
        CHECK_THAT(joined(load.errors), Contains("tensor 'model.layers.1.pre_feedforward_layernorm.weight' is missing") &&
                                            Contains("shape [16]"));
    }
    SECTION("an untied head missing") {
        FamilyCheckpoint c = neox_checkpoint();
        c.tensors.erase("embed_out.weight");
        write_family_checkpoint(folder_for("no_head"), c);
        CHECK_THAT(joined(hf::load_model(folder_for("no_head")).errors), Contains("tensor 'embed_out.weight' is missing"));
    }
    SECTION("a wrong shape: k_proj sized for 4 K/V heads when the config says 2") {
        FamilyCheckpoint c = qwen2_checkpoint();
        c.tensors["model.layers.0.self_attn.k_proj.weight"] = HfTensor{{16, 16}, std::vector<float>(256, 0.5f)};
        write_family_checkpoint(folder_for("shape"), c);
        const hf::ModelLoad load = hf::load_model(folder_for("shape"));
        CHECK_FALSE(load.weights);
        CHECK_THAT(joined(load.errors), Contains("model.safetensors: tensor 'model.layers.0.self_attn.k_proj.weight' is [16, 16]; expected [8, 16]"));
    }
    SECTION("a tensor the family does not have") {
        FamilyCheckpoint c = llama_checkpoint();
        c.tensors["model.layers.0.self_attn.rotary_emb.scale"] = HfTensor{{2}, {1.0f, 2.0f}};
        write_family_checkpoint(folder_for("extra"), c);
        CHECK_THAT(joined(hf::load_model(folder_for("extra")).errors),
                   Contains("tensor 'model.layers.0.self_attn.rotary_emb.scale' is not one of a llama checkpoint's"));
    }
    SECTION("one weight under two names") {
        FamilyCheckpoint c = llama_checkpoint();
        c.tensors["layers.0.mlp.up_proj.weight"] = c.tensors.at("model.layers.0.mlp.up_proj.weight");
        write_family_checkpoint(folder_for("twice"), c);
        CHECK_THAT(joined(hf::load_model(folder_for("twice")).errors), Contains("is stored under 2 names"));
    }
    SECTION("a tied head that differs from the embedding") {
        FamilyCheckpoint c = qwen3_checkpoint();
        c.tensors["lm_head.weight"] = c.tensors.at("model.embed_tokens.weight");
        c.tensors["lm_head.weight"].values[5] += 1.0f;
        write_family_checkpoint(folder_for("tied_differs"), c);
        CHECK_THAT(joined(hf::load_model(folder_for("tied_differs")).errors),
                   Contains("tensor 'lm_head.weight' differs from the token embedding"));
    }
    SECTION("a shard missing, a tensor the index puts in a shard that lacks it, one in two shards") {
        const FamilyCheckpoint c = llama3_checkpoint();
        const std::string folder = folder_for("shards");
        write_family_checkpoint(folder, c);
        std::filesystem::remove(std::filesystem::path(folder) / "model-00002-of-00002.safetensors");
        CHECK_THAT(joined(hf::load_model(folder).errors), Contains("model-00002-of-00002.safetensors: missing; ") &&
                                                              Contains("model.safetensors.index.json names it for"));

        write_family_checkpoint(folder, c);
        const std::string index_path = folder + "/model.safetensors.index.json";
        json index = json::parse(attn::testing::read_file(index_path));
        index["weight_map"]["model.norm.weight"] =
            index["weight_map"]["model.norm.weight"] == "model-00001-of-00002.safetensors" ? "model-00002-of-00002.safetensors"
                                                                                          : "model-00001-of-00002.safetensors";
        attn::testing::write_file(index_path, index.dump());
        CHECK_THAT(joined(hf::load_model(folder).errors), Contains("tensor 'model.norm.weight' is missing, but") &&
                                                              Contains("is not in") );

        write_family_checkpoint(folder, c);
        index = json::parse(attn::testing::read_file(index_path));
        index["weight_map"]["model.layers.0.mlp.up_proj.weight"] = "../elsewhere.safetensors";
        attn::testing::write_file(index_path, index.dump());
        CHECK_THAT(joined(hf::load_model(folder).errors), Contains("is not a file name in this folder"));
    }
    SECTION("a tensor in two shards") {
        FamilyCheckpoint c = llama3_checkpoint();
        const std::string folder = folder_for("two_shards");
        write_family_checkpoint(folder, c);
        // the second shard rewritten with a tensor of the first shard added
        HfTensors second;
        const json index = json::parse(attn::testing::read_file(folder + "/model.safetensors.index.json"));
        std::string from_first;
        for (const auto& [name, file] : index["weight_map"].items()) {
            if (file == "model-00002-of-00002.safetensors") second[name] = c.tensors.at(name);
            else from_first = name;
        }
        second[from_first] = c.tensors.at(from_first);
        std::string error;
        REQUIRE(safetensors::write_safetensors(folder + "/model-00002-of-00002.safetensors", named(second), {}, c.dtype, &error));
        CHECK_THAT(joined(hf::load_model(folder).errors), Contains("tensor '" + from_first + "' is also in"));
    }
    SECTION("no weights at all") {
        FamilyCheckpoint c = bert_checkpoint();
        write_family_checkpoint(folder_for("no_weights"), c);
        std::filesystem::remove(folder_for("no_weights") + "/model.safetensors");
        CHECK_THAT(joined(hf::load_model(folder_for("no_weights")).errors), Contains("model.safetensors: missing"));
    }
}

// [SECTION] Hostile files: bounded, said, never a crash or a silent default

TEST_CASE("a tensor name of 50,000 characters is refused by its length, and long names are matched without recursion", "[families][weights][hostile]") {
    // std::regex's recursion overflowed the stack on such a name in llama, bert and gpt_neox
    // folders (SIGSEGV) when the unused tensor was checked against the buffers a family drops.
    for (FamilyCheckpoint c : {llama_checkpoint(), bert_checkpoint(), neox_checkpoint()}) {
        INFO(c.label);
        c.tensors[std::string(50000, 'x')] = HfTensor{{1}, {0.0f}};
        write_family_checkpoint(folder_for("long_name"), c);
        const hf::ModelLoad load = hf::load_model(folder_for("long_name"));
        CHECK_FALSE(load.weights);
        CHECK_THAT(joined(load.errors), Contains("a tensor name of 50000 bytes ('xxxx") && Contains("a name is at most 1024 bytes"));
    }
    // Names as long as the format allows still reach the buffers' rules: a RoPE table under a
    // 1,000-character prefix is ignored, as transformers recomputes it; another is refused.
    FamilyCheckpoint c = llama_checkpoint();
    const std::string prefix = "model." + std::string(980, 'a');
    c.tensors[prefix + ".rotary_emb.inv_freq"] = HfTensor{{2}, {1.0f, 0.5f}};
    const hf::ModelLoad load = written_and_read(c, folder_for("long_buffer"));
    REQUIRE(load.ignored.size() == 1);
    CHECK(load.ignored.front() == prefix + ".rotary_emb.inv_freq");
    c.tensors[prefix + ".rotary_emb.inv_freq2"] = HfTensor{{2}, {1.0f, 0.5f}};
    write_family_checkpoint(folder_for("long_buffer"), c);
    CHECK_THAT(joined(hf::load_model(folder_for("long_buffer")).errors), Contains("' is not one of a llama checkpoint's"));
    // The buffers GPT-2, GPT-NeoX and BERT store, each read by hand as its pattern said.
    FamilyCheckpoint n = neox_checkpoint();
    n.tensors["gpt_neox.layers.12.attention.masked_bias"] = HfTensor{{1}, {-1e9f}};
    n.tensors["layers.3.attention.bias"] = HfTensor{{1}, {1.0f}};
    const hf::ModelLoad neox_load = written_and_read(n, folder_for("neox_buffers"));
    for (const char* name : {"gpt_neox.layers.12.attention.masked_bias", "layers.3.attention.bias"})
        CHECK(std::find(neox_load.ignored.begin(), neox_load.ignored.end(), name) != neox_load.ignored.end());
    n.tensors["gpt_neox.layers.x.attention.bias"] = HfTensor{{1}, {1.0f}};   // no layer number: not a buffer
    write_family_checkpoint(folder_for("neox_buffers"), n);
    CHECK_THAT(joined(hf::load_model(folder_for("neox_buffers")).errors), Contains("'gpt_neox.layers.x.attention.bias' is not one of"));
}

TEST_CASE("config values transformers refuses, or float32 cannot hold, are refused, naming the key", "[families][spec][hostile]") {
    // A soft-cap of 1e-300 became 0.0f: capping off, a top probability of 0.86 where
    // transformers gives a uniform 1/V.
    for (const char* key : {"final_logit_softcapping", "attn_logit_softcapping"}) {
        json gemma2 = gemma2_checkpoint().config;
        gemma2[key] = 1e-300;
        CHECK_THAT(refusal_of(gemma2), Contains(std::string("key '") + key + "': 1e-300 is too small for float32"));
    }
    json gemma2 = gemma2_checkpoint().config;
    gemma2["rms_norm_eps"] = 1e-45;   // a subnormal float: its precision gone
    CHECK_THAT(refusal_of(gemma2), Contains("key 'rms_norm_eps'") && Contains("too small for float32"));
    gemma2 = gemma2_checkpoint().config;
    gemma2["rope_theta"] = 1e39;
    CHECK_THAT(refusal_of(gemma2), Contains("key 'rope_theta'"));
    // Gemma's MLP is ACT2FN[hidden_activation]: null is no activation there, not the default.
    for (json config : {gemma2_checkpoint().config, gemma3_checkpoint().config}) {
        config["hidden_activation"] = nullptr;
        CHECK_THAT(refusal_of(config), Contains("key 'hidden_activation': null is not an activation"));
    }
    // A rope type that is not a string is no type, never the default.
    json llama = llama3_checkpoint().config;
    llama["rope_scaling"] = {{"type", 5}, {"factor", 2.0}};
    CHECK_THAT(refusal_of(llama), Contains("key 'rope_scaling': 'type': expected a string") && Contains("found 5"));
    llama["rope_scaling"] = {{"rope_type", {{"linear", true}}}, {"factor", 2.0}};
    CHECK_THAT(refusal_of(llama), Contains("'rope_type': expected a string"));
    llama["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 1e-300}};
    CHECK_THAT(refusal_of(llama), Contains("'factor': 1e-300 is too small for float32"));
    // BERT's [MASK] outside the vocabulary predicted at no token and said nothing.
    json bert = bert_checkpoint().config;
    bert["mask_token_id"] = 40;
    CHECK_THAT(refusal_of(bert), Contains("key 'mask_token_id': 40 is outside the vocabulary (vocab_size 40: ids 0 to 39)"));
    bert["mask_token_id"] = 39;
    spec_of(bert);   // the last id is fine
}

TEST_CASE("a tied head or a decoder bias of another shape is refused even when its count matches", "[families][weights][hostile]") {
    SECTION("lm_head stored [d, V] beside an embedding [V, d]") {
        FamilyCheckpoint c = qwen3_checkpoint();
        const HfTensor& embedding = c.tensors.at("model.embed_tokens.weight");
        c.tensors["lm_head.weight"] = HfTensor{{embedding.shape[1], embedding.shape[0]}, embedding.values};
        write_family_checkpoint(folder_for("tied_transposed"), c);
        const hf::ModelLoad load = hf::load_model(folder_for("tied_transposed"));
        CHECK_FALSE(load.weights);
        CHECK_THAT(joined(load.errors), Contains("tensor 'lm_head.weight' is [" + std::to_string(embedding.shape[1]) + ", " +
                                                 std::to_string(embedding.shape[0]) + "]; tie_word_embeddings ties it to the token embedding"));
    }
    SECTION("BERT's decoder bias stored [V/2, 2]") {
        FamilyCheckpoint c = bert_checkpoint();
        c.tensors["cls.predictions.decoder.bias"] = HfTensor{{20, 2}, c.tensors.at("cls.predictions.bias").values};
        write_family_checkpoint(folder_for("bias_shape"), c);
        const hf::ModelLoad load = hf::load_model(folder_for("bias_shape"));
        CHECK_FALSE(load.weights);
        CHECK_THAT(joined(load.errors), Contains("tensor 'cls.predictions.decoder.bias' is [20, 2]"));
    }
}

TEST_CASE("a shard that is a symlink loop is said to be unreachable, not missing", "[families][weights][hostile]") {
    namespace fs = std::filesystem;
    const std::string folder = folder_for("shard_loop");
    write_family_checkpoint(folder, llama3_checkpoint());
    const fs::path shard = fs::path(folder) / "model-00002-of-00002.safetensors";
    fs::remove(shard);
    fs::create_symlink(shard.filename(), shard);   // points at itself
    const std::string errors = joined(hf::load_model(folder).errors);
    CHECK_THAT(errors, Contains("model-00002-of-00002.safetensors: cannot be reached (too many levels of symbolic links"));
    CHECK_THAT(errors, !Contains(": missing"));
}

// [SECTION] The reference's own sanity

namespace {

const std::vector<int> kIds = {3, 17, 5, 29, 11, 8, 36, 2};

Reference reference_of(const FamilyCheckpoint& c, const std::vector<int>& ids = kIds) {
    return reference_forward(spec_of(c.config), c.tensors, ids);
}

}  // namespace

TEST_CASE("the reference's attention: rows sum to 1, causal, sliding and band masks, GQA's shared keys", "[families][reference]") {
    for (const FamilyCheckpoint& c : all_family_checkpoints()) {
        DYNAMIC_SECTION(c.label) {
            const hf::ModelSpec s = spec_of(c.config);
            const Reference r = reference_of(c);
            const std::size_t n = kIds.size();
            REQUIRE(r.attention.size() == static_cast<std::size_t>(s.n_layers));
            REQUIRE(r.logits.size() == n);
            REQUIRE(r.logits[0].size() == static_cast<std::size_t>(s.vocab_size));
            double largest_weight = 0;
            for (int l = 0; l < s.n_layers; ++l) {
                const hf::LayerSpec& ls = s.layers[static_cast<std::size_t>(l)];
                if (ls.linear) continue;  // Qwen3-Next's Gated DeltaNet: implied weights, no softmax (tested on their own)
                REQUIRE(r.attention[static_cast<std::size_t>(l)].size() == static_cast<std::size_t>(s.n_heads));
                for (int h = 0; h < s.n_heads; ++h) {
                    const Rows& w = r.attention[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
                    for (std::size_t i = 0; i < n; ++i) {
                        double sum = 0;
                        for (std::size_t j = 0; j < n; ++j) {
                            sum += w[i][j];
                            largest_weight = std::max(largest_weight, j < i ? w[i][j] : 0.0);
                            // outside the window (ModernBERT's band: more than W away on either side), or (Llama 4) in an
                            // earlier chunk
                            const int distance = static_cast<int>(i) - static_cast<int>(j);
                            const bool future = j > i,
                                       outside = (ls.window > 0 && (ls.causal ? distance >= ls.window : std::abs(distance) > ls.window)) ||
                                                 (ls.chunk > 0 && j / static_cast<std::size_t>(ls.chunk) != i / static_cast<std::size_t>(ls.chunk));
                            if ((ls.causal && future) || outside) CHECK(w[i][j] == 0.0);
                            else CHECK(w[i][j] > 0.0);
                        }
                        if (s.sinks) {  // gpt-oss: the sink takes its share of the row, dropped
                            const double sink = tensor(c.tensors, "layers." + std::to_string(l) + ".self_attn.sinks").values[static_cast<std::size_t>(h)];
                            double seen = 0;
                            for (std::size_t j = 0; j <= i; ++j)
                                if (ls.window == 0 || static_cast<int>(i - j) < ls.window)
                                    seen += std::exp(r.scores[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)][i][j]);
                            CHECK(sum == Approx(seen / (seen + std::exp(sink))).epsilon(1e-9));
                            CHECK(sum < 1.0);
                        } else {
                            CHECK(sum == Approx(1.0).epsilon(1e-12));
                        }
                    }
                    // GQA: every query head of a group reads the same keys
                    const Rows& keys = r.keys[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
                    const Rows& first_of_group = r.keys[static_cast<std::size_t>(l)][static_cast<std::size_t>(s.kv_head_of(h) * s.kv_group())];
                    CHECK(keys == first_of_group);
                    if (s.n_kv_heads < s.n_heads && h + 1 < s.n_heads && s.kv_head_of(h + 1) != s.kv_head_of(h))
                        CHECK(keys != r.keys[static_cast<std::size_t>(l)][static_cast<std::size_t>(h + 1)]);
                }
            }
            // far from uniform: a transposed or swapped weight would show
            CHECK(largest_weight > 0.5);
            if (!s.layers[0].causal) CHECK(r.attention[0][0][0][n - 1] > 0.0);   // BERT sees the future
        }
    }
}

TEST_CASE("the reference's soft-caps keep scores and logits inside (−c, c), and bite", "[families][reference]") {
    const FamilyCheckpoint c = gemma2_checkpoint();
    const hf::ModelSpec s = spec_of(c.config);
    const Reference r = reference_of(c);
    double largest_score = 0, largest_logit = 0;
    for (const auto& layer : r.scores)
        for (const Rows& head : layer)
            for (const auto& row : head)
                for (double v : row) largest_score = std::max(largest_score, std::abs(v));
    for (const auto& row : r.logits)
        for (double v : row) largest_logit = std::max(largest_logit, std::abs(v));
    CHECK(largest_score < s.attn_logit_softcap);
    CHECK(largest_logit < s.final_logit_softcap);
    // without the caps the same weights go past them: the caps are doing something
    json uncapped = c.config;
    uncapped["attn_logit_softcapping"] = 1e6;
    uncapped["final_logit_softcapping"] = 1e6;
    const Reference raw = reference_forward(spec_of(uncapped), c.tensors, kIds);
    double raw_score = 0, raw_logit = 0;
    for (const Rows& head : raw.scores[0])
        for (const auto& row : head)
            for (double v : row) raw_score = std::max(raw_score, std::abs(v));
    for (const auto& row : raw.logits)
        for (double v : row) raw_logit = std::max(raw_logit, std::abs(v));
    CHECK(raw_score > s.attn_logit_softcap);
    CHECK(raw_logit > s.final_logit_softcap);
}

TEST_CASE("the reference's RoPE: position 0 is the identity, a rotation keeps the norm, dims past rotary_dim pass", "[families][reference]") {
    const std::vector<double> x = {0.3, -1.2, 2.5, 0.7, -0.4, 1.1, 0.9, -2.0};
    const std::vector<float> inv = reference_inv_freq(10000.0, 8, {});
    CHECK(apply_rope(x, 0, inv) == x);
    const std::vector<double> turned = apply_rope(x, 5, inv);
    double before = 0, after = 0;
    for (std::size_t i = 0; i < x.size(); ++i) before += x[i] * x[i], after += turned[i] * turned[i];
    CHECK(after == Approx(before).epsilon(1e-12));
    CHECK(turned != x);
    // rotate_half pairs dims i and i + 4: the pair (x0, x4) turns by 5 radians (inv_freq[0] = 1)
    CHECK(turned[0] == Approx(x[0] * std::cos(5.0) - x[4] * std::sin(5.0)));
    CHECK(turned[4] == Approx(x[4] * std::cos(5.0) + x[0] * std::sin(5.0)));
    const std::vector<double> partial = apply_rope(x, 5, reference_inv_freq(10000.0, 4, {}));
    CHECK(std::vector<double>(partial.begin() + 4, partial.end()) == std::vector<double>(x.begin() + 4, x.end()));
    // and the spec's frequencies are the reference's
    const hf::ModelSpec s = spec_of(neox_checkpoint().config);
    CHECK(hf::rope_inverse_frequencies(s, 0, 0) == reference_inv_freq(10000.0, 4, {}));
}

TEST_CASE("GPT-2's writer and the family table agree on every weight, and the pass is the reference's", "[families][reference][gpt2]") {
    const std::string folder = folder_for("gpt2");
    attn::testing::write_tiny_checkpoint(folder);
    const gpt2::Checkpoint g = attn::testing::tiny_checkpoint();  // the weights as written (F32)
    const hf::OpenedModelLoad load = hf::open_model(folder);
    INFO(joined(load.errors));
    REQUIRE(load.model);
    const hf::OpenedModel& m = *load.model;
    const hf::ModelSpec& s = m.spec;
    CHECK(s.model_type == "gpt2");
    CHECK(s.activation == hf::Activation::gelu_tanh);
    for (int l = 0; l < s.n_layers; ++l) {
        const hf::LayerWeights& L = m.weights.layers[static_cast<std::size_t>(l)];
        const gpt2::LayerWeights& G = g.layers[static_cast<std::size_t>(l)];
        check_same(L.w_q, G.w_q, "w_q");
        check_same(L.w_k, G.w_k, "w_k");
        check_same(L.w_v, G.w_v, "w_v");
        check_same(L.w_o, G.c_proj_w, "c_proj");
        check_same(L.w_up, G.c_fc_w, "c_fc");
        check_same(L.w_down, G.mlp_proj_w, "mlp c_proj");
        check_same(L.attn_norm.weight, G.ln_1_gamma, "ln_1");
        check_same(L.mlp_norm.bias, G.ln_2_beta, "ln_2.bias");
    }
    check_same(m.weights.position_embedding, g.wpe, "wpe");
    check_same(m.weights.token_embedding, g.wte, "wte");
    check_same(m.weights.final_norm.weight, g.ln_f_gamma, "ln_f");

    const std::vector<int> ids = {65, 66, 67, 200, 68, 259, 70};
    const Reference r = reference_forward(s, read_tensors({folder + "/model.safetensors"}), ids);
    const ModelPass pass = hf::forward_ids(m, ids);
    REQUIRE(pass.ok);
    for (int l = 0; l < s.n_layers; ++l)
        for (int h = 0; h < s.n_heads; ++h)
            for (std::size_t i = 0; i < ids.size(); ++i)
                for (std::size_t j = 0; j < ids.size(); ++j)
                    CHECK(pass.layers[static_cast<std::size_t>(l)].head[static_cast<std::size_t>(h)].weights(
                              static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) ==
                          Approx(r.attention[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)][i][j]).margin(1e-5));
    REQUIRE(pass.logits.rows() == 1);
    for (int v = 0; v < s.vocab_size; ++v)
        CHECK(pass.logits(0, v) == Approx(r.logits.back()[static_cast<std::size_t>(v)]).margin(1e-4));
}

TEST_CASE("scaling turned off in a layer with its family's own scale (Gemma 2's query_pre_attn_scalar) runs unscaled, and on again restores it",
          "[families][gemma]") {
    const std::string folder = folder_for("gemma2_scale");
    FamilyCheckpoint c = gemma2_checkpoint();
    c.config["query_pre_attn_scalar"] = 16;  // 16^−½ in place of 1/√8, as Gemma 2 27B's 144 with head_dim 128
    write_family_checkpoint(folder, c);
    const hf::OpenedModelLoad load = hf::open_model(folder, false);
    INFO(joined(load.errors));
    REQUIRE(load.model);
    const hf::OpenedModel& m = *load.model;
    const ModelPass pass = hf::forward_ids(m, {1, 5, 3, 7});
    REQUIRE(pass.ok);
    Scenario layer = hf::layer_scenario(m, pass.tokens, 0, lm::layer_input(pass.layers[0]));
    CHECK(layer.score_scale == 0.25f);
    layer.scale = false;
    const Trace off = run(layer);
    INFO(joined(off.errors));
    REQUIRE(off.ok);
    CHECK(off.scale == 1.0f);
    CHECK(off.head[0].scaled_scores == off.head[0].scores);
    layer.scale = true;
    const Trace on = run(layer);
    REQUIRE(on.ok);
    CHECK(on.scale == layer.score_scale);
    CHECK(on.head[0].weights == pass.layers[0].head[0].weights);
    std::filesystem::remove_all(folder);
}

TEST_CASE("the published GPT-2 configs are read: older keys change nothing, pruned heads are refused", "[families][gpt2]") {
    // distilgpt2's config.json, and gpt2-medium's keys that gpt2's lacks.
    json distil = json::parse(R"({"_num_labels": 1, "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "id2label": {"0": "LABEL_0"},
        "initializer_range": 0.02, "label2id": {"LABEL_0": 0}, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024,
        "n_embd": 768, "n_head": 12, "n_layer": 6, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": null,
        "summary_first_dropout": 0.1, "summary_proj_to_labels": true, "summary_type": "cls_index", "summary_use_proj": true,
        "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}}, "vocab_size": 50257})");
    const hf::ModelSpec s = spec_of(distil);
    CHECK(s.n_layers == 6);
    CHECK(s.max_positions == 1024);
    json medium = distil;
    medium["n_special"] = 0;
    medium["predict_special_tokens"] = true;
    medium["output_past"] = true;
    medium["pruned_heads"] = json::object();
    CHECK(spec_of(medium).d_model == 768);
    medium["pruned_heads"] = {{"0", {1, 2}}};
    CHECK_THAT(refusal_of(medium), Catch::Matchers::Contains("key 'pruned_heads': {\"0\":[1,2]} is not supported"));
}

TEST_CASE("a GPT-2 folder opens as a family: vocab.json and merges.txt its tokenizer, and every number the reference's",
          "[families][gpt2]") {
    const std::string folder = folder_for("gpt2_family");
    attn::testing::write_tiny_checkpoint(folder);
    const gpt2::Checkpoint g = attn::testing::tiny_checkpoint();  // the weights and the tokenizer as written
    const hf::OpenedModelLoad load = hf::open_model(folder);
    INFO(joined(load.errors));
    REQUIRE(load.model);
    const hf::OpenedModel& m = *load.model;
    REQUIRE(m.tokenizer);
    const HfTensors tensors = read_tensors({folder + "/model.safetensors"});
    for (const std::string text : {"the cat sat", " the  cat\n", "caf\xC3\xA9, 2026!"}) {
        INFO(text);
        const ModelPass pass = hf::forward_text(m, text);
        INFO(joined(pass.errors));
        REQUIRE(pass.ok);
        CHECK(pass.token_ids == g.tokenizer.encode(text));  // tokenizer.json's reader against the BPE of vocab.json and merges.txt
        const Reference r = reference_forward(m.spec, tensors, pass.token_ids);
        REQUIRE(pass.layers.size() == r.attention.size());
        for (std::size_t l = 0; l < pass.layers.size(); ++l)
            for (std::size_t h = 0; h < pass.layers[l].head.size(); ++h)
                for (std::size_t i = 0; i < pass.token_ids.size(); ++i)
                    for (std::size_t j = 0; j < pass.token_ids.size(); ++j)
                        CHECK(pass.layers[l].head[h].weights(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) ==
                              Approx(r.attention[l][h][i][j]).margin(1e-5));
        const std::vector<double>& logits = r.logits.back();
        for (int v = 0; v < m.spec.vocab_size; ++v) CHECK(pass.logits(0, v) == Approx(logits[static_cast<std::size_t>(v)]).margin(1e-4));
        REQUIRE(pass.next_token_top5.size() == 5);
        CHECK(pass.next_token_top5[0].id == static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
        // Layer 1 reads as the engine's own X + PE: the tables' rows, their sum the input.
        const Trace& first = pass.layers.front();
        CHECK(first.settings.positional == PositionalEncoding::Learned);
        for (std::size_t i = 0; i < pass.token_ids.size(); ++i) {
            CHECK(Matrix(first.x.row(static_cast<Eigen::Index>(i))) == Matrix(g.wte->row(pass.token_ids[i])));
            CHECK(Matrix(first.pe.row(static_cast<Eigen::Index>(i))) == Matrix(g.wpe->row(static_cast<Eigen::Index>(i))));
        }
        CHECK((first.x + first.pe - first.x_pe).cwiseAbs().maxCoeff() <= 1e-6f);
    }
    // A text longer than the position table, and one with no token, are refused.
    const ModelPass too_long = hf::forward_ids(m, std::vector<int>(static_cast<std::size_t>(m.spec.max_positions) + 1, 65));
    CHECK_FALSE(too_long.ok);
    CHECK_THAT(joined(too_long.errors), Catch::Matchers::Contains("the text has " + std::to_string(m.spec.max_positions + 1) +
                                                                  " tokens; the model reads at most n_positions = " +
                                                                  std::to_string(m.spec.max_positions)));
    CHECK_THAT(joined(hf::forward_ids(m, {}).errors), Catch::Matchers::Contains("the text has no token"));
    // An edit of layer 1 recomputes from there as the reader does.
    ModelPass pass = hf::forward_text(m, "the cat sat");
    // The family's scale is the float the engine's own 1/√d_k gives: left to the engine, so
    // that scaling can be turned off in the layer as in any scenario (a given scale could not be).
    Scenario layer = hf::layer_scenario(m, pass.tokens, 1, lm::layer_input(pass.layers[1]), {});
    CHECK(layer.score_scale == 0.0f);
    CHECK(run(layer).head[0].weights == pass.layers[1].head[0].weights);
    layer.scale = false;
    const Trace unscaled = run(layer);
    INFO(joined(unscaled.errors));
    CHECK(unscaled.ok);
    REQUIRE(hf::recompute_from(m, 0, pass, nullptr));
    CHECK(pass.layers.front().settings.positional == PositionalEncoding::Learned);
    std::filesystem::remove_all(folder);
}

TEST_CASE("each family runs on the engine as its plain-loop reference computes it: every head's weights and the logits", "[families][engine]") {
    for (const FamilyCheckpoint& c : all_family_checkpoints()) {
        INFO("family " << c.label);
        const std::string folder = folder_for("engine_" + c.label);
        write_family_checkpoint(folder, c);
        const hf::OpenedModelLoad load = hf::open_model(folder, false);
        for (const std::string& e : load.errors) INFO(e);
        REQUIRE(load.model);
        hf::OpenedModel model = *load.model;
        std::vector<int> ids = {1, 5, 3, 7, 2, 9, 4};
        if (model.spec.head == hf::HeadKind::masked_lm) {  // no tokenizer here to say which id [MASK] is
            if (!model.spec.mask_token_id) model.spec.mask_token_id = 6;
            ids[3] = *model.spec.mask_token_id;
        }
        const ModelPass pass = hf::forward_ids(model, ids);
        for (const std::string& e : pass.errors) INFO(e);
        REQUIRE(pass.ok);
        const Reference ref = reference_forward(model.spec, c.tensors, ids);
        REQUIRE(pass.layers.size() == ref.attention.size());
        double worst = 0.0;
        for (size_t l = 0; l < ref.attention.size(); ++l)
            for (size_t h = 0; h < ref.attention[l].size(); ++h)
                for (size_t i = 0; i < ids.size(); ++i)
                    for (size_t j = 0; j < ids.size(); ++j)
                        worst = std::max(worst, std::abs(head_map(pass.layers[l].head[h])(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) -
                                                         ref.attention[l][h][i][j]));
        CHECK(worst <= 1e-4);
        // The stream leaving the last layer, and the predictions' logits.
        double stream = 0.0;
        for (size_t i = 0; i < ids.size(); ++i)
            for (int j = 0; j < model.spec.d_model; ++j)
                stream = std::max(stream, std::abs(stack::layer_output(pass.layers.back())(static_cast<Eigen::Index>(i), j) -
                                                   ref.outputs.back()[i][static_cast<size_t>(j)]));
        CHECK(stream <= 1e-3);
        if (model.spec.head == hf::HeadKind::causal_lm) {
            REQUIRE(pass.next_token_top5.size() == 5);
            const std::vector<double>& last = ref.logits.back();
            const int best = static_cast<int>(std::max_element(last.begin(), last.end()) - last.begin());
            CHECK(pass.next_token_top5[0].id == best);
            for (const TokenProbability& p : pass.next_token_top5) CHECK(std::abs(pass.logits(0, p.id) - last[static_cast<size_t>(p.id)]) <= 1e-3);
        } else {
            REQUIRE(pass.masked_predictions.size() == 1);
            CHECK(pass.masked_predictions[0].position == 3);
            const std::vector<double>& row = ref.logits[3];
            CHECK(pass.masked_predictions[0].top[0].id == static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin()));
        }
    }
}

// The checkpoint with expert e of layer ℓ writing nothing: its down projection (and its bias)
// zero, stored apart (experts.E.down_proj, w2) or fused (experts.down_proj: E slices).
HfTensors with_silent_expert(const FamilyCheckpoint& c, int layer, int expert, int experts) {
    HfTensors t = c.tensors;
    const std::string in_layer = "layers." + std::to_string(layer) + ".";
    for (auto& [name, tensor] : t) {
        if (name.find(in_layer) == std::string::npos || name.find("shared_expert") != std::string::npos) continue;
        const bool apart = name.find("experts." + std::to_string(expert) + ".down_proj") != std::string::npos ||
                           name.find("experts." + std::to_string(expert) + ".w2") != std::string::npos;
        const bool fused = name.find("experts.down_proj") != std::string::npos;
        if (apart) std::fill(tensor.values.begin(), tensor.values.end(), 0.0f);
        else if (fused) {
            const std::size_t per = tensor.values.size() / static_cast<std::size_t>(experts);
            std::fill(tensor.values.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(expert)),
                      tensor.values.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(expert + 1)), 0.0f);
        }
    }
    return t;
}

TEST_CASE("an expert ablated in a model's pass is the reference run with that expert writing nothing, the routing unchanged",
          "[families][engine][moe]") {
    int mixtures = 0;
    for (const FamilyCheckpoint& c : all_family_checkpoints()) {
        const std::string folder = folder_for("ablate_expert_" + c.label);
        write_family_checkpoint(folder, c);
        const hf::OpenedModelLoad load = hf::open_model(folder, false);
        if (!load.model || load.model->spec.experts.experts == 0) continue;
        INFO("family " << c.label);
        ++mixtures;
        const hf::OpenedModel& model = *load.model;
        const hf::ModelSpec& s = model.spec;
        const std::vector<int> ids = {1, 5, 3, 7, 2, 9, 4};
        const ModelPass intact = hf::forward_ids(model, ids);
        REQUIRE(intact.ok);
        int layer = 0;
        while (!s.layers[static_cast<size_t>(layer)].moe) ++layer;
        // the expert that the most tokens went to: its absence shows
        const Matrix& routing = intact.layers[static_cast<size_t>(layer)].block.routing;
        REQUIRE(routing.cols() == s.experts.experts);
        Eigen::Index expert = 0;
        (routing.array() != 0.0f).cast<int>().colwise().sum().maxCoeff(&expert);
        const ModelPass ablated = hf::forward_ids(model, ids, stack::Ablation{{}, {{layer, static_cast<int>(expert)}}});
        for (const std::string& e : ablated.errors) INFO(e);
        REQUIRE(ablated.ok);
        CHECK(ablated.layers[static_cast<size_t>(layer)].block.routing == routing);
        CHECK(ablated.layers[static_cast<size_t>(layer)].settings.block.moe.ablated == std::vector<int>{static_cast<int>(expert)});
        const Reference ref = reference_forward(s, with_silent_expert(c, layer, static_cast<int>(expert), s.experts.experts), ids);
        double stream = 0.0, moved = 0.0;
        for (size_t i = 0; i < ids.size(); ++i)
            for (int j = 0; j < s.d_model; ++j) {
                const double got = stack::layer_output(ablated.layers.back())(static_cast<Eigen::Index>(i), j);
                stream = std::max(stream, std::abs(got - ref.outputs.back()[i][static_cast<size_t>(j)]));
                moved = std::max(moved, std::abs(got - stack::layer_output(intact.layers.back())(static_cast<Eigen::Index>(i), j)));
            }
        CHECK(stream <= 1e-3);
        CHECK(moved > 1e-3);  // the expert mattered: the test would see it ignored
        // What the model does not have is refused, naming it.
        const ModelPass beyond = hf::forward_ids(model, ids, stack::Ablation{{}, {{layer, s.experts.experts}}});
        CHECK_FALSE(beyond.ok);
        REQUIRE_FALSE(beyond.errors.empty());
        CHECK(beyond.errors[0] == "layer " + std::to_string(layer + 1) + ": the ablated expert " + std::to_string(s.experts.experts + 1) +
                                      " of layer " + std::to_string(layer + 1) + " does not exist: its mixture has " +
                                      std::to_string(s.experts.experts) + " experts");
        for (int dense = 0; dense < s.n_layers; ++dense)
            if (!s.layers[static_cast<size_t>(dense)].moe) {
                const ModelPass none = hf::forward_ids(model, ids, stack::Ablation{{}, {{dense, 0}}});
                CHECK_FALSE(none.ok);
                REQUIRE_FALSE(none.errors.empty());
                CHECK_THAT(none.errors[0], Catch::Contains("the layer's feed-forward is not a mixture of experts"));
                break;
            }
    }
    CHECK(mixtures >= 8);  // Qwen3-MoE, Qwen2-MoE, Mixtral, gpt-oss, DeepSeek-V3, Llama 4, Qwen3-Next, Qwen3.5-MoE
}

TEST_CASE("gpt-oss as released: MXFP4 experts read in place give the pass of their dequantised copy and of the reference", "[families][mxfp4]") {
    const Mxfp4Checkpoint m = gpt_oss_mxfp4_checkpoint();
    const std::string quantised = folder_for("gpt_oss_mxfp4"), widened = folder_for("gpt_oss_dequantised");
    write_mxfp4_checkpoint(quantised, m);
    write_family_checkpoint(widened, m.dequantised);
    const hf::OpenedModelLoad q = hf::open_model(quantised, false), w = hf::open_model(widened, false);
    for (const std::string& e : q.errors) INFO(e);
    REQUIRE(q.model);
    REQUIRE(w.model);
    CHECK(q.model->spec.experts.mxfp4);
    // Read in place: each expert's projections are views of the file's blocks and scales, half a
    // byte a weight, and every element equals the dequantised copy's.
    const hf::LayerWeights& L = q.model->weights.layers[1];
    REQUIRE(L.experts.size() == 4);
    for (std::size_t e = 0; e < 4; ++e) {
        for (const auto& [got, want] : {std::pair{&L.experts[e].w_gate, &w.model->weights.layers[1].experts[e].w_gate},
                                        std::pair{&L.experts[e].w_up, &w.model->weights.layers[1].experts[e].w_up},
                                        std::pair{&L.experts[e].w_down, &w.model->weights.layers[1].experts[e].w_down}}) {
            REQUIRE(got->stored() != nullptr);
            CHECK(got->stored()->mxfp4());
            CHECK(got->stored()->stored_bytes() == 32u * 32u / 2 + 32u);
            CHECK(got->stored()->to_matrix() == want->stored()->to_matrix());
            CHECK(got->stored()->first_non_finite().row == -1);
        }
    }
    // MXFP4's widening by hand: 2^(s − 127)·e2m1, the low nibble first; a scale of 2^127 overflows
    // 6 (not 1.5), and 2^128 makes 0 NaN, each found by the non-finite check
    {
        unsigned char blocks[16] = {0x71, 0x0F}, scale[1] = {127 - 1};  // elements 0.5, 6, −6, 0, 0, …
        const StoredMatrix one = StoredMatrix::as_mxfp4(nullptr, blocks, scale, 1, 32);
        CHECK(one.value(0, 0) == 0.25f);
        CHECK(one.value(0, 1) == 3.0f);
        CHECK(one.value(0, 2) == -3.0f);
        CHECK(one.value(0, 3) == 0.0f);
        CHECK_FALSE(one.first_non_finite().valid());
        scale[0] = 254;
        CHECK(one.first_non_finite().col == 1);  // 6·2^127 = ∞
        blocks[0] = 0x01, blocks[1] = 0x00;       // 0.5·2^127 and zeros: finite
        CHECK_FALSE(one.first_non_finite().valid());
        scale[0] = 255;
        CHECK(std::isnan(one.value(0, 1)));       // 0·2^128
        CHECK(one.first_non_finite().col == 0);   // 0.5·2^128 = ∞, the first
    }
    const std::vector<int> ids = {2, 7, 1, 8, 3, 9};
    const std::size_t widened_before = attn::stored_bytes_widened();
    const ModelPass a = hf::forward_ids(*q.model, ids), b = hf::forward_ids(*w.model, ids);
    CHECK(attn::stored_bytes_widened() == widened_before);  // nothing widened whole by a pass
    REQUIRE((a.ok && b.ok));
    CHECK((a.logits - b.logits).cwiseAbs().maxCoeff() <= 1e-5f);
    CHECK(a.layers[1].block.routing == b.layers[1].block.routing);
    // and the reference of gpt-oss's forward pass, on the dequantised tensors
    const Reference ref = reference_forward(q.model->spec, m.dequantised.tensors, ids);
    const std::vector<double>& last = ref.logits.back();
    for (const TokenProbability& p : a.next_token_top5) CHECK(std::abs(a.logits(0, p.id) - last[static_cast<size_t>(p.id)]) <= 1e-3);
    // the model says what it holds
    CHECK_THAT(lm::held_weights(*q.model).dtypes, Contains("MXFP4") && Contains("BF16"));
    // refused, naming the tensor, the key or the size: blocks of another dtype, another method, sizes MXFP4 cannot block
    Mxfp4Checkpoint bad = m;
    bad.stored["model.layers.0.mlp.experts.down_proj_scales"].dtype = "I8";
    write_mxfp4_checkpoint(quantised, bad);
    CHECK_THAT(joined(hf::open_model(quantised, false).errors), Contains("down_proj_scales' is I8; MXFP4's blocks and scales are U8"));
    bad = m;
    bad.config["quantization_config"]["quant_method"] = "fp8";
    write_mxfp4_checkpoint(quantised, bad);
    CHECK_THAT(joined(hf::open_model(quantised, false).errors), Contains("quantization_config") && Contains("fp8"));
    bad = m;
    bad.config["quantization_config"]["group_size"] = 64;
    write_mxfp4_checkpoint(quantised, bad);
    CHECK_THAT(joined(hf::open_model(quantised, false).errors), Contains("'group_size' is not read with MXFP4"));
    bad = m;
    bad.config["intermediate_size"] = 24;
    write_mxfp4_checkpoint(quantised, bad);
    CHECK_THAT(joined(hf::open_model(quantised, false).errors), Contains("must be multiples of 32"));
    bad = m;
    bad.stored.erase("model.layers.1.mlp.experts.gate_up_proj_scales");
    write_mxfp4_checkpoint(quantised, bad);
    CHECK_THAT(joined(hf::open_model(quantised, false).errors), Contains("gate_up_proj_scales' is missing"));
}

// The checkpoint with each layer's experts.E.gate_proj, up_proj and down_proj (transformers 4's
// names; Mixtral's block_sparse_moe.experts.E.w1, w3, w2) saved as transformers 5 keeps them:
// mlp.experts.gate_up_proj (E × 2·d_ff × d, each expert's gate rows then its up rows) and down_proj
// (E × d × d_ff), Mixtral's router renamed mlp.gate. The multi-token prediction module's experts stay
// apart, as Qwen3.5-MoE publishes them.
FamilyCheckpoint with_fused_experts(FamilyCheckpoint c) {
    struct Parts {
        std::map<int, const HfTensor*> gate, up, down;
    };
    std::map<std::string, Parts> layers;  // "model.layers.1.mlp.experts." → its experts' tensors
    for (const auto& [name, t] : c.tensors) {
        const std::size_t at = name.find(".experts.");
        if (at == std::string::npos || name.rfind("mtp.", 0) == 0) continue;
        const std::string stem = name.substr(0, at + 9), rest = name.substr(at + 9);
        const std::size_t dot = rest.find('.');
        if (dot == std::string::npos || rest.find_first_not_of("0123456789") != dot) continue;
        const int e = std::stoi(rest.substr(0, dot));
        const std::string part = rest.substr(dot + 1);
        Parts& parts = layers[stem];
        if (part == "gate_proj.weight" || part == "w1.weight") parts.gate[e] = &t;
        else if (part == "up_proj.weight" || part == "w3.weight") parts.up[e] = &t;
        else if (part == "down_proj.weight" || part == "w2.weight") parts.down[e] = &t;
    }
    HfTensors fused;
    for (const auto& [stem, parts] : layers) {
        const std::int64_t E = static_cast<std::int64_t>(parts.gate.size()), ff = parts.gate.at(0)->shape[0], d = parts.gate.at(0)->shape[1];
        HfTensor gate_up{{E, 2 * ff, d}, {}}, down{{E, d, ff}, {}};
        for (int e = 0; e < E; ++e) {
            for (const HfTensor* t : {parts.gate.at(e), parts.up.at(e)}) gate_up.values.insert(gate_up.values.end(), t->values.begin(), t->values.end());
            down.values.insert(down.values.end(), parts.down.at(e)->values.begin(), parts.down.at(e)->values.end());
        }
        const std::size_t mixtral = stem.find(".block_sparse_moe.");
        const std::string module = mixtral == std::string::npos ? stem : stem.substr(0, mixtral) + ".mlp.experts.";
        fused[module + "gate_up_proj"] = std::move(gate_up);
        fused[module + "down_proj"] = std::move(down);
    }
    for (auto it = c.tensors.begin(); it != c.tensors.end();) {
        const std::size_t at = it->first.find(".experts."), router = it->first.find(".block_sparse_moe.gate.");
        if (router != std::string::npos) fused[it->first.substr(0, router) + ".mlp.gate." + it->first.substr(router + 23)] = it->second;
        const bool per_expert = at != std::string::npos && layers.count(it->first.substr(0, at + 9));
        it = per_expert || router != std::string::npos ? c.tensors.erase(it) : std::next(it);
    }
    c.tensors.merge(fused);
    return c;
}

TEST_CASE("experts saved as transformers 5 keeps them (gate_up_proj and down_proj of every expert, as Qwen3.5-MoE is published) "
          "open as the experts.E tensors do, read in place",
          "[families][weights]") {
    const std::vector<int> ids = {1, 5, 3, 7, 2, 9, 4};
    for (const FamilyCheckpoint& per_expert : {qwen3_5_moe_checkpoint(), qwen3_moe_checkpoint(), qwen2_moe_checkpoint(), deepseek_v3_checkpoint(), mixtral_checkpoint()}) {
        INFO(per_expert.label);
        const FamilyCheckpoint fused = with_fused_experts(per_expert);
        REQUIRE(fused.tensors.size() < per_expert.tensors.size());
        const hf::OpenedModel a = written_and_opened(per_expert, folder_for(per_expert.label + "_experts_apart"));
        const hf::OpenedModel b = written_and_opened(fused, folder_for(per_expert.label + "_experts_fused"));
        CHECK_FALSE(a.spec.experts.fused);
        CHECK(b.spec.experts.fused);
        bool some = false;
        for (std::size_t l = 0; l < a.weights.layers.size(); ++l) {
            const std::vector<hf::ExpertWeights>&x = a.weights.layers[l].experts, &y = b.weights.layers[l].experts;
            REQUIRE(x.size() == y.size());
            for (std::size_t e = 0; e < x.size(); ++e) {
                some = true;
                REQUIRE(y[e].w_gate.stored() != nullptr);  // a view of the file, not a copy
                CHECK(y[e].w_gate.stored()->to_matrix() == x[e].w_gate.stored()->to_matrix());
                CHECK(y[e].w_up.stored()->to_matrix() == x[e].w_up.stored()->to_matrix());
                CHECK(y[e].w_down.stored()->to_matrix() == x[e].w_down.stored()->to_matrix());
            }
        }
        CHECK(some);
        // where a layer's expert weights come from, named as the folder stores them
        bool named = false;
        for (std::size_t l = 0; l < b.spec.layers.size(); ++l)
            for (const auto& [key, stored] : hf::layer_weight_names(b.spec, static_cast<int>(l)))
                if (key == "block.moe.experts.1.w_1") {
                    CHECK_THAT(stored, Contains("experts.gate_up_proj[1][") && Contains("].T"));
                    named = true;
                }
        CHECK(named);
        const ModelPass pa = hf::forward_ids(a, ids), pb = hf::forward_ids(b, ids);
        REQUIRE(pa.ok);
        REQUIRE(pb.ok);
        CHECK(pa.logits == pb.logits);
    }
    // A layer whose experts are neither way is refused, naming the fused tensor it lacks.
    FamilyCheckpoint half = with_fused_experts(qwen3_moe_checkpoint());
    std::string dropped;
    for (const auto& [name, t] : half.tensors)
        if (name.find("experts.down_proj") != std::string::npos) dropped = name;
    half.tensors.erase(dropped);
    write_family_checkpoint(folder_for("qwen3_moe_experts_half"), half);
    const hf::OpenedModelLoad refused = hf::open_model(folder_for("qwen3_moe_experts_half"), false);
    CHECK_FALSE(refused.model);
    CHECK_THAT(joined(refused.errors), Contains("tensor '" + dropped + "' is missing"));
}

TEST_CASE("Phi-3 runs on the engine as its reference computes it with LongRoPE's short factors up to 4 tokens and its long ones beyond",
          "[families][engine]") {
    const FamilyCheckpoint c = phi3_checkpoint();
    const std::string folder = folder_for("engine_longrope");
    write_family_checkpoint(folder, c);
    const hf::OpenedModelLoad load = hf::open_model(folder, false);
    for (const std::string& e : load.errors) INFO(e);
    REQUIRE(load.model);
    for (const std::vector<int>& ids : {std::vector<int>{2, 7, 1}, std::vector<int>{2, 7, 1, 8}, std::vector<int>{2, 7, 1, 8, 3},
                                        std::vector<int>{2, 7, 1, 8, 3, 9, 4, 6, 5}}) {
        INFO(ids.size() << " tokens");
        const ModelPass pass = hf::forward_ids(*load.model, ids);
        REQUIRE(pass.ok);
        const Reference ref = reference_forward(load.model->spec, c.tensors, ids);
        double worst = 0.0;
        for (size_t l = 0; l < ref.keys.size(); ++l)
            for (size_t h = 0; h < ref.keys[l].size(); ++h)
                for (size_t i = 0; i < ids.size(); ++i)
                    for (int col = 0; col < load.model->spec.head_dim; ++col)  // the keys as turned (and grown by the attention factor)
                        worst = std::max(worst, std::abs(pass.layers[l].head[h].k(static_cast<Eigen::Index>(i), col) -
                                                         ref.keys[l][h][i][static_cast<size_t>(col)]));
        CHECK(worst <= 1e-4);
        const std::vector<double>& last = ref.logits.back();
        for (const TokenProbability& p : pass.next_token_top5) CHECK(std::abs(pass.logits(0, p.id) - last[static_cast<size_t>(p.id)]) <= 1e-3);
        // the trace says which factors turned it
        const std::string words = pass.layers[0].settings.rope.scaling == RopeScalingKind::LongRope
                                      ? (long_rope_factors(pass.layers[0].settings.rope, static_cast<int>(ids.size())) ? "long" : "short")
                                      : "none";
        CHECK(words == (ids.size() > 4 ? "long" : "short"));
    }
}

TEST_CASE("SmolLM3's NoPE layer turns neither q nor k: its layer has no rotation, the others RoPE", "[families][engine]") {
    const std::string folder = folder_for("engine_nope");
    write_family_checkpoint(folder, smollm3_checkpoint());
    const hf::OpenedModelLoad load = hf::open_model(folder, false);
    for (const std::string& e : load.errors) INFO(e);
    REQUIRE(load.model);
    const ModelPass pass = hf::forward_ids(*load.model, {1, 5, 3, 7, 2});
    REQUIRE(pass.ok);
    REQUIRE(pass.layers.size() == 4);
    for (int l = 0; l < 4; ++l) {
        INFO("layer " << l + 1);
        CHECK((pass.layers[static_cast<size_t>(l)].settings.positional == PositionalEncoding::Rotary) == (l != 3));
    }
}

TEST_CASE("tokenizer_config.json changes the special tokens where transformers' tokenizer class does: Llama's, Gemma's, GPT-NeoX's add_bos_token and add_eos_token", "[engine][tokenizer]") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::temp_directory_path() / "attnlab-families-tokenizer-config";
    fs::remove_all(folder);
    testing::families::FamilyCheckpoint c = testing::families::llama_checkpoint();
    c.config["vocab_size"] = 402;
    testing::families::TensorMaker make(c, 99);
    make("model.embed_tokens.weight", {402, 24}, 0.5);
    testing::families::write_family_checkpoint(folder.string(), c);
    // tokenizer.json's own post-processor (RoBERTa's) puts <s> before and </s> after.
    fs::copy_file(fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json", folder / "tokenizer.json");
    auto ids_with = [&](const std::string& config) {
        if (config.empty()) fs::remove(folder / "tokenizer_config.json");
        else std::ofstream(folder / "tokenizer_config.json") << config;
        const hf::OpenedModelLoad load = hf::open_model(folder.string());
        for (const std::string& e : load.errors) INFO(e);
        REQUIRE(load.model);
        return load.model->tokenizer->encode("the cat");
    };
    const std::vector<int> plain = ids_with("");
    REQUIRE(plain.size() >= 4);
    const int bos = 399, eos = 400;  // <s>, </s>
    CHECK(plain.front() == bos);
    CHECK(plain.back() == eos);
    const std::vector<int> words(plain.begin() + 1, plain.end() - 1);
    auto around = [&](std::vector<int> before, std::vector<int> after) {
        before.insert(before.end(), words.begin(), words.end());
        before.insert(before.end(), after.begin(), after.end());
        return before;
    };
    // LlamaTokenizerFast: add_bos_token true and add_eos_token false unless the file says otherwise.
    CHECK(ids_with(R"({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>"})") == around({bos}, {}));
    CHECK(ids_with(R"({"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false, "add_eos_token": true,
                       "bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "</s>"})") == around({}, {eos}));
    // GPT-NeoX's: neither unless asked; a class that does not rebuild it: tokenizer.json's.
    CHECK(ids_with(R"({"tokenizer_class": "GPTNeoXTokenizer", "bos_token": "<s>", "eos_token": "</s>"})") == words);
    CHECK(ids_with(R"({"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": false})") == plain);
    // A bos_token the vocabulary does not have, and a flag that is not a boolean: refused, named.
    std::ofstream(folder / "tokenizer_config.json") << R"({"tokenizer_class": "GemmaTokenizer", "add_eos_token": "yes"})";
    const hf::OpenedModelLoad bad = hf::open_model(folder.string());
    CHECK_FALSE(bad.model);
    REQUIRE(bad.errors.size() == 2);
    CHECK_THAT(bad.errors[0], Catch::Matchers::Contains("tokenizer_config.json: key 'add_eos_token': expected true or false"));
    CHECK_THAT(bad.errors[1], Catch::Matchers::Contains("key 'bos_token' is \"<bos>\", which is no token of tokenizer.json"));
    fs::remove_all(folder);
}

TEST_CASE("a sentence run into the pass of another gives every number and matrix of a new pass", "[families][engine]") {
    for (const FamilyCheckpoint& c : all_family_checkpoints()) {
        INFO("family " << c.label);
        const std::string folder = folder_for("rerun_" + c.label);
        write_family_checkpoint(folder, c);
        hf::OpenedModelLoad load = hf::open_model(folder, false);
        REQUIRE(load.model);
        hf::OpenedModel& model = *load.model;
        if (model.spec.head == hf::HeadKind::masked_lm && !model.spec.mask_token_id) model.spec.mask_token_id = 6;
        const std::vector<int> first = {1, 5, 3, 7, 2, 9, 4}, second = {8, 6, 2, 5};
        ModelPass kept = hf::forward_ids(model, first);
        REQUIRE(kept.ok);
        REQUIRE(hf::forward_ids_into(model, second, kept));
        const ModelPass fresh = hf::forward_ids(model, second);
        REQUIRE(fresh.ok);
        CHECK(kept.token_ids == fresh.token_ids);
        CHECK(kept.tokens == fresh.tokens);
        REQUIRE(kept.layers.size() == fresh.layers.size());
        for (std::size_t l = 0; l < fresh.layers.size(); ++l) {
            const Trace& a = kept.layers[l];
            const Trace& b = fresh.layers[l];
            REQUIRE(matrix_names(a) == matrix_names(b));  // no matrix of the longer sentence left over
            for (const std::string& name : matrix_names(b)) {
                INFO("layer " << l + 1 << ", " << name);
                CHECK(*find_matrix(a, name) == *find_matrix(b, name));
            }
        }
        CHECK(kept.logits == fresh.logits);
        CHECK(kept.next_token_top5.size() == fresh.next_token_top5.size());
        CHECK(kept.masked_predictions.size() == fresh.masked_predictions.size());
        CHECK_FALSE(hf::forward_ids_into(model, {}, kept));  // refused: no trace of the sentence before stays
        CHECK(kept.layers.empty());
    }
}

TEST_CASE("tokenizer_config.json's do_lower_case rebuilds a BERT tokenizer's normalizer where it differs from tokenizer.json's, as BertTokenizerFast does", "[engine][tokenizer]") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::temp_directory_path() / "attnlab-families-bert-lower-case";
    fs::remove_all(folder);
    testing::families::FamilyCheckpoint c = testing::families::bert_checkpoint();
    c.config["vocab_size"] = 496;
    testing::families::TensorMaker make(c, 99);
    make("bert.embeddings.word_embeddings.weight", {496, 16}, 0.5);
    make("cls.predictions.bias", {496}, 0.3);
    testing::families::write_family_checkpoint(folder.string(), c);
    // A cased WordPiece: its BertNormalizer has lowercase false, and "The", "the", "THE" are three tokens.
    fs::copy_file(fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "wordpiece-bert-cased.json", folder / "tokenizer.json");
    auto tokens_with = [&](const std::string& config) {
        if (config.empty()) fs::remove(folder / "tokenizer_config.json");
        else std::ofstream(folder / "tokenizer_config.json") << config;
        const hf::OpenedModelLoad load = hf::open_model(folder.string());
        for (const std::string& e : load.errors) INFO(e);
        REQUIRE(load.model);
        std::vector<std::string> tokens;
        for (int id : load.model->tokenizer->encode("The HELLO")) tokens.push_back(load.model->tokenizer->token(id));
        return tokens;
    };
    const std::vector<std::string> cased = {"[CLS]", "The", "HELLO", "[SEP]"}, lowered = {"[CLS]", "the", "hello", "[SEP]"};
    CHECK(tokens_with("") == cased);
    CHECK(tokens_with(R"({"tokenizer_class": "BertTokenizer", "do_lower_case": false})") == cased);
    // No do_lower_case: transformers' default, true, wins over the file's normalizer.
    CHECK(tokens_with(R"({"tokenizer_class": "BertTokenizerFast"})") == lowered);
    CHECK(tokens_with(R"({"tokenizer_class": "BertTokenizer", "do_lower_case": true})") == lowered);
    // Another class leaves tokenizer.json as it is.
    CHECK(tokens_with(R"({"tokenizer_class": "PreTrainedTokenizerFast"})") == cased);
    fs::remove_all(folder);
}

// [SECTION] The whole pass's memory

TEST_CASE("a pass that would not fit in the memory left is refused before it runs, saying what it would keep", "[families][engine][hostile]") {
    const std::string folder = folder_for("memory_room");
    write_family_checkpoint(folder, llama_checkpoint());
    const hf::OpenedModelLoad load = hf::open_model(folder, false);
    REQUIRE(load.model);
    std::vector<int> ids(64);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i % 40);
    // What the estimate says of one layer is what a layer's trace keeps, within a factor of 1.5.
    const ModelPass pass = hf::forward_ids(*load.model, ids);
    REQUIRE(pass.ok);
    const Trace& first = pass.layers.front();
    double kept = 0.0;
    for (const std::string& name : matrix_names(first))
        if (const Matrix* m = find_matrix(first, name)) kept += static_cast<double>(m->size()) * sizeof(float);
    const double estimated = full_trace_bytes(hf::layer_scenario(*load.model, pass.tokens, 0, pass.x0, {}));
    CHECK(estimated >= kept / 1.5);
    CHECK(estimated <= kept * 1.5);

    struct Room {  // the room a pass sees, for this test only
        explicit Room(double bytes) { set_memory_room_for_testing(MemoryRoom{bytes, "the test's room"}); }
        ~Room() { set_memory_room_for_testing(std::nullopt); }
    };
    {
        const Room small(estimated);   // one layer fits; the model's two do not
        const ModelPass refused = hf::forward_ids(*load.model, ids);
        CHECK_FALSE(refused.ok);
        CHECK(refused.layers.empty());
        CHECK_THAT(joined(refused.errors), Contains("the pass would keep about") && Contains("for 64 tokens") &&
                                               Contains("more than the test's room") && Contains("use fewer tokens"));
    }
    {
        const Room enough(estimated * 4 + (1 << 20));
        CHECK(hf::forward_ids(*load.model, ids).ok);
    }
    // The system's own figure is there on Linux, and a plain pass fits in it.
    const std::optional<MemoryRoom> room = memory_room();
    REQUIRE(room);
    CHECK(room->bytes > 0.0);
}

TEST_CASE("Gemma 3 as published opens with one token more in tokenizer.json than its embedding, and only a text that produces it is refused",
          "[engine][tokenizer]") {
    namespace fs = std::filesystem;
    const std::string folder = (fs::temp_directory_path() / "attnlab-families-gemma3-image-token").string();
    testing::families::write_gemma3_with_image_token(folder, (fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json").string());
    const hf::OpenedModelLoad load = hf::open_model(folder);
    for (const std::string& e : load.errors) INFO(e);
    REQUIRE(load.model);
    REQUIRE(load.model->tokenizer);
    CHECK(load.model->tokenizer->size() == 403);
    CHECK(load.model->weights.token_embedding.rows() == 402);
    // A text without the extra token runs.
    const ModelPass plain = hf::forward_text(*load.model, "the cat sat");
    INFO((plain.errors.empty() ? std::string() : plain.errors.front()));
    CHECK(plain.ok);
    // One that produces it is refused, saying which token and where the text holds it.
    const std::string text = "the cat <image_soft_token> sat";
    const std::string said = "token 402 `<image_soft_token>` at character 9 of the sentence is beyond the model's embedding of 402 rows";
    const ModelPass refused = hf::forward_text(*load.model, text);
    CHECK_FALSE(refused.ok);
    REQUIRE(refused.errors.size() == 1);
    CHECK(refused.errors.front() == said);
    lm::ModelLoad opened = lm::load_model(folder);
    REQUIRE(opened.model);
    CHECK(opened.model->token_beyond_embedding(text) == said);
    CHECK(opened.model->token_beyond_embedding("the cat sat").empty());
    // Characters, not bytes: "é" is two bytes of UTF-8 and one character.
    CHECK(hf::forward_text(*load.model, "\xC3\xA9 <image_soft_token>").errors.front() ==
          "token 402 `<image_soft_token>` at character 3 of the sentence is beyond the model's embedding of 402 rows");
    fs::remove_all(folder);
}

TEST_CASE("Qwen3-Next's linear heads compare with each other by their implied weights, and not with a softmax head", "[families][compare]") {
    write_family_checkpoint(folder_for("qwen3_next_compare"), qwen3_next_checkpoint());
    const hf::OpenedModelLoad load = hf::open_model(folder_for("qwen3_next_compare"), false);
    REQUIRE(load.model);
    const ModelPass pass = hf::forward_ids(*load.model, {1, 5, 3, 7, 2, 9});
    REQUIRE(pass.ok);
    const WeightsComparison linear = compare_weights(pass, {0, 0}, pass, {1, 2});
    REQUIRE(linear.ok);
    CHECK(linear.a_implied);
    CHECK(linear.b_implied);
    CHECK(linear.a == &pass.layers[0].head[0].implied_weights);
    REQUIRE(linear.has_difference);
    CHECK(linear.difference == pass.layers[1].head[2].implied_weights - pass.layers[0].head[0].implied_weights);
    const WeightsComparison mixed = compare_weights(pass, {0, 0}, pass, {3, 0});
    REQUIRE(mixed.ok);
    CHECK_FALSE(mixed.has_difference);
    CHECK_THAT(mixed.message, Contains("A's layer is linear (Gated DeltaNet)"));
    CHECK(mixed.b == &pass.layers[3].head[0].weights);
}

TEST_CASE("NaN or ±∞ after the last layer is traced to the stored tensor that holds it, in every family's names", "[families][non-finite]") {
    using namespace attn::testing::families;
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    struct Spoil {
        const char* what;
        std::function<void(HfTensors&)> spoil;
        std::string stage;
        std::vector<std::string> says;
    };
    const std::vector<Spoil> spoils = {
        {"NaN in the final norm's weight", [&](HfTensors& t) { t["model.norm.weight"].values[3] = nan; }, "model.norm",
         {"model.norm.weight[3] is nan", "every row and every logit"}},
        {"∞ in a row of the untied head", [&](HfTensors& t) { t["lm_head.weight"].values[7 * 16 + 2] = inf; }, "the logits",
         {"the last token's logit for id 7", "from lm_head.weight[7, 2] = inf"}},
        {"a finite row of the head that overflows", [&](HfTensors& t) {
             for (int c = 0; c < 16; ++c) t["lm_head.weight"].values[static_cast<std::size_t>(9 * 16 + c)] = 3e38f;
         }, "the logits", {"the last token's logit for id 9", "from finite values", "lm_head.weight row 9", "beyond the float range"}},
    };
    for (const Spoil& s : spoils) {
        INFO(s.what);
        FamilyCheckpoint c = llama3_checkpoint();
        c.dtype = safetensors::Dtype::F32;  // BF16 would round 3e38 to ∞
        s.spoil(c.tensors);
        const std::string folder = folder_for("non_finite_llama3");
        write_family_checkpoint(folder, c);
        const hf::OpenedModelLoad load = hf::open_model(folder, false);
        INFO(joined(load.errors));
        REQUIRE(load.model);
        const ModelPass pass = hf::forward_ids(*load.model, {1, 5, 2});
        REQUIRE(pass.ok);
        CHECK(pass.non_finite.stage == s.stage);
        for (const std::string& fragment : s.says) CHECK_THAT(pass.non_finite.origin, Catch::Matchers::Contains(fragment));
        std::filesystem::remove_all(folder);
    }
}
