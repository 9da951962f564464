// Edit commands on a Scenario: no window, no GL.
#include <catch2/catch.hpp>

#include <cmath>

#include "edits.hpp"
#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "session_fixtures.hpp"

using namespace attn;
using namespace attn::edits;
using namespace attn::testing;

namespace {

// Every cell equal except (row, col).
void require_only_cell_changed(const Matrix& before, const Matrix& after, int row, int col, float value) {
    REQUIRE(before.rows() == after.rows());
    REQUIRE(before.cols() == after.cols());
    for (Eigen::Index r = 0; r < before.rows(); ++r)
        for (Eigen::Index c = 0; c < before.cols(); ++c) {
            if (r == row && c == col) CHECK(after(r, c) == value);
            else CHECK(after(r, c) == before(r, c));
        }
}

}  // namespace

TEST_CASE("editing a cell of X materialises X, changes exactly that value and marks the session dirty") {
    Session session = ready(sentence_scenario());
    REQUIRE(session.scenario.target.embeddings.size() == 0);  // derived from the text so far
    const Matrix x_before = session.trace.x;
    const auto generation = session.generation;

    session.push(SetCell{MatrixId::X, 1, 2, 0.5f});
    REQUIRE(apply_pending(session));
    CHECK(session.dirty);
    CHECK(session.pending.empty());
    require_only_cell_changed(x_before, session.scenario.target.embeddings, 1, 2, 0.5f);

    REQUIRE(update(session));
    CHECK_FALSE(session.dirty);
    CHECK(session.generation == generation + 1);
    require_only_cell_changed(x_before, session.trace.x, 1, 2, 0.5f);
    // Q row 1 follows the edit; row 0 does not.
    const Matrix q_expected = session.trace.x_pe * *session.trace.w_q;
    CHECK(session.trace.head[0].q(1, 0) == Approx(q_expected(1, 0)));
}

TEST_CASE("editing a weight materialises the seeded W and changes one cell") {
    Session session = ready(sentence_scenario());
    const Matrix w_before = session.trace.w_k;
    session.push(SetCell{MatrixId::WK, 3, 5, -2.25f});
    REQUIRE(update(session));
    require_only_cell_changed(w_before, session.scenario.w_k, 3, 5, -2.25f);
    require_only_cell_changed(w_before, session.trace.w_k, 3, 5, -2.25f);
    CHECK(session.trace.w_q == resolved_weight(Matrix(), 8, 8, 7, 0));  // the other weights untouched
}

TEST_CASE("editing a direct-mode Q cell changes that cell of the head's columns") {
    Session session = ready(preset_scenario("dot-product-3-tokens"));
    REQUIRE(session.scenario.input == InputMode::Direct);
    const Matrix q_before = session.scenario.q;
    session.push(SetCell{MatrixId::Q, 2, 1, 4.0f});
    REQUIRE(update(session));
    require_only_cell_changed(q_before, session.scenario.q, 2, 1, 4.0f);
    CHECK(session.trace.head[0].q(2, 1) == 4.0f);
}

TEST_CASE("an edit that changes nothing does not mark the session dirty") {
    Session session = ready(sentence_scenario());
    session.push(SetCell{MatrixId::X, 0, 0, 1.0f});
    REQUIRE(update(session));
    session.push(SetCell{MatrixId::X, 0, 0, 1.0f});
    CHECK_FALSE(apply_pending(session));
    CHECK_FALSE(session.dirty);
    session.push(SetCell{MatrixId::X, 99, 0, 1.0f});  // out of range
    CHECK_FALSE(apply_pending(session));
    CHECK_FALSE(session.dirty);
}

TEST_CASE("NaN typed into a cell is kept and the engine flags it") {
    Session session = ready(sentence_scenario());
    session.push(SetCell{MatrixId::X, 2, 3, std::nanf("")});
    update(session);
    CHECK(std::isnan(session.scenario.target.embeddings(2, 3)));
    REQUIRE(session.trace.ok);
    REQUIRE_FALSE(session.trace.non_finite_inputs.empty());
    CHECK(session.trace.non_finite_inputs[0].cell.row == 2);
    CHECK(session.trace.non_finite_inputs[0].cell.col == 3);
}

TEST_CASE("changing the number of heads re-splits d_k and keeps the weights") {
    Session session = ready(sentence_scenario());
    session.push(SetCell{MatrixId::WQ, 0, 0, 0.75f});  // an edited W must survive the re-split
    REQUIRE(update(session));
    const Matrix w_q = session.trace.w_q, w_v = session.trace.w_v;
    CHECK(head_choices(session.scenario) == std::vector<int>{1, 2, 4, 8});
    for (int heads : {1, 2, 4, 8}) {
        session.push(SetHeads{heads});
        update(session);
        REQUIRE(session.trace.ok);
        CHECK(session.trace.heads == heads);
        CHECK(session.trace.d_k == 8 / heads);
        CHECK(session.trace.head.size() == static_cast<size_t>(heads));
        CHECK(session.trace.head[0].q.cols() == 8 / heads);
        CHECK(session.trace.w_q == w_q);
        CHECK(session.trace.w_v == w_v);
        CHECK(session.trace.concat.cols() == 8);
    }
    session.push(SetHeads{3});  // 3 does not divide 8: refused, nothing changes
    CHECK_FALSE(apply_pending(session));
    CHECK(session.scenario.heads == 8);
}

TEST_CASE("painting a custom mask cell sets exactly that cell") {
    Session session = ready(sentence_scenario());
    session.push(SetMaskKind{MaskKind::Causal});
    REQUIRE(update(session));
    const MaskMatrix causal = session.trace.visible;

    session.push(SetMaskKind{MaskKind::Custom});  // starts from the mask on screen
    REQUIRE(update(session));
    CHECK((session.trace.visible == causal).all());

    session.push(PaintMaskCell{2, 1, false});
    REQUIRE(update(session));
    CHECK(session.scenario.mask == MaskKind::Custom);
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
            const bool expected = r == 2 && c == 1 ? false : causal(r, c);
            CHECK(session.scenario.custom_mask(r, c) == expected);
            CHECK(session.trace.visible(r, c) == expected);
        }
    CHECK(session.trace.head[0].weights(2, 1) == 0.0f);
}

TEST_CASE("token edits keep an edited X row with its token") {
    Session session = ready(sentence_scenario());
    session.push(SetCell{MatrixId::X, 1, 0, 9.0f});  // "cat" gets a custom first component
    REQUIRE(update(session));

    session.push(MoveToken{Side::Target, 1, 3});  // the cat moves to the end
    REQUIRE(update(session));
    CHECK(session.scenario.target.tokens == std::vector<std::string>{"the", "sat", "down", "cat"});
    CHECK(session.trace.x(3, 0) == 9.0f);

    session.push(InsertToken{Side::Target, 0, "a"});
    REQUIRE(update(session));
    CHECK(session.trace.n_queries == 5);
    CHECK(session.trace.x(4, 0) == 9.0f);

    session.push(DeleteToken{Side::Target, 4});
    REQUIRE(update(session));
    CHECK(session.scenario.target.tokens == std::vector<std::string>{"a", "the", "sat", "down"});
    CHECK(session.scenario.target.embeddings.rows() == 4);

    session.push(SetTokens{Side::Target, tokenize("a dog sat")});
    REQUIRE(update(session));
    CHECK(session.trace.query_tokens == std::vector<std::string>{"a", "dog", "sat"});
}

TEST_CASE("an impossible scenario keeps the last good trace and the user's edit") {
    Session session = ready(sentence_scenario());
    const auto generation = session.generation;
    const Matrix weights = session.trace.head[0].weights;
    session.push(DeleteToken{Side::Target, 0});
    session.push(DeleteToken{Side::Target, 0});
    session.push(DeleteToken{Side::Target, 0});
    session.push(DeleteToken{Side::Target, 0});  // the last token: refused
    update(session);
    CHECK(session.scenario.target.tokens.size() == 1);

    Scenario impossible = session.scenario;
    impossible.w_q = Matrix::Ones(3, 3);  // W_Q must be d_model × d_model
    session.push(ReplaceScenario{impossible});
    CHECK_FALSE(update(session));
    CHECK_FALSE(session.errors.empty());
    CHECK(session.scenario.w_q.rows() == 3);  // the edit is kept
    CHECK(session.trace.ok);                  // and the last good trace stays
    CHECK(session.generation == generation + 1);
}

TEST_CASE("successive embedding edits take the incremental path and equal a full run") {
    Scenario s = sentence_scenario();
    s.mask = MaskKind::Causal;
    Session session = ready(s);
    for (int i = 0; i < 5; ++i) {
        session.push(SetCell{MatrixId::X, i % 4, (i * 3) % 8, 0.25f * static_cast<float>(i) - 0.5f});
        REQUIRE(update(session));
        const Trace full = run(session.scenario);
        REQUIRE(full.ok);
        for (size_t h = 0; h < full.head.size(); ++h) {
            CHECK((session.trace.head[h].weights - full.head[h].weights).cwiseAbs().maxCoeff() < 1e-5f);
            CHECK((session.trace.head[h].output - full.head[h].output).cwiseAbs().maxCoeff() < 1e-5f);
        }
        CHECK((session.trace.output - full.output).cwiseAbs().maxCoeff() < 1e-5f);
        CHECK(session.trace.x == full.x);
    }
    session.push(SetHeads{4});  // not an embedding edit: a full run
    REQUIRE(update(session));
    CHECK(session.trace.head.size() == 4);
}
