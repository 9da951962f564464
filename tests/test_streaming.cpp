// The output-only path (key blocks, online softmax, pooled weights) against the full engine,
// over the one table of attention cases (attention_cases.hpp); and the rules' fast paths
// against their per-cell definitions (attention_rules.hpp).
#include <catch2/catch.hpp>

#include <atomic>
#include <limits>
#include <tuple>

#include "attention_cases.hpp"
#include "attention/attention_rules.hpp"
#include "attention/engine.hpp"
#include "tensor/random.hpp"
#include "attention/registry.hpp"

using namespace attn;
using testing::attention_case;
using testing::AttentionCase;

TEST_CASE("every attention case: output-only equals the full engine", "[cases][output-only]") {
    const AttentionCase c = GENERATE(from_range(testing::attention_cases()));
    INFO("case: " << c.name);
    const Scenario s = testing::case_scenario(c);
    const Trace full = run(s);
    testing::check_case_premise(c, full);
    const Trace streamed = run(s, RunOptions{Detail::OutputOnly});
    testing::check_output_only_trace(s, full, streamed, testing::kOutputOnlyTolerance);
}

// [SECTION] The rules' fast paths against their definitions

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Two floats the same, NaN included.
bool same(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// The same up to the rounding of one operation: the compiler may fuse q·k·scale + bias into
// one multiply-add in one place and not in another.
// magnitude: the largest term of the sum.
bool same_score(float a, float b, float magnitude) { return same(a, b) || std::abs(a - b) <= 2.5e-7f * std::max(1.0f, magnitude); }
float magnitude(const ScoreRule& rule, float q_dot_k, int i, int j) {
    return std::max(std::abs(q_dot_k * rule.scale), std::abs(alibi_term(rule.alibi_slope, i, j)));
}

}  // namespace

TEST_CASE("scale_scores, cap_scores and mask_scores give masked_score of every cell of a tile", "[rules]") {
    const AttentionCase c = GENERATE(from_range(testing::attention_cases()));
    if (c.n_q > 300) return;  // the 1024-token cases add nothing here
    INFO("case: " << c.name);
    const Scenario s = testing::case_scenario(c);
    const Trace full = run(s);
    REQUIRE(full.ok);
    for (size_t h = 0; h < full.head.size(); ++h) {
        const HeadTrace& head = full.head[h];
        const ScoreRule rule = score_rule(s, full.scale, head.alibi_slope, full.n_keys, head_sink(s, static_cast<int>(h)));
        int differ = 0, weights_differ = 0;
        for (int i = 0; i < full.n_queries; ++i) {
            // the row's sum by the definition: l = cell_exp(b, shift) + Σ_j cell_exp(s_j, shift), the
            // shift over the sink b too (b = −∞ without one)
            const float shift = row_shift(s.softmax, row_max_with_sink(head.masked_scores.row(i).maxCoeff(), row_start(s.softmax, rule.sink).max));
            float l = cell_exp(rule.sink, shift);
            for (int j = 0; j < full.n_keys; ++j) l += cell_exp(head.masked_scores(i, j), shift);
            for (int j = 0; j < full.n_keys; ++j) {
                const float size = magnitude(rule, head.scores(i, j), i, j);
                differ += !same_score(head.scaled_scores(i, j), scaled_score(rule, head.scores(i, j), i, j), size);
                if (rule.softcap > 0.0f)
                    differ += !same_score(head.capped_scores(i, j), capped_score(rule, scaled_score(rule, head.scores(i, j), i, j)), size);
                differ += !same_score(head.masked_scores(i, j), masked_score(rule, head.scores(i, j), i, j), size);
                differ += !rule.mask.visible(i, j) && head.masked_scores(i, j) != s.masked_fill;  // the fill, exactly
                const float w = row_weight(head.masked_scores(i, j), shift, l), got = head.weights(i, j);
                weights_differ += !(same(got, w) || std::abs(got - w) <= 1e-6f);
            }
            if (rule.sink != kMinusInfinity) weights_differ += !(std::abs(head.sink_weights(i, 0) - row_weight(rule.sink, shift, l)) <= 1e-6f);
        }
        INFO("head " << h + 1);
        CHECK(differ == 0);
        CHECK(weights_differ == 0);
    }
    // A tile away from the origin: the run fill of causal and sliding-window masks.
    const ScoreRule rule = score_rule(s, 0.5f, 0.25f, full.n_keys);
    const int i0 = full.n_queries / 3, j0 = full.n_keys / 4;
    Matrix tile = normal_matrix(full.n_queries - i0, full.n_keys - j0, 5);
    const Matrix products = tile;
    scale_scores(rule, i0, j0, tile);
    cap_scores(rule, tile);
    mask_scores(rule, i0, j0, tile);
    int differ = 0;
    for (Eigen::Index r = 0; r < tile.rows(); ++r)
        for (Eigen::Index col = 0; col < tile.cols(); ++col) {
            const int i = i0 + static_cast<int>(r), j = j0 + static_cast<int>(col);
            differ += !same_score(tile(r, col), masked_score(rule, products(r, col), i, j), magnitude(rule, products(r, col), i, j));
        }
    CHECK(differ == 0);
}

TEST_CASE("cell_exp_row is cell_exp of every cell, flushing below ln FLT_MIN", "[rules]") {
    // Around the flush bound, −∞, NaN, +∞, a row longer than one vectorised chunk.
    std::vector<float> s = {-kInf, kInf, std::numeric_limits<float>::quiet_NaN(), 0.0f, -1e9f, 1e9f, kExpFlushBelow,
                            std::nextafter(kExpFlushBelow, 0.0f), std::nextafter(kExpFlushBelow, -kInf), -88.4f, -103.0f,
                            -104.0f, 88.0f, 89.0f};
    Rng rng(3);
    while (s.size() < 700) s.push_back(-200.0f + 290.0f * rng.uniform());
    for (auto [shift, in_place] : {std::pair{0.0f, false}, std::pair{3.5f, true}, std::pair{-20.0f, false}}) {
        std::vector<float> row = s;
        cell_exp_row(in_place ? row.data() : s.data(), row.data(), static_cast<int>(row.size()), shift);
        for (size_t c = 0; c < s.size(); ++c) {
            const float want = cell_exp(s[c], shift);
            INFO("s = " << s[c] << ", shift " << shift << ": " << row[c] << " against " << want);
            CHECK((same(row[c], want) || std::abs(row[c] - want) <= 2e-7f * std::abs(want)));
            CHECK((row[c] == 0.0f) == (want == 0.0f));  // the same cells flushed
        }
    }
    CHECK(cell_exp(-kInf, 0.0f) == 0.0f);
    CHECK(cell_exp(-90.0f, 0.0f) == 0.0f);  // subnormal: flushed, as a GPU flushes it
    CHECK(cell_exp(-87.0f, 0.0f) > 0.0f);
}

TEST_CASE("softmax_rows gives row_weight of every cell, the row ending by its sum", "[rules]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Matrix scores(9, 5);
    scores << 1, 2, 3, -kInf, 0,                            // some cells masked
        -kInf, -kInf, -kInf, -kInf, -kInf,                  // fully masked, −∞: l = 0
        -1e9f, -1e9f, -1e9f, -1e9f, -1e9f,                  // fully masked, finite fill
        -300, -250, -400, -kInf, -320,                      // naive: every exponential underflows
        -40, -41, -45, -39, -kInf,                          // naive: small but normal
        100, 90, 1, -kInf, 0,                               // naive: overflows
        0, 0, 0, 0, 0,                                      // uniform
        nan, 1, 2, 3, 4,                                    // a NaN score
        -95, -96, -100, -kInf, -95;                         // naive: between the flush bound and the smallest subnormal
    for (SoftmaxKind kind : {SoftmaxKind::Stable, SoftmaxKind::Naive}) {
        const Matrix weights = softmax_rows(scores, kind);
        for (Eigen::Index i = 0; i < scores.rows(); ++i) {
            const float shift = row_shift(kind, scores.row(i).maxCoeff());
            float l = 0.0f;
            for (Eigen::Index j = 0; j < scores.cols(); ++j) l += cell_exp(scores(i, j), shift);
            for (Eigen::Index j = 0; j < scores.cols(); ++j) {
                const float want = row_weight(scores(i, j), shift, l);
                INFO(to_string(kind) << " row " << i + 1 << ", cell " << j + 1 << ": " << weights(i, j) << " against " << want);
                CHECK((same(weights(i, j), want) || std::abs(weights(i, j) - want) <= 1e-6f));
            }
        }
    }
    // The rule's verdicts, named: l = 0 → 0, l = ∞ → NaN (−∞ cells 0), else exp(s − m) / l.
    const Matrix naive = softmax_rows(scores, SoftmaxKind::Naive);
    CHECK(naive.row(1).isZero(0.0f));
    CHECK(naive.row(2).isZero(0.0f));  // exp(−1e9) = 0: nothing weighs anything
    CHECK(naive.row(3).isZero(0.0f));
    CHECK(std::abs(naive.row(4).sum() - 1.0f) < 1e-6f);
    CHECK(std::isnan(naive(5, 0)));
    CHECK(naive(5, 3) == 0.0f);
    const Matrix stable = softmax_rows(scores, SoftmaxKind::Stable);
    CHECK(stable.row(1).isZero(0.0f));
    CHECK((stable.row(2).array() == 0.2f).all());  // the finite fill: uniform
    CHECK(std::abs(stable.row(3).sum() - 1.0f) < 1e-6f);
    CHECK(row_output(2.0f, 0.0f) == 0.0f);
    CHECK(std::isnan(row_output(2.0f, kInf)));
    CHECK(row_output(2.0f, 4.0f) == 0.5f);
    CHECK(row_weight(-kInf, 0.0f, kInf) == 0.0f);
}

TEST_CASE("a zoomed region of the pooled weights keeps a single sharp spike") {
    Scenario s;
    s.input = InputMode::Direct;
    const int n = 300;
    s.q = Matrix::Zero(n, 4);
    s.k = Matrix::Zero(n, 4);
    s.v = normal_matrix(n, 4, 3);
    s.q(150, 0) = 30.0f;
    s.k(222, 0) = 30.0f;  // query 150 attends almost only to key 222
    RunOptions options;
    options.detail = Detail::OutputOnly;
    options.pooled_rows = 10;
    options.pooled_cols = 10;
    const Trace t = run(s, options);
    REQUIRE(t.ok);
    const Matrix& pooled = t.head[0].pooled_weights.values;
    CHECK(pooled(5, 7) > 0.99f);  // bin 5 holds rows 150..179, bin 7 holds keys 210..239
    CHECK(pooled(4, 7) < 0.01f);
    options.region_row_begin = 140;
    options.region_row_end = 160;
    options.region_col_begin = 200;
    options.region_col_end = 240;
    options.pooled_rows = 20;
    options.pooled_cols = 40;
    const Trace zoom = run(s, options);
    CHECK(zoom.head[0].pooled_weights.values(10, 22) > 0.99f);  // full resolution: exactly one cell
    CHECK(zoom.head[0].pooled_weights.values(10, 21) < 0.01f);
    // The region as the user counts it, from 1 with both ends: rows 141 to 160, keys 201 to 240.
    const auto ref = parse_matrix_name("head0.pooled_weights");
    REQUIRE(ref);
    CHECK(ref->entry->shape(zoom, 0) == "queries 141\xE2\x80\x93" "160, keys 201\xE2\x80\x93" "240 \xE2\x86\x92 20\xC3\x97" "40 (output-only)");
    CHECK(zoom.head[0].pooled_weights.visible.size() == 20 * 40);  // one cell per token: the mask's cells are known
    CHECK(t.head[0].pooled_weights.visible.size() == 0);             // pooled bins: none
    // Causal, zoomed across the diagonal: the cells after each query are marked hidden, on the
    // CPU and as any backend's trace is finished.
    s.mask = MaskKind::Causal;
    options.region_row_begin = 100;
    options.region_row_end = 104;
    options.region_col_begin = 98;
    options.region_col_end = 106;
    options.pooled_rows = 4;
    options.pooled_cols = 8;
    const Trace causal = run(s, options);
    REQUIRE(causal.ok);
    const PooledWeights& p = causal.head[0].pooled_weights;
    REQUIRE(p.visible.rows() == 4);
    REQUIRE(p.visible.cols() == 8);
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 8; ++c) {
            CHECK(p.visible(r, c) == (98 + c <= 100 + r));
            if (!p.visible(r, c)) CHECK(p.values(r, c) == 0.0f);
        }
    CHECK(position_span(999, 1015) == "1000\xE2\x80\x93" "1015");
    CHECK(position_span(7, 8) == "8");
}

TEST_CASE("output-only mode runs sizes the full trace refuses") {
    Scenario s;
    s.input = InputMode::Direct;
    const int n = 40000;
    s.q = normal_matrix(n, 2, 1);
    s.k = normal_matrix(n, 2, 2);
    s.v = normal_matrix(n, 2, 3);
    s.mask = MaskKind::SlidingWindow;
    s.window = 16;
    CHECK_FALSE(run(s).ok);
    RunOptions options;
    options.detail = Detail::OutputOnly;
    const Trace t = run(s, options);
    REQUIRE(t.ok);
    CHECK(t.output.rows() == n);
    CHECK(t.output.allFinite());
}

TEST_CASE("a zoom draws its region from the output pass's row statistics, as a fresh run of that region does") {
    using M = MaskKind;
    using P = PositionalEncoding;
    const AttentionCase c = GENERATE(values<AttentionCase>({
        attention_case("no mask, sinusoidal", M::None, P::Sinusoidal, 2, 300, 300, 8),
        attention_case("causal, rope", M::Causal, P::Rotary, 2, 300, 300, 8),
        attention_case("window 5, alibi", M::SlidingWindow, P::ALiBi, 2, 300, 300, 8).with_window(5),
        attention_case("cross, padding", M::Padding, P::None, 2, 300, 303, 8),
        attention_case("custom, learned", M::Custom, P::Learned, 2, 300, 300, 8)}));
    INFO("case: " << c.name);
    const Scenario s = testing::case_scenario(c);
    RunOptions whole;
    whole.detail = Detail::OutputOnly;
    const Trace t = run(s, whole);
    REQUIRE(t.ok);
    RunOptions region = whole;
    region.region_row_begin = 17;
    region.region_row_end = 61;
    region.region_col_begin = 5;
    region.region_col_end = 290 < t.n_keys ? 290 : t.n_keys;
    std::string error;
    const auto pooled = repool_weights(s, t, region, &error);
    REQUIRE(pooled);
    const Trace fresh = run(s, region);  // the whole run again, for that region
    REQUIRE(fresh.ok);
    const Trace full = run(s);           // and the full weights, max-pooled by hand below
    for (size_t h = 0; h < t.head.size(); ++h) {
        const PooledWeights& p = (*pooled)[h];
        CHECK(p.row_begin == 17);
        CHECK(p.col_end == region.region_col_end);
        CHECK(p.values == fresh.head[h].pooled_weights.values);  // bit for bit: the same arithmetic
        const PooledWeights by_hand = max_pool(full.head[h].weights, 17, 61, 5, region.region_col_end, p.values.rows(),
                                               p.values.cols());
        CHECK((p.values - by_hand.values).cwiseAbs().maxCoeff() < 1e-5f);
    }
}

TEST_CASE("a zoom needs the row statistics, and a cancelled run or zoom returns nothing partial") {
    const Scenario s = testing::case_scenario(
        attention_case("causal, sinusoidal", MaskKind::Causal, PositionalEncoding::Sinusoidal, 2, 200, 200, 8));
    RunOptions options;
    options.detail = Detail::OutputOnly;
    Trace t = run(s, options);
    REQUIRE(t.ok);
    std::atomic<bool> cancel{true};
    RunOptions cancelled = options;
    cancelled.cancel = &cancel;
    const Trace stopped = run(s, cancelled);
    CHECK_FALSE(stopped.ok);
    CHECK(stopped.head.empty());
    std::string error;
    CHECK_FALSE(repool_weights(s, t, cancelled, &error));
    CHECK(error == "cancelled");
    t.head[1].row_sum.resize(0);  // as a GPU run's trace: no statistics kept
    CHECK_FALSE(repool_weights(s, t, options, &error));
    CHECK(error.find("row statistics") != std::string::npos);
}
