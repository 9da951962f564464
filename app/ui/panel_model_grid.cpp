// The model view's layers × heads grid: each map a head's (n × n) weights as BertViz's model view
// draws them, the masked cells grey, query heads grouped under the K/V head they share, each
// layer's kind said where they differ (local, chunked, global, linear, NoPE), ablated heads
// crossed out, role badges, and each map's tooltip. A click opens the layer in the pipeline; a
// right-click ablates or restores the head.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <imgui.h>

#include "attention/registry.hpp"
#include "ui/colormap.hpp"
#include "ui/panel_model.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

// Whether query i sees key j in a layer's trace: its mask as the engine applied it (none for
// BERT, causal, causal within the layer's window, or what an edit in the pipeline made of it).
bool sees(const Trace& trace, int i, int j) {
    if (trace.visible.size() == 0) return true;
    return trace.visible(i, j);
}

// What a layer's mask lets a query see, in a word: "local 512" (a sliding window), "chunk 8192"
// (Llama 4's chunked layers), or "global" (every earlier key).
std::string layer_kind(const Trace& layer) {
    if (layer.settings.delta_net) return "linear";  // Gated DeltaNet (Qwen3-Next): a recurrence, no softmax
    if (layer.settings.mask == MaskKind::SlidingWindow) return "local " + std::to_string(layer.settings.window);
    if (layer.settings.mask == MaskKind::Chunked) return "chunk " + std::to_string(layer.settings.chunk);
    if (layer.settings.mask == MaskKind::Band) return "local \xC2\xB1" + std::to_string(layer.settings.window);
    return "global";
}

// "L3", "L4 NoPE" for a layer that turns neither q nor k in a model whose others do, and for a
// model whose layers differ in what they see, its kind after it ("local 512", "chunk 8192", "global").
std::string layer_label(const ModelPass& pass, bool kinds_differ, int layer, bool nope) {
    std::string label = "L" + std::to_string(layer + 1) + (nope ? " NoPE" : "");
    if (!kinds_differ || layer >= static_cast<int>(pass.layers.size())) return label;
    return label + " " + layer_kind(pass.layers[static_cast<size_t>(layer)]);
}

// Query heads h and h + 1 share a K/V head.
bool shares_kv(const lm::Model& model, int h) { return model.kv_head(h) == model.kv_head(h + 1); }

// The grid's measures, from the pass and the room the tab gives it.
struct GridLayout {
    int heads = 0, layers = 0;
    int in_pass = 0;             // the pass's tokens
    int tokens = 0;              // those, then the written ones the pass does not hold yet
    bool grouped = false;        // grouped-query attention: query heads stand under their K/V head
    bool kinds_differ = false;   // layers that see differently (windows, chunks): each row says its kind
    std::vector<bool> nope;      // NoPE layers (SmolLM3) among RoPE ones
    float label_w = 0, gap = 0, group_gap = 0, line = 0;
    float map = 0, cell = 0;     // a map's side and a cell's, in pixels
    int block = 1;               // cells per drawn block, each way (cells under 2 px)
    std::vector<float> column;   // head h's left edge, its group's gaps before it
};

GridLayout lay_out_grid(const ModelViewState& m, float scale) {
    const lm::Model& model = *m.model;
    const lm::Shape& c = model.shape();
    const ModelPass& pass = m.pass;
    GridLayout g;
    g.heads = c.heads;
    g.layers = static_cast<int>(pass.layers.size());
    g.in_pass = static_cast<int>(pass.tokens.size());
    g.tokens = g.in_pass + written_beyond_pass(m);
    g.grouped = c.kv_heads < c.heads;
    for (int l = 1; l < g.layers; ++l) g.kinds_differ |= layer_kind(pass.layers[static_cast<size_t>(l)]) != layer_kind(pass.layers[0]);
    g.kinds_differ |= g.layers > 0 && layer_kind(pass.layers[0]) != "global";  // every layer local: still said
    g.nope.assign(static_cast<size_t>(std::max(g.layers, 0)), false);
    bool any_rope = false;
    for (int l = 0; l < g.layers; ++l) any_rope |= pass.layers[static_cast<size_t>(l)].settings.positional == PositionalEncoding::Rotary;
    for (int l = 0; l < g.layers && any_rope; ++l)
        g.nope[static_cast<size_t>(l)] = pass.layers[static_cast<size_t>(l)].settings.positional != PositionalEncoding::Rotary &&
                                         !pass.layers[static_cast<size_t>(l)].settings.delta_net;  // a linear layer's order is its recurrence's
    for (int l = 0; l < g.layers; ++l)
        g.label_w = std::max(g.label_w, ImGui::CalcTextSize((layer_label(pass, g.kinds_differ, l, g.nope[static_cast<size_t>(l)]) + " ").c_str()).x);
    g.gap = 4.0f * scale;
    g.group_gap = g.grouped ? 10.0f * scale : 0.0f;
    const int groups = g.grouped ? c.kv_heads : 1;
    g.line = ImGui::GetTextLineHeightWithSpacing();
    // The maps fill the tab: as wide as the heads allow and as tall as the layers allow (down to
    // 48 px, below which the grid scrolls instead), at most 320 px.
    const ImVec2 room = ImGui::GetContentRegionAvail();
    const float header = g.line * (g.grouped ? 3.0f : 2.0f);  // K/V heads, heads, and the line said when maps are pooled
    const float by_width =
        (room.x - g.label_w - 8.0f * scale - static_cast<float>(groups - 1) * g.group_gap) / static_cast<float>(g.heads) - g.gap;
    const float by_height = (room.y - header - 8.0f * scale) / static_cast<float>(std::max(1, g.layers)) - g.gap;
    g.map = std::clamp(std::min(by_width, std::max(by_height, 48.0f * scale)), 16.0f * scale, 320.0f * scale);
    g.cell = g.map / static_cast<float>(g.tokens);
    g.block = std::max(1, static_cast<int>(std::ceil(2.0f / g.cell)));
    g.column.resize(static_cast<size_t>(g.heads));
    for (int h = 0, k = 0; h < g.heads; ++h) {
        if (h > 0 && g.grouped && !shares_kv(model, h - 1)) ++k;
        g.column[static_cast<size_t>(h)] = g.label_w + static_cast<float>(h) * (g.map + g.gap) + static_cast<float>(k) * g.group_gap;
    }
    return g;
}

// A cell's weight where its query sees its key; none where the mask hides it. A written token's
// row as it was written; a Gated DeltaNet head's implied weights, signed and unbounded.
std::optional<float> grid_weight(const ModelViewState& m, const GridLayout& g, int l, int h, int i, int j) {
    if (i >= g.in_pass) return written_weight(m, l, h, i, j);
    const Trace& trace = m.pass.layers[static_cast<size_t>(l)];
    if (j >= g.in_pass || !sees(trace, i, j) || h >= static_cast<int>(trace.head.size())) return std::nullopt;  // a layer of fewer heads
    const HeadTrace& head = trace.head[static_cast<size_t>(h)];
    return head.implied_weights.size() != 0 ? head.implied_weights(i, j) : head.weights(i, j);
}

// Each K/V head above the query heads that read it, a bracket spanning them.
void draw_kv_brackets(PanelContext state, const lm::Model& model, const GridLayout& g, ImVec2 origin) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float scale = state.fonts.scale;
    std::string record;
    for (int h = 0; h < g.heads;) {
        int end = h;
        while (end + 1 < g.heads && shares_kv(model, end)) ++end;
        const float x0 = origin.x + g.column[static_cast<size_t>(h)], x1 = origin.x + g.column[static_cast<size_t>(end)] + g.map;
        const std::string label = "K/V head " + std::to_string(model.kv_head(h) + 1);
        const ImVec2 size = ImGui::CalcTextSize(label.c_str());
        const ImU32 colour = pack(category_colour(model.kv_head(h)));
        draw->AddText(ImVec2((x0 + x1 - size.x) * 0.5f, origin.y), colour, label.c_str());
        const float y = origin.y + g.line - 3.0f * scale;
        draw->AddLine(ImVec2(x0, y), ImVec2(x1, y), colour, 2.0f * scale);
        record += (record.empty() ? "" : " ") + std::to_string(model.kv_head(h) + 1) + ":" + std::to_string(h + 1) + "-" + std::to_string(end + 1);
        h = end + 1;
    }
    record_item(state, "model.kv_groups", record);
}

// The largest |implied weight| of a Gated DeltaNet head (its map's colours are |A| over it); 1 for
// a softmax head.
float map_scale(const Trace& trace, int h) {
    const bool has_head = h < static_cast<int>(trace.head.size());
    if (!trace.settings.delta_net || !has_head || trace.head[static_cast<size_t>(h)].implied_weights.size() == 0) return 1.0f;
    return std::max(trace.head[static_cast<size_t>(h)].implied_weights.cwiseAbs().maxCoeff(), 1e-30f);
}

// What marks a head's map beside its weights: asked once a frame, drawn and recorded from it.
struct MapMarks {
    bool opened = false;   // the layer and head open in the pipeline
    bool ablated = false;  // crossed out: the head adds nothing to the layer's output
    bool hovered = false;
    std::optional<interpret::Role> role;  // its badge
};

// One head's map at p0: the masked grey, the weights the mask lets through over it in viridis (as
// the weights cards are), the newest token's row lit, the K/V head's colour along the top, an
// ablated head crossed out, its role's badge, and the frame of the map opened or hovered.
void draw_head_map(PanelContext state, const ModelViewState& m, const GridLayout& g, int l, int h, ImVec2 p0, const MapMarks& marks) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float scale = state.fonts.scale, map = g.map, cell = g.cell;
    const Trace& trace = m.pass.layers[static_cast<size_t>(l)];
    const bool linear = trace.settings.delta_net;
    const float largest_size = map_scale(trace, h);
    draw->AddRectFilled(p0, ImVec2(p0.x + map, p0.y + map), pack(kMaskedBackground, 90));
    // Cells under 2 px: each block of `block` × `block` cells one rectangle, coloured by the
    // largest weight the mask lets through in it (a head's peaks stay visible; said above).
    for (int i0 = 0; i0 < g.tokens; i0 += g.block)
        for (int j0 = 0; j0 < g.tokens; j0 += g.block) {
            float largest = -1.0f;
            for (int i = i0; i < std::min(g.tokens, i0 + g.block); ++i)
                for (int j = j0; j < std::min(g.tokens, j0 + g.block); ++j)
                    if (const std::optional<float> v = grid_weight(m, g, l, h, i, j))
                        largest = std::max(largest, linear ? std::abs(*v) / largest_size : *v);
            if (largest < 0.0f) continue;  // every cell of the block masked: the ground shows
            const ImVec2 a(p0.x + static_cast<float>(j0) * cell, p0.y + static_cast<float>(i0) * cell);
            const float side = static_cast<float>(g.block) * cell;
            draw->AddRectFilled(a, ImVec2(std::min(a.x + side + 0.5f, p0.x + map), std::min(a.y + side + 0.5f, p0.y + map)), pack(viridis(largest)));
        }
    if (!m.write.written.empty()) {  // the newest token's query row, as it is written
        const float y_row = p0.y + static_cast<float>(g.tokens - 1) * cell;
        draw->AddRect(ImVec2(p0.x, y_row), ImVec2(p0.x + map, std::min(y_row + std::max(cell, 2.0f), p0.y + map)), IM_COL32(255, 200, 60, 255),
                      0.0f, 0, std::max(1.0f, scale));
    }
    if (g.grouped)  // the K/V head's colour along the map's top edge
        draw->AddRectFilled(ImVec2(p0.x, p0.y - 2.0f * scale), ImVec2(p0.x + map, p0.y), pack(category_colour(m.model->kv_head(h))));
    if (marks.ablated) {
        const ImU32 cross = IM_COL32(255, 70, 50, 235);
        const float inset = std::max(1.0f, map * 0.06f), thickness = std::max(2.0f, map * 0.05f);
        draw->AddRectFilled(p0, ImVec2(p0.x + map, p0.y + map), IM_COL32(0, 0, 0, 90));
        draw->AddLine(ImVec2(p0.x + inset, p0.y + inset), ImVec2(p0.x + map - inset, p0.y + map - inset), cross, thickness);
        draw->AddLine(ImVec2(p0.x + map - inset, p0.y + inset), ImVec2(p0.x + inset, p0.y + map - inset), cross, thickness);
    }
    if (marks.role) draw_role_badge(state, ImVec2(p0.x + 2.0f * scale, p0.y + 2.0f * scale), *marks.role);
    if (marks.opened || marks.hovered)
        draw->AddRect(ImVec2(p0.x - 2, p0.y - 2), ImVec2(p0.x + map + 2, p0.y + map + 2),
                      marks.opened ? IM_COL32(255, 200, 60, 255) : IM_COL32(255, 255, 255, 200), 0.0f, 0, 2.0f);
}

// What a map's tooltip adds about its head and layer: the K/V head it reads, what the layer sees,
// a linear layer's implied weights, a missing head, the query temperature, NoPE.
std::string head_map_notes(const ModelViewState& m, const GridLayout& g, int l, int h) {
    const lm::Model& model = *m.model;
    const Trace& trace = m.pass.layers[static_cast<size_t>(l)];
    const bool linear = trace.settings.delta_net, local = layer_kind(trace) != "global";
    std::string about;
    if (g.grouped) {
        int first = h, last = h;
        while (first > 0 && model.kv_head(first - 1) == model.kv_head(h)) --first;
        while (last + 1 < g.heads && model.kv_head(last + 1) == model.kv_head(h)) ++last;
        about += "\nreads K/V head " + std::to_string(model.kv_head(h) + 1) + ", shared by query heads " + std::to_string(first + 1) + "\xE2\x80\x93" +
                 std::to_string(last + 1);
    }
    if (g.kinds_differ && !linear)
        about += trace.settings.mask == MaskKind::Chunked
                     ? "\nchunked layer: each query sees the earlier keys of its own chunk of " + std::to_string(trace.settings.chunk) +
                           " tokens (itself included), none before it"
                 : trace.settings.mask == MaskKind::Band
                     ? "\nlocal layer: each query sees the keys up to " + std::to_string(trace.settings.window) +
                           " positions before and after it (itself included)"
                 : local ? "\nlocal layer: each query sees its last " + std::to_string(model.window(l)) + " keys (itself included)"
                         : std::string("\nglobal layer: each query sees every earlier key");
    if (linear)
        about += "\nlinear layer (Gated DeltaNet): no softmax; its output is A\xC2\xB7V with A implied by its recurrence, a cell signed "
                 "and a row not summing to 1 (the colour is |A| over this head's largest, " + attn::format_value(map_scale(trace, h), 4) +
                 "); all it keeps is a state of " + std::to_string(trace.d_k) + " \xC3\x97 " + std::to_string(trace.d_v) +
                 " per head, whatever the length";
    if (trace.settings.differential && trace.differential.pairs > 0) {  // DiffLlama: the pair this map belongs to
        const int pairs = trace.differential.pairs, p = h % pairs;
        about += "\ndifferential attention: pair " + std::to_string(p + 1) + " is heads " + std::to_string(p + 1) + " and " +
                 std::to_string(p + pairs + 1) + "; this map is its " +
                 (h < pairs ? std::string("first, from which ")
                            : std::string("second, taken \xC3\x97 \xCE\xBB from the first; ")) +
                 (h < pairs ? "\xCE\xBB \xC3\x97 head " + std::to_string(p + pairs + 1) + "'s is taken" : std::string("\xCE\xBB = ") + attn::format_value(trace.differential.lambda, 4)) +
                 ". The pair writes one output: ablating either head silences both";
    }
    if (h >= static_cast<int>(trace.head.size()))
        about += "\nthis layer has " + std::to_string(trace.head.size()) + " heads: there is no head " + std::to_string(h + 1);
    if (trace.settings.temperature.on())
        about += "\nquery temperature: each query \xC3\x97 ln(floor((p + 1)/" + attn::format_value(trace.settings.temperature.floor_scale, 4) +
                 ") + 1)\xC2\xB7" + attn::format_value(trace.settings.temperature.attn_scale, 4) + " + 1, sharper as the text grows";
    if (g.nope[static_cast<size_t>(l)])
        about += "\nNoPE layer: q and k are not turned, so a score does not depend on how far apart the tokens are; "
                 "order reaches this layer only through the causal mask and the stream";
    return about;
}

// The tooltip of head h's map in layer l, the mouse over query row i and key column j.
void head_map_tooltip(const ModelViewState& m, const GridLayout& g, int l, int h, int i, int j) {
    const bool linear = m.pass.layers[static_cast<size_t>(l)].settings.delta_net;
    const bool ablated = m.pass.ablated.heads.count({l, h}) > 0;
    std::string about = head_map_notes(m, g, l, h);
    char weight[64];
    if (const std::optional<float> v = grid_weight(m, g, l, h, i, j))
        std::snprintf(weight, sizeof weight, linear ? "implied weight %.4g" : "weight %.3f", static_cast<double>(*v));
    else std::snprintf(weight, sizeof weight, "masked: the query does not see this key");
    if (i >= g.in_pass) about += "\nwritten token: its row as it was written, against the cached keys";
    about += head_roles_line(m, {l, h});
    ImGui::SetTooltip("layer %d, head %d%s: %s \xE2\x86\x92 %s  %s%s\nclick to open this layer and head in the pipeline\n%s", l + 1, h + 1,
                      ablated ? " (ablated: its output is zeroed, it adds nothing)" : "", text_token(m, i).c_str(), text_token(m, j).c_str(),
                      weight, about.c_str(), ablated ? "right-click to restore this head" : "right-click to ablate this head (zero its rows of W_O)");
}

}  // namespace

// The layers × heads grid: each map a head's (n × n) weights, the masked cells grey. Query heads
// that read one K/V head (grouped-query attention) stand together under its label, a wider gap
// between groups; a model with local (sliding-window) and global layers names each row's kind.
void draw_grid(PanelContext state, ModelViewState& m) {
    const lm::Model& model = *m.model;
    const ModelPass& pass = m.pass;
    const float scale = state.fonts.scale;
    const GridLayout g = lay_out_grid(m, scale);
    ImGui::BeginChild("model.grid", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
    if (g.block > 1) {
        const std::string text = std::to_string(g.tokens) + " tokens in " + std::to_string(static_cast<int>(g.map)) +
                                 " px: each point of a map is the largest weight of a block of " + std::to_string(g.block) + " \xC3\x97 " +
                                 std::to_string(g.block) + " cells; the tooltip reads each cell, and a click opens the whole layer.";
        ImGui::TextDisabled("%s", text.c_str());  // one line, counted in the header above the maps
        record_item(state, "model.grid_pooled", text);
    }
    ImDrawList* draw = ImGui::GetWindowDrawList();
    ImVec2 origin = ImGui::GetCursorScreenPos();
    if (g.grouped) {
        draw_kv_brackets(state, model, g, origin);
        origin.y += g.line;
    }
    for (int h = 0; h < g.heads; ++h) {
        const std::string label = "H" + std::to_string(h + 1);
        const ImVec2 size = ImGui::CalcTextSize(label.c_str());
        draw->AddText(ImVec2(origin.x + g.column[static_cast<size_t>(h)] + (g.map - size.x) * 0.5f, origin.y),
                      ImGui::GetColorU32(ImGuiCol_TextDisabled), label.c_str());
    }
    origin.y += g.line;
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const float map = g.map;
    std::string kinds;
    for (int l = 0; l < g.layers; ++l) {
        const float y = origin.y + static_cast<float>(l) * (map + g.gap);
        const Trace& trace = pass.layers[static_cast<size_t>(l)];
        const bool local = layer_kind(trace) != "global";
        draw->AddText(ImVec2(origin.x, y + (map - ImGui::GetTextLineHeight()) * 0.5f),
                      g.kinds_differ && !local ? ImGui::GetColorU32(ImGuiCol_Text) : ImGui::GetColorU32(ImGuiCol_TextDisabled),
                      layer_label(pass, g.kinds_differ, l, g.nope[static_cast<size_t>(l)]).c_str());
        if (g.kinds_differ)
            kinds += (kinds.empty() ? "" : ",") +
                     std::string(trace.settings.delta_net ? "linear" : trace.settings.mask == MaskKind::Chunked ? "chunked" : local ? "local" : "global");
        for (int h = 0; h < g.heads; ++h) {
            const ImVec2 p0(origin.x + g.column[static_cast<size_t>(h)], y);
            MapMarks marks;
            marks.opened = m.layer == l && state.view.shown_head == h && !state.view.all_heads;
            marks.ablated = pass.ablated.heads.count({l, h}) > 0;
            marks.hovered = mouse.x >= p0.x && mouse.x < p0.x + map && mouse.y >= p0.y && mouse.y < p0.y + map && ImGui::IsWindowHovered();
            marks.role = head_role_badge(m, {l, h});
            draw_head_map(state, m, g, l, h, p0, marks);
            ImGui::SetCursorScreenPos(p0);
            ImGui::InvisibleButton(("map" + std::to_string(l) + "_" + std::to_string(h)).c_str(), ImVec2(map, map),
                                   ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
            std::string record = marks.opened ? "open" : "";
            if (marks.ablated) record += record.empty() ? "ablated" : " ablated";
            if (marks.role) record += (record.empty() ? "" : " ") + std::string(interpret::role_key(*marks.role));
            record_item(state, ("model.map." + std::to_string(l + 1) + "." + std::to_string(h + 1)).c_str(), record);
            if (ImGui::IsItemHovered()) {  // the query row and key column under the mouse
                const int i = std::clamp(static_cast<int>((mouse.y - p0.y) / g.cell), 0, g.tokens - 1);
                const int j = std::clamp(static_cast<int>((mouse.x - p0.x) / g.cell), 0, g.tokens - 1);
                head_map_tooltip(m, g, l, h, i, j);
            }
            if (ImGui::IsItemClicked(ImGuiMouseButton_Left)) m.layer_asked = std::pair{l, h};  // opened by the next update
            if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) m.ablation_toggles.push_back({l, h});
        }
    }
    if (g.kinds_differ) record_item(state, "model.layer_kinds", kinds);
    std::string nope_rows;
    for (int l = 0; l < g.layers; ++l)
        if (g.nope[static_cast<size_t>(l)]) nope_rows += (nope_rows.empty() ? "" : ",") + std::to_string(l + 1);
    if (!nope_rows.empty()) record_item(state, "model.nope_layers", nope_rows);
    ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + static_cast<float>(g.layers) * (map + g.gap)));
    ImGui::Dummy(ImVec2(g.column.empty() ? g.label_w : g.column.back() + map + g.gap, 1.0f));
    ImGui::EndChild();
}

}  // namespace attn::ui
