// The articles' worked examples, checked against values computed here by hand (in double),
// never against numbers copied from the engine.
#include <catch2/catch.hpp>

#include <cmath>

#include "teaching/articles.hpp"
#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "tensor/random.hpp"

using namespace attn;
using Catch::Matchers::WithinAbs;

namespace {

const Preset& preset(const char* name) {
    const Preset* p = find_preset(name);
    REQUIRE(p != nullptr);
    return *p;
}

}  // namespace

TEST_CASE("3-token example: scores / scaling / softmax and output by hand") {
    const Trace t = run(preset("dot-product-3-tokens").scenario);
    REQUIRE(t.ok);
    REQUIRE(t.head.size() == 1);
    const HeadTrace& h = t.head[0];
    // Q = [[1,0],[0,1],[1,1]], K = [[1,1],[1,0],[0,1]] → QKᵀ row by row.
    const double scores[3][3] = {{1, 1, 0}, {1, 0, 1}, {2, 1, 1}};
    const double root2 = std::sqrt(2.0);
    for (int i = 0; i < 3; ++i) {
        double e[3], sum = 0;
        for (int j = 0; j < 3; ++j) {
            CHECK(h.scores(i, j) == Approx(scores[i][j]));
            CHECK_THAT(h.scaled_scores(i, j), WithinAbs(scores[i][j] / root2, 1e-6));
            e[j] = std::exp(scores[i][j] / root2);
            sum += e[j];
        }
        const double v[3][2] = {{10, 0}, {0, 10}, {5, 5}};
        double out[2] = {0, 0};
        for (int j = 0; j < 3; ++j) {
            CHECK_THAT(h.weights(i, j), WithinAbs(e[j] / sum, 1e-6));
            out[0] += e[j] / sum * v[j][0];
            out[1] += e[j] / sum * v[j][1];
        }
        CHECK_THAT(h.output(i, 0), WithinAbs(out[0], 1e-5));
        CHECK_THAT(h.output(i, 1), WithinAbs(out[1], 1e-5));
    }
    // Row 1 by hand: e^(1/√2) = 2.02811, so 2.02811 / 5.05622 = 0.40111 and 1 / 5.05622 = 0.19778.
    CHECK_THAT(h.weights(0, 0), WithinAbs(0.40111, 1e-5));
    CHECK_THAT(h.weights(0, 2), WithinAbs(0.19778, 1e-5));
    // 10·w₁ + 5·w₃ = 5(2w₁ + w₃) = 5: the article's [5.3, 4.2] and [5, 4] are both wrong.
    CHECK_THAT(h.output(0, 0), WithinAbs(5.0, 1e-5));
    CHECK_THAT(h.output(0, 1), WithinAbs(5.0, 1e-5));
}

TEST_CASE("positional-encoding example: d_model = 4 / positions 0 and 1") {
    const Trace t = run(preset("positional-encoding-d4").scenario);
    REQUIRE(t.ok);
    const double expected[2][4] = {{0, 1, 0, 1}, {std::sin(1.0), std::cos(1.0), std::sin(0.01), std::cos(0.01)}};
    for (int p = 0; p < 2; ++p)
        for (int j = 0; j < 4; ++j) CHECK_THAT(t.pe(p, j), WithinAbs(expected[p][j], 1e-6));
    CHECK_THAT(t.pe(1, 2), WithinAbs(0.0099998, 1e-6));  // not the printed sin(0.0001)
}

TEST_CASE("embedding + PE example: the printed PE matches no position") {
    const Trace t = run(preset("embedding-plus-pe").scenario);
    REQUIRE(t.ok);
    const double e[4] = {0.5, 0.2, 0.3, 0.1};
    const double pe0[4] = {0, 1, 0, 1};
    const double pe1[4] = {std::sin(1.0), std::cos(1.0), std::sin(0.01), std::cos(0.01)};
    for (int j = 0; j < 4; ++j) {
        CHECK_THAT(t.x_pe(0, j), WithinAbs(e[j] + pe0[j], 1e-6));
        CHECK_THAT(t.x_pe(1, j), WithinAbs(e[j] + pe1[j], 1e-6));
    }
}

TEST_CASE("article checks: the right quantities match and the wrong ones are flagged") {
    const auto verdicts = check_articles();
    REQUIRE(verdicts.size() >= 16);
    auto verdict = [&](const std::string& quantity) {
        for (auto& v : verdicts)
            if (v.quantity == quantity) return v;
        FAIL("no verdict for " << quantity);
        return Verdict{};
    };
    CHECK(verdict("§1 scores Q₁·Kᵀ, row 1").match);
    CHECK(verdict("§2 scores QKᵀ, row 3").match);
    CHECK(verdict("§2 scaled scores, row 3").match);
    CHECK_FALSE(verdict("§1 attention weights, row 1").match);  // printed 0.42, 0.42, 0.16
    CHECK_FALSE(verdict("§1 output, row 1").match);             // printed 5.3, 4.2
    CHECK(verdict("§2 attention weights, row 1 (to one decimal)").match);
    CHECK_FALSE(verdict("§2 output, row 1").match);             // printed 5, 4
    CHECK(verdict("PE(1, 0) = sin 1, PE(1, 1) = cos 1").match);
    CHECK_FALSE(verdict("PE(1, 2) printed as sin(0.0001)").match);
    CHECK(verdict("PE(1, 3) printed as cos(0.0001) ≈ 1.0000").match);
    CHECK_FALSE(verdict("final input = embedding + PE (position 0)").match);
    for (auto& v : verdicts) {
        CHECK(v.computed.size() == v.printed.size());
        if (!v.match) {
            CHECK_FALSE(v.explanation.empty());
        }
    }
}

TEST_CASE("NumPy's legacy generator replays np.random.seed(42), np.random.randn()") {
    NumpyLegacyRandom rng(42);
    // Published values of np.random.seed(42); np.random.randn(4).
    CHECK_THAT(rng.gauss(), WithinAbs(0.4967141530112327, 1e-15));
    CHECK_THAT(rng.gauss(), WithinAbs(-0.13826430117118466, 1e-15));
    CHECK_THAT(rng.gauss(), WithinAbs(0.6476885381006925, 1e-15));
    CHECK_THAT(rng.gauss(), WithinAbs(1.5230298564080254, 1e-15));
    const Trace t = run(preset("numpy-seed-42").scenario);
    REQUIRE(t.ok);
    CHECK(t.output.rows() == 4);  // the article prints the shape (1, 4, 8)
    CHECK(t.output.cols() == 8);
}

TEST_CASE("every preset runs, and its words are text, not UTF-8 read twice") {
    // UTF-8 decoded as Latin-1 and encoded again puts a C1 control (U+0080–U+009F, bytes C2 80–C2 9F)
    // after its first byte: "√" becomes "â\u0088\u009a", which no description means.
    const auto double_encoded = [](const std::string& text) {
        for (std::size_t i = 0; i + 1 < text.size(); ++i)
            if (static_cast<unsigned char>(text[i]) == 0xC2 && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                static_cast<unsigned char>(text[i + 1]) <= 0x9F)
                return true;
        return false;
    };
    for (const Preset& p : presets()) {
        INFO(p.name);
        const Trace t = run(p.scenario);
        CHECK(t.ok);
        CHECK_FALSE(p.title.empty());
        CHECK_FALSE(p.description.empty());
        CHECK_FALSE(double_encoded(p.title));
        CHECK_FALSE(double_encoded(p.description));
    }
    CHECK(find_preset(default_preset_name()) != nullptr);
}
