// The model view's tabs of what each head does, driven headless (ui_driver.hpp): Head roles
// scored as a job and shown as a table, badges and a probe map; the Logit lens's cells and a
// cell's top 5; the Ablation sweep's values against full ablated runs and a click that
// ablates the head; and the job runner's cancel and supersede.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "bad_model_catalogue.hpp"
#include "interpret/ablation_sweep.hpp"
#include "interpret/model_roles.hpp"
#include "job.hpp"
#include "model_fixtures.hpp"
#include "teaching/presets.hpp"
#include "ui/panel_model.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;
using attn::testing::write_model;

namespace {

std::string fixed(double v, int digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    return text;
}

}  // namespace

TEST_CASE("Model view Head roles: scored as a job, every head in the table, badges on the grid above the threshold, a head's probe map",
          "[model-view][interpret]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    const std::string folder = write_model("attnlab-gui-head-roles");
    REQUIRE(ui.open_model(folder));
    ui.frame(2);
    ui.click(ui.centre("model.tab.roles"));
    ui.click(ui.centre("model.roles.score"));
    ui.frame(2);
    ui::ModelViewState& m = ui.window.model.state;
    REQUIRE(m.heads.roles.run);
    // The table holds what the engine scores for the same probe, layer by layer.
    const std::optional<interpret::RolesRun> expected = interpret::run_head_roles(*m.model, 0, 1, nullptr);
    REQUIRE(expected);
    std::string rows;
    for (const interpret::HeadRoles& h : expected->heads) {
        std::string row = std::to_string(h.head.layer + 1) + "." + std::to_string(h.head.head + 1);
        for (interpret::Role r : interpret::kRoles) row += " " + fixed(h.scores[r], 3);
        const std::optional<interpret::Role> role = interpret::strongest_role(h.scores, m.heads.threshold);
        rows += (rows.empty() ? "" : "\n") + row + (role ? std::string(" ") + interpret::role_key(*role) : "");
    }
    CHECK(ui.text("model.roles.table") == rows);
    CHECK(ui.text("model.roles.probe").find(' ') != std::string::npos);
    // The strongest head's probe map is drawn; a row picks another.
    CHECK(ui.widget("model.roles.probe_map") != nullptr);
    ui.click(ui.centre("model.roles.row.2.1"));
    CHECK(ui.text("model.roles.probe_map").rfind("layer 2 head 1", 0) == 0);
    // That head in the pipeline on the probe: its layer with the probe's stream as input, the
    // head shown, and the cells its scores read outlined on its weights.
    REQUIRE(ui.widget("model.roles.open") != nullptr);
    INFO("Open at " << ui.widget("model.roles.open")->x << ", " << ui.widget("model.roles.open")->y << " size " << ui.widget("model.roles.open")->w);
    ui.click(ui.centre("model.roles.open"));
    ui.frame(2);
    const Scenario& opened = ui.window.shared.session.scenario;
    CHECK_THAT(opened.name, Catch::Contains("layer 2 on the head-roles probe"));
    CHECK(opened.target.tokens == m.heads.roles.run->tokens);
    CHECK(ui.window.shared.view.shown_head == 0);
    CHECK(ui.window.shared.view.outlined_head == 0);
    CHECK_FALSE(ui.window.shared.view.outlined_cells.empty());
    CHECK(ui.window.shared.session.trace.head[0].weights.isApprox(m.heads.roles.run->layers[1].head[0].weights, 1e-5f));
    CHECK(ui.heatmap("head0.weights") != nullptr);
    ui::show_pane(ui.window.shared.view, ui::Pane::Model);
    ui.frame(2);
    // Badges: every head has a score of at least 0.05, none (with random weights) of 1.
    m.heads.threshold = 0.05f;
    ui.click(ui.centre("model.tab.grid"));
    for (int l = 1; l <= 3; ++l)
        for (int h = 1; h <= 2; ++h) {
            const std::string map = ui.text("model.map." + std::to_string(l) + "." + std::to_string(h));
            INFO("layer " << l << " head " << h << ": " << map);
            CHECK((map.find("previous_token") != std::string::npos || map.find("first_token") != std::string::npos ||
                   map.find("self") != std::string::npos || map.find("duplicate_token") != std::string::npos ||
                   map.find("induction") != std::string::npos));
        }
    m.heads.badges = false;
    ui.frame();
    CHECK(ui.text("model.map.1.1").empty());  // not opened, not ablated, no badge
    // Another model: its roles are gone until scored again.
    REQUIRE(ui.open_model(write_model("attnlab-gui-head-roles-2")));
    CHECK_FALSE(m.heads.roles.run);
}

TEST_CASE("Model view Logit lens: the last layer is the prediction, a cell clicked shows its top 5, the lens follows a new sentence",
          "[model-view][interpret]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    REQUIRE(ui.open_model(write_model("attnlab-gui-logit-lens")));
    ui::ModelViewState& m = ui.window.model.state;
    m.sentence = " the cat";
    ui.frame(3);
    ui.click(ui.centre("model.tab.lens"));
    ui.frame(3);
    const int n = static_cast<int>(m.pass.tokens.size());
    REQUIRE(m.heads.lens.lens);
    // The last layer's cell is the prediction: the top 5's first token, labelled as in the strip.
    CHECK(ui.text("model.lens.cell.3." + std::to_string(n)) == m.model->token_text(m.pass.next_token_top5.front().id));
    ui.click(ui.centre("model.lens.cell.1.2"));
    REQUIRE(m.heads.lens_cell == std::make_pair(0, 1));
    std::string top;
    for (int id : m.heads.lens.lens->layers[0][1].ids) top += (top.empty() ? "" : " ") + m.model->token_text(id);
    CHECK(ui.text("model.lens.top5") == top);
    m.sentence = " the cat sat";
    ui.frame(4);
    CHECK(static_cast<int>(m.heads.lens.lens->layers[0].size()) == static_cast<int>(m.pass.tokens.size()));
    CHECK(ui.text("model.lens.cell.3." + std::to_string(m.pass.tokens.size())) == m.model->token_text(m.pass.next_token_top5.front().id));
}

TEST_CASE("Model view Ablation sweep: each value is a full run with that head ablated, and a click ablates it for real",
          "[model-view][interpret]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    REQUIRE(ui.open_model(write_model("attnlab-gui-sweep")));
    ui::ModelViewState& m = ui.window.model.state;
    ui.frame(2);
    ui.click(ui.centre("model.tab.sweep"));
    ui.click(ui.centre("model.sweep.run"));
    ui.frame(2);
    REQUIRE(m.heads.sweep.sweep);
    const int target = m.pass.next_token_top5.front().id;
    const float base = interpret::log_probability(m.pass.logits.bottomRows(1), target);
    for (int l = 0; l < 3; ++l)
        for (int h = 0; h < 2; ++h) {
            const ModelPass ablated = lm::forward_text(*m.model, m.computed_sentence, {{l, h}});
            REQUIRE(ablated.ok);
            const float full = interpret::log_probability(ablated.logits.bottomRows(1), target) - base;
            CHECK(m.heads.sweep.sweep->delta(l, h) == Approx(full).margin(1e-5));
            CHECK(ui.text("model.sweep.cell." + std::to_string(l + 1) + "." + std::to_string(h + 1)) == fixed(full, 6));
        }
    ui.click(ui.centre("model.sweep.cell.2.2"));
    ui.frame(3);
    CHECK(m.pass.ablated.heads.count({1, 1}) == 1);
}

TEST_CASE("a job runner's job is cancelled by a newer start, its result dropped, and the window never waits for it", "[interpret][jobs]") {
    compute::Job<int> job;
    std::atomic<bool> first_started{false};
    job.start("first", [&](compute::JobProgress& progress) {
        first_started = true;
        for (int i = 0;; ++i) {
            if (!progress.report(i, 1000000)) return -1;  // cancelled
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    while (!first_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(job.running());
    CHECK_FALSE(job.take());  // still running
    job.start("second", [](compute::JobProgress& progress) {
        progress.report(1, 1);
        return 42;
    });
    CHECK(job.what() == "second");
    job.wait();
    const std::optional<int> result = job.take();
    REQUIRE(result);
    CHECK(*result == 42);  // the first's -1 never lands
    CHECK_FALSE(job.take());  // taken once
    CHECK_FALSE(job.running());
}

namespace {

// Takes the job's next result, starting what waits, as a view does each frame.
template <typename Result>
std::optional<Result> next_result(compute::Job<Result>& job) {
    job.wait();  // settles: a request behind a cancelled job starts once that one has ended, and is waited for
    return job.take();
}

}  // namespace

TEST_CASE("a job queued behind one that finishes waits for it, a newer request replaces the one waiting, and each result lands in turn",
          "[interpret][jobs]") {
    compute::Job<int> job;
    std::atomic<bool> release{false}, second_ran{false}, first_started{false};
    job.queue("first", [&](compute::JobProgress&) {
        first_started = true;
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return 1;
    }, compute::UnderWay::finish);
    while (!first_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    job.queue("second", [&](compute::JobProgress&) {
        second_ran = true;
        return 2;
    }, compute::UnderWay::finish);
    CHECK(job.queued());
    CHECK(job.what() == "first");  // the second waits
    job.queue("third", [](compute::JobProgress&) { return 3; }, compute::UnderWay::finish);
    CHECK_FALSE(job.take());  // the first still runs
    release = true;
    const std::optional<int> first = next_result(job);
    REQUIRE(first);
    CHECK(*first == 1);  // a state passed through: kept
    CHECK(job.what() == "third");  // started by the take
    const std::optional<int> third = next_result(job);
    REQUIRE(third);
    CHECK(*third == 3);
    CHECK_FALSE(second_ran);  // replaced while it waited
    CHECK_FALSE(job.running());
}

TEST_CASE("a job queued behind one it cancels starts once that one has ended, and only its own result lands", "[interpret][jobs]") {
    compute::Job<int> job;
    std::atomic<bool> first_started{false}, first_ended{false}, second_saw_first_ended{false};
    job.queue("first", [&](compute::JobProgress& progress) {
        first_started = true;
        while (progress.report(0, 1)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a run that takes a while to stop
        first_ended = true;
        return -1;
    }, compute::UnderWay::cancel);
    while (!first_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    job.queue("second", [&](compute::JobProgress&) {
        second_saw_first_ended = first_ended.load();
        return 2;
    }, compute::UnderWay::cancel);
    CHECK(job.running());
    const std::optional<int> result = next_result(job);
    REQUIRE(result);
    CHECK(*result == 2);  // the first's -1 was dropped
    CHECK(second_saw_first_ended);  // never two at once
    CHECK_FALSE(job.take());
}

TEST_CASE("a job asked to stop ends early and its result still lands", "[interpret][jobs]") {
    compute::Job<int> job;
    std::atomic<bool> started{false};
    job.start("counting", [&](compute::JobProgress& progress) {
        started = true;
        int done = 0;
        while (progress.report(done, 1000000)) {
            ++done;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return 7;
    });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK_FALSE(job.stopping());
    job.stop();
    CHECK(job.stopping());
    job.wait();
    CHECK(job.done());
    const std::optional<int> result = job.take();
    REQUIRE(result);
    CHECK(*result == 7);  // what it did by then
}
