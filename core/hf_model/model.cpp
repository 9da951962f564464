#include "hf_model/model.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine.hpp"
#include "positional.hpp"
#include "softmax.hpp"

namespace attn::hf {

namespace {

attn::Activation engine_activation(Activation a) {
    switch (a) {
        case Activation::gelu_tanh: return attn::Activation::GeluTanh;
        case Activation::gelu_exact: return attn::Activation::GeluErf;
        case Activation::silu: return attn::Activation::SiLU;
        case Activation::relu: return attn::Activation::ReLU;
    }
    return attn::Activation::ReLU;
}

LayerNormParams norm_params(const NormWeights& w) { return LayerNormParams{w.weight, w.bias}; }

// x normalised as every norm of the model is (its kind, Gemma's (1 + w), ε).
Matrix apply_norm(const Matrix& x, const NormSpec& spec, const NormWeights& w) {
    const float epsilon = static_cast<float>(spec.epsilon);
    if (spec.kind == NormKind::rms_norm) return rms_norm(x, epsilon, w.weight, spec.one_plus_weight);
    return layer_norm(x, epsilon, norm_params(w));
}

// What the engine does not compute yet, for a spec: refused by name rather than run as
// something else.
std::vector<std::string> not_computed(const ModelSpec& spec) {
    std::vector<std::string> why;
    if (spec.mlp == MlpKind::gated && spec.mlp_bias) why.push_back("a gated MLP with biases (mlp_bias: true) is not computed by the engine");
    if (spec.model_type == "gpt2") why.push_back("GPT-2 folders are opened by the GPT-2 reader (--model opens them so)");
    return why;
}

// An id as the token strip shows it; "#id" without a tokenizer.
std::string piece_of(const OpenedModel& m, int id) { return m.tokenizer ? m.tokenizer->piece(id) : "#" + std::to_string(id); }

std::vector<Prediction> top_predictions(const OpenedModel& m, const Matrix& logits_row, int k) {
    const Matrix p = softmax_rows(logits_row, SoftmaxKind::Stable);  // (1 × V)
    std::vector<Prediction> top;
    for (int id : stack::top_k(p, k)) top.push_back({id, piece_of(m, id), p(0, id)});
    return top;
}

// BERT's decoder: logits = t·Eᵀ + b.
Matrix unembed(const OpenedModel& m, const Matrix& t) {
    Matrix logits = t * m.weights.unembedding()->transpose();  // (1 × d)·(d × V) → (1 × V)
    if (m.weights.lm_head_bias.size() != 0) logits.rowwise() += m.weights.lm_head_bias;
    return logits;
}

}  // namespace

OpenedModelLoad open_model(const std::string& folder, bool with_tokenizer) {
    OpenedModelLoad out;
    ModelLoad load = load_model(folder);
    out.errors = std::move(load.errors);
    out.ignored = std::move(load.ignored);
    if (!load.spec || !load.weights) return out;
    for (const std::string& why : not_computed(*load.spec)) out.errors.push_back(folder + "/config.json: " + why);
    std::optional<tok::TokenizerJson> tokenizer;
    if (with_tokenizer) {
        const std::string tokenizer_file = (std::filesystem::path(folder) / "tokenizer.json").string();
        std::vector<std::string> tokenizer_errors;
        tokenizer = tok::TokenizerJson::load(tokenizer_file, tokenizer_errors);
        for (std::string& e : tokenizer_errors) out.errors.push_back(std::move(e));
        if (tokenizer && tokenizer->size() > load.spec->vocab_size)
            out.errors.push_back(tokenizer_file + ": " + std::to_string(tokenizer->size()) + " tokens, but the model's embedding has " +
                                 std::to_string(load.spec->vocab_size) + " rows");
        if (!tokenizer) return out;
    }
    if (!out.errors.empty()) return out;
    out.model.emplace(OpenedModel{folder, std::move(*load.spec), std::move(*load.weights), std::move(tokenizer)});
    return out;
}

stack::Stack model_stack(const OpenedModel& m) {
    const ModelSpec& spec = m.spec;
    stack::Stack st;
    st.layers = spec.n_layers;
    st.d_model = spec.d_model;
    st.heads = spec.n_heads;
    st.layer_scenario = [&m](int layer, const Matrix& input, const Matrix*) {
        const ModelSpec& spec = m.spec;
        const LayerSpec& ls = spec.layers[static_cast<size_t>(layer)];
        const LayerWeights& w = m.weights.layers[static_cast<size_t>(layer)];
        Scenario s;
        s.name = std::filesystem::path(m.folder).filename().string() + " layer " + std::to_string(layer + 1);
        s.d_model = spec.d_model;
        s.heads = spec.n_heads;
        s.kv_heads = spec.n_kv_heads;
        s.head_dim = spec.head_dim;
        s.target.embeddings = input;
        s.w_q = w.w_q;
        s.w_k = w.w_k;
        s.w_v = w.w_v;
        s.w_o = w.w_o;
        s.b_q = w.b_q;
        s.b_k = w.b_k;
        s.b_v = w.b_v;
        s.b_o = w.b_o;
        if (spec.positions == PositionKind::rope) {
            s.positional = PositionalEncoding::Rotary;
            s.rope = rope_options(spec, layer);
        }
        s.mask = !ls.causal ? MaskKind::None : ls.window > 0 ? MaskKind::SlidingWindow : MaskKind::Causal;
        if (ls.window > 0) s.window = ls.window;
        if (spec.qk_norm) {  // Qwen3, Gemma 3: RMSNorm of each head's q and k before RoPE
            s.qk_norm = true;
            s.qk_norm_plus_one = spec.norm.one_plus_weight;
            s.q_norm = w.q_norm.weight;
            s.k_norm = w.k_norm.weight;
        }
        s.score_scale = static_cast<float>(spec.attention_scale);
        s.softcap = static_cast<float>(spec.attn_logit_softcap);
        BlockOptions& b = s.block;
        b.residual = b.layer_norm = b.feed_forward = true;
        b.d_ff = spec.d_ff;
        b.epsilon = static_cast<float>(spec.norm.epsilon);
        b.norm_kind = spec.norm.kind == NormKind::rms_norm ? attn::NormKind::RMSNorm : attn::NormKind::LayerNorm;
        b.gamma_plus_one = spec.norm.one_plus_weight;
        b.activation = engine_activation(spec.activation);
        b.gated = spec.mlp == MlpKind::gated;
        b.w_gate = w.w_gate;
        b.w_1 = w.w_up;
        b.w_2 = w.w_down;
        b.b_1 = w.b_up;
        b.b_2 = w.b_down;
        switch (spec.layout) {
            case BlockLayout::post_norm:  // BERT: LN(x + attention), then LN(y + MLP)
                b.norm = NormPlacement::Post;
                b.norm_1 = norm_params(w.post_attn_norm);
                b.norm_2 = norm_params(w.post_mlp_norm);
                break;
            case BlockLayout::pre_norm:
            case BlockLayout::parallel_residual:
            case BlockLayout::sandwich:
                b.norm = NormPlacement::Pre;
                b.norm_1 = norm_params(w.attn_norm);
                b.norm_2 = norm_params(w.mlp_norm);
                b.parallel_residual = spec.layout == BlockLayout::parallel_residual;
                b.sandwich_norm = spec.layout == BlockLayout::sandwich;
                if (b.sandwich_norm) {
                    b.norm_post_attention = norm_params(w.post_attn_norm);
                    b.norm_post_feed_forward = norm_params(w.post_mlp_norm);
                }
                break;
        }
        return s;
    };
    // The head: the final norm and, for a causal LM, the next token's logits (BERT's masked
    // positions are read by forward_text from h).
    stack::Head& head = st.head;
    head.final_norm = spec.final_norm;
    head.norm = norm_params(m.weights.final_norm);
    head.norm_kind = spec.norm.kind == NormKind::rms_norm ? attn::NormKind::RMSNorm : attn::NormKind::LayerNorm;
    head.gamma_plus_one = spec.norm.one_plus_weight;
    head.epsilon = static_cast<float>(spec.norm.epsilon);
    if (spec.head == HeadKind::causal_lm) {
        head.unembedding = &*m.weights.unembedding();  // (V × d): logits = h·Uᵀ
        head.tied = true;
        head.bias = &m.weights.lm_head_bias;
        head.last_row_only = true;
        head.softcap = static_cast<float>(spec.final_logit_softcap);
    }
    return st;
}

ModelPass forward_text(const OpenedModel& m, const std::string& text) {
    if (!m.tokenizer) {
        ModelPass out;
        out.errors.push_back(m.folder + ": no tokenizer.json was read: the text cannot be made into ids");
        return out;
    }
    return forward_ids(m, m.tokenizer->encode(text));
}

ModelPass forward_ids(const OpenedModel& m, std::vector<int> ids) {
    ModelPass out;
    forward_ids_into(m, std::move(ids), out);
    return out;
}

bool forward_ids_into(const OpenedModel& m, std::vector<int> ids, ModelPass& out) {
    // Everything but the traces starts afresh.
    out.ok = false;
    out.errors.clear();
    out.tokens.clear();
    out.next_token_top5.clear();
    out.masked_predictions.clear();
    auto refuse = [&] {
        out.pass.ok = false;
        out.pass.layers.clear();  // no trace of an earlier sentence stays beside these errors
        return false;
    };
    const ModelSpec& spec = m.spec;
    out.token_ids = std::move(ids);
    if (out.token_ids.empty()) {
        out.errors.push_back("the text gives no token");
        return refuse();
    }
    const int n = static_cast<int>(out.token_ids.size());
    if (spec.positions == PositionKind::learned_absolute && n > spec.max_positions) {
        out.errors.push_back(std::to_string(n) + " tokens: the model has positions for " + std::to_string(spec.max_positions));
        return refuse();
    }
    // x₀: the embedding rows, scaled (Gemma), plus positions and token type 0 with their norm (BERT).
    const Matrix& table = *m.weights.token_embedding;
    Matrix x0(n, spec.d_model);
    for (int i = 0; i < n; ++i) {
        const int id = out.token_ids[static_cast<size_t>(i)];
        if (id < 0 || id >= table.rows()) {
            out.errors.push_back("token id " + std::to_string(id) + " is outside the embedding's " + std::to_string(table.rows()) + " rows");
            return refuse();
        }
        out.tokens.push_back(piece_of(m, id));
        x0.row(i) = table.row(id) * spec.embedding_scale;
        if (m.weights.position_embedding.size() != 0) x0.row(i) += m.weights.position_embedding->row(i);
        if (m.weights.token_type_embedding.size() != 0) x0.row(i) += m.weights.token_type_embedding->row(0);
    }
    if (spec.embedding_norm) x0 = apply_norm(x0, spec.norm, m.weights.embedding_norm);
    const stack::Stack st = model_stack(m);
    if (!stack::forward_into(st, std::move(x0), Matrix(), out.pass)) {
        out.errors = out.pass.errors;
        return false;
    }
    const Matrix& x_last = out.pass.final_output;
    if (spec.head == HeadKind::causal_lm) {
        out.next_token_top5 = top_predictions(m, out.pass.logits, 5);
    } else {
        const std::optional<int> mask = spec.mask_token_id ? spec.mask_token_id : m.tokenizer ? m.tokenizer->id("[MASK]") : std::nullopt;
        for (int i = 0; i < n; ++i) {
            if (!mask || out.token_ids[static_cast<size_t>(i)] != *mask) continue;
            // BERT's MLM transform: dense, activation, LayerNorm; then the tied decoder with its bias.
            Matrix t = x_last.row(i) * *m.weights.mlm_dense;
            if (m.weights.mlm_dense_bias.size() != 0) t.row(0) += m.weights.mlm_dense_bias;
            t = activate(t, engine_activation(spec.mlm_activation));
            t = apply_norm(t, spec.norm, m.weights.mlm_norm);
            out.masked_predictions.push_back({i, top_predictions(m, unembed(m, t), 5)});
        }
    }
    out.ok = true;
    return true;
}

}  // namespace attn::hf
