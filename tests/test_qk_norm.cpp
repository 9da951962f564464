// QK-norm against a plain loop in double, its scenario file and its refusals.
#include <catch2/catch.hpp>

#include <cmath>

#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "tensor/random.hpp"
#include "attention/serialize.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

// 6 tokens, d_model 8, 4 query heads of d_k 4 reading 2 K/V heads, RoPE and a causal mask:
// the norm must come after the projection and before the rotation, per head, per row.
Scenario qk_norm_scenario(bool plus_one) {
    Scenario s;
    s.name = "qk-norm";
    s.d_model = 8;
    s.heads = 4;
    s.kv_heads = 2;
    s.head_dim = 4;
    s.target.embeddings = normal_matrix(6, 8, 51);
    s.w_q = Matrix(normal_matrix(8, 16, 52) * 3.0f);
    s.w_k = Matrix(normal_matrix(8, 8, 53) * 3.0f);
    s.w_v = normal_matrix(8, 8, 54);
    s.w_o = normal_matrix(16, 8, 55);
    s.positional = PositionalEncoding::Rotary;
    s.mask = MaskKind::Causal;
    s.qk_norm = true;
    s.qk_norm_plus_one = plus_one;
    s.q_norm = normal_matrix(1, 4, 56).row(0);
    s.k_norm = normal_matrix(1, 4, 57).row(0);
    s.block.epsilon = 1e-6f;
    return s;
}

// RMSNorm of one row in double: x / √(mean(x²) + ε) · w (or 1 + w).
std::vector<double> rms_normed(const std::vector<double>& x, const Vector& w, bool plus_one, double epsilon) {
    double mean_square = 0.0;
    for (double v : x) mean_square += v * v / static_cast<double>(x.size());
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i)
        out[i] = x[i] / std::sqrt(mean_square + epsilon) * (plus_one ? 1.0 + w(static_cast<Eigen::Index>(i)) : w(static_cast<Eigen::Index>(i)));
    return out;
}

// RoPE of one row at position p: pair (2i, 2i+1) turned by p·10000^(−2i/d).
std::vector<double> rotated(const std::vector<double>& x, int p) {
    std::vector<double> out = x;
    const double d = static_cast<double>(x.size());
    for (size_t i = 0; i + 1 < x.size(); i += 2) {
        const double angle = p * std::pow(10000.0, -static_cast<double>(i) / d);
        out[i] = x[i] * std::cos(angle) - x[i + 1] * std::sin(angle);
        out[i + 1] = x[i] * std::sin(angle) + x[i + 1] * std::cos(angle);
    }
    return out;
}

}  // namespace

TEST_CASE("QK-norm: RMSNorm of each head's q and k row after the projection and before RoPE, against a plain loop",
          "[engine][qk_norm]") {
    const bool plus_one = GENERATE(false, true);
    INFO((plus_one ? "(1 + w) form" : "w form"));
    const Scenario s = qk_norm_scenario(plus_one);
    const Trace t = run(s);
    REQUIRE(t.ok);
    REQUIRE(t.q_norm.cols() == 4);
    const Matrix& x = s.target.embeddings;
    int checked = 0;
    for (int h = 0; h < 4; ++h) {
        const HeadTrace& head = t.head[static_cast<size_t>(h)];
        const int g = h / 2;  // its K/V head
        std::vector<std::vector<double>> q(6), k(6), v(6);
        for (int i = 0; i < 6; ++i) {
            std::vector<double> q_row(4, 0.0), k_row(4, 0.0);
            v[static_cast<size_t>(i)].assign(4, 0.0);
            for (int d = 0; d < 4; ++d)
                for (int c = 0; c < 8; ++c) {
                    q_row[static_cast<size_t>(d)] += double(x(i, c)) * double((*s.w_q)(c, h * 4 + d));
                    k_row[static_cast<size_t>(d)] += double(x(i, c)) * double((*s.w_k)(c, g * 4 + d));
                    v[static_cast<size_t>(i)][static_cast<size_t>(d)] += double(x(i, c)) * double((*s.w_v)(c, g * 4 + d));
                }
            for (int d = 0; d < 4; ++d) CHECK(std::abs(head.q_before_norm(i, d) - q_row[static_cast<size_t>(d)]) <= 1e-4);
            const std::vector<double> q_normed = rms_normed(q_row, s.q_norm, plus_one, 1e-6);
            const std::vector<double> k_normed = rms_normed(k_row, s.k_norm, plus_one, 1e-6);
            for (int d = 0; d < 4; ++d) {
                CHECK(std::abs(head.q_normed(i, d) - q_normed[static_cast<size_t>(d)]) <= 1e-5);
                CHECK(std::abs(head.k_normed(i, d) - k_normed[static_cast<size_t>(d)]) <= 1e-5);
                CHECK(head.q_unrotated(i, d) == head.q_normed(i, d));  // what RoPE turns
            }
            q[static_cast<size_t>(i)] = rotated(q_normed, i);
            k[static_cast<size_t>(i)] = rotated(k_normed, i);
            for (int d = 0; d < 4; ++d) CHECK(std::abs(head.q(i, d) - q[static_cast<size_t>(i)][static_cast<size_t>(d)]) <= 1e-5);
        }
        // Causal softmax of q·k/2 (d_k = 4) and the output.
        for (int i = 0; i < 6; ++i) {
            std::vector<double> scores(static_cast<size_t>(i + 1));
            double max = -1e300, sum = 0.0;
            for (int j = 0; j <= i; ++j) {
                double dot = 0.0;
                for (int d = 0; d < 4; ++d) dot += q[static_cast<size_t>(i)][static_cast<size_t>(d)] * k[static_cast<size_t>(j)][static_cast<size_t>(d)];
                scores[static_cast<size_t>(j)] = dot / 2.0;
                max = std::max(max, dot / 2.0);
            }
            for (double& sc : scores) sum += sc = std::exp(sc - max);
            for (int j = 0; j <= i; ++j) {
                CHECK(std::abs(head.weights(i, j) - scores[static_cast<size_t>(j)] / sum) <= 1e-5);
                ++checked;
            }
        }
    }
    CHECK(checked == 4 * 21);
    SECTION("off: the same weights are kept but nothing is normed") {
        Scenario off = s;
        off.qk_norm = false;
        const Trace plain = run(off);
        REQUIRE(plain.ok);
        CHECK(plain.q_norm.size() == 0);
        CHECK(plain.head[0].q_normed.size() == 0);
        CHECK(plain.head[0].q_before_norm.size() == 0);
        CHECK(plain.head[0].q_unrotated == t.head[0].q_before_norm);
    }
    SECTION("empty weights are the identity: ones, or zeros in the (1 + w) form") {
        Scenario identity = s;
        identity.q_norm = identity.k_norm = Vector();
        const Trace id = run(identity);
        REQUIRE(id.ok);
        CHECK(id.q_norm == Matrix::Constant(1, 4, plus_one ? 0.0f : 1.0f));
        const Matrix& before = id.head[1].q_before_norm;
        const float rms = std::sqrt(before.row(2).squaredNorm() / 4.0f + 1e-6f);
        CHECK(std::abs(id.head[1].q_normed(2, 3) - before(2, 3) / rms) <= 1e-6f);
    }
}

TEST_CASE("QK-norm in the scenario file: a round trip, and weights of the wrong length refused by name", "[serialize][qk_norm]") {
    const Scenario s = qk_norm_scenario(true);
    const std::string text = dump_json(scenario_to_json(s), -1);
    CHECK_THAT(text, Contains("\"qk_norm\":true") && Contains("\"qk_norm_plus_one\":true") && Contains("\"q_norm\":["));
    const ScenarioLoad back = scenario_from_text(text, "qk.json");
    REQUIRE(back.scenario);
    CHECK(back.scenario->qk_norm);
    CHECK(back.scenario->qk_norm_plus_one);
    CHECK(back.scenario->q_norm == s.q_norm);
    CHECK(back.scenario->k_norm == s.k_norm);
    const Trace t = run(*back.scenario), want = run(s);
    REQUIRE(t.ok);
    CHECK(t.output == want.output);
    const std::string trace = dump_json(trace_to_json(t), -1);
    CHECK_THAT(trace, Contains("\"q_before_norm\":") && Contains("\"k_normed\":") && Contains("\"q_norm\":[") &&
                          Contains("\"qk_norm_plus_one\":true"));

    const ScenarioLoad wrong = scenario_from_text(
        R"({"tokens": ["a", "b"], "d_model": 8, "heads": 2, "qk_norm": true, "q_norm": [1, 1, 1]})", "wrong.json");
    CHECK_FALSE(wrong.scenario);
    REQUIRE_FALSE(wrong.errors.empty());
    CHECK_THAT(wrong.errors.front(), Contains("q_norm") && Contains("d_k = 4"));
    const ScenarioLoad direct = scenario_from_text(
        R"({"q": [[1, 0], [0, 1]], "k": [[1, 1], [1, 0]], "v": [[1], [2]], "qk_norm": true, "k_norm": [1, 2, 3]})", "direct.json");
    CHECK_FALSE(direct.scenario);
    const ScenarioLoad not_bool = scenario_from_text(R"({"q": [[1]], "k": [[1]], "v": [[1]], "qk_norm": 1})", "bool.json");
    CHECK_FALSE(not_bool.scenario);

    Scenario engine_side = s;  // the engine refuses it too, whatever made the scenario
    engine_side.k_norm = Vector::Ones(5);
    const Trace refused = run(engine_side);
    CHECK_FALSE(refused.ok);
    REQUIRE_FALSE(refused.errors.empty());
    CHECK_THAT(refused.errors.front(), Contains("k_norm") && Contains("expected 4"));
}

TEST_CASE("QK-norm of direct Q and K: each head's rows normed, V untouched", "[engine][qk_norm]") {
    Scenario s;
    s.input = InputMode::Direct;
    s.heads = 2;
    s.q = Matrix(normal_matrix(3, 6, 61) * 10.0f);
    s.k = Matrix(normal_matrix(4, 6, 62) * 10.0f);
    s.v = normal_matrix(4, 6, 63);
    s.qk_norm = true;
    const Trace t = run(s);
    REQUIRE(t.ok);
    for (const HeadTrace& head : t.head) {
        for (Eigen::Index i = 0; i < head.q.rows(); ++i) CHECK(std::abs(std::sqrt(head.q.row(i).squaredNorm() / 3.0f) - 1.0f) <= 1e-3f);
        for (Eigen::Index j = 0; j < head.k.rows(); ++j) CHECK(std::abs(std::sqrt(head.k.row(j).squaredNorm() / 3.0f) - 1.0f) <= 1e-3f);
    }
    CHECK(t.head[1].v == s.v.middleCols(3, 3));
    CHECK(t.head[1].q_before_norm == s.q.middleCols(3, 3));
}

TEST_CASE("the QK-norm preset: normed rows keep the weights spread, and off they collapse", "[presets][qk_norm]") {
    const Preset* p = find_preset("qk-norm");
    REQUIRE(p != nullptr);
    const Trace on = run(p->scenario);
    REQUIRE(on.ok);
    Scenario off_scenario = p->scenario;
    off_scenario.qk_norm = false;
    const Trace off = run(off_scenario);
    REQUIRE(off.ok);
    // The last query's largest weight, per head: near one-hot without the norm, spread with it.
    for (size_t h = 0; h < on.head.size(); ++h) {
        const Eigen::Index last = on.n_queries - 1;
        INFO("head " << h + 1);
        CHECK(on.head[h].weights.row(last).maxCoeff() < 0.8f);
        CHECK(off.head[h].weights.row(last).maxCoeff() > 0.95f);
        CHECK(on.head[h].scaled_scores.cwiseAbs().maxCoeff() < off.head[h].scaled_scores.cwiseAbs().maxCoeff());
    }
}

TEST_CASE("QK-norm over the whole projection (OLMo 2): each row of Q and of K normed over every head's numbers, then split",
          "[engine][qk_norm]") {
    Scenario s = qk_norm_scenario(false);
    s.qk_norm_whole = true;
    s.q_norm = normal_matrix(1, 16, 58).row(0);  // a weight per head and dim: H·d_k = 16
    s.k_norm = normal_matrix(1, 8, 59).row(0);   // H_kv·d_k = 8
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.settings.qk_norm_whole);
    REQUIRE(t.q_projected.cols() == 16);
    REQUIRE(t.k_projected.cols() == 8);
    const Matrix& x = s.target.embeddings;
    for (int i = 0; i < 6; ++i) {
        std::vector<double> q_row(16, 0.0), k_row(8, 0.0);
        for (int c = 0; c < 8; ++c) {
            for (int o = 0; o < 16; ++o) q_row[static_cast<size_t>(o)] += double(x(i, c)) * double((*s.w_q)(c, o));
            for (int o = 0; o < 8; ++o) k_row[static_cast<size_t>(o)] += double(x(i, c)) * double((*s.w_k)(c, o));
        }
        const std::vector<double> q_normed = rms_normed(q_row, s.q_norm, false, 1e-6);  // over all 16 numbers
        const std::vector<double> k_normed = rms_normed(k_row, s.k_norm, false, 1e-6);  // over all 8
        for (int h = 0; h < 4; ++h) {
            const HeadTrace& head = t.head[static_cast<size_t>(h)];
            const int g = h / 2;
            std::vector<double> q_head(4), k_head(4);
            for (int d = 0; d < 4; ++d) {
                q_head[static_cast<size_t>(d)] = q_normed[static_cast<size_t>(h * 4 + d)];
                k_head[static_cast<size_t>(d)] = k_normed[static_cast<size_t>(g * 4 + d)];
                CHECK(std::abs(head.q_before_norm(i, d) - q_row[static_cast<size_t>(h * 4 + d)]) <= 1e-4);
                CHECK(std::abs(head.k_before_norm(i, d) - k_row[static_cast<size_t>(g * 4 + d)]) <= 1e-4);
                CHECK(std::abs(head.q_normed(i, d) - q_head[static_cast<size_t>(d)]) <= 1e-5);
                CHECK(std::abs(head.k_normed(i, d) - k_head[static_cast<size_t>(d)]) <= 1e-5);
            }
            const std::vector<double> q_turned = rotated(q_head, i), k_turned = rotated(k_head, i);  // then RoPE
            for (int d = 0; d < 4; ++d) {
                CHECK(std::abs(head.q(i, d) - q_turned[static_cast<size_t>(d)]) <= 1e-5);
                CHECK(std::abs(head.k(i, d) - k_turned[static_cast<size_t>(d)]) <= 1e-5);
            }
        }
    }
    SECTION("a head's own norm is another computation: the rows of a head are not unit RMS over the whole") {
        Scenario per_head = s;
        per_head.qk_norm_whole = false;
        per_head.q_norm = s.q_norm.head(4);
        per_head.k_norm = s.k_norm.head(4);
        const Trace other = run(per_head);
        REQUIRE(other.ok);
        CHECK((other.head[1].q_normed - t.head[1].q_normed).cwiseAbs().maxCoeff() > 1e-2f);
    }
    SECTION("the scenario file keeps it; weights of one head's length are refused, naming the count it needs") {
        const std::string text = dump_json(scenario_to_json(s), -1);
        CHECK_THAT(text, Contains("\"qk_norm_whole\":true"));
        const ScenarioLoad back = scenario_from_text(text, "olmo.json");
        REQUIRE(back.scenario);
        CHECK(back.scenario->qk_norm_whole);
        CHECK(run(*back.scenario).output == t.output);
        const ScenarioLoad wrong = scenario_from_text(
            R"({"tokens": ["a", "b"], "d_model": 8, "heads": 2, "qk_norm": true, "qk_norm_whole": true, "q_norm": [1, 1, 1, 1]})", "w.json");
        CHECK_FALSE(wrong.scenario);
        REQUIRE_FALSE(wrong.errors.empty());
        CHECK_THAT(wrong.errors.front(), Contains("q_norm") && Contains("qk_norm_whole") && Contains(": 8"));
        Scenario engine_side = s;
        engine_side.k_norm = Vector::Ones(4);  // one head's length
        const Trace refused = run(engine_side);
        CHECK_FALSE(refused.ok);
        REQUIRE_FALSE(refused.errors.empty());
        CHECK_THAT(refused.errors.front(), Contains("k_norm") && Contains("expected 8"));
    }
}
