// The session fuzz target's work on what it must handle: every input it ever crashed on
// (tests/fuzz/regressions/session/), sessions whose models do not fit, and every truncation
// of a session that references both models.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz/fuzz_session.hpp"
#include "tensor/reflect.hpp"
#include "attention/serialize.hpp"
#include "train/model_file.hpp"

namespace {

bool exercise(const std::string& text) {
    return attn::fuzz::exercise_session(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

std::string read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A session that references both models: a trained run (d_model 8, 3 steps, with its history)
// with its layer 1 opened as the scenario, and a GPT-2 folder with a layer, a head and an ablated head.
std::string both_models_session() {
    using namespace attn;
    train::TrainSettings s;
    s.task.kind = train::TaskKind::Reverse;
    s.model.d_model = 8;
    s.model.heads = 1;
    s.model.layers = 1;
    s.seed = 1;
    s.evaluate_every = 0;
    std::vector<std::string> errors;
    auto trainer = train::Trainer::create(s, errors);
    REQUIRE(trainer);
    train::RunHistory history;
    history.start = trainer->evaluate();
    trainer->run(3);
    session_file::TrainedChoice trained;
    trained.file = train::model_file_of(*trainer);
    history.steps = trainer->history();
    history.evaluations = trainer->evaluations();
    history.snapshots = trainer->snapshots();
    history.snapshot_interval = trainer->snapshot_interval();
    trained.history = history;
    const train::ModelInput& input = trainer->probe().input;
    trained.probe_tokens = input.tokens;
    trained.probe_source = input.source;
    trained.layer = 0;
    trained.opened = trained.file;
    const train::ForwardPass pass = train::forward(trainer->model(), input);
    REQUIRE(pass.ok);
    const Scenario scenario = train::trained_layer_scenario(trainer->model(), input, pass, 0);
    session_file::ModelChoice model;
    model.folder = "gpt2";
    model.sentence = "the cat";
    model.layer = 1;
    model.head = 1;
    model.ablated = {{0, 1}};
    return dump_json(session_file::session_to_json(scenario, {}, {model, trained}), 1);
}

// The fuzz checkpoint's layer 2 for "the cat" (layer 1's head 2 ablated), as a session keeps
// it by reference: a cell of W_V and one of X edited, the mask turned to a window of 2.
attn::Scenario edited_fuzz_layer(attn::Scenario* base = nullptr) {
    using namespace attn;
    const ModelPass pass = lm::forward_text(fuzz::session_model(), "the cat", {{0, 1}});
    REQUIRE(pass.ok);
    Scenario layer = session_file::model_layer(fuzz::session_model(), pass, 1);
    if (base != nullptr) *base = layer;
    layer.w_v.edit()(3, 2) = 1.5f;
    layer.target.embeddings(1, 4) = -2.0f;
    layer.mask = MaskKind::SlidingWindow;
    layer.window = 2;
    return layer;
}

std::string layer_by_reference_session() {
    using namespace attn;
    Scenario base;
    const Scenario edited = edited_fuzz_layer(&base);
    session_file::ModelChoice model;
    model.folder = "gpt2";
    model.sentence = "the cat";
    model.layer = 1;
    model.head = 1;
    model.ablated = {{0, 1}};
    model.layer_base = base;
    return dump_json(session_file::session_to_json(edited, {}, {model, std::nullopt}), 1);
}

}  // namespace

// Not run by default: writes the seeds of tests/fuzz/regressions/session/ again.
TEST_CASE("the session fuzzer's seeds", "[.write-seeds]") {
    std::ofstream(std::filesystem::path(ATTNLAB_FUZZ_REGRESSIONS) / "session" / "seed-both-models.json") << both_models_session();
    std::ofstream(std::filesystem::path(ATTNLAB_FUZZ_REGRESSIONS) / "session" / "seed-layer-by-reference.json") << layer_by_reference_session();
}

TEST_CASE("a session that keeps a model's layer by reference is made again from the model with its edits, and every truncation of it runs") {
    const std::string text = layer_by_reference_session();
    const auto load = attn::session_file::session_from_text(text, "layer.json");
    REQUIRE(load.errors.empty());
    CHECK_FALSE(load.scenario);
    REQUIRE(load.scenario_in_model);
    REQUIRE(load.attached.model);
    REQUIRE(load.attached.model->layer_edits);
    const attn::ModelPass pass = attn::lm::forward_text(attn::fuzz::session_model(), "the cat", {{0, 1}});
    const attn::session_file::LayerReopen reopened = attn::session_file::reopen_layer(*load.attached.model, attn::fuzz::session_model(), pass);
    REQUIRE(reopened.scenario);
    CHECK(attn::reflect::equal(*reopened.scenario, edited_fuzz_layer()));
    CHECK(exercise(text));
    for (std::size_t cut = 0; cut < text.size(); cut += 1 + text.size() / 300) {
        INFO("cut at " << cut);
        CHECK(exercise(text.substr(0, cut)));
    }
}

TEST_CASE("a session that references both models, and every truncation of it, runs without a crash") {
    const std::string text = both_models_session();
    CHECK(exercise(text));
    const auto load = attn::session_file::session_from_text(text, "both.json");
    REQUIRE(load.scenario);
    REQUIRE(load.attached.trained);
    CHECK(load.attached.trained->layer == 0);   // its opened layer fits its scenario
    REQUIRE(load.attached.trained->history);
    CHECK(load.attached.trained->history->steps.size() == 3);
    REQUIRE(load.attached.model);
    for (std::size_t cut = 0; cut < text.size(); cut += 1 + text.size() / 300) {
        INFO("cut at " << cut);
        CHECK(exercise(text.substr(0, cut)));
    }
}

TEST_CASE("every input the session fuzzer crashed on, and its seeds, run without a crash") {
    namespace fs = std::filesystem;
    int files = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(ATTNLAB_FUZZ_REGRESSIONS) / "session")) {
        if (entry.path().filename() == "README.md") continue;
        INFO(entry.path().string());
        CHECK(exercise(read(entry.path())));
        ++files;
    }
    CHECK(files >= 2);
}

TEST_CASE("a session's model choice that does not fit the checkpoint is left out piece by piece, with a notice each") {
    using namespace attn;
    const lm::Model& model = fuzz::session_model();
    const ModelPass pass = lm::forward_text(model, "the cat");
    REQUIRE(pass.ok);
    session_file::ModelChoice choice;
    choice.source = "s.json";
    choice.layer = 1;
    choice.head = 98;
    choice.ablated = {{0, 1}, {5, 0}, {1, 7}};
    Scenario unrelated;   // the default scenario: not a layer of this model
    session_file::ModelRestore r = session_file::check_model_choice(choice, fuzz::session_model(), "the cat", pass, unrelated);
    CHECK(r.ablated == stack::HeadSet{stack::HeadId{0, 1}});
    CHECK(r.layer == -1);
    REQUIRE(r.notices.size() == 3);
    CHECK(r.notices[0] == "s.json: key 'model.ablated': [6, 1] is not a head of the model (the model's layers are 1 to 2, its heads 1 to 2): not ablated");
    CHECK(r.notices[2].find("s.json: key 'model.layer': the session's scenario is not layer 2 of the model (") == 0);

    // The layer itself as the scenario: opened, and the head out of range said and replaced.
    const Scenario layer = model.layer_scenario(pass.tokens, 1, lm::layer_input(pass.layers[1]), {});
    r = session_file::check_model_choice(choice, fuzz::session_model(), "the cat", pass, layer);
    CHECK(r.layer == 1);
    CHECK(r.head == 0);
    CHECK(r.notices.back() == "s.json: key 'model.head': 99, but the model's heads are 1 to 2: not used");

    // A layer past the model, and a sentence past its positions.
    choice.layer = 2;
    CHECK(session_file::check_model_choice(choice, fuzz::session_model(), "the cat", pass, layer).notices.back() ==
          "s.json: key 'model.layer': 3, but the model's layers are 1 to 2: no layer is opened in the pipeline");
    choice.layer = 0;
    const std::string long_text(40, 'a');
    const ModelPass too_long = lm::forward_text(model, long_text);
    CHECK_FALSE(too_long.ok);
    const std::string notice = session_file::check_model_choice(choice, fuzz::session_model(), long_text, too_long, layer).notices.back();
    CHECK(notice.find("layer 1 is not opened: the session's sentence cannot run (") != std::string::npos);
    CHECK(notice.find("16") != std::string::npos);   // n_positions, the limit the text passed
}
