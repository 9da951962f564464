// The classroom glue without a window: undo/redo through the session, session files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "comparison.hpp"
#include "attention/engine.hpp"
#include "edits.hpp"
#include "tensor/export.hpp"
#include "export_file.hpp"
#include "teaching/presets.hpp"
#include "attention/serialize.hpp"
#include "session_file.hpp"
#include "session_fixtures.hpp"

using namespace attn;
using namespace attn::edits;
using namespace attn::testing;

TEST_CASE("undo after N edits restores the original scenario exactly, redo replays them") {
    Session session = ready(sentence_scenario());
    const nlohmann::json original = scenario_to_json(session.scenario);
    const std::vector<Edit> batches = {SetCell{MatrixId::X, 1, 2, 0.5f}, SetHeads{4},       SetMaskKind{MaskKind::Causal},
                                       RenameToken{Side::Target, 0, "a"}, SetScale{false},  InsertToken{Side::Target, 2, "big"},
                                       SetCell{MatrixId::WQ, 0, 0, -1.25f}, SetPositional{PositionalEncoding::Sinusoidal}};
    std::vector<nlohmann::json> after_each;
    for (const Edit& e : batches) {
        session.push(e);
        REQUIRE(update(session));
        after_each.push_back(scenario_to_json(session.scenario));
    }
    REQUIRE(after_each.back() != original);
    for (size_t i = 0; i < batches.size(); ++i) {
        session.request_undo();
        update(session);
    }
    CHECK(scenario_to_json(session.scenario) == original);
    CHECK_FALSE(undo(session));  // nothing before the first edit
    for (size_t i = 0; i < batches.size(); ++i) {
        REQUIRE(redo(session));
        update(session);
        CHECK(scenario_to_json(session.scenario) == after_each[i]);
    }
    CHECK_FALSE(redo(session));
}

TEST_CASE("an edit that changes nothing is not an undo step, and a new edit ends the redo branch") {
    Session session = ready(sentence_scenario());
    session.push(SetHeads{3});  // does not divide d_model = 8: rejected, scenario untouched
    update(session);
    CHECK_FALSE(session.history.can_undo());
    session.push(SetHeads{4});
    update(session);
    REQUIRE(undo(session));
    update(session);
    CHECK(session.history.can_redo());
    session.push(SetScale{false});
    update(session);
    CHECK_FALSE(session.history.can_redo());
}

TEST_CASE("a batch of edits in one frame is one undo step") {
    Session session = ready(sentence_scenario());
    const nlohmann::json original = scenario_to_json(session.scenario);
    session.push(SetCell{MatrixId::X, 0, 0, 0.1f});
    session.push(SetCell{MatrixId::X, 0, 0, 0.2f});
    session.push(SetCell{MatrixId::X, 0, 0, 0.3f});
    update(session);
    REQUIRE(undo(session));
    update(session);
    CHECK(scenario_to_json(session.scenario) == original);
}

TEST_CASE("save then load a session restores an identical trace and the view") {
    for (const Preset& preset : presets()) {
        INFO(preset.name);
        Session session = ready(preset.scenario);
        session_file::ViewChoices view;
        view.shown_head = 1;
        view.all_heads = true;
        view.presenter = true;
        view.lesson = "03-masks.json";
        view.step = 2;
        const std::string path = temp_path("session.json");
        std::string error;
        REQUIRE(session_file::save_session(path, session.scenario, view, &error));
        const session_file::SessionLoad load = session_file::load_session(path);
        REQUIRE(load.errors.empty());
        REQUIRE(load.scenario);
        CHECK(load.view.shown_head == 1);
        CHECK(load.view.all_heads);
        CHECK(load.view.presenter);
        CHECK(load.view.lesson == "03-masks.json");
        CHECK(load.view.step == 2);
        Session reloaded = ready(*load.scenario);
        CHECK(dump_json(trace_to_json(reloaded.trace)) == dump_json(trace_to_json(session.trace)));
        std::filesystem::remove(path);
    }
}

TEST_CASE("a bad session file is reported, not loaded") {
    using session_file::session_from_text;
    CHECK_FALSE(session_from_text("{not json", "a.json").scenario);
    CHECK_FALSE(session_from_text("{\"format\": \"something-else\"}", "a.json").scenario);
    CHECK_FALSE(session_from_text("{\"format\": \"attnlab-session\", \"version\": 2, \"scenario\": {}}", "a.json").scenario);
    const auto bad_view = session_from_text(
        "{\"format\": \"attnlab-session\", \"version\": 1, \"scenario\": " +
            dump_json(scenario_to_json(sentence_scenario())) + ", \"view\": {\"step\": \"two\"}}",
        "a.json");
    CHECK_FALSE(bad_view.scenario);
    REQUIRE_FALSE(bad_view.errors.empty());
    CHECK(bad_view.errors.front().find("view.step") != std::string::npos);
    const auto missing = session_file::load_session(temp_path("does-not-exist.json"));
    CHECK_FALSE(missing.scenario);
    CHECK_FALSE(missing.errors.empty());
}

TEST_CASE("a matrix exported as CSV reads back equal to the trace matrix, with its token labels") {
    for (const Preset& preset : presets()) {
        INFO(preset.name);
        const Session session = ready(preset.scenario);
        for (const std::string& name : matrix_names(session.trace)) {
            INFO(name);
            std::string csv, error;
            REQUIRE(export_file::matrix_text(session.trace, name, export_file::Format::Csv, 2, csv, &error));
            const export_file::Labels labels = export_file::labels_for(session.trace, name);
            const Matrix back = matrix_from_csv(csv, !labels.cols.empty(), !labels.rows.empty());
            const Matrix& m = *find_matrix(session.trace, name);
            REQUIRE(back.rows() == m.rows());
            REQUIRE(back.cols() == m.cols());
            for (Eigen::Index i = 0; i < m.size(); ++i) {
                const float a = m.data()[i], b = back.data()[i];
                CHECK((a == b || (std::isnan(a) && std::isnan(b))));
            }
        }
    }
    const Session session = ready(find_preset("dot-product-3-tokens")->scenario);
    const export_file::Labels weights = export_file::labels_for(session.trace, "head0.weights");
    CHECK(weights.rows == session.trace.query_tokens);
    CHECK(weights.cols == session.trace.key_tokens);
    // A weight's axes are dimensions, counted from 1 as on screen.
    const Session animal = ready(find_preset("animal-was-tired")->scenario);
    const export_file::Labels w_q = export_file::labels_for(animal.trace, "w_q");
    REQUIRE(find_matrix(animal.trace, "w_q") != nullptr);
    CHECK(w_q.rows.front() == "d1");
    CHECK(w_q.cols.back() == "d" + std::to_string(animal.trace.w_q.cols()));
    std::string text, error;
    CHECK_FALSE(export_file::matrix_text(session.trace, "no.such", export_file::Format::Csv, 2, text, &error));
    CHECK_FALSE(error.empty());
}

TEST_CASE("Markdown and LaTeX exports have one line per row plus the header") {
    const Session session = ready(find_preset("dot-product-3-tokens")->scenario);
    std::string md, tex, error;
    REQUIRE(export_file::matrix_text(session.trace, "head0.weights", export_file::Format::Markdown, 3, md, &error));
    REQUIRE(export_file::matrix_text(session.trace, "head0.weights", export_file::Format::Latex, 3, tex, &error));
    const auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
    CHECK(lines(md) >= session.trace.n_queries + 2);  // header, separator, rows
    CHECK(md.find("0.401") != std::string::npos);
    CHECK(tex.find("\\\\") != std::string::npos);
    CHECK(tex.find("0.401") != std::string::npos);
}

TEST_CASE("compare: B's toggles apply, and the difference is B − A cell for cell") {
    const Scenario a = find_preset("animal-was-tired")->scenario;
    Toggles toggles;
    toggles.mask = MaskKind::Causal;
    toggles.scale = false;
    const Trace trace_a = run(a);
    const comparison::Comparison c = comparison::compare(trace_a, run(*comparison::scenario_b(a, toggles, nullptr)));
    REQUIRE(c.error.empty());
    CHECK(c.b.visible(0, 1) == false);  // causal: the first query cannot see the second key
    const MatrixDifference* d = comparison::find_difference(c, "head0.weights");
    REQUIRE(d != nullptr);
    const Matrix& wa = trace_a.head[0].weights;
    const Matrix& wb = c.b.head[0].weights;
    for (Eigen::Index r = 0; r < wa.rows(); ++r)
        for (Eigen::Index col = 0; col < wa.cols(); ++col) CHECK(d->difference(r, col) == wb(r, col) - wa(r, col));
    CHECK(d->max_abs > 0.0f);

    Toggles impossible;
    impossible.heads = 3;  // does not divide d_model
    std::string why;
    CHECK_FALSE(comparison::scenario_b(a, impossible, &why));
    CHECK_THAT(why, Catch::Matchers::Contains("B:"));
}
