// Training speed: wall time until the held-out accuracy reaches the target below, and the
// training throughput in tokens per second (the batch's target tokens, forward and
// backward, evaluation not counted). One line per case, and each time as a fraction of its
// budget (reverse and copy: 60 s to 99%; induction with 2 layers: 180 s to 95%).
//
// Then the same training step written naively, as a baseline for the throughput: one layer,
// 2 heads, d_model 32, learned positions, causal mask, residual, biases (the first case's
// model), every product a scalar triple loop over the matrices' elements, no trace kept,
// backward and AdamW by hand. It is checked against the engine first (the loss and the
// gradient of one batch), so both time the same step.
//
//   train_bench [--quick]      --quick: one seed per case instead of three
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <string>
#include <vector>

#include "train/backward.hpp"
#include "train/trainer.hpp"

using namespace attn;
using namespace attn::train;

namespace {

struct Case {
    const char* name;
    TaskKind task;
    int layers;
    PositionalEncoding positional;
    double target;
    double budget_seconds;
};

struct Result {
    bool reached = false;
    int steps = 0;
    double seconds = 0.0;        // wall time, evaluation included
    double train_seconds = 0.0;  // steps only
    long long tokens = 0;
};

Result time_to_target(const Case& c, std::uint64_t seed) {
    TrainSettings s;
    s.task.kind = c.task;
    s.model.d_model = 32;
    s.model.heads = 2;
    s.model.layers = c.layers;
    s.model.positional = c.positional;
    s.seed = seed;
    s.evaluate_every = 0;
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    Result r;
    if (!trainer) {
        for (const std::string& e : errors) std::fprintf(stderr, "%s: %s\n", c.name, e.c_str());
        return r;
    }
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    while (!r.reached) {
        const auto before = clock::now();
        for (int i = 0; i < 25; ++i) {
            trainer->step();
            for (int b = 0; b < s.batch_size; ++b) r.tokens += target_length(s.task);  // an upper bound for induction
        }
        r.train_seconds += std::chrono::duration<double>(clock::now() - before).count();
        r.steps = trainer->steps_done();
        r.reached = trainer->evaluate().accuracy >= c.target;
        r.seconds = std::chrono::duration<double>(clock::now() - start).count();
        if (r.seconds > c.budget_seconds) break;
    }
    return r;
}


// [SECTION] The naive baseline

// C = A·B with the textbook triple loop: (n,k)·(k,m) → (n,m).
Matrix naive_product(const Matrix& a, const Matrix& b) {
    Matrix c(a.rows(), b.cols());
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < b.cols(); ++j) {
            float sum = 0.0f;
            for (Eigen::Index k = 0; k < a.cols(); ++k) sum += a(i, k) * b(k, j);
            c(i, j) = sum;
        }
    return c;
}
Matrix naive_transpose(const Matrix& a) {
    Matrix t(a.cols(), a.rows());
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j) t(j, i) = a(i, j);
    return t;
}
void add_bias(Matrix& m, const Vector& b) {
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) m(i, j) += b(0, j);
}
void add_column_sums(const Matrix& m, Vector& into) {
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) into(0, j) += m(i, j);
}
void add_into(Matrix& a, const Matrix& b) {
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j) a(i, j) += b(i, j);
}

// Forward and backward of one example through the 1-layer model; adds into grads, returns
// the loss's share (weight · Σ cross-entropy over the scored rows).
double naive_example(const Model& model, const Example& e, float weight, ModelParams& grads) {
    const ModelParams& p = model.params;
    const LayerParams& l = p.layers[0];
    const int n = static_cast<int>(e.input.tokens.size()), d = model.config.d_model, heads = model.config.heads, d_k = d / heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d_k));
    // x₀ = E[tokens] + P[positions]  (n,d)
    Matrix x0(n, d);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < d; ++j) x0(i, j) = p.token_embedding(e.input.tokens[static_cast<size_t>(i)], j) + p.position_embedding(i, j);
    // Q, K, V = x₀W + b  (n,d)·(d,d) → (n,d)
    Matrix q = naive_product(x0, l.w_q), k = naive_product(x0, l.w_k), v = naive_product(x0, l.w_v);
    add_bias(q, l.b_q);
    add_bias(k, l.b_k);
    add_bias(v, l.b_v);
    // Per head: A = softmax(causal(QₕKₕᵀ/√d_k)), Oₕ = A·Vₕ
    std::vector<Matrix> weights(static_cast<size_t>(heads));
    Matrix concat = Matrix::Zero(n, d);
    for (int h = 0; h < heads; ++h) {
        Matrix& a = weights[static_cast<size_t>(h)];
        a = Matrix::Zero(n, n);
        for (int i = 0; i < n; ++i) {
            float largest = -INFINITY;
            for (int j = 0; j <= i; ++j) {
                float score = 0.0f;
                for (int c = 0; c < d_k; ++c) score += q(i, h * d_k + c) * k(j, h * d_k + c);
                a(i, j) = score * scale;
                largest = std::max(largest, a(i, j));
            }
            float sum = 0.0f;
            for (int j = 0; j <= i; ++j) sum += a(i, j) = std::exp(a(i, j) - largest);
            for (int j = 0; j <= i; ++j) a(i, j) /= sum;
            for (int j = 0; j <= i; ++j)
                for (int c = 0; c < d_k; ++c) concat(i, h * d_k + c) += a(i, j) * v(j, h * d_k + c);
        }
    }
    // x₁ = x₀ + concat·W_O + b_O; logits = x₁·W_U + b_U  (n,V)
    Matrix x1 = naive_product(concat, l.w_o);
    add_bias(x1, l.b_o);
    add_into(x1, x0);
    Matrix logits = naive_product(x1, p.unembedding);
    add_bias(logits, p.unembedding_bias);
    // Cross-entropy of the scored rows; dlogits = weight·(softmax − onehot)
    double loss = 0.0;
    Matrix dlogits = Matrix::Zero(logits.rows(), logits.cols());
    for (int i = 0; i < n; ++i) {
        if (!e.scored[static_cast<size_t>(i)]) continue;
        float largest = -INFINITY, sum = 0.0f;
        for (Eigen::Index c = 0; c < logits.cols(); ++c) largest = std::max(largest, logits(i, c));
        for (Eigen::Index c = 0; c < logits.cols(); ++c) sum += std::exp(logits(i, c) - largest);
        const int target = e.targets[static_cast<size_t>(i)];
        loss += weight * (std::log(sum) - (logits(i, target) - largest));
        for (Eigen::Index c = 0; c < logits.cols(); ++c) dlogits(i, c) = weight * std::exp(logits(i, c) - largest) / sum;
        dlogits(i, target) -= weight;
    }
    // Backward, step by step in reverse.
    add_into(grads.unembedding, naive_product(naive_transpose(x1), dlogits));  // (d,n)·(n,V)
    add_column_sums(dlogits, grads.unembedding_bias);
    const Matrix dx1 = naive_product(dlogits, naive_transpose(p.unembedding));  // (n,V)·(V,d)
    LayerParams& g = grads.layers[0];
    add_into(g.w_o, naive_product(naive_transpose(concat), dx1));
    add_column_sums(dx1, g.b_o);
    const Matrix dconcat = naive_product(dx1, naive_transpose(l.w_o));
    Matrix dq = Matrix::Zero(n, d), dk = Matrix::Zero(n, d), dv = Matrix::Zero(n, d);
    for (int h = 0; h < heads; ++h) {
        const Matrix& a = weights[static_cast<size_t>(h)];
        for (int i = 0; i < n; ++i) {
            // dA = dOₕ·Vₕᵀ; dS = A ⊙ (dA − Σ_j A·dA) (the softmax's Jacobian, row i), ÷√d_k
            std::vector<float> da(static_cast<size_t>(i + 1));
            float dot = 0.0f;
            for (int j = 0; j <= i; ++j) {
                float sum = 0.0f;
                for (int c = 0; c < d_k; ++c) sum += dconcat(i, h * d_k + c) * v(j, h * d_k + c);
                da[static_cast<size_t>(j)] = sum;
                dot += sum * a(i, j);
            }
            for (int j = 0; j <= i; ++j) {
                const float ds = a(i, j) * (da[static_cast<size_t>(j)] - dot) * scale;
                for (int c = 0; c < d_k; ++c) {
                    dq(i, h * d_k + c) += ds * k(j, h * d_k + c);
                    dk(j, h * d_k + c) += ds * q(i, h * d_k + c);
                    dv(j, h * d_k + c) += a(i, j) * dconcat(i, h * d_k + c);
                }
            }
        }
    }
    const Matrix x0t = naive_transpose(x0);
    add_into(g.w_q, naive_product(x0t, dq));
    add_into(g.w_k, naive_product(x0t, dk));
    add_into(g.w_v, naive_product(x0t, dv));
    add_column_sums(dq, g.b_q);
    add_column_sums(dk, g.b_k);
    add_column_sums(dv, g.b_v);
    Matrix dx0 = dx1;  // the residual
    add_into(dx0, naive_product(dq, naive_transpose(l.w_q)));
    add_into(dx0, naive_product(dk, naive_transpose(l.w_k)));
    add_into(dx0, naive_product(dv, naive_transpose(l.w_v)));
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < d; ++j) {
            grads.token_embedding(e.input.tokens[static_cast<size_t>(i)], j) += dx0(i, j);
            grads.position_embedding(i, j) += dx0(i, j);
        }
    return loss;
}

struct NaiveResult {
    double max_loss_difference = 0.0, max_gradient_error = 0.0;
    double tokens_per_second = 0.0, engine_tokens_per_second = 0.0;
};

NaiveResult naive_baseline(int steps) {
    TrainSettings s;
    s.task.kind = TaskKind::Reverse;
    s.model.d_model = 32;
    s.model.heads = 2;
    s.model.layers = 1;
    s.model.positional = PositionalEncoding::Learned;
    s.evaluate_every = 0;
    s = fitted(s);
    Model model = init_model(s.model, task_vocabulary(s.task), 1);
    Rng rng(7);
    NaiveResult r;
    // The same step: on one batch, the engine's loss and gradient against the naive ones.
    {
        std::vector<Example> batch;
        int scored = 0;
        for (int b = 0; b < s.batch_size; ++b) {
            batch.push_back(make_example(s.task, rng));
            for (bool c : batch.back().scored) scored += c;
        }
        const float weight = 1.0f / static_cast<float>(scored);
        ModelParams engine = zeros_like(model.params), naive = zeros_like(model.params);
        double engine_loss = 0.0, naive_loss = 0.0;
        for (const Example& e : batch) {
            const ForwardPass f = forward(model, e.input);
            Matrix dlogits = Matrix::Zero(f.logits.rows(), f.logits.cols());
            engine_loss += weight * cross_entropy(f.logits, e.targets, e.scored, weight, &dlogits);  // the unweighted sum
            backward(model, e.input, f, dlogits, engine);
            naive_loss += naive_example(model, e, weight, naive);
        }
        r.max_loss_difference = std::abs(engine_loss - naive_loss);
        // Relative to the largest gradient of all (b_K's is 0 in exact arithmetic: a bias on the
        // keys adds one constant to a row's scores, which the softmax ignores).
        const std::vector<ParamView> a = parameter_views(engine), b = parameter_views(naive);
        double largest = 1e-12;
        for (const ParamView& t : a) largest = std::max(largest, static_cast<double>(t.map().cwiseAbs().maxCoeff()));
        for (size_t t = 0; t < a.size(); ++t)
            r.max_gradient_error =
                std::max(r.max_gradient_error, static_cast<double>((a[t].map() - b[t].map()).cwiseAbs().maxCoeff()) / largest);
    }
    // Throughput: `steps` naive steps (batch, forward, backward, clipping, AdamW) …
    using clock = std::chrono::steady_clock;
    ModelParams m = zeros_like(model.params), v = zeros_like(model.params);
    long long tokens = 0;
    auto start = clock::now();
    for (int step = 1; step <= steps; ++step) {
        ModelParams grads = zeros_like(model.params);
        std::vector<Example> batch;
        int scored = 0;
        for (int b = 0; b < s.batch_size; ++b) {
            batch.push_back(make_example(s.task, rng));
            for (bool c : batch.back().scored) scored += c;
            tokens += target_length(s.task);
        }
        for (const Example& e : batch) naive_example(model, e, 1.0f / static_cast<float>(scored), grads);
        double norm2 = 0.0;
        for (const ParamView& gv : parameter_views(grads))
            for (Eigen::Index i = 0; i < gv.size(); ++i) norm2 += static_cast<double>(gv.data[i]) * gv.data[i];
        const float clip = std::sqrt(norm2) > s.clip_norm ? static_cast<float>(s.clip_norm / std::sqrt(norm2)) : 1.0f;
        const float rate = step <= s.warmup_steps ? s.learning_rate * static_cast<float>(step) / static_cast<float>(s.warmup_steps) : s.learning_rate;
        const std::vector<ParamView> pv = parameter_views(model.params), gv = parameter_views(grads), mv = parameter_views(m),
                                     vv = parameter_views(v);
        for (size_t t = 0; t < pv.size(); ++t) {
            const float decay = pv[t].rows > 1 ? s.weight_decay : 0.0f;
            for (Eigen::Index i = 0; i < pv[t].size(); ++i) {
                const float grad = gv[t].data[i] * clip;
                mv[t].data[i] = s.beta1 * mv[t].data[i] + (1.0f - s.beta1) * grad;
                vv[t].data[i] = s.beta2 * vv[t].data[i] + (1.0f - s.beta2) * grad * grad;
                const float m_hat = mv[t].data[i] / (1.0f - std::pow(s.beta1, static_cast<float>(step)));
                const float v_hat = vv[t].data[i] / (1.0f - std::pow(s.beta2, static_cast<float>(step)));
                pv[t].data[i] -= rate * (m_hat / (std::sqrt(v_hat) + s.adam_epsilon) + decay * pv[t].data[i]);
            }
        }
    }
    r.tokens_per_second = static_cast<double>(tokens) / std::chrono::duration<double>(clock::now() - start).count();
    // … and as many of the trainer's.
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    tokens = 0;
    start = clock::now();
    for (int step = 0; step < steps; ++step) {
        trainer->step();
        tokens += static_cast<long long>(s.batch_size) * target_length(s.task);
    }
    r.engine_tokens_per_second = static_cast<double>(tokens) / std::chrono::duration<double>(clock::now() - start).count();
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const std::vector<Case> cases{
        {"reverse, learned positions", TaskKind::Reverse, 1, PositionalEncoding::Learned, 0.99, 60.0},
        {"copy, learned positions", TaskKind::Copy, 1, PositionalEncoding::Learned, 0.99, 60.0},
        {"reverse, sinusoidal", TaskKind::Reverse, 1, PositionalEncoding::Sinusoidal, 0.99, 60.0},
        {"copy, sinusoidal", TaskKind::Copy, 1, PositionalEncoding::Sinusoidal, 0.99, 60.0},
        {"induction, 2 layers, learned", TaskKind::Induction, 2, PositionalEncoding::Learned, 0.95, 180.0},
    };
    std::printf("1 or 2 layers, 2 heads, d_model 32, batch 16; accuracy on 256 held-out examples every 25 steps\n");
    std::printf("%-30s %5s %7s %9s %10s %12s\n", "case", "seed", "steps", "seconds", "of budget", "tokens/s");
    for (const Case& c : cases)
        for (std::uint64_t seed = 1; seed <= (quick ? 1u : 3u); ++seed) {
            const Result r = time_to_target(c, seed);
            std::printf("%-30s %5llu %7d %9.3f %9.4f%s %12.0f\n", c.name, static_cast<unsigned long long>(seed), r.steps,
                        r.seconds, r.seconds / c.budget_seconds, r.reached ? " " : "!", r.tokens / r.train_seconds);
        }
    std::printf("! = the target was not reached within the budget\n");
    const NaiveResult naive = naive_baseline(quick ? 100 : 300);
    std::printf("\nthe same step written naively (scalar loops, no trace; 1 layer, 2 heads, d_model 32, reverse, batch 16)\n");
    std::printf("  agrees with the engine on one batch: loss within %.2g, gradient within %.2g (relative to the largest gradient)\n",
                naive.max_loss_difference, naive.max_gradient_error);
    std::printf("  naive:   %12.0f tokens/s\n  trainer: %12.0f tokens/s (the engine's forward, traces kept, and the written-out backward)\n",
                naive.tokens_per_second, naive.engine_tokens_per_second);
    return naive.max_loss_difference < 1e-4 && naive.max_gradient_error < 1e-3 ? 0 : 1;
}
