// What a new user trips on (the window driven headless, tests/gui/ui_driver.hpp): each case
// replays the steps that went wrong and checks what the window shows afterwards.
#include <catch2/catch.hpp>

#include <filesystem>

#include "presets.hpp"
#include "session_file.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;

namespace {

std::string temp_path(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / "attnlab-new-user-tests";
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

}  // namespace

TEST_CASE("the side bar's preset, description and article verdict belong to the scenario on screen", "[new-user][stale]") {
    const Preset& start = *find_preset(default_preset_name());
    const Preset& animal = *find_preset("animal-was-tired");
    UiDriver ui(start.scenario);
    ui.frame(3);
    CHECK(ui.text("sidebar.preset") == start.title);
    CHECK(ui.text("sidebar.description") == start.description);
    REQUIRE(ui.widget("sidebar.verdict") != nullptr);  // the 3-token example's article numbers

    // Ctrl+O, a session of the animal sentence, Enter.
    const std::string file = temp_path("animal-session.json");
    std::string error;
    REQUIRE(session_file::save_session(file, animal.scenario, session_file::ViewChoices{}, &error));
    ui.state.classroom.prompt.path = file;
    ui.key(GLFW_KEY_O, true);
    ui.key(GLFW_KEY_ENTER);
    ui.frame(2);
    REQUIRE(ui.state.session.trace.n_queries == 11);
    CHECK(ui.text("sidebar.preset") == animal.title);
    CHECK(ui.text("sidebar.description") == animal.description);
    CHECK(ui.widget("sidebar.verdict") == nullptr);  // the 3-token article's numbers are not this sentence's

    // A new sentence typed: no longer the preset, and said so.
    ui.state.session.push(edits::SetTokens{edits::Side::Target, tokenize("the cat sat on the mat")});
    ui.frame(2);
    CHECK(ui.text("sidebar.preset") == animal.title + " (edited)");
    CHECK(ui.text("sidebar.description") == "edited");
    CHECK(ui.text("sidebar.description").find("refers") == std::string::npos);

    // Edited back by hand to the preset's exact scenario: the preset again.
    ui.state.session.push(edits::ReplaceScenario{start.scenario});
    ui.frame(2);
    CHECK(ui.text("sidebar.preset") == start.title);
    REQUIRE(ui.widget("sidebar.verdict") != nullptr);
    CHECK(ui.text("sidebar.verdict").find("0 match") == std::string::npos);
}
