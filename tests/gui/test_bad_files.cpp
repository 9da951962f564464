// The catalogue of bad input opened in the app (File → Open): the scenario on screen and
// its trace stay exactly as they were, and a notice names the file and the problem. The
// entries the catalogue allows (NaN, ∞, 1e38 in cells) open, and are marked.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "attention/analysis.hpp"
#include "bad_input_catalogue.hpp"
#include "attention/serialize.hpp"
#include "session_file.hpp"
#include "session_fixtures.hpp"
#include "ui/window.hpp"
#include "ui/classroom.hpp"

using namespace attn;
using namespace attn::testing;
using Catch::Matchers::Contains;

TEST_CASE("opening each bad file keeps the current state and says why") {
    const std::string folder = temp_folder("catalogue-app");
    for (const BadInput& bad : bad_input_catalogue()) {
        INFO(bad.item);
        const std::string path = (std::filesystem::path(folder) / bad.file).string();
        write_bad_input(bad, path);
        ui::Window state;
        state.shared.session = ready(sentence_scenario());
        state.shared.session.push(edits::SetCell{edits::MatrixId::X, 0, 0, 1.5f});  // work the user would lose
        edits::update(state.shared.session);
        const std::string scenario_before = dump_json(scenario_to_json(state.shared.session.scenario));
        const std::string trace_before = dump_json(trace_to_json(state.shared.session.trace));

        state.open_file(path);
        state.finish_work();  // read off the window's thread: it lands here
        edits::update(state.shared.session);
        if (bad.computes) {  // opened: the non-finite values are computed and every matrix they reach is marked
            REQUIRE(state.shared.session.errors.empty());
            CHECK_FALSE(non_finite_report(state.shared.session.trace).matrices.empty());
            continue;
        }
        if (state.shared.session.errors.empty()) {  // refused on reading: nothing changed
            CHECK(dump_json(scenario_to_json(state.shared.session.scenario)) == scenario_before);
            REQUIRE_FALSE(state.shared.notices.empty());
            CHECK(state.shared.notices.back().error);
            CHECK_THAT(state.shared.notices.back().text, Contains(path) && Contains("Cannot open"));
        } else {  // readable but impossible to run: the last good trace stays on screen, and why is said (undo brings the work back)
            CHECK_THAT(state.shared.session.errors.front(), Contains(bad.says.front()));
            REQUIRE(edits::undo(state.shared.session));
            edits::update(state.shared.session);
            CHECK(dump_json(scenario_to_json(state.shared.session.scenario)) == scenario_before);
        }
        CHECK(dump_json(trace_to_json(state.shared.session.trace)) == trace_before);
        std::filesystem::remove_all(path);
    }
}

TEST_CASE("a file that opens settles the notices of the attempts that failed before it, and only those") {
    const std::string folder = temp_folder("catalogue-settle");
    const std::string bad = (std::filesystem::path(folder) / "bad.json").string();
    const std::string good = (std::filesystem::path(folder) / "good.json").string();
    std::ofstream(bad) << "{\"tokens\": [";
    std::ofstream(good) << dump_json(scenario_to_json(sentence_scenario()));
    ui::Window state;
    state.shared.session = ready(sentence_scenario());
    ui::add_notice(state.shared, "Cannot save the session: the disk is full", true, "save the session");
    state.open_file(bad);
    state.finish_work();
    REQUIRE(state.shared.notices.back().error);
    state.open_file(good);
    state.finish_work();
    for (const ui::Notice& n : state.shared.notices) CHECK_FALSE((n.error && n.text.find("Cannot open " + bad) != std::string::npos));
    CHECK(state.shared.notices.back().text == "Opened " + good);
    // A failure of another kind is still true: it stays.
    CHECK(state.shared.notices.front().text == "Cannot save the session: the disk is full");
    std::filesystem::remove_all(folder);
}

TEST_CASE("a session file is read and written off the window's thread: the work stays as it is until the file lands", "[work-loss]") {
    const std::string folder = temp_folder("files-off-thread");
    const std::string other_path = (std::filesystem::path(folder) / "other.json").string();
    Scenario other = sentence_scenario();
    other.name = "the other scenario";
    other.target.tokens = {"a", "dog", "ran"};
    std::ofstream(other_path) << dump_json(scenario_to_json(other));
    ui::Window state;
    state.shared.session = ready(sentence_scenario());

    state.open_file(other_path);
    CHECK(state.busy());  // a job reads it: the window has not waited, and nothing has changed yet
    CHECK(state.shared.session.scenario.name == "test");
    CHECK(state.shared.session.pending.empty());
    state.finish_work();  // what the next frame does once the read is done
    CHECK_FALSE(state.busy());
    REQUIRE(edits::update(state.shared.session));
    CHECK(state.shared.session.scenario.name == "the other scenario");
    CHECK(state.shared.session.scenario.target.tokens == other.target.tokens);
    CHECK(state.shared.notices.back().text == "Opened " + other_path);

    const std::string saved = (std::filesystem::path(folder) / "saved.json").string();
    state.save_session(saved);
    CHECK(state.busy());
    state.shared.session.push(edits::InsertToken{edits::Side::Target, 0, "yes"});  // edited while it is written
    REQUIRE(edits::update(state.shared.session));
    state.finish_work();
    CHECK(state.shared.notices.back().text == "Session saved to " + saved);
    const session_file::SessionLoad written = session_file::load_session(saved);
    REQUIRE(written.scenario);
    CHECK(written.scenario->target.tokens == other.target.tokens);  // the session as it was when saved, not the edit after it
    CHECK(state.shared.session.scenario.target.tokens.size() == 4);
    CHECK(state.files.has_unsaved_work(state.shared.session.scenario));  // the edit after it is not in the file
    std::filesystem::remove_all(folder);
}
