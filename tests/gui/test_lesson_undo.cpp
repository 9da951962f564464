// Undo inside a lesson: stepping is navigation, not an edit, so undo takes back the
// student's edits within the step and never shows one step's scenario under another's text.
#include <catch2/catch.hpp>

#include "teaching/lesson.hpp"
#include "attention/serialize.hpp"
#include "session_fixtures.hpp"
#include "ui/window.hpp"
#include "ui/classroom.hpp"
#include "teaching/presets.hpp"

using namespace attn;
using namespace attn::testing;

TEST_CASE("undo in a lesson takes back edits within the step and never changes the step's scenario") {
    ui::Window state;
    REQUIRE(ui::open_lesson_named(state.shared, state.lesson.state, "03-masks", 0));
    edits::update(state.shared.session);
    const Lesson& lesson = state.lesson.state.lessons[static_cast<size_t>(state.lesson.state.active)];
    auto as_text = [](const Scenario& s) { return dump_json(scenario_to_json(s)); };
    CHECK_FALSE(state.shared.session.history.can_undo());  // opening the lesson is not an edit

    state.shared.session.push(edits::SetCell{edits::MatrixId::X, 0, 0, 0.123f});
    edits::update(state.shared.session);
    REQUIRE(state.shared.session.history.can_undo());

    ui::lesson_next(state.shared, state.lesson.state);  // step 2: its own scenario; the step-1 edit is gone with step 1
    edits::update(state.shared.session);
    REQUIRE(state.lesson.state.step == 1);
    const std::string step2 = as_text(scenario_at_step(lesson, 1));
    CHECK(as_text(state.shared.session.scenario) == step2);
    CHECK_FALSE(state.shared.session.history.can_undo());

    state.shared.session.push(edits::SetScale{false});
    edits::update(state.shared.session);
    CHECK(as_text(state.shared.session.scenario) != step2);
    REQUIRE(edits::undo(state.shared.session));
    edits::update(state.shared.session);
    CHECK(as_text(state.shared.session.scenario) == step2);  // the edit is undone, the step stays
    CHECK(state.lesson.state.step == 1);
    CHECK_FALSE(edits::undo(state.shared.session));          // and nothing takes it back to step 1's scenario
}

TEST_CASE("an edit still queued as a lesson opens is the user's work: leaving the lesson gives it back with its undo step") {
    ui::Window state;
    auto as_text = [](const Scenario& s) { return dump_json(scenario_to_json(s)); };
    state.shared.session.push(edits::ReplaceScenario{find_preset(default_preset_name())->scenario, true});
    edits::update(state.shared.session);
    const std::string before = as_text(state.shared.session.scenario);
    state.shared.session.push(edits::SetCell{edits::MatrixId::Q, 0, 0, 0.123f});  // queued, not applied yet (the preset gives Q)
    const edits::Session::Restore kept = edits::queued_work(state.shared.session);
    CHECK(state.shared.session.pending.size() == 1);  // the session itself is unchanged
    CHECK(as_text(state.shared.session.scenario) == before);
    CHECK(as_text(kept.scenario) != before);
    CHECK(kept.history.can_undo());

    REQUIRE(ui::open_lesson_named(state.shared, state.lesson.state, "03-masks", 0));
    edits::update(state.shared.session);
    CHECK(as_text(state.shared.session.scenario) != as_text(kept.scenario));  // the lesson's step is shown
    ui::leave_lesson(state.shared, state.lesson.state);
    edits::update(state.shared.session);
    CHECK(as_text(state.shared.session.scenario) == as_text(kept.scenario));  // the edit came back
    REQUIRE(edits::undo(state.shared.session));
    CHECK(as_text(state.shared.session.scenario) == before);  // and its undo step with it
}
