// The classroom views rendered headless (tests/xvfb.sh, Mesa llvmpipe): every step of every
// shipped lesson, presenter mode, and a malformed lesson that must not stop the app.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "data_dir.hpp"
#include "gui.hpp"
#include "lesson.hpp"
#include "presets.hpp"
#include "render_fixtures_gl.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

// Exit code 1 is "no window could be opened". In a few clean-clone CI runs the virtual X
// server refused one connection out of the ~45 this test opens (never when run alone), so
// that one case is tried once more after a second and reported; a GL error (3) or a second
// refusal still fails.
int render(cli::Options options, const std::string& png) {
    options.screenshot = png;
    const Scenario scenario = find_preset("dot-product-3-tokens")->scenario;
    const int code = gui::run(options, scenario);
    if (code != 1) return code;
    WARN("the X server refused a window for " << png << "; trying once more");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return gui::run(options, scenario);
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
