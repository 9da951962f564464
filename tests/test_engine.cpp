// The engine's defined behaviour on edge cases and its separate steps.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "attention/analysis.hpp"
#include "attention/engine.hpp"
#include "generate/decode.hpp"
#include "teaching/presets.hpp"
#include "tensor/product.hpp"
#include "attention/mask.hpp"
#include "tensor/random.hpp"
#include "tensor/reflect.hpp"
#include "teaching/report.hpp"
#include "attention/serialize.hpp"
#include "attention/softmax.hpp"

using namespace attn;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;

namespace {

bool any_error_contains(const Trace& t, const std::string& text) {
    for (auto& e : t.errors)
        if (e.find(text) != std::string::npos) return true;
    return false;
}

Scenario three_words() {
    Scenario s;
    s.target.tokens = {"a", "b", "c"};
    s.d_model = 6;
    s.heads = 2;
    return s;
}

}  // namespace

TEST_CASE("impossible scenarios give a message / not a crash") {
    SECTION("d_model not divisible by heads") {
        Scenario s = three_words();
        s.heads = 4;
        const Trace t = run(s);
        CHECK_FALSE(t.ok);
        CHECK(any_error_contains(t, "not divisible by 4 heads"));
    }
    SECTION("no tokens") {
        Scenario s = three_words();
        s.target.tokens.clear();
        const Trace t = run(s);
        CHECK_FALSE(t.ok);
        CHECK(any_error_contains(t, "no tokens"));
    }
    SECTION("embeddings of the wrong width") {
        Scenario s = three_words();
        s.target.embeddings = Matrix::Zero(3, 5);
        CHECK(any_error_contains(run(s), "5 columns, expected d_model = 6"));
    }
    SECTION("a weight of the wrong shape") {
        Scenario s = three_words();
        s.w_k = Matrix::Zero(6, 4);
        CHECK(any_error_contains(run(s), "W_K is 6×4, expected 6×6"));
    }
    SECTION("direct Q and K of different widths") {
        Scenario s;
        s.input = InputMode::Direct;
        s.q = Matrix::Zero(2, 3);
        s.k = Matrix::Zero(2, 2);
        s.v = Matrix::Zero(2, 2);
        CHECK(any_error_contains(run(s), "same length d_k"));
    }
    SECTION("custom mask of the wrong shape") {
        Scenario s = three_words();
        s.mask = MaskKind::Custom;
        s.custom_mask = MaskMatrix::Constant(2, 3, true);
        CHECK(any_error_contains(run(s), "custom mask is 2×3, expected 3×3"));
    }
    SECTION("a size that does not fit is refused up front with the number") {
        Scenario s;
        s.input = InputMode::Direct;
        s.q = Matrix::Zero(40000, 1);
        s.k = Matrix::Zero(40000, 1);
        s.v = Matrix::Zero(40000, 1);
        CHECK(any_error_contains(run(s), "GiB"));
    }
    SECTION("d_model = 0") {
        Scenario s = three_words();
        s.d_model = 0;
        CHECK(any_error_contains(run(s), "d_model is 0"));
    }
}

TEST_CASE("NaN in an input is computed / flagged and located") {
    Scenario s = three_words();
    s.target.embeddings = resolved_embeddings(s.target, 6);
    s.target.embeddings(1, 2) = std::numeric_limits<float>::quiet_NaN();
    const Trace t = run(s);
    REQUIRE(t.ok);
    REQUIRE(t.non_finite_inputs.size() == 1);
    CHECK(t.non_finite_inputs[0].matrix == "X");
    CHECK(t.non_finite_inputs[0].cell.row == 1);
    CHECK(t.non_finite_inputs[0].cell.col == 2);
    CHECK_THAT(t.warnings.at(0), Contains("X(2,3)"));   // row 2, column 3 as the user counts them
    CHECK_FALSE(t.output.allFinite());
}

TEST_CASE("the non-finite report marks every matrix a NaN reaches and names its origin") {
    Scenario s = three_words();
    s.target.embeddings = resolved_embeddings(s.target, 6);
    s.mask = MaskKind::Causal;  // its −∞ fill alone is not a non-finite value
    const NonFiniteReport clean = non_finite_report(run(s));
    CHECK(clean.matrices.empty());
    CHECK(clean.origin.empty());

    s.target.embeddings(1, 2) = std::numeric_limits<float>::quiet_NaN();
    const Trace t = run(s);
    const NonFiniteReport report = non_finite_report(t);
    for (const char* reached : {"x", "x_pe", "head0.q", "head0.k", "head0.v", "head0.scores", "head0.weights", "head0.output", "concat", "output"})
        CHECK(report.contains(reached));
    CHECK_FALSE(report.contains("w_q"));  // the weights are upstream of X's NaN
    CHECK_FALSE(report.contains("pe"));
    CHECK_THAT(report.origin, Contains("X(2,3)"));
    // Every matrix with a non-finite visible value is in the report, and only those.
    for (const std::string& name : matrix_names(t)) {
        const Matrix& m = *find_matrix(t, name);
        bool bad = false;
        for (Eigen::Index r = 0; r < m.rows(); ++r)
            for (Eigen::Index c = 0; c < m.cols(); ++c)
                bad = bad || (!std::isfinite(m(r, c)) && !(name.find("masked_scores") != std::string::npos && !t.visible(r, c)));
        INFO(name);
        CHECK(report.contains(name) == bad);
    }
}

TEST_CASE("the non-finite report asks a weight its content's scan, and still finds a NaN put into it") {
    Scenario s = three_words();
    s.target.embeddings = resolved_embeddings(s.target, 6);
    s.w_q = xavier_uniform(6, 6, 3);
    s.w_v = xavier_uniform(6, 6, 4);
    const NonFiniteReport first = non_finite_report(run(s));
    CHECK(first.matrices.empty());
    // X edited: the same weights; every matrix computed from X is named, no weight.
    s.target.embeddings(0, 0) = std::numeric_limits<float>::quiet_NaN();
    const NonFiniteReport x_nan = non_finite_report(run(s));
    CHECK(x_nan.contains("x"));
    CHECK_FALSE(x_nan.contains("w_q"));
    CHECK_FALSE(x_nan.contains("w_v"));
    s.target.embeddings(0, 0) = 0.5f;
    // A NaN written into W_V is a new content: scanned, and reported.
    s.w_v.edit()(2, 3) = std::numeric_limits<float>::quiet_NaN();
    const Trace w_nan = run(s);
    const NonFiniteReport report = non_finite_report(w_nan);
    CHECK(report.contains("w_v"));
    CHECK(report.contains("head1.v"));  // column 4 of W_V: the second head's (d_k = 3)
    CHECK_FALSE(report.contains("head0.v"));
    CHECK_FALSE(report.contains("w_q"));
}

TEST_CASE("non-finite values from finite inputs: the naive softmax's overflow and 1e38 are named") {
    const Trace overflow = run(find_preset("naive-softmax-overflow")->scenario);
    const NonFiniteReport a = non_finite_report(overflow);
    REQUIRE_FALSE(a.matrices.empty());
    CHECK_THAT(a.origin, Contains("naive softmax overflowed"));
    Scenario s = three_words();
    s.target.embeddings = resolved_embeddings(s.target, 6);
    s.target.embeddings.row(0).setConstant(1e38f);
    const NonFiniteReport b = non_finite_report(run(s));
    REQUIRE_FALSE(b.matrices.empty());
    CHECK_THAT(b.origin, Contains("float range"));
}

TEST_CASE("token embeddings are deterministic and shared by repeated words") {
    Scenario s;
    s.target.tokens = {"the", "cat", "saw", "the", "dog"};
    s.d_model = 8;
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.x.row(0) == t.x.row(3));
    CHECK(t.x.row(0) != t.x.row(1));
    CHECK(token_embedding("cat", 8) == t.x.row(1));
    // Prefix-stable: a wider model extends the same vector.
    CHECK(token_embedding("cat", 16).leftCols(8) == token_embedding("cat", 8));
}

TEST_CASE("weights are seeded: same seed same weights / another seed other weights") {
    Scenario s = three_words();
    const Trace a = run(s), b = run(s);
    CHECK(a.w_q == b.w_q);
    s.seed = 2;
    const Trace c = run(s);
    CHECK(a.w_q != c.w_q);
    CHECK(a.w_q != a.w_k);
    // Xavier-uniform bound √(6 / (d + d)).
    CHECK(a.w_q->cwiseAbs().maxCoeff() <= std::sqrt(6.0f / 12.0f));
}

TEST_CASE("masks") {
    const MaskMatrix c = mask_matrix(MaskRule{MaskKind::Causal, 1, 3}, 3);
    CHECK(c(0, 0));
    CHECK_FALSE(c(0, 1));
    CHECK(c(2, 0));
    const MaskMatrix w = mask_matrix(MaskRule{MaskKind::SlidingWindow, 2, 5}, 5);
    CHECK(w(3, 3));
    CHECK(w(3, 2));
    CHECK_FALSE(w(3, 1));
    CHECK_FALSE(w(3, 4));
    const std::vector<bool> padding{false, true, false};
    const MaskMatrix p = mask_matrix(MaskRule{MaskKind::Padding, 1, 3, &padding}, 2);
    CHECK(p(0, 0));
    CHECK_FALSE(p(0, 1));
    CHECK_FALSE(p(1, 1));
    CHECK(p(1, 2));
    // A window longer than the row reaches back to key 0; a row past the keys (cross) sees none.
    const MaskRule wide{MaskKind::SlidingWindow, 3, 4};
    CHECK(fully_masked_rows(wide, 8) == std::vector<int>({6, 7}));
    CHECK(fully_masked_rows(MaskRule{MaskKind::Padding, 1, 3, &padding}, 2).empty());
}

namespace {

// Every block of the 13 × 13 mask: one block_hidden says is hidden has no visible cell (and, with `exact`,
// every other has one), one block_visible says is visible has every cell visible.
void check_blocks(const MaskRule& rule, const MaskMatrix& m, bool exact) {
    for (int i0 = 0; i0 < 13; ++i0)
        for (int i1 = i0 + 1; i1 <= 13; ++i1)
            for (int j0 = 0; j0 < 13; ++j0)
                for (int j1 = j0 + 1; j1 <= 13; ++j1) {
                    const auto block = m.block(i0, j0, i1 - i0, j1 - j0);
                    if (rule.block_hidden(i0, i1, j0, j1)) CHECK_FALSE(block.any());
                    else if (exact) CHECK(block.any());
                    if (rule.block_visible(i0, i1, j0, j1)) CHECK(block.all());
                }
}

}  // namespace

TEST_CASE("chunked mask: a query sees the keys of its own chunk up to itself, and its runs and blocks agree with it cell by cell") {
    for (int chunk : {1, 3, 4, 7, 20}) {
        INFO("chunk " << chunk);
        MaskRule rule;
        rule.kind = MaskKind::Chunked;
        rule.chunk = chunk;
        rule.n_keys = 13;
        const MaskMatrix m = mask_matrix(rule, 13);
        for (int i = 0; i < 13; ++i)
            for (int j = 0; j < 13; ++j) CHECK(m(i, j) == (j <= i && j / chunk == i / chunk));  // Llama 4's chunked_overlay
        check_blocks(rule, m, false);
        CHECK(fully_masked_rows(rule, 13).empty());  // every query sees itself
    }
    // the engine's scenario: chunks of 3 over 7 tokens, the fill where a key is in an earlier chunk
    Scenario s = three_words();
    s.target.embeddings = Matrix::Random(7, s.d_model);
    s.target.tokens.assign(7, "t");
    s.mask = MaskKind::Chunked;
    s.chunk = 3;
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.visible(5, 3));
    CHECK_FALSE(t.visible(5, 2));
    CHECK_FALSE(t.visible(3, 4));
    CHECK(t.head[0].masked_scores(6, 5) == -std::numeric_limits<float>::infinity());
    CHECK(t.head[0].weights(6, 6) == Approx(1.0f));  // the first of its chunk sees itself alone
    s.chunk = 0;
    CHECK(any_error_contains(run(s), "chunk size is 0"));
}

TEST_CASE("band mask: a query sees the keys up to w positions on either side, and its runs and blocks agree with it cell by cell") {
    for (int half : {0, 1, 2, 5, 20}) {
        INFO("half-width " << half);
        MaskRule rule;
        rule.kind = MaskKind::Band;
        rule.window = half;
        rule.n_keys = 13;
        const MaskMatrix m = mask_matrix(rule, 13);
        for (int i = 0; i < 13; ++i)
            for (int j = 0; j < 13; ++j) CHECK(m(i, j) == (std::abs(i - j) <= half));  // transformers' sliding_window_bidirectional_overlay
        check_blocks(rule, m, true);  // a block is skipped exactly when nothing in it is seen
        CHECK(fully_masked_rows(rule, 13).empty());  // every query sees itself
    }
    // the engine's scenario: ±2 over 7 tokens, later keys seen as well as earlier ones
    Scenario s = three_words();
    s.target.embeddings = Matrix::Random(7, s.d_model);
    s.target.tokens.assign(7, "t");
    s.mask = MaskKind::Band;
    s.window = 2;
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.visible(3, 5));
    CHECK(t.visible(3, 1));
    CHECK_FALSE(t.visible(3, 6));
    CHECK_FALSE(t.visible(3, 0));
    CHECK(t.head[0].masked_scores(0, 3) == -std::numeric_limits<float>::infinity());
    CHECK(t.head[0].weights.row(0).sum() == Approx(1.0f));
    CHECK(t.head[0].weights(0, 2) > 0.0f);  // a later key, within the band
    s.window = 0;
    const Trace own = run(s);
    REQUIRE(own.ok);
    CHECK(own.head[0].weights(4, 4) == Approx(1.0f));  // half-width 0: each query sees itself alone
    s.window = -1;
    CHECK(any_error_contains(run(s), "band half-width is -1"));
}

TEST_CASE("query temperature: each query × ln(⌊(p + 1)/floor_scale⌋ + 1)·attn_scale + 1 before its scores (Llama 4's NoPE layers)") {
    Scenario s = three_words();
    s.target.embeddings = Matrix::Random(9, s.d_model);
    s.target.tokens.assign(9, "t");
    s.mask = MaskKind::Causal;
    const Trace plain = run(s);
    s.temperature = {3.0f, 0.5f};
    const Trace t = run(s);
    REQUIRE(t.ok);
    REQUIRE(t.temperature.rows() == 9);
    for (int p = 0; p < 9; ++p) {
        const double tau = std::log(std::floor((p + 1) / 3.0) + 1.0) * 0.5 + 1.0;  // positions 0, 1: 1; 2 to 4: 1 + ln2/2; …
        CHECK(t.temperature(p, 0) == Approx(tau).epsilon(1e-6));
        for (size_t h = 0; h < t.head.size(); ++h) {
            CHECK((t.head[h].q.row(p) - tau * plain.head[h].q.row(p)).cwiseAbs().maxCoeff() < 1e-5f);
            CHECK((t.head[h].scores.row(p) - tau * plain.head[h].scores.row(p)).cwiseAbs().maxCoeff() < 1e-4f);
            CHECK(t.head[h].k == plain.head[h].k);  // keys unchanged
        }
    }
    CHECK(t.temperature(0, 0) == 1.0f);
    CHECK(t.temperature(8, 0) > t.temperature(2, 0));
    // the file keeps it; a bad one is refused
    const ScenarioLoad back = scenario_from_json(scenario_to_json(s), "tempered.json");
    for (const std::string& e : back.errors) INFO(e);
    REQUIRE(back.scenario);
    CHECK(back.scenario->temperature.floor_scale == 3.0f);
    CHECK(run(*back.scenario).output == t.output);
    s.temperature.floor_scale = -1.0f;
    CHECK(any_error_contains(run(s), "floor_scale is -1"));
}

TEST_CASE("gated attention: every head's output × σ(x·W_G + b_G) before W_O, as a plain loop computes it (Qwen3-Next)") {
    Scenario s = three_words();
    s.target.embeddings = Matrix::Random(5, s.d_model);
    s.target.tokens.assign(5, "t");
    s.mask = MaskKind::Causal;
    s.positional = PositionalEncoding::Rotary;
    s.block.residual = s.block.layer_norm = true;
    s.block.norm = NormPlacement::Pre;  // the gate reads what attention reads: LN₁(X)
    const Trace plain = run(s);
    s.output_gate.on = true;
    s.output_gate.b_g = Vector::LinSpaced(6, -2.0f, 2.0f);
    const Trace t = run(s);
    for (const std::string& e : t.errors) INFO(e);
    REQUIRE(t.ok);
    REQUIRE(t.w_g.size() == 6 * 6);
    const Matrix& x = t.block.norm1;
    for (int i = 0; i < 5; ++i)
        for (int c = 0; c < 6; ++c) {
            double z = s.output_gate.b_g(c);
            for (int k = 0; k < 6; ++k) z += static_cast<double>(x(i, k)) * (*t.w_g)(k, c);
            const double gate = 1.0 / (1.0 + std::exp(-z));
            CHECK(t.output_gate(i, c) == Approx(gate).epsilon(1e-5));
            CHECK(t.gated(i, c) == Approx(gate * plain.concat(i, c)).margin(1e-6));
        }
    CHECK(t.concat == plain.concat);  // the heads themselves are unchanged
    CHECK((t.output - Matrix(t.gated * *t.w_o)).cwiseAbs().maxCoeff() < 1e-5f);
    CHECK_FALSE(t.output.isApprox(plain.output, 1e-3f));
    // decode: one row against the cache equals the last row of the full run
    generate::LayerCache cache = generate::empty_cache(s);
    Matrix last;
    for (int p = 0; p < 5; ++p) last = generate::decode_layer(s, p, s.target.embeddings.row(p), cache);
    CHECK((last - t.block.output.bottomRows(1)).cwiseAbs().maxCoeff() < 1e-5f);
    // the file keeps it; bad shapes and direct input are refused
    const ScenarioLoad back = scenario_from_json(scenario_to_json(s), "gated.json");
    for (const std::string& e : back.errors) INFO(e);
    REQUIRE(back.scenario);
    CHECK(back.scenario->output_gate.on);
    CHECK(run(*back.scenario).output == t.output);
    Scenario wrong = s;
    wrong.output_gate.b_g = Vector::Zero(4);
    CHECK(any_error_contains(run(wrong), "b_G (the output gate) has 4 numbers, expected 6"));
    wrong = s;
    wrong.output_gate.w_g = Matrix::Zero(6, 4);
    CHECK(any_error_contains(run(wrong), "W_G (the output gate)"));
}

TEST_CASE("masked scores hold the fill value exactly where the mask hides a key") {
    Scenario s = three_words();
    s.mask = MaskKind::Causal;
    s.masked_fill = -1e9f;
    const Trace t = run(s);
    REQUIRE(t.ok);
    for (const HeadTrace& h : t.head)
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                CHECK(h.masked_scores(i, j) == (j > i ? -1e9f : h.scaled_scores(i, j)));
}

TEST_CASE("softmax of a −∞ row is the zero row, naive and stable agree on small scores") {
    Matrix scores(2, 3);
    const float inf = std::numeric_limits<float>::infinity();
    scores << 1, 2, 3, -inf, -inf, -inf;
    const Matrix stable = softmax_rows(scores, SoftmaxKind::Stable);
    const Matrix naive = softmax_rows(scores, SoftmaxKind::Naive);
    CHECK(stable.row(1).isZero(0));
    CHECK((stable.row(0) - naive.row(0)).cwiseAbs().maxCoeff() < 1e-6f);
    const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
    CHECK_THAT(stable(0, 2), WithinAbs(std::exp(3.0) / z, 1e-6));
}

TEST_CASE("ALiBi subtracts slope·distance from the scaled scores") {
    Scenario s = three_words();
    s.positional = PositionalEncoding::ALiBi;
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.head[0].alibi_slope == Approx(std::pow(2.0, -4.0)));  // 2^(−8·1/2)
    CHECK(t.head[1].alibi_slope == Approx(std::pow(2.0, -8.0)));
    for (const HeadTrace& h : t.head)
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                CHECK_THAT(h.scaled_scores(i, j), WithinAbs(h.scores(i, j) * t.scale - h.alibi_slope * std::abs(i - j), 1e-6));
}

TEST_CASE("RoPE makes a score depend on relative position only") {
    // The same vector at every position: score(i, j) must depend only on i − j.
    Scenario s;
    s.input = InputMode::Direct;
    const Matrix row = normal_matrix(1, 8, 4);
    s.q = row.replicate(6, 1);
    s.k = row.replicate(6, 1);
    s.v = Matrix::Identity(6, 6);
    s.positional = PositionalEncoding::Rotary;
    const Trace t = run(s);
    REQUIRE(t.ok);
    const Matrix& sc = t.head[0].scores;
    for (int i = 1; i < 6; ++i)
        for (int j = 1; j < 6; ++j) CHECK_THAT(sc(i, j), WithinAbs(sc(i - 1, j - 1), 1e-4));
    CHECK(t.head[0].q_unrotated.size() == s.q.size());
    CHECK(t.head[0].q.row(0) == s.q.row(0));  // position 0 is not rotated
}

TEST_CASE("the block: residual / LayerNorm and feed-forward") {
    Scenario s = three_words();
    s.block.residual = s.block.layer_norm = s.block.feed_forward = true;
    const Trace t = run(s);
    REQUIRE(t.ok);
    REQUIRE(t.has_block);
    CHECK((t.block.residual - (t.x_pe + t.output)).cwiseAbs().maxCoeff() < 1e-6f);
    for (int i = 0; i < 3; ++i) {
        CHECK_THAT(t.block.output.row(i).mean(), WithinAbs(0.0, 1e-5));
        CHECK_THAT((t.block.output.row(i).array().square()).mean(), WithinAbs(1.0, 1e-3));
    }
    CHECK(t.block.ffn_hidden.cols() == 4 * 6);
    CHECK((t.block.ffn_hidden.array() >= 0).all());
}

TEST_CASE("every matrix is reachable by name") {
    Scenario s = three_words();
    s.positional = PositionalEncoding::Rotary;
    const Trace t = run(s);
    const auto names = matrix_names(t);
    CHECK(std::find(names.begin(), names.end(), "head1.weights") != names.end());
    CHECK(std::find(names.begin(), names.end(), "head0.q_unrotated") != names.end());
    for (auto& n : names) CHECK(find_matrix(t, n) != nullptr);
    CHECK(find_matrix(t, "head9.weights") == nullptr);
    CHECK(find_matrix(t, "nonsense") == nullptr);
    CHECK(find_matrix(t, "head.weights") == nullptr);
}

TEST_CASE("run_into a reused trace equals a fresh run, whatever ran before") {
    Scenario a;
    a.target.tokens = {"one", "two", "three", "four"};
    a.d_model = 8;
    a.heads = 2;
    a.positional = PositionalEncoding::ALiBi;
    a.mask = MaskKind::Causal;
    a.block.residual = a.block.layer_norm = a.block.feed_forward = true;
    Scenario b;
    b.input = InputMode::Direct;
    b.q = normal_matrix(3, 4, 1);
    b.k = normal_matrix(5, 4, 2);
    b.v = normal_matrix(5, 2, 3);
    Scenario c = a;
    c.positional = PositionalEncoding::Rotary;
    c.attention = AttentionKind::Cross;
    c.source.tokens = {"x", "y"};
    c.heads = 4;
    Scenario bad = a;
    bad.heads = 3;
    Trace reused;
    for (const Scenario* s : {&a, &b, &c, &bad, &a, &c, &b}) {
        for (Detail detail : {Detail::Full, Detail::OutputOnly}) {
            RunOptions options;
            options.detail = detail;
            run_into(*s, options, reused);
            const Trace fresh = run(*s, options);
            CHECK(trace_to_json(reused) == trace_to_json(fresh));
            CHECK(reused.head.size() == fresh.head.size());
        }
    }
}

TEST_CASE("a scale is called custom only when it differs from 1/√d_k, and then both numbers are said", "[engine][scale]") {
    Scenario s;
    s.input = InputMode::Direct;
    s.heads = 1;
    s.q = normal_matrix(3, 16, 41);
    s.k = normal_matrix(3, 16, 42);
    s.v = normal_matrix(3, 16, 43);
    // Qwen 3's head_dim^−½ and the float 1/√16 itself: the usual scaling, named as such.
    for (const float usual : {0.25f, 1.0f / std::sqrt(16.0f)}) {
        s.score_scale = usual;
        const Trace t = run(s);
        REQUIRE(t.ok);
        CHECK_FALSE(has_custom_scale(t));
        CHECK_THAT(format_trace(t, 4), Catch::Matchers::Contains("scale = 1/\xE2\x88\x9A" "16") &&
                                           !Catch::Matchers::Contains("custom"));
    }
    // Gemma 2 27B's query_pre_attn_scalar 144 with d_k = 128 has the same shape here: 1/√20 for d_k = 16.
    s.score_scale = 1.0f / std::sqrt(20.0f);
    const Trace custom = run(s);
    REQUIRE(custom.ok);
    CHECK(has_custom_scale(custom));
    CHECK_THAT(format_trace(custom, 4), Catch::Matchers::Contains("scale = 0.2236 (custom)") &&
                                            Catch::Matchers::Contains("(custom, in place of 1/\xE2\x88\x9A" "16)"));
    s.scale = false;
    s.score_scale = 0.0f;
    CHECK_FALSE(has_custom_scale(run(s)));
}

TEST_CASE("a custom scale and logit soft-capping: s = c·tanh(q·k·scale / c), against a plain loop", "[engine][softcap]") {
    Scenario s;
    s.input = InputMode::Direct;
    s.heads = 2;
    s.q = normal_matrix(5, 8, 31) * 4.0f;  // scores of tens: the cap matters
    s.k = normal_matrix(6, 8, 32) * 4.0f;
    s.v = normal_matrix(6, 8, 33);
    s.mask = MaskKind::Custom;
    s.custom_mask = MaskMatrix::Constant(5, 6, true);
    s.custom_mask(1, 2) = false;
    s.score_scale = 0.3f;
    s.softcap = 7.0f;
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.scale == 0.3f);
    for (int h = 0; h < 2; ++h) {
        const HeadTrace& head = t.head[static_cast<size_t>(h)];
        REQUIRE(head.capped_scores.rows() == 5);
        for (int i = 0; i < 5; ++i) {
            double weights[6], sum = 0.0, max = -1e30;
            double capped[6];
            for (int j = 0; j < 6; ++j) {
                double dot = 0.0;
                for (int d = 0; d < 4; ++d) dot += double(s.q(i, h * 4 + d)) * double(s.k(j, h * 4 + d));
                capped[j] = 7.0 * std::tanh(dot * 0.3 / 7.0);
                CHECK(std::abs(head.capped_scores(i, j) - capped[j]) <= 1e-5 * std::max(1.0, std::abs(capped[j])));
                if (s.custom_mask(i, j)) max = std::max(max, capped[j]);
            }
            for (int j = 0; j < 6; ++j) sum += weights[j] = s.custom_mask(i, j) ? std::exp(capped[j] - max) : 0.0;
            for (int j = 0; j < 6; ++j) {
                CHECK(std::abs(head.weights(i, j) - weights[j] / sum) <= 1e-5);
                CHECK(std::abs(head.capped_scores(i, j)) < 7.0f);  // inside (−c, c)
            }
        }
    }
    SECTION("off: no capped matrix, the masked scores are the scaled ones where visible") {
        s.softcap = 0.0f;
        const Trace off = run(s);
        REQUIRE(off.ok);
        CHECK(off.head[0].capped_scores.size() == 0);
        CHECK(off.head[0].masked_scores(0, 0) == off.head[0].scaled_scores(0, 0));
    }
    SECTION("nonsense is refused, saying what") {
        s.softcap = -1.0f;
        CHECK_THAT(validate(s).front(), Catch::Matchers::Contains("soft-cap is -1"));
        s.softcap = 0.0f;
        s.score_scale = std::numeric_limits<float>::quiet_NaN();
        CHECK_THAT(validate(s).front(), Catch::Matchers::Contains("score scale"));
    }
    SECTION("scaling turned off leaves the scores unscaled and keeps the custom scale for when it is on again") {
        s.score_scale = 0.3f;  // d_k 4: not the usual 1/√4
        s.scale = false;
        CHECK(validate(s).empty());
        const Trace off = run(s);
        REQUIRE(off.ok);
        CHECK(off.scale == 1.0f);
        CHECK(off.head[0].scaled_scores == off.head[0].scores);
        CHECK_FALSE(has_custom_scale(off));
        s.scale = true;
        const Trace on = run(s);
        REQUIRE(on.ok);
        CHECK(on.scale == 0.3f);
        CHECK(on.head[0].scaled_scores.isApprox(on.head[0].scores * 0.3f));
        CHECK(has_custom_scale(on));
        // A saved scenario keeps both, and reads back as it was.
        s.scale = false;
        const ScenarioLoad back = scenario_from_text(scenario_to_json(s).dump(), "off.json");
        REQUIRE(back.scenario);
        CHECK_FALSE(back.scenario->scale);
        CHECK(back.scenario->score_scale == 0.3f);
    }
    SECTION("the scenario file keeps both, and refuses a string") {
        const std::string text = scenario_to_json(s).dump();
        CHECK_THAT(text, Catch::Matchers::Contains("\"softcap\":7.0") && Catch::Matchers::Contains("\"score_scale\":0.30000001192092896"));
        const ScenarioLoad back = scenario_from_text(text, "capped.json");
        REQUIRE(back.scenario);
        CHECK(back.scenario->softcap == 7.0f);
        CHECK(back.scenario->score_scale == 0.3f);
        const ScenarioLoad bad = scenario_from_text(R"({"q": [[1]], "k": [[1]], "v": [[1]], "softcap": "high"})", "bad.json");
        CHECK_FALSE(bad.scenario);
    }
}

TEST_CASE("grouped-query attention with a head width of its own, against a plain loop", "[engine][gqa]") {
    // d_model 10, 6 query heads of d_k 3 reading 2 K/V heads: heads 1-3 share K/V head 1.
    Scenario s;
    s.name = "gqa";
    s.d_model = 10;
    s.heads = 6;
    s.kv_heads = 2;
    s.head_dim = 3;
    s.target.embeddings = normal_matrix(5, 10, 41);
    s.w_q = normal_matrix(10, 18, 42);
    s.w_k = normal_matrix(10, 6, 43);
    s.w_v = normal_matrix(10, 6, 44);
    s.w_o = normal_matrix(18, 10, 45);
    s.b_k = normal_matrix(1, 6, 46).row(0);
    s.mask = MaskKind::Causal;
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.kv_heads == 2);
    CHECK(t.d_k == 3);
    CHECK(t.w_k->cols() == 6);
    const Matrix& x = s.target.embeddings;
    Matrix concat = Matrix::Zero(5, 18);
    for (int h = 0; h < 6; ++h) {
        const int g = h / 3;  // the K/V head it reads
        for (int i = 0; i < 5; ++i) {
            double scores[5], weights[5], sum = 0.0, max = -1e30;
            for (int j = 0; j <= i; ++j) {
                double dot = 0.0;
                for (int d = 0; d < 3; ++d) {
                    double q = 0.0, k = s.b_k(g * 3 + d);
                    for (int m = 0; m < 10; ++m) {
                        q += double(x(i, m)) * double((*s.w_q)(m, h * 3 + d));
                        k += double(x(j, m)) * double((*s.w_k)(m, g * 3 + d));
                    }
                    dot += q * k;
                }
                scores[j] = dot / std::sqrt(3.0);
                max = std::max(max, scores[j]);
            }
            for (int j = 0; j <= i; ++j) sum += weights[j] = std::exp(scores[j] - max);
            for (int j = 0; j < 5; ++j) {
                const double w = j <= i ? weights[j] / sum : 0.0;
                CHECK(std::abs(t.head[static_cast<size_t>(h)].weights(i, j) - w) <= 1e-5);
            }
            for (int d = 0; d < 3; ++d) {
                double out = 0.0;
                for (int j = 0; j <= i; ++j) {
                    double v = 0.0;
                    for (int m = 0; m < 10; ++m) v += double(x(j, m)) * double((*s.w_v)(m, g * 3 + d));
                    out += weights[j] / sum * v;
                }
                concat(i, h * 3 + d) = static_cast<float>(out);
            }
        }
    }
    CHECK((t.concat - concat).cwiseAbs().maxCoeff() <= 1e-4f);
    CHECK((t.output - concat * *s.w_o).cwiseAbs().maxCoeff() <= 1e-3f);
    // Heads of one group read the same keys and values.
    CHECK(t.head[0].k == t.head[2].k);
    CHECK(t.head[3].v == t.head[5].v);
    CHECK(t.head[0].k != t.head[3].k);

    SECTION("a count that does not divide, and weights of the wrong width, say what") {
        Scenario bad = s;
        bad.kv_heads = 4;
        CHECK_THAT(validate(bad).front(), Catch::Matchers::Contains("kv_heads is 4"));
        bad = s;
        bad.w_k = normal_matrix(10, 18, 1);
        CHECK_THAT(validate(bad).front(), Catch::Matchers::Contains("W_K") && Catch::Matchers::Contains("10×6"));
        bad = s;
        bad.head_dim = 0;  // d_model 10 is not divisible by 6 heads
        CHECK_FALSE(validate(bad).empty());
    }
    SECTION("the scenario file keeps both") {
        const ScenarioLoad back = scenario_from_text(scenario_to_json(s).dump(), "gqa.json");
        REQUIRE(back.scenario);
        CHECK(back.scenario->kv_heads == 2);
        CHECK(back.scenario->head_dim == 3);
        CHECK(trace_to_json(run(*back.scenario)) == trace_to_json(t));
    }
    SECTION("direct input: K and V of H_kv heads") {
        Scenario d;
        d.input = InputMode::Direct;
        d.heads = 4;
        d.kv_heads = 1;
        d.q = normal_matrix(3, 8, 1);
        d.k = normal_matrix(4, 2, 2);
        d.v = normal_matrix(4, 3, 3);
        const Trace direct = run(d);
        REQUIRE(direct.ok);
        CHECK(direct.d_k == 2);
        CHECK(direct.d_v == 3);
        CHECK(direct.concat.cols() == 12);
        CHECK(direct.head[3].k == d.k);
        d.k = normal_matrix(4, 8, 2);  // one K per query head: not what kv_heads 1 says
        CHECK_THAT(validate(d).front(), Catch::Matchers::Contains("k needs 2"));
    }
}

TEST_CASE("RoPE's variant travels in the scenario file, and is refused where RoPE is off", "[engine][rope]") {
    Scenario s;
    s.name = "rope";
    s.d_model = 8;
    s.heads = 2;
    s.target.tokens = tokenize("a b c d e");
    s.positional = PositionalEncoding::Rotary;
    s.rope.pairing = RopePairing::RotateHalf;
    s.rope.theta = 500000.0f;
    s.rope.rotary_dims = 2;
    s.rope.scaling = RopeScalingKind::Llama3;
    s.rope.factor = 8.0f;
    const Trace t = run(s);
    REQUIRE(t.ok);
    const ScenarioLoad back = scenario_from_text(scenario_to_json(s).dump(), "rope.json");
    REQUIRE(back.scenario);
    CHECK(back.scenario->rope.pairing == RopePairing::RotateHalf);
    CHECK(back.scenario->rope.scaling == RopeScalingKind::Llama3);
    CHECK(trace_to_json(run(*back.scenario)) == trace_to_json(t));
    // The variant changes the numbers: the default rotation gives others.
    Scenario plain = s;
    plain.rope = RopeOptions{};
    CHECK((run(plain).head[0].q - t.head[0].q).cwiseAbs().maxCoeff() > 1e-3f);
    const ScenarioLoad ignored = scenario_from_text(R"({"tokens": ["a"], "rope": {"theta": 1000}})", "r.json");
    CHECK_FALSE(ignored.scenario);
    const ScenarioLoad unknown = scenario_from_text(R"({"tokens": ["a"], "positional_encoding": "rope", "rope": {"base": 1000}})", "r.json");
    CHECK_FALSE(unknown.scenario);
    s.rope.rotary_dims = 3;
    CHECK_THAT(validate(s).front(), Catch::Matchers::Contains("even number"));
}

TEST_CASE("LongRoPE and the attention factor travel in the scenario file, and lists of another length or keys of another type are refused",
          "[engine][rope]") {
    Scenario s;
    s.name = "longrope";
    s.d_model = 8;
    s.heads = 2;
    s.target.tokens = tokenize("a b c d e f");
    s.positional = PositionalEncoding::Rotary;
    s.rope.pairing = RopePairing::RotateHalf;
    s.rope.scaling = RopeScalingKind::LongRope;
    s.rope.original_max_positions = 4;
    s.rope.short_factor = (Vector(2) << 1.0f, 1.5f).finished();
    s.rope.long_factor = (Vector(2) << 2.0f, 8.0f).finished();
    s.rope.attention_factor = 1.2f;
    const Trace t = run(s);
    REQUIRE(t.ok);
    const ScenarioLoad back = scenario_from_text(scenario_to_json(s).dump(), "longrope.json");
    for (const std::string& e : back.errors) INFO(e);
    REQUIRE(back.scenario);
    CHECK(reflect::equal(back.scenario->rope, s.rope));
    CHECK(trace_to_json(run(*back.scenario)) == trace_to_json(t));
    // 6 tokens take the long factors; the first 4 alone take the short ones
    Scenario four = s;
    four.target.tokens.resize(4);
    CHECK((run(four).head[0].q.row(3) - t.head[0].q.row(3)).cwiseAbs().maxCoeff() > 1e-4f);
    // The attention factor grows q·k over the turned dims by its square
    Scenario plain_factor = s;
    plain_factor.rope.attention_factor = 1.0f;
    CHECK(t.head[0].scores(5, 2) == Approx(1.44 * run(plain_factor).head[0].scores(5, 2)).epsilon(1e-4));
    Scenario bad = s;
    bad.rope.long_factor = Vector::Constant(3, 2.0f);
    CHECK_THAT(validate(bad).front(), Catch::Matchers::Contains("long_factor has 3 factors: expected 2"));
    bad = s;
    bad.rope.short_factor(1) = -1.0f;
    CHECK_THAT(validate(bad).front(), Catch::Matchers::Contains("short_factor holds a factor that is not a number above 0"));
    bad = s;
    bad.rope.attention_factor = 0.0f;
    CHECK_THAT(validate(bad).front(), Catch::Matchers::Contains("attention factor"));
    const char* linear_with_lists =
        R"({"tokens": ["a"], "positional_encoding": "rope", "rope": {"scaling": {"type": "linear", "factor": 2, "short_factor": [1]}}})";
    CHECK_THAT(scenario_from_text(linear_with_lists, "r.json").errors.front(), Catch::Matchers::Contains("is LongRoPE's"));
    const char* longrope_with_factor = R"({"tokens": ["a"], "positional_encoding": "rope", "rope": {"scaling": {"type": "longrope",
        "factor": 2, "short_factor": [1], "long_factor": [1]}}})";
    CHECK_THAT(scenario_from_text(longrope_with_factor, "r.json").errors.front(), Catch::Matchers::Contains("would be ignored"));
}

TEST_CASE("a product shared among threads by its columns gives Eigen's own numbers, bit for bit") {
    // The engine's products (projections, W_O, the MLP with and without biases, the tied LM
    // head's one row) and the
    // remainders of Eigen's register blocks: n below and above 4 and 8, widths that are not
    // multiples of 8, 24 or 48, depths blocked (above ~288) and not.
    const auto [n, depth, cols] = GENERATE(table<Eigen::Index, Eigen::Index, Eigen::Index>({
        {200, 576, 576}, {200, 576, 1536}, {200, 1536, 576}, {20, 768, 2304}, {20, 3072, 768}, {37, 576, 192},
        {9, 64, 1000}, {8, 300, 517}, {3, 100, 4099}, {200, 57, 301}, {1, 576, 4099}, {1, 77, 50257 / 7}, {2, 768, 999}}));
    const Matrix a = Matrix::Random(n, depth);
    const Matrix b = Matrix::Random(depth, cols);
    const Matrix table = Matrix::Random(cols, depth);  // an embedding table (V × d): a·Eᵀ
    const Matrix bias = Matrix::Random(1, cols);
    Matrix whole(n, cols), whole_t(n, cols);
    whole.noalias() = a * b;
    whole_t.noalias() = a * table.transpose();
    const Matrix whole_biased = (a * b).rowwise() + bias.row(0);  // a column-major product inside: other last bits
    Matrix whole_assigned;
    whole_assigned = a * b;  // the same, through a temporary
    for (int chunks : {2, 3, 4, 7}) {
        INFO("n " << n << ", depth " << depth << ", columns " << cols << ", " << chunks << " threads");
        Matrix split, split_t, split_biased, split_assigned;
        product_into(a, b, split, ProductKernel::row_major, chunks);
        product_into(a, table.transpose(), split_t, ProductKernel::row_major, chunks);
        product_plus_bias_into(a, b, bias, split_biased, chunks);
        product_into(a, b, split_assigned, ProductKernel::column_major, chunks);
        CHECK(split.rows() == n);
        CHECK(split.cols() == cols);
        CHECK(std::memcmp(split.data(), whole.data(), sizeof(float) * static_cast<size_t>(whole.size())) == 0);
        CHECK(std::memcmp(split_t.data(), whole_t.data(), sizeof(float) * static_cast<size_t>(whole_t.size())) == 0);
        CHECK(std::memcmp(split_biased.data(), whole_biased.data(), sizeof(float) * static_cast<size_t>(whole.size())) == 0);
        CHECK(std::memcmp(split_assigned.data(), whole_assigned.data(), sizeof(float) * static_cast<size_t>(whole.size())) == 0);
    }
}

TEST_CASE("a weight's non-finite check is made once per content: a NaN written into a shared weight is still found") {
    Scenario s = three_words();
    s.target.embeddings = resolved_embeddings(s.target, 6);
    s.w_q = xavier_uniform(6, 6, 3);
    const SharedMatrix model_w_q = s.w_q;  // a model's weight, shared by the scenario
    CHECK(run(s).non_finite_inputs.empty());
    s.w_q.edit()(1, 2) = std::numeric_limits<float>::quiet_NaN();  // the scenario's own copy now
    const Trace edited = run(s);
    REQUIRE(edited.non_finite_inputs.size() == 1);
    CHECK(edited.non_finite_inputs[0].matrix == "W_Q");
    CHECK(edited.non_finite_inputs[0].cell.row == 1);
    CHECK(edited.non_finite_inputs[0].cell.col == 2);
    CHECK_FALSE(model_w_q.first_non_finite().valid());  // the model's weight is as it was
    s.w_q = model_w_q;
    CHECK(run(s).non_finite_inputs.empty());
    // Edited in place where no one else holds it: the same matrix, found again.
    SharedMatrix own = xavier_uniform(6, 6, 5);
    s.w_q = SharedMatrix();
    CHECK_FALSE(own.first_non_finite().valid());
    own.edit()(4, 0) = std::numeric_limits<float>::infinity();
    CHECK(own.first_non_finite().row == 4);
    CHECK(own.first_non_finite().col == 0);
}
