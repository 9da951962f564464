// The classroom views rendered headless: every step of every shipped lesson, presenter mode,
// and a malformed lesson that must not stop the app. Drawn off-screen (no X server: Mesa
// llvmpipe through the EGL device platform, as --screenshot draws on a GPU server), so the
// ~45 renders depend on no display server; the window path is checked by the (xvfb) tests,
// and "gui: render (xvfb)" checks off-screen and window pixels against each other.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "data_dir.hpp"
#include "gui.hpp"
#include "teaching/lesson.hpp"
#include "teaching/presets.hpp"
#include "render_fixtures_gl.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

// Exit code 0, or why not: 1 no context, 6 an OpenGL error in a frame (docs/command-line.md).
int render(cli::Options options, const std::string& png) {
    ::unsetenv("DISPLAY");  // the EGL device platform, never a window
    ::unsetenv("WAYLAND_DISPLAY");
    options.screenshot = png;
    return gui::run(options, find_preset("dot-product-3-tokens")->scenario);
}

std::vector<std::string> layout_names(const std::string& png) {
    std::vector<std::string> names;
    const nlohmann::json layout = read_layout(png);
    for (const auto& h : layout.at("heatmaps")) names.push_back(h.at("name").get<std::string>());
    return names;
}

}  // namespace

TEST_CASE("every step of every shipped lesson renders to a PNG without a GL error") {
    std::vector<std::string> errors;
    const std::vector<Lesson> lessons = load_lessons(attn::data_dir() + "/lessons", errors);
    CHECK(errors.empty());
    REQUIRE(lessons.size() >= 6);
    for (const Lesson& lesson : lessons) {
        std::vector<Stage> drawn;
        for (size_t step = 0; step < lesson.steps.size(); ++step) {
#ifdef ATTNLAB_SANITIZED_BUILD
            // Under the sanitizers each lesson's first step of each stage (every view a lesson draws
            // runs instrumented); the plain build renders every step.
            if (std::find(drawn.begin(), drawn.end(), lesson.steps[step].stage) != drawn.end()) continue;
#endif
            drawn.push_back(lesson.steps[step].stage);
            const std::string stem = std::filesystem::path(lesson.file).stem().string();
            INFO("lesson " << lesson.file << " step " << step + 1);
            cli::Options options;
            options.lesson = lesson.file;
            options.step = static_cast<int>(step) + 1;
            const std::string png = output_path("lesson-" + stem + "-step" + std::to_string(step + 1));
            REQUIRE(render(options, png) == 0);  // non-zero on any glGetError in any frame
            CHECK(std::filesystem::file_size(png) > 1000);
            if (lesson.steps[step].stage != Stage::ScalingPlot) CHECK_FALSE(layout_names(png).empty());  // the stage was drawn
        }
    }
}

TEST_CASE("presenter mode renders at 1920x1080, free and in a lesson") {
    cli::Options options;
    options.presenter = true;
    options.width = 1920;
    options.height = 1080;
    const std::string free_png = output_path("presenter-free");
    REQUIRE(render(options, free_png) == 0);
    const std::vector<std::string> names = layout_names(free_png);
    CHECK(std::find(names.begin(), names.end(), "head0.weights") != names.end());  // weights and output only
    CHECK(std::find(names.begin(), names.end(), "head0.scores") == names.end());
    options.lesson = "03-masks";
    options.step = 2;
    REQUIRE(render(options, output_path("presenter-lesson")) == 0);
}

TEST_CASE("a lesson name that does not exist leaves the app running on its scenario") {
    cli::Options options;
    options.lesson = "no-such-lesson";
    const std::string png = output_path("lesson-missing");
    REQUIRE(render(options, png) == 0);
    CHECK_FALSE(layout_names(png).empty());  // the pipeline of the scenario
}
