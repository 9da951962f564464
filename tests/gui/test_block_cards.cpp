// The modern block in the window (headless, tests/gui/ui_driver.hpp): each preset's new
// matrices drawn as cards, their tooltips with the numbers, their weights editable, and the
// block's design chosen in the side bar.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "teaching/presets.hpp"
#include "explained.hpp"
#include "ui/arithmetic.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;
using Catch::Matchers::Contains;

namespace {

using testing::joined;

}  // namespace

TEST_CASE("each modern-block preset draws its new matrices as cards, with cells large enough to read", "[block][layout]") {
    const std::vector<std::pair<const char*, std::vector<const char*>>> presets = {
        {"rmsnorm-block", {"block.norm1", "block.gamma_1", "block.norm2", "block.gamma_2"}},
        {"swiglu-feed-forward", {"block.w_gate", "block.ffn_gate", "block.w_1", "block.ffn_up", "block.ffn_product", "block.w_2"}},
        {"parallel-residual", {"block.norm2", "block.beta_2", "block.ffn_hidden", "block.residual2"}},
        {"gemma-sandwich-norms", {"block.post_attention_norm", "block.gamma_post_attention", "block.norm2",
                                  "block.post_feed_forward_norm", "block.gamma_post_feed_forward", "block.ffn_product"}}};
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
        // What RMSNorm does not have is not drawn: no β beside its γ.
        if (find_preset(name)->scenario.block.norm_kind == NormKind::RMSNorm) CHECK(ui.heatmap("block.beta_1") == nullptr);
    }
    // The gated feed-forward's own step in the Go to strip.
    UiDriver swiglu(find_preset("swiglu-feed-forward")->scenario);
    swiglu.frame(3);
    CHECK(swiglu.widget("pipeline.step.gate, up") != nullptr);
    CHECK(swiglu.text("controls.block_ffn") == "SwiGLU (Llama, Qwen)");
    CHECK(swiglu.text("controls.block_norm") == "RMSNorm (Llama, Qwen)");
}

TEST_CASE("the tooltips write out RMSNorm and the gate's product with the hovered cell's numbers", "[block][arithmetic]") {
    const Trace t = run(find_preset("gemma-sandwich-norms")->scenario);
    REQUIRE(t.ok);
    const std::string norm = joined(ui::explain_cell(t, "block.post_attention_norm", 1, 2));
    CHECK_THAT(norm, Contains("RMSNorm") && Contains("mean(x\xC2\xB2) = ") && Contains("(1 + "));
    CHECK_THAT(norm, Contains(format_value(t.output(1, 2), 4)));  // the attention output it normalised
    const std::string gated = joined(ui::explain_cell(t, "block.ffn_product", 2, 5));
    CHECK_THAT(gated, Contains(format_value(t.block.ffn_gate(2, 5), 4)) && Contains(format_value(t.block.ffn_product(2, 5), 4)));
    const std::string gate = joined(ui::explain_cell(t, "block.ffn_gate", 0, 3));
    CHECK_THAT(gate, Contains("GELU-tanh(") && Contains(format_value(t.block.ffn_gate(0, 3), 4)));
    const Trace pythia = run(find_preset("parallel-residual")->scenario);
    CHECK_THAT(joined(ui::explain_cell(pythia, "block.norm2", 0, 0)), Contains("reads the block's input"));
    CHECK_THAT(joined(ui::explain_cell(pythia, "block.residual2", 3, 1)), Contains("parallel"));
}

TEST_CASE("Phi-3's LongRoPE: the side bar says which factors turn the sentence, and a cell of Q names its pair's factor and the attention factor",
          "[block][rope][arithmetic]") {
    const Scenario& phi3 = find_preset("block-phi3")->scenario;
    {  // one window at a time
        UiDriver ui(phi3);
        ui.frame(3);
        REQUIRE(ui.window.shared.session.trace.ok);
        CHECK(ui.text("controls.rope_scaling") == "LongRoPE's long factors (n = 11 > 4), cos and sin \xC3\x97 " + format_value(1.5811388f, 4));
    }
    const Trace t = run(phi3);
    REQUIRE(t.ok);
    // Q[5, 3] (head 1): rotate_half pairs (1, 3) of d_k 4, pair 1, the long factor 9
    const std::string q = joined(ui::explain_cell(t, "head0.q", 5, 3));
    const float f = 1.0f / (9.0f * std::pow(10000.0f, 0.5f));
    CHECK_THAT(q, Contains("pair 1 turns by p") && Contains(format_value(f, 4)) && Contains("LongRoPE's long factor 1") &&
                      Contains("11 > 4 tokens") && Contains("attention factor " + format_value(1.5811388f, 4)));
    // Four tokens take the short factors
    Scenario four = phi3;
    four.target.tokens.resize(4);
    const Trace short_trace = run(four);
    REQUIRE(short_trace.ok);
    CHECK_THAT(joined(ui::explain_cell(short_trace, "head0.k", 2, 2)), Contains("LongRoPE's short factor 0") && Contains("4 \xE2\x89\xA4 4"));
    UiDriver short_ui(four);
    short_ui.frame(3);
    CHECK(short_ui.text("controls.rope_scaling").rfind("LongRoPE's short factors (n = 4 \xE2\x89\xA4 4)", 0) == 0);
}

TEST_CASE("W_gate and the sandwich's γ are edited in place, and the block's design is chosen in the side bar", "[block][edit]") {
    UiDriver ui(find_preset("gemma-sandwich-norms")->scenario);
    ui.frame(3);
    const Matrix before = ui.window.shared.session.trace.block.output;
    ui.window.shared.session.push(edits::SetCell{Editable::WGate, 1, 2, 3.0f});
    ui.window.shared.session.push(edits::SetCell{Editable::GammaPostFeedForward, 0, 4, -0.5f});
    ui.frame(3);
    const Trace& t = ui.window.shared.session.trace;
    REQUIRE(t.ok);
    CHECK(t.block.w_gate(1, 2) == 3.0f);
    CHECK(t.block.gamma_post_feed_forward(0, 4) == -0.5f);
    CHECK_FALSE(t.block.output.isApprox(before));
    // Gemma's γ starts at 0 when first edited: the other entries keep the identity scale 1 + 0.
    ui.window.shared.session.push(edits::SetCell{Editable::Gamma1, 0, 0, 0.5f});
    ui.frame(2);
    CHECK(ui.window.shared.session.scenario.block.norm_1.gamma(1) == 0.0f);
    // LayerNorm chosen for the same block: the Gemma form goes with it, β appears.
    edits::SetBlockDesign design{NormKind::LayerNorm, false, NormPlacement::Pre, false, true, true, Activation::GeluTanh, std::nullopt};
    ui.window.shared.session.push(design);
    ui.frame(3);
    REQUIRE(ui.window.shared.session.trace.ok);
    CHECK(ui.heatmap("block.beta_post_attention") != nullptr);
    CHECK(ui.text("controls.block_norm") == "LayerNorm");
    CHECK(ui.text("controls.block_layout") == "sandwich (Gemma 2/3)");
}
