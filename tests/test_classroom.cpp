// Lessons, comparisons, hand checks, exports and undo: the classroom's core.
#include <catch2/catch.hpp>

#include <fstream>

#include "analysis.hpp"
#include "engine.hpp"
#include "export.hpp"
#include "history.hpp"
#include "reflect.hpp"
#include "lesson.hpp"
#include "presets.hpp"
#include "serialize.hpp"

using namespace attn;
using Catch::Matchers::Contains;

TEST_CASE("every shipped lesson loads and every step computes") {
    std::vector<std::string> errors;
    const auto lessons = load_lessons(ATTNLAB_LESSONS_DIR, errors);
    for (auto& e : errors) FAIL(e);
    REQUIRE(lessons.size() >= 6);
    for (const Lesson& lesson : lessons) {
        INFO(lesson.file);
        CHECK_FALSE(lesson.title.empty());
        REQUIRE_FALSE(lesson.steps.empty());
        for (int i = 0; i < static_cast<int>(lesson.steps.size()); ++i) {
            CHECK_FALSE(lesson.steps[static_cast<size_t>(i)].text.empty());
            CHECK(run(scenario_at_step(lesson, i)).ok);
        }
    }
}

TEST_CASE("the positional-encoding lesson shows what it claims") {
    const auto load = load_lesson_file(std::string(ATTNLAB_LESSONS_DIR) + "/05-positional-encoding.json");
    REQUIRE(load.lesson);
    const Lesson& l = *load.lesson;
    // Steps 1 and 2: no PE, "dog bites man" vs "man bites dog": the rows are only permuted.
    const Trace a = run(scenario_at_step(l, 0)), b = run(scenario_at_step(l, 1));
    CHECK((a.output.row(0) - b.output.row(2)).cwiseAbs().maxCoeff() < 1e-5f);
    CHECK((a.output.row(2) - b.output.row(0)).cwiseAbs().maxCoeff() < 1e-5f);
    // Steps 4 and 5: with PE, no longer a permutation.
    const Trace c = run(scenario_at_step(l, 3)), d = run(scenario_at_step(l, 4));
    CHECK((c.output.row(0) - d.output.row(2)).cwiseAbs().maxCoeff() > 1e-3f);
}

TEST_CASE("a malformed lesson names the file and the line") {
    SECTION("unknown stage") {
        const std::string text = "{\n  \"title\": \"t\",\n  \"preset\": \"dog-bites-man\",\n  \"steps\": [\n"
                                 "    {\"stage\": \"scores\", \"text\": \"a\"},\n    {\"stage\": \"wieghts\", \"text\": \"b\"}\n  ]\n}\n";
        const auto load = lesson_from_text(text, "bad-lesson.json");
        CHECK_FALSE(load.lesson);
        REQUIRE_FALSE(load.errors.empty());
        CHECK_THAT(load.errors[0], Contains("bad-lesson.json: line 6") && Contains("step 2") && Contains("wieghts"));
    }
    SECTION("not JSON") {
        const auto load = lesson_from_text("{\n\"title\": \"t\",\n\"steps\": [\n}", "broken.json");
        CHECK_THAT(load.errors.at(0), Contains("broken.json: line 4"));
    }
    SECTION("unknown preset") {
        const auto load = lesson_from_text(R"({"title": "t", "preset": "nope", "steps": [{"stage": "scores", "text": "x"}]})", "p.json");
        CHECK_THAT(load.errors.at(0), Contains("p.json: line 1") && Contains("unknown preset \"nope\""));
    }
    SECTION("a step whose toggles make the scenario impossible") {
        const auto load = lesson_from_text(
            R"({"title": "t", "preset": "dog-bites-man", "steps": [{"stage": "scores", "text": "x", "toggles": {"heads": 3}}]})", "h.json");
        CHECK_THAT(load.errors.at(0), Contains("h.json") && Contains("step 1") && Contains("not divisible by 3 heads"));
    }
}

TEST_CASE("scaling keeps the softmax soft as d_k grows, without it the softmax sharpens") {
    const auto points = softmax_sharpness({1, 4, 16, 64, 256}, 32, 200, 1);
    REQUIRE(points.size() == 5);
    CHECK(points[4].max_weight_unscaled > 0.8);
    CHECK(points[4].max_weight_unscaled > points[0].max_weight_unscaled + 0.4);
    CHECK(std::abs(points[4].max_weight_scaled - points[0].max_weight_scaled) < 0.1);
    CHECK(points[4].entropy_unscaled < 0.5 * points[4].entropy_scaled);
}

TEST_CASE("compare: the difference equals B − A cell for cell") {
    Scenario a = find_preset("animal-was-tired")->scenario;
    Scenario b = a;
    b.mask = MaskKind::Causal;
    const Trace ta = run(a), tb = run(b);
    const auto diffs = compare_traces(ta, tb);
    bool seen_weights = false;
    for (const auto& d : diffs) {
        const Matrix* ma = find_matrix(ta, d.name);
        const Matrix* mb = find_matrix(tb, d.name);
        REQUIRE(ma);
        REQUIRE(mb);
        for (Eigen::Index i = 0; i < ma->rows(); ++i)
            for (Eigen::Index j = 0; j < ma->cols(); ++j)
                if (std::isfinite((*mb)(i, j)) && std::isfinite((*ma)(i, j))) {
                    CHECK(d.difference(i, j) == (*mb)(i, j) - (*ma)(i, j));
                }
        if (d.name == "head0.weights") {
            seen_weights = true;
            CHECK(d.max_abs > 0.0f);
        }
        if (d.name == "x") CHECK(d.max_abs == 0.0f);
    }
    CHECK(seen_weights);
}

TEST_CASE("check my hand calculation") {
    const Trace t = run(find_preset("dot-product-3-tokens")->scenario);
    SECTION("right to the digits typed") {
        const auto c = check_hand_value(t, "head0.weights", 0, 0, 0.40, 2);
        CHECK(c.correct);
    }
    SECTION("the article's 0.42 is wrong") {
        const auto c = check_hand_value(t, "head0.weights", 0, 0, 0.42, 2);
        CHECK_FALSE(c.correct);
        CHECK_THAT(c.verdict, Contains("0.401"));
    }
    SECTION("a raw score where the scaled one belongs") {
        const auto c = check_hand_value(t, "head0.scaled_scores", 2, 0, 2.0, 1);
        CHECK_FALSE(c.correct);
        CHECK_THAT(c.verdict, Contains("raw score") && Contains("√d_k"));
    }
    SECTION("the exponential without the division") {
        const auto c = check_hand_value(t, "head0.weights", 0, 0, 2.028, 3);
        CHECK_FALSE(c.correct);
        CHECK_THAT(c.verdict, Contains("exponential") && Contains("sum"));
    }
    SECTION("an output shows its terms") {
        const auto c = check_hand_value(t, "head0.output", 0, 1, 4.0, 0);
        CHECK_FALSE(c.correct);
        CHECK_THAT(c.verdict, Contains("0.198·5.000"));
    }
}

TEST_CASE("CSV and JSON exports equal the trace") {
    const Trace t = run(find_preset("she-gave-her-dog-a-bone")->scenario);
    for (const std::string& name : matrix_names(t)) {
        INFO(name);
        const Matrix& m = *find_matrix(t, name);
        const Matrix back = matrix_from_csv(matrix_to_csv(m, t.query_tokens, {}), false, true);
        REQUIRE(back.rows() == m.rows());
        REQUIRE(back.cols() == m.cols());
        for (Eigen::Index i = 0; i < m.size(); ++i)
            if (std::isfinite(m.data()[i])) CHECK(back.data()[i] == m.data()[i]);  // 9 digits: exact for float32
    }
    const auto j = trace_to_json(t);
    CHECK(j["heads"][1]["weights"][2][3].get<float>() == t.head[1].weights(2, 3));
}

TEST_CASE("Markdown and LaTeX tables have the right shape and values") {
    Matrix m(2, 3);
    m << 0.25f, 0.5f, 0.25f, 1.0f, 0.0f, -INFINITY;
    const std::string md = matrix_to_markdown(m, {"I", "love"}, {"a", "b", "c"}, 2);
    CHECK(md == "| | a | b | c |\n|---|---:|---:|---:|\n| I | 0.25 | 0.50 | 0.25 |\n| love | 1.00 | 0.00 | -inf |\n");
    const std::string tex = matrix_to_latex(m, {"I", "lo_ve"}, {"a", "b", "c"}, 1);
    CHECK_THAT(tex, Contains("\\begin{tabular}{lrrr}") && Contains("lo\\_ve & 1.0 & 0.0 & $-\\infty$ \\\\"));
}

TEST_CASE("undo after N edits restores the original scenario exactly, redo replays them") {
    Scenario s = find_preset("bank-deposit")->scenario;
    s.target.embeddings = resolved_embeddings(s.target, s.d_model);
    const auto original = scenario_to_json(s);
    History history;
    std::vector<nlohmann::json> states;
    for (int i = 0; i < 20; ++i) {
        history.record(s);
        if (i % 3 == 0) s.target.embeddings(i % 7, i % 8) += 0.5f;
        else if (i % 3 == 1) s.heads = s.heads == 2 ? 4 : 2;
        else s.mask = s.mask == MaskKind::Causal ? MaskKind::None : MaskKind::Causal;
        states.push_back(scenario_to_json(s));
    }
    for (int i = 0; i < 20; ++i) REQUIRE(history.undo(s));
    CHECK_FALSE(history.undo(s));
    CHECK(scenario_to_json(s) == original);
    for (int i = 0; i < 20; ++i) REQUIRE(history.redo(s));
    CHECK(scenario_to_json(s) == states.back());
    history.undo(s);
    history.record(s);  // a new edit drops the redo branch
    CHECK_FALSE(history.can_redo());
}

TEST_CASE("undo history of a 65,536-token scenario stays bounded: unchanged chunks are shared") {
    constexpr int n = 65536;
    Scenario s;
    s.input = InputMode::Embeddings;
    s.d_model = 64;
    s.heads = 4;
    for (int i = 0; i < n; ++i) s.target.tokens.push_back("token" + std::to_string(i));
    s.target.embeddings = Matrix::Random(n, 64);
    const size_t scenario_bytes = static_cast<size_t>(n) * 64 * sizeof(float);  // 16 MiB of embeddings alone

    // One cell per edit: each step adds one 64 KiB chunk, not a 16 MiB copy.
    History history(256, size_t{64} << 20);
    constexpr int edits = 270;
    Scenario step_14;
    for (int i = 0; i < edits; ++i) {
        if (i == edits - 256) step_14 = s;
        history.record(s, "set X[" + std::to_string(i) + "]");
        s.target.embeddings((i * 977) % n, i % 64) += 1.0f;
    }
    CHECK(history.undo_depth() == 256);
    CHECK(history.undo_action() == "set X[269]");
    const size_t held = history.bytes();
    INFO("history holds " << held << " bytes");
    CHECK(held > scenario_bytes);                                        // one full copy is there
    CHECK(held < scenario_bytes + 256 * History::kChunkBytes + (size_t{8} << 20));  // and then a chunk per step
    // Every step comes back exactly.
    for (int i = 0; i < 256; ++i) REQUIRE(history.undo(s));
    CHECK_FALSE(history.undo(s));
    CHECK(reflect::equal(s, step_14));
    CHECK(history.redo_action() == "set X[14]");
    CHECK(history.bytes() < held + (size_t{8} << 20));  // the redo side shares the same chunks

    // Edits that change everything: the oldest steps go, the byte bound holds, and the newest
    // step always stays.
    History small(256, size_t{40} << 20);
    for (int i = 0; i < 6; ++i) {
        small.record(s, "scale X");
        s.target.embeddings *= 1.5f;
        CHECK(small.bytes() <= (size_t{40} << 20));
        CHECK(small.undo_depth() >= 1);
    }
    CHECK(small.undo_depth() < 6);
    History tiny(256, 1024);
    tiny.record(s, "too big to keep two");
    CHECK(tiny.undo_depth() == 1);
}
