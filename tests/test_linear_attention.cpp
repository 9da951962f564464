// Gated DeltaNet (Qwen3-Next's linear-attention layers) against a plain loop in double written
// from its formula (the convolution, SiLU, the L2 norms, β, the decay, the delta rule with its
// full state, the gated RMSNorm and W_O); its implied matrix against the product of the
// recurrence's d_k × d_k steps, and A·V against the recurrence's output; grouped key heads,
// output-only runs, and its refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "attention/engine.hpp"
#include "attention/linear_attention.hpp"
#include "tensor/random.hpp"
#include "attention/serialize.hpp"
#include "plain_double.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

using Dense = Eigen::MatrixXd;

constexpr int kTokens = 7, kModel = 6, kHeads = 4, kKeyHeads = 2, kKeyDim = 3, kValueDim = 2, kKernel = 3;

Vector random_vector(int n, std::uint64_t seed, float offset = 0.0f) {
    return (normal_matrix(1, n, seed, 0.5f).array() + offset).matrix().row(0);
}

// Every weight given; two value heads read each key head.
Scenario delta_scenario() {
    Scenario s;
    s.name = "delta";
    s.d_model = kModel;
    s.heads = kHeads;
    s.head_dim = kValueDim;
    s.mask = MaskKind::Causal;
    s.target.embeddings = normal_matrix(kTokens, kModel, 801);
    s.delta_net.on = true;
    s.delta_net.key_heads = kKeyHeads;
    s.delta_net.key_dim = kKeyDim;
    s.delta_net.conv_kernel = kKernel;
    s.w_q = normal_matrix(kModel, kKeyHeads * kKeyDim, 802, 0.6f);
    s.w_k = normal_matrix(kModel, kKeyHeads * kKeyDim, 803, 0.6f);
    s.w_v = normal_matrix(kModel, kHeads * kValueDim, 804, 0.6f);
    s.w_o = normal_matrix(kHeads * kValueDim, kModel, 805, 0.6f);
    s.delta_net.w_z = normal_matrix(kModel, kHeads * kValueDim, 806, 0.6f);
    s.delta_net.w_b = normal_matrix(kModel, kHeads, 807, 0.6f);
    s.delta_net.w_a = normal_matrix(kModel, kHeads, 808, 0.6f);
    s.delta_net.conv = normal_matrix(2 * kKeyHeads * kKeyDim + kHeads * kValueDim, kKernel, 809, 0.7f);
    s.delta_net.a_log = random_vector(kHeads, 810, -0.5f);
    s.delta_net.dt_bias = random_vector(kHeads, 811, 0.3f);
    s.delta_net.norm = random_vector(kValueDim, 812, 1.0f);
    s.block.epsilon = 1e-6f;
    return s;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct Plain {
    std::vector<Dense> q, k, v, implied;  // per value head
    Dense beta, decay;                    // (n × H)
    Dense heads_out;                      // (n × H·d_v): each head's o
    Dense output;                         // the layer's output (n × d_model)
};

// The layer written out in double, from its formula alone.
Plain plain_delta(const Scenario& s) {
    const Dense x = s.target.embeddings.cast<double>();
    const int n = kTokens, key_width = kKeyHeads * kKeyDim, value_width = kHeads * kValueDim, channels = 2 * key_width + value_width;
    Dense mixed(n, channels);
    mixed << x * s.w_q->cast<double>(), x * s.w_k->cast<double>(), x * s.w_v->cast<double>();
    Dense conv(n, channels);
    for (int t = 0; t < n; ++t)
        for (int c = 0; c < channels; ++c) {
            double sum = 0.0;
            for (int i = 0; i < kKernel; ++i) {
                const int row = t - (kKernel - 1) + i;
                if (row >= 0) sum += double(s.delta_net.conv(c, i)) * mixed(row, c);
            }
            conv(t, c) = silu(sum);
        }
    const Dense b = x * s.delta_net.w_b->cast<double>(), a = x * s.delta_net.w_a->cast<double>(), z = x * s.delta_net.w_z->cast<double>();
    Plain p;
    p.beta.resize(n, kHeads);
    p.decay.resize(n, kHeads);
    for (int t = 0; t < n; ++t)
        for (int h = 0; h < kHeads; ++h) {
            p.beta(t, h) = sigmoid(b(t, h));
            p.decay(t, h) = -std::exp(double(s.delta_net.a_log(h))) * std::log(1.0 + std::exp(a(t, h) + s.delta_net.dt_bias(h)));
        }
    p.heads_out.resize(n, value_width);
    for (int h = 0; h < kHeads; ++h) {
        const int g = h / (kHeads / kKeyHeads);
        Dense q = conv.middleCols(g * kKeyDim, kKeyDim), k = conv.middleCols(key_width + g * kKeyDim, kKeyDim);
        const Dense v = conv.middleCols(2 * key_width + h * kValueDim, kValueDim);
        for (int t = 0; t < n; ++t) {
            q.row(t) /= std::sqrt(q.row(t).squaredNorm() + 1e-6);
            k.row(t) /= std::sqrt(k.row(t).squaredNorm() + 1e-6);
        }
        q /= std::sqrt(double(kKeyDim));
        // The recurrence, as transformers' torch_recurrent_gated_delta_rule writes it
        Dense state = Dense::Zero(kKeyDim, kValueDim);
        for (int t = 0; t < n; ++t) {
            state *= std::exp(p.decay(t, h));
            const Eigen::RowVectorXd kv_mem = k.row(t) * state;
            const Eigen::RowVectorXd delta = (v.row(t) - kv_mem) * p.beta(t, h);
            state += k.row(t).transpose() * delta;
            p.heads_out.block(t, h * kValueDim, 1, kValueDim) = q.row(t) * state;
        }
        // The implied matrix from its definition: A[t,j] = β_j·q_tᵀ·M_t⋯M_{j+1}·k_j, M_s = e^{g_s}(I − β_s k_s k_sᵀ)
        Dense implied = Dense::Zero(n, n);
        for (int t = 0; t < n; ++t)
            for (int j = 0; j <= t; ++j) {
                Dense product = Dense::Identity(kKeyDim, kKeyDim);
                for (int step = t; step > j; --step)
                    product = product * (std::exp(p.decay(step, h)) *
                                         (Dense::Identity(kKeyDim, kKeyDim) - p.beta(step, h) * k.row(step).transpose() * k.row(step)));
                implied(t, j) = p.beta(j, h) * (q.row(t) * product * k.row(j).transpose())(0, 0);
            }
        p.q.push_back(q);
        p.k.push_back(k);
        p.v.push_back(v);
        p.implied.push_back(implied);
    }
    // Each head's RMSNorm ⊙ w, ⊙ SiLU(z), then W_O
    Dense gated(n, value_width);
    for (int t = 0; t < n; ++t)
        for (int h = 0; h < kHeads; ++h) {
            const auto o = p.heads_out.block(t, h * kValueDim, 1, kValueDim);
            const double rms = 1.0 / std::sqrt(o.squaredNorm() / kValueDim + 1e-6);
            for (int c = 0; c < kValueDim; ++c)
                gated(t, h * kValueDim + c) = o(0, c) * rms * s.delta_net.norm(c) * silu(z(t, h * kValueDim + c));
        }
    p.output = gated * s.w_o->cast<double>();
    return p;
}

}  // namespace

TEST_CASE("Gated DeltaNet: every step and the layer's output as a plain loop in double computes them") {
    const Scenario s = delta_scenario();
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.settings.delta_net);
    const Plain p = plain_delta(s);
    CHECK(testing::max_gap(t.linear.beta, p.beta) < 1e-5);
    CHECK(testing::max_gap(t.linear.decay, p.decay) < 1e-4);
    for (int h = 0; h < kHeads; ++h) {
        INFO("head " << h);
        const HeadTrace& head = t.head[static_cast<size_t>(h)];
        CHECK(testing::max_gap(head.q, p.q[static_cast<size_t>(h)]) < 1e-5);
        CHECK(testing::max_gap(head.k, p.k[static_cast<size_t>(h)]) < 1e-5);
        CHECK(testing::max_gap(head.v, p.v[static_cast<size_t>(h)]) < 1e-5);
        CHECK(testing::max_gap(head.output, p.heads_out.middleCols(h * kValueDim, kValueDim)) < 1e-5);
        CHECK(testing::max_gap(head.implied_weights, p.implied[static_cast<size_t>(h)]) < 1e-5);
        // no softmax step: they stay empty, and the state is d_k × d_v whatever the length
        CHECK(head.weights.size() == 0);
        CHECK(head.scores.size() == 0);
        CHECK(head.state.rows() == kKeyDim);
        CHECK(head.state.cols() == kValueDim);
    }
    CHECK(testing::max_gap(t.output, p.output) < 1e-5);
    // heads 0 and 1 read key head 0: one q and k, their own v
    CHECK(t.head[0].q == t.head[1].q);
    CHECK(t.head[0].q != t.head[2].q);
}

TEST_CASE("Gated DeltaNet: the implied matrix times V is the recurrence's output, and it is no softmax") {
    Scenario s = delta_scenario();
    s.target.embeddings = normal_matrix(40, kModel, 821, 1.5f);  // long enough for the state to forget
    const Trace t = run(s);
    REQUIRE(t.ok);
    bool negative = false, row_not_one = false;
    for (const HeadTrace& head : t.head) {
        const Matrix av = head.implied_weights * head.v;
        CHECK((av - head.output).cwiseAbs().maxCoeff() < 1e-4f * std::max(1.0f, head.output.cwiseAbs().maxCoeff()));
        // zero above the diagonal: a token reads no later one
        for (int i = 0; i < 40; ++i)
            for (int j = i + 1; j < 40; ++j) REQUIRE(head.implied_weights(i, j) == 0.0f);
        negative = negative || head.implied_weights.minCoeff() < 0.0f;
        for (int i = 0; i < 40; ++i) row_not_one = row_not_one || std::abs(head.implied_weights.row(i).sum() - 1.0f) > 0.05f;
    }
    CHECK(negative);
    CHECK(row_not_one);
    // A changed value changes the output, never A (v does not enter it)
    Scenario other = s;
    other.w_v = normal_matrix(kModel, kHeads * kValueDim, 822, 0.6f);
    const Trace u = run(other);
    REQUIRE(u.ok);
    CHECK(u.head[1].implied_weights == t.head[1].implied_weights);
    CHECK(u.head[1].output != t.head[1].output);
}

TEST_CASE("Gated DeltaNet: a decay of 0 and β of 1 over orthogonal keys is plain linear attention (A = β·q·kᵀ)") {
    // With g = 0, β = 1 and keys that are orthonormal, (I − k kᵀ) leaves every other key alone:
    // A[t,j] = q_t·k_j, the unnormalised linear attention of Katharopoulos et al.
    const int n = 3, d = 3;
    const Matrix q = normal_matrix(n, d, 831);
    const Matrix k = Matrix::Identity(d, d);
    const Vector beta = Vector::Ones(n), decay = Vector::Zero(n);
    const Matrix a = linear::implied_weights(q, k, beta, decay);
    for (int t = 0; t < n; ++t)
        for (int j = 0; j <= t; ++j) CHECK(a(t, j) == Approx(q.row(t).dot(k.row(j))).margin(1e-6));
    // A key written twice is overwritten, not added: the delta rule's correction
    Matrix k2(2, 1), v2(2, 1), q2(2, 1), state = Matrix::Zero(1, 1);
    k2 << 1.0f, 1.0f;
    v2 << 5.0f, 2.0f;
    q2 << 1.0f, 1.0f;
    const Matrix o = linear::delta_rule(q2, k2, v2, Vector::Ones(2), Vector::Zero(2), state);
    CHECK(o(1, 0) == Approx(2.0f));  // the second value replaced the first
}

TEST_CASE("Gated DeltaNet: an output-only run gives the full trace's output and its pooled implied weights") {
    const Scenario s = delta_scenario();
    const Trace full = run(s);
    RunOptions o;
    o.detail = Detail::OutputOnly;
    const Trace part = run(s, o);
    REQUIRE(full.ok);
    REQUIRE(part.ok);
    CHECK((part.output - full.output).cwiseAbs().maxCoeff() < 1e-6f);
    for (int h = 0; h < kHeads; ++h) {
        const PooledWeights& pooled = part.head[static_cast<size_t>(h)].pooled_weights;
        REQUIRE(pooled.values.rows() == kTokens);
        CHECK((pooled.values - full.head[static_cast<size_t>(h)].implied_weights).cwiseAbs().maxCoeff() < 1e-6f);
        CHECK(part.head[static_cast<size_t>(h)].implied_weights.size() == 0);
    }
}

TEST_CASE("Gated DeltaNet: the settings it has no place for, and weights of the wrong shape, are refused by name") {
    const auto refused = [](Scenario s, const std::string& word) {
        const std::vector<std::string> errors = validate(s);
        REQUIRE_FALSE(errors.empty());
        bool found = false;
        for (const std::string& e : errors) found = found || e.find(word) != std::string::npos;
        INFO(errors.front());
        CHECK(found);
    };
    Scenario s = delta_scenario();
    REQUIRE(validate(s).empty());
    Scenario bad = s;
    bad.mask = MaskKind::None;
    refused(bad, "causal");
    bad = s;
    bad.positional = PositionalEncoding::Rotary;
    refused(bad, "RoPE");
    bad = s;
    bad.qk_norm = true;
    refused(bad, "QK-norm");
    bad = s;
    bad.output_gate.on = true;
    refused(bad, "output gate");
    bad = s;
    bad.delta_net.key_heads = 3;
    refused(bad, "key_heads");
    bad = s;
    bad.delta_net.conv = Matrix::Zero(4, kKernel);
    refused(bad, "conv");
    bad = s;
    bad.w_q = Matrix::Zero(kModel, kHeads * kKeyDim);  // one per value head: W_Q has H_k heads
    refused(bad, "W_Q");
    bad = s;
    bad.delta_net.on = false;
    refused(bad, "ignored");
    bad = s;
    bad.input = InputMode::Direct;
    bad.q = bad.k = bad.v = Matrix::Ones(3, 4);
    refused(bad, "embeddings");
}

TEST_CASE("Gated DeltaNet: a scenario file keeps it, and a trace export writes implied_weights, never weights") {
    const Scenario s = delta_scenario();
    const std::string text = dump_json(scenario_to_json(s));
    const auto back = scenario_from_text(text, "delta.json");
    for (const std::string& e : back.errors) INFO(e);
    REQUIRE(back.scenario);
    CHECK(back.scenario->delta_net.on);
    CHECK(back.scenario->delta_net.key_heads == kKeyHeads);
    CHECK(back.scenario->delta_net.conv == s.delta_net.conv);
    CHECK(back.scenario->delta_net.a_log == s.delta_net.a_log);
    CHECK(run(*back.scenario).output == run(s).output);
    const nlohmann::json j = trace_to_json(run(s), true);
    CHECK(j["settings"]["delta_net"] == true);
    REQUIRE(j["heads"].size() == static_cast<size_t>(kHeads));
    for (const auto& head : j["heads"]) {
        CHECK(head.contains("implied_weights"));
        CHECK(head.contains("state"));
        CHECK_FALSE(head.contains("weights"));
        CHECK_FALSE(head.contains("scores"));
    }
    CHECK(j["linear"].contains("beta"));
    CHECK(j["linear"].contains("decay"));
    CHECK(j["linear"].contains("conv"));
    // without the weights: the layer's weights and vectors are left out
    const nlohmann::json lean = trace_to_json(run(s), false);
    CHECK_FALSE(lean["linear"].contains("w_z"));
    CHECK_FALSE(lean["linear"].contains("conv"));
    CHECK(lean["linear"].contains("beta"));
    // an unknown key of delta_net is refused by name
    nlohmann::json bad = nlohmann::json::parse(text);
    bad["delta_net"]["chunk_size"] = 64;
    const auto refused = scenario_from_json(bad, "bad.json");
    CHECK_FALSE(refused.scenario);
    bool named = false;
    for (const std::string& e : refused.errors) named = named || e.find("delta_net.chunk_size") != std::string::npos;
    CHECK(named);
}
