// Sessions keep the models beside the scenario: the Train panel's run (its weights,
// optimiser, probe and the trained layer opened in the pipeline) and a GPT-2 checkpoint
// folder (its sentence and the layer opened). Saved, then opened in a fresh window: the same
// numbers. A folder that is gone, or a trained block that cannot be read, is said, and the
// rest of the session opens.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bad_model_catalogue.hpp"
#include "gpt2/model.hpp"
#include "presets.hpp"
#include "serialize.hpp"
#include "session_file.hpp"
#include "ui/classroom.hpp"
#include "ui/panel_model.hpp"
#include "train_fixtures.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;
using attn::testing::same_bits;

namespace {

std::string temp(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

bool has_notice(const ui::AppState& state, const std::string& part) {
    for (const ui::Notice& n : state.notices)
        if (n.text.find(part) != std::string::npos) return true;
    return false;
}

void save(UiDriver& ui, const std::string& path) {
    std::string error;
    REQUIRE(session_file::save_session(path, ui.state.session.scenario, ui::view_choices(ui.state), &error, ui::attachments(ui.state)));
}

}  // namespace

TEST_CASE("Sessions keep the trained model, its edited probe and the opened layer with its edits", "[train][session]") {
    const std::string path = temp("attnlab-session-trained.json");
    train::ModelParams weights;
    int steps = 0;
    std::vector<int> probe;
    Matrix logits;
    std::string predicted;
    {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui::TrainPanelState& p = ui.state.train;
        p.open = true;
        ui.frame(2);
        ui::train_now(ui.state.train, 300);
        ui.frame(3);
        // The probe edited, layer 1 opened, one of its weights edited.
        const int other = (p.probe.input.tokens[0] + 1) % p.settings.task.symbols;
        ui.click(ui.centre("train.probe.token.1"));
        ui.frame();
        ui.click(ui.centre("train.probe.token.1.pick." + p.shown_model.vocabulary[static_cast<size_t>(other)]));
        ui.frame(2);
        ui.click(ui.centre("train.open.1"));
        ui.frame(3);
        REQUIRE(ui::trained_layer_open(ui.state.train));
        Scenario edited = ui.state.session.scenario;
        edited.w_v(0, 0) += 2.0f;
        ui.state.session.push(edits::ReplaceScenario{edited});
        ui.frame(3);
        weights = p.progress.latest->model.params;
        steps = p.progress.steps_done;
        probe = p.probe.input.tokens;
        logits = p.opened.pass.logits;
        predicted = ui.text("trained.probe.predicted");
        save(ui, path);
    }
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui::open_file(ui.state, path);
    REQUIRE(ui.state.train.worker);
    ui.state.train.worker->wait_idle();
    ui.frame(4);
    const ui::TrainPanelState& p = ui.state.train;
    REQUIRE(p.progress.latest);
    CHECK(p.progress.steps_done == steps);
    CHECK(same_bits(p.progress.latest->model.params, weights));
    CHECK(p.probe.input.tokens == probe);
    REQUIRE(ui::trained_layer_open(ui.state.train));
    CHECK(ui.state.session.scenario.name.find("trained layer 1 of 1") == 0);
    REQUIRE(p.opened.pass.ok);
    CHECK(p.opened.pass.logits == logits);  // the edit of W_V is in the prediction again
    CHECK(ui.text("trained.probe.predicted") == predicted);
    std::filesystem::remove(path);
}

TEST_CASE("Sessions keep the GPT-2 folder, its sentence and the opened layer, and a folder that is gone is said", "[model-view][session]") {
    const std::string folder = temp("attnlab-session-gpt2");
    std::filesystem::remove_all(folder);
    {
        gpt2::Config config = testing::tiny_config();
        config.n_layer = 3;
        config.n_positions = 64;
        gpt2::Checkpoint c = gpt2::random_checkpoint(config, 4, testing::tiny_checkpoint().tokenizer);
        for (auto& layer : c.layers) layer.c_attn_w *= 60.0f;
        std::string error;
        REQUIRE(gpt2::write_checkpoint(folder, c, gpt2::CheckpointWriteOptions{}, &error));
    }
    const std::string path = temp("attnlab-session-gpt2.json");
    const std::string sentence = "the cat sat";
    std::vector<float> top5;
    Matrix last_weights;
    {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.state.model.sentence = sentence;
        REQUIRE(ui::open_model(ui.state, ui.state.model, folder));
        ui.frame(2);
        ui::open_model_layer(ui.state, ui.state.model, 1, 1);
        ui.frame(3);
        ui.state.model.ablation_toggles.push_back(gpt2::HeadId{2, 0});  // layer 3's head 1 ablated, after the opened layer
        ui.frame(3);
        REQUIRE(ui.state.model.pass.ablated.size() == 1);
        Scenario edited = ui.state.session.scenario;
        edited.w_v(0, 0) += 3.0f;  // layer 2 edited: layer 3 and the prediction follow
        ui.state.session.push(edits::ReplaceScenario{edited});
        ui.frame(3);
        for (const gpt2::TokenProbability& t : ui.state.model.pass.next_token_top5) top5.push_back(t.probability);
        REQUIRE(top5.size() == 5);
        last_weights = ui.state.model.pass.layers[2].head[0].weights;
        save(ui, path);
    }
    SECTION("opened again: the sentence, the layer and its edit") {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui::open_file(ui.state, path);
        ui.frame(4);
        const ui::ModelViewState& m = ui.state.model;
        REQUIRE(m.checkpoint);
        CHECK(m.computed_sentence == sentence);
        CHECK(m.layer == 1);
        CHECK(m.pass.ablated == gpt2::HeadSet{gpt2::HeadId{2, 0}});
        CHECK(ui.state.view.shown_head == 1);
        CHECK(m.pass.layers[2].head[0].weights == last_weights);
        std::vector<float> again;
        for (const gpt2::TokenProbability& t : m.pass.next_token_top5) again.push_back(t.probability);
        CHECK(again == top5);
    }
    SECTION("the folder gone: a notice, and the scenario opens") {
        std::vector<std::string> errors;
        nlohmann::json j = nlohmann::json::parse(*read_text_file(path, kMaxScenarioFileBytes, "session", errors));
        j["model"]["folder"] = folder + "-gone";
        { std::ofstream(path) << j.dump(); }
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui::open_file(ui.state, path);
        ui.frame(3);
        CHECK_FALSE(ui.state.model.checkpoint);
        CHECK(ui.state.session.scenario.name == j["scenario"]["name"].get<std::string>());
        CHECK(has_notice(ui.state, "The session's model folder " + folder + "-gone cannot be opened"));
    }
    std::filesystem::remove(path);
    std::filesystem::remove_all(folder);
}

TEST_CASE("A session's model blocks: malformed is refused, an unreadable trained model is a warning", "[session]") {
    const Scenario s = find_preset(default_preset_name())->scenario;
    const nlohmann::json base = session_file::session_to_json(s, session_file::ViewChoices{});
    auto load = [](const nlohmann::json& j) { return session_file::session_from_json(j, "s.json"); };
    {
        nlohmann::json j = base;
        j["model"] = {{"folder", "/m"}, {"sentence", "hi"}, {"layer", 2}, {"head", 3}};
        const session_file::SessionLoad l = load(j);
        REQUIRE(l.scenario);
        REQUIRE(l.attached.model);
        CHECK(l.attached.model->folder == "/m");
        CHECK(l.attached.model->layer == 1);
        CHECK(l.attached.model->head == 2);
    }
    {
        nlohmann::json j = base;
        j["model"] = {{"folder", "/m"}, {"layer", "two"}};
        const session_file::SessionLoad l = load(j);
        CHECK_FALSE(l.scenario);
        REQUIRE_FALSE(l.errors.empty());
        CHECK(l.errors.front() == "s.json: key 'model.layer': expected a count from 1 (0: none)");
    }
    {
        nlohmann::json j = base;
        j["model"] = {{"folder", "/m"}, {"ablated", {{0, 1}}}};
        CHECK(load(j).errors.front() == "s.json: key 'model.ablated': expected a list of [layer, head] pairs counted from 1");
        j["model"] = {{"folder", "/m"}, {"ablated", {{2, 1}, {1, 3}}}};
        REQUIRE(load(j).attached.model);
        CHECK(load(j).attached.model->ablated == std::vector<std::pair<int, int>>{{1, 0}, {0, 2}});
        j["model"] = {{"folder", "/m"}, {"colour", 1}};
        CHECK(load(j).errors.front() == "s.json: key 'model.colour': unknown key");
        j = base;
        j["extra"] = 1;
        CHECK(load(j).errors.front() == "s.json: key 'extra': unknown key");
    }
    {
        nlohmann::json j = base;
        j["trained"] = {{"model", {{"format", "attnlab-model"}}}};
        const session_file::SessionLoad l = load(j);
        REQUIRE(l.scenario);  // the rest opens
        CHECK_FALSE(l.attached.trained);
        REQUIRE_FALSE(l.warnings.empty());
        CHECK(l.warnings.front().find("s.json (trained.model)") == 0);
    }
}
