// The model view's Compare tab: the model's attention weights A and B side by side with
// B − A, as View → Compare draws a scenario's (the same cards, the same colour scales:
// viridis for weights, RdBu diverging around 0 for the difference).
//   two sentences: one layer and head, on the model view's sentence (A) and on sentence B;
//   two heads:     layer/head A and layer/head B, on the model view's sentence;
//   two models:    a head of the model view's model (A) and a head of model B, another
//                  checkpoint (Llama against Gemma, GPT-2 against Pythia), on the model view's
//                  sentence, each tokenised by its own tokenizer: whether the tokenizations
//                  agree is said, since B − A is only read token against token where they do.
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
    const char* mode = c.mode == CompareMode::Sentences ? "sentences" : c.mode == CompareMode::Heads ? "heads" : "models";
    return std::string(mode) + "/" + std::to_string(m.revision) + "/" + std::to_string(c.model_b_revision) + "/" +
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

namespace {

// Model B, once its opening has landed: installed, or why not said (the model B before stays).
void collect_model_b(ModelCompareState& c) {
    std::optional<compute::ModelOpened> landed = c.opening_b.take();
    if (!landed) return;
    compute::ModelOpened opened = std::move(*landed);
    if (!opened.load.model) {
        c.b_said = "Model B cannot open: " + (opened.load.errors.empty() ? std::string("no model in ") + opened.asked : opened.load.errors.front());
        c.b_failed = true;
        return;
    }
    c.running_b.cancel();  // a pass on the model B it replaces: dropped (it keeps that model until it ends)
    c.model_b = std::make_shared<const lm::Model>(std::move(*opened.load.model));
    ++c.model_b_revision;
    c.b_said = "Model B: " + c.model_b->family() + ", " + opened.folder;
    c.b_failed = false;
    c.pass_b = std::move(opened.pass);
    c.computed_b = opened.sentence;
    ++c.b_revision;
}

}  // namespace

void open_compare_model(ModelViewState& m, const std::string& folder) {
    ModelCompareState& c = m.compare;
    if (c.opening_b.running()) return;  // one at a time: the button says it is opening
    c.folder_b = folder;
    c.b_said = "Opening model B " + folder + "\xE2\x80\xA6";
    c.b_failed = false;
    c.opening_b.start("opening model B " + folder, [folder, sentence = m.computed_sentence](compute::JobProgress&) {
        return compute::open_model_folder(folder, sentence, stack::HeadSet{});
    });
}

void update_model_compare(ModelViewState& m) {
    ModelCompareState& c = m.compare;
    collect_model_b(c);
    if (!m.model || !c.shown) return;
    const lm::Shape& config = m.model->shape();
    c.head_a = clamp_head(c.head_a, config);
    c.head_b = clamp_head(c.head_b, c.mode == CompareMode::Models && c.model_b ? c.model_b->shape() : config);
    if (c.mode != CompareMode::Heads) {
        // B runs as a job (the model's layers never run on the window's thread); it lands here.
        if (std::optional<ModelPass> landed = c.running_b.take()) {
            c.pass_b = std::move(*landed);
            c.computed_b = c.asked_b;
            ++c.b_revision;
        }
    }
    if (c.mode == CompareMode::Sentences) {
        if (c.b_follows_a) c.sentence_b = partner_sentence(m.computed_sentence);
        // Run again for a new B (once it is entered) or when the model's ablated heads changed:
        // A and B are the same model.
        const bool stale = c.sentence_b != c.computed_b || c.pass_b.ablated != m.pass.ablated;
        if (stale && !c.running_b.running() && !ImGui::GetIO().WantTextInput) {
            c.asked_b = c.sentence_b;
            c.running_b.start("running sentence B", [model = m.model, sentence = c.sentence_b, ablated = m.pass.ablated](compute::JobProgress& progress) {
                const stack::CancelScope cancel(progress.cancel_flag());
                return lm::forward_text(*model, sentence, ablated);
            });
        }
    } else if (c.mode == CompareMode::Models && c.model_b && !c.opening_b.running()) {
        // Model B on the model view's sentence, intact (its heads are not the model view's to ablate).
        const bool stale = m.computed_sentence != c.computed_b || !c.pass_b.ablated.empty();
        if (stale && !c.running_b.running()) {
            c.asked_b = m.computed_sentence;
            c.running_b.start("running the sentence on model B", [model = c.model_b, sentence = m.computed_sentence](compute::JobProgress& progress) {
                const stack::CancelScope cancel(progress.cancel_flag());
                return lm::forward_text(*model, sentence);
            });
        }
    }
    const std::string key = compare_key(m);
    if (key == c.key) return;
    c.key = key;
    switch (c.mode) {
        case CompareMode::Sentences: c.result = compare_weights(m.pass, c.head_a, c.pass_b, c.head_a); break;
        case CompareMode::Heads: c.result = compare_weights(m.pass, c.head_a, m.pass, c.head_b); break;
        case CompareMode::Models:
            c.result = c.model_b ? compare_weights(m.pass, c.head_a, c.pass_b, c.head_b) : WeightsComparison{};
            if (!c.model_b) c.result.error = "Open model B: a checkpoint folder, or a model of the Hugging Face cache by its name.";
            break;
    }
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
    // a Gated DeltaNet head's implied weights: signed, no softmax's
    spec.scale = layer.settings.delta_net ? ColorScale::Diverging : ColorScale::Weights;
    spec.row_axis = Axis::Query;
    spec.col_axis = Axis::Key;
    spec.row_tokens = &layer.query_tokens;
    spec.col_tokens = &layer.key_tokens;
    spec.mask = &layer.visible;         // causal: the keys after a query hatched
    spec.show_masked_value = false;
    spec.trace = &layer;                // the tooltip's arithmetic: that layer's softmax
    spec.matrix = "head" + std::to_string(head) + (layer.settings.delta_net ? ".implied_weights" : ".weights");
    return spec;
}

// [SECTION] The comparison's parts

// The mode (two sentences, two heads, two models) and what each compares: sentence B, model B's
// folder, the heads picked.
void draw_compare_controls(PanelContext state, ModelViewState& m) {
    ModelCompareState& c = m.compare;
    const lm::Shape& config = m.model->shape();
    const float scale = state.fonts.scale;
    const bool sentences = c.mode == CompareMode::Sentences, models = c.mode == CompareMode::Models;
    if (ImGui::RadioButton("two sentences", sentences)) c.mode = CompareMode::Sentences;
    record_item(state, "model.compare.mode.sentences", sentences ? "on" : "off");
    ImGui::SameLine();
    if (ImGui::RadioButton("two heads", c.mode == CompareMode::Heads)) c.mode = CompareMode::Heads;
    record_item(state, "model.compare.mode.heads", c.mode == CompareMode::Heads ? "on" : "off");
    ImGui::SameLine();
    if (ImGui::RadioButton("two models", models) && !models) {
        c.mode = CompareMode::Models;
        c.head_b = c.head_a;  // the same head of the other model, to begin with
    }
    record_item(state, "model.compare.mode.models", models ? "on" : "off");
    ImGui::SameLine();
    ImGui::TextDisabled(sentences ? "one head, A on the sentence above, B on this one:"
                        : models  ? "the sentence above through this model (A) and model B:"
                                  : "on the sentence above:");
    if (sentences) {
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted("B");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(-1.0f);
        if (input_line("##model.compare.sentence_b", c.sentence_b)) c.b_follows_a = false;
        record_item(state, "model.compare.sentence_b", c.sentence_b);
        head_picker("head", c.head_a, config, scale);
    } else if (models) {
        // Model B's folder (or cached name), opened as a job.
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted("model B");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(std::max(160.0f * scale, ImGui::GetContentRegionAvail().x - 140.0f * scale));
        const bool entered = input_line("##model.compare.folder_b", c.folder_b, ImGuiInputTextFlags_EnterReturnsTrue);
        record_item(state, "model.compare.folder_b", c.folder_b);
        ImGui::SameLine();
        ImGui::BeginDisabled(c.opening_b.running() || c.folder_b.empty());
        const bool open = ImGui::Button(c.opening_b.running() ? "opening\xE2\x80\xA6" : "Open model B");
        ImGui::EndDisabled();
        record_item(state, "model.compare.open_b", "");
        if ((entered || open) && !c.folder_b.empty()) open_compare_model(m, c.folder_b);
        if (!c.b_said.empty()) {
            ImGui::PushStyleColor(ImGuiCol_Text, c.b_failed ? ImVec4(1.0f, 0.43f, 0.39f, 1.0f) : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
            ImGui::TextWrapped("%s", c.b_said.c_str());
            ImGui::PopStyleColor();
            record_item(state, "model.compare.model_b", c.b_said);
        }
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted("A");
        ImGui::SameLine();
        head_picker("a", c.head_a, config, scale);
        if (c.model_b) {
            ImGui::SameLine(0.0f, 24.0f * scale);
            ImGui::AlignTextToFramePadding();
            ImGui::TextUnformatted("B");
            ImGui::SameLine();
            head_picker("b", c.head_b, c.model_b->shape(), scale);
        }
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
}

// Which passes A and B are (an edit in the pipeline, the heads and experts ablated), in words that
// wrap at the tab's edge, never cut by it.
void explain_passes(PanelContext state, const ModelViewState& m) {
    const bool sentences = m.compare.mode == CompareMode::Sentences, models = m.compare.mode == CompareMode::Models;
    if (m.layer >= 0) {
        hint_text("A is the model view's pass: it includes any edit of layer " + std::to_string(m.layer + 1) + " in the pipeline" +
                  (sentences ? "; B is the checkpoint's, with the same heads and experts ablated." : models ? "; B is model B's, as its checkpoint holds it." : "."));
        record_item(state, "model.compare.explained", "A is the model view's pass");
    } else if (!m.pass.ablated.empty()) {
        const size_t heads = m.pass.ablated.heads.size(), experts = m.pass.ablated.experts.size();
        std::string what;
        if (heads > 0) what = std::to_string(heads) + (heads == 1 ? " ablated head" : " ablated heads");
        if (experts > 0) what += (what.empty() ? "" : " and ") + std::to_string(experts) + (experts == 1 ? " ablated expert" : " ablated experts");
        hint_text("Both with the model view's " + what + ".");
        record_item(state, "model.compare.explained", "Both with the model view's ablated heads");
    }

}

// Whether there is a comparison to draw; else what stands in its way, said.
bool comparison_ready(PanelContext state, const ModelViewState& m) {
    const ModelCompareState& c = m.compare;
    const bool sentences = c.mode == CompareMode::Sentences, models = c.mode == CompareMode::Models;
    // What the comparison was made from must be what the passes are now (a model opened this
    // frame has dropped them): else it waits for the next frame.
    if (c.key != compare_key(m)) {
        ImGui::TextDisabled("computing\xE2\x80\xA6");
        return false;
    }
    if ((sentences || (models && c.model_b)) && !c.pass_b.ok) {
        const char* which = sentences ? "Sentence B cannot run: %s" : "Model B cannot run the sentence: %s";
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 110, 100, 255));
        for (const std::string& e : c.pass_b.errors) ImGui::TextWrapped(which, e.c_str());
        ImGui::PopStyleColor();
        record_item(state, "model.compare.message", sentences ? "Sentence B cannot run" : "Model B cannot run the sentence");
        return false;
    }
    if (!c.result.ok) {
        ImGui::TextWrapped("%s", c.result.error.c_str());
        record_item(state, "model.compare.message", c.result.error);
        return false;
    }
    return true;
}

// Two models: whether their tokenizers cut the sentence alike (B − A reads token against token).
void say_tokenizations(PanelContext state, const ModelViewState& m, const ModelPass& pass_b) {
    const ModelCompareState& c = m.compare;
    const WeightsComparison& r = c.result;
    std::string text;
    if (m.pass.tokens == pass_b.tokens)
        text = "The tokenizations agree: " + std::to_string(m.pass.tokens.size()) + " tokens, the same pieces, so B \xE2\x88\x92 A compares "
               "the same query and key in both models.";
    else
        text = "The tokenizations differ: A has " + std::to_string(m.pass.tokens.size()) + " tokens, B " + std::to_string(pass_b.tokens.size()) +
               " (" + m.model->family() + " and " + c.model_b->family() + " tokenise the sentence their own way)" +
               (r.has_difference ? ": B \xE2\x88\x92 A compares positions, which hold other tokens where marked a | b."
                                 : ", so there is no B \xE2\x88\x92 A: it needs as many tokens in both.");
    ImGui::PushStyleColor(ImGuiCol_Text, m.pass.tokens == pass_b.tokens ? IM_COL32(150, 220, 150, 255) : IM_COL32(255, 170, 90, 255));
    ImGui::TextWrapped("%s", text.c_str());
    ImGui::PopStyleColor();
    record_item(state, "model.compare.tokenizations", text);
}

// The largest |B − A| and where it is, or why there is no difference.
void say_largest_change(PanelContext state, const ModelViewState& m, const ModelPass& pass_b) {
    const WeightsComparison& r = m.compare.result;
    const bool models = m.compare.mode == CompareMode::Models;
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
    } else if (!models || m.pass.tokens == pass_b.tokens) {  // two models: the tokenizations line said it once
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 170, 90, 255));
        ImGui::TextWrapped("%s", r.message.c_str());
        ImGui::PopStyleColor();
        record_item(state, "model.compare.message", r.message);
        record_item(state, "model.compare.max", "none");
    } else {
        record_item(state, "model.compare.message", r.message);
        record_item(state, "model.compare.max", "none");
    }

}

// The cards A, B and, where it is defined, B − A, with one cell size, the largest that fits side
// by side. Returns their height.
float draw_compare_cards(MapContext state, ModelViewState& m, HeatmapTextures& textures, const ModelPass& pass_b, stack::HeadId head_b) {
    ModelCompareState& c = m.compare;
    const WeightsComparison& r = c.result;
    const float scale = state.fonts.scale;
    const bool sentences = c.mode == CompareMode::Sentences, models = c.mode == CompareMode::Models;
    const Trace& layer_a = m.pass.layers[static_cast<size_t>(c.head_a.layer)];
    const Trace& layer_b = pass_b.layers[static_cast<size_t>(head_b.layer)];
    const std::string shape_a = std::to_string(r.a->rows()) + " tokens" + (sentences ? ", sentence A" : models ? ", " + m.model->family() : "");
    const std::string shape_b = std::to_string(r.b->rows()) + " tokens" + (sentences ? ", sentence B" : models ? ", " + c.model_b->family() : "");
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

    return height;
}

// Linked hover: the cell under the mouse, outlined in every card that has it, and its values.
void draw_compare_hover(MapContext state, const ModelCompareState& c, ImVec2 below) {
    const WeightsComparison& r = c.result;
    const float scale = state.fonts.scale;
    const HoverState& hover = c.hover;
    const bool ours = hover.row >= 0 && hover.matrix.rfind("model.compare.", 0) == 0;
    if (ours)
        outline_hovered_cell(hover, state.layout_next, [](const std::string& name) { return name.rfind("model.compare.", 0) == 0; },
                             2.0f * scale);
    ImGui::SetCursorScreenPos(below);
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
                           "cell in B), so it needs as many tokens in A as in B. The chips above show A's tokens.");
}

}  // namespace

void draw_model_compare(MapContext state, ModelViewState& m, HeatmapTextures& textures) {
    ModelCompareState& c = m.compare;
    c.hover = c.hover_next;  // the three cards' own hover: last frame's, then this frame's
    c.hover_next = HoverState{};
    draw_compare_controls(state, m);
    explain_passes(state, m);
    if (!comparison_ready(state, m)) return;
    const ModelPass& pass_b = c.mode == CompareMode::Heads ? m.pass : c.pass_b;
    const stack::HeadId head_b = c.mode == CompareMode::Sentences ? c.head_a : c.head_b;
    if (c.mode == CompareMode::Models) say_tokenizations(state, m, pass_b);
    say_largest_change(state, m, pass_b);
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float height = draw_compare_cards(state, m, textures, pass_b, head_b);
    draw_compare_hover(state, c, ImVec2(origin.x, origin.y + height + 6.0f * state.fonts.scale));
    ImGui::Dummy(ImVec2(1.0f, 1.0f));
}

}  // namespace attn::ui
