// Differential attention (DiffLlama) against a plain loop in double written from its formula: each
// head's softmax, λ from its four vectors, each pair's two maps reading the pair's values side by
// side, the difference, the RMSNorm over the pair's 2·d_k numbers, (1 − λ_init) and W_O. The decode
// path against the full pass, the scenario file, the ablation of a pair, and the refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "attention/serialize.hpp"
#include "generate/decode.hpp"
#include "joined.hpp"
#include "plain_double.hpp"
#include "model/stack.hpp"
#include "tensor/random.hpp"

using namespace attn;

namespace {

constexpr int kDiffTokens = 6, kDiffModel = 8, kDiffHeads = 4, kDiffKvHeads = 2, kDiffHeadDim = 3;

Vector diff_vector(int n, std::uint64_t seed) { return normal_matrix(1, n, seed, 0.5f).row(0); }

// Every weight given: 4 heads in pairs (1, 3) and (2, 4), reading 2 K/V heads, causal, biases on Q and V.
Scenario diff_scenario() {
    Scenario s;
    s.name = "differential";
    s.d_model = kDiffModel;
    s.heads = kDiffHeads;
    s.kv_heads = kDiffKvHeads;
    s.head_dim = kDiffHeadDim;
    s.mask = MaskKind::Causal;
    s.target.embeddings = normal_matrix(kDiffTokens, kDiffModel, 901);
    s.w_q = normal_matrix(kDiffModel, kDiffHeads * kDiffHeadDim, 902, 0.6f);
    s.w_k = normal_matrix(kDiffModel, kDiffKvHeads * kDiffHeadDim, 903, 0.6f);
    s.w_v = normal_matrix(kDiffModel, kDiffKvHeads * kDiffHeadDim, 904, 0.6f);
    s.w_o = normal_matrix(kDiffHeads * kDiffHeadDim, kDiffModel, 905, 0.6f);
    s.b_q = diff_vector(kDiffHeads * kDiffHeadDim, 906);
    s.b_v = diff_vector(kDiffKvHeads * kDiffHeadDim, 907);
    s.differential.on = true;
    s.differential.lambda_init = 0.356f;
    s.differential.lambda_q1 = diff_vector(kDiffHeadDim, 908);
    s.differential.lambda_k1 = diff_vector(kDiffHeadDim, 909);
    s.differential.lambda_q2 = diff_vector(kDiffHeadDim, 910);
    s.differential.lambda_k2 = diff_vector(kDiffHeadDim, 911);
    return s;
}

using Dense = Eigen::MatrixXd;
Dense as_dense(const Matrix& m) { return m.cast<double>(); }

struct DiffPlain {
    std::vector<Dense> maps;  // each head's softmax (n × n)
    double lambda = 0;
    Dense normed;             // (n × H·d_k): what W_O reads
    Dense output;             // (n × d_model)
};

// The layer as DiffLlamaAttention computes it, in double, one number at a time.
DiffPlain diff_plain(const Scenario& s) {
    const int n = kDiffTokens, P = kDiffHeads / 2, group = kDiffHeads / kDiffKvHeads;
    const Dense x = as_dense(s.target.embeddings);
    Dense q = x * as_dense(s.w_q.get()), k = x * as_dense(s.w_k.get()), v = x * as_dense(s.w_v.get());
    for (int i = 0; i < n; ++i) {
        q.row(i) += as_dense(s.b_q);
        v.row(i) += as_dense(s.b_v);
    }
    DiffPlain out;
    for (int h = 0; h < kDiffHeads; ++h) {
        const int g = h / group;
        Dense a = Dense::Zero(n, n);
        for (int i = 0; i < n; ++i) {
            double max_score = -INFINITY;
            std::vector<double> score(static_cast<size_t>(n));
            for (int j = 0; j <= i; ++j) {
                double dot = 0;
                for (int c = 0; c < kDiffHeadDim; ++c) dot += q(i, h * kDiffHeadDim + c) * k(j, g * kDiffHeadDim + c);
                score[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(kDiffHeadDim));
                max_score = std::max(max_score, score[static_cast<size_t>(j)]);
            }
            double sum = 0;
            for (int j = 0; j <= i; ++j) sum += a(i, j) = std::exp(score[static_cast<size_t>(j)] - max_score);
            for (int j = 0; j <= i; ++j) a(i, j) /= sum;
        }
        out.maps.push_back(a);
    }
    const auto term = [](const Vector& a, const Vector& b) {
        double sum = 0;
        for (int c = 0; c < kDiffHeadDim; ++c) sum += static_cast<double>(a(c)) * b(c);
        return std::exp(sum);
    };
    const DifferentialAttention& d = s.differential;
    out.lambda = term(d.lambda_q1, d.lambda_k1) - term(d.lambda_q2, d.lambda_k2) + d.lambda_init;
    out.normed = Dense::Zero(n, kDiffHeads * kDiffHeadDim);
    for (int i = 0; i < n; ++i)
        for (int p = 0; p < P; ++p) {
            std::vector<double> o(2 * kDiffHeadDim, 0.0);
            for (int half = 0; half < 2; ++half) {
                const int g = (p + half * P) / group;  // the values of head p + half·P
                for (int j = 0; j < n; ++j)
                    for (int c = 0; c < kDiffHeadDim; ++c)
                        o[static_cast<size_t>(half * kDiffHeadDim + c)] +=
                            (out.maps[static_cast<size_t>(p)](i, j) - out.lambda * out.maps[static_cast<size_t>(p + P)](i, j)) * v(j, g * kDiffHeadDim + c);
            }
            double mean_square = 0;
            for (double value : o) mean_square += value * value / (2.0 * kDiffHeadDim);
            for (int c = 0; c < 2 * kDiffHeadDim; ++c)
                out.normed(i, p * 2 * kDiffHeadDim + c) = (1.0 - d.lambda_init) * o[static_cast<size_t>(c)] / std::sqrt(mean_square + s.block.epsilon);
        }
    out.output = out.normed * as_dense(s.w_o.get());
    return out;
}

}  // namespace

TEST_CASE("differential attention: the maps, λ, each pair's normed difference and the output as a plain loop in double computes them") {
    const Scenario s = diff_scenario();
    const Trace t = run(s);
    REQUIRE(t.ok);
    const DiffPlain want = diff_plain(s);
    for (int h = 0; h < kDiffHeads; ++h) CHECK(testing::max_gap(t.head[static_cast<size_t>(h)].weights, want.maps[static_cast<size_t>(h)]) < 1e-6);
    CHECK(std::abs(t.differential.lambda - want.lambda) < 1e-6);
    CHECK(t.differential.pairs == 2);
    CHECK(t.d_v == 2 * kDiffHeadDim);  // a head's map reads its pair's two values
    CHECK(t.concat.cols() == kDiffHeads * 2 * kDiffHeadDim);
    CHECK(testing::max_gap(t.differential.normed, want.normed) < 1e-5);
    CHECK(testing::max_gap(t.output, want.output) < 1e-5);
    // Head 2's values are [V of head 2 | V of head 4]: K/V head 1's, then K/V head 2's
    const Matrix v = s.target.embeddings * s.w_v.get();
    CHECK(testing::max_gap(t.head[1].v.leftCols(kDiffHeadDim), as_dense(v.leftCols(kDiffHeadDim)).rowwise() + as_dense(s.b_v.leftCols(kDiffHeadDim)).row(0)) < 1e-6);
    CHECK(testing::max_gap(t.head[1].v.rightCols(kDiffHeadDim), as_dense(v.rightCols(kDiffHeadDim)).rowwise() + as_dense(s.b_v.rightCols(kDiffHeadDim)).row(0)) < 1e-6);
    // A λ of 0 leaves each pair its first map's reading, normed
    Scenario plain_pairs = s;
    plain_pairs.differential.lambda_init = 0.0f;
    plain_pairs.differential.lambda_q1 = plain_pairs.differential.lambda_q2 = Vector();
    plain_pairs.differential.lambda_k1 = plain_pairs.differential.lambda_k2 = Vector();
    const Trace zero = run(plain_pairs);
    REQUIRE(zero.ok);
    CHECK(zero.differential.lambda == 0.0f);
    CHECK(testing::max_gap(zero.differential.difference, as_dense(zero.concat.leftCols(2 * 2 * kDiffHeadDim))) == 0.0);
}

TEST_CASE("differential attention: an output-only run and one token at a time with the cache give the full pass's output") {
    const Scenario s = diff_scenario();
    const Trace full = run(s);
    REQUIRE(full.ok);
    RunOptions options;
    options.detail = Detail::OutputOnly;
    const Trace streamed = run(s, options);
    REQUIRE(streamed.ok);
    CHECK((streamed.output - full.output).cwiseAbs().maxCoeff() < 1e-5f);
    generate::LayerCache cache = generate::empty_cache(s);
    CHECK(cache.value_dim() == kDiffHeadDim);  // the cache keeps each K/V head's own values, not the pairs'
    for (int p = 0; p < kDiffTokens; ++p) {
        const Matrix row = generate::decode_layer(s, p, s.target.embeddings.row(p), cache);
        INFO("token " << p + 1);
        CHECK((row - full.output.row(p)).cwiseAbs().maxCoeff() < 1e-5f);
    }
}

TEST_CASE("differential attention: a scenario file keeps λ_init and its vectors, and ablating either head of a pair silences the pair") {
    const Scenario s = diff_scenario();
    const ScenarioLoad back = scenario_from_json(scenario_to_json(s), "differential.json");
    REQUIRE(back.errors.empty());
    REQUIRE(back.scenario);
    CHECK(back.scenario->differential.on);
    CHECK(back.scenario->differential.lambda_init == s.differential.lambda_init);
    CHECK(back.scenario->differential.lambda_q2 == s.differential.lambda_q2);
    CHECK((run(*back.scenario).output - run(s).output).cwiseAbs().maxCoeff() == 0.0f);
    const ScenarioLoad unknown = scenario_from_text(R"({"d_model": 4, "heads": 2, "differential": {"lambda": 0.5}})", "bad.json");
    REQUIRE_FALSE(unknown.errors.empty());
    INFO(unknown.errors.front());
    CHECK(testing::says(unknown.errors, "'differential.lambda'"));

    // Head 4 is pair 2's second map: its ablation zeroes pair 2's rows of W_O, [6, 12), as head 2's does
    for (int head : {1, 3}) {
        Scenario ablated = s;
        stack::Ablation a;
        a.heads.insert({0, head});
        REQUIRE(stack::ablate(ablated, a, 0));
        const Matrix& w_o = ablated.w_o.get();
        CHECK(w_o.middleRows(2 * kDiffHeadDim, 2 * kDiffHeadDim).isZero(0.0f));
        CHECK_FALSE(w_o.topRows(2 * kDiffHeadDim).isZero(0.0f));
        const Trace t = run(ablated);
        REQUIRE(t.ok);
        const DiffPlain want = diff_plain(ablated);
        CHECK(testing::max_gap(t.output, want.normed.leftCols(2 * kDiffHeadDim) * as_dense(s.w_o.get().topRows(2 * kDiffHeadDim))) < 1e-5);
    }
}

TEST_CASE("differential attention: an odd head count, latent attention, the output gate, sinks, direct input and λ vectors of the wrong length are refused by name") {
    const auto refused = [](const Scenario& s, const std::string& word) {
        const std::vector<std::string> errors = validate(s);
        REQUIRE_FALSE(errors.empty());
        INFO(errors.front());
        CHECK(testing::says(errors, word));
    };
    const Scenario s = diff_scenario();
    REQUIRE(validate(s).empty());
    Scenario bad = s;
    bad.heads = 3;
    bad.kv_heads = 3;
    bad.w_q = bad.w_k = bad.w_v = SharedMatrix();
    bad.w_o = SharedMatrix();
    bad.b_q = bad.b_v = Vector();
    refused(bad, "even number of heads");
    bad = s;
    bad.output_gate.on = true;
    refused(bad, "output gate");
    bad = s;
    bad.sinks = Vector::Ones(kDiffHeads);
    refused(bad, "sinks");
    bad = s;
    bad.differential.lambda_k2 = Vector::Ones(kDiffHeadDim + 1);
    refused(bad, "lambda_k2");
    bad = s;
    bad.input = InputMode::Direct;
    bad.q = Matrix::Ones(3, 4);
    bad.k = bad.v = Matrix::Ones(3, 2);
    bad.head_dim = 0;
    refused(bad, "needs embeddings");
}
