// What a new user trips on (the window driven headless, tests/gui/ui_driver.hpp): each case
// replays the steps that went wrong and checks what the window shows afterwards.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "compute.hpp"
#include "data_dir.hpp"
#include "attention/engine.hpp"
#include "export_file.hpp"
#include "teaching/lesson.hpp"
#include "teaching/presets.hpp"
#include "attention/registry.hpp"
#include "ui/arithmetic.hpp"
#include "session_file.hpp"
#include "ui/classroom.hpp"
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
    const std::string app = "Attention Lab \xE2\x80\x94 ";
    CHECK(ui.window.title() == app + start.scenario.name);

    // Ctrl+O, a session of the animal sentence, Enter.
    const std::string file = temp_path("animal-session.json");
    std::string error;
    REQUIRE(session_file::save_session(file, animal.scenario, session_file::ViewChoices{}, &error));
    ui.window.files.state.prompt.path = file;
    ui.key(GLFW_KEY_O, true);
    ui.key(GLFW_KEY_ENTER);
    ui.frame(2);
    REQUIRE(ui.window.shared.session.trace.n_queries == 11);
    CHECK(ui.text("sidebar.preset") == animal.title);
    CHECK(ui.text("sidebar.description") == animal.description);
    CHECK(ui.widget("sidebar.verdict") == nullptr);  // the 3-token article's numbers are not this sentence's
    // The title names the file opened, not the preset the window started on.
    CHECK(ui.window.title() == app + "animal-session.json");

    // A new sentence typed: no longer the preset, and said so.
    ui.window.shared.session.push(edits::SetTokens{edits::Side::Target, tokenize("the cat sat on the mat")});
    ui.frame(2);
    CHECK(ui.text("sidebar.preset") == animal.title + " (edited)");
    CHECK(ui.text("sidebar.description") == "edited");
    CHECK(ui.text("sidebar.description").find("refers") == std::string::npos);
    CHECK(ui.window.title() == app + "animal-session.json (edited)");

    // Edited back by hand to the preset's exact scenario: the preset again.
    ui.window.shared.session.push(edits::ReplaceScenario{start.scenario});
    ui.frame(2);
    CHECK(ui.text("sidebar.preset") == start.title);
    REQUIRE(ui.widget("sidebar.verdict") != nullptr);
    CHECK(ui.text("sidebar.verdict").find("0 match") == std::string::npos);
    CHECK(ui.window.title().rfind(app + start.scenario.name, 0) == 0);   // another scenario: its own name
}

TEST_CASE("a lesson entered and left with Esc gives the user's sentence back, with its undo history", "[new-user][work-loss]") {
    UiDriver ui(find_preset("animal-was-tired")->scenario);
    ui.frame(3);
    ui.window.shared.session.push(edits::InsertToken{edits::Side::Target, 0, "yes"});
    ui.frame(2);
    const std::vector<std::string> mine = ui.window.shared.session.scenario.target.tokens;
    REQUIRE(mine.front() == "yes");

    ui.click(ui.centre("menu.lessons"));
    ui.click(ui.centre("menu.lesson.0"));
    ui.frame(3);
    REQUIRE(ui.window.lesson.state.active == 0);
    CHECK(ui.window.shared.session.scenario.target.tokens != mine);  // the lesson's own example

    ui.key(GLFW_KEY_ESCAPE);
    ui.frame(3);
    CHECK(ui.window.lesson.state.active == -1);
    CHECK(ui.window.shared.session.scenario.target.tokens == mine);
    REQUIRE(ui.window.shared.session.history.can_undo());
    CHECK(ui.window.shared.session.history.undo_action() == "insert token 'yes'");
    ui.key(GLFW_KEY_Z, true);
    ui.frame(2);
    CHECK(ui.window.shared.session.scenario.target.tokens.front() != "yes");
}

TEST_CASE("the View menu lists what each view offers: Article checks, Compare, Train, the model view only with a model", "[new-user]") {
    UiDriver ui(find_preset("animal-was-tired")->scenario);
    ui.frame(2);
    ui.click(ui.centre("menu.view"));
    for (const char* id : {"menu.view.articles", "menu.view.compare", "menu.view.train", "menu.view.model"}) {
        INFO(id);
        REQUIRE(ui.widget(id) != nullptr);
    }
    // Above one another in the order offered.
    CHECK(ui.widget("menu.view.articles")->y < ui.widget("menu.view.compare")->y);
    CHECK(ui.widget("menu.view.compare")->y < ui.widget("menu.view.train")->y);
    CHECK(ui.widget("menu.view.train")->y < ui.widget("menu.view.model")->y);
    ui.click(ui.centre("menu.view.model"));  // disabled: no model is open
    CHECK(ui.window.shared.view.pane == ui::Pane::Pipeline);
    ui.click(ui.centre("menu.view.train"));
    CHECK(ui.window.train.state.open);
    CHECK(ui.window.shared.view.pane == ui::Pane::Train);
    ui.frame(2);  // the menu that closed settles
    ui.click(ui.centre("menu.view"));
    ui.click(ui.centre("menu.view.compare"));
    CHECK(ui.window.compare.state.open);
}

TEST_CASE("Esc closes an open menu and does nothing else", "[new-user][trap]") {
    UiDriver ui(find_preset("animal-was-tired")->scenario);
    ui.frame(2);
    REQUIRE(ui::open_lesson(ui.window.shared, ui.window.lesson.state, 0, 0));
    ui.frame(3);
    ui.click(ui.centre("menu.lessons"));
    REQUIRE(ui.widget("menu.lesson.0") != nullptr);  // the menu is open
    ui.key(GLFW_KEY_ESCAPE);
    ui.frame(2);
    CHECK(ui.widget("menu.lesson.0") == nullptr);     // closed
    CHECK(ui.window.lesson.state.active == 0);     // and the lesson was not left
}

TEST_CASE("quitting with unsaved work asks Save, Discard or Cancel", "[new-user][work-loss]") {
    UiDriver ui(find_preset("animal-was-tired")->scenario);
    ui.frame(2);
    CHECK(ui.window.request_quit());  // an unedited preset: nothing to lose
    ui.window.files.state.quit_confirmed = ui.window.files.state.quit_requested = false;

    ui.window.shared.session.push(edits::InsertToken{edits::Side::Target, 0, "yes"});
    ui.frame(2);
    CHECK(ui.window.files.has_unsaved_work(ui.window.shared.session.scenario));
    CHECK_FALSE(ui.window.request_quit());
    ui.frame(2);
    REQUIRE(ui.widget("unsaved.cancel") != nullptr);
    ui.click(ui.centre("unsaved.cancel"));
    ui.frame(2);
    CHECK(ui.widget("unsaved.cancel") == nullptr);
    CHECK_FALSE(ui.window.files.state.quit_requested);
    CHECK_FALSE(ui.window.files.state.quit_confirmed);

    // File → Quit (Ctrl+Q), then Save…: the session is written, then the app may quit.
    ui.key(GLFW_KEY_Q, true);
    ui.frame(2);
    REQUIRE(ui.widget("unsaved.save") != nullptr);
    ui.click(ui.centre("unsaved.save"));
    ui.frame(2);
    CHECK_FALSE(ui.window.files.state.quit_confirmed);
    const std::string file = temp_path("quit-save.json");
    std::filesystem::remove(file);
    ui.key(GLFW_KEY_A, true);  // the path field has the focus: replace its text
    ui.type(file);
    ui.key(GLFW_KEY_ENTER);
    ui.frame(2);
    REQUIRE(std::filesystem::exists(file));
    CHECK(ui.window.files.state.quit_confirmed);
    CHECK_FALSE(ui.window.files.has_unsaved_work(ui.window.shared.session.scenario));  // what was saved is the baseline now
}

TEST_CASE("Discard quits without saving", "[new-user][work-loss]") {
    UiDriver other(find_preset("animal-was-tired")->scenario);
    other.frame(2);
    other.window.shared.session.push(edits::SetHeads{1});
    other.frame(2);
    CHECK_FALSE(other.window.request_quit());
    other.frame(2);
    other.click(other.centre("unsaved.discard"));
    CHECK(other.window.files.state.quit_confirmed);
}

TEST_CASE("the Edit menu names the action Undo reverts", "[new-user][trap]") {
    UiDriver ui(find_preset("animal-was-tired")->scenario);
    ui.frame(2);
    ui.window.shared.session.push(edits::SetHeads{1});
    ui.frame(2);
    ui.click(ui.centre("menu.edit"));
    CHECK(ui.text("menu.undo") == "Undo set heads to 1");
    CHECK(ui.text("menu.redo") == "Redo");
}

TEST_CASE("rows, columns, tokens and heads are counted from 1 everywhere", "[new-user][numbering]") {
    const Trace t = run(find_preset("animal-was-tired")->scenario);
    CHECK(ui::explain_cell(t, "x", 1, 2).heading.rfind("X[2,3]: token 'animal'", 0) == 0);
    CHECK(ui::explain_cell(t, "head0.q", 1, 2).heading.rfind("Q[2,3] (head 1)", 0) == 0);
    CHECK(ui::explain_cell(t, "head1.scores", 0, 3).heading.rfind("raw score q1 ", 0) == 0);
    CHECK(ui::explain_cell(t, "output", 4, 0).heading.rfind("output[5,1]", 0) == 0);
    CHECK(edits::describe(edits::SetCell{edits::MatrixId::WQ, 1, 2, 0.5f}) == "edit W_Q[2,3]");
    CHECK(t.query_tokens.size() == 11);
}

TEST_CASE("a right double-click resets the zoom and opens nothing, a right click opens Check my value", "[new-user][zoom]") {
    UiDriver ui(find_preset("animal-was-tired")->scenario);
    ui.frame(3);
    const std::string map = "head0.weights";
    REQUIRE(ui.heatmap(map) != nullptr);
    ui.window.shared.views[map].zoom = 3.0f;
    ui.frame(2);
    ui.double_click(ui.cell_centre(map, 1, 1), 1);
    ui.frame(30);  // longer than the double-click time
    CHECK(ui.window.shared.views[map].zoom == 1.0f);
    CHECK(ui.window.hand_check.state.matrix.empty());

    ui.click(ui.cell_centre(map, 2, 1), 1);
    ui.frame(30);
    CHECK(ui.window.hand_check.state.matrix == map);
    CHECK(ui.window.hand_check.state.row == 2);
    // Esc closes it (its value field has the keyboard), then Compare, each on its own.
    ui.frame(2);
    REQUIRE(ImGui::GetIO().WantTextInput);
    ui.window.compare.state.open = true;
    ui.frame(2);
    ui.key(GLFW_KEY_ESCAPE);
    CHECK(ui.window.hand_check.state.matrix.empty());
    CHECK(ui.window.compare.state.open);
    ui.key(GLFW_KEY_ESCAPE);
    CHECK_FALSE(ui.window.compare.state.open);
}

TEST_CASE("at 1600×1000 the weights of up to 12 tokens are drawn with their numbers", "[new-user][layout]") {
    for (const char* name : {"dog-bites-man", "dot-product-3-tokens", "animal-was-tired"}) {
        INFO(name);
        UiDriver ui(find_preset(name)->scenario);
        ui.frame(4);
        const ui::HeatmapLayout* weights = ui.heatmap("head0.weights");
        REQUIRE(weights != nullptr);
        CHECK(weights->numbers);
        CHECK(weights->shown_rows == weights->rows);
        CHECK(weights->shown_cols == weights->cols);
        // No map on screen has larger cells than the weights.
        for (const ui::HeatmapLayout& h : ui.window.shared.layout) CHECK(h.cell_w <= weights->cell_w + 0.5f);
    }
}

TEST_CASE("numbers too large or too small for the decimals are written short, never as a false zero", "[new-user][numbers]") {
    CHECK(ui::format_value(-1e9f, 2) == "\xE2\x88\x92" "1e9");
    CHECK(ui::format_value(0.0002f, 2) == "2e\xE2\x88\x92" "4");
    CHECK(ui::format_value(0.00025f, 3) == "2.5e\xE2\x88\x92" "4");
    CHECK(ui::format_value(-2.75f, 2) == "\xE2\x88\x92" "2.75");
    CHECK(ui::format_value(0.0f, 2) == "0.00");
    CHECK(ui::format_value(0.004f, 2) == "4e\xE2\x88\x92" "3");  // "0.00" would be a false zero
    CHECK(ui::format_value(0.006f, 2) == "0.01");
}

TEST_CASE("the masked scores show the finite fill in masked cells, numbers and all", "[new-user][mask]") {
    Scenario s = find_preset("dog-bites-man")->scenario;
    s.mask = MaskKind::Causal;
    s.masked_fill = -1e9f;
    UiDriver ui(s);
    ui.frame(4);
    const ui::HeatmapLayout* masked = ui.heatmap("head0.masked_scores");
    REQUIRE(masked != nullptr);
    CHECK(masked->numbers);
}

TEST_CASE("the masks lesson shows a row that sees no key, with a finite fill and with minus infinity", "[new-user][mask]") {
    LessonLoad load = load_lesson_file(attn::data_dir() + "/lessons/03-masks.json");
    REQUIRE(load.lesson);
    const Lesson& lesson = *load.lesson;
    REQUIRE(lesson.steps.size() == 6);
    const Trace finite = run(scenario_at_step(lesson, 4));
    REQUIRE(finite.ok);
    const Matrix& w = finite.head[0].weights;
    for (Eigen::Index c = 0; c < w.cols(); ++c) CHECK(w(0, c) == Approx(1.0 / static_cast<double>(w.cols())));
    const Trace infinite = run(scenario_at_step(lesson, 5));
    REQUIRE(infinite.ok);
    CHECK(infinite.head[0].weights.row(0).isZero());
    CHECK(infinite.output.row(0).isZero());
    CHECK_FALSE(infinite.warnings.empty());
    // The other rows do not change.
    CHECK(infinite.head[0].weights.bottomRows(w.rows() - 1).isApprox(w.bottomRows(w.rows() - 1)));
}

TEST_CASE("Export → Matrix writes the matrix chosen in its list, not the one the pointer last crossed", "[new-user][export]") {
    UiDriver ui(find_preset("dog-bites-man")->scenario);
    ui.frame(4);
    // The user clicks the weights, then crosses X on the way to the menu.
    ui.click(ui.cell_centre("head0.weights", 1, 1));
    ui.move(ui.cell_centre("x", 0, 0));
    ui.frame(2);
    ui.click(ui.centre("menu.export"));
    ui.click(ui.centre("menu.export.matrix"));
    ui.frame(2);
    CHECK(ui.text("export.matrix") == display_name("head0.weights"));  // named, and the one clicked
    CHECK(ui.text("prompt.folder") == std::filesystem::current_path().string());  // relative to where
    CHECK(ui.window.files.state.prompt.path == "head1-weights.csv");   // head 1 as the user counts it, not head0
    const std::string file = temp_path("export-weights.csv");
    std::filesystem::remove(file);
    ui.key(GLFW_KEY_A, true);  // the path field has the focus: replace its text
    ui.type(file);
    ui.key(GLFW_KEY_ENTER);
    ui.frame(2);
    REQUIRE(std::filesystem::exists(file));
    std::string expected, error;
    REQUIRE(export_file::matrix_text(ui.window.shared.session.trace, "head0.weights", export_file::Format::Csv, ui.window.shared.view.decimals,
                                     expected, &error));
    std::ifstream in(file);
    const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(written == expected);
    CHECK(ui.window.shared.notices.back().text == "Exported head 1 \xC2\xB7 weights to " + file);
}

TEST_CASE("with nothing clicked, Export → Matrix proposes the last matrix hovered", "[new-user][export]") {
    UiDriver other(find_preset("dog-bites-man")->scenario);
    other.frame(4);
    other.move(other.cell_centre("head0.scores", 0, 0));
    other.frame(2);
    other.click(other.centre("menu.export"));
    other.click(other.centre("menu.export.matrix"));
    other.frame(2);
    CHECK(other.text("export.matrix") == display_name("head0.scores"));
}

TEST_CASE("a generated sequence keeps the mask, and the zoom fields follow the sequence on screen, counted from 1", "[new-user][long]") {
    Scenario s = compute::generated_scenario(1100, 1);
    s.mask = MaskKind::Causal;
    UiDriver ui(s);
    ui.frame(4);
    REQUIRE(ui.window.shared.session.trace.detail == Detail::OutputOnly);
    CHECK(ui.text("backend.region_rows") == "queries 1 to 1100");
    CHECK(ui.text("backend.zoom_estimate").find("the region only") != std::string::npos);
    // Not timed until the control is pointed at (every window would run it at start).
    CHECK(ui.text("backend.generate_estimate") == "timed when the length or generate is pointed at");
    CHECK_FALSE(ui.window.shared.compute.generate_timing.job.running());
    CHECK_FALSE(ui.window.shared.compute.generate_timing.ms_per_token2);
    // Said before the button is pressed: the very run timed at a small length, then scaled, as a range.
    ui.move(ui.centre("backend.generate"));
    ui.frame(1);
    REQUIRE((ui.window.shared.compute.generate_timing.job.running() || ui.window.shared.compute.generate_timing.ms_per_token2));
    ui.window.shared.compute.generate_timing.job.wait();
    ui.frame(1);
    CHECK(ui.text("backend.generate_estimate").rfind("about ", 0) == 0);
    CHECK(ui.text("backend.generate_estimate").find(" to ") != std::string::npos);
    ui.window.shared.compute.settings.generate_length = 2048;
    ui.click(ui.centre("backend.generate"));
    ui.frame(4);
    REQUIRE(ui.window.shared.session.trace.n_queries == 2048);
    CHECK(ui.window.shared.session.scenario.mask == MaskKind::Causal);  // kept, not reset to none
    CHECK(ui.text("backend.region_rows") == "queries 1 to 2048");  // not the old sequence's range
    CHECK(ui.text("backend.region_cols") == "keys 1 to 2048");
    // Zoomed: the fields, the card's caption and its labels count the same rows, from 1.
    ui.window.shared.compute.settings.region = compute::Region{999, 1015, 0, 16};
    ui.window.shared.compute.region_draft = ui.window.shared.compute.settings.region;
    ui.frame(4);
    CHECK(ui.text("backend.region_shown") == "shown: queries 1000\xE2\x80\x93" "1015, keys 1\xE2\x80\x93" "16");
    CHECK(ui.text("backend.region_rows") == "queries 1000 to 1015");
    const auto ref = parse_matrix_name("head0.pooled_weights");
    REQUIRE(ref);
    CHECK(ref->entry->shape(ui.window.shared.session.trace, 0).rfind("queries 1000\xE2\x80\x93" "1015, keys 1\xE2\x80\x93" "16 ", 0) == 0);
}

TEST_CASE("Compare: float rounding is no difference, B can switch the softmax, and NaN is said", "[new-user][compare]") {
    {
        UiDriver ui(find_preset("animal-was-tired")->scenario);
        ui::CompareState& c = ui.window.compare.state;
        c.open = true;
        c.toggles_b.softmax = SoftmaxKind::Naive;  // small scores: the two softmaxes agree to rounding
        ui.frame(6);
        INFO(ui.text("compare.largest"));
        CHECK(ui.text("compare.largest").find(": no difference (float rounding at this size is ") != std::string::npos);
        c.toggles_b = Toggles{};
        c.toggles_b.mask = MaskKind::Causal;
        ui.frame(6);
        CHECK(ui.text("compare.largest").find("no difference") == std::string::npos);
    }
    {
        UiDriver ui(find_preset("naive-softmax-overflow")->scenario);  // A's naive softmax overflows
        ui::CompareState& c = ui.window.compare.state;
        c.open = true;
        c.toggles_b.softmax = SoftmaxKind::Stable;
        ui.frame(6);
        INFO(ui.text("compare.largest"));
        CHECK(ui.text("compare.largest").find("is not a number (NaN or \xE2\x88\x9E on one side)") != std::string::npos);
        CHECK(ui.text("compare.largest").find("nan") == std::string::npos);
    }
    // The B − A colours start at the floor: 1e−31 is drawn near the middle, not saturated.
    const Matrix tiny = Matrix::Constant(2, 2, 1.3e-31f);
    ui::HeatmapSpec spec;
    spec.values = &tiny;
    CHECK(ui::legend_limit(spec) == 1.3e-31f);
    spec.legend_floor = 2e-6f;
    CHECK(ui::legend_limit(spec) == 2e-6f);
}

TEST_CASE("a mask tied to the old tokens does not follow a generated sequence, and the window says so", "[new-user][long]") {
    Scenario s = find_preset("animal-was-tired")->scenario;
    s.mask = MaskKind::Padding;
    s.target.padding.assign(s.target.tokens.size(), false);
    s.target.padding.back() = true;
    UiDriver ui(s);
    ui.frame(4);
    ui.window.shared.compute.settings.generate_length = 1100;
    ui.click(ui.centre("backend.generate"));
    ui.frame(4);
    CHECK(ui.window.shared.session.scenario.mask == MaskKind::None);
    REQUIRE_FALSE(ui.window.shared.notices.empty());
    CHECK(ui.window.shared.notices.back().text.find("padding mask") != std::string::npos);
}

TEST_CASE("ticking a box or choosing a mask never moves the widgets below it", "[new-user][trap]") {
    Scenario s = find_preset("animal-was-tired")->scenario;
    s.heads = 2;
    UiDriver ui(s);
    ui.frame(4);
    const float mask_y = ui.widget("controls.mask")->y, numbers_y = ui.widget("controls.numbers")->y;
    const float identity_y = ui.widget("controls.identity_stages")->y;
    ui.click(ui.centre("controls.all_heads"));
    ui.frame(2);
    REQUIRE(ui.window.shared.view.all_heads);
    CHECK(ui.widget("controls.mask")->y == mask_y);
    ui.click(ui.centre("controls.all_heads"));  // and back: the "showing head" slider did not appear under the pointer
    ui.frame(2);
    CHECK_FALSE(ui.window.shared.view.all_heads);
    CHECK(ui.widget("controls.mask")->y == mask_y);
    ui.click(ui.centre("controls.fit_cells"));
    ui.frame(2);
    REQUIRE_FALSE(ui.window.shared.view.auto_cell);
    CHECK(ui.widget("controls.numbers")->y == numbers_y);
    ui.click(ui.centre("controls.numbers"));
    ui.frame(2);
    REQUIRE_FALSE(ui.window.shared.view.numbers);
    CHECK(ui.widget("controls.identity_stages")->y == identity_y);
    for (MaskKind kind : {MaskKind::Causal, MaskKind::SlidingWindow, MaskKind::Padding, MaskKind::Custom, MaskKind::None}) {
        ui.window.shared.session.push(edits::SetMaskKind{kind});
        ui.frame(2);
        CHECK(ui.widget("controls.numbers")->y == numbers_y);
    }
}

TEST_CASE("clicking away from the sentence box applies the typed sentence", "[new-user][trap]") {
    UiDriver ui(find_preset("dog-bites-man")->scenario);
    ui.frame(4);
    ui.click(ui.centre("tokens.sentence"));
    ui.key(GLFW_KEY_A, true);
    ui.type("the dog ran home");
    ui.click(ImVec2(1500.0f, 985.0f));  // the status bar: nothing there takes the click
    ui.frame(2);
    CHECK(ui.window.shared.session.scenario.target.tokens == std::vector<std::string>{"the", "dog", "ran", "home"});
    CHECK(ui.text("tokens.sentence") == "the dog ran home");
    // An emptied box is refused aloud, and shows the tokens again.
    ui.click(ui.centre("tokens.sentence"));
    ui.key(GLFW_KEY_A, true);
    ui.key(GLFW_KEY_DELETE);
    ui.click(ImVec2(1500.0f, 985.0f));
    ui.frame(2);
    CHECK(ui.window.shared.session.scenario.target.tokens.size() == 4);
    REQUIRE_FALSE(ui.window.shared.notices.empty());
    CHECK(ui.window.shared.notices.back().text.find("empty sentence") != std::string::npos);
    CHECK(ui.text("tokens.sentence") == "the dog ran home");
}

TEST_CASE("all heads side by side puts every head's map of a step in one row, and the pipeline fits the window", "[new-user][layout]") {
    Scenario s = find_preset("animal-was-tired")->scenario;
    s.heads = 4;
    UiDriver ui(s);
    ui.window.shared.view.all_heads = true;
    ui.frame(4);
    for (const char* step : {"weights", "scores", "q", "output"}) {
        INFO(step);
        const ui::HeatmapLayout* first = ui.heatmap(std::string("head0.") + step);
        REQUIRE(first != nullptr);
        for (int h = 1; h < 4; ++h) {
            const ui::HeatmapLayout* other = ui.heatmap("head" + std::to_string(h) + "." + step);
            REQUIRE(other != nullptr);
            CHECK(other->y == first->y);  // side by side, not stacked
            CHECK(other->x > first->x);
        }
    }
    for (const ui::HeatmapLayout& h : ui.window.shared.layout) {  // nothing below the window's edge: no scrolling to find a head
        INFO(h.name);
        CHECK(h.y + static_cast<float>(h.shown_rows) * h.cell_h <= 1000.0f);
        CHECK(h.x + static_cast<float>(h.shown_cols) * h.cell_w <= 1600.0f);
    }
}

TEST_CASE("all heads side by side: every head's weights have their numbers, not only the heads whose values are short", "[new-user][layout]") {
    // dog-bites-man with 4 heads: some heads' weights hold values such as 0.004, written
    // "4e−3", as wide as "0.25"; every head's card has room for them.
    Scenario s = find_preset("dog-bites-man")->scenario;
    s.heads = 4;
    UiDriver ui(s);
    ui.window.shared.view.all_heads = true;
    ui.frame(4);
    for (int h = 0; h < 4; ++h) {
        const ui::HeatmapLayout* weights = ui.heatmap("head" + std::to_string(h) + ".weights");
        REQUIRE(weights != nullptr);
        INFO("head " << h + 1);
        CHECK(weights->numbers);
    }
}

namespace {

// Whether an axis of the named matrix counts tokens (queries or keys), by the registry.
bool token_rows(const std::string& name) {
    const auto ref = parse_matrix_name(name);
    return ref && ref->entry->rows != Axis::Dim && ref->entry->rows != Axis::Hidden;
}
bool token_cols(const std::string& name) {
    const auto ref = parse_matrix_name(name);
    return ref && ref->entry->cols != Axis::Dim && ref->entry->cols != Axis::Hidden;
}

}  // namespace

TEST_CASE("one head of up to 16 tokens fills the window: every token labelled, the weights largest, nothing to scroll to",
          "[new-user][layout]") {
    for (const ImVec2 size : {ImVec2(1600, 1000), ImVec2(1920, 1080)})
        for (const char* name : {"animal-was-tired", "dog-bites-man", "she-gave-her-dog-a-bone", "i-love-deep-learning-causal", "causal"}) {
            INFO(name << " at " << size.x << "x" << size.y);
            // "causal": the README's picture, two heads and a causal mask (one more map to place).
            const bool causal = std::string(name) == "causal";
            Scenario s = find_preset(causal ? "animal-was-tired" : name)->scenario;
            s.heads = causal ? 2 : 1;
            if (causal) s.mask = MaskKind::Causal;
            UiDriver ui(s, size);
            ui.frame(4);
            const ui::HeatmapLayout* weights = ui.heatmap("head0.weights");
            REQUIRE(weights != nullptr);
            CHECK(weights->numbers);
            float right = 0, bottom = 0;
            for (const ui::HeatmapLayout& h : ui.window.shared.layout) {
                INFO(h.name << ": cells " << h.cell_w << " x " << h.cell_h);
                CHECK(h.shown_rows == h.rows);  // every cell on screen, none below or beside the window
                CHECK(h.shown_cols == h.cols);
                const float r = h.x + static_cast<float>(h.cols) * h.cell_w, b = h.y + static_cast<float>(h.rows) * h.cell_h;
                CHECK(r <= size.x);
                CHECK(b <= size.y);
                right = std::max(right, r);
                bottom = std::max(bottom, b);
                CHECK(h.cell_w <= weights->cell_w + 0.5f);  // the step taught is the largest
                if (token_rows(h.name) && h.rows <= 16) CHECK(h.row_label_step == 1);
                if (token_cols(h.name) && h.cols <= 16) CHECK(h.col_label_step == 1);
                if (h.name == "head0.scores" && h.rows <= 7) CHECK(h.numbers);
            }
            // The maps reach across the window and down it, not into one corner of it.
            CHECK(right >= 0.85f * size.x);
            CHECK(bottom >= 0.75f * size.y);
        }
}

TEST_CASE("the stage strip scrolls the pipeline to a step, and the step stays in view when the layout changes", "[new-user][layout]") {
    Scenario s = find_preset("animal-was-tired")->scenario;
    s.heads = 2;
    UiDriver ui(s);
    ui.window.shared.view.auto_cell = false;
    ui.window.shared.view.cell_size = 60.0f;  // cards larger than the window: the pipeline scrolls
    ui.frame(3);
    const ui::WidgetLayout* view = ui.widget("pipeline.view");
    REQUIRE(view != nullptr);
    const float view_left = view->x, view_top = view->y;
    REQUIRE(ui.heatmap("head0.weights") != nullptr);
    CHECK(ui.heatmap("head0.weights")->x > view->x + view->w);  // far beyond the window
    CHECK(ui.text("pipeline.step.X") == "[X]");                 // the step at the view's corner is lit
    ui.click(ui.centre("pipeline.step.softmax"));
    ui.frame(3);
    const ui::HeatmapLayout* weights = ui.heatmap("head0.weights");
    REQUIRE(weights != nullptr);
    INFO("weights' grid at " << weights->x << ", " << weights->y << "; the view from " << view_left << ", " << view_top);
    // Its card at the view's corner: only its token labels left of the grid, its title above.
    CHECK(weights->x > view_left);
    CHECK(weights->x < view_left + 150.0f);
    CHECK(weights->y > view_top);
    CHECK(weights->y < view_top + 200.0f);
    CHECK(ui.text("pipeline.step.softmax") == "[softmax]");
    CHECK(ui.text("pipeline.step.X") == "X");
    const ImVec2 placed(weights->x - view_left, weights->y - view_top);
    // Another head shown, then a wider window (the layout made again): the weights stay where they were.
    ui.window.shared.view.shown_head = 1;
    ui.frame(3);
    REQUIRE(ui.heatmap("head1.weights") != nullptr);
    CHECK(ui.heatmap("head1.weights")->x - view_left == Approx(placed.x).margin(1.0));
    CHECK(ui.heatmap("head1.weights")->y - view_top == Approx(placed.y).margin(1.0));
    ImGui::GetIO().DisplaySize = ImVec2(1920, 1080);
    ui.frame(4);
    view = ui.widget("pipeline.view");
    REQUIRE(view != nullptr);
    REQUIRE(ui.heatmap("head1.weights") != nullptr);
    // (The wider window may hold the pipeline's width: the weights then keep their place in the row.)
    CHECK(ui.heatmap("head1.weights")->x > view->x);
    CHECK(ui.heatmap("head1.weights")->x < view->x + view->w);
    CHECK(ui.heatmap("head1.weights")->y - view->y == Approx(placed.y).margin(2.0));
    CHECK(ui.text("pipeline.step.softmax") == "[softmax]");
}

TEST_CASE("A step chosen in the strip is drawn large with its numbers: the animal preset's X, Q, K and V at 1920x1080",
          "[new-user][layout]") {
    UiDriver ui(find_preset("animal-was-tired")->scenario, ImVec2(1920, 1080));
    ui.frame(4);
    // The whole pipeline fits the window: the weights, the step each preset teaches, carry their
    // numbers; eleven tokens' embeddings beside them are too many numbers for the rest.
    REQUIRE(ui.heatmap("head0.weights") != nullptr);
    CHECK(ui.heatmap("head0.weights")->numbers);
    REQUIRE(ui.heatmap("head0.q") != nullptr);
    CHECK_FALSE(ui.heatmap("head0.q")->numbers);
    auto all_in_window = [&] {
        for (const ui::HeatmapLayout& h : ui.window.shared.layout) {
            INFO(h.name << " at " << h.x << ", " << h.y << ": cells " << h.cell_w << " x " << h.cell_h);
            CHECK(h.shown_rows == h.rows);
            CHECK(h.shown_cols == h.cols);
            CHECK(h.x + static_cast<float>(h.cols) * h.cell_w <= 1920.0f);
            CHECK(h.y + static_cast<float>(h.rows) * h.cell_h <= 1080.0f);
        }
    };
    for (const auto& [step, maps] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"Q K V", {"head0.q", "head0.k", "head0.v"}}, {"X", {"x"}}, {"Q\xC2\xB7K\xE1\xB5\x80", {"head0.scores"}}}) {
        INFO("the step chosen: " << step);
        ui.click(ui.centre("pipeline.step." + step));
        ui.frame(4);
        for (const std::string& name : maps) {
            const ui::HeatmapLayout* map = ui.heatmap(name);
            REQUIRE(map != nullptr);
            INFO(name << ": cells " << map->cell_w << " x " << map->cell_h);
            CHECK(map->numbers);
        }
        all_in_window();  // still one picture: nothing scrolls
        REQUIRE(ui.heatmap("head0.weights") != nullptr);
        CHECK(ui.window.view_choices().focus_step == step);  // kept in a session
    }
    // A session reopens with the step chosen; a step the strip does not name is refused by name.
    nlohmann::json j = session_file::session_to_json(ui.window.shared.session.scenario, ui.window.view_choices());
    const session_file::SessionLoad load = session_file::session_from_json(j, "s.json");
    REQUIRE(load.errors.empty());
    CHECK(load.view.focus_step == "Q\xC2\xB7K\xE1\xB5\x80");
    j["view"]["focus_step"] = "keys";
    CHECK(session_file::session_from_json(j, "s.json").errors ==
          std::vector<std::string>{"s.json: key 'view.focus_step': expected a step of the pipeline as its strip names it (\"softmax\")"});
    // The weights again: as the preset opened.
    ui.click(ui.centre("pipeline.step.softmax"));
    ui.frame(4);
    CHECK(ui.heatmap("head0.weights")->numbers);
    CHECK_FALSE(ui.heatmap("head0.q")->numbers);
}

TEST_CASE("Presenter mode fills the projector with the step taught: its result large, numbers in the maps, no notice but errors",
          "[new-user][presenter]") {
    UiDriver ui(find_preset(default_preset_name())->scenario, ImVec2(1920, 1080));
    ui.frame(2);
    ui::add_notice(ui.window.shared, "Opened the GPT-2 model", false);
    ui.window.shared.presenter = true;
    // "What changed since 2017", step 7: grouped-query attention, seven maps on the stage.
    REQUIRE(ui::open_lesson_named(ui.window.shared, ui.window.lesson.state, "08-since-2017", 6));
    ui.frame(4);
    const ui::HeatmapLayout* q = ui.heatmap("head0.q_unrotated");  // Q as projected: RoPE turns it in the positional step
    const ui::HeatmapLayout* w_q = ui.heatmap("w_q");
    REQUIRE(q != nullptr);
    REQUIRE(w_q != nullptr);
    INFO("Q's cells " << q->cell_w << " px, W_Q's " << w_q->cell_w << " px");
    CHECK(q->cell_w >= 28.0f);            // the step's own maps fill the screen (they were 11 px)
    CHECK(w_q->cell_w < q->cell_w);        // its inputs beside it, smaller
    // Step 10: Gemma 2's scores, scaled and soft-capped, each with its numbers.
    for (int i = 0; i < 3; ++i) ui::lesson_next(ui.window.shared, ui.window.lesson.state);
    ui.frame(4);
    for (const char* map : {"head0.scores", "head0.scaled_scores", "head0.capped_scores"}) {
        INFO(map);
        REQUIRE(ui.heatmap(map) != nullptr);
        CHECK(ui.heatmap(map)->numbers);
    }
    // A projector shows no "Opened …" notice; an error it does.
    CHECK(ui::notice_lines(ui.window.shared.notices, ui.window.shared.presenter, ui.window.lesson.state, 4000.0f) == 0);
    ui::add_notice(ui.window.shared, "Cannot save the session: disk full", true);
    CHECK(ui::notice_lines(ui.window.shared.notices, ui.window.shared.presenter, ui.window.lesson.state, 4000.0f) == 1);
    ui.window.shared.presenter = false;
    CHECK(ui::notice_lines(ui.window.shared.notices, ui.window.shared.presenter, ui.window.lesson.state, 4000.0f) == 2);
}

TEST_CASE("A cell's number keeps plain decimals when fewer fit: 0.04 is never written 4e−2", "[new-user][numbers]") {
    CHECK(ui::cell_text(0.04f, 1, 2) == "0.04");
    CHECK(ui::cell_text(-0.04f, 1, 2) == "\xE2\x88\x92" "0.04");
    CHECK(ui::cell_text(0.52f, 1, 2) == "0.5");
    CHECK(ui::cell_text(0.0004f, 1, 2) == "4e\xE2\x88\x92" "4");  // 2 decimals would say 0.00: the value, in short form
    CHECK(ui::cell_text(0.04f, 2, 2) == "0.04");
}

TEST_CASE("A long sequence's tokens are said in a line, not drawn as thousands of chips, from the moment it is generated",
          "[new-user][long]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    CHECK(ui.widget("tokens.summary") == nullptr);
    ui.window.shared.session.push(edits::ReplaceScenario{compute::generated_scenario(1030, 1)});
    ui.frame(1);
    CHECK(ui.text("tokens.summary").rfind("1,030 tokens (generated: t1 \xE2\x80\xA6 t1030)", 0) == 0);
}

TEST_CASE("A layer without norms says so on its cards and in the side bar: no LayerNorm formula", "[new-user][block]") {
    Scenario s = find_preset("animal-was-tired")->scenario;
    s.block.residual = true;
    s.block.feed_forward = true;
    s.block.layer_norm = false;
    UiDriver ui(s);
    ui.frame(3);
    const Trace& t = ui.window.shared.session.trace;
    INFO(ui.window.shared.session.errors.size());
    REQUIRE(t.ok);
    REQUIRE(t.has_block);
    for (const char* name : {"block.norm1", "block.norm2"}) {
        const std::optional<MatrixRef> ref = parse_matrix_name(name);
        REQUIRE(ref);
        const std::string shape = ref->entry->shape(t, 0);
        INFO(name << ": " << shape);
        CHECK(shape.find("mean") == std::string::npos);
        CHECK(shape.find("no norm") != std::string::npos);
    }
    CHECK(ui.text("controls.block_norm") == "none");
}

namespace {

// The cards a lesson step's view draws, in order: the heatmaps it laid out in the last frame.
std::vector<std::string> cards_drawn(const UiDriver& ui) {
    std::vector<std::string> names;
    for (const ui::HeatmapLayout& h : ui.window.shared.layout) names.push_back(h.name);
    return names;
}

}  // namespace

TEST_CASE("a lesson step's view draws what its stage reads, then what it computes, last", "[new-user][lesson]") {
    using Names = std::vector<std::string>;
    UiDriver ui(find_preset("animal-was-tired")->scenario);
    ui.frame(2);
    SECTION("the scaled dot product, step by step") {
        REQUIRE(ui::open_lesson_named(ui.window.shared, ui.window.lesson.state, "01-scaled-dot-product", 0));
        const std::vector<Names> expected = {
            {"head0.q", "head0.k", "head0.v"},                   // Q, K and V given
            {"head0.q", "head0.k", "head0.scores"},              // Q·Kᵀ: not V
            {"head0.scores", "head0.scaled_scores"},             // ÷ √d_k
            {"head0.masked_scores", "head0.weights"},            // softmax
            {"head0.weights", "head0.v", "head0.output"},        // weights · V
        };
        for (size_t step = 0; step < expected.size(); ++step) {
            INFO("step " << step + 1);
            ui.frame(3);
            CHECK(cards_drawn(ui) == expected[step]);
            ui::lesson_next(ui.window.shared, ui.window.lesson.state);
        }
    }
    SECTION("what changed since 2017: the pre-norm projections, the soft-cap, the gated MLP and the sandwich norms") {
        REQUIRE(ui::open_lesson_named(ui.window.shared, ui.window.lesson.state, "08-since-2017", 0));
        const std::map<int, Names> expected = {
            {0, {"x", "pe", "x_pe"}},
            {5, {"head0.q_unrotated", "head0.k_unrotated", "head0.q", "head0.k"}},  // RoPE turns Q and K: before, then after
            // the projections under RoPE: X·W as projected, before the positional step turns Q and K
            {6, {"block.norm1", "w_q", "w_k", "w_v", "head0.q_unrotated", "head0.k_unrotated", "head0.v"}},
            {7, {"output", "block.residual", "block.norm1", "block.norm2", "block.ffn_gate", "block.ffn_up", "block.ffn_product",
                 "block.ffn_output", "block.output"}},
            {9, {"head0.scores", "head0.scaled_scores", "head0.capped_scores"}},
            {10, {"output", "block.post_attention_norm", "block.residual", "block.norm1", "block.norm2", "block.ffn_gate", "block.ffn_up",
                  "block.ffn_product", "block.ffn_output", "block.post_feed_forward_norm", "block.output"}},
            // Gemma 3's QK-norm: each of Q and K normed (with its weight) before RoPE
            {11, {"block.norm1", "w_q", "q_norm", "w_k", "k_norm", "w_v", "head0.q_normed", "head0.k_normed", "head0.v"}},
        };
        for (int step = 0; step <= expected.rbegin()->first; ++step) {
            ui.frame(3);
            if (const auto it = expected.find(step); it != expected.end()) {
                INFO("step " << step + 1);
                CHECK(cards_drawn(ui) == it->second);
            }
            ui::lesson_next(ui.window.shared, ui.window.lesson.state);
        }
    }
}

TEST_CASE("A view asks for the tab, the head and the step (ShowView): the window sets them, and a session opened after the ask sets its own",
          "[new-user][view]") {
    UiDriver ui(find_preset("animal-was-tired")->scenario);
    ui.frame(2);
    REQUIRE(ui.window.shared.session.scenario.heads > 1);
    ui.window.shared.view.all_heads = true;
    ui.window.shared.requests.push_back(ui::ShowView{ui::Pane::Pipeline, 1, attn::Column::Projections});
    CHECK(ui.window.shared.view.all_heads);  // asked: nothing set yet
    ui.frame();
    CHECK_FALSE(ui.window.shared.view.all_heads);
    CHECK(ui.window.shared.view.shown_head == 1);
    CHECK(ui.window.view_choices().shown_head == 1);

    // A session opened after a view's ask, in the same frame: the session's head, not the ask's.
    session_file::ViewChoices saved;
    saved.shown_head = 0;
    const std::string file = temp_path("show-view-session.json");
    std::string error;
    REQUIRE(session_file::save_session(file, ui.window.shared.session.scenario, saved, &error));
    ui.window.shared.requests.push_back(ui::ShowView{{}, 1, {}});
    ui.window.open_file(file);
    ui.frame(2);
    CHECK(ui.window.shared.view.shown_head == 0);
    std::filesystem::remove(file);
}
