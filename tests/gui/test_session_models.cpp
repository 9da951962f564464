// Sessions keep the models beside the scenario: the Train panel's run (its weights,
// optimiser, probe and the trained layer opened in the pipeline) and a GPT-2 checkpoint
// folder (its sentence and the layer opened). Saved, then opened in a fresh window: the same
// numbers. A folder that is gone, or a trained block that cannot be read, is said, and the
// rest of the session opens.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bad_model_catalogue.hpp"
#include "cli.hpp"
#include "model/gpt2/checkpoint.hpp"
#include "hf_family_fixtures.hpp"
#include "model_fixtures.hpp"
#include "teaching/presets.hpp"
#include "tensor/reflect.hpp"
#include "attention/scenario_edits.hpp"
#include "attention/serialize.hpp"
#include "session_file.hpp"
#include "ui/classroom.hpp"
#include "ui/panel_model.hpp"
#include "train_fixtures.hpp"
#include "ui_driver.hpp"
#include "ui/panel_train.hpp"

using namespace attn;
using attn::testing::UiDriver;
using attn::testing::same_bits;

namespace {

std::string temp(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

bool has_notice(const ui::Window& state, const std::string& part) {
    for (const ui::Notice& n : state.shared.notices)
        if (n.text.find(part) != std::string::npos) return true;
    return false;
}

void save(UiDriver& ui, const std::string& path) {
    std::string error;
    REQUIRE(session_file::save_session(path, ui.window.shared.session.scenario, ui.window.view_choices(), &error, ui.window.attachments()));
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
        ui::TrainPanelState& p = ui.window.train.state;
        p.open = true;
        ui.frame(2);
        ui::train_now(ui.window.train.state, 300);
        ui.frame(3);
        // The probe edited, layer 1 opened, one of its weights edited.
        const int other = (p.probe.input.tokens[0] + 1) % p.settings.task.symbols;
        ui.click(ui.centre("train.probe.token.1"));
        ui.frame();
        ui.click(ui.centre("train.probe.token.1.pick." + p.shown_model.vocabulary[static_cast<size_t>(other)]));
        ui.frame(2);
        ui.click(ui.centre("train.open.1"));
        ui.frame(3);
        REQUIRE(ui::trained_layer_open(ui.window.train.state));
        Scenario edited = ui.window.shared.session.scenario;
        edited.w_v.edit()(0, 0) += 2.0f;
        ui.window.shared.session.push(edits::ReplaceScenario{edited});
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
    ui.window.open_file(path);
    ui.window.finish_work();  // read off the window's thread: it lands here
    REQUIRE(ui.window.train.state.worker);
    ui.window.train.state.worker->wait_idle();
    ui.frame(4);
    const ui::TrainPanelState& p = ui.window.train.state;
    REQUIRE(p.progress.latest);
    CHECK(p.progress.steps_done == steps);
    CHECK(same_bits(p.progress.latest->model.params, weights));
    CHECK(p.probe.input.tokens == probe);
    REQUIRE(ui::trained_layer_open(ui.window.train.state));
    CHECK(ui.window.shared.session.scenario.name.find("trained layer 1 of 1") == 0);
    REQUIRE(p.opened.pass.ok);
    CHECK(p.opened.pass.logits == logits);  // the edit of W_V is in the prediction again
    CHECK(ui.text("trained.probe.predicted") == predicted);
    std::filesystem::remove(path);
}

TEST_CASE("Sessions keep the GPT-2 folder, its sentence and the opened layer, and a folder that is gone is said", "[model-view][session]") {
    const std::string folder = temp("attnlab-session-gpt2");
    testing::write_sharp_gpt2(folder);
    const std::string path = temp("attnlab-session-gpt2.json");
    const std::string sentence = "the cat sat";
    std::vector<float> top5;
    Matrix last_weights;
    {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.window.model.state.sentence = sentence;
        REQUIRE(ui.open_model(folder));
        ui.frame(2);
        ui::open_model_layer(ui.window.shared, ui.window.model.state, 1, 1);
        ui.frame(3);
        ui.window.model.state.ablation_toggles.push_back(stack::HeadId{2, 0});  // layer 3's head 1 ablated, after the opened layer
        ui.frame(3);
        REQUIRE(ui.window.model.state.pass.ablated.heads.size() == 1);
        Scenario edited = ui.window.shared.session.scenario;
        edited.w_v.edit()(0, 0) += 3.0f;  // layer 2 edited: layer 3 and the prediction follow
        ui.window.shared.session.push(edits::ReplaceScenario{edited});
        ui.frame(3);
        for (const TokenProbability& t : ui.window.model.state.pass.next_token_top5) top5.push_back(t.probability);
        REQUIRE(top5.size() == 5);
        last_weights = ui.window.model.state.pass.layers[2].head[0].weights;
        save(ui, path);
    }
    SECTION("opened again: the sentence, the layer and its edit") {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.window.open_file(path);
        ui.window.finish_work();  // read off the window's thread: it lands here
        ui.frame(4);
        const ui::ModelViewState& m = ui.window.model.state;
        REQUIRE(m.model);
        CHECK(m.computed_sentence == sentence);
        CHECK(m.layer == 1);
        CHECK(m.pass.ablated == stack::HeadSet{stack::HeadId{2, 0}});
        CHECK(ui.window.shared.view.shown_head == 1);
        CHECK(m.pass.layers[2].head[0].weights == last_weights);
        std::vector<float> again;
        for (const TokenProbability& t : m.pass.next_token_top5) again.push_back(t.probability);
        CHECK(again == top5);
    }
    SECTION("the folder gone: a notice, and the scenario opens") {
        std::vector<std::string> errors;
        nlohmann::json j = nlohmann::json::parse(*read_text_file(path, kMaxScenarioFileBytes, "session", errors));
        j["model"]["folder"] = folder + "-gone";
        { std::ofstream(path) << j.dump(); }
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.window.open_file(path);
        ui.window.finish_work();  // read off the window's thread: it lands here
        ui.frame(3);
        CHECK_FALSE(ui.window.model.state.model);
        // The session's scenario was the layer, kept by reference: the pipeline keeps what it showed.
        CHECK_FALSE(j.contains("scenario"));
        CHECK(ui.window.shared.session.scenario.name == find_preset(default_preset_name())->scenario.name);
        CHECK(has_notice(ui.window, "The session's model folder " + folder + "-gone cannot be opened"));
    }
    std::filesystem::remove(path);
    std::filesystem::remove_all(folder);
}

TEST_CASE("Sessions keep a Gemma 3 folder as they keep GPT-2's: its sentence, the local layer opened and its edit", "[model-view][session][families]") {
    namespace fs = std::filesystem;
    const std::string folder = temp("attnlab-session-gemma3");
    fs::remove_all(folder);
    testing::families::FamilyCheckpoint c = testing::families::gemma3_checkpoint();
    c.config["vocab_size"] = 402;  // the byte-level tokenizer's
    testing::families::TensorMaker make(c, 99);
    make("model.embed_tokens.weight", {402, 16}, 1.0);
    testing::families::write_family_checkpoint(folder, c);
    fs::copy_file(fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json", fs::path(folder) / "tokenizer.json");
    const std::string path = temp("attnlab-session-gemma3.json");
    Matrix last_weights;
    {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.window.model.state.sentence = "the cat sat on the mat";
        REQUIRE(ui.open_model(folder));
        ui.frame(2);
        ui::open_model_layer(ui.window.shared, ui.window.model.state, 0, 1);
        ui.frame(3);
        ui.window.shared.session.push(edits::SetSoftcap{2.0f});  // layer 1 soft-capped: layers 2 and 3 follow
        ui.frame(3);
        ui.window.finish_work();
        ui.frame(2);
        last_weights = ui.window.model.state.pass.layers[2].head[0].weights;
        save(ui, path);
    }
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.open_file(path);
    ui.window.finish_work();  // read off the window's thread: it lands here
    ui.frame(4);
    ui.window.finish_work();
    ui.frame(3);
    const ui::ModelViewState& m = ui.window.model.state;
    REQUIRE(m.model);
    CHECK(m.model->family() == "Gemma 3");
    CHECK(m.computed_sentence == "the cat sat on the mat");
    CHECK(m.layer == 0);
    CHECK(ui.window.shared.view.shown_head == 1);
    CHECK(ui.window.shared.session.scenario.softcap == 2.0f);
    CHECK(ui.window.shared.session.scenario.mask == MaskKind::SlidingWindow);
    CHECK(m.pass.layers[2].head[0].weights == last_weights);
    fs::remove(path);
    fs::remove_all(folder);
}

TEST_CASE("A session named at start-up comes back as saved: every field it stores", "[model-view][session]") {
    const std::string folder = temp("attnlab-session-start-gpt2");
    std::filesystem::remove_all(folder);
    {
        gpt2::Config config = testing::tiny_config();
        config.n_layer = 3;
        config.n_head = 4;
        config.n_embd = 16;
        config.n_positions = 64;
        std::string error;
        REQUIRE(gpt2::write_checkpoint(folder, gpt2::random_checkpoint(config, 5, testing::tiny_checkpoint().tokenizer),
                                       gpt2::CheckpointWriteOptions{}, &error));
    }
    const std::string path = temp("attnlab-session-start.json");
    // What the window writes for its state: the file compares field by field with it.
    const auto written = [](const ui::Window& state) {
        return session_file::session_to_json(state.shared.session.scenario, state.view_choices(), state.attachments());
    };
    nlohmann::json saved;
    {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        SECTION("a GPT-2 layer's head, the heads ablated, presenter mode") {
            ui.window.model.state.sentence = "the cat sat on";
            REQUIRE(ui.open_model(folder));
            ui.frame(2);
            ui::open_model_layer(ui.window.shared, ui.window.model.state, 1, 2);  // layer 2, head 3
            ui.frame(3);
            ui.window.model.state.ablation_toggles.push_back(stack::HeadId{2, 1});
            ui.window.model.state.ablation_toggles.push_back(stack::HeadId{0, 3});
            ui.window.shared.presenter = true;
            ui.frame(3);
            CHECK(ui.window.model.state.pass.ablated.heads.size() == 2);
        }
        SECTION("the Train tab in front") {
            ui.window.train.state.open = true;
            ui::show_pane(ui.window.shared.view, ui::Pane::Train);
            ui.frame(3);
            REQUIRE(ui.window.shared.view.pane == ui::Pane::Train);
        }
        SECTION("a lesson's step, all heads side by side, the head shown") {
            REQUIRE(ui::open_lesson_named(ui.window.shared, ui.window.lesson.state, "04-multi-head.json", 2));
            ui.frame(3);
            ui.window.shared.view.all_heads = true;
            ui.window.shared.view.shown_head = 1;
            ui.frame(2);
        }
        save(ui, path);
        saved = written(ui.window);
    }
    // As `attnlab --scenario FILE` starts (main.cpp): the file read by the command line, then
    // the window started on its scenario and the rest of the session.
    std::vector<std::string> errors;
    CHECK(nlohmann::json::parse(*read_text_file(path, kMaxScenarioFileBytes, "session", errors)) == saved);
    cli::Options options;
    options.scenario_file = path;
    std::ostringstream err;
    session_file::SessionLoad load;
    const std::optional<Scenario> scenario = cli::load_scenario(options, err, &load);
    INFO(err.str());
    REQUIRE(scenario);
    UiDriver ui(*scenario);
    ui.window.start(cli::Options{}, load);
    ui.frame(4);
    const nlohmann::json again = written(ui.window);
    for (const auto& [key, value] : saved.items()) {
        INFO("session key '" << key << "'");
        CHECK(again[key] == value);
    }
    CHECK(again == saved);
    for (const ui::Notice& n : ui.window.shared.notices) CHECK_FALSE(n.error);
    std::filesystem::remove(path);
    std::filesystem::remove_all(folder);
}

TEST_CASE("Sessions keep the run's history: the curves the Train panel plots and the snapshots its timeline replays", "[train][session]") {
    const std::string path = temp("attnlab-session-history.json");
    std::vector<std::pair<int, float>> loss_curve, accuracy_curve;
    std::vector<std::shared_ptr<const train::Snapshot>> snapshots;
    train::Evaluation start;
    std::string accuracy;
    {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui::TrainPanelState& p = ui.window.train.state;
        p.open = true;
        ui.frame(2);
        ui::train_now(p, 150);
        ui.frame(3);
        REQUIRE(p.progress.steps_done == 150);
        loss_curve = p.loss_curve;
        accuracy_curve = p.accuracy_curve;
        snapshots = p.progress.snapshots;
        start = p.start_evaluation;
        accuracy = ui.text("train.accuracy");
        save(ui, path);
    }
    REQUIRE(loss_curve.size() == 150);
    REQUIRE(snapshots.size() == 7);  // steps 0, 25, …, 150
    const std::uintmax_t bytes = std::filesystem::file_size(path);
    INFO("a 150-step session of the default model is " << bytes << " bytes");
    CHECK(bytes < 1500000);  // about 0.47 MB of it the model and its optimiser, written before histories were

    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.open_file(path);
    ui.window.finish_work();  // read off the window's thread: it lands here
    REQUIRE(ui.window.train.state.worker);
    ui.window.train.state.worker->wait_idle();
    ui.frame(4);
    CHECK_FALSE(has_notice(ui.window, "training history"));
    CHECK_FALSE(has_notice(ui.window, "without its history"));
    ui::TrainPanelState& p = ui.window.train.state;
    REQUIRE(p.progress.latest);
    CHECK(p.progress.steps_done == 150);
    // The plot: every step's training loss, the held-out accuracy from step 0 on.
    CHECK(p.loss_curve == loss_curve);
    CHECK(p.accuracy_curve == accuracy_curve);
    CHECK(p.start_evaluation.step == start.step);
    CHECK(p.start_evaluation.accuracy == start.accuracy);
    CHECK(ui.text("train.accuracy") == accuracy);
    // The timeline: the same snapshots, each with its weights.
    REQUIRE(p.progress.snapshots.size() == snapshots.size());
    for (size_t i = 0; i < snapshots.size(); ++i) {
        CHECK(p.progress.snapshots[i]->step == snapshots[i]->step);
        CHECK(same_bits(p.progress.snapshots[i]->params, snapshots[i]->params));
    }
    // Scrubbed back to step 50, the probe runs through that snapshot's weights.
    p.follow = false;
    p.timeline = 2;
    ui.frame(3);
    CHECK(p.shown_step == 50);
    CHECK(ui.text("train.timeline") == "50");
    CHECK(same_bits(p.shown_model.params, snapshots[2]->params));
    // Trained on, the run takes its snapshots where the closed one would have.
    p.worker->step_once();
    for (int i = 0; i < 24; ++i) p.worker->step_once();
    p.worker->wait_idle();
    ui.frame(2);
    CHECK(p.progress.steps_done == 175);
    CHECK(p.loss_curve.size() == 175);
    REQUIRE(p.progress.snapshots.size() == 8);
    CHECK(p.progress.snapshots.back()->step == 175);
    std::filesystem::remove(path);
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
        // a mixture's experts ablated, [layer, expert] from 1
        j["model"] = {{"folder", "/m"}, {"ablated_experts", {{3, 7}, {1, 1}}}};
        REQUIRE(load(j).attached.model);
        CHECK(load(j).attached.model->ablated_experts == std::vector<std::pair<int, int>>{{2, 6}, {0, 0}});
        for (const nlohmann::json& bad : {nlohmann::json{{0, 1}}, nlohmann::json{{1, 0}}, nlohmann::json{{1, 2, 3}}, nlohmann::json{1, 2},
                                          nlohmann::json("[[1, 2]]"), nlohmann::json{{4294967297ull, 1}}}) {
            INFO(bad.dump());
            j["model"] = {{"folder", "/m"}, {"ablated_experts", bad}};
            CHECK(load(j).errors.front() == "s.json: key 'model.ablated_experts': expected a list of [layer, expert] pairs counted from 1");
        }
        nlohmann::json old_file = j;  // a version-1 session has none
        old_file["version"] = 1;
        old_file["model"] = {{"folder", "/m"}, {"ablated_experts", {{1, 1}}}};
        CHECK(load(old_file).errors.front() == "s.json: key 'model.ablated_experts': unknown key in a version-1 session");
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

TEST_CASE("A session's integers outside their range are refused, never cut down to an int", "[session]") {
    const Scenario s = find_preset(default_preset_name())->scenario;
    const nlohmann::json base = session_file::session_to_json(s, session_file::ViewChoices{});
    auto first_error = [](const nlohmann::json& j) {
        const session_file::SessionLoad l = session_file::session_from_json(j, "s.json");
        CHECK_FALSE(l.scenario);
        return l.errors.empty() ? std::string() : l.errors.front();
    };
    const std::uint64_t wraps_to_one = 4294967297ull;  // 2^32 + 1: an int cast reads 1
    {
        nlohmann::json j = base;
        j["version"] = wraps_to_one;
        CHECK(first_error(j) == "s.json: unsupported session version 4294967297 (this app reads versions 1 to 2)");
        j["version"] = -1;
        CHECK(first_error(j) == "s.json: unsupported session version -1 (this app reads versions 1 to 2)");
    }
    for (const char* key : {"step", "shown_head"}) {
        INFO(key);
        nlohmann::json j = base;
        j["view"][key] = wraps_to_one;
        CHECK(first_error(j) == std::string("s.json: key 'view.") + key + "': expected an integer from 0 to 2147483647");
        j["view"][key] = -1;
        CHECK(first_error(j) == std::string("s.json: key 'view.") + key + "': expected an integer from 0 to 2147483647");
    }
    {
        nlohmann::json j = base;
        j["model"] = {{"folder", "/m"}, {"layer", wraps_to_one}};
        CHECK(first_error(j) == "s.json: key 'model.layer': expected a count from 1 (0: none)");
        j["model"] = {{"folder", "/m"}, {"ablated", {{wraps_to_one, 1}}}};
        CHECK(first_error(j) == "s.json: key 'model.ablated': expected a list of [layer, head] pairs counted from 1");
        j["model"] = {{"folder", "/m"}, {"ablated", {{1, std::numeric_limits<std::uint64_t>::max()}}}};
        CHECK(first_error(j) == "s.json: key 'model.ablated': expected a list of [layer, head] pairs counted from 1");
        // The text's ids: counts from 0, at least one.
        const std::string ids_expected = "s.json: key 'model.ids': expected the text's token ids, a list of at most 100000 counts from 0";
        for (const nlohmann::json& bad : {nlohmann::json{3, -1}, nlohmann::json{3, wraps_to_one}, nlohmann::json{3, 1.5},
                                          nlohmann::json("3 4"), nlohmann::json::array()}) {
            INFO(bad.dump());
            j["model"] = {{"folder", "/m"}, {"ids", bad}};
            CHECK(first_error(j) == ids_expected);
        }
        j["model"] = {{"folder", "/m"}, {"ids", {3, 0, 17}}};
        const session_file::SessionLoad fine = session_file::session_from_json(j, "s.json");
        REQUIRE(fine.errors.empty());
        CHECK(fine.attached.model->ids == std::vector<int>{3, 0, 17});
    }
}

namespace {

// A reverse model of d_model `d` and one layer; the probe is its run's.
train::ModelFile reverse_model(int d) {
    train::TrainSettings s;
    s.model.d_model = d;
    s.model.heads = 2;
    s.model.layers = 1;
    s = train::fitted(s);
    train::ModelFile file;
    file.settings = s;
    file.model = train::init_model(s.model, train::task_vocabulary(s.task), 5);
    return file;
}

// Layer 1 of `file`'s model on a reverse probe, as Open layer … in the pipeline makes it.
Scenario trained_layer(const train::ModelFile& file, const train::Example& probe) {
    const train::ForwardPass pass = train::forward(file.model, probe.input);
    REQUIRE(pass.ok);
    Scenario s = train::trained_layer_scenario(file.model, probe.input, pass, 0);
    s.name += ", step 0";
    return s;
}

}  // namespace

TEST_CASE("A session's trained layer is checked against its model and its scenario before it runs", "[train][session]") {
    const train::ModelFile narrow = reverse_model(8), wide = reverse_model(32);
    const train::Example probe = train::make_held_out(narrow.settings.task, 1, 3).examples.front();
    auto session = [&](const Scenario& scenario, const train::ModelFile& model, const train::ModelFile& opened) {
        nlohmann::json j = session_file::session_to_json(scenario, session_file::ViewChoices{});
        j["trained"] = {{"model", train::model_to_json(model)},
                        {"probe", {{"tokens", probe.input.tokens}, {"source", nlohmann::json::array()}}},
                        {"layer", 1},
                        {"opened", train::model_to_json(opened)}};
        return j;
    };
    auto load = [](const nlohmann::json& j) { return session_file::session_from_json(j, "s.json"); };
    {  // all of a piece: the layer is reattached
        const session_file::SessionLoad l = load(session(trained_layer(narrow, probe), narrow, narrow));
        REQUIRE(l.scenario);
        CHECK(l.warnings.empty());
        REQUIRE(l.attached.trained);
        CHECK(l.attached.trained->layer == 0);
        CHECK(l.attached.trained->opened);
    }
    const std::string detached = " (the trained run opens without its layer in the pipeline)";
    {  // the scenario is a layer of d_model 32, the opened weights have d_model 8
        const session_file::SessionLoad l = load(session(trained_layer(wide, probe), narrow, narrow));
        REQUIRE(l.scenario);
        REQUIRE(l.warnings.size() == 1);
        CHECK(l.warnings.front() == "s.json: key 'trained.opened': d_model 8, but the scenario's layer has d_model 32" + detached);
        REQUIRE(l.attached.trained);  // the run opens, its layer does not
        CHECK(l.attached.trained->layer == -1);
        CHECK_FALSE(l.attached.trained->opened);
    }
    {  // the opened weights are not the run's model
        const session_file::SessionLoad l = load(session(trained_layer(wide, probe), narrow, wide));
        REQUIRE(l.warnings.size() == 1);
        CHECK(l.warnings.front() == "s.json: key 'trained.opened': d_model 32, but trained.model has d_model 8" + detached);
        REQUIRE(l.attached.trained);
        CHECK_FALSE(l.attached.trained->opened);
    }
    {  // a scenario that is no trained layer at all
        const session_file::SessionLoad l = load(session(find_preset(default_preset_name())->scenario, narrow, narrow));
        REQUIRE(l.warnings.size() == 1);
        CHECK(l.warnings.front().find("s.json: key 'trained.opened': ") == 0);
        CHECK_FALSE(l.attached.trained->opened);
    }
    {  // a probe longer than the model reads
        nlohmann::json j = session(trained_layer(narrow, probe), narrow, narrow);
        j["trained"]["probe"]["tokens"] = std::vector<int>(40, 1);
        const session_file::SessionLoad l = load(j);
        REQUIRE(l.warnings.size() == 1);
        CHECK(l.warnings.front() == "s.json: key 'trained.probe.tokens': 40 tokens, but the model reads at most " +
                                        std::to_string(narrow.model.config.max_positions));
    }
    SECTION("opened in the window: a notice, the run and the scenario open, nothing runs the mismatched layer") {
        const std::string path = temp("attnlab-session-trained-mismatch.json");
        const nlohmann::json j = session(trained_layer(wide, probe), narrow, narrow);
        { std::ofstream(path) << j.dump(); }
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.window.open_file(path);
        ui.window.finish_work();  // read off the window's thread: it lands here
        REQUIRE(ui.window.train.state.worker);
        ui.window.train.state.worker->wait_idle();
        ui.frame(4);
        CHECK(has_notice(ui.window, path + ": key 'trained.opened': d_model 8, but the scenario's layer has d_model 32"));
        CHECK(ui.window.train.state.progress.latest);
        CHECK_FALSE(ui::trained_layer_open(ui.window.train.state));
        CHECK(ui.window.shared.session.scenario.d_model == 32);
        CHECK(ui.window.shared.session.trace.ok);
        std::filesystem::remove(path);
    }
}

TEST_CASE("A session's GPT-2 layer, head and ablated heads are checked against the checkpoint they meet", "[model-view][session]") {
    const std::string folder = temp("attnlab-session-gpt2-ranges");
    testing::write_tiny_checkpoint(folder);  // 2 layers of 2 heads, 16 positions
    const std::string path = temp("attnlab-session-gpt2-ranges.json");
    nlohmann::json saved;
    {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.window.model.state.sentence = "the cat";
        REQUIRE(ui.open_model(folder));
        ui.frame(2);
        ui::open_model_layer(ui.window.shared, ui.window.model.state, 1, 1);
        ui.frame(3);
        save(ui, path);
        std::vector<std::string> errors;
        saved = nlohmann::json::parse(*read_text_file(path, kMaxScenarioFileBytes, "session", errors));
    }
    auto open = [&](const nlohmann::json& j, UiDriver& ui) {
        { std::ofstream(path) << j.dump(); }
        ui.frame(2);
        ui.window.open_file(path);
        ui.window.finish_work();  // read off the window's thread: it lands here
        ui.frame(4);
    };
    SECTION("a head and an ablated pair the model does not have: each said with its key and the model's range, and not used") {
        nlohmann::json j = saved;
        j["model"]["head"] = 99;
        j["model"]["ablated"] = {{9, 1}, {2, 2}};
        UiDriver ui(find_preset(default_preset_name())->scenario);
        open(j, ui);
        const ui::ModelViewState& m = ui.window.model.state;
        CHECK(has_notice(ui.window, path + ": key 'model.head': 99, but the model's heads are 1 to 2: not used"));
        CHECK(has_notice(ui.window, path + ": key 'model.ablated': [9, 1] is not a head of the model (the model's layers are 1 to 2, its heads 1 to 2): not ablated"));
        CHECK(m.head == 0);
        CHECK(m.layer == 1);  // the layer itself is the scenario's: reattached
        CHECK(m.pass.ablated == stack::HeadSet{stack::HeadId{1, 1}});
        CHECK(ui::model_choice(m)->head == 0);
    }
    SECTION("a layer the model does not have") {
        nlohmann::json j = saved;
        j["model"]["layer"] = 7;
        UiDriver ui(find_preset(default_preset_name())->scenario);
        open(j, ui);
        CHECK(has_notice(ui.window, path + ": key 'model.layer': 7, but the model's layers are 1 to 2: no layer is opened in the pipeline"));
        CHECK(ui.window.model.state.layer == -1);
    }
    SECTION("a sentence longer than the model reads: said as such, not as a layer that is missing") {
        nlohmann::json j = saved;
        std::string sentence;
        for (int i = 0; i < 40; ++i) sentence += " the cat";
        j["model"]["sentence"] = sentence;
        UiDriver ui(find_preset(default_preset_name())->scenario);
        open(j, ui);
        CHECK(has_notice(ui.window, path + ": key 'model.layer': layer 2 is not opened: the session's sentence cannot run (the text has "));
        CHECK(has_notice(ui.window, "the model reads at most n_positions = 16"));
        CHECK_FALSE(has_notice(ui.window, "is not in " + folder));
        CHECK(ui.window.model.state.layer == -1);
    }
    SECTION("a hand-made session whose scenario is not the layer it names") {
        nlohmann::json j = session_file::session_to_json(find_preset(default_preset_name())->scenario, session_file::ViewChoices{});
        j["model"] = {{"folder", folder}, {"sentence", "the cat"}, {"layer", 1}, {"head", 1}};
        UiDriver ui(find_preset(default_preset_name())->scenario);
        open(j, ui);
        CHECK(has_notice(ui.window, path + ": key 'model.layer': the session's scenario is not layer 1 of the model ("));
        CHECK_FALSE(has_notice(ui.window, "0 \xC3\x97 0"));
        CHECK(ui.window.model.state.layer == -1);
        CHECK(ui.window.model.state.model);
        CHECK(ui.window.shared.session.trace.ok);
    }
    std::filesystem::remove(path);
    std::filesystem::remove_all(folder);
}

TEST_CASE("A session whose trained model is at step 2^30 opens at once, paused at that step", "[train][session]") {
    // The run continues where the file says; its example stream is had without replaying the
    // 2^30 steps before it (that took hours on the window's thread).
    train::ModelFile file = reverse_model(8);
    file.steps = 1 << 30;
    nlohmann::json j = session_file::session_to_json(find_preset(default_preset_name())->scenario, session_file::ViewChoices{});
    j["trained"] = {{"model", train::model_to_json(file)}};
    const std::string path = temp("attnlab-session-trained-late.json");
    { std::ofstream(path) << j.dump(); }
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(2);
    ui.window.open_file(path);
    ui.window.finish_work();  // read off the window's thread: it lands here
    REQUIRE(ui.window.train.state.worker);
    ui.window.train.state.worker->wait_idle();
    ui.frame(2);
    REQUIRE(ui.window.train.state.progress.latest);
    CHECK(ui.window.train.state.progress.steps_done == 1 << 30);
    ui.window.train.state.worker->step_once();
    ui.window.train.state.worker->wait_idle();
    ui.frame(2);
    CHECK(ui.window.train.state.progress.steps_done == (1 << 30) + 1);
    std::filesystem::remove(path);
}

TEST_CASE("Session files with models: a model named at start-up or by a session opens off the window's thread, then what it asked for is done",
          "[session][model-view]") {
    const std::string folder = temp("attnlab-start-model");
    testing::write_tiny_checkpoint(folder);  // 2 layers of 2 heads
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.hold_model_jobs = true;
    auto notice_with = [&](const std::string& part) {
        return std::any_of(ui.window.shared.notices.begin(), ui.window.shared.notices.end(), [&](const ui::Notice& n) { return n.text.find(part) != std::string::npos; });
    };
    SECTION("attnlab --model DIR --layer 2 --head 2: the layer opens in the pipeline once the model has") {
        cli::Options options;
        options.model.path = folder;
        options.model.layer = 2;
        options.model.head = 2;
        options.text = "the cat";
        ui.window.start(options);
        // Nothing was read on the window's thread: the opening is a job, said while it runs.
        CHECK(ui.window.model.state.opening.running());
        CHECK(ui.window.model.state.model == nullptr);
        CHECK(notice_with("Opening the model " + folder));
        ui.hold_model_jobs = false;
        ui.frame(3);
        REQUIRE(ui.window.model.state.model != nullptr);
        CHECK(ui.window.model.state.layer == 1);
        CHECK(ui.window.shared.view.shown_head == 1);
        CHECK(ui.window.shared.view.pane == ui::Pane::Pipeline);
        CHECK(ui.window.model.state.computed_sentence == "the cat");
        CHECK(notice_with("Opened the GPT-2 model " + folder));
        CHECK_FALSE(notice_with("Opening the model"));  // its line is replaced by what came of it
    }
    SECTION("a session's model, with a head ablated, on the tab the session showed") {
        session_file::SessionLoad load;
        load.view.pane = "pipeline";
        load.attached.model = session_file::ModelChoice{folder, "the cat sat", -1, 0, {{0, 1}, {7, 0}}, "s.json", {}, {}, {}, {}, {}};
        ui.window.start(cli::Options{}, load);
        CHECK(ui.window.model.state.opening.running());
        CHECK(ui.window.model.state.model == nullptr);
        ui.hold_model_jobs = false;
        ui.frame(3);
        REQUIRE(ui.window.model.state.model != nullptr);
        CHECK(ui.window.shared.view.pane == ui::Pane::Pipeline);  // not the model view the opening shows
        // The head the model has is ablated in the first pass; the one it has not is said.
        CHECK(ui.window.model.state.pass.ok);
        CHECK(ui.window.model.state.pass.ablated == stack::HeadSet{stack::HeadId{0, 1}});
        const ModelPass expected = lm::forward_text(*ui.window.model.state.model, "the cat sat", {{0, 1}});
        CHECK(ui.window.model.state.pass.layers.back().head[0].weights == expected.layers.back().head[0].weights);
        CHECK(notice_with("s.json: key 'model.ablated': [8, 1] is not a head of the model"));
    }
    SECTION("a session's model folder that cannot be opened: said, the rest of the session open") {
        session_file::SessionLoad load;
        load.attached.model = session_file::ModelChoice{folder + "-missing", "the cat", -1, 0, {}, "s.json", {}, {}, {}, {}, {}};
        ui.window.start(cli::Options{}, load);
        ui.hold_model_jobs = false;
        ui.frame(2);
        CHECK(ui.window.model.state.model == nullptr);
        CHECK(notice_with("The session's model folder " + folder + "-missing cannot be opened"));
    }
    std::filesystem::remove_all(folder);
}

namespace {

// A GPT-2 checkpoint whose layers have GPT-2 small's shape (d_model 768, 12 heads of 64, d_ff
// 3072: W_Q, W_K, W_V, W_O, W_1, W_2 are 7.1 million numbers a layer, the 190 MB a session
// once wrote for the layer opened) but 2 layers and the tiny byte vocabulary: a session's
// file depends on the layer opened and its edits alone, never on how many layers or tokens
// the model has, so this exercises what GPT-2 small itself does (gpt2_bench --keep writes that
// one: 500 MB and a minute on this machine) with a 58 MB folder.
void write_gpt2_small_layers(const std::string& folder) {
    gpt2::Config config = testing::tiny_config();
    config.n_layer = 2;
    config.n_head = 12;
    config.n_embd = 768;
    config.n_inner = 3072;
    config.n_positions = 64;
    std::filesystem::remove_all(folder);
    std::string error;
    REQUIRE(gpt2::write_checkpoint(folder, gpt2::random_checkpoint(config, 11, testing::tiny_checkpoint().tokenizer),
                                   gpt2::CheckpointWriteOptions{}, &error));
}

std::string trace_text(const Trace& trace) { return dump_json(trace_to_json(trace, false)); }

}  // namespace

TEST_CASE("A session with GPT-2 small's layer keeps the model by reference: under 1 MB, reopened with the same trace, a changed or missing model said",
          "[model-view][session]") {
    namespace fs = std::filesystem;
    const std::string folder = temp("attnlab-session-gpt2-small-layers");
    write_gpt2_small_layers(folder);
    const std::string path = temp("attnlab-session-gpt2-small-layers.json");
    const std::string sentence = "the cat sat on the mat";
    const std::string autosaves = temp("attnlab-session-gpt2-small-layers-autosave");
    Scenario saved_scenario;
    std::string saved_trace;
    Matrix last_weights;
    {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.window.start_autosave(autosaves, std::chrono::milliseconds(0), true);
        ui.window.autosave_tick();  // what the run opened with: no autosave for it
        ui.frame(2);
        ui.window.model.state.sentence = sentence;
        REQUIRE(ui.open_model(folder));
        ui.frame(2);
        ui.window.model.state.ablation_toggles.push_back(stack::HeadId{0, 4});  // layer 1's head 5, before the layer opened
        ui.frame(2);
        ui.window.finish_work();
        ui.frame(2);
        ui::open_model_layer(ui.window.shared, ui.window.model.state, 1, 2);  // layer 2, head 3
        ui.frame(3);
        REQUIRE(ui.window.model.state.layer == 1);
        const Scenario& layer = ui.window.shared.session.scenario;
        CHECK(layer.w_q.size() + layer.w_k.size() + layer.w_v.size() + layer.w_o.size() + layer.block.w_1.size() + layer.block.w_2.size() ==
              4 * 768 * 768 + 2 * 768 * 3072);
        // An edit of W_Q and of X, as the pipeline's cells make them, and a toggle.
        ui.window.shared.session.push(edits::SetCell{edits::MatrixId::WQ, 3, 700, 2.5f});
        ui.window.shared.session.push(edits::SetCell{edits::MatrixId::X, 1, 5, -4.0f});
        ui.window.shared.session.push(edits::SetScale{false});
        ui.frame(3);
        ui.window.finish_work();
        ui.frame(3);
        REQUIRE(ui.window.model.state.pass.ok);
        REQUIRE(ui.window.shared.session.trace.ok);
        saved_scenario = ui.window.shared.session.scenario;
        saved_trace = trace_text(ui.window.shared.session.trace);
        last_weights = ui.window.model.state.pass.layers[1].head[2].weights;
        save(ui, path);
        // The autosave a crash leaves behind: written as the window writes it, its lock gone
        // with the run (the window is not closed normally: its file stays).
        REQUIRE(ui.window.recovery.state.saver);
        ui.window.recovery.state.saver->wait();
        ui.window.autosave_tick();
        ui.window.recovery.state.saver->wait();
    }
    REQUIRE(fs::file_size(path) < 1024 * 1024);
    std::vector<std::string> errors;
    const nlohmann::json file = nlohmann::json::parse(*read_text_file(path, kMaxScenarioFileBytes, "session", errors));
    CHECK_FALSE(file.contains("scenario"));  // the layer is the model's: only what was changed in it is written
    CHECK(file["model"]["layer_edits"]["cells"]["w_q"] == nlohmann::json::parse("[[3, 700, 2.5]]"));
    CHECK(file["model"]["layer_edits"]["cells"]["embeddings"] == nlohmann::json::parse("[[1, 5, -4.0]]"));
    CHECK(file["model"]["layer_edits"]["settings"] == nlohmann::json::parse(R"({"scale": false})"));
    CHECK(file["model"]["ablated"] == nlohmann::json::parse("[[1, 5]]"));
    CHECK(file["model"]["files"].size() == 4);  // config.json, merges.txt, model.safetensors, vocab.json
    const std::string previous_work = find_preset(default_preset_name())->scenario.name;

    SECTION("opened again: the layer, its edits and the ablation, the same trace") {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.window.open_file(path);
        ui.window.finish_work();  // read off the window's thread: it lands here
        ui.frame(4);
        ui.window.finish_work();
        ui.frame(3);
        const ui::ModelViewState& m = ui.window.model.state;
        REQUIRE(m.model);
        CHECK(m.layer == 1);
        CHECK(m.head == 2);
        CHECK(m.pass.ablated == stack::HeadSet{stack::HeadId{0, 4}});
        CHECK(reflect::equal(ui.window.shared.session.scenario, saved_scenario));
        CHECK(trace_text(ui.window.shared.session.trace) == saved_trace);
        CHECK(m.pass.layers[1].head[2].weights == last_weights);
        for (const ui::Notice& n : ui.window.shared.notices) CHECK_FALSE(n.error);
        // The layer made from the model is the file's scenario: nothing unsaved, the title names the file.
        CHECK_FALSE(ui.window.files.has_unsaved_work(ui.window.shared.session.scenario));
        CHECK(ui.window.files.title(ui.window.shared.session.scenario) == "Attention Lab \xE2\x80\x94 " + fs::path(path).filename().string());
        // Saved again, the file says the same.
        const std::string again = temp("attnlab-session-gpt2-small-layers-again.json");
        save(ui, again);
        CHECK(nlohmann::json::parse(*read_text_file(again, kMaxScenarioFileBytes, "session", errors)) == file);
        fs::remove(again);
    }
    SECTION("after a crash: the autosave (as small) is offered and restores the layer, its edits and the ablation") {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.window.start_autosave(autosaves, std::chrono::milliseconds(0), false);
        REQUIRE(ui.window.recovery.state.orphans.size() == 1);
        CHECK(fs::file_size(ui.window.recovery.state.orphans[0].path) < 1024 * 1024);
        ui.frame(2);
        REQUIRE(ui.window.restore_orphan(0));
        ui.frame(4);
        ui.window.finish_work();
        ui.frame(3);
        for (const ui::Notice& n : ui.window.shared.notices) CHECK_FALSE(n.error);
        CHECK(ui.window.model.state.layer == 1);
        CHECK(ui.window.model.state.pass.ablated == stack::HeadSet{stack::HeadId{0, 4}});
        CHECK(reflect::equal(ui.window.shared.session.scenario, saved_scenario));
        CHECK(trace_text(ui.window.shared.session.trace) == saved_trace);
        for (const auto& entry : fs::directory_iterator(autosaves)) CHECK(entry.path().extension() != ".unreadable");
    }
    SECTION("read without a window (attnlab --scenario FILE --print): the layer made again from the folder") {
        cli::Options options;
        options.scenario_file = path;
        std::ostringstream err;
        const std::optional<Scenario> scenario = cli::load_scenario(options, err);
        INFO(err.str());
        REQUIRE(scenario);
        CHECK(err.str().empty());
        CHECK(reflect::equal(*scenario, saved_scenario));
    }
    SECTION("the model changed since: said, naming the folder and the file, and the session opens on the model as it is") {
        const fs::path weights = fs::path(folder) / "model.safetensors";
        fs::last_write_time(weights, fs::last_write_time(weights) + std::chrono::hours(1));
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.window.open_file(path);
        ui.window.finish_work();  // read off the window's thread: it lands here
        ui.frame(4);
        ui.window.finish_work();
        ui.frame(3);
        CHECK(has_notice(ui.window, "The session's model folder " + folder + " has changed since the session was saved (model.safetensors: "));
        CHECK(ui.window.model.state.layer == 1);  // the same weights here: the layer and its edits as saved
        CHECK(reflect::equal(ui.window.shared.session.scenario, saved_scenario));
        cli::Options options;
        options.scenario_file = path;
        std::ostringstream err;
        CHECK(cli::load_scenario(options, err));
        CHECK(err.str().find("warning: the session's model folder " + folder + " has changed since the session was saved (model.safetensors: ") !=
              std::string::npos);
    }
    SECTION("the model missing: said, naming the folder; the sentence and the view kept, no seeded layer in its place") {
        fs::rename(folder, folder + "-moved");
        UiDriver ui(find_preset(default_preset_name())->scenario);
        ui.frame(2);
        ui.window.open_file(path);
        ui.window.finish_work();  // read off the window's thread: it lands here
        ui.frame(4);
        ui.window.finish_work();
        ui.frame(2);
        CHECK(has_notice(ui.window, "The session's model folder " + folder + " cannot be opened: the rest of the session is open without it"));
        CHECK_FALSE(ui.window.model.state.model);
        CHECK(ui.window.model.state.sentence == sentence);
        CHECK(ui.window.shared.session.scenario.name == previous_work);  // the pipeline keeps what it showed
        CHECK(ui.window.shared.session.trace.ok);
        cli::Options options;
        options.scenario_file = path;
        std::ostringstream err;
        CHECK_FALSE(cli::load_scenario(options, err));
        CHECK(err.str().find(path + ": the session's scenario is layer 2 of the model in " + folder + ", which cannot be opened") == 0);
        fs::rename(folder + "-moved", folder);
    }
    fs::remove(path);
    fs::remove_all(folder);
    fs::remove_all(autosaves);
}

TEST_CASE("A session's layer kept by reference and its model's files: malformed is refused, naming the key", "[session]") {
    nlohmann::json j = {{"format", "attnlab-session"}, {"version", 2}, {"view", nlohmann::json::object()}};
    j["model"] = {{"folder", "/m"}, {"layer", 2}, {"layer_edits", {{"cells", {{"w_q", {{0, 1, 2.5}}}}}, {"settings", {{"mask", "causal"}}}}}};
    auto load = [](const nlohmann::json& session) { return session_file::session_from_json(session, "s.json"); };
    {
        const session_file::SessionLoad l = load(j);
        CHECK(l.errors.empty());
        CHECK_FALSE(l.scenario);
        CHECK(l.scenario_in_model);
        REQUIRE(l.attached.model);
        REQUIRE(l.attached.model->layer_edits);
        CHECK(edited_cell_count(*l.attached.model->layer_edits) == 1);
    }
    auto first_error = [&](const nlohmann::json& session) {
        const session_file::SessionLoad l = load(session);
        CHECK_FALSE(l.scenario);
        return l.errors.empty() ? std::string() : l.errors.front();
    };
    nlohmann::json bad = j;
    bad["scenario"] = {{"tokens", {"a", "b"}}};
    CHECK(first_error(bad) == "s.json: key 'model.layer_edits': the session's scenario is the model's layer, but key 'scenario' gives one too");
    bad = j;
    bad["version"] = 1;
    CHECK(first_error(bad) == "s.json: key 'model.layer_edits': unknown key in a version-1 session");
    bad = j;
    bad["model"]["layer"] = 0;
    CHECK(first_error(bad) == "s.json: key 'model.layer_edits': edits of a layer, but key 'model.layer' names none");
    bad = j;
    bad["model"]["layer_edits"]["cells"]["w_q"] = {{0, 1}};
    CHECK(first_error(bad).find("s.json: key 'model.layer_edits.cells.w_q': entry 1: expected [row, column, value]") == 0);
    bad = j;
    bad["model"]["layer_edits"]["colour"] = 1;
    CHECK(first_error(bad) == "s.json: key 'model.layer_edits.colour': unknown key");
    bad = j;
    bad["model"]["files"] = {{{"name", "config.json"}, {"bytes", -1}, {"modified_ns", 0}}};
    CHECK(first_error(bad).find("s.json: key 'model.files': expected a list of {") == 0);
    bad = j;
    bad.erase("model");
    CHECK(first_error(bad) == "s.json: key 'scenario' is missing");
}

TEST_CASE("A session's training history is checked key by key: a malformed one is refused with its key, the run opens without it",
          "[train][session]") {
    const Scenario s = find_preset(default_preset_name())->scenario;
    train::ModelFile file = reverse_model(8);
    file.steps = 3;
    auto evaluation = [](int step, double loss, int correct, int scored) {
        train::Evaluation e;
        e.step = step;
        e.loss = loss;
        e.correct = correct;
        e.scored = scored;
        e.accuracy = static_cast<double>(correct) / scored;
        return e;
    };
    train::RunHistory history;
    history.start = evaluation(0, 2.0, 10, 40);
    for (int step = 1; step <= 3; ++step) history.steps.push_back({step, 2.0 - 0.1 * step, 1.0, 0.01f});
    history.evaluations.push_back(evaluation(2, 1.5, 20, 40));
    history.snapshots.push_back({0, file.model.params});
    history.snapshots.push_back({3, file.model.params});
    history.snapshot_interval = 3;
    nlohmann::json base = session_file::session_to_json(s, session_file::ViewChoices{});
    base["trained"] = {{"model", train::model_to_json(file)}, {"history", train::history_to_json(history, file)}};
    CHECK_FALSE(base["trained"]["history"]["snapshots"][1].contains("parameters"));  // the model's own weights, not written twice
    auto load = [](const nlohmann::json& j) { return session_file::session_from_json(j, "s.json"); };
    {
        const session_file::SessionLoad l = load(base);
        REQUIRE(l.warnings.empty());
        REQUIRE(l.attached.trained);
        REQUIRE(l.attached.trained->history);
        const train::RunHistory& h = *l.attached.trained->history;
        CHECK(h.steps.size() == 3);
        CHECK(h.steps[2].loss == Approx(1.7));
        CHECK(h.evaluations.size() == 1);
        CHECK(h.evaluations[0].accuracy == 0.5);
        CHECK(h.start.accuracy == 0.25);
        CHECK(h.snapshots.size() == 2);
        CHECK(same_bits(h.snapshots[1].params, file.model.params));
        CHECK(h.snapshot_interval == 3);
    }
    nlohmann::json old = base;
    old["trained"].erase("history");
    REQUIRE(load(old).attached.trained);
    CHECK_FALSE(load(old).attached.trained->history);  // a session written before histories: none, as before

    // Each fault: the key named, what was expected, the run opened without its history.
    auto refused = [&](const std::function<void(nlohmann::json&)>& spoil, const std::string& message) {
        nlohmann::json j = base;
        spoil(j["trained"]["history"]);
        const session_file::SessionLoad l = load(j);
        REQUIRE(l.scenario);
        REQUIRE(l.attached.trained);
        CHECK_FALSE(l.attached.trained->history);
        REQUIRE_FALSE(l.warnings.empty());
        CHECK(l.warnings.front() == message + " (the trained run opens without its history)");
    };
    refused([](nlohmann::json& h) { h["colour"] = 1; },
            "s.json: key 'trained.history.colour': unknown key (expected evaluations, snapshot_interval, snapshots, start, steps)");
    refused([](nlohmann::json& h) { h.erase("start"); }, "s.json: key 'trained.history.start': missing");
    refused([](nlohmann::json& h) { h["steps"]["loss"] = "low"; },
            "s.json: key 'trained.history.steps.loss': expected an array of at most 20000 numbers, found a string");
    refused([](nlohmann::json& h) { h["steps"]["loss"].erase(2); },
            "s.json: key 'trained.history.steps.loss': expected 3 entries (as many as 'trained.history.steps.step'), found 2");
    refused([](nlohmann::json& h) { h["steps"]["step"][0] = -1; },
            "s.json: key 'trained.history.steps.step' entry 1: expected a whole number from 1 to 3 (steps ascend), found -1");
    refused([](nlohmann::json& h) { h["steps"]["step"][2] = 2; },
            "s.json: key 'trained.history.steps.step' entry 3: expected a whole number from 3 to 3 (steps ascend), found 2");
    refused([](nlohmann::json& h) { h["steps"]["step"][1] = 1.5; },
            "s.json: key 'trained.history.steps.step' entry 2: expected a whole number from 2 to 3 (steps ascend), found 1.5");
    refused([](nlohmann::json& h) { h["steps"]["gradient_norm"][0] = nullptr; },
            "s.json: key 'trained.history.steps.gradient_norm' entry 1: expected a finite number 0 or more, found null");
    refused([](nlohmann::json& h) { h["evaluations"]["correct"][0] = 41; },
            "s.json: key 'trained.history.evaluations.correct' entry 1: 41 right, but 'scored' counts 40: expected at most that");
    refused([](nlohmann::json& h) { h["evaluations"]["step"][0] = 4; },
            "s.json: key 'trained.history.evaluations.step' entry 1: expected a whole number from 0 to 3 (steps ascend), found 4");
    refused([](nlohmann::json& h) { h["start"]["step"] = 1; },
            "s.json: key 'trained.history.start.step': expected a step before the first of 'trained.history.steps.step' (1), found 1");
    refused([](nlohmann::json& h) { h["snapshot_interval"] = 0; },
            "s.json: key 'trained.history.snapshot_interval': expected 1 to 1073741824, found 0");
    refused([](nlohmann::json& h) { h["snapshots"][0]["parameters"]["layer0.w_q"].erase(0); },
            "s.json: key 'trained.history.snapshots[0].parameters.layer0.w_q': expected 8 rows (a 8×8 tensor, each row an array), found 7 rows");
    refused([](nlohmann::json& h) { h["snapshots"][0].erase("parameters"); },
            "s.json: key 'trained.history.snapshots[0].parameters': missing (only the snapshot at the model's own step 3 leaves out "
            "its weights: they are the model's)");
    refused([](nlohmann::json& h) { h["snapshots"][1]["step"] = 0; },
            "s.json: key 'trained.history.snapshots[1].step': expected 1 to 3, found 0");
    refused([](nlohmann::json& h) { h["snapshots"] = nlohmann::json::array(); for (int i = 0; i < 40; ++i) h["snapshots"].push_back({{"step", 3}}); },
            "s.json: key 'trained.history.snapshots': expected an array of at most 32 snapshots (of " +
                std::to_string(train::parameter_count(reverse_model(8).model.params)) + " numbers each), found 40 entries");
}
