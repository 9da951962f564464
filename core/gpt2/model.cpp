// GPT-2's forward pass: one engine scenario per layer (model.hpp has the maths).
#include "gpt2/model.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <sstream>

#include "analysis.hpp"
#include "engine.hpp"
#include "softmax.hpp"

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

std::vector<std::string> validate_ablation(const Checkpoint& c, const HeadSet& ablated) {
    std::vector<std::string> errors;
    for (const HeadId& id : ablated)
        if (id.layer < 0 || id.layer >= c.config.n_layer || id.head < 0 || id.head >= c.config.n_head)
            errors.push_back("the ablated head " + std::to_string(id.head + 1) + " of layer " + std::to_string(id.layer + 1) +
                             " does not exist: the model has " + std::to_string(c.config.n_layer) +
                             (c.config.n_layer == 1 ? " layer of " : " layers of ") + std::to_string(c.config.n_head) +
                             (c.config.n_head == 1 ? " head" : " heads"));
    return errors;
}

int ablated_in_layer(const HeadSet& ablated, int layer) {
    return static_cast<int>(std::distance(ablated.lower_bound({layer, 0}), ablated.lower_bound({layer + 1, 0})));
}

bool ablate_heads(Scenario& s, const HeadSet& ablated, int layer) {
    bool any = false;
    const int d_k = s.d_model / s.heads;
    for (auto it = ablated.lower_bound({layer, 0}); it != ablated.end() && it->layer == layer; ++it) {
        // Head h's slice of the concatenation, columns [h·d_k, (h+1)·d_k), meets these rows of W_O.
        s.w_o.middleRows(it->head * d_k, d_k).setZero();
        any = true;
    }
    return any;
}

const Matrix& layer_input(const Trace& trace) { return trace.x_pe; }
const Matrix& layer_output(const Trace& trace) { return trace.has_block ? trace.block.output : trace.output; }

Scenario layer_scenario(const Checkpoint& c, const std::vector<std::string>& tokens, int l, const Matrix& input,
                        const HeadSet& ablated) {
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
    // Conv1D keeps (in, out): [Q | K | V] = a·c_attn_w, so W_Q is columns [0, d), W_K
    // [d, 2d), W_V [2d, 3d) of the (d × 3d) weight, used as they are.
    s.w_q = w.c_attn_w.middleCols(0, d);
    s.w_k = w.c_attn_w.middleCols(d, d);
    s.w_v = w.c_attn_w.middleCols(2 * d, d);
    s.b_q = w.c_attn_b.segment(0, d);
    s.b_k = w.c_attn_b.segment(d, d);
    s.b_v = w.c_attn_b.segment(2 * d, d);
    s.w_o = w.c_proj_w;                     // (d × d): concat·c_proj_w
    s.b_o = w.c_proj_b;
    ablate_heads(s, ablated, l);
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

// softmax_rows(logits) (1 × V) → its k most probable ids. NaN ranks below every number, so
// the order stays a strict weak ordering (partial_sort needs one) when NaN reached the logits.
std::vector<TokenProbability> top_of(const Matrix& probabilities, int k, const Tokenizer& tokenizer) {
    std::vector<int> order(static_cast<size_t>(probabilities.cols()));
    std::iota(order.begin(), order.end(), 0);
    k = std::min<int>(k, static_cast<int>(order.size()));
    const auto rank = [&](int id) {
        const float p = probabilities(0, id);
        return std::isnan(p) ? -std::numeric_limits<float>::infinity() : p;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
        const float pa = rank(a), pb = rank(b);
        return pa != pb ? pa > pb : a < b;
    });
    std::vector<TokenProbability> top;
    for (int i = 0; i < k; ++i) {
        const int id = order[static_cast<size_t>(i)];
        top.push_back({id, tokenizer.describe(id), probabilities(0, id)});
    }
    return top;
}

}  // namespace

std::vector<TokenProbability> top_tokens(const Vector& logits, int k, const Tokenizer& tokenizer) {
    return top_of(softmax_rows(logits, SoftmaxKind::Stable), k, tokenizer);  // (1 × V)
}

namespace {

std::string number(float value) {
    if (std::isnan(value)) return "nan";  // never "-nan": the sign of a NaN means nothing
    std::ostringstream out;
    out << value;
    return out.str();
}

// "id 17 ('␣cat')": a padding row of wte has no text.
std::string token_named(const Checkpoint& c, int id) {
    const std::string text = c.tokenizer.display(id);
    return "id " + std::to_string(id) + (text.empty() ? std::string() : " ('" + text + "')");
}

// The largest |value| of a row, for a message about an overflow.
std::string largest(const Matrix& m, Eigen::Index row) { return number(m.row(row).cwiseAbs().maxCoeff()); }

// The first stage of the pass where NaN or ±∞ appears, and what brought it there (model.hpp).
NonFiniteOrigin find_non_finite(const Checkpoint& c, const ForwardPass& pass, const Matrix& probabilities) {
    for (size_t l = 0; l < pass.layers.size(); ++l) {
        const Matrix& output = layer_output(pass.layers[l]);
        if (output.allFinite()) continue;
        const Cell cell = first_non_finite(output);
        const NonFiniteReport report = non_finite_report(pass.layers[l]);
        return {"layer " + std::to_string(l + 1), "its output holds " + number(output(cell.row, cell.col)) + ", " +
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
                return {"ln_f", std::string(tensor) + "[" + std::to_string(bad.col) + "] is " + number((*values)(bad.col)) +
                                    ": LN_f carries it to every row and every logit"};
        }
        const Eigen::Index row = normed.row;
        return {"ln_f", "row " + std::to_string(row + 1) + " ('" + pass.tokens[static_cast<size_t>(row)] + "') is " +
                            number(pass.final_output(row, normed.col)) +
                            " from finite values: LN_f overflowed the float range (about ±3.4e38); its input there reaches " +
                            largest(x, row) + ", ln_f.weight " + largest(c.ln_f_gamma, 0) + ", ln_f.bias " + largest(c.ln_f_beta, 0)};
    }
    const Cell logit = first_non_finite(pass.next_logits);
    if (logit.valid()) {
        // logit t = LN_f's last row · wte row t: the LM head is tied to wte, so every row of wte
        // meets the prediction, also those no token of the sentence uses.
        const int id = logit.col;
        const std::string start = "the last token's logit for " + token_named(c, id) + " is " + number(pass.next_logits(id));
        const Cell bad = first_non_finite(c.wte.row(id));
        if (bad.valid())
            return {"the logits", start + ", from wte.weight[" + std::to_string(id) + ", " + std::to_string(bad.col) +
                                      "] = " + number(c.wte(id, bad.col)) + " (wte is also the LM head)"};
        return {"the logits", start + " from finite values: LN_f's last row · wte row " + std::to_string(id) + " (reaching " +
                                  largest(c.wte, id) + ") is beyond the float range (about ±3.4e38)"};
    }
    // Guard: the stable softmax of finite logits is finite (each exp ≤ 1 after the row maximum
    // is subtracted, and their sum ≥ 1).
    const Cell probability = first_non_finite(probabilities);
    if (probability.valid())
        return {"the softmax", "the probability of " + token_named(c, probability.col) + " is " +
                                   number(probabilities(0, probability.col)) + " from finite logits"};
    return {};
}

// LN_f and the tied LM head on the last layer's output.
void finish(const Checkpoint& c, ForwardPass& pass) {
    const Matrix& x = layer_output(pass.layers.back());
    pass.final_output = layer_norm(x, c.config.layer_norm_epsilon, {c.ln_f_gamma, c.ln_f_beta});
    // (1 × d)·(d × V) → (1 × V): only the next token's row.
    pass.next_logits.noalias() = pass.final_output.bottomRows(1) * c.wte.transpose();
    const Matrix probabilities = softmax_rows(pass.next_logits, SoftmaxKind::Stable);  // (1 × V)
    pass.next_token_top5 = top_of(probabilities, 5, c.tokenizer);
    pass.non_finite = find_non_finite(c, pass, probabilities);
    pass.ok = true;
}

// Whether an ablated head of layer ℓ still has a nonzero row of W_O in the scenario.
bool needs_ablation(const Scenario& s, const HeadSet& ablated, int layer) {
    const int d_k = s.d_model / s.heads;
    for (auto it = ablated.lower_bound({layer, 0}); it != ablated.end() && it->layer == layer; ++it)
        if (!s.w_o.middleRows(it->head * d_k, d_k).isZero(0.0f)) return true;
    return false;
}

// Runs layers [from, L) starting from `input`; layer `from` runs `first` when given.
bool run_layers(const Checkpoint& c, int from, Matrix input, ForwardPass& pass, const Scenario* first) {
    pass.ok = false;
    pass.errors.clear();
    pass.non_finite = {};
    const int n = static_cast<int>(pass.token_ids.size());
    for (int l = from; l < c.config.n_layer; ++l) {
        Trace& t = pass.layers[static_cast<size_t>(l)];
        const bool edited = l == from && first != nullptr;
        if (edited) {
            // The edited scenario as it is: its X is the residual stream entering the layer,
            // and an edit there counts too; it must still hold one row per token.
            if (first->target.embeddings.rows() != n || first->target.embeddings.cols() != c.config.n_embd) {
                pass.errors.push_back("layer " + std::to_string(l + 1) + ": the edited scenario's X is " +
                                      std::to_string(first->target.embeddings.rows()) + " × " +
                                      std::to_string(first->target.embeddings.cols()) + "; the model's stream is " +
                                      std::to_string(n) + " × " + std::to_string(c.config.n_embd) +
                                      " (one row per token of the sentence)");
                return false;
            }
            if (needs_ablation(*first, pass.ablated, l)) {
                Scenario ablated = *first;
                ablate_heads(ablated, pass.ablated, l);
                run_into(ablated, RunOptions{}, t);
            } else {
                run_into(*first, RunOptions{}, t);
            }
        } else {
            run_into(layer_scenario(c, pass.tokens, l, input, pass.ablated), RunOptions{}, t);
        }
        if (!t.ok) {
            for (const std::string& e : t.errors) pass.errors.push_back("layer " + std::to_string(l + 1) + ": " + e);
            return false;
        }
        if (l == 0 && !edited) {
            // Labelled as the engine labels an added encoding: x_pe = x + pe is the input used.
            t.settings.positional = PositionalEncoding::Learned;
            t.x.resize(n, c.config.n_embd);
            for (int i = 0; i < n; ++i) t.x.row(i) = c.wte.row(pass.token_ids[static_cast<size_t>(i)]);
            t.pe = c.wpe.topRows(n);
        }
        input = layer_output(t);
    }
    finish(c, pass);
    return true;
}

}  // namespace

bool forward_into(const Checkpoint& c, const std::vector<int>& ids, ForwardPass& pass) {
    pass.ok = false;
    pass.errors = validate(c, ids);
    for (std::string& e : validate_ablation(c, pass.ablated)) pass.errors.push_back(std::move(e));
    if (!pass.errors.empty()) {
        pass.layers.clear();
        pass.non_finite = {};
        return false;
    }
    pass.token_ids = ids;
    const int n = static_cast<int>(ids.size());
    pass.tokens.clear();
    for (int id : ids) pass.tokens.push_back(c.tokenizer.display(id));
    Matrix x0(n, c.config.n_embd);  // wte[ids] + wpe[0..n): (n × d)
    for (int i = 0; i < n; ++i) x0.row(i) = c.wte.row(ids[static_cast<size_t>(i)]) + c.wpe.row(i);
    pass.layers.resize(static_cast<size_t>(c.config.n_layer));  // kept traces keep their storage (run_into)
    return run_layers(c, 0, std::move(x0), pass, nullptr);
}

ForwardPass forward(const Checkpoint& c, const std::vector<int>& ids, const HeadSet& ablated) {
    ForwardPass pass;
    pass.ablated = ablated;
    forward_into(c, ids, pass);
    return pass;
}

ForwardPass forward_text(const Checkpoint& c, const std::string& text, const HeadSet& ablated) {
    return forward(c, c.tokenizer.encode(text), ablated);
}

bool recompute_from(const Checkpoint& c, int layer, ForwardPass& pass, const Scenario* edited_layer) {
    if (layer < 0 || layer >= c.config.n_layer || static_cast<int>(pass.layers.size()) != c.config.n_layer ||
        !pass.layers[static_cast<size_t>(layer)].ok) {
        pass.ok = false;
        pass.errors = {"recompute from layer " + std::to_string(layer + 1) + ": the pass has no computed input for it (run forward first)"};
        return false;
    }
    pass.errors = validate_ablation(c, pass.ablated);
    if (!pass.errors.empty()) {
        pass.ok = false;
        return false;
    }
    Matrix input = layer_input(pass.layers[static_cast<size_t>(layer)]);
    return run_layers(c, layer, std::move(input), pass, edited_layer);
}

}  // namespace attn::gpt2
