// The model view's Compare tab: the model's attention weights A and B side by side with
// B − A, as View → Compare draws a scenario's (the same cards, the same colour scales:
// viridis for weights, RdBu diverging around 0 for the difference).
//   two sentences: one layer and head, on the model view's sentence (A) and on sentence B;
//   two heads:     layer/head A and layer/head B, on the model view's sentence.
// B − A is taken position against position, so it needs as many tokens in A as in B; when
// they differ, A and B are drawn and the reason is said instead of a difference.
//
// Index
// [SECTION] Sentence B and the comparison (before the frame draws)
// [SECTION] Drawing
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <chrono>
#include <future>
#include <string>

#include <imgui.h>

#include "ui/arithmetic.hpp"
#include "ui/cards.hpp"
#include "ui/panel_model.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

constexpr const char* kAnimalTired = "The animal did not cross the road because it was tired";
constexpr const char* kAnimalWide = "The animal did not cross the road because it was wide";

// A sentence's words, lower case, without punctuation, "the" left out (every sentence has it).
std::vector<std::string> content_words(const std::string& sentence) {
    std::vector<std::string> words;
    std::string word;
    for (const char ch : sentence + " ") {
        if (std::isalnum(static_cast<unsigned char>(ch))) {
            word += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        } else if (!word.empty()) {
            if (word != "the") words.push_back(word);
            word.clear();
        }
    }
    return words;
}

bool share_a_word(const std::string& a, const std::string& b) {
    const std::vector<std::string> wa = content_words(a), wb = content_words(b);
    return std::any_of(wa.begin(), wa.end(), [&](const std::string& w) { return std::find(wb.begin(), wb.end(), w) != wb.end(); });
}

std::string head_name(stack::HeadId id) { return "layer " + std::to_string(id.layer + 1) + " \xC2\xB7 head " + std::to_string(id.head + 1); }

std::string compare_key(const ModelViewState& m) {
    const ModelCompareState& c = m.compare;
    return std::string(c.two_sentences ? "sentences" : "heads") + "/" + std::to_string(m.revision) + "/" +
           std::to_string(c.b_revision) + "/" + std::to_string(c.head_a.layer) + "." + std::to_string(c.head_a.head) + "/" +
           std::to_string(c.head_b.layer) + "." + std::to_string(c.head_b.head);
}

stack::HeadId clamp_head(stack::HeadId id, const lm::Shape& config) {
    return {std::clamp(id.layer, 0, std::max(0, config.layers - 1)), std::clamp(id.head, 0, std::max(0, config.heads - 1))};
}

}  // namespace

std::string partner_sentence(const std::string& a) {
    if (a == kAnimalTired) return kAnimalWide;
    if (a == kAnimalWide) return kAnimalTired;
    const std::vector<std::string> sentences = article_sentences();
    const auto at = std::find(sentences.begin(), sentences.end(), a);
    if (at == sentences.end()) return a;
    const size_t i = static_cast<size_t>(at - sentences.begin());
    if (i + 1 < sentences.size() && share_a_word(a, sentences[i + 1])) return sentences[i + 1];
    if (i > 0 && share_a_word(a, sentences[i - 1])) return sentences[i - 1];
    return a;
}

// [SECTION] Sentence B and the comparison (before the frame draws)

void update_model_compare(ModelViewState& m) {
    ModelCompareState& c = m.compare;
    if (!m.model || !c.shown) return;
    const lm::Shape& config = m.model->shape();
    c.head_a = clamp_head(c.head_a, config);
    c.head_b = clamp_head(c.head_b, config);
    if (c.two_sentences) {
        if (c.b_follows_a) c.sentence_b = partner_sentence(m.computed_sentence);
        // Run again for a new B (once it is entered) or when the model's ablated heads changed:
        // A and B are the same model.
        // B runs as a job (the model's layers never run on the window's thread); it lands here.
        if (c.running_b.valid() && c.running_b.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
            c.pass_b = c.running_b.get();
            c.computed_b = c.asked_b;
            ++c.b_revision;
        }
        const bool stale = c.sentence_b != c.computed_b || c.pass_b.ablated != m.pass.ablated;
        if (stale && !c.running_b.valid() && !ImGui::GetIO().WantTextInput) {
            c.asked_b = c.sentence_b;
            c.running_b = std::async(std::launch::async, [model = &*m.model, sentence = c.sentence_b, ablated = m.pass.ablated] {
                return lm::forward_text(*model, sentence, ablated);
            });
        }
    }
    const std::string key = compare_key(m);
    if (key == c.key) return;
    c.key = key;
    c.result = c.two_sentences ? gpt2::compare_weights(m.pass, c.head_a, c.pass_b, c.head_a)
                               : gpt2::compare_weights(m.pass, c.head_a, m.pass, c.head_b);
    ++c.generation;
}

// [SECTION] Drawing

namespace {

// A layer and a head, from 1 on screen.
bool head_picker(const char* id, stack::HeadId& head, const lm::Shape& config, float scale) {
    bool changed = false;
    int layer = head.layer + 1, h = head.head + 1;
    ImGui::PushID(id);
    ImGui::SetNextItemWidth(110.0f * scale);
    changed |= ImGui::SliderInt("##layer", &layer, 1, config.layers, "layer %d", ImGuiSliderFlags_AlwaysClamp);
    ImGui::SameLine(0.0f, 4.0f * scale);
    ImGui::SetNextItemWidth(100.0f * scale);
    changed |= ImGui::SliderInt("##head", &h, 1, config.heads, "head %d", ImGuiSliderFlags_AlwaysClamp);
    ImGui::PopID();
    head = {layer - 1, h - 1};
    return changed;
}

HeatmapSpec weights_spec(const std::string& name, const std::string& title, const std::string& shape, const Matrix& weights,
                         const Trace& layer, int head) {
    HeatmapSpec spec;
    spec.name = name;
    spec.title = title;
    spec.shape = shape;
    spec.values = &weights;
    spec.scale = ColorScale::Weights;
    spec.row_axis = Axis::Query;
    spec.col_axis = Axis::Key;
    spec.row_tokens = &layer.query_tokens;
    spec.col_tokens = &layer.key_tokens;
    spec.mask = &layer.visible;         // causal: the keys after a query hatched
    spec.show_masked_value = false;
    spec.trace = &layer;                // the tooltip's arithmetic: that layer's softmax
    spec.matrix = "head" + std::to_string(head) + ".weights";
    return spec;
}

}  // namespace

void draw_model_compare(Context& state, ModelViewState& m, HeatmapTextures& textures) {
    ModelCompareState& c = m.compare;
    const lm::Shape& config = m.model->shape();
    const float scale = state.fonts.scale;
    c.hover = c.hover_next;  // the three cards' own hover: last frame's, then this frame's
    c.hover_next = HoverState{};

    if (ImGui::RadioButton("two sentences", c.two_sentences)) c.two_sentences = true;
    record_item(state, "model.compare.mode.sentences", c.two_sentences ? "on" : "off");
    ImGui::SameLine();
    if (ImGui::RadioButton("two heads", !c.two_sentences)) c.two_sentences = false;
    record_item(state, "model.compare.mode.heads", c.two_sentences ? "off" : "on");
    ImGui::SameLine();
    ImGui::TextDisabled(c.two_sentences ? "one head, A on the sentence above, B on this one:" : "on the sentence above:");
    if (c.two_sentences) {
        char buffer[2048];
        const size_t n = std::min(c.sentence_b.size(), sizeof buffer - 1);
        c.sentence_b.copy(buffer, n);
        buffer[n] = '\0';
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted("B");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(-1.0f);
        if (ImGui::InputText("##model.compare.sentence_b", buffer, sizeof buffer)) c.b_follows_a = false;
        record_item(state, "model.compare.sentence_b", buffer);
        c.sentence_b = buffer;
        head_picker("head", c.head_a, config, scale);
    } else {
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted("A");
        ImGui::SameLine();
        head_picker("a", c.head_a, config, scale);
        ImGui::SameLine(0.0f, 24.0f * scale);
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted("B");
        ImGui::SameLine();
        head_picker("b", c.head_b, config, scale);
    }
    // Explanations wrap at the tab's edge, never cut by it.
    if (m.layer >= 0) {
        hint_text("A is the model view's pass: it includes any edit of layer " + std::to_string(m.layer + 1) + " in the pipeline" +
                  (c.two_sentences ? "; B is the checkpoint's, with the same heads ablated." : "."));
        record_item(state, "model.compare.explained", "A is the model view's pass");
    } else if (!m.pass.ablated.empty()) {
        hint_text("Both with the model view's " + std::to_string(m.pass.ablated.size()) + " ablated head" +
                  (m.pass.ablated.size() == 1 ? "." : "s."));
        record_item(state, "model.compare.explained", "Both with the model view's ablated heads");
    }

    // What the comparison was made from must be what the passes are now (a model opened this
    // frame has dropped them): else it waits for the next frame.
    if (c.key != compare_key(m)) {
        ImGui::TextDisabled("computing\xE2\x80\xA6");
        return;
    }
    if (c.two_sentences && !c.pass_b.ok) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 110, 100, 255));
        for (const std::string& e : c.pass_b.errors) ImGui::TextWrapped("Sentence B cannot run: %s", e.c_str());
        ImGui::PopStyleColor();
        record_item(state, "model.compare.message", "Sentence B cannot run");
        return;
    }
    const gpt2::WeightsComparison& r = c.result;
    if (!r.ok) {
        ImGui::TextWrapped("%s", r.error.c_str());
        record_item(state, "model.compare.message", r.error);
        return;
    }
    const ModelPass& pass_b = c.two_sentences ? c.pass_b : m.pass;
    const stack::HeadId head_b = c.two_sentences ? c.head_a : c.head_b;
    const Trace& layer_a = m.pass.layers[static_cast<size_t>(c.head_a.layer)];
    const Trace& layer_b = pass_b.layers[static_cast<size_t>(head_b.layer)];

    // The largest change, or why there is no difference.
    if (r.has_difference) {
        char text[256];
        if (r.max_row >= 0 && std::isfinite(r.max_abs))
            std::snprintf(text, sizeof text, "largest |B \xE2\x88\x92 A| = %.4f, query %s \xE2\x86\x92 key %s", static_cast<double>(r.max_abs),
                          r.tokens[static_cast<size_t>(r.max_row)].c_str(), r.tokens[static_cast<size_t>(r.max_col)].c_str());
        else
            std::snprintf(text, sizeof text, "largest |B \xE2\x88\x92 A| = %g (a weight is not a number)", static_cast<double>(r.max_abs));
        ImGui::TextWrapped("%s", text);
        char value[32];
        std::snprintf(value, sizeof value, "%.6f", static_cast<double>(r.max_abs));
        record_item(state, "model.compare.max", value);
        if (r.differing_tokens > 0) {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
            ImGui::TextWrapped("%d of %zu positions hold other tokens (\"a | b\": A's | B's): compared position by position.",
                               r.differing_tokens, r.tokens.size());
            ImGui::PopStyleColor();
        }
    } else {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 170, 90, 255));
        ImGui::TextWrapped("%s", r.message.c_str());
        ImGui::PopStyleColor();
        record_item(state, "model.compare.message", r.message);
        record_item(state, "model.compare.max", "none");
    }

    // The cards: A, B and, where it is defined, B − A.
    const std::string shape_a = std::to_string(r.a->rows()) + " tokens" + (c.two_sentences ? ", sentence A" : "");
    const std::string shape_b = std::to_string(r.b->rows()) + " tokens" + (c.two_sentences ? ", sentence B" : "");
    HeatmapSpec specs[3] = {
        weights_spec("model.compare.a", "A  " + head_name(c.head_a), shape_a, *r.a, layer_a, c.head_a.head),
        weights_spec("model.compare.b", "B  " + head_name(head_b), shape_b, *r.b, layer_b, head_b.head),
        HeatmapSpec{},
    };
    const int cards = r.has_difference ? 3 : 2;
    if (r.has_difference) {
        HeatmapSpec& d = specs[2];
        d.name = "model.compare.diff";
        d.title = "B \xE2\x88\x92 A";
        d.shape = r.differing_tokens > 0 ? "rows and columns: A's token | B's where they differ" : "blue: B lower, red: B higher";
        d.values = &r.difference;
        d.scale = ColorScale::Diverging;   // RdBu around 0, as View → Compare's B − A
        d.row_axis = Axis::Query;
        d.col_axis = Axis::Key;
        d.row_tokens = d.col_tokens = &r.tokens;
        d.matrix = "weights";
        d.diff_a = r.a;
        d.diff_b = r.b;
    }
    // One cell size for the cards, the largest that fits side by side.
    CardText texts[3];
    CardMetrics metrics[3];
    for (int i = 0; i < cards; ++i) texts[i] = measure_text(specs[i], state.fonts);
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float gap = 28.0f * scale;
    fit_side_by_side(specs, texts, cards, 48.0f * scale, 3.0f, gap,
                     ImVec2(avail.x - 10.0f, std::max(avail.y - 40.0f * scale, 120.0f * scale)), false, state.fonts, metrics);
    const NonFiniteReport no_report;  // the weights' NaN/∞ are drawn black and said in the tooltip and the largest |B − A|
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    float x = origin.x, height = 0;
    for (int i = 0; i < cards; ++i) {
        ImGui::SetCursorScreenPos(ImVec2(x, origin.y));
        CardContext context{state.fonts,   state.view,   i == 1 ? layer_b : layer_a, c.generation, no_report,
                            c.hover,       c.hover_next, state.views,                state.editor, state.painter,
                            textures,      state.layout_next, {}};
        draw_card(specs[i], metrics[i], context);  // nothing here is editable: no edits come back
        x += metrics[i].width + gap;
        height = std::max(height, metrics[i].height);
    }

    // Linked hover: the cell under the mouse, outlined in every card that has it.
    const HoverState& hover = c.hover;
    const bool ours = hover.row >= 0 && hover.matrix.rfind("model.compare.", 0) == 0;
    if (ours)
        outline_hovered_cell(hover, state.layout_next, [](const std::string& name) { return name.rfind("model.compare.", 0) == 0; },
                             2.0f * scale);
    ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + height + 6.0f * scale));
    if (ours && r.has_difference && hover.row < r.difference.rows() && hover.col < r.difference.cols()) {
        const std::string text = "query " + r.tokens[static_cast<size_t>(hover.row)] + " \xE2\x86\x92 key " +
                                 r.tokens[static_cast<size_t>(hover.col)] + ":  A = " + format_value((*r.a)(hover.row, hover.col), 4) +
                                 ",  B = " + format_value((*r.b)(hover.row, hover.col), 4) + ",  B \xE2\x88\x92 A = " +
                                 format_value(r.difference(hover.row, hover.col), 4);
        ImGui::TextWrapped("%s", text.c_str());
        record_item(state, "model.compare.hovered", text);
    } else {
        hint_text(std::string("Hover a cell: its query \xE2\x86\x92 key weight in A and B") +
                  (r.has_difference ? " and B \xE2\x88\x92 A, outlined in all three." : "."));
    }
    if (!r.has_difference)  // in the difference's place, the reason
        ImGui::TextWrapped("No B \xE2\x88\x92 A: it is taken position by position (query i \xE2\x86\x92 key j in A against the same "
                           "cell in B), so it needs two sentences with as many tokens. The chips above show A's tokens.");
    ImGui::Dummy(ImVec2(1.0f, 1.0f));
}

}  // namespace attn::ui
