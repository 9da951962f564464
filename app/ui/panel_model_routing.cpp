// The model view's Routing tab: a model whose feed-forwards are mixtures of experts
// (Qwen3-MoE, Mixtral). For one mixture layer of the pass on screen, each token's router probabilities
// over the E experts beside the weights its output took from the k it kept (renormalised or
// not), and how many tokens each expert took. The cards are the layer trace's own matrices
// (block.router_probabilities, block.routing), so their tooltips write out the softmax, the
// rank and the renormalisation of the hovered cell. A click on an expert's column ablates it
// (its output dropped, the routing kept: stack.hpp) and the layers from it are recomputed, as a
// right-click on a head's map does in the grid; its columns are then shaded and crossed.
#include <algorithm>
#include <string>
#include <vector>

#include <imgui.h>

#include "attention/registry.hpp"
#include "ui/cards.hpp"
#include "ui/panel_model.hpp"
#include "ui/panels.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {

namespace {

HeatmapSpec routing_card(const Trace& layer, const char* key) {
    const std::optional<MatrixRef> ref = parse_matrix_name(key);
    HeatmapSpec spec = card_spec(layer, *ref, *matrix_of(layer, *ref));
    spec.name = std::string("model.routing.") + key;  // the tab's own zoom, pan and hover
    spec.editable = false;                            // the model's routing is computed, not edited here
    spec.trace = &layer;                              // the tooltip's arithmetic: this layer's
    spec.matrix = key;
    return spec;
}

// "expert 5 took 4 of 9 tokens, expert 0 3, …; 2 experts took none" (an ablated one "expert 5
// (ablated)").
std::string load_text(const Matrix& routing, const MixtureOfExperts& moe) {
    std::vector<std::pair<int, int>> load;  // tokens, expert
    for (Eigen::Index e = 0; e < routing.cols(); ++e)  // experts counted from 1, as on every card
        load.push_back({static_cast<int>((routing.col(e).array() > 0.0f).count()), static_cast<int>(e) + 1});
    std::stable_sort(load.begin(), load.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string text;
    int idle = 0, listed = 0;
    for (const auto& [tokens, expert] : load) {
        if (tokens == 0) {
            ++idle;
            continue;
        }
        if (listed == 6) continue;
        const std::string name = "expert " + std::to_string(expert) + (moe.is_ablated(expert - 1) ? " (ablated)" : "");
        text += listed == 0 ? name + " took " + std::to_string(tokens) + " of " + std::to_string(routing.rows()) +
                                  (routing.rows() == 1 ? " token" : " tokens")
                            : ", " + name + " " + std::to_string(tokens);
        ++listed;
    }
    if (idle > 0) text += "; " + std::to_string(idle) + (idle == 1 ? " expert took none" : " experts took none");
    return text;
}

bool expert_columns(const std::string& card) {  // the cards whose columns are the experts (not the shared gate's)
    return card.rfind("model.routing.", 0) == 0 && card != "model.routing.block.shared_gate_values";
}

// Each ablated expert's column shaded and crossed in every card drawn this frame whose columns
// are the experts.
void cross_out_experts(const std::vector<int>& ablated, const std::vector<HeatmapLayout>& drawn, float scale) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    for (const HeatmapLayout& h : drawn) {
        if (!expert_columns(h.name)) continue;
        for (int e : ablated) {
            const int c = e - h.first_col;
            if (c < 0 || c >= h.shown_cols) continue;
            const ImVec2 p0(h.x + static_cast<float>(c) * h.cell_w, h.y);
            const ImVec2 p1(p0.x + h.cell_w, h.y + static_cast<float>(h.shown_rows) * h.cell_h);
            draw->AddRectFilled(p0, p1, IM_COL32(0, 0, 0, 150));
            const float thickness = std::max(1.5f * scale, std::min(h.cell_w, 6.0f * scale) * 0.3f);
            draw->AddLine(p0, p1, IM_COL32(255, 70, 50, 235), thickness);
            draw->AddLine(ImVec2(p1.x, p0.y), ImVec2(p0.x, p1.y), IM_COL32(255, 70, 50, 235), thickness);
        }
    }
}

}  // namespace

std::vector<int> mixture_layers(const ModelPass& pass) {
    std::vector<int> layers;
    for (std::size_t l = 0; l < pass.layers.size(); ++l)
        if (pass.layers[l].has_block && pass.layers[l].settings.block.moe.routed()) layers.push_back(static_cast<int>(l));
    return layers;
}

void draw_model_routing(MapContext state, ModelViewState& m, HeatmapTextures& textures) {
    ModelRoutingState& r = m.routing;
    const float scale = state.fonts.scale;
    r.hover = r.hover_next;  // the cards' own hover: last frame's, then this frame's
    r.hover_next = HoverState{};
    const std::vector<int> layers = mixture_layers(m.pass);
    if (layers.empty()) {
        ImGui::TextDisabled("No layer of this pass routes its tokens to experts.");
        return;
    }
    if (std::find(layers.begin(), layers.end(), r.layer) == layers.end()) r.layer = layers.front();
    const Trace& t = m.pass.layers[static_cast<std::size_t>(r.layer)];
    const MixtureOfExperts& moe = t.settings.block.moe;

    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("mixture layer");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110.0f * scale);
    const std::string current = "layer " + std::to_string(r.layer + 1);
    if (ImGui::BeginCombo("##model.routing.layer", current.c_str())) {
        for (int l : layers)
            if (ImGui::Selectable(("layer " + std::to_string(l + 1)).c_str(), l == r.layer)) r.layer = l;
        ImGui::EndCombo();
    }
    record_item(state, "model.routing.layer", current);
    ImGui::SameLine();
    // What the pass formed: a top-k-then-softmax router (gpt-oss) has no probability over all E
    const bool top_k_first = t.block.router_probabilities.size() == 0;
    const bool grouped = t.block.router_choice.size() != 0;  // DeepSeek-V3: σ scores, groups, a biased choice
    const std::string how =
        grouped
            ? "Each token's router scores the " + std::to_string(moe.experts) + " experts on their own, σ(x" "·" "W_router) (left). "
                  "It keeps its " + std::to_string(moe.top_groups) + " best of " + std::to_string(moe.groups) + " groups of experts, then the " +
                  std::to_string(moe.top_k) + " best in them by \xCF\x83 + a bias that balances the experts' load (middle: 0 outside the kept groups); their \xCF\x83, " +
                  (moe.normalize_top_k ? "renormalised, " : "") + "× " + format_value(moe.routed_scale, 3) +
                  " weigh their outputs (right)."
        : moe.router_kind == RouterKind::TopKThenSigmoid
            ? "Each token's router gives the " + std::to_string(moe.experts) + " experts a score, x" "\xC2\xB7" "W_router (left). The " +
                  std::to_string(moe.top_k) + " highest run on the token, each weighted by the sigmoid of its own score, no softmax (right: a row "
                  "need not sum to 1)" +
                  (moe.weight_input ? std::string("; the weight scales what the expert reads, x" "\xC2\xB7" "w, and its output is added as it is.")
                                    : std::string("."))
        : top_k_first
            ? "Each token's router gives the " + std::to_string(moe.experts) + " experts a score, x" "\xC2\xB7" "W_router" +
                  (moe.router_bias.size() != 0 ? std::string(" + b_router") : std::string()) + " (left). The " + std::to_string(moe.top_k) +
                  " highest run on the token, weighted by a softmax over those " + std::to_string(moe.top_k) +
                  " scores only (right: each row sums to 1; no probability is ever given to the others)."
            : "Each token's router gives the " + std::to_string(moe.experts) + " experts a probability, softmax(x" "\xC2\xB7" "W_router) (left). Only the " +
                  std::to_string(moe.top_k) + " most likely run on the token, and its output is their outputs weighted by " +
                  (moe.normalize_top_k ? "those probabilities renormalised to sum 1 (right)." : "those probabilities as they are (right: each row sums to less than 1).");
    // A shared expert (Qwen2-MoE) runs on every token beside the routed ones; its gate is a third card.
    const bool shared_gate = t.block.shared_gate_values.size() != 0;
    const std::string shared =
        t.block.shared_output.size() == 0
            ? std::string()
            : " Beside them a shared expert (width " + std::to_string(moe.shared_d_ff) + ") runs on every token, whatever the router chose" +
                  (shared_gate ? std::string(", scaled by its own gate \xCF\x83(x\xC2\xB7g) (third card).") : std::string(", added as it is."));
    ImGui::TextWrapped("%s", (how + shared).c_str());
    record_item(state, "model.routing.how", how + shared);
    // What is ablated in this layer, as the pass on screen ran it.
    const std::vector<int>& ablated = moe.ablated;
    std::string ablated_text;
    for (int e : ablated) ablated_text += (ablated_text.empty() ? "" : ", ") + std::to_string(e + 1);
    ablated_text = ablated.empty() ? std::string("Click an expert's column to ablate it: the router still scores and keeps it, but its output is dropped, "
                                                 "and the layers after it and the prediction follow. Click again to restore it.")
                                   : (ablated.size() == 1 ? "Expert " : "Experts ") + ablated_text +
                                         " ablated in this layer (crossed out): kept by the router, " +
                                         (ablated.size() == 1 ? "its output" : "their outputs") +
                                         " dropped. Click a column to ablate or restore an expert.";
    if (ablated.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", ablated_text.c_str());
    } else {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 170, 90, 255));
        ImGui::TextWrapped("%s", ablated_text.c_str());
    }
    ImGui::PopStyleColor();
    record_item(state, "model.routing.ablated", ablated_text);
    if (!ablated.empty()) {
        if (ImGui::SmallButton("Restore this layer's experts"))
            for (int e : ablated) m.expert_toggles.push_back(stack::ExpertId{r.layer, e});
        record_item(state, "model.routing.restore", "");
    }

    // the scores (or logits), DeepSeek-V3's choice, the routing, a shared expert's gate
    HeatmapSpec specs[4];
    int cards = 0;
    specs[cards++] = routing_card(t, top_k_first ? "block.router_logits" : "block.router_probabilities");
    if (grouped) specs[cards++] = routing_card(t, "block.router_choice");
    specs[cards++] = routing_card(t, "block.routing");
    if (shared_gate) specs[cards++] = routing_card(t, "block.shared_gate_values");
    CardText texts[4];
    CardMetrics metrics[4];
    for (int i = 0; i < cards; ++i) texts[i] = measure_text(specs[i], state.fonts);
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float gap = 28.0f * scale;
    fit_side_by_side(specs, texts, cards, 40.0f * scale, 2.0f, gap, ImVec2(avail.x - 10.0f, std::max(avail.y - 60.0f * scale, 120.0f * scale)),
                     true, state.fonts, metrics);
    // A row a token makes the maps as tall as the tab allows long before they are as wide: their
    // columns (a few experts) are widened into the room beside them, up to three times a cell's
    // height, so that each cell has room for its value.
    for (float widen = 3.0f; widen > 1.0f; widen -= 0.25f) {
        CardMetrics wider[4];
        float width = static_cast<float>(cards - 1) * gap;
        for (int i = 0; i < cards; ++i) {
            const float cell_w = std::max(metrics[i].cell_w, std::min(metrics[i].cell_h * widen, 64.0f * scale));
            wider[i] = measure_card(specs[i], texts[i], cell_w, metrics[i].cell_h, state.fonts);
            width += wider[i].width;
        }
        if (width <= avail.x - 10.0f) {
            std::copy(wider, wider + cards, metrics);
            break;
        }
    }
    const NonFiniteReport no_report;  // a non-finite router value is drawn black and said in its tooltip
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    float x = origin.x, height = 0;
    for (int i = 0; i < cards; ++i) {
        ImGui::SetCursorScreenPos(ImVec2(x, origin.y));
        CardContext context{state.fonts, state.view,   t,           m.revision,   no_report,     r.hover,
                            r.hover_next, state.views, state.editor, state.painter, textures, state.layout_next,
                            {}};
        draw_card(specs[i], metrics[i], context);  // nothing here is editable: no edits come back
        x += metrics[i].width + gap;
        height = std::max(height, metrics[i].height);
    }
    cross_out_experts(ablated, state.layout_next, scale);
    // The same cell outlined in both cards: a token's probability beside what it kept of it.
    if (r.hover.row >= 0 && r.hover.matrix.rfind("model.routing.", 0) == 0)
        outline_hovered_cell(r.hover, state.layout_next, [](const std::string& name) { return name.rfind("model.routing.", 0) == 0; },
                             2.0f * scale);
    // A click on a cell of an expert's column: that expert ablated, or restored.
    const HoverState& now = r.hover_next;
    if (now.col >= 0 && now.col < moe.experts && expert_columns(now.matrix) && ImGui::IsMouseClicked(ImGuiMouseButton_Left))
        m.expert_toggles.push_back(stack::ExpertId{r.layer, now.col});
    ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + height + 6.0f * scale));
    const std::string load = load_text(t.block.routing, moe);
    ImGui::TextWrapped("%s", load.c_str());
    record_item(state, "model.routing.load", load);
}

}  // namespace attn::ui
