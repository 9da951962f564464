// View → Train driven as a user drives it (tests/gui/ui_driver.hpp): Train, watch reverse
// reach 99% and stop there, go on and pause, ablate heads, scrub the timeline back, open a
// layer in the pipeline at the head that learned.
#include <catch2/catch.hpp>

#include <sstream>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "train/trainer.hpp"
#include "train_fixtures.hpp"
#include "ui/panel_train.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;
using attn::testing::same_bits;

namespace {

// Frames until `done`, at most `seconds` of wall time (the worker trains meanwhile).
template <class Done>
bool frames_until(UiDriver& ui, Done done, double seconds) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
        ui.frame();
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

}  // namespace

TEST_CASE("Train: reverse trains to 99% and stops there, pause and resume change nothing, the timeline scrubs back, a layer opens in the pipeline",
          "[train]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui::TrainPanelState& p = ui.window.train.state;
    p.open = true;
    ui.frame(2);
    REQUIRE(ui.text("train.start") == "Train");
    ui.click(ui.centre("train.start"));
    // It stops by itself at the target accuracy, and says so.
    REQUIRE(frames_until(ui, [&] { return !p.progress.running && !p.progress.evaluations.empty(); }, 60.0));
    CHECK(std::stod(ui.text("train.accuracy")) >= 0.99);
    CHECK(p.progress.evaluations.back().accuracy >= 0.99);
    CHECK((p.progress.evaluations.size() < 2 || p.progress.evaluations[p.progress.evaluations.size() - 2].accuracy < 0.99));
    ui.frame(2);
    CHECK(ui.text("train.start") == "Train");
    CHECK(ui.text("train.stopped").find("reached the target 99.0%") != std::string::npos);

    // Stopped, resumed, paused: the weights are those of a run never stopped, step for step.
    const int paused_at = p.progress.steps_done;
    ui.frame(5);
    CHECK(p.progress.steps_done == paused_at);  // stopped: no step
    ui.click(ui.centre("train.start"));  // the target is reached: Train goes on to its step budget
    REQUIRE(frames_until(ui, [&] { return p.progress.steps_done >= paused_at + 20; }, 30.0));
    CHECK(ui.text("train.start") == "Pause");  // drawn from the same copy: 20 of its 2,000 steps done
    ui.click(ui.centre("train.start"));
    p.worker->wait_idle();
    ui.frame(2);
    REQUIRE_FALSE(p.progress.running);
    std::vector<std::string> errors;
    auto uninterrupted = train::Trainer::create(p.settings, errors);
    REQUIRE(uninterrupted);
    uninterrupted->run(p.progress.steps_done);
    CHECK(same_bits(p.progress.latest->model.params, uninterrupted->model().params));
    CHECK(p.progress.evaluations.back().accuracy == uninterrupted->evaluations().back().accuracy);
    // Step: exactly one more.
    const int before_step = p.progress.steps_done;
    ui.click(ui.centre("train.step"));
    p.worker->wait_idle();
    ui.frame(2);
    CHECK(p.progress.steps_done == before_step + 1);
    // A budget of 30 more steps: exactly 30.
    p.stop_after = 30;
    ui.click(ui.centre("train.start"));
    p.worker->wait_idle();
    ui.frame(2);
    CHECK(p.progress.steps_done == before_step + 31);
    CHECK(ui.text("train.stopped").find("after the 30 steps asked for") != std::string::npos);

    // A changed form is said to wait for Reset, not silently ignored.
    CHECK(ui.widget("train.form_differs") == nullptr);
    p.form.model.layers = 2;
    ui.frame(2);
    CHECK(ui.widget("train.form_differs") != nullptr);
    p.form.model.layers = 1;
    ui.frame(2);
    CHECK(ui.widget("train.form_differs") == nullptr);

    // The probe's predictions beside the truth: all right once trained.
    CHECK(ui.text("train.probe") == "6/6");

    // Ablate each head in turn: the held-out accuracy drops without the reverse head.
    double worst = 1.0;
    int reverse_head = 0;
    for (const char* head : {"train.ablate.1.1", "train.ablate.1.2"}) {
        ui.click(ui.centre(head));
        ui.frame(2);
        REQUIRE(ui.widget("train.ablated") != nullptr);
        if (std::stod(ui.text("train.ablated")) < worst) {
            worst = std::stod(ui.text("train.ablated"));
            reverse_head = head[std::strlen(head) - 1] - '1';
        }
        ui.click(ui.centre(head));
        ui.frame(2);
        CHECK(ui.widget("train.ablated") == nullptr);
    }
    CHECK(worst < 0.9);
    // Both at once: ticking the second keeps the first. The two evaluations of a set of heads not
    // measured before run off the window's thread: until they land, the line says they are being
    // measured, never the numbers of another set of heads.
    ui.click(ui.centre("train.ablate.1.1"));
    ui.frame(2);
    p.hold_evaluations = true;
    ui.click(ui.centre("train.ablate.1.2"));
    ui.frame(2);
    CHECK(p.evaluating.running());
    CHECK(ui.text("train.ablated") == "measuring");
    p.hold_evaluations = false;
    ui.frame(2);
    CHECK_FALSE(p.evaluating.running());
    CHECK(std::stod(ui.text("train.ablated")) ==
          Approx(train::evaluate(p.shown_model, p.held_out, p.shown_step, p.ablated_heads).accuracy).margin(1e-6));
    CHECK(ui.text("train.ablate.1.1") == "on");
    CHECK(ui.text("train.ablate.1.2") == "on");
    CHECK(p.ablated_heads.size() == 2);
    CHECK(p.shown.layers[0].w_o->isZero());  // the pass zeroed every head's rows of W_O
    CHECK_FALSE(p.shown_model.params.layers[0].w_o.isZero());  // in its layer's scenario, not in the weights
    ui.click(ui.centre("train.ablate.1.1"));
    ui.frame(2);
    ui.click(ui.centre("train.ablate.1.2"));
    ui.frame(2);
    CHECK(ui.widget("train.ablated") == nullptr);

    // Scrub the timeline to its start: the heads and predictions of the untrained model.
    const ui::WidgetLayout* slider = ui.widget("train.timeline");
    REQUIRE(slider != nullptr);
    ui.click(ImVec2(slider->x + 2.0f, slider->y + slider->h * 0.5f));
    ui.frame(2);
    CHECK_FALSE(p.follow);
    CHECK(ui.text("train.timeline") == "0");
    const train::Model initial = train::init_model(p.settings.model, p.progress.latest->model.vocabulary, p.settings.seed);
    const train::ForwardPass at_start = train::forward(initial, p.probe.input);
    REQUIRE(p.shown.ok);
    CHECK(p.shown.layers[0].head[1].weights == at_start.layers[0].head[1].weights);
    CHECK(ui.text("train.probe") != "6/6");
    // And to the middle of the run: a later snapshot, not the newest weights.
    ui.click(ImVec2(slider->x + slider->w * 0.5f, slider->y + slider->h * 0.5f));
    ui.frame(2);
    const int middle = std::stoi(ui.text("train.timeline"));
    CHECK(middle > 0);
    CHECK(middle < p.progress.steps_done);
    // Typed, the timeline takes a step, not a snapshot's index: 100 is step 100. (Ctrl+click
    // types into a slider.)
    ui.move(ImVec2(slider->x + slider->w * 0.5f, slider->y + slider->h * 0.5f));
    {
        ImGuiIO& io = ImGui::GetIO();
        io.KeyCtrl = true;
        io.MouseDown[0] = true;
        ui.frame();
        io.MouseDown[0] = false;
        ui.frame();
        io.KeyCtrl = false;
    }
    ui.key(GLFW_KEY_A, true);
    ui.type("100");
    ui.key(GLFW_KEY_ENTER);
    ui.frame(2);
    CHECK(ui.text("train.timeline") == "100");
    ui.click(ImVec2(slider->x + slider->w * 0.5f, slider->y + slider->h * 0.5f));
    ui.frame(2);
    CHECK(std::stoi(ui.text("train.timeline")) == middle);

    // Open layer 1 (at the slider's step) in the pipeline: the session's scenario is the
    // model's layer, and its trace is the one the panel drew, at the head that learned to
    // reverse (none was pointed at since the run began: the most concentrated one).
    p.looked_at.clear();
    ui.click(ui.centre("train.open.1"));
    ui.frame(3);
    CHECK(ui.window.shared.view.pane == ui::Pane::Pipeline);  // the layer shown, the Train tab kept beside it
    CHECK(p.open);
    CHECK(ui.window.shared.view.shown_head == reverse_head);
    CHECK_FALSE(ui.window.shared.view.all_heads);
    const Scenario& s = ui.window.shared.session.scenario;
    CHECK(s.name.find("trained layer 1 of 1, step " + std::to_string(middle)) == 0);
    CHECK(s.w_q == p.shown_model.params.layers[0].w_q);
    CHECK(s.w_o == p.shown_model.params.layers[0].w_o);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK(ui.window.shared.session.trace.head[0].weights == p.shown.layers[0].head[0].weights);
    CHECK(ui.window.shared.session.trace.query_tokens.size() == p.probe.input.tokens.size());
    // Shown at that head's weights: the whole map inside the pipeline's view.
    const ui::WidgetLayout* view = ui.widget("pipeline.view");
    const ui::HeatmapLayout* weights = ui.heatmap("head" + std::to_string(reverse_head) + ".weights");
    REQUIRE(view != nullptr);
    REQUIRE(weights != nullptr);
    CHECK(weights->y >= view->y);
    CHECK(weights->y + static_cast<float>(weights->rows) * weights->cell_h <= view->y + view->h);
}

TEST_CASE("Train: Save model and Load model through the path prompt, and the loaded run trains on as if never saved", "[train]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui::TrainPanelState& p = ui.window.train.state;
    p.open = true;
    ui.frame(2);
    ui::train_now(ui.window.train.state, 40);
    ui.frame(2);
    REQUIRE(p.progress.steps_done == 40);
    const train::ModelParams saved = p.progress.latest->model.params;
    const std::string file = (std::filesystem::temp_directory_path() / "attnlab-train-panel-model.json").string();
    std::filesystem::remove(file);
    p.model_path = file;
    ui.click(ui.centre("train.save"));
    CHECK(ui.window.files.state.prompt.action == ui::FileAction::SaveModel);
    ui.frame(2);  // the path prompt opens
    ui.key(GLFW_KEY_ENTER);
    ui.frame(2);
    REQUIRE(std::filesystem::exists(file));

    // A fresh run, then the file: the run on screen is the saved one, at step 40.
    ui.click(ui.centre("train.reset"));
    p.worker->wait_idle();
    ui.frame(2);
    CHECK(p.progress.steps_done == 0);
    ui.click(ui.centre("train.load"));
    CHECK(ui.window.files.state.prompt.action == ui::FileAction::OpenModel);
    ui.frame(2);  // the path prompt opens
    ui.key(GLFW_KEY_ENTER);
    p.worker->wait_idle();
    ui.frame(2);
    REQUIRE(p.progress.steps_done == 40);
    CHECK(same_bits(p.progress.latest->model.params, saved));
    // Ten more steps: the uninterrupted run's 50.
    for (int i = 0; i < 10; ++i) ui.click(ui.centre("train.step"));
    p.worker->wait_idle();
    ui.frame(2);
    REQUIRE(p.progress.steps_done == 50);
    std::vector<std::string> errors;
    auto uninterrupted = train::Trainer::create(p.settings, errors);
    REQUIRE(uninterrupted);
    uninterrupted->run(50);
    CHECK(same_bits(p.progress.latest->model.params, uninterrupted->model().params));

    // A bad file keeps the run on screen and says why.
    { std::ofstream(file) << "{\"format\": \"attnlab-model\"}"; }
    ui.click(ui.centre("train.load"));
    ui.frame(2);  // the path prompt opens
    ui.key(GLFW_KEY_ENTER);
    ui.frame(2);
    CHECK(p.progress.steps_done == 50);
    REQUIRE_FALSE(ui.window.shared.notices.empty());
    CHECK(ui.window.shared.notices.back().error);
    INFO(ui.window.shared.notices.back().text);
    bool named = false;  // one notice per problem
    for (const ui::Notice& n : ui.window.shared.notices)
        named = named || n.text.find("Cannot load the model: " + file + ": key 'version': missing") == 0;
    CHECK(named);
    std::filesystem::remove(file);
}

TEST_CASE("Train: a probe token changed in the panel and in the pipeline, the prediction follows, undo brings it back", "[train]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui::TrainPanelState& p = ui.window.train.state;
    p.open = true;
    ui.frame(2);
    ui::train_now(ui.window.train.state, 400);
    ui.frame(3);
    REQUIRE(ui.text("train.probe") == "6/6");
    const std::vector<std::string>& vocabulary = p.shown_model.vocabulary;
    const int symbols = p.settings.task.symbols;
    const train::Example original = p.probe;

    // In the panel: token 1 becomes another letter. Reverse answers it last: the truth's last
    // row and, trained, the prediction there.
    const int first = original.input.tokens[0], other = (first + 1) % symbols;
    const std::string letter = vocabulary[static_cast<size_t>(other)];
    ui.click(ui.centre("train.probe.token.1"));
    ui.frame();
    ui.click(ui.centre("train.probe.token.1.pick." + letter));
    ui.frame(2);
    CHECK(ui.text("train.probe.token.1") == letter);
    CHECK(p.probe.targets.back() == other);
    CHECK(ui.text("train.probe") == "6/6");
    CHECK(ui.text("train.probe.predicted").back() == letter.back());
    // A token of the answer half is not a button: it follows from the content.
    const int n = static_cast<int>(original.input.tokens.size());
    CHECK(ui.text("train.probe.token." + std::to_string(n)) == vocabulary[static_cast<size_t>(p.probe.input.tokens.back())]);
    ui.click(ui.centre("train.probe.restore"));
    ui.frame(2);
    CHECK(p.probe.input.tokens == original.input.tokens);

    // In the pipeline: the layer opened, a probe token changed above it.
    ui.click(ui.centre("train.open.1"));
    ui.frame(3);
    REQUIRE(ui::trained_layer_open(ui.window.train.state));
    CHECK(ui.text("trained.right") == "6/6");
    const std::string before = ui.text("trained.probe.predicted");
    const Scenario opened = ui.window.shared.session.scenario;
    const int second = original.input.tokens[1], replacement = (second + 2) % symbols;
    const std::string letter2 = vocabulary[static_cast<size_t>(replacement)];
    ui.click(ui.centre("trained.probe.token.2"));
    ui.frame();
    ui.click(ui.centre("trained.probe.token.2.pick." + letter2));
    ui.frame(3);
    const Scenario& s = ui.window.shared.session.scenario;
    CHECK(s.target.tokens[1] == letter2);
    CHECK(s.target.tokens[static_cast<size_t>(n - 1)] == letter2);  // the answer half follows: s₁ is read again at row 2m−1
    CHECK(s.w_q == opened.w_q);
    CHECK(ui.text("trained.right") == "6/6");
    const std::string after = ui.text("trained.probe.predicted");
    CHECK(after != before);
    CHECK(after[static_cast<size_t>(n - 2)] == letter2.back());  // row 2m−2 predicts s₁
    // Undo: the tokens and the prediction as they were.
    ui.key(GLFW_KEY_Z, true);
    ui.frame(3);
    CHECK(ui.window.shared.session.scenario.target.tokens == opened.target.tokens);
    CHECK(ui.text("trained.probe.predicted") == before);

    // A number edited in place: W_O zeroed, the prediction is a model without this layer's
    // attention output, computed independently.
    Scenario zeroed = ui.window.shared.session.scenario;
    zeroed.w_o.edit().setZero();
    ui.window.shared.session.push(edits::ReplaceScenario{zeroed});
    ui.frame(3);
    train::Model without = p.opened.model;
    without.params.layers[0].w_o.setZero();
    const train::ForwardPass expected = train::forward(without, p.opened.probe.input);
    REQUIRE(expected.ok);
    REQUIRE(p.opened.pass.ok);
    CHECK((p.opened.pass.logits - expected.logits).cwiseAbs().maxCoeff() < 1e-5f);
    CHECK(ui.text("trained.right") != "6/6");

    // Another scenario opened: the bar goes, the training stays.
    ui.window.shared.session.push(edits::ReplaceScenario{find_preset(default_preset_name())->scenario});
    ui.frame(3);
    CHECK_FALSE(ui::trained_layer_open(ui.window.train.state));
    CHECK(ui.widget("trained.title") == nullptr);
}

TEST_CASE("Train: the weights shown write after a prompt, the reverse of its letters, and a head ablated changes what they write",
          "[train][generate]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui::TrainPanelState& p = ui.window.train.state;
    p.open = true;
    ui.frame(2);
    ui::train_now(ui.window.train.state, 400);
    ui.frame(3);
    CHECK(ui.text("train.write") == "open");  // open from the start
    // The prompt is the probe's letters and its separator; the model writes them reversed.
    const std::string prompt = ui.text("train.write.prompt");
    std::vector<std::string> letters;
    std::istringstream words(prompt);
    for (std::string w; words >> w && w != "|";) letters.push_back(w);
    REQUIRE(letters.size() == 6);
    std::string reversed;
    for (auto it = letters.rbegin(); it != letters.rend(); ++it) reversed += (reversed.empty() ? "" : " ") + *it;
    CHECK_THAT(ui.text("train.write.lines"), Catch::Contains(prompt + " \xE2\x86\x92 " + reversed));
    // Both heads ablated: the layer adds nothing, and the reverse is gone.
    p.ablated_heads = {{0, 0}, {0, 1}};
    ui.frame(3);
    CHECK_THAT(ui.text("train.write.lines"), !Catch::Contains(prompt + " \xE2\x86\x92 " + reversed));
}
