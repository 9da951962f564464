// The backward pass, written out step by step; the shapes on each line, as in engine.cpp.
// n_q queries, n_k keys (n_k = n_q in self-attention), d = d_model, H heads of d_k columns.
//
// [SECTION] Loss
// [SECTION] LayerNorm and the feed-forward
// [SECTION] Attention
// [SECTION] The block
// [SECTION] The model
#include "train/backward.hpp"

#include <cmath>

#include "attention/positional.hpp"

namespace attn::train {

// [SECTION] Loss

double cross_entropy(const Matrix& logits, const std::vector<int>& targets, const std::vector<bool>& scored,
                     float weight, Matrix* dlogits) {
    double loss = 0.0;
    for (Eigen::Index i = 0; i < logits.rows(); ++i) {
        if (!scored[static_cast<size_t>(i)]) continue;
        const int target = targets[static_cast<size_t>(i)];
        // log Σ exp(z − max) + max, in double so the loss of a confident model is not rounded to 0.
        const double max = logits.row(i).maxCoeff();
        double sum = 0.0;
        for (Eigen::Index v = 0; v < logits.cols(); ++v) sum += std::exp(static_cast<double>(logits(i, v)) - max);
        const double log_sum = std::log(sum) + max;
        loss += log_sum - logits(i, target);
        if (dlogits) {
            // ∂(−log p_target)/∂z_v = softmax(z)_v − [v = target]
            for (Eigen::Index v = 0; v < logits.cols(); ++v) {
                const double p = std::exp(static_cast<double>(logits(i, v)) - log_sum);
                (*dlogits)(i, v) += static_cast<float>(weight * (p - (v == target ? 1.0 : 0.0)));
            }
        }
    }
    return loss;
}

// [SECTION] LayerNorm and the feed-forward

Matrix layer_norm_backward(const Matrix& x, const Matrix& gamma, float epsilon, const Matrix& dy, Vector* dgamma,
                           Vector* dbeta) {
    const Eigen::Index d = x.cols();
    Matrix dx(x.rows(), d);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const float mean = x.row(i).mean();
        const float var = (x.row(i).array() - mean).square().mean();  // biased, as the forward
        const float inv_std = 1.0f / std::sqrt(var + epsilon);
        const Vector x_hat = (x.row(i).array() - mean) * inv_std;      // (1, d): the normalised row
        if (dgamma) *dgamma += dy.row(i).cwiseProduct(x_hat);          // y = γ ⊙ x̂ + β
        if (dbeta) *dbeta += dy.row(i);
        const Vector dx_hat = dy.row(i).cwiseProduct(gamma.row(0));    // (1, d)
        // x̂ = (x − μ)/σ: dx = (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)) / σ
        const float mean_dx_hat = dx_hat.mean();
        const float mean_dx_hat_x_hat = dx_hat.cwiseProduct(x_hat).mean();
        dx.row(i) = inv_std * (dx_hat.array() - mean_dx_hat - x_hat.array() * mean_dx_hat_x_hat);
    }
    return dx;
}

namespace {

// d act(z)/dz, element by element.
Matrix activation_derivative(const Matrix& z, Activation activation) {
    if (activation == Activation::ReLU) return (z.array() > 0.0f).cast<float>().matrix();
    // gelu_new: ½x(1 + tanh u), u = c(x + 0.044715x³):
    // ½(1 + tanh u) + ½x(1 − tanh²u)·c(1 + 3·0.044715x²)
    const float c = std::sqrt(2.0f / 3.14159265358979f);
    const auto x = z.array();
    const auto t = (c * (x + 0.044715f * x.cube())).tanh();
    return (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t.square()) * c * (1.0f + 3.0f * 0.044715f * x.square())).matrix();
}

// hidden = act(u·W₁ + b₁), out = hidden·W₂ + b₂. Returns du; adds dW₁, db₁, dW₂, db₂.
Matrix feed_forward_backward(const Matrix& u, const BlockTrace& b, Activation activation, const Matrix& d_out,
                             LayerParams& g) {
    g.w_2.noalias() += b.ffn_hidden.transpose() * d_out;            // (d_ff, n)·(n, d) → (d_ff, d)
    g.b_2 += d_out.colwise().sum();                                  // (1, d)
    const Matrix d_hidden = d_out * b.w_2->transpose();              // (n, d)·(d, d_ff) → (n, d_ff)
    Matrix pre_activation = u * *b.w_1;                              // (n, d)·(d, d_ff): recomputed, the
    pre_activation.rowwise() += b.b_1.row(0);                        // trace keeps only act(·)
    const Matrix d_pre = d_hidden.cwiseProduct(activation_derivative(pre_activation, activation));  // (n, d_ff)
    g.w_1.noalias() += u.transpose() * d_pre;                        // (d, n)·(n, d_ff) → (d, d_ff)
    g.b_1 += d_pre.colwise().sum();                                  // (1, d_ff)
    return d_pre * b.w_1->transpose();                               // (n, d_ff)·(d_ff, d) → (n, d)
}

// [SECTION] Attention

// RoPE rotated each pair (2i, 2i+1) of row p by the angle θ = p·10000^(−2i/d_k); the
// rotation is orthogonal, so the gradient goes back through the inverse rotation (−θ).
void unrotate_rows(Matrix& m) {
    const int d = static_cast<int>(m.cols());
    for (Eigen::Index p = 0; p < m.rows(); ++p)
        for (int two_i = 0; two_i + 1 < d; two_i += 2) {
            float c = 0.0f, s = 0.0f;
            rotary_cos_sin(static_cast<int>(p), two_i, d, c, s);
            const float g0 = m(p, two_i), g1 = m(p, two_i + 1);
            // forward: y₀ = x₀c − x₁s, y₁ = x₀s + x₁c  ⇒  dx₀ = g₀c + g₁s, dx₁ = −g₀s + g₁c
            m(p, two_i) = g0 * c + g1 * s;
            m(p, two_i + 1) = -g0 * s + g1 * c;
        }
}

// From d(attention output) (n_q, d) to the gradients of W_Q, W_K, W_V, W_O and the biases
// (added into g), and to the projections' inputs: returns d(query input) (n_q, d) and sets
// d_keys_input (n_k, d), which in self-attention is already included in the return.
Matrix attention_backward(const Trace& t, bool cross, const Matrix& d_output, LayerParams& g, Matrix& d_keys_input) {
    const int heads = t.heads, d_k = t.d_k, d_v = t.d_v;
    // output = concat·W_O + b_o
    if (g.b_o.size() != 0) g.b_o += d_output.colwise().sum();       // (1, d)
    g.w_o.noalias() += t.concat.transpose() * d_output;              // (H·d_v, n_q)·(n_q, d) → (H·d_v, d)
    const Matrix d_concat = d_output * t.w_o->transpose();           // (n_q, d)·(d, H·d_v) → (n_q, H·d_v)

    Matrix d_q_all(t.n_queries, heads * d_k), d_k_all(t.n_keys, heads * d_k), d_v_all(t.n_keys, heads * d_v);
    for (int h = 0; h < heads; ++h) {
        const HeadTrace& head = t.head[static_cast<size_t>(h)];
        const auto d_head_output = d_concat.middleCols(h * d_v, d_v);  // (n_q, d_v): head h's columns
        // output = weights·V
        d_v_all.middleCols(h * d_v, d_v).noalias() = head.weights.transpose() * d_head_output;  // (n_k, n_q)·(n_q, d_v)
        const Matrix d_weights = d_head_output * head.v.transpose();  // (n_q, d_v)·(d_v, n_k) → (n_q, n_k)
        // weights = softmax(masked scores), row by row: the Jacobian of row i is
        // diag(wᵢ) − wᵢᵀwᵢ, so dsᵢ = wᵢ ⊙ (dwᵢ − (dwᵢ·wᵢ)). A masked key has weight 0 and
        // gets no gradient; a fully masked row (all weights 0) gets none at all.
        Matrix d_scores(t.n_queries, t.n_keys);
        for (Eigen::Index i = 0; i < d_scores.rows(); ++i) {
            const float dot = d_weights.row(i).dot(head.weights.row(i));
            d_scores.row(i) = head.weights.row(i).cwiseProduct((d_weights.row(i).array() - dot).matrix());
        }
        // scaled = scores·scale (+ ALiBi's −m|i − j|, a constant): dscores = dscaled·scale
        d_scores *= t.scale;
        // scores = Q·Kᵀ (Q, K as rotated when RoPE)
        Matrix d_q = d_scores * head.k;                              // (n_q, n_k)·(n_k, d_k) → (n_q, d_k)
        Matrix d_k_head = d_scores.transpose() * head.q;             // (n_k, n_q)·(n_q, d_k) → (n_k, d_k)
        if (t.settings.positional == PositionalEncoding::Rotary) {
            unrotate_rows(d_q);                                      // back to the unrotated Q, K
            unrotate_rows(d_k_head);
        }
        d_q_all.middleCols(h * d_k, d_k) = d_q;
        d_k_all.middleCols(h * d_k, d_k) = d_k_head;
    }
    // Q = input·W_Q + b_q, K = keys·W_K + b_k, V = keys·W_V + b_v
    if (g.b_q.size() != 0) {
        g.b_q += d_q_all.colwise().sum();
        g.b_k += d_k_all.colwise().sum();
        g.b_v += d_v_all.colwise().sum();
    }
    const Matrix& queries_from = attention_input(t);                 // (n_q, d)
    const Matrix& keys_from = cross ? t.source_x_pe : queries_from;  // (n_k, d)
    g.w_q.noalias() += queries_from.transpose() * d_q_all;           // (d, n_q)·(n_q, d) → (d, d)
    g.w_k.noalias() += keys_from.transpose() * d_k_all;              // (d, n_k)·(n_k, d) → (d, d)
    g.w_v.noalias() += keys_from.transpose() * d_v_all;
    Matrix d_queries_from = d_q_all * t.w_q->transpose();            // (n_q, d)·(d, d) → (n_q, d)
    d_keys_input = d_k_all * t.w_k->transpose();                     // (n_k, d)
    d_keys_input.noalias() += d_v_all * t.w_v->transpose();
    if (!cross) d_queries_from += d_keys_input;                      // one input feeds Q, K and V
    return d_queries_from;
}

// [SECTION] The block

// From d(layer output) to d(x_pe), the layer's input plus its additive encoding; adds the
// layer's gradients into g and the source memory's into d_memory (cross-attention).
Matrix layer_backward(const ModelConfig& c, const Trace& t, const Matrix& d_layer_output, LayerParams& g,
                      Matrix& d_memory) {
    const bool cross = c.attention == AttentionKind::Cross;
    const bool pre = c.norm == NormPlacement::Pre;
    const float eps = t.settings.block.epsilon;
    const BlockTrace& b = t.block;
    Matrix d_attention_output, d_x_pe;  // (n_q, d) each
    if (!t.has_block) {
        d_attention_output = d_layer_output;  // the layer is the attention alone
        d_x_pe = Matrix::Zero(t.n_queries, c.d_model);
    } else {
        Matrix d_residual;  // d(residual), residual = x_pe + attention (or the attention alone)
        if (pre) {
            // output = residual2 = residual + ffn(LN₂(residual)), or residual without the feed-forward
            if (c.feed_forward) {
                const Matrix d_norm2 = feed_forward_backward(b.norm2, b, c.activation, d_layer_output, g);
                d_residual = c.layer_norm ? layer_norm_backward(b.residual, b.gamma_2, eps, d_norm2, &g.gamma_2, &g.beta_2)
                                          : d_norm2;
                if (c.residual) d_residual += d_layer_output;
            } else {
                d_residual = d_layer_output;
            }
        } else {
            // output = LN₂(norm1 + ffn(norm1)), norm1 = LN₁(residual); without the feed-forward, norm1
            Matrix d_norm1;
            if (c.feed_forward) {
                const Matrix d_residual2 =
                    c.layer_norm ? layer_norm_backward(b.residual2, b.gamma_2, eps, d_layer_output, &g.gamma_2, &g.beta_2)
                                 : d_layer_output;
                d_norm1 = feed_forward_backward(b.norm1, b, c.activation, d_residual2, g);
                if (c.residual) d_norm1 += d_residual2;
            } else {
                d_norm1 = d_layer_output;
            }
            d_residual = c.layer_norm ? layer_norm_backward(b.residual, b.gamma_1, eps, d_norm1, &g.gamma_1, &g.beta_1)
                                      : d_norm1;
        }
        d_attention_output = d_residual;
        d_x_pe = c.residual ? d_residual : Matrix::Zero(t.n_queries, c.d_model);
    }
    Matrix d_keys_input;
    const Matrix d_attention_input = attention_backward(t, cross, d_attention_output, g, d_keys_input);
    if (cross) d_memory += d_keys_input;
    // A pre-norm block's attention read LN₁(x_pe)
    if (t.has_block && pre && c.layer_norm)
        d_x_pe += layer_norm_backward(t.x_pe, b.gamma_1, eps, d_attention_input, &g.gamma_1, &g.beta_1);
    else
        d_x_pe += d_attention_input;
    return d_x_pe;
}

}  // namespace

// [SECTION] The model

void backward(const Model& model, const ModelInput& in, const ForwardPass& f, const Matrix& dlogits, ModelParams& grads) {
    const ModelConfig& c = model.config;
    const ModelParams& p = model.params;
    const bool cross = c.attention == AttentionKind::Cross;
    // logits = h·W_U + b_U
    grads.unembedding.noalias() += f.final_output.transpose() * dlogits;   // (d, n)·(n, V) → (d, V)
    grads.unembedding_bias += dlogits.colwise().sum();                     // (1, V)
    Matrix d_x = dlogits * p.unembedding.transpose();                      // (n, V)·(V, d) → (n, d)
    if (c.final_norm()) d_x = layer_norm_backward(f.final_input, p.final_gamma, 1e-5f, d_x, &grads.final_gamma, &grads.final_beta);
    Matrix d_memory;
    if (cross) d_memory = Matrix::Zero(static_cast<Eigen::Index>(in.source.size()), c.d_model);
    for (int l = c.layers - 1; l >= 0; --l)
        d_x = layer_backward(c, f.layers[static_cast<size_t>(l)], d_x, grads.layers[static_cast<size_t>(l)], d_memory);
    // x₀ = E[tokens] + PE: each row's gradient goes to its token's row (and its position's)
    const bool learned = c.positional == PositionalEncoding::Learned;
    for (size_t i = 0; i < in.tokens.size(); ++i) {
        const auto row = static_cast<Eigen::Index>(i);
        grads.token_embedding.row(in.tokens[i]) += d_x.row(row);
        if (learned) grads.position_embedding.row(row) += d_x.row(row);
    }
    for (size_t j = 0; cross && j < in.source.size(); ++j) {
        const auto row = static_cast<Eigen::Index>(j);
        grads.token_embedding.row(in.source[j]) += d_memory.row(row);
        if (learned) grads.position_embedding.row(row) += d_memory.row(row);
    }
}

}  // namespace attn::train
