// The output-only path (key blocks, online softmax, pooled weights) against the full engine.
#include <catch2/catch.hpp>

#include <atomic>
#include <tuple>

#include "engine.hpp"
#include "overflow_agreement.hpp"
#include "random.hpp"

using namespace attn;

namespace {

Scenario case_scenario(int n, int d_model, int heads, MaskKind mask, PositionalEncoding pe, bool cross) {
    Scenario s;
    for (int i = 0; i < n; ++i) s.target.tokens.push_back("tok" + std::to_string(i % 37));
    s.d_model = d_model;
    s.heads = heads;
    s.mask = mask;
    s.positional = pe;
    s.window = 5;
    s.target.padding.assign(static_cast<size_t>(n), false);
    for (int i = n - n / 4; i < n; ++i) s.target.padding[static_cast<size_t>(i)] = true;
    if (cross) {
        s.attention = AttentionKind::Cross;
        for (int i = 0; i < n + 3; ++i) s.source.tokens.push_back("src" + std::to_string(i % 11));
        s.source.padding.assign(static_cast<size_t>(n + 3), false);
        s.source.padding.back() = true;
    }
    if (mask == MaskKind::Custom) {
        const int n_k = cross ? n + 3 : n;
        s.custom_mask = MaskMatrix(n, n_k);
        Rng rng(7);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n_k; ++j) s.custom_mask(i, j) = rng.uniform() < 0.6f;
        s.custom_mask(0, 0) = true;
    }
    return s;
}

}  // namespace

TEST_CASE("output-only attention equals the full engine") {
    using Row = std::tuple<int, int, int, MaskKind, PositionalEncoding, bool>;
    auto [n, d_model, heads, mask, pe, cross] = GENERATE(table<int, int, int, MaskKind, PositionalEncoding, bool>({
        Row{1, 8, 1, MaskKind::None, PositionalEncoding::None, false},
        Row{7, 8, 2, MaskKind::Causal, PositionalEncoding::Sinusoidal, false},
        Row{64, 16, 2, MaskKind::SlidingWindow, PositionalEncoding::Rotary, false},
        Row{130, 32, 4, MaskKind::Padding, PositionalEncoding::ALiBi, false},
        Row{257, 64, 8, MaskKind::Causal, PositionalEncoding::Learned, false},
        Row{77, 16, 2, MaskKind::Custom, PositionalEncoding::None, false},
        Row{50, 16, 2, MaskKind::Padding, PositionalEncoding::Sinusoidal, true},
        Row{300, 16, 1, MaskKind::None, PositionalEncoding::Rotary, true},
    }));
    auto fill = GENERATE(-std::numeric_limits<float>::infinity(), -1e9f);
    CAPTURE(n, d_model, heads, static_cast<int>(mask), static_cast<int>(pe), cross, fill);
    Scenario s = case_scenario(n, d_model, heads, mask, pe, cross);
    s.masked_fill = fill;
    const Trace full = run(s);
    RunOptions options;
    options.detail = Detail::OutputOnly;
    options.pooled_rows = 13;
    options.pooled_cols = 11;
    const Trace streamed = run(s, options);
    REQUIRE(full.ok);
    REQUIRE(streamed.ok);
    CHECK(streamed.visible.size() == 0);
    CHECK((full.output - streamed.output).cwiseAbs().maxCoeff() < 1e-5f);
    for (int h = 0; h < heads; ++h) {
        CHECK(streamed.head[h].weights.size() == 0);  // nothing (n_q × n_k) kept
        const PooledWeights expected = max_pool(full.head[h].weights, 0, full.n_queries, 0, full.n_keys, 13, 11);
        REQUIRE(streamed.head[h].pooled_weights.values.rows() == expected.values.rows());
        REQUIRE(streamed.head[h].pooled_weights.values.cols() == expected.values.cols());
        CHECK((streamed.head[h].pooled_weights.values - expected.values).cwiseAbs().maxCoeff() < 1e-5f);
    }
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
    using Case = std::tuple<MaskKind, PositionalEncoding, bool>;
    const auto [mask, pe, cross] = GENERATE(table<MaskKind, PositionalEncoding, bool>({
        Case{MaskKind::None, PositionalEncoding::Sinusoidal, false}, Case{MaskKind::Causal, PositionalEncoding::Rotary, false},
        Case{MaskKind::SlidingWindow, PositionalEncoding::ALiBi, false}, Case{MaskKind::Padding, PositionalEncoding::None, true},
        Case{MaskKind::Custom, PositionalEncoding::Learned, false}}));
    CAPTURE(mask, pe, cross);
    const Scenario s = case_scenario(300, 16, 2, mask, pe, cross);
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
    const Scenario s = case_scenario(200, 16, 2, MaskKind::Causal, PositionalEncoding::Sinusoidal, false);
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

TEST_CASE("output-only attention keeps the naive softmax's overflow guarantee") {
    // The scenario of the GPU suite's [overflow] case, held to the same guarantee
    // (overflow_agreement.hpp): the same heads flagged, rows far from the limit equal.
    Scenario s;
    s.input = InputMode::Direct;
    s.heads = 2;
    s.q = 6.0f * normal_matrix(64, 2 * 32, 1);  // head 1's scores far above 88: exp overflows
    s.k = normal_matrix(64, 2 * 32, 2);
    s.v = normal_matrix(64, 2 * 32, 3);
    s.q.rightCols(32) *= 0.02f;
    s.scale = false;
    s.softmax = SoftmaxKind::Naive;
    s.mask = MaskKind::Causal;
    const Trace full = run(s);
    const Trace output_only = run(s, RunOptions{Detail::OutputOnly});
    REQUIRE(full.ok);
    REQUIRE(output_only.ok);
    const testing::OverflowRows rows = testing::check_overflow_agreement(full, output_only, 1e-5f);
    CHECK(full.head[0].softmax_overflow);
    CHECK_FALSE(full.head[1].softmax_overflow);
    CHECK(rows.nan_rows > 0);
    CHECK(rows.compared >= 64);
}
