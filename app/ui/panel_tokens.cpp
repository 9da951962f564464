// The token bar: the sentence typed as text, and the tokens as chips (click to rename,
// drag to reorder, × to delete, + to add, "pad" flags under a padding mask). Hovering a
// chip highlights its row and column in every heatmap.
#include <algorithm>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "ui/classroom.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

// Above this many tokens the bar says how many there are instead of drawing chips.
constexpr size_t kChipsAtMost = 512;

// 65536 → "65,536".
std::string group_thousands(size_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string join(const std::vector<std::string>& tokens) {
    std::string text;
    for (const std::string& t : tokens) text += (text.empty() ? "" : " ") + t;
    return text;
}

// One row of chips for one side. `axis` says which heatmap axis a chip highlights.
// Wrapped lines start at `left` (screen x).
void chip_row(MapContext state, TokenEditor& editor, edits::Side side, const std::vector<std::string>& tokens, Axis axis,
              const std::vector<bool>* padding, float left) {
    const Scenario& s = state.session.scenario;
    const bool self = s.input == InputMode::Embeddings && s.attention == AttentionKind::Self;
    const int n = static_cast<int>(tokens.size());
    ImGui::PushID(side == edits::Side::Target ? "target" : "source");
    // Chips are laid out by hand, wrapping at the right edge, and only those on a visible
    // line are submitted: 65,536 tokens cost what the few lines on screen cost.
    const ImGuiStyle& style = ImGui::GetStyle();
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    const float close_w = ImGui::CalcTextSize("\xC3\x97").x + style.FramePadding.x * 2.0f;
    const float pad_w = ImGui::GetFrameHeight() + style.ItemInnerSpacing.x + ImGui::CalcTextSize("pad").x;
    const float row_h = ImGui::GetFrameHeight() * (padding != nullptr ? 2.0f : 1.0f) +
                        (padding != nullptr ? style.ItemSpacing.y : 0.0f) + style.ItemSpacing.y;
    ImVec2 at = ImGui::GetCursorScreenPos();
    auto place = [&](float width, bool first) {  // the top-left corner of the next item of this width
        if (!first && at.x + width > right && at.x > left) {
            at.x = left;
            at.y += row_h;
        }
        const ImVec2 corner = at;
        at.x += width + style.ItemSpacing.x;
        return corner;
    };
    for (int i = 0; i < n; ++i) {
        const bool renaming = editor.editing == i && editor.editing_side == side;
        const float chip_w = renaming ? std::max(60.0f, ImGui::CalcTextSize(editor.editing_text.c_str()).x + 20.0f)
                                      : ImGui::CalcTextSize(tokens[static_cast<size_t>(i)].c_str()).x + style.FramePadding.x * 2.0f +
                                            1.0f + close_w;
        const ImVec2 corner = place(std::max(chip_w, padding != nullptr ? pad_w : 0.0f), i == 0);
        if (!ImGui::IsRectVisible(corner, ImVec2(corner.x + chip_w, corner.y + row_h))) continue;
        ImGui::SetCursorScreenPos(corner);
        ImGui::PushID(i);
        ImGui::BeginGroup();
        const bool lit = axis == Axis::Query ? state.hover.query == i : state.hover.key == i;
        if (renaming) {
            if (editor.focus_pending) {
                ImGui::SetKeyboardFocusHere();
                editor.focus_pending = false;
            }
            ImGui::SetNextItemWidth(chip_w);
            if (ImGui::InputText("##rename", &editor.editing_text, ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_AutoSelectAll)) {
                state.push(edits::RenameToken{side, i, editor.editing_text});
                editor.editing = -1;
            } else if (!editor.focus_pending && !ImGui::IsItemActive() && ImGui::IsMouseClicked(ImGuiMouseButton_Left) &&
                       !ImGui::IsItemHovered()) {
                editor.editing = -1;  // clicked away: nothing renamed
            }
        } else {
            ImGui::PushStyleColor(ImGuiCol_Button, lit ? IM_COL32(150, 120, 40, 255) : IM_COL32(55, 70, 100, 255));
            if (ImGui::Button(tokens[static_cast<size_t>(i)].c_str())) {
                editor.editing = i;
                editor.editing_side = side;
                editor.editing_text = tokens[static_cast<size_t>(i)];
                editor.focus_pending = true;
            }
            ImGui::PopStyleColor();
            if (ImGui::IsItemHovered()) {
                (axis == Axis::Query ? state.hover_next.query : state.hover_next.key) = i;
                if (self || s.input == InputMode::Direct) state.hover_next.query = state.hover_next.key = i;
                ImGui::SetTooltip("click: rename   drag: reorder   %s", side == edits::Side::Target ? "row (query)" : "key / value");
            }
            if (ImGui::BeginDragDropSource()) {
                const int payload[2] = {static_cast<int>(side), i};
                ImGui::SetDragDropPayload("attnlab-token", payload, sizeof payload);
                ImGui::TextUnformatted(tokens[static_cast<size_t>(i)].c_str());
                ImGui::EndDragDropSource();
            }
            if (ImGui::BeginDragDropTarget()) {
                if (const ImGuiPayload* p = ImGui::AcceptDragDropPayload("attnlab-token")) {
                    const int* from = static_cast<const int*>(p->Data);
                    if (from[0] == static_cast<int>(side)) state.push(edits::MoveToken{side, from[1], i});
                }
                ImGui::EndDragDropTarget();
            }
            ImGui::SameLine(0.0f, 1.0f);
            ImGui::PushStyleColor(ImGuiCol_Button, IM_COL32(60, 45, 50, 255));
            if (ImGui::Button("\xC3\x97") && n > 1) state.push(edits::DeleteToken{side, i});
            ImGui::PopStyleColor();
            if (ImGui::IsItemHovered()) ImGui::SetTooltip(n > 1 ? "delete this token" : "attention needs at least one token");
        }
        if (padding != nullptr) {
            bool pad = i < static_cast<int>(padding->size()) && (*padding)[static_cast<size_t>(i)];
            if (ImGui::Checkbox("pad", &pad)) state.push(edits::SetPadding{side, i, pad});
        }
        ImGui::EndGroup();
        ImGui::PopID();
    }
    ImGui::SetCursorScreenPos(place(ImGui::CalcTextSize("+").x + style.FramePadding.x * 2.0f, n == 0));
    if (ImGui::Button("+")) {
        state.push(edits::InsertToken{side, n, s.input == InputMode::Direct ? "new" : "word"});
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("add a token at the end");
    ImGui::SameLine(0.0f, 0.0f);  // the line is as tall as a chip with its "pad" box, whatever was submitted
    ImGui::Dummy(ImVec2(0.0f, row_h - style.ItemSpacing.y));
    ImGui::PopID();
}

// A sentence typed in a box becomes the tokens of its side, unless it says nothing new; an
// empty box is refused aloud (a sequence needs a token) and shows the tokens again.
void apply_sentence(EditContext state, edits::Side side, std::string& typed) {
    const Sequence& sequence = side == edits::Side::Target ? state.session.scenario.target : state.session.scenario.source;
    std::vector<std::string> tokens = tokenize(typed);
    if (tokens.empty()) {
        add_notice(state, "An empty sentence was not applied: a sequence needs at least one token", true);
        typed = join(sequence.tokens);
        return;
    }
    if (tokens != sequence.tokens) state.push(edits::SetTokens{side, std::move(tokens)});
}

}  // namespace

void draw_tokens(MapContext state, TokenEditor& editor) {
    const Scenario& s = state.session.scenario;
    const bool direct = s.input == InputMode::Direct;
    const bool cross = !direct && s.attention == AttentionKind::Cross;
    if (editor.synced_generation != state.session.generation) {
        // The boxes show the scenario's sentence again after each change from elsewhere.
        editor.sentence = join(s.target.tokens);
        editor.source_sentence = join(s.source.tokens);
        editor.synced_generation = state.session.generation;
    }
    const Trace& t = state.session.trace;
    const bool padding = s.mask == MaskKind::Padding && !direct;
    // The chips drawn: the scenario's tokens (a sequence just generated, before its run ends,
    // is the scenario's, not the trace's), else the trace's.
    const std::vector<std::string>& target = !s.target.tokens.empty() || !t.ok ? s.target.tokens : t.query_tokens;
    const std::vector<std::string>& source = !s.source.tokens.empty() || !t.ok ? s.source.tokens : t.key_tokens;
    const size_t shown = direct ? (t.ok ? t.query_tokens.size() + t.key_tokens.size() : 0) : target.size() + (cross ? source.size() : 0);
    if (shown > kChipsAtMost) {  // a long sequence: said in a line, not thousands of chips
        const std::string text = group_thousands(shown) + " tokens" +
                                 (!direct && !s.target.tokens.empty() && s.target.tokens.front() == "t1" ? " (generated: t1 \xE2\x80\xA6 t" +
                                                                                                          std::to_string(s.target.tokens.size()) + ")"
                                                                                                    : "") +
                                 ": too many to show as chips; zoom into a region (Backend) to read them";
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(text.c_str());
        record_item(state, "tokens.summary", text);
        return;
    }
    // Many tokens: the chips scroll in a box of about three lines instead of pushing the pipeline down.
    const bool boxed = shown > 24;
    if (boxed) {
        const float line = ImGui::GetFrameHeightWithSpacing() * (padding ? 2.0f : 1.0f);
        ImGui::BeginChild("tokens", ImVec2(0, line * 3.0f + 6.0f), false);
    }
    const float line_left = ImGui::GetCursorScreenPos().x;
    if (!direct) {
        ImGui::TextUnformatted(cross ? "Target" : "Sentence");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(std::min(380.0f * state.fonts.scale, ImGui::GetContentRegionAvail().x * 0.3f));
        const bool entered = ImGui::InputTextWithHint("##sentence", "type a sentence, Enter", &editor.sentence,
                                                      ImGuiInputTextFlags_EnterReturnsTrue);
        // Clicking away (or Tab) applies the sentence as Enter does: typed text is never dropped.
        if (entered || ImGui::IsItemDeactivatedAfterEdit()) apply_sentence(state, edits::Side::Target, editor.sentence);
        record_item(state, "tokens.sentence", editor.sentence);
        ImGui::SameLine();
        chip_row(state, editor, edits::Side::Target, target, Axis::Query,
                 padding && !cross ? &s.target.padding : nullptr, line_left);
        if (cross) {
            ImGui::TextUnformatted("Source");
            ImGui::SameLine();
            ImGui::SetNextItemWidth(std::min(380.0f * state.fonts.scale, ImGui::GetContentRegionAvail().x * 0.3f));
            const bool source_entered = ImGui::InputTextWithHint("##source", "the sentence attended to", &editor.source_sentence,
                                                                 ImGuiInputTextFlags_EnterReturnsTrue);
            if (source_entered || ImGui::IsItemDeactivatedAfterEdit())
                apply_sentence(state, edits::Side::Source, editor.source_sentence);
            ImGui::SameLine();
            chip_row(state, editor, edits::Side::Source, source, Axis::Key,
                     padding ? &s.source.padding : nullptr, line_left);
        }
    } else if (t.ok) {
        ImGui::TextUnformatted("Queries");
        ImGui::SameLine();
        chip_row(state, editor, edits::Side::Target, t.query_tokens, Axis::Query, nullptr, line_left);
        ImGui::SameLine(0.0f, 30.0f);
        ImGui::TextUnformatted("Keys");
        ImGui::SameLine();
        chip_row(state, editor, edits::Side::Source, t.key_tokens, Axis::Key, nullptr, line_left);
    }
    if (boxed) ImGui::EndChild();
}

}  // namespace attn::ui
