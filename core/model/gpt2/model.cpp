// GPT-2's forward pass: one engine scenario per layer (model.hpp has the maths).
#include "model/gpt2/model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "attention/analysis.hpp"
#include "attention/engine.hpp"
#include "attention/softmax.hpp"

namespace attn::gpt2 {

std::vector<std::string> validate(const Checkpoint& c, const std::vector<int>& ids) {
    std::vector<std::string> errors;
    const int n = static_cast<int>(ids.size());
    if (n == 0) errors.push_back("the text has no token: GPT-2 needs at least one");
    if (n > c.config.n_positions)
        errors.push_back("the text has " + std::to_string(n) + " tokens; the model reads at most n_positions = " +
                         std::to_string(c.config.n_positions) + " (its position table wpe has that many rows)");
    for (int i = 0; i < n; ++i)
        if (ids[static_cast<size_t>(i)] < 0 || ids[static_cast<size_t>(i)] >= c.wte.rows()) {
            errors.push_back("token " + std::to_string(i + 1) + " has id " + std::to_string(ids[static_cast<size_t>(i)]) +
                             ", outside wte's " + std::to_string(c.wte.rows()) + " rows");
            break;
        }
    if (c.config.n_layer < 1) errors.push_back("config.json's n_layer is " + std::to_string(c.config.n_layer) + ": expected at least 1");
    if (static_cast<int>(c.layers.size()) != c.config.n_layer)
        errors.push_back("the checkpoint holds " + std::to_string(c.layers.size()) + " layers, config.json says n_layer = " +
                         std::to_string(c.config.n_layer));
    return errors;
}

const Matrix& layer_input(const Trace& trace) { return trace.x_pe; }

Scenario layer_scenario(const Checkpoint& c, const std::vector<std::string>& tokens, int l, const Matrix& input,
                        const Ablation& ablated) {
    const LayerWeights& w = c.layers[static_cast<size_t>(l)];
    const int d = c.config.n_embd;
    Scenario s;
    s.name = "GPT-2 layer " + std::to_string(l + 1);
    s.input = InputMode::Embeddings;
    s.attention = AttentionKind::Self;
    s.d_model = d;
    s.heads = c.config.n_head;
    s.target.tokens = tokens;
    s.target.embeddings = input;            // the residual stream: wpe is already in x₀
    s.positional = PositionalEncoding::None;
    s.mask = MaskKind::Causal;
    s.scale = true;                         // 1/√d_k
    s.softmax = SoftmaxKind::Stable;
    // Conv1D keeps (in, out): [Q | K | V] = a·c_attn, so W_Q is columns [0, d), W_K
    // [d, 2d), W_V [2d, 3d) of the (d × 3d) weight, used as they are. The scenario shares
    // the checkpoint's matrices: a pass copies no weight.
    s.w_q = w.w_q;
    s.w_k = w.w_k;
    s.w_v = w.w_v;
    s.b_q = w.c_attn_b.segment(0, d);
    s.b_k = w.c_attn_b.segment(d, d);
    s.b_v = w.c_attn_b.segment(2 * d, d);
    s.w_o = w.c_proj_w;                     // (d × d): concat·c_proj_w
    s.b_o = w.c_proj_b;
    stack::ablate(s, ablated, l);
    BlockOptions& b = s.block;
    b.residual = true;
    b.layer_norm = true;
    b.feed_forward = true;
    b.norm = NormPlacement::Pre;
    b.activation = Activation::GeluTanh;    // gelu_new
    b.epsilon = c.config.layer_norm_epsilon;
    b.d_ff = static_cast<int>(w.c_fc_w.cols());
    b.norm_1 = {w.ln_1_gamma, w.ln_1_beta};
    b.norm_2 = {w.ln_2_gamma, w.ln_2_beta};
    b.w_1 = w.c_fc_w;                       // (d × d_ff)
    b.b_1 = w.c_fc_b;
    b.w_2 = w.mlp_proj_w;                   // (d_ff × d)
    b.b_2 = w.mlp_proj_b;
    return s;
}

namespace {

// `before`: the sentence's ids, so that a byte token finishing its last character names the word.
std::vector<TokenProbability> top_of(const Matrix& probabilities, int k, const Tokenizer& tokenizer, const std::vector<int>& before = {}) {
    std::vector<TokenProbability> top;
    for (int id : stack::top_k(probabilities, k)) top.push_back({id, tokenizer.describe(id, before), probabilities(0, id)});
    return top;
}

}  // namespace

std::vector<TokenProbability> top_tokens(const Vector& logits, int k, const Tokenizer& tokenizer) {
    return top_of(softmax_rows(logits, SoftmaxKind::Stable), k, tokenizer);  // (1 × V)
}

namespace {

// "id 17 ('␣cat')": a padding row of wte has no text.
std::string token_named(const Checkpoint& c, int id) {
    const std::string text = c.tokenizer.display(id);
    return "id " + std::to_string(id) + (text.empty() ? std::string() : " ('" + text + "')");
}

// The largest |value| of a row, for a message about an overflow.
std::string largest(const Matrix& m, Eigen::Index row) { return value_text(m.row(row).cwiseAbs().maxCoeff()); }

// The first stage of the pass where NaN or ±∞ appears, and what brought it there (model.hpp).
NonFiniteOrigin find_non_finite(const Checkpoint& c, const ForwardPass& pass, const Matrix& probabilities) {
    for (size_t l = 0; l < pass.layers.size(); ++l) {
        const Matrix& output = layer_output(pass.layers[l]);
        if (output.allFinite()) continue;
        const Cell cell = first_non_finite(output);
        const NonFiniteReport report = non_finite_report(pass.layers[l]);
        return {"layer " + std::to_string(l + 1), "its output holds " + value_text(output(cell.row, cell.col)) + ", " +
                                                      (report.origin.empty() ? std::string("from finite values") : report.origin)};
    }
    const Matrix& x = layer_output(pass.layers.back());
    const Cell normed = first_non_finite(pass.final_output);
    if (normed.valid()) {
        // γ or β themselves, else an overflow of finite values.
        for (const auto& [tensor, values] : {std::pair<const char*, const Vector*>{"ln_f.weight", &c.ln_f_gamma},
                                              std::pair<const char*, const Vector*>{"ln_f.bias", &c.ln_f_beta}}) {
            const Cell bad = first_non_finite(*values);
            if (bad.valid())
                return {"ln_f", std::string(tensor) + "[" + std::to_string(bad.col) + "] is " + value_text((*values)(bad.col)) +
                                    ": LN_f carries it to every row and every logit"};
        }
        const Eigen::Index row = normed.row;
        return {"ln_f", "row " + std::to_string(row + 1) + " ('" + pass.tokens[static_cast<size_t>(row)] + "') is " +
                            value_text(pass.final_output(row, normed.col)) +
                            " from finite values: LN_f overflowed the float range (about ±3.4e38); its input there reaches " +
                            largest(x, row) + ", ln_f.weight " + largest(c.ln_f_gamma, 0) + ", ln_f.bias " + largest(c.ln_f_beta, 0)};
    }
    const Cell logit = first_non_finite(pass.logits);
    if (logit.valid()) {
        // logit t = LN_f's last row · wte row t: the LM head is tied to wte, so every row of wte
        // meets the prediction, also those no token of the sentence uses.
        const int id = logit.col;
        const std::string start = "the last token's logit for " + token_named(c, id) + " is " + value_text(pass.logits(id));
        const Vector row = c.wte.row_vector(id);
        const Cell bad = first_non_finite(row);
        if (bad.valid())
            return {"the logits", start + ", from wte.weight[" + std::to_string(id) + ", " + std::to_string(bad.col) +
                                      "] = " + value_text(c.wte(id, bad.col)) + " (wte is also the LM head)"};
        return {"the logits", start + " from finite values: LN_f's last row · wte row " + std::to_string(id) + " (reaching " +
                                  largest(row, 0) + ") is beyond the float range (about ±3.4e38)"};
    }
    // Guard: the stable softmax of finite logits is finite (each exp ≤ 1 after the row maximum
    // is subtracted, and their sum ≥ 1).
    const Cell probability = first_non_finite(probabilities);
    if (probability.valid())
        return {"the softmax", "the probability of " + token_named(c, probability.col) + " is " +
                                   value_text(probabilities(0, probability.col)) + " from finite logits"};
    return {};
}

// What GPT-2 reads from the stack's pass: the top 5 and where NaN or ±∞ first arose.
bool read_prediction(const Checkpoint& c, ForwardPass& pass) {
    if (!pass.ok) return false;
    const Matrix probabilities = softmax_rows(pass.logits, SoftmaxKind::Stable);  // (1 × V)
    pass.next_token_top5 = top_of(probabilities, 5, c.tokenizer, pass.token_ids);
    pass.non_finite = find_non_finite(c, pass, probabilities);
    return true;
}

}  // namespace

stack::Stack make_stack(const Checkpoint& c, const std::vector<int>& ids, const std::vector<std::string>& tokens) {
    stack::Stack s;
    s.layers = c.config.n_layer;
    s.d_model = c.config.n_embd;
    s.heads = c.config.n_head;
    s.layer_scenario = [&c, &tokens](int l, const Matrix& input, const Matrix*) { return layer_scenario(c, tokens, l, input); };
    s.label_first_layer = [&c, &ids](Trace& t) {
        // Labelled as the engine labels an added encoding: x_pe = x + pe is the input used.
        const Eigen::Index n = static_cast<Eigen::Index>(ids.size());
        t.settings.positional = PositionalEncoding::Learned;
        t.x.resize(n, c.config.n_embd);
        t.pe.resize(n, c.config.n_embd);
        for (Eigen::Index i = 0; i < n; ++i) {
            c.wte.row_into(ids[static_cast<size_t>(i)], t.x.row(i).data());
            c.wpe.row_into(i, t.pe.row(i).data());
        }
    };
    s.head.final_norm = true;                      // h = LN_f(x_L)
    s.head.norm = {c.ln_f_gamma, c.ln_f_beta};
    s.head.epsilon = c.config.layer_norm_epsilon;
    s.head.unembedding = c.wte;                    // the LM head is tied to wte: h·wteᵀ, shared
    s.head.tied = true;
    s.head.last_row_only = true;                   // (1 × d)·(d × V) → (1 × V): the next token's
    return s;
}

Matrix embed(const Checkpoint& c, const std::vector<int>& ids, int first_position) {
    const int n = static_cast<int>(ids.size());
    Matrix x0(n, c.config.n_embd);  // wte[ids] + wpe[first_position …): (n × d)
    for (int i = 0; i < n; ++i) x0.row(i) = c.wte.row_vector(ids[static_cast<size_t>(i)]) + c.wpe.row_vector(first_position + i);
    return x0;
}

bool forward_into(const Checkpoint& c, const std::vector<int>& ids, ForwardPass& pass) {
    pass.ok = false;
    pass.non_finite = {};
    pass.errors = validate(c, ids);
    if (!pass.errors.empty()) {
        pass.layers.clear();
        return false;
    }
    pass.token_ids = ids;
    pass.tokens.clear();
    for (int id : ids) pass.tokens.push_back(c.tokenizer.display(id));
    return stack::forward_into(make_stack(c, pass.token_ids, pass.tokens), embed(c, ids, 0), Matrix(), pass) && read_prediction(c, pass);
}

ForwardPass forward(const Checkpoint& c, const std::vector<int>& ids, const Ablation& ablated) {
    ForwardPass pass;
    pass.ablated = ablated;
    forward_into(c, ids, pass);
    return pass;
}

ForwardPass forward_text(const Checkpoint& c, const std::string& text, const Ablation& ablated) {
    return forward(c, c.tokenizer.encode(text), ablated);
}

bool recompute_from(const Checkpoint& c, int layer, ForwardPass& pass, const Scenario* edited_layer) {
    pass.non_finite = {};
    return stack::recompute_from(make_stack(c, pass.token_ids, pass.tokens), layer, pass, edited_layer) && read_prediction(c, pass);
}

}  // namespace attn::gpt2
