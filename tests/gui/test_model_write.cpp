// The model view's writing, driven headless (ui_driver.hpp): Step writes the token a full
// recompute chooses and the pass of the whole text follows; Run goes on frame after frame
// without the window waiting for it and Stop ends it within one token; a bar clicked writes
// that token; an ablation refills the caches from its layer; Undo takes the last token back.
#include <catch2/catch.hpp>

#include <filesystem>

#include "model/language_model.hpp"
#include "model_fixtures.hpp"
#include "teaching/presets.hpp"
#include "options.hpp"
#include "session_file.hpp"
#include "ui/panel_model.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;
using attn::testing::write_model;

namespace {

// The caches' logits against the whole text run again from its first token.
void check_cached_equals_recomputed(const ui::ModelViewState& m) {
    REQUIRE(m.write.session);
    const ModelPass full = lm::forward_ids(*m.model, ui::written_text_ids(m), m.pass.ablated);
    REQUIRE(full.ok);
    const Matrix& cached = m.write.session->writing.logits;
    REQUIRE(cached.cols() == full.logits.cols());
    CHECK((cached - full.logits.bottomRows(1)).cwiseAbs().maxCoeff() < 1e-5f * std::max(1.0f, full.logits.cwiseAbs().maxCoeff()));
}

}  // namespace

TEST_CASE("Model view Write: Step writes what a full recompute chooses, the pass of the whole text follows, Undo takes it back",
          "[model-view][generate]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    REQUIRE(ui.open_model(write_model("attnlab-gui-write-step")));
    ui.frame(2);
    ui::ModelViewState& m = ui.window.model.state;
    const std::vector<int> sentence = m.pass.token_ids;
    const ModelPass before = lm::forward_ids(*m.model, sentence);
    const int greedy = stack::top_k(before.logits.bottomRows(1), 1).front();
    ui.click(ui.centre("model.write.step"));
    ui.frame(3);
    REQUIRE(m.write.written.size() == 1);
    CHECK(m.write.written[0].id == greedy);
    std::vector<int> text = sentence;
    text.push_back(greedy);
    CHECK(m.pass.token_ids == text);  // the pass of the whole text landed
    CHECK(ui.text("model.tokens").back() == '*');
    check_cached_equals_recomputed(m);
    // A session keeps the text written after the sentence, and its ids as the pass read them when
    // the tokenizer would make others of the text: opened again, the pass reads those ids.
    REQUIRE(ui::model_choice(m));
    const session_file::ModelChoice choice = *ui::model_choice(m);
    CHECK(choice.sentence == m.computed_sentence + m.model->text_of({greedy}));
    std::vector<std::string> why;
    CHECK(choice.ids == (m.model->encode(choice.sentence, why) == text ? std::vector<int>{} : text));
    ui.click(ui.centre("model.write.undo"));
    ui.frame(3);
    CHECK(m.write.written.empty());
    CHECK(m.pass.token_ids == sentence);
    check_cached_equals_recomputed(m);
}

TEST_CASE("Model view Write: a session opened again reads the written text by the ids the pass read", "[model-view][generate][session]") {
    std::optional<session_file::ModelChoice> choice;
    std::vector<int> text;
    {
        UiDriver ui(find_preset(default_preset_name())->scenario);
        REQUIRE(ui.open_model(write_model("attnlab-gui-write-session")));
        ui.frame(2);
        ui::ModelViewState& m = ui.window.model.state;
        ui.click(ui.centre("model.write.step"));
        ui.frame(3);
        REQUIRE(m.write.written.size() == 1);
        text = m.pass.token_ids;
        choice = ui::model_choice(m);
        REQUIRE(choice);
    }
    // As a session keeps them when the tokenizer makes other tokens of the text (a written
    // token can be a piece of a character): the pass reads these ids, not the text's.
    choice->ids = text;
    UiDriver ui(find_preset(default_preset_name())->scenario);
    session_file::SessionLoad load;
    load.attached.model = choice;
    ui.window.start(cli::Options{}, load);
    ui.frame(3);
    const ui::ModelViewState& m = ui.window.model.state;
    REQUIRE(m.model);
    CHECK(m.pass.token_ids == text);
    CHECK(m.computed_sentence == choice->sentence);
    CHECK(m.pass.logits == lm::forward_ids(*m.model, text).logits);
    // Saved again untouched: the same ids, unless the text's own tokens are they.
    std::vector<std::string> why;
    REQUIRE(ui::model_choice(m));
    CHECK(ui::model_choice(m)->ids == (m.model->encode(choice->sentence, why) == text ? std::vector<int>{} : text));
}

TEST_CASE("Model view Write: Run writes frame after frame without the window waiting, Stop ends it within one token",
          "[model-view][generate]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    REQUIRE(ui.open_model(write_model("attnlab-gui-write-run")));
    ui.frame(2);
    ui::ModelViewState& m = ui.window.model.state;
    m.write.run_count = 12;  // the model reads 16 positions
    ui.hold_model_jobs = true;  // frames never wait for a job: what the window does
    ui.click(ui.centre("model.write.run"));
    size_t written = 0;
    bool seen_running = false;
    for (int frame = 0; frame < 6; ++frame) {
        ui.frame();
        seen_running = seen_running || m.write.job.running();
        CHECK(m.write.written.size() <= written + 1);  // at most one token a frame: each is its own job
        written = m.write.written.size();
    }
    CHECK(seen_running);
    CHECK(ui.text("model.write.status").find("writing token") != std::string::npos);
    ui.click(ui.centre("model.write.stop"));
    const size_t at_stop = m.write.written.size();
    ui.hold_model_jobs = false;
    ui.frame(4);
    CHECK(m.write.remaining == 0);
    CHECK_FALSE(m.write.job.running());
    CHECK(m.write.written.size() <= at_stop + 1);  // the token under way, and no other
    CHECK(m.write.written.size() < 12);
    CHECK(m.pass.token_ids == ui::written_text_ids(m));  // once writing stopped, the pass caught up
    check_cached_equals_recomputed(m);
    // The grid's maps grew by the written rows (the pass holds them now).
    CHECK(static_cast<size_t>(m.pass.layers[0].n_queries) == m.pass.token_ids.size());
}

TEST_CASE("Model view Write: a bar clicked writes that token, top-p cuts the bars, an ablation refills the caches from its layer",
          "[model-view][generate]") {
    UiDriver ui(find_preset(default_preset_name())->scenario);
    REQUIRE(ui.open_model(write_model("attnlab-gui-write-bars")));
    ui.frame(2);
    ui::ModelViewState& m = ui.window.model.state;
    m.write.select = true;
    m.write.greedy = false;
    m.write.temperature = 1.0f;
    m.write.sampler.top_p = 0.5f;
    ui.frame(2);
    REQUIRE(m.write.next);
    CHECK(m.write.next->top_p_cut == static_cast<int>(m.write.next->kept.size()));
    double kept = 0;
    for (int id : m.write.next->kept) kept += m.write.next->tempered[static_cast<size_t>(id)];
    CHECK(kept >= 0.5);
    const int third = std::stoi(ui.text("model.write.next.bar3"));
    ui.click(ui.centre("model.write.next.bar3"));
    ui.frame(3);
    REQUIRE(m.write.written.size() == 1);
    CHECK(m.write.written[0].id == third);
    CHECK(m.write.written[0].forced);
    // Head 1 of layer 2 ablated: the caches from layer 2 on are filled again from the recomputed pass.
    m.ablation_toggles.push_back({1, 0});
    ui.frame(3);
    CHECK(m.pass.ablated.heads.count({1, 0}) == 1);
    check_cached_equals_recomputed(m);
    ui.click(ui.centre("model.write.step"));
    ui.frame(3);
    CHECK(m.write.written.size() == 2);
    check_cached_equals_recomputed(m);
}
