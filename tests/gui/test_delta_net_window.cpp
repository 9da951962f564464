// Gated DeltaNet in the window (headless, tests/gui/ui_driver.hpp): its cards drawn, the tooltips
// writing out the convolution, β, the decay and an implied weight with the numbers of each step, and
// the side-bar switch that turns a softmax layer into a linear one and back.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "explained.hpp"
#include "teaching/presets.hpp"
#include "ui/arithmetic.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;
using Catch::Matchers::Contains;

TEST_CASE("the gated-deltanet preset draws its steps, its implied weights and each head's state", "[delta_net][layout]") {
    UiDriver ui(find_preset("gated-deltanet")->scenario);
    ui.frame(4);
    REQUIRE(ui.window.shared.session.trace.ok);
    for (const char* card : {"linear.mixed", "linear.convolved", "linear.beta", "linear.decay", "head0.q", "head0.k", "head0.v",
                             "head0.implied_weights", "head0.state", "linear.normed", "linear.gated"}) {
        INFO(card);
        CHECK(ui.heatmap(card) != nullptr);
    }
    CHECK(ui.heatmap("head0.weights") == nullptr);  // no softmax
    CHECK(ui.heatmap("head0.scores") == nullptr);
}

TEST_CASE("the tooltips of a Gated DeltaNet layer write out its convolution, β, the decay and an implied weight", "[delta_net][arithmetic]") {
    const Trace t = run(find_preset("gated-deltanet")->scenario);
    REQUIRE(t.ok);
    const LinearTrace& l = t.linear;
    // the convolution: its taps over this token and the 3 before it, then SiLU
    const std::string conv = testing::joined(ui::explain_cell(t, "linear.convolved", 5, 2));
    CHECK_THAT(conv, Contains("channel 3 (q of key head 1)") && Contains("tap 4") && Contains(format_value(l.convolved(5, 2), 4)));
    CHECK_THAT(testing::joined(ui::explain_cell(t, "linear.convolved", 1, 2)), Contains("0 (before the text)"));
    CHECK_THAT(testing::joined(ui::explain_cell(t, "linear.beta", 3, 1)), Contains("\xCF\x83(") && Contains(format_value(l.beta(3, 1), 4)));
    const std::string decay = testing::joined(ui::explain_cell(t, "linear.decay", 3, 0));
    CHECK_THAT(decay, Contains("softplus") && Contains("exp(A_log") && Contains(format_value(std::exp(l.decay(3, 0)), 4)));
    // an implied weight: β_j times k_j against the query carried back; and a cell after the query
    const std::string implied = testing::joined(ui::explain_cell(t, "head1.implied_weights", 6, 2));
    CHECK_THAT(implied, Contains("carried back through the 4 later tokens") && Contains(format_value(t.head[1].implied_weights(6, 2), 4)) &&
                            Contains("no softmax"));
    CHECK_THAT(testing::joined(ui::explain_cell(t, "head1.implied_weights", 2, 6)), Contains("has not read token 7"));
    CHECK_THAT(testing::joined(ui::explain_cell(t, "head0.state", 1, 2)), Contains("whole memory") && Contains("4\xC2\xB7" "4 numbers"));
    CHECK_THAT(testing::joined(ui::explain_cell(t, "linear.gated", 4, 5)), Contains("SiLU(z") && Contains(format_value(l.gated(4, 5), 4)));
    // W_O reads the gated heads, not the concat: the output's terms are the gated row's numbers
    const std::string output = testing::joined(ui::explain_cell(t, "output", 2, 1));
    CHECK_THAT(output, Contains("gated[3,:]") && Contains(format_value(l.gated(2, 0), 4)));
    CHECK_THAT(output, !Contains("concat[3,:]"));
}

TEST_CASE("the side bar turns a softmax layer into Gated DeltaNet and back", "[delta_net][edit]") {
    UiDriver ui(find_preset("grouped-query-attention")->scenario);  // RoPE, 4 heads on 2 K/V heads
    ui.frame(3);
    CHECK(ui.text("controls.delta_net") == "off");
    ui.window.shared.session.push(edits::SetDeltaNet{true});
    ui.frame(3);
    {
        const Trace& t = ui.window.shared.session.trace;
        for (const std::string& e : t.errors) INFO(e);
        REQUIRE(t.ok);
        CHECK(t.settings.delta_net);
        CHECK(t.settings.positional == PositionalEncoding::None);  // it takes no RoPE
        CHECK(t.settings.mask == MaskKind::Causal);
        CHECK(t.head[0].implied_weights.rows() == t.n_queries);
        CHECK(ui.text("controls.delta_net") == "on");
        CHECK(ui.heatmap("head0.implied_weights") != nullptr);
    }
    // more heads: its per-head weights are seeded again, and it still runs
    ui.window.shared.session.push(edits::SetHeads{2});
    ui.frame(3);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK(ui.window.shared.session.trace.head.size() == 2);
    // off again: softmax attention, its weights back
    ui.window.shared.session.push(edits::SetDeltaNet{false});
    ui.frame(3);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK_FALSE(ui.window.shared.session.trace.settings.delta_net);
    CHECK(ui.window.shared.session.trace.head[0].weights.size() != 0);
    CHECK(ui.text("controls.delta_net") == "off");
}
