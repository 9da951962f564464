// QK-norm and attention sinks in the window (headless, tests/gui/ui_driver.hpp): each preset's
// new matrices drawn as cards, their tooltips with the numbers, QK-norm's weights edited in
// place and both steps switched in the side bar.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "teaching/presets.hpp"
#include "explained.hpp"
#include "../joined.hpp"
#include "ui/arithmetic.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;
using Catch::Matchers::Contains;

namespace {

using testing::joined;

}  // namespace

TEST_CASE("the QK-norm and attention-sinks presets draw their new cards, with cells large enough to read", "[qk_norm][sinks][layout]") {
    const std::vector<std::pair<const char*, std::vector<const char*>>> presets = {
        {"qk-norm", {"head0.q_before_norm", "head0.k_before_norm", "q_norm", "k_norm", "head0.q_normed", "head0.k_normed"}},
        {"attention-sinks", {"head0.sink_weights", "head0.weights"}}};
    for (const auto& [name, cards] : presets) {
        INFO(name);
        UiDriver ui(find_preset(name)->scenario);
        ui.frame(4);
        REQUIRE(ui.window.shared.session.trace.ok);
        for (const char* card : cards) {
            INFO(card);
            const ui::HeatmapLayout* h = ui.heatmap(card);
            REQUIRE(h != nullptr);
            CHECK(h->cell_w >= 6.0f);
            CHECK(h->cell_h >= 6.0f);
        }
    }
}

TEST_CASE("QK-norm's normed rows are not drawn twice, and the sink card follows the weights", "[qk_norm][sinks][layout]") {
    SECTION("QK-norm: the normed rows are what RoPE turns, not drawn again as \"before RoPE\"") {
        UiDriver qk(find_preset("qk-norm")->scenario);
        qk.frame(3);
        CHECK(qk.heatmap("head0.q_unrotated") == nullptr);
        CHECK(qk.text("controls.qk_norm") == "each head, RMSNorm \xC2\xB7 w (Qwen3)");
        CHECK(qk.heatmap("head0.sink_weights") == nullptr);
    }
    SECTION("sinks: the sink card is the step after the weights (right of them, or below where the pipeline wraps)") {
        UiDriver sinks(find_preset("attention-sinks")->scenario);
        sinks.frame(3);
        const ui::HeatmapLayout* weights = sinks.heatmap("head0.weights");
        const ui::HeatmapLayout* sink = sinks.heatmap("head0.sink_weights");
        REQUIRE(weights != nullptr);
        REQUIRE(sink != nullptr);
        CHECK((sink->x > weights->x || sink->y > weights->y + weights->cell_h * static_cast<float>(weights->shown_rows)));
        CHECK(sink->rows == 6);
        CHECK(sink->cols == 1);
        CHECK(sinks.text("controls.sinks") == "on");
        CHECK(sinks.text("controls.sink0") == format_value(4.0f, 4));
    }
}

TEST_CASE("the tooltips write out QK-norm's RMS and product, and what the sink took from a row", "[qk_norm][sinks][arithmetic]") {
    const Trace t = run(find_preset("qk-norm")->scenario);
    REQUIRE(t.ok);
    const std::string normed = joined(ui::explain_cell(t, "head1.q_normed", 2, 3));
    const float before = t.head[1].q_before_norm(2, 3);
    const float rms = std::sqrt(t.head[1].q_before_norm.row(2).squaredNorm() / 4.0f + 1e-6f);
    CHECK_THAT(normed, Contains("RMS = ") && Contains(format_value(rms, 4)) && Contains(format_value(before, 4)) &&
                           Contains(format_value(t.q_norm(0, 3), 4)) && Contains(format_value(t.head[1].q_normed(2, 3), 4)));
    CHECK_THAT(joined(ui::explain_cell(t, "head0.q", 1, 0)), Contains("then QK-norm"));
    CHECK_THAT(joined(ui::explain_cell(t, "q_norm", 0, 1)), Contains("every head"));

    // OLMo 2's form: the RMS is the whole row's, every head's numbers, and w has a weight per head and dim.
    const Trace o = run(find_preset("block-olmo2")->scenario);
    REQUIRE(o.ok);
    REQUIRE(o.q_projected.cols() == 16);
    const std::string whole = joined(ui::explain_cell(o, "head2.q_normed", 3, 1));
    const float whole_rms = std::sqrt(o.q_projected.row(3).squaredNorm() / 16.0f + 1e-6f);
    CHECK_THAT(whole, Contains("whole projection's 16 numbers") && Contains(format_value(whole_rms, 4)) &&
                          Contains("w[10]") && Contains(format_value(o.q_norm(0, 9), 4)) && Contains(format_value(o.head[2].q_normed(3, 1), 4)));
    const std::string whole_k = joined(ui::explain_cell(o, "head3.k_normed", 2, 0));  // head 4 reads K/V head 2: the 5th column of K
    CHECK_THAT(whole_k, Contains("8 numbers") && Contains("w[5]"));
    CHECK_THAT(joined(ui::explain_cell(o, "q_norm", 0, 6)), Contains("dimension 3 of head 2"));
    CHECK_THAT(joined(ui::explain_cell(o, "head0.q", 1, 0)), Contains("every head's"));

    const Trace s = run(find_preset("attention-sinks")->scenario);
    REQUIRE(s.ok);
    const std::string weight = joined(ui::explain_cell(s, "head0.weights", 3, 1));
    CHECK_THAT(weight, Contains("sink b = ") && Contains("not 1: the sink took") && Contains(format_value(s.head[0].sink_weights(3, 0), 4)));
    const std::string sink = joined(ui::explain_cell(s, "head0.sink_weights", 3, 0));
    CHECK_THAT(sink, Contains("sink weight = ") && Contains(format_value(s.head[0].sink_weights(3, 0), 4)) &&
                         Contains(format_value(s.head[0].weights.row(3).sum(), 4)));
}

TEST_CASE("QK-norm's weights are edited in place and both steps are switched from the side bar", "[qk_norm][sinks][edit]") {
    UiDriver ui(find_preset("qk-norm")->scenario);
    ui.frame(3);
    const Matrix before = ui.window.shared.session.trace.head[0].q_normed;
    ui.window.shared.session.push(edits::SetCell{Editable::QNorm, 0, 2, 3.0f});
    ui.frame(3);
    const Trace& t = ui.window.shared.session.trace;
    REQUIRE(t.ok);
    CHECK(t.q_norm(0, 2) == 3.0f);
    CHECK(ui.window.shared.session.scenario.q_norm(2) == 3.0f);
    CHECK(t.head[0].q_normed.col(2) != before.col(2));
    CHECK(t.head[0].q_normed.col(1) == before.col(1));  // one weight, one column of every head
    ui.window.shared.session.push(edits::SetQKNorm{true, true});
    ui.window.shared.session.push(edits::SetSinks{Vector::Constant(2, 1.0f)});
    ui.frame(3);
    CHECK(ui.text("controls.qk_norm") == "each head, RMSNorm \xC2\xB7 (1 + w) (Gemma 3)");
    CHECK(ui.heatmap("head0.sink_weights") != nullptr);  // the head shown
    ui.window.shared.session.push(edits::SetHeads{1});  // the sinks follow the head count
    ui.frame(3);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK(ui.window.shared.session.scenario.sinks.size() == 1);
    // OLMo 2's form, over the whole projection: its weights are one per head and dimension, so
    // the edited ones (one per dimension) give way to the identity.
    ui.window.shared.session.push(edits::SetHeads{2});
    ui.window.shared.session.push(edits::SetQKNorm{true, false, true});
    ui.frame(3);
    const Trace& whole = ui.window.shared.session.trace;
    REQUIRE(whole.ok);
    CHECK(ui.text("controls.qk_norm") == "all heads at once, RMSNorm \xC2\xB7 w (OLMo 2)");
    CHECK(ui.window.shared.session.scenario.q_norm.size() == 0);
    CHECK(whole.q_norm.cols() == whole.heads * whole.d_k);
    CHECK(whole.q_projected.cols() == whole.heads * whole.d_k);
    const int d_k = whole.d_k, heads = whole.heads;  // the trace is replaced by the next run
    ui.window.shared.session.push(edits::SetCell{Editable::QNorm, 0, d_k + 1, 2.0f});  // a weight past the first head's
    ui.frame(3);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK(ui.window.shared.session.scenario.q_norm.size() == heads * d_k);
    REQUIRE(heads == 2);
    CHECK(ui.window.shared.session.scenario.q_norm(d_k + 1) == 2.0f);
    CHECK(ui.window.shared.session.scenario.q_norm(1) == 1.0f);  // the first head's own weight, the identity's
}

TEST_CASE("differential attention in the window: its cards drawn, their tooltips with λ and the subtraction, and the pairs switched from the side bar", "[differential][layout][arithmetic][edit]") {
    UiDriver ui(find_preset("block-diffllama")->scenario);
    ui.frame(4);
    const Trace& t = ui.window.shared.session.trace;
    REQUIRE(t.ok);
    for (const char* card : {"differential.difference", "differential.normed", "differential.lambda_q1", "head0.v"}) {
        INFO(card);
        const ui::HeatmapLayout* h = ui.heatmap(card);
        REQUIRE(h != nullptr);
        CHECK(h->cell_w >= 6.0f);
    }
    CHECK(ui.heatmap("head0.v")->cols == 2 * t.d_k);  // the pair's two values side by side
    CHECK(ui.text("controls.differential") == "on");
    // the difference: head 1's reading − λ × head 3's, the normed cell its RMS, V's second half head 3's K/V head
    const std::string difference = joined(ui::explain_cell(t, "differential.difference", 2, 5));
    CHECK_THAT(difference, Contains("pair 1") && Contains(format_value(t.concat(2, 5), 4)) && Contains(format_value(t.concat(2, 2 * 8 + 5), 4)) &&
                               Contains(format_value(t.differential.lambda, 4)) && Contains(format_value(t.differential.difference(2, 5), 4)));
    CHECK_THAT(joined(ui::explain_cell(t, "differential.normed", 1, 9)), Contains("pair 2") && Contains("rms"));
    CHECK_THAT(joined(ui::explain_cell(t, "differential.lambda_q1", 0, 1)), Contains(format_value(t.differential.lambda_1, 4)));
    CHECK_THAT(joined(ui::explain_cell(t, "head0.v", 3, 5)), Contains("W_V[:,6]"));  // head 3's values: K/V head 2, its column 2
    CHECK_THAT(joined(ui::explain_cell(t, "output", 0, 0)), Contains("normed[1,:]"));

    const Matrix t_lambda_q1 = t.differential.lambda_q1;  // the trace is replaced by the next run
    ui.window.shared.session.push(edits::SetDifferential{false});
    ui.frame(3);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK(ui.window.shared.session.trace.differential.normed.size() == 0);
    CHECK(ui.heatmap("differential.difference") == nullptr);
    CHECK(ui.window.shared.session.trace.d_v == ui.window.shared.session.trace.d_k);
    CHECK(ui.text("controls.differential") == "off");
    ui.window.shared.session.push(edits::SetDifferential{true, 0.5f});  // on again: its λ vectors were kept
    ui.frame(3);
    const Trace& again = ui.window.shared.session.trace;
    REQUIRE(again.ok);
    CHECK(again.differential.lambda_init == 0.5f);
    CHECK(again.differential.lambda_q1 == t_lambda_q1);
    ui.window.shared.session.push(edits::SetOutputGate{true});  // a gate on the pairs has no place: said, the last good trace kept
    ui.frame(3);
    CHECK(ui.window.shared.session.trace.ok);
    CHECK_THAT(attn::testing::joined(ui.window.shared.session.errors), Contains("differential attention") && Contains("output gate"));
}
