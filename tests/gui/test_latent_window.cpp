// Latent attention and DeepSeek-V3's router in the window (headless, tests/gui/ui_driver.hpp):
// the latent's cards drawn readable, the tooltips with the numbers of each step, a latent weight
// edited in place, the router's words in the side bar.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "explained.hpp"
#include "teaching/presets.hpp"
#include "ui/arithmetic.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;
using Catch::Matchers::Contains;

TEST_CASE("the latent-attention preset draws the latent's steps as cards large enough to read, and each head's K and V", "[latent][layout]") {
    UiDriver ui(find_preset("latent-attention")->scenario);
    ui.frame(4);
    REQUIRE(ui.window.shared.session.trace.ok);
    for (const char* card : {"latent.compressed", "latent.latent", "latent.k_rope", "latent.q_latent", "head0.q", "head0.k", "head0.v",
                             "head0.weights"}) {
        INFO(card);
        const ui::HeatmapLayout* h = ui.heatmap(card);
        REQUIRE(h != nullptr);
        CHECK(h->cell_w >= 6.0f);
        CHECK(h->cell_h >= 6.0f);
    }
    // no W_K or W_V: the latent makes K and V; the expansion is exported, drawn as each head's K and V
    CHECK(ui.heatmap("latent.expanded") == nullptr);
    CHECK(ui.heatmap("w_k") == nullptr);
    CHECK(ui.heatmap("w_v") == nullptr);
    CHECK(ui.text("controls.head_dim") == "d\xE2\x82\x96 = 6, d_v = 3");  // its own sizes, not d_model / heads
    const ui::HeatmapLayout* v = ui.heatmap("head0.v");
    REQUIRE(v != nullptr);
    CHECK(v->cols == 3);  // d_v = 3, not d_k = 6
}

TEST_CASE("the tooltips write out the latent's projection, its norm, the shared rotary key and each head's slices", "[latent][arithmetic]") {
    const Trace t = run(find_preset("latent-attention")->scenario);
    REQUIRE(t.ok);
    const LatentTrace& l = t.latent;
    // a key's rotary dimension: the one k_rope, every head's
    CHECK_THAT(testing::joined(ui::explain_cell(t, "head2.k", 3, 5)),
               Contains("k_rope's 2") && Contains("every head shares") && Contains(format_value(l.k_rope(3, 1), 4)));
    // a key's content dimension and a value: the latent times this head's columns of W_kv_b (head 3's: 15 … 21)
    const std::string key = testing::joined(ui::explain_cell(t, "head2.k", 3, 1));
    CHECK_THAT(key, Contains("W_kv_b[:,16]") && Contains("k_nope") && Contains(format_value(t.head[2].k(3, 1), 4)));
    const std::string value = testing::joined(ui::explain_cell(t, "head2.v", 3, 0));
    CHECK_THAT(value, Contains("W_kv_b[:,19]") && Contains("v columns") && Contains(format_value(t.head[2].v(3, 0), 4)));
    // the latent: RMSNorm of c over its 4 numbers
    const float mean_square = l.compressed.row(2).leftCols(4).squaredNorm() / 4.0f;
    const std::string norm = testing::joined(ui::explain_cell(t, "latent.latent", 2, 1));
    CHECK_THAT(norm, Contains("row's 4 numbers") && Contains(format_value(mean_square, 4)) && Contains(format_value(l.latent(2, 1), 4)) &&
                         Contains("what a cache of this layer keeps"));
    // [c | k_rope]: which part a column is
    CHECK_THAT(testing::joined(ui::explain_cell(t, "latent.compressed", 1, 4)), Contains("k_rope, the rotary key every head shares"));
    CHECK_THAT(testing::joined(ui::explain_cell(t, "latent.expanded", 0, 8)), Contains("head 2's k_nope, its dimension 2"));
    // a query's rotary dimension: the queries' latent times W_q_b, then RoPE
    CHECK_THAT(testing::joined(ui::explain_cell(t, "head0.q", 2, 4)), Contains("q latent[3,:]") && Contains("then RoPE turns it"));
}

TEST_CASE("a latent weight is edited in place, and the keys and values of every head follow", "[latent][edit]") {
    UiDriver ui(find_preset("latent-attention")->scenario);
    ui.frame(3);
    const Matrix k_before = ui.window.shared.session.trace.head[1].k, v_before = ui.window.shared.session.trace.head[1].v;
    // head 2's columns of W_kv_b are 7 … 13: its k_nope's 4, then its v's 3
    ui.window.shared.session.push(edits::SetCell{Editable::LatentWKVB, 0, 7 + 4, 5.0f});  // head 2's first value column
    ui.frame(3);
    const Trace& t = ui.window.shared.session.trace;
    REQUIRE(t.ok);
    CHECK(t.latent.w_kv_b->operator()(0, 11) == 5.0f);
    CHECK(t.head[1].v.col(0) != v_before.col(0));
    CHECK(t.head[1].v.col(1) == v_before.col(1));
    CHECK(t.head[1].k == k_before);  // its keys untouched
    // the latent's γ: an edit of a vector materialises the ones first
    ui.window.shared.session.push(edits::SetCell{Editable::LatentKVNorm, 0, 2, 0.0f});
    ui.frame(3);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK(ui.window.shared.session.scenario.latent.kv_a_norm.size() == 4);
    CHECK(ui.window.shared.session.trace.latent.latent.col(2).isZero(0.0f));
    CHECK(ui.window.shared.session.trace.latent.latent.col(1) != Matrix::Zero(ui.window.shared.session.trace.n_queries, 1));
}

TEST_CASE("DeepSeek-V3's block: the router's choice card, its tooltips and its words in the side bar", "[latent][moe]") {
    UiDriver ui(find_preset("block-deepseek-v3")->scenario);
    ui.frame(4);
    const Trace& t = ui.window.shared.session.trace;
    REQUIRE(t.ok);
    REQUIRE(ui.heatmap("block.router_choice") != nullptr);
    CHECK_THAT(ui.text("controls.moe_normalize"), Contains("2 best of 4 groups") && Contains("2.5"));
    // a kept expert's weight: its σ renormalised × 2.5; a dropped group's choice: 0, and why
    int row = 0, kept = -1, dropped = -1;
    for (int e = 0; e < 8; ++e) {
        if (t.block.routing(row, e) > 0.0f && kept < 0) kept = e;
        if (t.block.router_choice(row, e) == 0.0f && dropped < 0) dropped = e;
    }
    REQUIRE(kept >= 0);
    REQUIRE(dropped >= 0);
    CHECK_THAT(testing::joined(ui::explain_cell(t, "block.routing", row, kept)),
               Contains("routed_scaling_factor") && Contains(format_value(t.block.routing(row, kept), 4)));
    CHECK_THAT(testing::joined(ui::explain_cell(t, "block.router_choice", row, dropped)), Contains("not among the token's 2 best groups"));
    CHECK_THAT(testing::joined(ui::explain_cell(t, "block.router_probabilities", row, 0)), Contains("a sigmoid, not a softmax"));
}

TEST_CASE("latent attention is turned on and sized from the side bar", "[latent][edit]") {
    Scenario s = find_preset("grouped-query-attention")->scenario;  // 4 heads on 2 K/V heads, RoPE rotate-half
    UiDriver ui(s);
    ui.frame(3);
    CHECK(ui.text("controls.latent") == "off");
    const int d_k = ui.window.shared.session.trace.d_k;
    ui.window.shared.session.push(edits::SetLatent{8, 0, d_k - 2, 2, d_k});
    ui.frame(3);
    {
        const Trace& t = ui.window.shared.session.trace;
        for (const std::string& e : t.errors) INFO(e);
        REQUIRE(t.ok);
        CHECK(t.kv_heads == t.heads);  // every head its own K and V now, from the latent
        CHECK(t.latent.latent.cols() == 8);
        CHECK(ui.text("controls.latent") == "on");
        CHECK(ui.text("controls.latent_sizes") == "r_kv 8, d_nope " + std::to_string(d_k - 2) + " + d_rope 2, d_v " + std::to_string(d_k));
        CHECK(ui.heatmap("latent.latent") != nullptr);
        CHECK(ui.window.shared.session.scenario.kv_heads == 0);
    }
    // d_v changes: W_O is seeded again at its new rows, and the run goes on
    ui.window.shared.session.push(edits::SetLatent{8, 4, d_k - 2, 2, 3});
    ui.frame(3);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK(ui.window.shared.session.trace.d_v == 3);
    CHECK(ui.window.shared.session.trace.w_o->rows() == 3 * ui.window.shared.session.trace.heads);
    CHECK(ui.window.shared.session.trace.latent.q_latent.cols() == 4);
    // off again: the usual attention, W_Q seeded at its old width
    ui.window.shared.session.push(edits::SetLatent{});
    ui.frame(3);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK(ui.window.shared.session.trace.latent.latent.size() == 0);
    CHECK(ui.text("controls.latent") == "off");
}

TEST_CASE("an edited latent weight fixes latent attention's sizes: they are shown, not offered", "[latent][edit]") {
    UiDriver preset(find_preset("latent-attention")->scenario);
    preset.frame(2);
    preset.window.shared.session.push(edits::SetCell{Editable::LatentWKVA, 0, 0, 1.0f});
    preset.frame(3);
    CHECK(preset.text("controls.latent_sizes") == "r_kv 4, d_nope 4 + d_rope 2, d_v 3, queries through r_q 6");
    // undo restores the run before
    preset.window.shared.session.request_undo();
    preset.frame(3);
    CHECK(preset.window.shared.session.scenario.latent.w_kv_a.size() == 0);
}
