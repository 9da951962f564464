// Properties that hold for any input, checked on seeded random scenarios.
#include <catch2/catch.hpp>

#include <cmath>

#include "attention/engine.hpp"
#include "tensor/random.hpp"

using namespace attn;
using Catch::Matchers::WithinAbs;

namespace {

Scenario random_sentence(int n, int d_model, int heads, std::uint64_t seed) {
    Scenario s;
    for (int i = 0; i < n; ++i) s.target.tokens.push_back("w" + std::to_string((i * 7 + seed) % 11));
    s.d_model = d_model;
    s.heads = heads;
    s.seed = seed;
    return s;
}

float max_abs_diff(const Matrix& a, const Matrix& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    return (a - b).cwiseAbs().maxCoeff();
}

}  // namespace

TEST_CASE("every softmax row sums to 1 / whatever the mask") {
    auto mask = GENERATE(MaskKind::None, MaskKind::Causal, MaskKind::SlidingWindow, MaskKind::Padding, MaskKind::Chunked, MaskKind::Band);
    auto heads = GENERATE(1, 2, 4);
    Scenario s = random_sentence(9, 16, heads, 3);
    s.mask = mask;
    s.window = 3;
    s.chunk = 4;
    s.target.padding = {false, false, false, false, false, false, true, true, true};
    const Trace t = run(s);
    REQUIRE(t.ok);
    for (const HeadTrace& h : t.head) {
        for (int i = 0; i < t.n_queries; ++i) {
            CHECK_THAT(h.weights.row(i).sum(), WithinAbs(1.0, 1e-5));
            CHECK((h.weights.row(i).array() >= 0).all());
            for (int j = 0; j < t.n_keys; ++j)
                if (!t.visible(i, j)) {
                    CHECK(h.weights(i, j) == 0.0f);
                }
        }
    }
}

TEST_CASE("causal weights are 0 above the diagonal") {
    Scenario s = random_sentence(12, 8, 2, 5);
    s.mask = MaskKind::Causal;
    const Trace t = run(s);
    REQUIRE(t.ok);
    for (const HeadTrace& h : t.head)
        for (int i = 0; i < 12; ++i)
            for (int j = 0; j < 12; ++j) {
                if (j > i) {
                    CHECK(h.weights(i, j) == 0.0f);
                } else {
                    CHECK(h.weights(i, j) > 0.0f);
                }
            }
    // The first token can only see itself.
    CHECK(t.head[0].weights(0, 0) == Approx(1.0f));
}

TEST_CASE("without position encoding / permuting the tokens permutes the outputs, with it they change") {
    Scenario a;
    a.target.tokens = {"dog", "bites", "man"};
    a.d_model = 8;
    a.heads = 2;
    Scenario b = a;
    // A rotation, not the reversal: reversing keeps every distance |i − j|, so ALiBi alone
    // could not tell the two apart.
    b.target.tokens = {"man", "dog", "bites"};
    const int perm[3] = {1, 2, 0};  // token i of a stands at perm[i] in b

    const Trace ta = run(a), tb = run(b);
    REQUIRE(ta.ok);
    REQUIRE(tb.ok);
    for (int i = 0; i < 3; ++i) CHECK(max_abs_diff(ta.output.row(i), tb.output.row(perm[i])) < 1e-5f);

    for (auto pe : {PositionalEncoding::Sinusoidal, PositionalEncoding::Learned, PositionalEncoding::Rotary,
                    PositionalEncoding::ALiBi}) {
        INFO(to_string(pe));
        a.positional = b.positional = pe;
        const Trace pa = run(a), pb = run(b);
        float largest = 0;
        for (int i = 0; i < 3; ++i) largest = std::max(largest, max_abs_diff(pa.output.row(i), pb.output.row(perm[i])));
        CHECK(largest > 1e-3f);
    }
}

TEST_CASE("scaling keeps score variance near 1, unscaled it is near d_k") {
    const int d_k = 64, n = 128;
    Scenario s;
    s.input = InputMode::Direct;
    s.q = normal_matrix(n, d_k, 11);
    s.k = normal_matrix(n, d_k, 12);
    s.v = normal_matrix(n, d_k, 13);
    auto variance = [](const Matrix& m) {
        const double mean = m.mean();
        return (m.array() - mean).square().mean();
    };
    const Trace scaled = run(s);
    s.scale = false;
    const Trace unscaled = run(s);
    CHECK_THAT(variance(scaled.head[0].scaled_scores), WithinAbs(1.0, 0.15));
    CHECK_THAT(variance(unscaled.head[0].scaled_scores), WithinAbs(d_k, 0.15 * d_k));
}

TEST_CASE("the stable softmax survives scores of 1e4 where the naive one overflows") {
    Scenario s;
    s.input = InputMode::Direct;
    s.q = Matrix::Constant(1, 1, 100.0f);
    s.k = Matrix(3, 1);
    s.k << 100.0f, 99.0f, 0.0f;  // scores 1e4, 9.9e3, 0
    s.v = Matrix::Identity(3, 3);
    s.scale = false;
    const Trace stable = run(s);
    REQUIRE(stable.ok);
    CHECK(stable.head[0].weights.allFinite());
    CHECK_THAT(stable.head[0].weights(0, 0), WithinAbs(1.0, 1e-6));  // e^0 / (e^0 + e^-100 + e^-1e4)
    CHECK_FALSE(stable.head[0].softmax_overflow);

    s.softmax = SoftmaxKind::Naive;
    const Trace naive = run(s);
    REQUIRE(naive.ok);
    CHECK_FALSE(naive.head[0].weights.allFinite());
    CHECK(naive.head[0].softmax_overflow);
    CHECK_FALSE(naive.warnings.empty());
}

TEST_CASE("h heads equal h single-head runs on the heads' column slices / concatenated") {
    const int heads = GENERATE(2, 4, 8);
    Scenario s = random_sentence(6, 16, heads, 21);
    s.mask = MaskKind::Causal;
    const Trace multi = run(s);
    REQUIRE(multi.ok);
    const int d_k = 16 / heads;
    for (int h = 0; h < heads; ++h) {
        Scenario one;
        one.input = InputMode::Direct;
        one.q = (multi.x_pe * *multi.w_q).middleCols(h * d_k, d_k);
        one.k = (multi.x_pe * *multi.w_k).middleCols(h * d_k, d_k);
        one.v = (multi.x_pe * *multi.w_v).middleCols(h * d_k, d_k);
        one.mask = MaskKind::Causal;
        const Trace single = run(one);
        REQUIRE(single.ok);
        CHECK(max_abs_diff(single.output, multi.concat.middleCols(h * d_k, d_k)) < 1e-5f);
    }
    CHECK(max_abs_diff(multi.output, multi.concat * *multi.w_o) < 1e-5f);
}

TEST_CASE("cross-attention with identical sequences equals self-attention") {
    auto pe = GENERATE(PositionalEncoding::None, PositionalEncoding::Sinusoidal, PositionalEncoding::Rotary);
    Scenario self = random_sentence(5, 8, 2, 9);
    self.positional = pe;
    Scenario cross = self;
    cross.attention = AttentionKind::Cross;
    cross.source = self.target;
    const Trace a = run(self), b = run(cross);
    REQUIRE(a.ok);
    REQUIRE(b.ok);
    CHECK(max_abs_diff(a.output, b.output) < 1e-6f);
}

TEST_CASE("a fully masked row follows the documented rule") {
    Scenario s = random_sentence(4, 8, 1, 2);
    s.mask = MaskKind::Custom;
    s.custom_mask = MaskMatrix::Constant(4, 4, true);
    s.custom_mask.row(2).setConstant(false);  // query 3 sees nothing

    SECTION("−∞ fill: weights 0, output 0, reported") {
        const Trace t = run(s);
        REQUIRE(t.ok);
        CHECK(t.head[0].weights.row(2).isZero(0));
        CHECK(t.head[0].output.row(2).isZero(0));
        CHECK(t.head[0].fully_masked_rows == std::vector<int>{2});
        CHECK(t.output.allFinite());
        CHECK_FALSE(t.warnings.empty());
    }
    SECTION("finite fill −1e9: uniform weights, as PyTorch computes, reported") {
        s.masked_fill = -1e9f;
        const Trace t = run(s);
        REQUIRE(t.ok);
        for (int j = 0; j < 4; ++j) CHECK_THAT(t.head[0].weights(2, j), WithinAbs(0.25, 1e-6));
        CHECK(t.head[0].fully_masked_rows == std::vector<int>{2});
        CHECK_FALSE(t.warnings.empty());
    }
}
