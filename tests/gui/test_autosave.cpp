// Autosave and restore without a window: when it writes, what a run killed with SIGKILL
// leaves, and that restoring gives back exactly the scenario, the lesson step and the view.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <future>
#include <filesystem>
#include <fstream>
#include <thread>

#include "autosave.hpp"
#include "attention/serialize.hpp"
#include "session_file.hpp"
#include "session_fixtures.hpp"
#include "ui/window.hpp"
#include "ui/classroom.hpp"
#include "ui/panel_train.hpp"

using namespace attn;
using namespace attn::testing;
using Catch::Matchers::Contains;
using Clock = autosave::Clock;
using std::chrono::milliseconds;

namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A child process that autosaves `contents` and is then killed with SIGKILL, the way a
// crash or `kill -9` ends the app: no destructor, no clean-up.
void autosave_then_die(const std::string& folder, const std::string& contents) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        autosave::Autosaver saver(folder);
        saver.tick("1", [&] { return [contents] { return contents; }; });
        saver.wait();
        ::raise(SIGKILL);
        ::_exit(0);  // not reached
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
}

}  // namespace

TEST_CASE("autosave writes after a change, then at most once per interval, and not the opening state") {
    const std::string folder = temp_folder("autosave-interval");
    autosave::Autosaver saver(folder, milliseconds(2000));
    REQUIRE(saver.enabled());
    const Clock::time_point t0 = Clock::now();
    int made = 0;
    auto contents = [&]() -> autosave::Autosaver::Contents { return [v = ++made] { return "v" + std::to_string(v); }; };

    saver.set_baseline("rev0");
    CHECK(saver.tick("rev0", contents, t0).empty());
    CHECK(saver.writes() == 0);  // nothing changed since opening: no file
    CHECK_FALSE(std::filesystem::exists(saver.path()));

    saver.tick("rev1", contents, t0 + milliseconds(100));  // the first change is written at once
    saver.wait();
    CHECK(saver.writes() == 1);
    CHECK(read_all(saver.path()) == "v1");
    saver.tick("rev2", contents, t0 + milliseconds(900));  // within the interval: waits
    CHECK(saver.writes() == 1);
    saver.tick("rev2", contents, t0 + milliseconds(2100));  // the interval has passed
    saver.wait();
    CHECK(saver.writes() == 2);
    CHECK(read_all(saver.path()) == "v2");
    saver.tick("rev2", contents, t0 + milliseconds(9000));  // no change: no write
    CHECK(saver.writes() == 2);

    saver.finish();  // a clean exit leaves nothing to restore
    CHECK_FALSE(std::filesystem::exists(saver.path()));
    CHECK(autosave::find_orphans(folder).empty());
}

TEST_CASE("the autosave of a running app is its own, after SIGKILL it is offered, newest first") {
    const std::string folder = temp_folder("autosave-orphans");
    autosave::Autosaver alive(folder);
    REQUIRE(alive.enabled());
    alive.tick("x", [] { return [] { return std::string("mine"); }; });
    alive.wait();
    CHECK(autosave::find_orphans(folder).empty());  // locked by this process

    autosave_then_die(folder, "older");
    ::sleep(1);  // modification times one second apart
    autosave_then_die(folder, "newer");
    const std::vector<autosave::Orphan> orphans = autosave::find_orphans(folder);
    REQUIRE(orphans.size() == 2);
    CHECK(read_all(orphans[0].path) == "newer");
    CHECK(read_all(orphans[1].path) == "older");
    CHECK(orphans[0].age_seconds >= 0);
    CHECK(orphans[0].written.size() == 19);  // "2026-11-22 14:03:12"

    autosave::discard(orphans[1]);
    const std::vector<autosave::Orphan> left = autosave::find_orphans(folder);
    REQUIRE(left.size() == 1);
    CHECK(left[0].path == orphans[0].path);
    CHECK_FALSE(std::filesystem::exists(orphans[1].lock_path));
    alive.finish();
}

TEST_CASE("an autosave that cannot be written says why once, and again when it works") {
    const std::string folder = temp_folder("autosave-failing");
    autosave::Autosaver saver(folder, milliseconds(10));
    REQUIRE(saver.enabled());
    const Clock::time_point t0 = Clock::now();
    auto contents = [] { return [] { return std::string("{}"); }; };
    CHECK(saver.tick("a", contents, t0).empty());
    CHECK(saver.wait().empty());
    std::filesystem::remove(saver.path());
    std::filesystem::create_directory(saver.path());  // a folder where the file goes: the rename fails
    saver.tick("b", contents, t0 + milliseconds(20));
    CHECK_THAT(saver.wait(), Contains("Autosave failed") && Contains(saver.path()));
    saver.tick("c", contents, t0 + milliseconds(40));
    CHECK(saver.wait().empty());  // told once
    std::filesystem::remove(saver.path());
    saver.tick("d", contents, t0 + milliseconds(60));
    CHECK_THAT(saver.wait(), Contains("works again"));
    saver.finish();
}

TEST_CASE("a change during a write is written after it") {
    const std::string folder = temp_folder("autosave-overlap");
    autosave::Autosaver saver(folder, milliseconds(0));
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    saver.tick("slow", [released] { return [released] { released.wait(); return std::string("slow"); }; });
    saver.tick("next", [] { return [] { return std::string("next"); }; });  // the first is still being written
    release.set_value();
    saver.wait();
    CHECK(saver.writes() == 1);
    CHECK(read_all(saver.path()) == "slow");
    saver.tick("next", [] { return [] { return std::string("next"); }; });
    saver.wait();
    CHECK(saver.writes() == 2);
    CHECK(read_all(saver.path()) == "next");
    saver.finish();
}

TEST_CASE("restoring after SIGKILL gives back the scenario, the lesson step and the view exactly") {
    const std::string folder = temp_folder("autosave-restore");

    // The run that dies: a lesson at its third step, edited, showing head 2 of every head.
    ui::Window before;
    before.apply_session(sentence_scenario(), session_file::ViewChoices{1, true, false, "03-masks.json", 2, "pipeline", "", ""});
    edits::update(before.shared.session);
    before.shared.session.push(edits::SetCell{edits::MatrixId::X, 1, 3, -2.75f});
    before.shared.session.push(edits::SetMaskKind{MaskKind::Causal});
    edits::update(before.shared.session);
    REQUIRE(before.shared.session.trace.ok);
    const session_file::ViewChoices view = before.view_choices();
    REQUIRE(view.lesson == "03-masks.json");
    REQUIRE(view.step == 2);
    autosave_then_die(folder, dump_json(session_file::session_to_json(before.shared.session.scenario, view)));

    // The next start: offered, restored, and removed once this run has saved it again.
    ui::Window after;
    after.shared.session = ready(preset_scenario("dot-product-3-tokens"));
    after.start_autosave(folder, milliseconds(0), true);
    REQUIRE(after.recovery.state.prompt);
    REQUIRE(after.recovery.state.orphans.size() == 1);
    const autosave::Orphan orphan = after.recovery.state.orphans[0];
    REQUIRE(after.restore_orphan(0));
    edits::update(after.shared.session);
    CHECK(dump_json(scenario_to_json(after.shared.session.scenario)) == dump_json(scenario_to_json(before.shared.session.scenario)));
    CHECK(dump_json(trace_to_json(after.shared.session.trace)) == dump_json(trace_to_json(before.shared.session.trace)));
    const session_file::ViewChoices restored = after.view_choices();
    CHECK(restored.lesson == view.lesson);
    CHECK(restored.step == view.step);
    CHECK(restored.shown_head == view.shown_head);
    CHECK(restored.all_heads == view.all_heads);

    CHECK(std::filesystem::exists(orphan.path));  // kept until this run's own autosave holds the work
    after.autosave_tick();  // starts the write
    CHECK(std::filesystem::exists(orphan.path));
    REQUIRE(after.recovery.state.saver);
    after.recovery.state.saver->wait();
    after.autosave_tick();  // the write is done: the orphan goes
    CHECK_FALSE(std::filesystem::exists(orphan.path));
    const session_file::SessionLoad own = session_file::load_session(after.recovery.state.saver->path());
    REQUIRE(own.scenario);
    CHECK(dump_json(scenario_to_json(*own.scenario)) == dump_json(scenario_to_json(before.shared.session.scenario)));
    after.finish_autosave();
    CHECK(autosave::find_orphans(folder).empty());
}

TEST_CASE("an unreadable autosave is reported and kept aside, never deleted") {
    const std::string folder = temp_folder("autosave-unreadable");
    autosave_then_die(folder, "{\"format\": \"attnlab-session\", \"version\": 1, \"scenario\": {\"d_model\": ");
    ui::Window state;
    state.shared.session = ready(sentence_scenario());
    const nlohmann::json original = scenario_to_json(state.shared.session.scenario);
    state.start_autosave(folder, milliseconds(0), false);
    REQUIRE(state.recovery.state.orphans.size() == 1);
    const std::string path = state.recovery.state.orphans[0].path;
    CHECK_FALSE(state.restore_orphan(0));
    CHECK(scenario_to_json(state.shared.session.scenario) == original);  // the current state is kept
    REQUIRE_FALSE(state.shared.notices.empty());
    CHECK(state.shared.notices.front().error);
    CHECK_THAT(state.shared.notices.front().text, Contains("not valid JSON"));
    CHECK(std::filesystem::exists(path + ".unreadable"));
}

TEST_CASE("the autosave keeps the Train panel's run: written when it pauses, not at each copy while it trains", "[train]") {
    const std::string folder = temp_folder("autosave-train");
    ui::Window state;
    state.shared.session = ready(preset_scenario("dot-product-3-tokens"));
    state.start_autosave(folder, milliseconds(0), true);
    REQUIRE(state.recovery.state.saver);
    autosave::Autosaver& saver = *state.recovery.state.saver;
    state.autosave_tick();  // what the app opened with: not written
    ui::TrainPanelState& p = state.train.state;
    auto take_copy = [&] {  // what the window does each frame
        if (p.worker->poll(p.seen, p.progress)) p.seen = p.progress.generation;
    };
    ui::train_now(p, 50);
    take_copy();
    state.autosave_tick();
    saver.wait();
    session_file::SessionLoad load = session_file::load_session(saver.path());
    REQUIRE(load.attached.trained);
    CHECK(load.attached.trained->file.steps == 50);

    // Training: one write when it starts, none for the copies that follow.
    p.worker->set_running(true);
    const std::uint64_t writes = saver.writes();
    for (int frame = 0; frame < 40; ++frame) {
        take_copy();
        state.autosave_tick();
        std::this_thread::sleep_for(milliseconds(5));
    }
    saver.wait();
    CHECK(saver.writes() <= writes + 1);
    // Paused: the run as it stopped.
    p.worker->set_running(false);
    p.worker->wait_idle();
    take_copy();
    REQUIRE(p.progress.steps_done > 50);
    state.autosave_tick();
    saver.wait();
    load = session_file::load_session(saver.path());
    REQUIRE(load.attached.trained);
    CHECK(load.attached.trained->file.steps == p.progress.steps_done);
    state.finish_autosave();
}
