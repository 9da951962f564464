// The left side bar: presets, and every switch of the scenario and the view.
//
// Index
// [SECTION] Presets
// [SECTION] Heads
// [SECTION] Mask
// [SECTION] Computation switches
// [SECTION] View
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>

#include <imgui.h>

#include "teaching/articles.hpp"
#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "ui/arithmetic.hpp"
#include "ui/panel_backend.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

// [SECTION] Presets

// The numbers the article prints beside the ones computed now (edits included), with a
// visible flag wherever they disagree.
void article_numbers(EditContext state, const Preset& preset) {
    if (preset.printed.empty() || !state.session.trace.ok) return;
    const std::vector<Verdict> verdicts = check_preset(preset, state.session.trace);
    int matches = 0;
    for (const Verdict& v : verdicts) matches += v.match ? 1 : 0;
    const int differ = static_cast<int>(verdicts.size()) - matches;
    char label[96];
    std::snprintf(label, sizeof label, "Article's numbers: %d match, %d differ###article", matches, differ);
    if (differ > 0) ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 190, 90, 255));
    const bool open = ImGui::TreeNode(label);
    if (differ > 0) ImGui::PopStyleColor();
    record_item(state, "sidebar.verdict", std::string(label).substr(0, std::string(label).find("###")));
    if (!open) return;
    for (const Verdict& v : verdicts) {
        std::string printed, computed;
        for (double x : v.printed) printed += (printed.empty() ? "" : ", ") + format_value(static_cast<float>(x), 4);
        for (double x : v.computed) computed += (computed.empty() ? "" : ", ") + format_value(static_cast<float>(x), 4);
        ImGui::PushStyleColor(ImGuiCol_Text, v.match ? IM_COL32(140, 210, 140, 255) : IM_COL32(255, 120, 100, 255));
        ImGui::TextWrapped("%s %s", v.match ? "\xE2\x9C\x93" : "\xE2\x9C\x97", v.quantity.c_str());
        ImGui::PopStyleColor();
        ImGui::TextWrapped("  printed  [%s]\n  computed [%s]", printed.c_str(), computed.c_str());
        if (!v.match && !v.explanation.empty() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", v.explanation.c_str());
        if (!v.match && !v.explanation.empty()) {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
            ImGui::TextWrapped("  %s", v.explanation.c_str());
            ImGui::PopStyleColor();
        }
    }
    ImGui::TreePop();
}

// The preset the trace on screen was computed from, unedited — its title, description and
// the article's numbers; or the one it was edited from, said so; or none. Read from the
// trace's settings, never from the live scenario (which may be ahead of the trace).
void presets_menu(MapContext state, ViewOptions& view) {
    const TraceSettings& shown = state.session.trace.settings;
    const Preset* current = state.session.trace.ok ? find_preset(shown.preset) : nullptr;
    const Preset* edited_from = current == nullptr && state.session.trace.ok ? find_preset(shown.scenario_name) : nullptr;
    const std::string preview = current ? current->title : edited_from ? edited_from->title + " (edited)" : "(your scenario)";
    ImGui::TextUnformatted("Preset");
    ImGui::SetNextItemWidth(-1);
    const bool open = ImGui::BeginCombo("##preset", preview.c_str(), ImGuiComboFlags_HeightLarge);
    record_item(state, "sidebar.preset", preview);
    if (open) {
        for (const Preset& p : presets()) {
            const bool selected = current != nullptr && p.name == current->name;
            const std::string label = p.title + "  \xE2\x80\x94 " + p.name;
            if (ImGui::Selectable(label.c_str(), selected)) {
                state.push(edits::ReplaceScenario{p.scenario});
                state.views.clear();
                view.shown_head = 0;
            }
            if (ImGui::IsItemHovered() && !p.description.empty()) ImGui::SetTooltip("%s", p.description.c_str());
        }
        ImGui::EndCombo();
    }
    if (edited_from) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
        ImGui::TextWrapped("Edited: the preset's description and the article's printed numbers are for the unedited example.");
        ImGui::PopStyleColor();
        record_item(state, "sidebar.description", "edited");
        if (ImGui::SmallButton("Back to the unedited preset")) {
            state.push(edits::ReplaceScenario{edited_from->scenario});
            state.views.clear();
        }
    }
    if (current) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(190, 190, 200, 255));
        ImGui::TextWrapped("%s", current->description.c_str());
        ImGui::PopStyleColor();
        record_item(state, "sidebar.description", current->description);
        if (!current->article.empty()) {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
            ImGui::TextWrapped("Source: %s", current->article.c_str());
            ImGui::PopStyleColor();
        }
        article_numbers(state, *current);
    }
}

// [SECTION] Heads

void heads_controls(MapContext state, ViewOptions& view) {
    const Scenario& s = state.session.scenario;
    const Trace& t = state.session.trace;
    const std::vector<int> choices = edits::head_choices(s);
    const int columns = s.input == InputMode::Direct ? static_cast<int>(s.q.cols()) : s.d_model;
    ImGui::TextUnformatted("Heads");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70.0f * state.fonts.scale);
    if (ImGui::BeginCombo("##heads", std::to_string(s.heads).c_str())) {
        for (int h : choices)  // only divisors: every head gets the same d_k
            if (ImGui::Selectable(std::to_string(h).c_str(), h == s.heads)) state.push(edits::SetHeads{h});
        ImGui::EndCombo();
    }
    ImGui::SameLine();
    if (s.input == InputMode::Embeddings && s.latent.on()) {
        // latent attention: d_k and d_v are its own sizes, not d_model / heads
        const std::string sizes = "d\xE2\x82\x96 = " + std::to_string(head_dim_of(s)) + ", d_v = " + std::to_string(value_dim_of(s));
        ImGui::TextUnformatted(sizes.c_str());
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("latent attention: d\xE2\x82\x96 = d_nope + d_rope = %d + %d, d_v = %d, whatever d_model / heads", s.latent.nope_dim,
                              s.latent.rope_dim, s.latent.v_dim);
        record_item(state, "controls.head_dim", sizes);
    } else if (s.input == InputMode::Embeddings && s.head_dim > 0) {
        ImGui::Text("d\xE2\x82\x96 = %d", s.head_dim);  // the model's head_dim: no room in the side bar to say so
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("head_dim = %d, the model's own: not d_model / heads = %d / %d", s.head_dim, s.d_model, std::max(1, s.heads));
    } else ImGui::Text("d\xE2\x82\x96 = %d / %d = %d", columns, std::max(1, s.heads), columns / std::max(1, s.heads));
    // Grouped-query attention: which query heads share a K/V head, and what the K/V cache saves.
    const int kv = kv_heads_of(s);
    if (kv != s.heads && kv > 0) {
        const int group = s.heads / kv;
        const std::string text = std::to_string(kv) + (kv == 1 ? " K/V head (multi-query)" : " K/V heads (grouped-query)") + ": heads " +
                                 "1\xE2\x80\x93" + std::to_string(group) + " share the first; K/V cache " + std::to_string(group) +
                                 "\xC3\x97 smaller";
        hint_text(text);
        record_item(state, "controls.kv_heads", text);
    }
    // Always drawn, disabled where they do not apply: ticking a box never moves the widgets
    // below it (the next click lands where the user aimed).
    const int heads = t.ok ? t.heads : 1;
    ImGui::BeginDisabled(heads <= 1);
    ImGui::Checkbox("all heads side by side", &view.all_heads);
    record_item(state, "controls.all_heads", "all heads side by side");
    ImGui::BeginDisabled(view.all_heads);
    int shown = std::clamp(view.shown_head, 0, heads - 1) + 1;
    ImGui::SetNextItemWidth(-1);
    if (ImGui::SliderInt("##shown head", &shown, 1, std::max(1, heads), "showing head %d")) view.shown_head = shown - 1;
    ImGui::EndDisabled();
    ImGui::EndDisabled();
}

// [SECTION] Mask

void mask_controls(EditContext state) {
    const Scenario& s = state.session.scenario;
    const MaskKind kinds[] = {MaskKind::None,    MaskKind::Causal, MaskKind::Padding, MaskKind::SlidingWindow,
                              MaskKind::Chunked, MaskKind::Band,   MaskKind::Custom};
    ImGui::TextUnformatted("Mask");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::BeginCombo("##mask", to_string(s.mask))) {
        for (MaskKind k : kinds)
            if (ImGui::Selectable(to_string(k), k == s.mask)) state.push(edits::SetMaskKind{k});
        ImGui::EndCombo();
    }
    record_item(state, "controls.mask", to_string(s.mask));
    // One line whatever the mask, so that choosing one moves nothing below.
    if (s.mask == MaskKind::SlidingWindow) {
        int window = s.window;
        ImGui::SetNextItemWidth(-1);
        if (ImGui::SliderInt("##window", &window, 1, std::max(2, edits::key_count(s)), "window %d"))
            state.push(edits::SetWindow{window});
    } else if (s.mask == MaskKind::Band) {
        int half = s.window;
        ImGui::SetNextItemWidth(-1);
        if (ImGui::SliderInt("##band", &half, 0, std::max(1, edits::key_count(s)), "band \xC2\xB1%d"))
            state.push(edits::SetWindow{half});
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("a query sees the keys up to %d positions before and after it, and itself (ModernBERT's local layers)", s.window);
    } else if (s.mask == MaskKind::Chunked) {
        int chunk = s.chunk;
        ImGui::SetNextItemWidth(-1);
        if (ImGui::SliderInt("##chunk", &chunk, 1, std::max(2, edits::key_count(s)), "chunk %d"))
            state.push(edits::SetChunk{chunk});
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("a query sees the keys of its own chunk of %d tokens, up to itself", s.chunk);
    } else {
        const char* hint = s.mask == MaskKind::Padding  ? "tick \"pad\" under a token to hide it"
                           : s.mask == MaskKind::Custom ? "click or drag masked cells to paint"
                           : s.mask == MaskKind::Causal ? "a query sees itself and earlier keys"
                                                        : "every query sees every key";
        ImGui::AlignTextToFramePadding();
        hint_text(hint);
        if (s.mask == MaskKind::Custom && ImGui::IsItemHovered())
            ImGui::SetTooltip("click or drag cells of the masked scores or the weights to hide / show them");
    }
    bool infinite = std::isinf(s.masked_fill);
    ImGui::TextUnformatted("Fill");
    ImGui::SameLine();
    if (ImGui::RadioButton("\xE2\x88\x92\xE2\x88\x9E", infinite) && !infinite)
        state.push(edits::SetMaskedFill{-INFINITY});
    ImGui::SameLine();
    if (ImGui::RadioButton("finite", !infinite) && infinite) state.push(edits::SetMaskedFill{-1e9f});
    if (!infinite) {
        float fill = s.masked_fill;
        ImGui::SameLine();
        ImGui::SetNextItemWidth(-1);
        if (ImGui::InputFloat("##fill", &fill, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue) && !std::isnan(fill))
            state.push(edits::SetMaskedFill{fill});
    }
}

// [SECTION] Computation switches

// The block's design, each choice a family's: which norm, where the norms stand, which
// feed-forward. Only combinations the engine runs can be chosen.
void block_design_controls(EditContext state) {
    const BlockOptions& b = state.session.scenario.block;
    edits::SetBlockDesign d{b.norm_kind, b.gamma_plus_one, b.norm, b.parallel_residual, b.sandwich_norm, b.gated, b.activation, std::nullopt};
    const char* const norms[] = {"LayerNorm", "RMSNorm (Llama, Qwen)", "RMSNorm, 1 + \xCE\xB3 (Gemma)"};
    int norm = b.norm_kind == NormKind::LayerNorm ? 0 : b.gamma_plus_one ? 2 : 1;
    ImGui::TextUnformatted("Norm");
    ImGui::SameLine();
    if (!b.layer_norm && !b.sandwich_norm) {  // a block without norms (a layer trained without them): none to choose
        ImGui::TextDisabled("none: the block has no norm");
        record_item(state, "controls.block_norm", "none");
    } else {
        ImGui::SetNextItemWidth(-1);
        if (ImGui::Combo("##block_norm", &norm, norms, 3)) {
            d.norm_kind = norm == 0 ? NormKind::LayerNorm : NormKind::RMSNorm;
            d.gamma_plus_one = norm == 2;
            state.push(d);
        }
        record_item(state, "controls.block_norm", norms[norm]);
    }
    const char* const layouts[] = {"post-norm (2017)", "pre-norm (GPT-2, Llama)", "parallel (GPT-NeoX, Pythia)", "sandwich (Gemma 2/3)",
                                   "after each sublayer (OLMo 2)"};
    const bool after_sublayers = b.sandwich_norm && !b.layer_norm;
    int layout = b.norm == NormPlacement::Post ? 0 : b.parallel_residual ? 2 : after_sublayers ? 4 : b.sandwich_norm ? 3 : 1;
    ImGui::TextUnformatted("Norms");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::Combo("##block_layout", &layout, layouts, 5)) {
        d.norm = layout == 0 ? NormPlacement::Post : NormPlacement::Pre;
        d.parallel_residual = layout == 2;
        d.sandwich_norm = layout == 3 || layout == 4;
        if (layout == 4) d.layer_norm = false;          // OLMo 2: the sublayers read the stream as it is
        else if (after_sublayers) d.layer_norm = true;  // leaving OLMo 2's block: the norms before the sublayers return
        state.push(d);
    }
    record_item(state, "controls.block_layout", layouts[layout]);
    const char* const feed_forwards[] = {"ReLU",   "GELU-tanh (GPT-2)",    "GELU-erf (Pythia)",
                                         "SiLU",   "SwiGLU (Llama, Qwen)", "GeGLU (Gemma)"};
    const Activation plain[] = {Activation::ReLU, Activation::GeluTanh, Activation::GeluErf, Activation::SiLU};
    int feed_forward = static_cast<int>(std::find(std::begin(plain), std::end(plain), b.activation) - std::begin(plain));
    if (b.gated) feed_forward = b.activation == Activation::SiLU ? 4 : b.activation == Activation::GeluTanh ? 5 : -1;  // else a file's
    ImGui::TextUnformatted("FFN");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::Combo("##block_ffn", &feed_forward, feed_forwards, 6)) {
        d.gated = feed_forward >= 4;
        d.activation = feed_forward == 4 ? Activation::SiLU : feed_forward == 5 ? Activation::GeluTanh : plain[feed_forward];
        state.push(d);
    }
    record_item(state, "controls.block_ffn", feed_forward >= 0 ? feed_forwards[feed_forward] : "gated");
}

// A mixture of experts (Qwen3-MoE, Mixtral): how many experts each token keeps, whether their weights
// are renormalised, and which experts are ablated (their output dropped, the routing kept).
void mixture_controls(EditContext state) {
    const MixtureOfExperts& m = state.session.scenario.block.moe;
    edits::SetMixture e{m.top_k, m.normalize_top_k, m.ablated};
    ImGui::TextUnformatted(("Experts " + std::to_string(m.experts) + ", keep").c_str());
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::SliderInt("##moe_top_k", &e.top_k, 1, m.experts, "%d", ImGuiSliderFlags_AlwaysClamp) && e.top_k != m.top_k)
        state.push(e);
    record_item(state, "controls.moe_top_k", std::to_string(m.top_k) + " of " + std::to_string(m.experts));
    if (m.router_kind == RouterKind::TopKThenSoftmax) {
        // gpt-oss: the softmax runs over the kept logits only, so the kept weights always sum to 1
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("top k first, then softmax over those k");
        ImGui::PopStyleColor();
        record_item(state, "controls.moe_normalize", "top k first");
    } else if (m.router_kind == RouterKind::TopKThenSigmoid) {
        // Llama 4: the top k logits, each kept expert weighed by its own σ
        const std::string words = std::string("top k logits, each weighed by its own \xCF\x83") +
                                  (m.weight_input ? ", which scales what the expert reads" : "");
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", words.c_str());
        ImGui::PopStyleColor();
        record_item(state, "controls.moe_normalize", words);
    } else if (m.router_kind == RouterKind::SigmoidGrouped) {
        // DeepSeek-V3: σ scores, the best groups first; the kept σ (renormalised or not) × the scale
        const std::string words = "σ of each logit; the " + std::to_string(m.top_groups) + " best of " + std::to_string(m.groups) +
                                  " groups, then the top k in them (σ + b_choice); weights " +
                                  (m.normalize_top_k ? "renormalised, " : "") + "× " + format_value(m.routed_scale, 3);
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", words.c_str());
        ImGui::PopStyleColor();
        record_item(state, "controls.moe_normalize", words);
    } else {
        bool normalize = m.normalize_top_k;
        if (ImGui::Checkbox("renormalise the kept", &normalize)) {
            e.top_k = m.top_k;
            e.normalize_top_k = normalize;
            state.push(e);
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("norm_topk_prob: each token's kept weights divided by their sum, so they add up to 1 (Qwen3-30B-A3B); off: "
                              "the softmax's probabilities as they are");
        record_item(state, "controls.moe_normalize", normalize ? "on" : "off");
    }
    if (m.shared_d_ff > 0) {  // Qwen2-MoE: a shared expert every token runs, beside the routed ones
        const std::string shared = "+ a shared expert (width " + std::to_string(m.shared_d_ff) + ") on every token" +
                                   (m.shared_gated ? ", scaled by its gate \xCF\x83(x\xC2\xB7g)" : "");
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", shared.c_str());
        ImGui::PopStyleColor();
        record_item(state, "controls.moe_shared", shared);
    }
    // One button per expert, from 1, lit while it is ablated; a click toggles it.
    ImGui::TextUnformatted("ablate");
    const float button = ImGui::GetFrameHeight();
    for (int x = 0; x < m.experts; ++x) {
        const bool off = m.is_ablated(x);
        if (x == 0 || ImGui::GetContentRegionAvail().x > button * 1.6f) ImGui::SameLine();
        ImGui::PushID(x);
        if (off) ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.75f, 0.30f, 0.25f, 1.0f));
        if (ImGui::Button(std::to_string(x + 1).c_str(), ImVec2(std::max(button, ImGui::CalcTextSize("128").x + 6.0f), 0.0f))) {
            edits::SetMixture toggled{m.top_k, m.normalize_top_k, m.ablated};
            if (off) toggled.ablated.erase(std::find(toggled.ablated.begin(), toggled.ablated.end(), x));
            else toggled.ablated.insert(std::upper_bound(toggled.ablated.begin(), toggled.ablated.end(), x), x);
            state.push(toggled);
        }
        if (off) ImGui::PopStyleColor();
        record_item(state, ("controls.moe_expert." + std::to_string(x + 1)).c_str(), off ? "ablated" : "");
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(off ? "expert %d is ablated: its output is dropped, the routing kept; click to restore it"
                                  : "click to ablate expert %d: its output dropped, each token's routing weights kept",
                              x + 1);
        ImGui::PopID();
    }
    std::string ablated;
    for (int x : m.ablated) ablated += (ablated.empty() ? "" : ", ") + std::to_string(x + 1);
    record_item(state, "controls.moe_ablated", ablated.empty() ? "none" : ablated);
}

// Latent attention (DeepSeek-V2, V3): on or off, and its sizes while its weights are seeded; a
// checkpoint's layer (its weights given) shows its sizes, which its weights fix.
void latent_controls(EditContext state) {
    const Scenario& s = state.session.scenario;
    const LatentAttention& l = s.latent;
    bool on = l.on();
    const int d_k = head_dim_of(s);
    if (ImGui::Checkbox("latent attention (DeepSeek-V3)", &on)) {
        // on: a latent of half d_model, d_k split between the dims RoPE leaves and 2 it turns, d_v = d_k
        const int rope = s.positional == PositionalEncoding::Rotary ? 2 : 0;
        state.push(on ? edits::SetLatent{std::max(2, s.d_model / 2), 0, std::max(1, d_k - rope), rope, std::max(1, d_k)}
                              : edits::SetLatent{});
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("every head's key and value from one compressed latent a token (W_kv_a, RMSNorm, W_kv_b), and a rotary key "
                          "k_rope shared by the heads: a cache keeps r_kv + d_rope numbers a token");
    record_item(state, "controls.latent", on ? "on" : "off");
    if (!on) return;
    const std::string sizes = "r_kv " + std::to_string(l.kv_rank) + ", d_nope " + std::to_string(l.nope_dim) + " + d_rope " +
                              std::to_string(l.rope_dim) + ", d_v " + std::to_string(l.v_dim) +
                              (l.q_rank > 0 ? ", queries through r_q " + std::to_string(l.q_rank) : std::string());
    record_item(state, "controls.latent_sizes", sizes);
    if (l.w_kv_a.size() != 0 || l.w_kv_b.size() != 0 || l.w_q_b.size() != 0) {  // given weights fix the sizes
        hint_text(sizes.c_str());
        return;
    }
    edits::SetLatent e{l.kv_rank, l.q_rank, l.nope_dim, l.rope_dim, l.v_dim};
    bool changed = false;
    const float field = 74.0f * state.fonts.scale;
    const auto size_field = [&](const char* label, const char* id, int& value, int step, int low, const char* tip) {
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(label);
        ImGui::SameLine();
        ImGui::SetNextItemWidth(field);
        int v = value;
        if (ImGui::InputInt(id, &v, step, step, ImGuiInputTextFlags_EnterReturnsTrue)) {
            value = std::max(low, v);
            changed = true;
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
    };
    size_field("r_kv", "##latent-kv-rank", e.kv_rank, 1, 1, "the latent's width (kv_lora_rank): what a cache keeps a token, with d_rope");
    ImGui::SameLine();
    size_field("r_q", "##latent-q-rank", e.q_rank, 1, 0, "the queries' low-rank path (q_lora_rank); 0: q = x·W_Q");
    size_field("d_nope", "##latent-nope", e.nope_dim, 1, 0, "each head's q and k dims that RoPE leaves, k's from the latent");
    ImGui::SameLine();
    size_field("d_rope", "##latent-rope", e.rope_dim, 2, 0, "the rotary dims, k's shared by every head (even)");
    size_field("d_v", "##latent-v", e.v_dim, 1, 1, "each head's value width, its own");
    if (changed) state.push(e);
}

void computation_controls(EditContext state) {
    const Scenario& s = state.session.scenario;
    bool scale = s.scale;
    if (ImGui::Checkbox("divide scores by \xE2\x88\x9A" "d\xE2\x82\x96", &scale)) state.push(edits::SetScale{scale});
    // A custom scale in place of 1/√dₖ (Gemma's query_pre_attn_scalar^−½) and logit
    // soft-capping (Gemma 2): each a number, 0 for the default.
    const float field = 64.0f * state.fonts.scale;
    float custom = s.score_scale, cap = s.softcap;
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("\xC3\x97");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(field);
    ImGui::BeginDisabled(!s.scale);
    if (ImGui::InputFloat("##score-scale", &custom, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue))
        state.push(edits::SetScoreScale{custom});
    ImGui::EndDisabled();
    record_item(state, "controls.score_scale", format_value(s.score_scale, 4));
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("scores \xC3\x97 this in place of 1/\xE2\x88\x9A" "d\xE2\x82\x96 (0: 1/\xE2\x88\x9A" "d\xE2\x82\x96); "
                          "Gemma uses query_pre_attn_scalar^\xE2\x88\x92\xC2\xBD");
    ImGui::SameLine();
    ImGui::TextUnformatted("soft-cap");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(field);
    if (ImGui::InputFloat("##softcap", &cap, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue)) state.push(edits::SetSoftcap{cap});
    record_item(state, "controls.softcap", format_value(s.softcap, 4));
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("c > 0: every scaled score s \xE2\x86\x92 c\xC2\xB7tanh(s/c) before the mask (Gemma 2: c = 50); 0: off");
    ImGui::TextUnformatted("Softmax");
    ImGui::SameLine();
    if (ImGui::RadioButton("stable", s.softmax == SoftmaxKind::Stable)) state.push(edits::SetSoftmax{SoftmaxKind::Stable});
    ImGui::SameLine();
    if (ImGui::RadioButton("naive", s.softmax == SoftmaxKind::Naive)) state.push(edits::SetSoftmax{SoftmaxKind::Naive});
    // QK-norm (Qwen3; Gemma 3's 1 + w form): RMSNorm of each head's q and k before RoPE; OLMo 2's
    // over the whole projection, every head at once.
    const char* const qk_norms[] = {"off", "each head, RMSNorm \xC2\xB7 w (Qwen3)", "each head, RMSNorm \xC2\xB7 (1 + w) (Gemma 3)",
                                    "all heads at once, RMSNorm \xC2\xB7 w (OLMo 2)"};
    int qk_norm = !s.qk_norm ? 0 : s.qk_norm_whole ? 3 : s.qk_norm_plus_one ? 2 : 1;
    ImGui::TextUnformatted("QK-norm");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::Combo("##qk_norm", &qk_norm, qk_norms, 4))
        state.push(edits::SetQKNorm{qk_norm != 0, qk_norm == 2, qk_norm == 3});
    record_item(state, "controls.qk_norm", qk_norms[qk_norm]);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("each head's q and k, row by row, through RMSNorm over their d\xE2\x82\x96 numbers after the projection "
                          "and before RoPE; the weights w_q, w_k are shared by every head and edited on their cards. OLMo 2 "
                          "normalises each row of the whole projection, every head's numbers at once, with a weight per head "
                          "and dimension, and splits the heads after");
    // Qwen3-Next's two attentions on one line: softmax attention, gated by σ(x·W_G + b_G) before W_O, or Gated DeltaNet.
    // DiffLlama's differential pairs are a fourth kind: none of them goes with another.
    const char* variants[] = {"softmax", "softmax, output gate", "Gated DeltaNet (linear)", "differential pairs (DiffLlama)"};
    int kind = s.delta_net.on ? 2 : s.output_gate.on ? 1 : s.differential.on ? 3 : 0;
    ImGui::TextUnformatted("Variant");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::Combo("##qwen3_next", &kind, variants, 4)) {
        if (kind != 2 && s.delta_net.on) state.push(edits::SetDeltaNet{false});
        if (kind != 3 && s.differential.on) state.push(edits::SetDifferential{false});
        if (kind == 2) state.push(edits::SetDeltaNet{true});  // which drops the output gate and the pairs
        else if (kind == 3) state.push(edits::SetDifferential{true, s.differential.lambda_init});  // which drops the gate
        else if ((kind == 1) != s.output_gate.on) state.push(edits::SetOutputGate{kind == 1});
    }
    record_item(state, "controls.qwen3_next", variants[kind]);
    record_item(state, "controls.output_gate", kind == 1 ? "on" : "off");
    record_item(state, "controls.delta_net", kind == 2 ? "on" : "off");
    record_item(state, "controls.differential", kind == 3 ? "on" : "off");
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("softmax, output gate: each head's output is multiplied, number by number, by \xCF\x83(x\xC2\xB7W_G + b_G) of its "
                          "token before W_O, so a head can write nothing for a token (gated attention, Qwen3-Next and Qwen3.5).\n"
                          "Gated DeltaNet: linear attention in place of the softmax (three of every four Qwen3-Next layers): each head "
                          "keeps a state S (d_k \xC3\x97 d_v) that every token fades by e^g, corrects towards its value by \xCE\xB2 (the "
                          "delta rule) and reads with its query; the implied weights card draws the A with o = A\xC2\xB7V. It takes a "
                          "causal mask and no RoPE, and seeds W_Q, W_K, W_V and W_O again (their shapes change).\n"
                          "differential pairs: head p pairs with head p + H/2 (DiffLlama); both compute a softmax map, both read the "
                          "pair's two values side by side, and the pair outputs the first map's reading \xE2\x88\x92 \xCE\xBB \xC3\x97 the "
                          "second's, RMS-normed and \xC3\x97 (1 \xE2\x88\x92 \xCE\xBB_init) before W_O: weight both maps spread everywhere "
                          "cancels. It needs an even number of heads; \xCE\xBB's four vectors are on their cards");
    if (s.differential.on) {
        float lambda_init = s.differential.lambda_init;
        ImGui::SetNextItemWidth(field * 2.0f);
        if (ImGui::InputFloat("\xCE\xBB_init##differential", &lambda_init, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue))
            state.push(edits::SetDifferential{true, lambda_init});
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("DiffLlama's layer \xE2\x84\x93 (from 0): 0.8 \xE2\x88\x92 0.6\xC2\xB7" "e^(\xE2\x88\x92" "0.3\xE2\x84\x93); "
                              "\xCE\xBB = %g here", static_cast<double>(differential_lambda(s.differential)));
    }

    // Llama 4's query temperature: each query × τ of its position (its NoPE layers).
    bool tempered = s.temperature.on();
    if (ImGui::Checkbox("query temperature (Llama 4)", &tempered))
        state.push(edits::SetTemperature{tempered ? QueryTemperature{3.0f, 0.5f} : QueryTemperature{}});
    record_item(state, "controls.temperature", tempered ? "on" : "off");
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("each query \xC3\x97 \xCF\x84 = ln(floor((p + 1) / floor_scale) + 1)\xC2\xB7" "attn_scale + 1, growing with its position p: "
                          "Llama 4's global layers without positions stay sharp over long texts (floor_scale 8192, attn_scale 0.1 there)");
    if (tempered) {
        QueryTemperature t = s.temperature;
        ImGui::SetNextItemWidth(field * 2.0f);
        bool changed = ImGui::InputFloat("floor_scale##temperature", &t.floor_scale, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue);
        ImGui::SetNextItemWidth(field * 2.0f);
        changed |= ImGui::InputFloat("attn_scale##temperature", &t.attn_scale, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue);
        if (changed) state.push(edits::SetTemperature{t});
    }
    // Attention sinks (gpt-oss): one logit per head that joins each softmax row and takes its share.
    bool sinks = s.sinks.size() != 0;
    if (ImGui::Checkbox("attention sinks (gpt-oss)", &sinks))
        state.push(edits::SetSinks{sinks ? Vector(Vector::Constant(std::max(1, s.heads), 1.0f)) : Vector()});
    record_item(state, "controls.sinks", sinks ? "on" : "off");
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("a learned logit b per head joins every softmax row's max and sum and is then dropped: "
                          "the row's weights sum to 1 \xE2\x88\x92 its sink weight");

    if (sinks && s.sinks.size() == s.heads) {
        for (int h = 0; h < s.heads; ++h) {
            float b = s.sinks(h);
            if (h % 4 != 0) ImGui::SameLine();
            ImGui::SetNextItemWidth(field);
            const std::string id = "##sink" + std::to_string(h);
            if (ImGui::InputFloat(id.c_str(), &b, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue)) {
                Vector edited = s.sinks;
                edited(h) = b;
                state.push(edits::SetSinks{edited});
            }
            record_item(state, ("controls.sink" + std::to_string(h)).c_str(), format_value(b, 4));
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("head %d's sink logit b", h + 1);
        }
    }

    const PositionalEncoding kinds[] = {PositionalEncoding::None, PositionalEncoding::Sinusoidal, PositionalEncoding::Learned,
                                        PositionalEncoding::Rotary, PositionalEncoding::ALiBi};
    ImGui::TextUnformatted("Position");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::BeginCombo("##positional", to_string(s.positional))) {
        for (PositionalEncoding k : kinds)
            if (ImGui::Selectable(to_string(k), k == s.positional)) state.push(edits::SetPositional{k});
        ImGui::EndCombo();
    }
    if (s.positional == PositionalEncoding::Rotary) {
        // RoPE's variant: the pairing, the base θ, how many dimensions turn.
        RopeOptions rope = s.rope;
        bool changed = false;
        if (ImGui::RadioButton("(2i, 2i+1)", rope.pairing == RopePairing::Interleaved)) {
            rope.pairing = RopePairing::Interleaved;
            changed = true;
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("interleaved pairs, as RoFormer and GPT-J turn them");
        ImGui::SameLine();
        if (ImGui::RadioButton("(i, i+r/2)", rope.pairing == RopePairing::RotateHalf)) {
            rope.pairing = RopePairing::RotateHalf;
            changed = true;
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("rotate_half, as Hugging Face's Llama, Qwen, Gemma and GPT-NeoX turn them");
        record_item(state, "controls.rope_pairing", to_string(rope.pairing));
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted("\xCE\xB8");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(90.0f * state.fonts.scale);
        float theta = rope.theta;
        if (ImGui::InputFloat("##rope-theta", &theta, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue)) {
            rope.theta = theta;
            changed = true;
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("the base: pair i turns by p\xC2\xB7\xCE\xB8^(\xE2\x88\x92" "2i/r) (Llama 3: 500000)");
        ImGui::SameLine();
        ImGui::TextUnformatted("r");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(-1);
        int dims = rope.rotary_dims;
        if (ImGui::InputInt("##rope-dims", &dims, 2, 2, ImGuiInputTextFlags_EnterReturnsTrue)) {
            rope.rotary_dims = std::max(0, dims);
            changed = true;
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("the first r dimensions of each head turn (Pythia: d_k/4); 0: all");
        // The scaling the scenario carries (a checkpoint's or a preset's): what it does to this sentence
        const std::string scaling = rope_scaling_words(rope, static_cast<int>(s.target.tokens.size()));
        if (!scaling.empty()) {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
            ImGui::TextWrapped("%s", scaling.c_str());
            ImGui::PopStyleColor();
            if (ImGui::IsItemHovered() && rope.scaling == RopeScalingKind::LongRope)
                ImGui::SetTooltip("LongRoPE (Phi-3): each pair's frequency is divided by a factor of its own, from the short list for a "
                                  "text of up to %d tokens and from the long list beyond; hover a cell of Q or K for its pair's",
                                  rope.original_max_positions);
            record_item(state, "controls.rope_scaling", scaling);
        }
        if (rope.scaling == RopeScalingKind::LongRope) {
            // LongRoPE's switch and its factor on cos and sin, edited live
            ImGui::AlignTextToFramePadding();
            ImGui::TextUnformatted("L");
            ImGui::SameLine();
            ImGui::SetNextItemWidth(70.0f * state.fonts.scale);
            int original = rope.original_max_positions;
            if (ImGui::InputInt("##rope-original", &original, 1, 1, ImGuiInputTextFlags_EnterReturnsTrue)) {
                rope.original_max_positions = std::max(1, original);
                changed = true;
            }
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("the original length: a text of up to L tokens takes the short factors, a longer one the long");
            ImGui::SameLine();
            ImGui::TextUnformatted("a");
            ImGui::SameLine();
            ImGui::SetNextItemWidth(-1);
            float attention_factor = rope.attention_factor;
            if (ImGui::InputFloat("##rope-attention-factor", &attention_factor, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue)) {
                rope.attention_factor = attention_factor;
                changed = true;
            }
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("the attention factor: cos and sin \xC3\x97 a, so q\xC2\xB7k over the turned dims \xC3\x97 a\xC2\xB2");
        }
        if (changed) state.push(edits::SetRope{rope});
    }
    if (s.input == InputMode::Embeddings) {
        ImGui::TextUnformatted("Attention");
        ImGui::SameLine();
        if (ImGui::RadioButton("self", s.attention == AttentionKind::Self))
            state.push(edits::SetAttention{AttentionKind::Self});
        ImGui::SameLine();
        if (ImGui::RadioButton("cross", s.attention == AttentionKind::Cross))
            state.push(edits::SetAttention{AttentionKind::Cross});
        if (s.attention == AttentionKind::Self) latent_controls(state);
        bool block = s.block.residual || s.block.layer_norm || s.block.feed_forward;
        if (ImGui::Checkbox("block: residual + norm + FFN", &block)) state.push(edits::SetBlock{block});
        if (block) block_design_controls(state);
        if (block && s.block.feed_forward && s.block.moe.routed()) mixture_controls(state);
        ImGui::TextUnformatted("Seed");
        ImGui::SameLine();
        std::uint64_t seed = s.seed;
        ImGui::SetNextItemWidth(110.0f * state.fonts.scale);
        if (ImGui::InputScalar("##seed", ImGuiDataType_U64, &seed, nullptr, nullptr, "%llu", ImGuiInputTextFlags_EnterReturnsTrue))
            state.push(edits::SetSeed{seed});
        ImGui::SameLine();
        if (ImGui::Button("new weights")) state.push(edits::SetSeed{s.seed + 1});
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("W_Q, W_K, W_V, W_O are drawn again from the next seed");
    } else {
        hint_text("direct input: Q, K, V are given (no X, no W)");
    }
}

// [SECTION] View

void view_controls(PanelContext state, ViewOptions& view) {
    // The sliders stay in place, disabled while their box says they do not apply.
    ImGui::Checkbox("fit cells to the window", &view.auto_cell);
    record_item(state, "controls.fit_cells", "fit cells to the window");
    ImGui::BeginDisabled(view.auto_cell);
    ImGui::SetNextItemWidth(-1);
    ImGui::SliderFloat("##cell", &view.cell_size, 4.0f, 80.0f, "cell %.0f px");
    ImGui::EndDisabled();
    ImGui::Checkbox("numbers in cells", &view.numbers);
    record_item(state, "controls.numbers", "numbers in cells");
    ImGui::SameLine();
    ImGui::BeginDisabled(!view.numbers);
    ImGui::SetNextItemWidth(-1);
    ImGui::SliderInt("##decimals", &view.decimals, 0, 4, "up to %d decimals");
    record_item(state, "controls.decimals", "up to " + std::to_string(view.decimals) + " decimals");
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("Cells write their numbers with up to this many decimals: a map whose cells are too narrow for\n"
                          "them writes fewer (at least 1), and a value that would round to 0 or is too long is written\n"
                          "short (4e\xE2\x88\x92" "2, \xE2\x88\x92" "1e9). Hover a cell for its value to 4 decimals and its arithmetic.");
    ImGui::Checkbox("show stages that change nothing", &view.show_identity_stages);
    record_item(state, "controls.identity_stages", "show stages that change nothing");
    hint_text("hover a cell: its arithmetic\nCtrl+wheel: zoom, right-drag: pan\n"
              "right double-click: reset zoom\ndrag a value: scrub, double-click: type");
}

}  // namespace

void draw_controls(Context& state) {
    ImGui::PushFont(state.fonts.title);
    ImGui::TextUnformatted("Attention Lab");
    ImGui::PopFont();
    ImGui::Separator();
    // The side bar is where the view options are chosen: it is handed them to write.
    presets_menu(state, state.view);
    ImGui::Separator();
    heads_controls(state, state.view);
    ImGui::Separator();
    mask_controls(state);
    ImGui::Separator();
    computation_controls(state);
    ImGui::Separator();
    view_controls(state, state.view);
    draw_backend(state);
}

}  // namespace attn::ui
