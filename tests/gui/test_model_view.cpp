// The model view driven headless (tests/gui/ui_driver.hpp): File → Open model… on a
// checkpoint the test writes, the grid, a map opened in the pipeline, an edit there
// recomputing the layers after it, a new sentence, and a bad folder that changes nothing; a
// head ablated with a right-click and restored; the Compare tab's two modes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include <imgui_internal.h>
#include <nlohmann/json.hpp>

#include "bad_model_catalogue.hpp"
#include "every_family.hpp"
#include "attention/engine.hpp"
#include "hf_family_fixtures.hpp"
#include "ui/arithmetic.hpp"
#include "hub_server.hpp"
#include "scoped_environment.hpp"
#include "model_job.hpp"
#include "model_fixtures.hpp"
#include "teaching/presets.hpp"
#include "attention/registry.hpp"
#include "session_file.hpp"
#include "ui/classroom.hpp"
#include "ui/panel_model.hpp"
#include "explained.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;
using attn::testing::write_model;

namespace {

void open_through_menu(UiDriver& ui, const std::string& folder) {
    ui.click(ui.centre("menu.file"));
    ui.click(ui.centre("menu.open_model"));
    REQUIRE(ui.window.files.state.prompt.action == ui::FileAction::OpenCheckpoint);
    ui.key(GLFW_KEY_ESCAPE);
    ui.window.files.state.prompt.path = folder;
    ui.window.files.state.prompt.action = ui::FileAction::OpenCheckpoint;
    ui.window.files.state.prompt.open_requested = true;
    ui.frame(2);
    ui.key(GLFW_KEY_ENTER);
    ui.frame(2);
}

}  // namespace

TEST_CASE("File → Open model…: the grid, a head opened in the pipeline, an edit recomputing the layers after it",
          "[model-view]") {
    const Preset& start = *find_preset(default_preset_name());
    UiDriver ui(start.scenario);
    ui.frame(3);
    const std::string folder = write_model("attnlab-model-view-test");

    SECTION("a folder that cannot be read leaves the work as it was, with a notice") {
        open_through_menu(ui, folder + "-missing");
        CHECK(ui.window.model.state.model == nullptr);
        CHECK(ui.window.shared.session.scenario.name == start.scenario.name);
        REQUIRE_FALSE(ui.window.shared.notices.empty());
        CHECK(ui.window.shared.notices.back().error);
        CHECK_THAT(ui.window.shared.notices.back().text, Catch::Matchers::Contains("-missing: no such folder"));
    }

    open_through_menu(ui, folder);
    ui::ModelViewState& m = ui.window.model.state;
    REQUIRE(m.model != nullptr);
    REQUIRE(m.pass.ok);
    CHECK(m.computed_sentence == "The animal did not cross the road because it was tired");
    // The same numbers as a forward pass of the folder, computed here.
    const lm::Model opened = *lm::load_model(folder).model;  // the folder as the family table reads it
    const ModelPass expected = lm::forward_text(opened, m.computed_sentence);
    REQUIRE(expected.ok);
    CHECK(m.pass.token_ids == expected.token_ids);
    // Chips token/id, by hand: "The" is T + the merge h e (id 257), " animal" starts with Ġ shown as ␣.
    CHECK(ui.text("model.tokens").rfind("T/51 he/257 \xE2\x90\xA3/220 a/64 n/77", 0) == 0);
    REQUIRE_FALSE(m.pass.next_token_top5.empty());
    CHECK(m.pass.next_token_top5[0].id == expected.next_token_top5[0].id);
    CHECK(ui.text("model.top5").rfind(m.pass.next_token_top5[0].token + "=", 0) == 0);
    for (int l = 1; l <= 3; ++l)
        for (int h = 1; h <= 2; ++h) CHECK(ui.widget("model.map." + std::to_string(l) + "." + std::to_string(h)) != nullptr);
    CHECK(ui.window.shared.session.scenario.name == start.scenario.name);  // opening the model changes no work

    SECTION("a folder that opens settles the notices of the attempts that failed before it") {
        // Found by a user: red "Cannot open the model …" lines stayed on screen, the projector's
        // too, after the model had opened.
        open_through_menu(ui, folder + "-missing");
        open_through_menu(ui, folder);
        for (const ui::Notice& n : ui.window.shared.notices) CHECK_FALSE((n.error && n.text.find("Cannot open the model") != std::string::npos));
        CHECK_THAT(ui.window.shared.notices.back().text, Catch::Matchers::Contains("Opened the GPT-2 model " + folder) &&
                                                              Catch::Matchers::Contains("weights F32, 19 KiB read in place from the file"));
        // A failure after the success is said again.
        open_through_menu(ui, folder + "-missing");
        CHECK(ui.window.shared.notices.back().error);
    }

    SECTION("a bad folder while a model is open keeps that model") {
        open_through_menu(ui, folder + "-missing");
        REQUIRE(m.model != nullptr);
        CHECK(m.model->folder() == folder);
        CHECK(m.pass.ok);
    }

    SECTION("an edit's recompute is a job: the window's thread only submits it, and says the maps are the model before it") {
        // A stub runner that holds the job until the test lets it go, then runs the real one
        // and notes the thread it ran on.
        std::promise<void> release;
        std::shared_future<void> released = release.get_future().share();
        std::vector<std::thread::id> threads;
        std::mutex threads_mutex;
        m.jobs = std::make_unique<compute::ModelJobs>([&, released](compute::ModelRecompute request) {
            released.wait();
            {
                std::lock_guard<std::mutex> lock(threads_mutex);
                threads.push_back(std::this_thread::get_id());
            }
            return compute::run_model_recompute(std::move(request));
        });
        ui.click(ui.centre("model.map.2.1"));
        ui.frame(3);
        REQUIRE(m.layer == 1);
        // X of layer 2 is the stream entering it, and its cells' tooltips say so.
        CHECK_THAT(ui.window.shared.view.x_meaning, Catch::Matchers::Contains("residual stream entering layer 2"));
        std::string x_tooltip;
        for (const std::string& line : ui::explain_cell(ui.window.shared.session.trace, "x", 0, 0, ui.window.shared.view.x_meaning).lines)
            x_tooltip += line + "\n";
        CHECK_THAT(x_tooltip, Catch::Matchers::Contains("residual stream entering layer 2"));
        CHECK(x_tooltip.find("seeded") == std::string::npos);
        REQUIRE(ui.heatmap("head0.weights") != nullptr);
        const float weights_y = ui.heatmap("head0.weights")->y;  // where the cards stand before the recompute line shows
        const ModelPass before = m.pass;
        ui.hold_model_jobs = true;
        const std::uint64_t runs = engine_runs();
        const float w = ui.window.shared.session.scenario.w_o(2, 5);
        ui.window.shared.session.push(edits::SetCell{edits::MatrixId::WO, 2, 5, w + 4.0f});
        ui.frame();
        // The frame ran the edited layer's own trace for the pipeline (the compute layer), and
        // none of the model's layers: the recompute waits in its job.
        CHECK(engine_runs() - runs == 1);
        CHECK(m.jobs->busy());
        CHECK(m.pass.logits == before.logits);
        CHECK_THAT(ui.text("model.recomputing"), Catch::Matchers::Contains("Recomputing layers 2\xE2\x80\x93" "3 after the edit"));
        // The line takes room kept for it: no card moves under the pointer while it shows.
        REQUIRE(ui.heatmap("head0.weights") != nullptr);
        CHECK(ui.heatmap("head0.weights")->y == Approx(weights_y).margin(0.5));
        // A second edit while the first runs supersedes nothing already running: it waits, and
        // the screen ends at it.
        ui.window.shared.session.push(edits::SetCell{edits::MatrixId::WO, 2, 5, w + 5.0f});
        ui.frame();
        CHECK(engine_runs() - runs == 2);
        release.set_value();
        ui.hold_model_jobs = false;
        ui.frame(2);
        CHECK_FALSE(m.jobs->busy());
        CHECK(ui.widget("model.recomputing") == nullptr);
        hf::OpenedModel edited_weights = opened.opened();  // its own copy of the one matrix edited
        edited_weights.weights.layers[1].w_o.edit()(2, 5) = w + 5.0f;
        const lm::Model changed(std::move(edited_weights));
        const ModelPass full = lm::forward_text(changed, m.computed_sentence);
        CHECK(m.pass.logits == full.logits);
        CHECK(m.pass.layers[2].block.output == full.layers[2].block.output);
        std::lock_guard<std::mutex> lock(threads_mutex);
        REQUIRE_FALSE(threads.empty());
        for (const std::thread::id& id : threads) CHECK(id != std::this_thread::get_id());
        m.jobs.reset();  // its runner refers to this section's locals
    }

    SECTION("a new sentence and a head ablated are jobs too: the frame that asks runs none of the model's layers") {
        // A stub runner that runs a request only once the test has allowed it.
        std::atomic<int> allowed{0};
        std::atomic<int> started{0};
        m.jobs = std::make_unique<compute::ModelJobs>([&](compute::ModelRecompute request) {
            const int mine = started++;
            while (allowed.load() <= mine) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return compute::run_model_recompute(std::move(request));
        });
        ui.hold_model_jobs = true;
        const ModelPass before = m.pass;
        std::uint64_t runs = engine_runs();
        m.sentence = "dog bites man";
        ui.frame();
        CHECK(engine_runs() == runs);  // submitted, not run
        CHECK(m.jobs->busy());
        CHECK(m.computed_sentence == "The animal did not cross the road because it was tired");
        CHECK(m.pass.logits == before.logits);
        CHECK_THAT(ui.text("model.recomputing"), Catch::Matchers::Contains("Running the new sentence"));
        ui.frame(2);
        CHECK(engine_runs() == runs);  // asked once, not again each frame
        allowed = 1;
        ui.hold_model_jobs = false;
        ui.frame(2);
        CHECK_FALSE(m.jobs->busy());
        CHECK(m.computed_sentence == "dog bites man");
        CHECK(m.pass.logits == lm::forward_text(opened, "dog bites man").logits);

        // A right-click ablates head 1 of layer 2: the heads shown change when the job lands.
        ui.hold_model_jobs = true;
        runs = engine_runs();
        ui.click(ui.centre("model.map.2.1"), 1);
        CHECK(engine_runs() == runs);
        CHECK(m.jobs->busy());
        CHECK(m.pass.ablated.empty());
        CHECK_THAT(ui.text("model.recomputing"), Catch::Matchers::Contains("Recomputing layers 2\xE2\x80\x93" "3 with the heads ablated"));
        allowed = 2;
        ui.hold_model_jobs = false;
        ui.frame(2);
        CHECK(m.pass.ablated == stack::HeadSet{{1, 0}});
        CHECK(m.pass.logits == lm::forward_text(opened, "dog bites man", {{1, 0}}).logits);
        CHECK(ui.widget("model.recomputing") == nullptr);
        m.jobs.reset();  // its runner refers to this section's locals
    }

    SECTION("nothing waits for a recompute: a layer asked meanwhile opens once it lands, and another model takes the place of the "
            "one it reads at once, the recompute dropped and its model kept alive until it ends") {
        std::atomic<bool> allowed{false};
        m.jobs = std::make_unique<compute::ModelJobs>([&](compute::ModelRecompute request) {
            while (!allowed.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return compute::run_model_recompute(std::move(request));
        });
        ui.hold_model_jobs = true;
        ui.click(ui.centre("model.map.2.1"), 1);  // head 1 of layer 2 ablated: a recompute that waits
        REQUIRE(m.jobs->busy());
        // Layer 3 asked while it runs: not opened from the pass about to change, and the frame does not wait.
        ui::open_model_layer(ui.window.shared, m, 2, 0);
        ui.frame();
        CHECK(m.layer == -1);
        REQUIRE(m.layer_asked);
        allowed = true;
        ui.hold_model_jobs = false;
        ui.frame(2);
        CHECK_FALSE(m.layer_asked);
        REQUIRE(m.layer == 2);
        CHECK(m.pass.ablated == stack::HeadSet{{1, 0}});
        const ModelPass ablated = lm::forward_text(opened, m.computed_sentence, {{1, 0}});
        CHECK(ui.window.shared.session.trace.x_pe == ablated.layers[2].x_pe);  // the stream the ablation left

        // Another model while a recompute of this one runs.
        allowed = false;
        ui.hold_model_jobs = true;
        m.sentence = "dog bites man";  // a new sentence: a pass of this model that waits
        ui.frame();
        REQUIRE(m.jobs->busy());
        const std::weak_ptr<const lm::Model> replaced = m.model;
        const std::string other = write_model("attnlab-model-view-test-other", true);
        ui::open_model_job(ui.window.shared, m, other);
        for (int i = 0; i < 5000 && m.model->folder() != other; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            ui.frame();  // the recompute is still held: the opening lands without waiting for it
        }
        REQUIRE(m.model->folder() == other);
        CHECK_FALSE(m.jobs->busy());  // dropped
        CHECK_FALSE(replaced.expired());  // the job still reads it
        const lm::Model other_opened = *lm::load_model(other).model;
        CHECK(m.computed_sentence == "dog bites man");  // the opening runs the box's sentence on the new model
        const ModelPass fresh = lm::forward_text(other_opened, m.computed_sentence);
        CHECK(m.pass.logits == fresh.logits);
        CHECK(m.pass.ablated.empty());
        allowed = true;
        for (int i = 0; i < 5000 && !replaced.expired(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            ui.frame();
        }
        CHECK(replaced.expired());  // let go once its job ended
        CHECK(m.pass.logits == fresh.logits);  // its result never landed on the new model
        ui.hold_model_jobs = false;
        ui.frame();
        m.jobs.reset();  // its runner refers to this section's locals
    }

    SECTION("a map opens its layer and head; an edit there recomputes the layers after it") {
        ui.click(ui.centre("model.map.2.2"));
        ui.frame(3);
        const edits::Session& session = ui.window.shared.session;
        REQUIRE(session.scenario.name == "attnlab-model-view-test layer 2");
        CHECK(ui.window.shared.view.shown_head == 1);
        CHECK(ui.window.model.state.layer == 1);
        CHECK(ui.widget("model.map.1.1") == nullptr);  // the model view folded so the pipeline shows
        REQUIRE(session.trace.ok);
        CHECK(session.trace.head[1].weights == expected.layers[1].head[1].weights);  // the pipeline's trace is the layer's
        CHECK(session.trace.x_pe == expected.layers[1].x_pe);                        // X: the stream entering layer 2
        CHECK_THAT(ui.text("model.pipeline_sentence"), Catch::Matchers::Contains("GPT-2 layer 2 of " + folder));

        // c_proj_w (in 3, out 6) of layer 2 edited in place.
        const float before = session.scenario.w_o(2, 5);
        ui.window.shared.session.push(edits::SetCell{edits::MatrixId::WO, 2, 5, before + 4.0f});
        ui.frame(3);
        hf::OpenedModel edited_weights = opened.opened();  // its own copy of the one matrix edited
        edited_weights.weights.layers[1].w_o.edit()(2, 5) = before + 4.0f;
        const lm::Model changed(std::move(edited_weights));
        const ModelPass full = lm::forward_text(changed, m.computed_sentence);
        REQUIRE(m.pass.ok);
        CHECK(m.pass.layers[0].block.output == expected.layers[0].block.output);  // before the edit: untouched
        for (size_t l = 1; l < 3; ++l) CHECK(m.pass.layers[l].block.output == full.layers[l].block.output);
        CHECK(m.pass.layers[2].head[0].weights == full.layers[2].head[0].weights);
        CHECK_FALSE(m.pass.layers[2].block.output == expected.layers[2].block.output);
        CHECK(m.pass.logits == full.logits);
        REQUIRE(m.pass.next_token_top5.size() == 5);
        CHECK(m.pass.next_token_top5[0].id == full.next_token_top5[0].id);
        CHECK(m.pass.next_token_top5[0].probability == full.next_token_top5[0].probability);

        // Undo: the model is the folder's again.
        ui.window.shared.session.request_undo();
        ui.frame(3);
        CHECK(m.pass.layers[2].block.output == expected.layers[2].block.output);

        // A new sentence: re-tokenised, and the open layer follows it.
        m.sentence = "The bank of the river";
        ui.frame(3);
        REQUIRE(m.computed_sentence == "The bank of the river");
        CHECK(m.pass.tokens.size() == 17);  // T he ␣ b a n k ␣ o f ␣the ␣ r i v e r
        CHECK(ui.window.shared.session.scenario.target.embeddings.rows() == 17);
        CHECK(ui.window.shared.session.scenario.name == "attnlab-model-view-test layer 2");

        // Another scenario opened: the model view stays, detached from the pipeline.
        ui.window.shared.session.push(edits::ReplaceScenario{start.scenario});
        ui.frame(3);
        CHECK(m.layer == -1);
        CHECK(m.pass.ok);
    }
}

TEST_CASE("Model jobs get the stream entering the layer, not the pass: their result installed is the whole pass recomputed, bit for bit",
          "[model-view][jobs]") {
    gpt2::Checkpoint c = testing::tiny_checkpoint();
    gpt2::Config config = testing::tiny_config();
    config.n_layer = 3;
    c = gpt2::random_checkpoint(config, 4, c.tokenizer);
    const auto model = std::make_shared<const lm::Model>(testing::gpt2_model(c, "model-jobs"));
    const ModelPass shown = lm::forward_text(*model, "the cat");  // the tiny model reads 16 positions
    REQUIRE(shown.ok);
    for (int layer : {0, 1, 2}) {
        INFO("layer " << layer + 1);
        Scenario edited = model->layer_scenario(shown.tokens, layer, lm::layer_input(shown.layers[static_cast<size_t>(layer)]), {});
        edited.w_q.edit()(0, 1) += 0.5f;
        const ModelPass job = compute::pass_for_job(shown, layer);
        for (size_t k = 0; k < static_cast<size_t>(layer); ++k) CHECK(job.layers[k].head.empty());  // nothing of them copied
        compute::ModelResult r = compute::run_model_recompute(compute::ModelRecompute{model, job, layer, edited, std::nullopt, std::nullopt});
        REQUIRE(r.ok);
        ModelPass installed = shown;
        compute::install_result(installed, std::move(r.pass), layer);
        ModelPass whole = shown;
        REQUIRE(lm::recompute_from(*model, layer, whole, &edited));
        REQUIRE(installed.layers.size() == whole.layers.size());
        for (size_t k = 0; k < whole.layers.size(); ++k) {
            INFO("trace of layer " << k + 1);
            CHECK(installed.layers[k].head[0].weights == whole.layers[k].head[0].weights);
            CHECK(stack::layer_output(installed.layers[k]) == stack::layer_output(whole.layers[k]));
        }
        CHECK(installed.logits == whole.logits);
        CHECK(installed.next_token_top5.front().id == whole.next_token_top5.front().id);
        if (layer > 0) CHECK(installed.layers[0].x_pe == shown.layers[0].x_pe);  // the view's own, kept
    }
}

TEST_CASE("Model view: NaN in a row of wte no token uses marks the top 5 in red, saying where it arose", "[model-view][non-finite]") {
    const Preset& start = *find_preset(default_preset_name());
    UiDriver ui(start.scenario);
    ui.frame(3);
    open_through_menu(ui, write_model("attnlab-model-view-finite"));
    REQUIRE(ui.window.model.state.pass.ok);
    CHECK(ui.widget("model.top5_non_finite") == nullptr);

    // wte is also the LM head: its padding row 259, which no sentence uses, meets every logit.
    const std::string folder = write_model("attnlab-model-view-nan");
    gpt2::Checkpoint spoiled = testing::sharp_gpt2();
    spoiled.wte.edit()(259, 4) = std::nanf("");
    testing::write_sharp_gpt2(folder, false, &spoiled);
    open_through_menu(ui, folder);
    const ui::ModelViewState& m = ui.window.model.state;
    REQUIRE(m.pass.ok);
    CHECK(m.pass.non_finite.stage == "the logits");
    REQUIRE(ui.widget("model.top5_non_finite") != nullptr);
    CHECK_THAT(ui.text("model.top5_non_finite"), Catch::Matchers::Contains("first in the logits") &&
                                                     Catch::Matchers::Contains("from wte.weight[259, 4] = nan"));
    const std::string top5 = ui.text("model.top5");
    CHECK_THAT(top5, Catch::Matchers::Contains("=NaN/\xE2\x88\x9E"));
    CHECK_THAT(top5, !Catch::Matchers::Contains("nan"));
}

TEST_CASE("Model view: a right-click ablates a head, the top 5 follows, Restore all heads brings it back", "[model-view][ablation]") {
    const Preset& start = *find_preset(default_preset_name());
    UiDriver ui(start.scenario);
    ui.frame(3);
    const std::string folder = write_model("attnlab-model-view-ablation", true);
    open_through_menu(ui, folder);
    ui::ModelViewState& m = ui.window.model.state;
    REQUIRE(m.pass.ok);
    const lm::Model opened = *lm::load_model(folder).model;  // the folder as the family table reads it
    const ModelPass intact = lm::forward_text(opened, m.computed_sentence);
    const std::string top5 = ui.text("model.top5");
    CHECK(ui.text("model.ablated") == "0 heads ablated");
    CHECK(ui.widget("model.restore_heads") == nullptr);
    const std::uint64_t runs = engine_runs();

    // Head 1 of layer 2, right-clicked: crossed out, the layers from 2 on recomputed.
    ui.click(ui.centre("model.map.2.1"), 1);
    ui.frame(2);
    CHECK(m.pass.ablated == stack::HeadSet{{1, 0}});
    CHECK(ui.text("model.map.2.1") == "ablated");
    CHECK(ui.text("model.map.2.2").empty());
    CHECK(ui.window.shared.session.scenario.name == start.scenario.name);  // a right-click opens nothing
    CHECK(engine_runs() - runs == 2);  // layers 2 and 3: layer 1 not recomputed
    CHECK(m.pass.layers[0].block.output == intact.layers[0].block.output);
    const ModelPass ablated = lm::forward_text(opened, m.computed_sentence, {{1, 0}});
    CHECK(m.pass.logits == ablated.logits);
    CHECK(m.pass.layers[2].head[0].weights == ablated.layers[2].head[0].weights);
    CHECK_FALSE(m.pass.logits == intact.logits);
    CHECK(ui.text("model.top5") != top5);
    CHECK(m.pass.next_token_top5[0].id == ablated.next_token_top5[0].id);
    CHECK(ui.text("model.top5").rfind(m.pass.next_token_top5[0].token + "=", 0) == 0);
    CHECK_THAT(ui.text("model.ablated"), Catch::Matchers::StartsWith("1 head ablated"));

    // A second head, in layer 1: "2 heads ablated".
    ui.click(ui.centre("model.map.1.2"), 1);
    ui.frame(2);
    CHECK(m.pass.ablated == stack::HeadSet{{0, 1}, {1, 0}});
    CHECK_THAT(ui.text("model.ablated"), Catch::Matchers::StartsWith("2 heads ablated"));
    CHECK(m.pass.logits == lm::forward_text(opened, m.computed_sentence, {{0, 1}, {1, 0}}).logits);

    SECTION("Restore all heads: the intact model's top 5 again") {
        ui.click(ui.centre("model.restore_heads"));
        ui.frame(2);
        CHECK(m.pass.ablated.empty());
        CHECK(m.pass.logits == intact.logits);
        CHECK(ui.text("model.top5") == top5);
        CHECK(ui.text("model.ablated") == "0 heads ablated");
        CHECK(ui.widget("model.restore_heads") == nullptr);
        CHECK(ui.text("model.map.2.1").empty());
    }
    SECTION("right-clicking each again restores it: its own undo") {
        ui.click(ui.centre("model.map.1.2"), 1);
        ui.click(ui.centre("model.map.2.1"), 1);
        ui.frame(2);
        CHECK(m.pass.ablated.empty());
        CHECK(m.pass.logits == intact.logits);
        CHECK(ui.text("model.top5") == top5);
    }
    SECTION("a new sentence keeps the ablated heads") {
        m.sentence = "The bank of the river";
        ui.frame(3);
        REQUIRE(m.computed_sentence == "The bank of the river");
        CHECK(m.pass.logits == lm::forward_text(opened, m.computed_sentence, {{0, 1}, {1, 0}}).logits);
    }
    SECTION("with layer 2 open in the pipeline, the opened layer stays the model's") {
        ui.click(ui.centre("model.restore_heads"));
        ui.frame(2);
        ui.click(ui.centre("model.map.2.2"));
        ui.frame(3);
        REQUIRE(ui.window.shared.session.scenario.name == "attnlab-model-view-ablation layer 2");
        ui::show_pane(ui.window.shared.view, ui::Pane::Model);  // back to the model view's tab
        ui.frame(2);
        const edits::Session& session = ui.window.shared.session;
        const std::uint64_t revision = session.revision;

        // After the opened layer: the pipeline's scenario is untouched.
        ui.click(ui.centre("model.map.3.1"), 1);
        ui.frame(3);
        CHECK(session.revision == revision);
        CHECK(m.layer == 1);
        CHECK(m.pass.logits == lm::forward_text(opened, m.computed_sentence, {{2, 0}}).logits);

        // Before it: its input changed, the layer is shown again from the new stream.
        ui.click(ui.centre("model.map.1.1"), 1);
        ui.frame(3);
        const ModelPass before = lm::forward_text(opened, m.computed_sentence, {{0, 0}, {2, 0}});
        CHECK(m.layer == 1);
        REQUIRE(session.scenario.name == "attnlab-model-view-ablation layer 2");
        CHECK(session.scenario.target.embeddings == before.layers[1].x_pe);
        REQUIRE(session.trace.ok);
        CHECK(session.trace.output == before.layers[1].output);
        CHECK(m.pass.logits == before.logits);

        // In it: its rows of W_O are zero in the pipeline, and the pipeline says so.
        ui.click(ui.centre("model.map.2.2"), 1);
        ui.frame(3);
        const ModelPass in = lm::forward_text(opened, m.computed_sentence, {{0, 0}, {1, 1}, {2, 0}});
        CHECK(session.scenario.w_o->middleRows(4, 4).isZero(0.0f));
        CHECK(session.scenario.w_o->middleRows(0, 4) == opened.opened().weights.layers[1].w_o->middleRows(0, 4));
        REQUIRE(session.trace.ok);
        CHECK(session.trace.output == in.layers[1].output);
        CHECK(m.pass.logits == in.logits);
        ui.click(ui.centre("pane.pipeline"));  // the layer's note stands above the pipeline
        ui.frame(2);
        CHECK_THAT(ui.text("model.pipeline_ablated"), Catch::Matchers::Contains("Ablated in this layer: head 2"));
        // An edit there still recomputes the layers after it, the ablated head kept at zero.
        ui.window.shared.session.push(edits::SetCell{edits::MatrixId::WO, 5, 2, 7.0f});
        ui.frame(3);
        CHECK(m.pass.logits == in.logits);  // row 6 is head 2's: the model keeps it zero
    }
}

namespace {

// max |B − A| of two heads' weights, by loops over the passes computed here.
double largest_difference(const ModelPass& a, stack::HeadId head_a, const ModelPass& b, stack::HeadId head_b) {
    const Matrix& wa = a.layers[static_cast<size_t>(head_a.layer)].head[static_cast<size_t>(head_a.head)].weights;
    const Matrix& wb = b.layers[static_cast<size_t>(head_b.layer)].head[static_cast<size_t>(head_b.head)].weights;
    double largest = 0;
    for (Eigen::Index i = 0; i < wa.rows(); ++i)
        for (Eigen::Index j = 0; j < wa.cols(); ++j)
            largest = std::max(largest, std::abs(static_cast<double>(wb(i, j)) - static_cast<double>(wa(i, j))));
    return largest;
}

}  // namespace

TEST_CASE("Model view Compare: two sentences, a different token count said in words, two heads", "[model-view][compare]") {
    CHECK(ui::partner_sentence("The bank of the river was muddy.") == "The money was deposited in the bank.");
    CHECK(ui::partner_sentence("The money was deposited in the bank.") == "The bank of the river was muddy.");
    CHECK(ui::partner_sentence("dog bites man") == "man bites dog");
    CHECK(ui::partner_sentence("The animal did not cross the road because it was tired") ==
          "The animal did not cross the road because it was wide");
    CHECK(ui::partner_sentence("a sentence of my own") == "a sentence of my own");

    const Preset& start = *find_preset(default_preset_name());
    UiDriver ui(start.scenario);
    ui.frame(3);
    const std::string folder = write_model("attnlab-model-view-compare");
    open_through_menu(ui, folder);
    ui::ModelViewState& m = ui.window.model.state;
    REQUIRE(m.pass.ok);
    const lm::Model opened = *lm::load_model(folder).model;  // the folder as the family table reads it
    m.sentence = "The bank of the river was muddy.";
    ui.frame(2);
    REQUIRE(m.computed_sentence == "The bank of the river was muddy.");
    CHECK(ui.widget("model.compare.mode.sentences") == nullptr);  // the grid's tab is the first shown
    ui.click(ui.centre("model.tab.compare"));
    ui.frame(3);
    REQUIRE(ui.widget("model.compare.mode.sentences") != nullptr);
    CHECK(ui.widget("model.map.1.1") == nullptr);

    // Two sentences, B the other "bank" sentence: 28 tokens against 32, no difference.
    CHECK(ui.text("model.compare.mode.sentences") == "on");
    CHECK(ui.text("model.compare.sentence_b") == "The money was deposited in the bank.");
    std::vector<std::string> unencoded;
    const size_t n_a = opened.encode(m.computed_sentence, unencoded).size();
    const size_t n_b = opened.encode("The money was deposited in the bank.", unencoded).size();
    REQUIRE(n_a != n_b);
    CHECK(ui.text("model.compare.message") ==
          "A has " + std::to_string(n_a) + " tokens, B has " + std::to_string(n_b) + ": B \xE2\x88\x92 A needs the same tokens");
    CHECK(ui.text("model.compare.max") == "none");
    CHECK(ui.heatmap("model.compare.a") != nullptr);
    REQUIRE(ui.heatmap("model.compare.b") != nullptr);
    CHECK(ui.heatmap("model.compare.b")->rows == static_cast<int>(n_b));
    CHECK(ui.heatmap("model.compare.diff") == nullptr);

    // B typed: as many tokens as A, the difference drawn and its largest value the engine's.
    ui.click(ui.centre("model.compare.sentence_b"));
    ui.key(GLFW_KEY_A, true);
    ui.type("The bank of the river was sandy.");
    ui.key(GLFW_KEY_ENTER);
    ui.click(ImVec2(5, 995));  // leave the box
    ui.frame(3);
    REQUIRE(m.compare.computed_b == "The bank of the river was sandy.");
    const ModelPass a = lm::forward_text(opened, m.computed_sentence);
    const ModelPass b = lm::forward_text(opened, "The bank of the river was sandy.");
    REQUIRE(a.tokens.size() == b.tokens.size());
    const double expected = largest_difference(a, {0, 0}, b, {0, 0});
    CHECK(expected > 1e-3);
    CHECK(std::stod(ui.text("model.compare.max")) == Approx(expected).margin(1e-6));
    CHECK(ui.widget("model.compare.message") == nullptr);
    REQUIRE(ui.heatmap("model.compare.diff") != nullptr);
    // Hovering a cell of B − A: A, B and the difference there.
    const int row = static_cast<int>(a.tokens.size()) - 1, col = 2;
    ui.move(ui.cell_centre("model.compare.diff", row, col));
    ui.frame();
    const float wa = a.layers[0].head[0].weights(row, col), wb = b.layers[0].head[0].weights(row, col);
    CHECK_THAT(ui.text("model.compare.hovered"), Catch::Matchers::Contains("A = " + format_value(wa, 4)) &&
                                                     Catch::Matchers::Contains("B \xE2\x88\x92 A = " + format_value(wb - wa, 4)));
    ui.move(ImVec2(-1, -1));

    // Layer 3's head 2 instead: the same sentences.
    m.compare.head_a = {2, 1};
    ui.frame(2);
    CHECK(std::stod(ui.text("model.compare.max")) == Approx(largest_difference(a, {2, 1}, b, {2, 1})).margin(1e-6));

    SECTION("B is run off the window's thread: the frame that asks leaves the B on screen as it was") {
        ui.hold_model_jobs = true;
        m.compare.b_follows_a = false;
        m.compare.sentence_b = "The bank of the river was wide.";
        ui.frame();
        CHECK(m.compare.running_b.running());
        CHECK(m.compare.computed_b == "The bank of the river was sandy.");
        ui.hold_model_jobs = false;
        ui.frame(2);
        CHECK_FALSE(m.compare.running_b.running());
        CHECK(m.compare.computed_b == "The bank of the river was wide.");
        CHECK(m.compare.pass_b.logits == lm::forward_text(opened, "The bank of the river was wide.").logits);
    }

    SECTION("two heads on the sentence") {
        ui.click(ui.centre("model.compare.mode.heads"));
        ui.frame(2);
        CHECK(ui.text("model.compare.mode.heads") == "on");
        m.compare.head_a = {0, 0};
        m.compare.head_b = {2, 1};
        ui.frame(2);
        CHECK(std::stod(ui.text("model.compare.max")) == Approx(largest_difference(a, {0, 0}, a, {2, 1})).margin(1e-6));
        CHECK(ui.heatmap("model.compare.diff") != nullptr);
        // A head against itself: B − A is zero.
        m.compare.head_b = {0, 0};
        ui.frame(2);
        CHECK(std::stod(ui.text("model.compare.max")) == 0.0);
    }
    SECTION("an ablated head reaches both sentences: A and B are the same model") {
        m.ablation_toggles.push_back({0, 1});
        ui.frame(3);
        REQUIRE(m.pass.ablated == stack::HeadSet{{0, 1}});
        CHECK(m.compare.pass_b.ablated == m.pass.ablated);
        const ModelPass a2 = lm::forward_text(opened, m.computed_sentence, {{0, 1}});
        const ModelPass b2 = lm::forward_text(opened, "The bank of the river was sandy.", {{0, 1}});
        CHECK(std::stod(ui.text("model.compare.max")) == Approx(largest_difference(a2, {2, 1}, b2, {2, 1})).margin(1e-6));
    }
}

TEST_CASE("Model view: the folder above one checkpoint opens the checkpoint inside it, and says so", "[model-view]") {
    const std::string parent = (std::filesystem::temp_directory_path() / "attnlab-model-parent").string();
    std::filesystem::remove_all(parent);
    attn::testing::write_tiny_checkpoint(parent + "/gpt2-tiny");
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.model.state.sentence = "the cat";  // the tiny model reads 16 positions
    REQUIRE(ui.open_model(parent));
    CHECK(ui.window.model.state.model->folder() == parent + "/gpt2-tiny");
    bool said = false;
    for (const ui::Notice& n : ui.window.shared.notices) {
        INFO(n.text);
        CHECK_FALSE(n.error);
        said = said || n.text.find(parent + " holds no checkpoint itself: opening the one inside it") != std::string::npos;
    }
    CHECK(said);
    std::filesystem::remove_all(parent);
}

TEST_CASE("Model view: a tab beside the pipeline that a click on a map cannot lose, kept by the session", "[model-view][layout]") {
    const std::string folder = write_model("attnlab-model-tabs");
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    CHECK(ui.widget("pane.pipeline") == nullptr);  // one view: no tabs
    open_through_menu(ui, folder);
    ui.frame(2);
    REQUIRE(ui.window.model.state.model);
    CHECK(ui.window.shared.view.pane == ui::Pane::Model);  // a model just opened is in front
    REQUIRE(ui.widget("model.map.2.1") != nullptr);
    // A map opened: its layer in the pipeline, the model view a tab away, not folded off screen.
    ui.click(ui.centre("model.map.2.1"));
    ui.frame(3);
    CHECK(ui.window.shared.view.pane == ui::Pane::Pipeline);
    CHECK(ui.widget("model.map.2.1") == nullptr);
    ui.click(ui.centre("pane.model"));
    ui.frame(2);
    CHECK(ui.window.shared.view.pane == ui::Pane::Model);
    const ImVec2 display = ImGui::GetIO().DisplaySize;
    int drawn = 0;
    for (const ui::WidgetLayout& w : ui.window.shared.widgets) {
        if (w.id.rfind("model.", 0) != 0 || w.id == "model.pipeline_sentence") continue;
        INFO(w.id);
        CHECK(w.x >= 0.0f);
        CHECK(w.y >= 0.0f);
        CHECK(w.x + w.w <= display.x + 0.5f);
        ++drawn;
    }
    CHECK(drawn >= 7);  // the sentence, the top 5, 6 maps
    // The Train panel opened: a third tab in front, the model view's kept.
    ui.window.train.state.open = true;
    ui.frame(2);
    CHECK(ui.window.shared.view.pane == ui::Pane::Train);
    CHECK(ui.widget("pane.model") != nullptr);
    CHECK(ui.widget("train.start") != nullptr);
    // The session keeps the tab shown; an unknown tab is refused by name.
    ui.click(ui.centre("pane.model"));
    ui.frame(2);
    CHECK(ui.window.view_choices().pane == "model");
    nlohmann::json j = session_file::session_to_json(ui.window.shared.session.scenario, ui.window.view_choices());
    j["view"]["pane"] = "sidebar";
    const session_file::SessionLoad bad = session_file::session_from_json(j, "s.json");
    CHECK_FALSE(bad.scenario);
    REQUIRE_FALSE(bad.errors.empty());
    CHECK(bad.errors[0] == "s.json: key 'view.pane': expected \"pipeline\", \"model\" or \"train\"");
    j["view"]["pane"] = "model";
    j["view"]["zoom"] = 2;
    CHECK(session_file::session_from_json(j, "s.json").errors == std::vector<std::string>{"s.json: key 'view.zoom': unknown key"});
    std::filesystem::remove_all(folder);
}

TEST_CASE("Model view: a map opened shows its head's weights, and another map keeps that step in view", "[model-view][layout]") {
    const std::string folder = write_model("attnlab-model-jump");
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    open_through_menu(ui, folder);
    ui.frame(2);
    REQUIRE(ui.widget("model.map.2.1") != nullptr);
    ui.click(ui.centre("model.map.2.1"));
    ui.frame(4);
    const ui::WidgetLayout* view = ui.widget("pipeline.view");
    REQUIRE(view != nullptr);
    const ui::HeatmapLayout* weights = ui.heatmap("head0.weights");
    REQUIRE(weights != nullptr);
    const ui::HeatmapLayout* x = ui.heatmap("x");
    REQUIRE(x != nullptr);
    INFO("the view " << view->y << " to " << view->y + view->h << "; X's grid at " << x->y << ", the weights' at " << weights->y);
    // The layer's whole block does not fit: the view is scrolled down to the weights.
    CHECK(x->y < view->y);
    CHECK(weights->y > view->y);
    CHECK(weights->y + static_cast<float>(weights->rows) * weights->cell_h <= view->y + view->h);
    CHECK(ui.text("pipeline.step.softmax") == "[softmax]");
    // Nothing of the cards scrolled away draws outside the pipeline's windows (a turned column
    // label kept the clip rectangle of its own unturned box and drew over the menu bar).
    for (ImGuiWindow* window : ImGui::GetCurrentContext()->Windows) {
        if (!window->WasActive || window->DrawList == nullptr || std::string(window->Name).find("pipeline") == std::string::npos) continue;
        const ImRect bounds = window->OuterRectClipped;
        for (const ImDrawCmd& cmd : window->DrawList->CmdBuffer) {
            if (cmd.ElemCount == 0 || cmd.ClipRect.z <= cmd.ClipRect.x || cmd.ClipRect.w <= cmd.ClipRect.y) continue;  // draws nothing
            INFO(window->Name << ": a draw command clipped to (" << cmd.ClipRect.x << ", " << cmd.ClipRect.y << ")–(" << cmd.ClipRect.z
                              << ", " << cmd.ClipRect.w << "), the window (" << bounds.Min.x << ", " << bounds.Min.y << ")–("
                              << bounds.Max.x << ", " << bounds.Max.y << ")");
            CHECK(cmd.ClipRect.y >= bounds.Min.y - 1.0f);
            CHECK(cmd.ClipRect.w <= bounds.Max.y + 1.0f);
        }
    }
    const float placed = weights->y;
    // Another map, of another layer and head: the same step where it was.
    ui.click(ui.centre("pane.model"));
    ui.frame(2);
    ui.click(ui.centre("model.map.3.2"));
    ui.frame(4);
    REQUIRE(ui.heatmap("head1.weights") != nullptr);
    CHECK(ui.heatmap("head1.weights")->y == Approx(placed).margin(1.0));
    CHECK(ui.text("pipeline.step.softmax") == "[softmax]");
}

TEST_CASE("Model view: in a small window the articles' sentences and Compare's explanations wrap, none cut at the edge",
          "[model-view][layout]") {
    const std::string folder = write_model("attnlab-model-narrow");
    UiDriver ui(find_preset(default_preset_name())->scenario, ImVec2(1024, 768));
    ui.frame(2);
    open_through_menu(ui, folder);
    ui.frame(2);
    ui.click(ui.centre("model.map.2.1"));  // a layer open: Compare says what its A is
    ui.frame(2);
    ui.click(ui.centre("pane.model"));
    ui.frame(2);
    ui.click(ui.centre("model.tab.compare"));
    ui.frame(3);
    int articles = 0, explained = 0;
    for (const ui::WidgetLayout& w : ui.window.shared.widgets) {
        if (w.id != "model.article_sentence" && w.id != "model.compare.explained") continue;
        INFO(w.id << " \"" << w.text << "\" from x " << w.x << " to " << w.x + w.w);
        CHECK(w.x + w.w <= 1024.0f);
        (w.id == "model.article_sentence" ? articles : explained) += 1;
    }
    CHECK(articles >= 8);
    CHECK(explained == 1);
}

TEST_CASE("Model view: File → Open model… lists the models of the Hugging Face cache of every family that opens, and opens one by its name", "[model-view][hf-cache]") {
    namespace fs = std::filesystem;
    const fs::path cache = fs::temp_directory_path() / "attnlab-gui-hf-cache";
    fs::remove_all(cache);
    auto add = [&](const std::string& folder, const std::string& commit) {
        fs::create_directories(cache / folder / "refs");
        std::ofstream(cache / folder / "refs" / "main") << commit;
        fs::create_directories(cache / folder / "snapshots" / commit);
        return (cache / folder / "snapshots" / commit).string();
    };
    const std::string snapshot = add("models--org--tiny", "0123456789abcdef0123456789abcdef01234567");
    testing::write_tiny_checkpoint(snapshot);
    const std::string llama = add("models--meta--small-llama", "1123456789abcdef0123456789abcdef01234567");
    std::ofstream(llama + "/config.json") << R"({"model_type": "llama"})";
    const std::string falcon = add("models--org--falcon", "2123456789abcdef0123456789abcdef01234567");
    std::ofstream(falcon + "/config.json") << R"({"model_type": "falcon"})";
    // Qwen3.5 as published: a multimodal folder whose text model opens
    const std::string qwen = add("models--zoo--qwen3.5", "3123456789abcdef0123456789abcdef01234567");
    std::ofstream(qwen + "/config.json") << R"({"model_type": "qwen3_5", "text_config": {"model_type": "qwen3_5_text"}})";
    const char* old = std::getenv("HF_HUB_CACHE");
    const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
    ::setenv("HF_HUB_CACHE", cache.c_str(), 1);

    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.model.state.sentence = "the cat";  // the tiny model reads 16 positions
    ui.click(ui.centre("menu.file"));
    ui.click(ui.centre("menu.open_model"));
    ui.frame(2);
    // Every family that opens is listed, by name: the Llama (its folder holds no weights yet:
    // opening it would say so), the GPT-2 and the Qwen3.5 folder; a model_type not read would only be counted.
    REQUIRE(ui.widget("prompt.cached.3") != nullptr);
    CHECK(ui.text("prompt.cached.1") == "meta/small-llama");
    CHECK(ui.text("prompt.cached.2") == "org/tiny");
    CHECK(ui.text("prompt.cached.3") == "zoo/qwen3.5");
    CHECK(ui.widget("prompt.cached.4") == nullptr);
    CHECK(ui.text("prompt.cached.others") == "falcon");
    ui.click(ui.centre("prompt.cached.2"));
    CHECK(ui.window.files.state.prompt.path == "org/tiny");
    ui.click(ui.centre("prompt.ok"));  // the dialog stayed open: the click chose, OK opens
    ui.frame(3);
    if (saved) ::setenv("HF_HUB_CACHE", saved->c_str(), 1);
    else ::unsetenv("HF_HUB_CACHE");
    REQUIRE(ui.window.model.state.model != nullptr);
    CHECK(ui.window.model.state.model->folder() == snapshot);
    bool said = false;
    for (const ui::Notice& n : ui.window.shared.notices) said = said || n.text.find("org/tiny: the Hugging Face cache's snapshot") != std::string::npos;
    CHECK(said);
    fs::remove_all(cache);
}

TEST_CASE("Model view: File → Open model… downloads a model that is not in the cache, with its progress, then opens it", "[model-view][download]") {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / "attnlab-gui-download";
    fs::remove_all(root);
    const fs::path folder = root / "tiny";
    testing::write_tiny_checkpoint(folder.string());
    // The hub serves the tiny checkpoint's files as org/tiny (the weights as an LFS file).
    testing::HubServer hub;
    testing::HubRepo repo{"org/tiny", "2123456789abcdef0123456789abcdef01234567", {"main"}, {}};
    for (const fs::directory_entry& e : fs::directory_iterator(folder)) {
        std::ifstream in(e.path(), std::ios::binary);
        const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        testing::HubFile file;
        file.body = body;
        file.lfs = e.path().extension() == ".safetensors";
        repo.files[e.path().filename().string()] = file;
    }
    hub.add(repo);
    const fs::path cache = root / "cache";
    const testing::Environment endpoint("HF_ENDPOINT", hub.endpoint());  // for this test only
    const testing::Environment hub_cache("HF_HUB_CACHE", cache.string());

    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.model.state.sentence = "the cat";  // the tiny model reads 16 positions
    ui.click(ui.centre("menu.file"));
    ui.click(ui.centre("menu.open_model"));
    ui.frame(2);
    CHECK(ui.text("prompt.download") == "Download gpt2 from the Hugging Face hub");  // the name proposed is one the hub knows
    // OK stands above what comes and goes under the path: a folder typed (no Download button)
    // leaves it where it was.
    REQUIRE(ui.widget("prompt.ok") != nullptr);
    const float ok_y = ui.widget("prompt.ok")->y;
    ui.key(GLFW_KEY_A, true);  // the path field has the keys: its text selected, then typed over
    ui.type(folder.string());
    ui.frame(2);
    CHECK(ui.window.files.state.prompt.path == folder.string());
    CHECK(ui.widget("prompt.download") == nullptr);
    REQUIRE(ui.widget("prompt.ok") != nullptr);
    CHECK(ui.widget("prompt.ok")->y == ok_y);
    ui.key(GLFW_KEY_ESCAPE);
    ui::FilePrompt& prompt = ui.window.files.state.prompt;
    prompt.path = "org/tiny";
    prompt.action = ui::FileAction::OpenCheckpoint;
    prompt.open_requested = true;
    ui.frame(2);
    REQUIRE(ui.widget("prompt.download") != nullptr);
    CHECK(ui.text("prompt.download") == "Download org/tiny from the Hugging Face hub");
    CHECK(ui.window.model.state.model == nullptr);
    ui.hold_model_jobs = true;  // the frames while it downloads
    ui.click(ui.centre("prompt.download"));
    REQUIRE(ui.window.model.state.download != nullptr);
    CHECK(ui.window.busy());
    ui.frame();
    CHECK(ui.widget("prompt.download.cancel") != nullptr);  // progress and Cancel, where the user looks
    CHECK(ui.widget("prompt.download.progress") != nullptr);
    ui.hold_model_jobs = false;
    ui.frame(4);  // it lands, the popup opens it
    REQUIRE(ui.window.model.state.model != nullptr);
    CHECK(ui.window.model.state.download == nullptr);
    CHECK(ui.widget("prompt.ok") == nullptr);  // the popup closed
    CHECK(prompt.path == "org/tiny");
    bool said = false;
    for (const ui::Notice& n : ui.window.shared.notices) said = said || (!n.error && n.text.rfind("Downloaded org/tiny: ", 0) == 0);
    CHECK(said);
    // In the cache as Python tools lay it out: found by its name from now on.
    const hf::CacheLookup found = hf::find_in_cache(hf::RepoId{"org/tiny", "main"}, cache.string());
    REQUIRE_FALSE(found.folder.empty());
    CHECK(fs::exists(fs::path(found.folder) / "model.safetensors"));
    fs::remove_all(root);
}

TEST_CASE("Model view: a download that fails says why in the popup and in the status area, and the work stays", "[model-view][download]") {
    namespace fs = std::filesystem;
    const fs::path cache = fs::temp_directory_path() / "attnlab-gui-download-404";
    fs::remove_all(cache);
    testing::HubServer hub;  // serves nothing: every repository is a 404
    const testing::Environment endpoint("HF_ENDPOINT", hub.endpoint());  // for this test only
    const testing::Environment hub_cache("HF_HUB_CACHE", cache.string());

    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui::FilePrompt& prompt = ui.window.files.state.prompt;
    ui.click(ui.centre("menu.file"));
    ui.click(ui.centre("menu.open_model"));
    ui.key(GLFW_KEY_ESCAPE);
    prompt.path = "org/absent";
    prompt.action = ui::FileAction::OpenCheckpoint;
    prompt.open_requested = true;
    ui.frame(2);
    REQUIRE(ui.widget("prompt.download") != nullptr);
    ui.click(ui.centre("prompt.download"));
    ui.frame(3);
    CHECK(ui.window.model.state.download == nullptr);
    CHECK(ui.window.model.state.model == nullptr);
    CHECK(ui.widget("prompt.ok") != nullptr);  // the popup stays, saying why
    CHECK(ui.window.model.state.download_failed);
    CHECK_THAT(ui.window.model.state.download_said, Catch::Matchers::StartsWith("Cannot download org/absent: "));
    REQUIRE_FALSE(ui.window.shared.notices.empty());
    CHECK(ui.window.shared.notices.back().error);
    CHECK(ui.window.shared.session.trace.ok);  // the work on screen is untouched
    fs::remove_all(cache);
}

namespace {

// A family's tiny checkpoint with a real tokenizer.json beside it (tests/data/tokenizers), its
// embedding (and the decoder's bias, for BERT) as large as the tokenizer's vocabulary.
std::string write_family_model(const std::string& name, testing::families::FamilyCheckpoint c, const std::string& embedding,
                               int d_model, const std::string& tokenizer, int vocabulary, const std::string& vocabulary_bias = "") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::temp_directory_path() / name;
    fs::remove_all(folder);
    c.config["vocab_size"] = vocabulary;
    testing::families::TensorMaker make(c, 99);
    make(embedding, {vocabulary, d_model}, 1.0);
    if (!vocabulary_bias.empty()) make(vocabulary_bias, {vocabulary}, 0.3);
    testing::families::write_family_checkpoint(folder.string(), c);
    fs::copy_file(fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / tokenizer, folder / "tokenizer.json");
    return folder.string();
}

// `c` tied to an embedding of the byte-level tokenizer's 402 tokens (d_model 16), written as `name`:
// the head is that embedding, whatever the fixture's own head.
std::string write_tied_family_model(const std::string& name, testing::families::FamilyCheckpoint c) {
    c.config["tie_word_embeddings"] = true;
    c.tensors.erase("lm_head.weight");
    return write_family_model(name, std::move(c), "model.embed_tokens.weight", 16, "bytelevel-roberta-prefix-space.json", 402);
}

// The model view of `folder` opened on "the cat sat on the mat", its pass landed.
const ui::ModelViewState& opened_on_the_cat(UiDriver& ui, const std::string& folder) {
    ui.frame(2);
    ui.window.model.state.sentence = "the cat sat on the mat";
    REQUIRE(ui.open_model(folder));
    ui.frame(2);
    const ui::ModelViewState& m = ui.window.model.state;
    REQUIRE(m.model != nullptr);
    REQUIRE(m.pass.ok);
    return m;
}

}  // namespace

TEST_CASE("Model view: a SmolLM3 folder opens with its NoPE layer named in the grid and the model's line", "[model-view][families]") {
    const std::string folder = write_family_model("attnlab-gui-smollm3", testing::families::smollm3_checkpoint(), "model.embed_tokens.weight", 16,
                                                  "bytelevel-roberta-prefix-space.json", 402);
    UiDriver ui(find_preset(default_preset_name())->scenario);
    const ui::ModelViewState& m = opened_on_the_cat(ui, folder);
    CHECK(m.model->family() == "SmolLM3");
    CHECK(ui.text("model.nope_layers") == "4");
    CHECK_THAT(ui.text("model.shape"), Catch::Matchers::Contains("NoPE (no rotation) on layer 4"));
    CHECK(m.pass.layers[3].settings.positional == PositionalEncoding::None);
    CHECK(m.pass.layers[2].settings.positional == PositionalEncoding::Rotary);
}

TEST_CASE("Model view: a Qwen3-MoE folder shows each mixture layer's routing, and an expert ablated in the opened layer recomputes the layers after it",
          "[model-view][families]") {
    const std::string folder = write_tied_family_model("attnlab-gui-qwen3-moe", testing::families::qwen3_moe_checkpoint());
    UiDriver ui(find_preset(default_preset_name())->scenario);
    const ui::ModelViewState& m = opened_on_the_cat(ui, folder);
    CHECK(m.model->family() == "Qwen3-MoE");
    CHECK_THAT(ui.text("model.shape"), Catch::Matchers::Contains("a mixture of 8 experts in place of the MLP (3 per token, renormalised) "
                                                                 "on layers 1, 3, a gated MLP on the others"));
    // The Routing tab: layer 1's router probabilities beside what each token kept, and the load.
    REQUIRE(ui.widget("model.tab.routing") != nullptr);
    ui.click(ui.centre("model.tab.routing"));
    ui.frame(2);
    CHECK(ui.text("model.routing.layer") == "layer 1");
    CHECK_THAT(ui.text("model.routing.how"), Catch::Matchers::Contains("Only the 3 most likely run"));
    REQUIRE(ui.heatmap("model.routing.block.routing") != nullptr);
    REQUIRE(ui.heatmap("model.routing.block.router_probabilities") != nullptr);
    // A row a token, a column an expert: the columns widened into the tab's room, each cell's value written.
    for (const char* map : {"model.routing.block.routing", "model.routing.block.router_probabilities"}) {
        INFO(map);
        CHECK(ui.heatmap(map)->numbers);
        CHECK(ui.heatmap(map)->cell_w > ui.heatmap(map)->cell_h);
    }
    const Matrix routing = m.pass.layers[0].block.routing;
    REQUIRE(routing.cols() == 8);
    CHECK((routing.array() > 0.0f).count() == 3 * routing.rows());
    int busiest = 0, most = -1;
    for (int e = 0; e < 8; ++e)
        if (const int n = static_cast<int>((routing.col(e).array() > 0.0f).count()); n > most) most = n, busiest = e;
    CHECK_THAT(ui.text("model.routing.load"), Catch::Matchers::StartsWith("expert " + std::to_string(busiest + 1) + " took " +
                                                                           std::to_string(most) + " of " + std::to_string(routing.rows()) + " tokens"));
    CHECK(m.pass.layers[1].block.routing.size() == 0);  // layer 2 is dense
    // Layer 1 opened in the pipeline: the side bar's mixture controls ablate its busiest expert.
    ui.click(ui.centre("model.tab.grid"));
    ui.frame(2);
    ui.click(ui.centre("model.map.1.1"));
    ui.frame(2);
    CHECK(ui.window.shared.session.scenario.block.moe.experts == 8);
    CHECK(ui.text("controls.moe_top_k") == "3 of 8");
    const std::string button = "controls.moe_expert." + std::to_string(busiest + 1);
    REQUIRE(ui.widget(button) != nullptr);
    const Matrix logits = m.pass.logits;
    ui.click(ui.centre(button));
    ui.frame(3);
    CHECK(ui.window.shared.session.scenario.block.moe.ablated == std::vector<int>{busiest});
    CHECK(ui.text(button) == "ablated");
    CHECK(ui.text("controls.moe_ablated") == std::to_string(busiest + 1));
    CHECK(m.pass.layers[0].block.routing == routing);  // the routing is kept, the expert's output dropped
    CHECK(m.pass.layers[0].settings.block.moe.ablated == std::vector<int>{busiest});
    CHECK_FALSE(m.pass.logits.isApprox(logits, 1e-4f));
    // Undo restores it, and the model's prediction with it.
    REQUIRE(edits::undo(ui.window.shared.session));
    ui.frame(3);
    CHECK(ui.window.shared.session.scenario.block.moe.ablated.empty());
    CHECK(m.pass.logits.isApprox(logits, 1e-6f));
}

TEST_CASE("Model view: a click on an expert's column in the Routing tab ablates it in the model, as a right-click ablates a head, and a "
          "second click restores it",
          "[model-view][families]") {
    const std::string folder = write_tied_family_model("attnlab-gui-qwen3-moe-ablate", testing::families::qwen3_moe_checkpoint());
    int busiest = 0;
    ModelPass fresh;       // the model run with that expert ablated from the start
    nlohmann::json saved;  // the session with it
    {  // one window at a time: each holds the UI's context
        UiDriver ui(find_preset(default_preset_name())->scenario);
        const ui::ModelViewState& m = opened_on_the_cat(ui, folder);
        ui.click(ui.centre("model.tab.routing"));
        ui.frame(2);
        CHECK_THAT(ui.text("model.routing.ablated"), Catch::Matchers::StartsWith("Click an expert's column to ablate it"));
        // Layer 3 (the second mixture layer): its busiest expert, clicked in the routing card.
        ui.window.model.state.routing.layer = 2;
        ui.frame(2);
        REQUIRE(ui.text("model.routing.layer") == "layer 3");
        const Matrix routing = m.pass.layers[2].block.routing;
        const Matrix layer_1_output = m.pass.layers[0].block.output;
        const Matrix logits = m.pass.logits;
        int most = -1;
        for (int e = 0; e < routing.cols(); ++e)
            if (const int n = static_cast<int>((routing.col(e).array() > 0.0f).count()); n > most) most = n, busiest = e;
        int row = 0;
        while (routing(row, busiest) == 0.0f) ++row;
        ui.click(ui.cell_centre("model.routing.block.routing", row, busiest));
        ui.frame(4);
        REQUIRE(m.pass.ok);
        CHECK(m.pass.ablated.experts == stack::ExpertSet{{2, busiest}});
        CHECK(m.pass.ablated.heads.empty());
        CHECK(m.pass.layers[2].settings.block.moe.ablated == std::vector<int>{busiest});
        CHECK(m.pass.layers[2].block.routing == routing);              // the router's choice is the model's own
        CHECK(m.pass.layers[0].block.output == layer_1_output);        // the layers before it are kept
        CHECK_FALSE(m.pass.logits.isApprox(logits, 1e-4f));
        // The same as the model run with that expert ablated from the start.
        fresh = lm::forward_text(*m.model, m.computed_sentence, stack::Ablation{{}, {{2, busiest}}});
        REQUIRE(fresh.ok);
        CHECK(m.pass.logits.isApprox(fresh.logits, 1e-6f));
        const std::string name = std::to_string(busiest + 1);
        CHECK(ui.text("model.routing.ablated").rfind("Expert " + name + " ablated in this layer", 0) == 0);
        CHECK_THAT(ui.text("model.routing.load"), Catch::Matchers::Contains("expert " + name + " (ablated)"));
        CHECK_THAT(ui.text("model.ablated_experts"), Catch::Matchers::StartsWith("expert " + name + " of layer 3 ablated"));
        // Kept by the session, [layer, expert] from 1.
        const std::optional<session_file::ModelChoice> choice = ui::model_choice(m);
        REQUIRE(choice);
        CHECK(choice->ablated_experts == std::vector<std::pair<int, int>>{{2, busiest}});
        session_file::Attachments attached;
        attached.model = choice;
        saved = session_file::session_to_json(ui.window.shared.session.scenario, session_file::ViewChoices{}, attached);
        CHECK(saved["model"]["ablated_experts"] == nlohmann::json::array({nlohmann::json::array({3, busiest + 1})}));
        // Clicked again: restored, the intact model's numbers.
        ui.click(ui.cell_centre("model.routing.block.routing", row, busiest));
        ui.frame(4);
        CHECK(m.pass.ablated.empty());
        CHECK(m.pass.layers[2].settings.block.moe.ablated.empty());
        CHECK(m.pass.logits.isApprox(logits, 1e-6f));
        CHECK(ui.widget("model.ablated_experts") == nullptr);
        // A layer's experts restored at once by its button, and every one by the prediction's.
        ui.window.model.state.expert_toggles = {{2, 0}, {2, 1}, {0, 3}};
        ui.frame(4);
        CHECK(m.pass.ablated.experts.size() == 3);
        REQUIRE(ui.widget("model.routing.restore") != nullptr);
        ui.click(ui.centre("model.routing.restore"));
        ui.frame(4);
        CHECK(m.pass.ablated.experts == stack::ExpertSet{{0, 3}});
        REQUIRE(ui.widget("model.restore_experts") != nullptr);
        ui.click(ui.centre("model.restore_experts"));
        ui.frame(4);
        CHECK(m.pass.ablated.empty());
        CHECK(m.pass.logits.isApprox(logits, 1e-6f));
    }
    {  // reopened: the expert ablated again; those the model does not have are said and left out
        session_file::SessionLoad reload = session_file::session_from_json(saved, "s.json");
        REQUIRE(reload.attached.model);
        reload.attached.model->ablated_experts.push_back({1, 0});   // layer 2 is dense
        reload.attached.model->ablated_experts.push_back({2, 99});  // layer 3 has 8 experts
        UiDriver again(find_preset(default_preset_name())->scenario);
        again.window.start(cli::Options{}, reload);
        again.frame(4);
        const ui::ModelViewState& r = again.window.model.state;
        REQUIRE(r.model != nullptr);
        REQUIRE(r.pass.ok);
        CHECK(r.pass.ablated.experts == stack::ExpertSet{{2, busiest}});
        CHECK(r.pass.logits.isApprox(fresh.logits, 1e-6f));
        std::string notices;
        for (const ui::Notice& n : again.window.shared.notices) notices += n.text + "\n";
        CHECK_THAT(notices, Catch::Matchers::Contains("s.json: key 'model.ablated_experts': [2, 1] is not an expert of the model (layer 2's "
                                                      "feed-forward is not a mixture of experts): not ablated") &&
                                Catch::Matchers::Contains("s.json: key 'model.ablated_experts': [3, 100] is not an expert of the model (layer "
                                                          "3's experts are 1 to 8): not ablated"));
    }
}

TEST_CASE("Model view: a gpt-oss folder's Routing tab draws the router logits beside the routing, as its router never forms a softmax over all experts",
          "[model-view][families]") {
    const std::string folder = write_tied_family_model("attnlab-gui-gpt-oss", testing::families::gpt_oss_checkpoint());
    UiDriver ui(find_preset(default_preset_name())->scenario);
    const ui::ModelViewState& m = opened_on_the_cat(ui, folder);
    CHECK(m.model->family() == "gpt-oss");
    CHECK_THAT(ui.text("model.shape"), Catch::Matchers::Contains("a learned sink per head") &&
                                           Catch::Matchers::Contains("(2 per token, softmax over their logits only) on every layer") &&
                                           Catch::Matchers::Contains("YaRN \xC3\x97" "32.00"));
    REQUIRE(ui.widget("model.tab.routing") != nullptr);
    ui.click(ui.centre("model.tab.routing"));
    ui.frame(2);
    CHECK_THAT(ui.text("model.routing.how"), Catch::Matchers::Contains("softmax over those 2 scores only"));
    REQUIRE(ui.heatmap("model.routing.block.router_logits") != nullptr);
    CHECK(ui.heatmap("model.routing.block.router_probabilities") == nullptr);
    REQUIRE(ui.heatmap("model.routing.block.routing") != nullptr);
    const Matrix& routing = m.pass.layers[1].block.routing;
    REQUIRE(routing.cols() == 4);
    for (Eigen::Index i = 0; i < routing.rows(); ++i) CHECK(routing.row(i).sum() == Approx(1.0f).epsilon(1e-5));
    // the sinks: a row of a head's weights sums to less than 1
    CHECK(m.pass.layers[0].head[0].weights.row(3).sum() < 0.999f);
}

TEST_CASE("Model view: a Qwen2-MoE folder's Routing tab draws the shared expert's gate beside the routing, and its tooltips add what it adds",
          "[model-view][families]") {
    const std::string folder = write_tied_family_model("attnlab-gui-qwen2-moe", testing::families::qwen2_moe_checkpoint());
    UiDriver ui(find_preset(default_preset_name())->scenario);
    const ui::ModelViewState& m = opened_on_the_cat(ui, folder);
    CHECK(m.model->family() == "Qwen2-MoE");
    CHECK_THAT(ui.text("model.shape"), Catch::Matchers::Contains("(2 per token) on layers 1, 3") &&
                                           Catch::Matchers::Contains("a shared expert on every token scaled by its gate"));
    REQUIRE(ui.widget("model.tab.routing") != nullptr);
    ui.click(ui.centre("model.tab.routing"));
    ui.frame(2);
    CHECK_THAT(ui.text("model.routing.how"), Catch::Matchers::Contains("a shared expert (width 20) runs on every token"));
    REQUIRE(ui.heatmap("model.routing.block.router_probabilities") != nullptr);
    REQUIRE(ui.heatmap("model.routing.block.routing") != nullptr);
    REQUIRE(ui.heatmap("model.routing.block.shared_gate_values") != nullptr);
    const BlockTrace& b = m.pass.layers[0].block;
    REQUIRE(b.shared_gate_values.cols() == 1);
    CHECK(b.shared_gate_values.rows() == b.routing.rows());
    // the tooltips: the feed-forward output adds the shared expert to the routed sum; the gate and the expert write theirs out
    CHECK_THAT(attn::testing::joined(ui::explain_cell(m.pass.layers[0], "block.ffn_output", 1, 5)), Catch::Matchers::Contains("+ the shared expert: "));
    CHECK_THAT(attn::testing::joined(ui::explain_cell(m.pass.layers[0], "block.shared_gate_values", 1, 0)),
               Catch::Matchers::Contains("\xCF\x83(") && Catch::Matchers::Contains("how much of the shared expert token 2 takes"));
    CHECK_THAT(attn::testing::joined(ui::explain_cell(m.pass.layers[0], "block.shared_output", 1, 5)), Catch::Matchers::Contains("every token runs it"));
    // Layer 1 opened in the pipeline: the scenario carries the shared expert, read in place, and the side bar says it
    ui.click(ui.centre("model.tab.grid"));
    ui.frame(2);
    ui.click(ui.centre("model.map.1.1"));
    ui.frame(2);
    const MixtureOfExperts& opened = ui.window.shared.session.scenario.block.moe;
    CHECK(opened.shared_d_ff == 20);
    CHECK(opened.shared_gated);
    REQUIRE(opened.shared.w_2.stored() != nullptr);  // the file's own bytes, not a widened copy
    CHECK_THAT(ui.text("controls.moe_shared"), Catch::Matchers::Contains("a shared expert (width 20) on every token, scaled by its gate"));
    CHECK(ui.window.shared.session.trace.block.shared_output.isApprox(m.pass.layers[0].block.shared_output, 1e-5f));
}

TEST_CASE("Model view: a DeepSeek-V3 folder says what its latent cache keeps, draws the router's choice, and opens a latent layer in the pipeline",
          "[model-view][families]") {
    const std::string folder = write_tied_family_model("attnlab-gui-deepseek-v3", testing::families::deepseek_v3_checkpoint());
    UiDriver ui(find_preset(default_preset_name())->scenario);
    const ui::ModelViewState& m = opened_on_the_cat(ui, folder);
    CHECK(m.model->family() == "DeepSeek-V3");
    CHECK_THAT(ui.text("model.shape"), Catch::Matchers::Contains("multi-head latent attention") &&
                                           Catch::Matchers::Contains("(12 numbers a token to cache, against 44)") &&
                                           Catch::Matchers::Contains("the best 2 of 4 groups first"));
    // the Routing tab: σ scores, the choice, the routing
    REQUIRE(ui.widget("model.tab.routing") != nullptr);
    ui.click(ui.centre("model.tab.routing"));
    ui.frame(2);
    REQUIRE(ui.heatmap("model.routing.block.router_probabilities") != nullptr);
    REQUIRE(ui.heatmap("model.routing.block.router_choice") != nullptr);
    REQUIRE(ui.heatmap("model.routing.block.routing") != nullptr);
    CHECK_THAT(ui.text("model.routing.how"), Catch::Matchers::Contains("2 best of 4 groups"));
    // the Write tab's cache: every head's k and v kept, expanded from what a latent cache keeps
    REQUIRE(ui.widget("model.tab.write") != nullptr);
    ui.click(ui.centre("model.tab.write"));
    ui.frame(3);
    CHECK_THAT(ui.text("model.write.cache"), Catch::Matchers::Contains("a latent cache keeps 12 numbers a token") &&
                                                 Catch::Matchers::Contains("instead of 44"));
    // layer 1 opened in the pipeline: latent attention with the checkpoint's weights, read in place
    ui.click(ui.centre("model.tab.grid"));
    ui.frame(2);
    ui.click(ui.centre("model.map.1.1"));
    ui.frame(2);
    const Scenario& opened = ui.window.shared.session.scenario;
    CHECK(opened.latent.kv_rank == 8);
    REQUIRE(opened.latent.w_kv_b.stored() != nullptr);
    CHECK(ui.text("controls.latent_sizes") == "r_kv 8, d_nope 4 + d_rope 4, d_v 3, queries through r_q 12");
    CHECK(ui.window.shared.session.trace.head[0].weights.isApprox(m.pass.layers[0].head[0].weights, 1e-5f));
}

TEST_CASE("Model view: a Gemma 3 folder opens, its query heads grouped by their K/V head and its layers marked local or global", "[model-view][families]") {
    const std::string folder = write_family_model("attnlab-gui-gemma3", testing::families::gemma3_checkpoint(), "model.embed_tokens.weight", 16,
                                                  "bytelevel-roberta-prefix-space.json", 402);
    UiDriver ui(find_preset(default_preset_name())->scenario);
    const ui::ModelViewState& m = opened_on_the_cat(ui, folder);
    CHECK(m.model->family() == "Gemma 3");
    // The grid is the engine's pass, map by map: the same as the model run on its own.
    const lm::ModelLoad alone = lm::load_model(folder);
    REQUIRE(alone.model);
    const ModelPass reference = lm::forward_text(*alone.model, "the cat sat on the mat");
    REQUIRE(reference.ok);
    CHECK(m.pass.token_ids == reference.token_ids);
    for (size_t l = 0; l < 3; ++l)
        for (size_t h = 0; h < 2; ++h) CHECK(m.pass.layers[l].head[h].weights == reference.layers[l].head[h].weights);
    CHECK(m.pass.next_token_top5[0].id == reference.next_token_top5[0].id);
    // Two query heads on one K/V head (multi-query), layers 1 and 2 sliding (window 3), layer 3 global.
    CHECK(ui.text("model.kv_groups") == "1:1-2");
    CHECK(ui.text("model.layer_kinds") == "local,local,global");
    CHECK_THAT(ui.text("model.shape"), Catch::Matchers::Contains("multi-query") && Catch::Matchers::Contains("QK-norm") &&
                                           Catch::Matchers::Contains("2 local layers (window 3) and 1 global"));
    REQUIRE(ui.widget("model.map.3.2") != nullptr);
    CHECK(ui.widget("model.map.4.1") == nullptr);
    // A local layer's head opened: the pipeline computes its steps, the window and QK-norm among them.
    ui.click(ui.centre("model.map.1.2"));
    ui.frame(2);
    const Scenario& s = ui.window.shared.session.scenario;
    CHECK(s.mask == MaskKind::SlidingWindow);
    CHECK(s.window == 3);
    CHECK(s.qk_norm);
    CHECK(s.kv_heads == 1);
    CHECK(ui.window.shared.view.shown_head == 1);
    CHECK_THAT(ui.text("model.pipeline_sentence"), Catch::Matchers::StartsWith("Gemma 3 layer 1 of "));
    CHECK_THAT(ui.text("model.pipeline_input"), Catch::Matchers::Contains("\xE2\x88\x9A" "d_model") &&
                                                    Catch::Matchers::Contains("(1 + \xCE\xB3)"));
    const Trace& t = ui.window.shared.session.trace;
    REQUIRE(t.ok);
    CHECK(t.head[1].weights == reference.layers[0].head[1].weights);
    CHECK(t.head[1].weights(5, 1) == 0.0f);  // query 6 sees keys 4 to 6 only
    CHECK(t.head[1].weights(5, 3) > 0.0f);
    // An edit there recomputes the layers after it: the model's own recompute, as a job.
    ui.window.shared.session.push(edits::SetSoftcap{2.0f});
    ui.frame(2);
    ui.window.finish_work();
    ui.frame(2);
    ModelPass edited = reference;
    Scenario layer = alone.model->layer_scenario(reference.tokens, 0, lm::layer_input(reference.layers[0]), {});
    layer.softcap = 2.0f;
    REQUIRE(lm::recompute_from(*alone.model, 0, edited, &layer));
    CHECK(m.pass.layers[2].head[0].weights == edited.layers[2].head[0].weights);
    CHECK(m.pass.layers[2].head[0].weights != reference.layers[2].head[0].weights);
    std::filesystem::remove_all(folder);
}

TEST_CASE("Model view: opening another model with a layer in the pipeline shows that layer of the new model, never the old one's", "[model-view][families]") {
    const std::string gemma = write_family_model("attnlab-gui-switch-gemma3", testing::families::gemma3_checkpoint(), "model.embed_tokens.weight", 16,
                                                 "bytelevel-roberta-prefix-space.json", 402);
    const std::string llama = write_family_model("attnlab-gui-switch-llama", testing::families::llama_checkpoint(), "model.embed_tokens.weight", 24,
                                                 "bytelevel-roberta-prefix-space.json", 402);
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.model.state.sentence = "the cat sat on the mat";
    REQUIRE(ui.open_model(gemma));
    ui.frame(2);
    ui.click(ui.centre("model.map.3.2"));  // Gemma 3's global layer 3: QK-norm, one K/V head, d_model 16
    ui.frame(2);
    REQUIRE(ui.window.shared.session.scenario.qk_norm);
    // Llama has two layers: its last takes the place of Gemma's third, with its own weights and settings.
    REQUIRE(ui.open_model(llama));
    ui.frame(2);
    ui.window.finish_work();
    ui.frame(2);
    const Scenario& s = ui.window.shared.session.scenario;
    CHECK_THAT(s.name, Catch::Matchers::StartsWith("attnlab-gui-switch-llama layer 2"));
    CHECK_FALSE(s.qk_norm);
    CHECK(s.kv_heads == 2);
    CHECK(s.d_model == 24);
    CHECK(s.mask != MaskKind::SlidingWindow);
    CHECK_THAT(ui.text("model.bar"), Catch::Matchers::StartsWith("Model view: Llama on ") &&
                                         Catch::Matchers::Contains("layer 2, head "));
    ui.click(ui.centre("pane.pipeline"));
    ui.frame(2);
    CHECK_THAT(ui.text("model.pipeline_sentence"), Catch::Matchers::StartsWith("Llama layer 2 of "));
    const lm::ModelLoad alone = lm::load_model(llama);
    REQUIRE(alone.model);
    const ModelPass reference = lm::forward_text(*alone.model, "the cat sat on the mat");
    REQUIRE(reference.ok);
    const Trace& t = ui.window.shared.session.trace;
    REQUIRE(t.ok);
    CHECK(t.head[0].weights == reference.layers[1].head[0].weights);
    std::filesystem::remove_all(gemma);
    std::filesystem::remove_all(llama);
}

TEST_CASE("Model view: a BERT folder opens, every query seeing both sides, and each [MASK] gets its top 5", "[model-view][families]") {
    const std::string folder = write_family_model("attnlab-gui-bert", testing::families::bert_checkpoint(),
                                                  "bert.embeddings.word_embeddings.weight", 16, "wordpiece-bert-uncased.json", 253,
                                                  "cls.predictions.bias");
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.model.state.sentence = "the cat";
    const bool opened = ui.open_model(folder);
    std::string said;
    for (const ui::Notice& n : ui.window.shared.notices) said += n.text + "\n";
    INFO(said);
    REQUIRE(opened);
    ui.frame(2);
    const ui::ModelViewState& m = ui.window.model.state;
    REQUIRE(m.model != nullptr);
    CHECK(m.model->masked_lm());
    CHECK(ui.text("model.masked") == "none");  // no [MASK] yet: how to ask is said
    CHECK(ui.widget("model.top5") == nullptr);
    ui.window.model.state.sentence = "the [MASK] sat";
    ui.frame(2);
    ui.window.finish_work();
    ui.frame(2);
    REQUIRE(m.pass.ok);
    REQUIRE(m.pass.masked_predictions.size() == 1);
    const int position = m.pass.masked_predictions[0].position;
    CHECK(m.pass.tokens[static_cast<size_t>(position)] == "[MASK]");
    const std::string shown = ui.text("model.masked." + std::to_string(position + 1));
    CHECK_THAT(shown, Catch::Matchers::StartsWith(m.pass.masked_predictions[0].top[0].token + "="));
    // Bidirectional: the first token attends to the last.
    const Matrix& w = m.pass.layers[0].head[0].weights;
    CHECK(w(0, w.cols() - 1) > 0.0f);
    CHECK(m.pass.layers[0].settings.mask == MaskKind::None);
    std::filesystem::remove_all(folder);
}

TEST_CASE("Model view Compare, two models: one head of a Gemma 3 and one of a Llama on the same sentence, and whether the tokenizations agree", "[model-view][compare][families]") {
    const std::string gemma = write_family_model("attnlab-gui-compare-gemma3", testing::families::gemma3_checkpoint(), "model.embed_tokens.weight",
                                                 16, "bytelevel-roberta-prefix-space.json", 402);
    const std::string llama = write_family_model("attnlab-gui-compare-llama", testing::families::llama_checkpoint(), "model.embed_tokens.weight",
                                                 24, "bytelevel-roberta-prefix-space.json", 402);
    const std::string bert = write_family_model("attnlab-gui-compare-bert", testing::families::bert_checkpoint(),
                                                "bert.embeddings.word_embeddings.weight", 16, "wordpiece-bert-uncased.json", 253,
                                                "cls.predictions.bias");
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.model.state.sentence = "the cat sat";
    REQUIRE(ui.open_model(gemma));
    ui::ModelViewState& m = ui.window.model.state;
    m.compare.select = true;
    ui.frame(2);
    m.compare.head_b = stack::HeadId{0, 1};  // as "two heads" leaves it
    ui.click(ui.centre("model.compare.mode.models"));
    ui.frame(1);
    CHECK(m.compare.head_b.layer == m.compare.head_a.layer);  // model B's same head, to begin with
    CHECK(m.compare.head_b.head == m.compare.head_a.head);
    CHECK(ui.text("model.compare.message") == "Open model B: a checkpoint folder, or a model of the Hugging Face cache by its name.");
    // Model B typed and opened with the button; its opening and its pass are jobs.
    auto open_b = [&](const std::string& folder) {
        m.compare.folder_b = folder;
        ui.click(ui.centre("model.compare.open_b"));
        ui.window.finish_work();
        ui.frame(3);
        ui.window.finish_work();
        ui.frame(2);
    };
    open_b(llama);
    REQUIRE(m.compare.model_b != nullptr);
    CHECK(m.compare.model_b->family() == "Llama");
    CHECK_THAT(ui.text("model.compare.model_b"), Catch::Matchers::StartsWith("Model B: Llama, "));
    CHECK_THAT(ui.text("model.compare.tokenizations"), Catch::Matchers::StartsWith("The tokenizations agree: "));
    // A is the Gemma's head, B the Llama's (query head 5, on its K/V head 3), each as its model computes it alone.
    m.compare.head_a = {2, 1};
    m.compare.head_b = {1, 4};
    ui.frame(2);
    const lm::ModelLoad b = lm::load_model(llama);
    REQUIRE(b.model);
    const ModelPass b_alone = lm::forward_text(*b.model, "the cat sat");
    REQUIRE(m.compare.result.ok);
    REQUIRE(m.compare.result.has_difference);
    CHECK(*m.compare.result.a == m.pass.layers[2].head[1].weights);
    CHECK(*m.compare.result.b == b_alone.layers[1].head[4].weights);
    CHECK(m.compare.result.difference == b_alone.layers[1].head[4].weights - m.pass.layers[2].head[1].weights);
    // A BERT as model B: its WordPiece cuts the sentence otherwise ([CLS] … [SEP]), and that is said.
    open_b(bert);
    REQUIRE(m.compare.model_b != nullptr);
    CHECK(m.compare.model_b->family() == "BERT");
    CHECK_THAT(ui.text("model.compare.tokenizations"), Catch::Matchers::StartsWith("The tokenizations differ: "));
    // A folder that does not open: said, model B kept.
    open_b(bert + "-missing");
    CHECK_THAT(ui.text("model.compare.model_b"), Catch::Matchers::StartsWith("Model B cannot open: "));
    CHECK(m.compare.model_b->family() == "BERT");
    for (const std::string& folder : {gemma, llama, bert}) std::filesystem::remove_all(folder);
}

TEST_CASE("Model view: a Gemma 3 in the Hugging Face cache opens by its name, as a GPT-2 does", "[model-view][hf-cache][families]") {
    namespace fs = std::filesystem;
    const fs::path cache = fs::temp_directory_path() / "attnlab-gui-hf-cache-gemma3";
    fs::remove_all(cache);
    const std::string commit = "3123456789abcdef0123456789abcdef01234567";
    fs::create_directories(cache / "models--google--tiny-gemma3" / "refs");
    std::ofstream(cache / "models--google--tiny-gemma3" / "refs" / "main") << commit;
    const fs::path snapshot = cache / "models--google--tiny-gemma3" / "snapshots" / commit;
    const std::string written = write_family_model("attnlab-gui-gemma3-for-cache", testing::families::gemma3_checkpoint(),
                                                   "model.embed_tokens.weight", 16, "bytelevel-roberta-prefix-space.json", 402);
    fs::create_directories(snapshot.parent_path());
    fs::rename(written, snapshot);
    const testing::Environment hub_cache("HF_HUB_CACHE", cache.string());
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.model.state.sentence = "the cat sat";
    REQUIRE(ui.open_model("google/tiny-gemma3"));
    ui.frame(2);
    const ui::ModelViewState& m = ui.window.model.state;
    CHECK(m.model->family() == "Gemma 3");
    CHECK(m.model->folder() == snapshot.string());
    CHECK(m.pass.ok);
    bool said = false;
    for (const ui::Notice& n : ui.window.shared.notices)
        said = said || n.text.find("google/tiny-gemma3: the Hugging Face cache's snapshot") != std::string::npos;
    CHECK(said);
    fs::remove_all(cache);
}

TEST_CASE("Model view: maps whose cells would be under 2 px draw each block's largest weight, and say so", "[model-view][families]") {
    const std::string folder = write_family_model("attnlab-gui-gemma3-long", testing::families::gemma3_checkpoint(), "model.embed_tokens.weight", 16,
                                                  "bytelevel-roberta-prefix-space.json", 402);
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.model.state.sentence = "the cat sat";
    REQUIRE(ui.open_model(folder));
    ui.frame(2);
    CHECK(ui.widget("model.grid_pooled") == nullptr);  // 5 tokens: every cell drawn
    std::string text;
    for (int i = 0; i < 40; ++i) text += "the cat sat on the mat and ";
    ui.window.model.state.sentence = text;
    ui.frame(2);
    ui.window.finish_work();
    ui.frame(2);
    REQUIRE(ui.window.model.state.pass.ok);
    REQUIRE(ui.window.model.state.pass.tokens.size() > 400);
    REQUIRE(ui.widget("model.grid_pooled") != nullptr);
    // The chips scroll in a box of four rows: the maps start in the window's upper half.
    REQUIRE(ui.widget("model.tab.grid") != nullptr);
    CHECK(ui.widget("model.tab.grid")->y < 500.0f);
    CHECK_THAT(ui.text("model.grid_pooled"), Catch::Matchers::Contains(" tokens in ") &&
                                                 Catch::Matchers::Contains("the largest weight of a block of "));
    std::filesystem::remove_all(folder);
}

TEST_CASE("Gemma 3 as published (tokenizer.json one token past the embedding) opens in the window, a sentence that produces that token is said, and the model stays",
          "[model-view][families]") {
    namespace fs = std::filesystem;
    const std::string folder = (fs::temp_directory_path() / "attnlab-model-view-gemma3-image-token").string();
    testing::families::write_gemma3_with_image_token(folder, std::string(ATTNLAB_TEST_DATA) + "/tokenizers/bytelevel-roberta-prefix-space.json");
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui::ModelViewState& m = ui.window.model.state;
    m.sentence = "the cat sat";
    REQUIRE(ui.open_model(folder));
    ui.frame(2);
    REQUIRE(m.pass.ok);
    CHECK(std::any_of(ui.window.shared.notices.begin(), ui.window.shared.notices.end(), [](const ui::Notice& n) {
        return !n.error && n.text.find("; tokenizer.json holds 403 tokens, 1 beyond the embedding's 402 rows (`<image_soft_token>`): "
                                       "a sentence that produces it is refused") != std::string::npos;
    }));
    const Matrix logits = m.pass.logits;
    m.sentence = "the cat <image_soft_token> sat";
    ui.frame(2);
    ui.window.finish_work();
    ui.frame(2);
    const std::string said = "The model cannot run this sentence: token 402 `<image_soft_token>` at character 9 of the sentence is beyond the model's embedding of 402 rows";
    CHECK(std::any_of(ui.window.shared.notices.begin(), ui.window.shared.notices.end(), [&](const ui::Notice& n) { return n.error && n.text == said; }));
    REQUIRE(m.model);
    CHECK(m.pass.ok);  // the sentence before stays on screen
    CHECK(m.pass.logits == logits);
    m.sentence = "the dog sat";  // and the next sentence runs
    ui.frame(2);
    ui.window.finish_work();
    ui.frame(2);
    CHECK(m.computed_sentence == "the dog sat");
    CHECK(m.pass.ok);
    fs::remove_all(folder);
}

TEST_CASE("Model view in front: the side bar and the bar above it are the model's, and a lesson brings the pipeline to the front",
          "[model-view][layout]") {
    const std::string folder = write_model("attnlab-model-sidebar");
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    open_through_menu(ui, folder);
    ui.frame(2);
    REQUIRE(ui.window.shared.view.pane == ui::Pane::Model);
    CHECK(ui.text("sidebar.model") == "GPT-2");
    CHECK(ui.widget("sidebar.preset") == nullptr);     // not the preset's "3 tokens, d_k = 2"
    CHECK_THAT(ui.text("model.bar"), Catch::Matchers::Contains("GPT-2 on \"The animal did not cross the road"));
    CHECK(ui.widget("tokens.sentence") == nullptr);    // nor its token chips
    // The pipeline tab: the preset's controls again.
    ui.click(ui.centre("pane.pipeline"));
    ui.frame(2);
    CHECK(ui.widget("sidebar.preset") != nullptr);
    CHECK(ui.widget("sidebar.model") == nullptr);
    // Back to the model, then a lesson: its step's text is about the pipeline, which comes to the front.
    ui.click(ui.centre("pane.model"));
    ui.frame(2);
    REQUIRE(ui.window.shared.view.pane == ui::Pane::Model);
    REQUIRE(ui::open_lesson_named(ui.window.shared, ui.window.lesson.state, "03-masks", 0));
    ui.frame(2);
    CHECK(ui.window.shared.view.pane == ui::Pane::Pipeline);
}

TEST_CASE("attnlab --model … --layer 2 --head 1 opens the pipeline at that head's weights, as a map click does", "[model-view][layout]") {
    const std::string folder = write_model("attnlab-model-cli-jump");
    UiDriver ui(find_preset(default_preset_name())->scenario);
    cli::Options options;
    options.model.path = folder;
    options.model.layer = 2;
    options.model.head = 1;
    ui.window.start(options);
    ui.frame(6);
    REQUIRE(ui.window.model.state.layer == 1);
    CHECK(ui.window.shared.view.pane == ui::Pane::Pipeline);
    CHECK(ui.text("pipeline.step.softmax") == "[softmax]");
    const ui::WidgetLayout* view = ui.widget("pipeline.view");
    const ui::HeatmapLayout* weights = ui.heatmap("head0.weights");
    REQUIRE(view != nullptr);
    REQUIRE(weights != nullptr);
    CHECK(weights->y > view->y);
    CHECK(weights->y + static_cast<float>(weights->rows) * weights->cell_h <= view->y + view->h);
}
