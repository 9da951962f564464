// Attention sinks against a plain loop in double, their scenario file and their refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "tensor/random.hpp"
#include "attention/serialize.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

// Direct Q, K, V of 2 heads, a custom mask whose last row sees nothing.
Scenario sink_scenario(SoftmaxKind softmax) {
    Scenario s;
    s.name = "sinks";
    s.input = InputMode::Direct;
    s.heads = 2;
    s.q = Matrix(normal_matrix(5, 8, 71) * 2.0f);
    s.k = Matrix(normal_matrix(6, 8, 72) * 2.0f);
    s.v = normal_matrix(6, 8, 73);
    s.mask = MaskKind::Custom;
    s.custom_mask = MaskMatrix::Constant(5, 6, true);
    s.custom_mask(1, 2) = false;
    s.custom_mask.row(4).setConstant(false);
    s.softmax = softmax;
    s.sinks = Vector(2);
    s.sinks << 1.5f, -2.0f;
    return s;
}

}  // namespace

TEST_CASE("attention sinks: the sink joins each row's max and sum and is dropped, against a plain loop", "[engine][sinks]") {
    const SoftmaxKind softmax = GENERATE(SoftmaxKind::Stable, SoftmaxKind::Naive);
    INFO(to_string(softmax));
    const Scenario s = sink_scenario(softmax);
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.settings.sinks);
    for (int h = 0; h < 2; ++h) {
        const HeadTrace& head = t.head[static_cast<size_t>(h)];
        const double b = s.sinks(h);
        CHECK(head.sink == s.sinks(h));
        REQUIRE(head.sink_weights.rows() == 5);
        REQUIRE(head.sink_weights.cols() == 1);
        for (int i = 0; i < 5; ++i) {
            INFO("head " << h + 1 << ", row " << i + 1);
            double scores[6], max = b;  // w_ij = exp(s_ij − m)/(exp(b − m) + Σ exp(s − m)), m = max(b, max s)
            for (int j = 0; j < 6; ++j) {
                double dot = 0.0;
                for (int d = 0; d < 4; ++d) dot += double(s.q(i, h * 4 + d)) * double(s.k(j, h * 4 + d));
                scores[j] = dot / 2.0;
                if (s.custom_mask(i, j)) max = std::max(max, scores[j]);
            }
            const double shift = softmax == SoftmaxKind::Stable ? max : 0.0;
            double sum = std::exp(b - shift), outputs[4] = {0, 0, 0, 0};
            for (int j = 0; j < 6; ++j)
                if (s.custom_mask(i, j)) sum += std::exp(scores[j] - shift);
            double weights_sum = 0.0;
            for (int j = 0; j < 6; ++j) {
                const double w = s.custom_mask(i, j) ? std::exp(scores[j] - shift) / sum : 0.0;
                weights_sum += w;
                CHECK(std::abs(head.weights(i, j) - w) <= 1e-5);
                for (int d = 0; d < 4; ++d) outputs[d] += w * double(s.v(j, h * 4 + d));
            }
            CHECK(std::abs(head.sink_weights(i, 0) - std::exp(b - shift) / sum) <= 1e-5);
            CHECK(std::abs(head.weights.row(i).sum() + head.sink_weights(i, 0) - 1.0f) <= 1e-5f);
            CHECK(weights_sum < 1.0 - 1e-3);  // the row's weights fall short of 1
            for (int d = 0; d < 4; ++d) CHECK(std::abs(head.output(i, d) - outputs[d]) <= 1e-5);
        }
        // The fully masked row under −∞: the sink is its only cell.
        CHECK(head.weights.row(4).isZero(0.0f));
        CHECK(head.output.row(4).isZero(0.0f));
        CHECK(head.sink_weights(4, 0) == 1.0f);
    }
    CHECK_THAT(t.warnings.front(), Contains("the sink takes all of its weight"));
    SECTION("without sinks the same rows sum to 1 and there is no sink card") {
        Scenario plain = s;
        plain.sinks = Vector();
        const Trace off = run(plain);
        REQUIRE(off.ok);
        CHECK(off.head[0].sink_weights.size() == 0);
        CHECK(off.head[0].sink == -std::numeric_limits<float>::infinity());
        CHECK(std::abs(off.head[0].weights.row(0).sum() - 1.0f) <= 1e-6f);
        CHECK(off.head[0].weights.row(4).isZero(0.0f));
    }
    SECTION("output-only: the sink weights come from each row's max and sum") {
        const Trace streamed = run(s, RunOptions{Detail::OutputOnly});
        REQUIRE(streamed.ok);
        for (size_t h = 0; h < 2; ++h) {
            REQUIRE(streamed.head[h].sink_weights.rows() == 5);
            CHECK((streamed.head[h].sink_weights - t.head[h].sink_weights).cwiseAbs().maxCoeff() <= 1e-6f);
            CHECK((streamed.head[h].output - t.head[h].output).cwiseAbs().maxCoeff() <= 1e-5f);
        }
    }
}

TEST_CASE("attention sinks in the scenario file: a round trip, and a list of the wrong length refused by name", "[serialize][sinks]") {
    const Scenario s = sink_scenario(SoftmaxKind::Stable);
    const std::string text = dump_json(scenario_to_json(s), -1);
    CHECK_THAT(text, Contains("\"sinks\":[1.5,-2.0]"));
    const ScenarioLoad back = scenario_from_text(text, "sinks.json");
    REQUIRE(back.scenario);
    CHECK(back.scenario->sinks == s.sinks);
    const Trace t = run(*back.scenario);
    REQUIRE(t.ok);
    const std::string trace = dump_json(trace_to_json(t), -1);
    CHECK_THAT(trace, Contains("\"sink_weights\":") && Contains("\"sink\":1.5") && Contains("\"sinks\":true"));

    const ScenarioLoad wrong = scenario_from_text(R"({"tokens": ["a", "b"], "d_model": 8, "heads": 2, "sinks": [1, 2, 3]})", "wrong.json");
    CHECK_FALSE(wrong.scenario);
    REQUIRE_FALSE(wrong.errors.empty());
    CHECK_THAT(wrong.errors.front(), Contains("sinks") && Contains("3 logits for 2 heads"));
    const ScenarioLoad not_number = scenario_from_text(R"({"q": [[1]], "k": [[1]], "v": [[1]], "sinks": ["big"]})", "nan.json");
    CHECK_FALSE(not_number.scenario);
    const ScenarioLoad infinite = scenario_from_text(R"({"q": [[1]], "k": [[1]], "v": [[1]], "sinks": ["inf"]})", "inf.json");
    CHECK_FALSE(infinite.scenario);

    Scenario engine_side = s;  // the engine refuses it too, whatever made the scenario
    engine_side.sinks = Vector::Ones(3);
    const Trace refused = run(engine_side);
    CHECK_FALSE(refused.ok);
    REQUIRE_FALSE(refused.errors.empty());
    CHECK_THAT(refused.errors.front(), Contains("sinks has 3 logits for 2 heads"));
    engine_side.sinks = Vector::Constant(2, std::numeric_limits<float>::quiet_NaN());
    CHECK_FALSE(run(engine_side).ok);
}

TEST_CASE("the attention-sinks preset: head 1's sink takes most of every row", "[presets][sinks]") {
    const Preset* p = find_preset("attention-sinks");
    REQUIRE(p != nullptr);
    const Trace t = run(p->scenario);
    REQUIRE(t.ok);
    const HeadTrace& first = t.head[0];
    REQUIRE(first.sink_weights.rows() == t.n_queries);
    for (int i = 0; i < t.n_queries; ++i) {
        INFO("row " << i + 1);
        CHECK(first.sink_weights(i, 0) > 0.5f);
        CHECK(first.weights.row(i).sum() < 0.5f);
    }
    CHECK(t.head[1].sink_weights(t.n_queries - 1, 0) < first.sink_weights(t.n_queries - 1, 0));
}
