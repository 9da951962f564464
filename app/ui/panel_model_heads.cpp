// The model view's tabs of what each head does (core/interpret):
//   Head roles      every head scored on a probe (the BOS, a block of L random tokens, the
//                   block again): previous-token, first-token, self, duplicate-token and
//                   induction; a sortable table, a badge of each head's strongest role on the
//                   grid's maps, and the probe's map of the head picked with the diagonal its
//                   score reads outlined.
//   Logit lens      after each layer, the final norm and the unembedding read the stream at
//                   every position: a layers × positions table of each cell's top token, lit
//                   where it is the model's own prediction; a click shows the cell's top 5.
//   Ablation sweep  each head ablated alone, the change in log p of the predicted token (or one
//                   picked) at the last position, as a layers × heads map; a click ablates the
//                   head for real.
// Each is a job (job.hpp) off the window's thread, with its progress and a Cancel.
//
// Index
// [SECTION] Jobs
// [SECTION] Head roles
// [SECTION] Logit lens
// [SECTION] Ablation sweep
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include <imgui.h>

#include "ui/colormap.hpp"
#include "ui/panel_model.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

// A token in an ImGui label: "##" would start the label's hidden ID (WordPiece's "##ing").
std::string label_text(const std::string& token) {
    std::string out;
    for (size_t i = 0; i < token.size(); ++i) {
        out += token[i];
        if (token[i] == '#' && i + 1 < token.size() && token[i + 1] == '#') out += ' ';
    }
    return out;
}

std::string fixed(double value, int digits) {
    if (std::isnan(value)) return "nan";
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

// A job's line: what it does, how far, and its Cancel. True when Cancel was pressed.
bool draw_progress(PanelContext state, const char* id, const std::string& what, float fraction) {
    ImGui::TextUnformatted(what.c_str());
    ImGui::ProgressBar(fraction, ImVec2(240.0f * state.fonts.scale, 0));
    ImGui::SameLine();
    const bool cancel = ImGui::Button((std::string("Cancel##") + id).c_str());
    record_item(state, id, what);
    return cancel;
}

}  // namespace

// [SECTION] Jobs

void update_model_heads(ModelViewState& m) {
    ModelHeadsState& h = m.heads;
    if (std::optional<RolesOutcome> r = h.roles_job.take()) {
        h.roles = std::move(*r);
        // The head with the highest score of any role is drawn first: the clearest example.
        if (h.roles.run && !h.roles.run->heads.empty()) {
            const auto best = [](const interpret::HeadRoles& x) { return *std::max_element(x.scores.values.begin(), x.scores.values.end()); };
            h.picked = std::max_element(h.roles.run->heads.begin(), h.roles.run->heads.end(),
                                        [&](const interpret::HeadRoles& a, const interpret::HeadRoles& b) { return best(a) < best(b); })
                           ->head;
        }
    }
    if (std::optional<LensOutcome> r = h.lens_job.take()) h.lens = std::move(*r);
    if (std::optional<SweepOutcome> r = h.sweep_job.take()) h.sweep = std::move(*r);
    if (h.run_when_open && m.model && m.pass.ok && !m.reshaping) {
        h.run_when_open = false;
        if (h.select == HeadsTab::Roles) score_head_roles(m);
        if (h.select == HeadsTab::Sweep) run_ablation_sweep(m);
        if (h.select == HeadsTab::Lens) h.lens_shown = true;
    }
    // The lens follows the pass while its tab is shown.
    if (h.lens_shown && m.model && m.pass.ok && !h.lens_job.running() && h.lens.revision != m.revision + 1) {
        const std::shared_ptr<const lm::Model> model = m.model;  // kept alive by the job
        const std::uint64_t revision = m.revision + 1;  // 0 stays "never computed"
        h.lens_job.start("Reading every layer's stream through the head\xE2\x80\xA6",
                         [model, pass = compute::streams_for_job(m.pass), revision](compute::JobProgress& progress) {
                             LensOutcome out;
                             out.revision = revision;
                             const stack::Stack st = lm::model_stack(*model, pass);
                             out.lens = interpret::logit_lens(st, pass, 5, &out.why,
                                                              [&](int done, int total) { return progress.report(done, total); });
                             if (out.lens)
                                 for (const auto& cells : out.lens->layers) {
                                     out.labels.emplace_back();
                                     for (const interpret::LensCell& c : cells) {
                                         out.labels.back().emplace_back();
                                         for (int id : c.ids) out.labels.back().back().push_back(model->token_text(id));
                                     }
                                 }
                             return out;
                         });
    }
}

bool model_heads_busy(const ModelViewState& m) {
    return m.heads.roles_job.running() || m.heads.lens_job.running() || m.heads.sweep_job.running();
}

void finish_model_heads(ModelViewState& m) {
    m.heads.roles_job.wait();
    m.heads.lens_job.wait();
    m.heads.sweep_job.wait();
}

void forget_model_heads(ModelViewState& m) {
    ModelHeadsState& h = m.heads;
    h.roles_job.cancel();  // each keeps the model it reads until it ends; never waited for
    h.lens_job.cancel();
    h.sweep_job.cancel();
    h.roles = {};
    h.lens = {};
    h.sweep = {};
    h.picked.reset();
    h.lens_cell.reset();
    h.target = -1;  // a token of the model replaced
}

void score_head_roles(ModelViewState& m) {
    if (!m.model) return;
    const std::shared_ptr<const lm::Model> model = m.model;  // kept alive by the job
    const int length = m.heads.repeat_length, seed = m.heads.seed;
    m.heads.picked.reset();
    const int heads = model->shape().layers * model->shape().heads;
    m.heads.roles_job.start("Scoring " + std::to_string(heads) + " heads on the probe\xE2\x80\xA6", [model, length, seed](compute::JobProgress&) {
        RolesOutcome out;
        out.run = interpret::run_head_roles(*model, length, static_cast<std::uint64_t>(seed), &out.why);
        return out;
    });
}

void run_ablation_sweep(ModelViewState& m) {
    if (!m.model || !m.pass.ok) return;
    const std::shared_ptr<const lm::Model> model = m.model;  // kept alive by the job
    const int target = m.heads.target >= 0                ? m.heads.target
                       : !m.pass.next_token_top5.empty() ? m.pass.next_token_top5.front().id
                                                          : -1;
    const int heads = model->shape().layers * model->shape().heads;
    m.heads.sweep_job.start("Ablating each of " + std::to_string(heads) + " heads alone\xE2\x80\xA6",
                            [model, pass = compute::streams_for_job(m.pass), target, revision = m.revision + 1](compute::JobProgress& progress) {
                                SweepOutcome out;
                                out.revision = revision;
                                if (target >= 0) out.target = model->token_text(target);
                                const stack::Stack st = lm::model_stack(*model, pass);
                                out.sweep = interpret::ablation_sweep(st, pass, target, &out.why,
                                                                      [&](int done, int total) { return progress.report(done, total); });
                                return out;
                            });
}

// [SECTION] Head roles

namespace {

const char* short_role(interpret::Role r) {
    switch (r) {
        case interpret::Role::PreviousToken: return "prev";
        case interpret::Role::FirstToken: return "first";
        case interpret::Role::Self: return "self";
        case interpret::Role::DuplicateToken: return "dup";
        case interpret::Role::Induction: return "ind";
    }
    return "";
}

const interpret::HeadRoles* roles_of(const ModelViewState& m, stack::HeadId head) {
    if (!m.heads.roles.run) return nullptr;
    for (const interpret::HeadRoles& h : m.heads.roles.run->heads)
        if (h.head == head) return &h;
    return nullptr;
}

std::string scores_text(const interpret::RoleScores& s) {
    std::string text;
    for (interpret::Role r : interpret::kRoles) text += (text.empty() ? "" : ", ") + std::string(interpret::role_name(r)) + " " + fixed(s[r], 2);
    return text;
}

// The probe's map of the head picked, each weight in viridis, the cells its scores read
// outlined: the diagonal just below the main one (previous-token), column 0 (first-token), the
// main diagonal (self), and in the second copy the diagonals L and L − 1 below it (duplicate,
// induction) — the strongest role's in white, the others faint.
void draw_probe_map(PanelContext state, const interpret::RolesRun& run, const interpret::HeadRoles& head, float threshold) {
    const Trace& trace = run.layers[static_cast<size_t>(head.head.layer)];
    const Matrix& w = trace.head[static_cast<size_t>(head.head.head)].weights;
    const int n = static_cast<int>(w.rows()), L = run.probe.repeat_length;
    const ImVec2 room = ImGui::GetContentRegionAvail();
    const float side = std::max(32.0f * state.fonts.scale, std::min({room.x, room.y - 4.0f * state.fonts.scale, 360.0f * state.fonts.scale}));
    const float cell = side / static_cast<float>(std::max(1, n));
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    draw->AddRectFilled(p0, ImVec2(p0.x + side, p0.y + side), pack(kMaskedBackground, 90));
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            if (trace.visible.size() != 0 && !trace.visible(i, j)) continue;
            const float v = w(i, j);
            draw->AddRectFilled(ImVec2(p0.x + j * cell, p0.y + i * cell), ImVec2(p0.x + (j + 1) * cell, p0.y + (i + 1) * cell),
                                std::isfinite(v) ? pack(viridis(v)) : pack(kNonFinite));
        }
    const std::optional<interpret::Role> strongest = interpret::strongest_role(head.scores, threshold);
    auto outline = [&](interpret::Role role, int i, int j) {
        if (i < 0 || j < 0 || i >= n || j >= n) return;
        const bool lit = strongest == role;
        draw->AddRect(ImVec2(p0.x + j * cell, p0.y + i * cell), ImVec2(p0.x + (j + 1) * cell, p0.y + (i + 1) * cell),
                      lit ? IM_COL32(255, 255, 255, 255) : IM_COL32(255, 255, 255, 60), 0.0f, 0, lit ? 2.0f : 1.0f);
    };
    for (int i = 0; i < n; ++i) {
        if (i >= 1) outline(interpret::Role::PreviousToken, i, i - 1);
        if (i >= 1) outline(interpret::Role::FirstToken, i, 0);
        outline(interpret::Role::Self, i, i);
        if (i >= n - L) {
            outline(interpret::Role::DuplicateToken, i, i - L);
            outline(interpret::Role::Induction, i, i - L + 1);
        }
    }
    ImGui::Dummy(ImVec2(side, side));
    if (ImGui::IsItemHovered()) {
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        const int i = std::clamp(static_cast<int>((mouse.y - p0.y) / cell), 0, n - 1);
        const int j = std::clamp(static_cast<int>((mouse.x - p0.x) / cell), 0, n - 1);
        ImGui::SetTooltip("%s \xE2\x86\x92 %s  weight %s", run.tokens[static_cast<size_t>(i)].c_str(), run.tokens[static_cast<size_t>(j)].c_str(),
                          fixed(w(i, j), 3).c_str());
    }
    record_item(state, "model.roles.probe_map",
                "layer " + std::to_string(head.head.layer + 1) + " head " + std::to_string(head.head.head + 1) +
                    (strongest ? std::string(" ") + interpret::role_key(*strongest) : std::string()));
}

// The cells (query, key) a role's score reads on a probe of n tokens whose last L repeat.
std::vector<std::pair<int, int>> role_cells(interpret::Role role, int n, int L) {
    std::vector<std::pair<int, int>> cells;
    for (int i = 0; i < n; ++i) {
        switch (role) {
            case interpret::Role::PreviousToken: if (i >= 1) cells.push_back({i, i - 1}); break;
            case interpret::Role::FirstToken: if (i >= 1) cells.push_back({i, 0}); break;
            case interpret::Role::Self: cells.push_back({i, i}); break;
            case interpret::Role::DuplicateToken: if (i >= n - L && i - L >= 0) cells.push_back({i, i - L}); break;
            case interpret::Role::Induction: if (i >= n - L && i - L + 1 >= 0) cells.push_back({i, i - L + 1}); break;
        }
    }
    return cells;
}

// The head's layer as the pipeline's scenario, its input the stream the probe gave that layer,
// the head shown and the cells of its strongest role (of every role's, with none strong)
// outlined on its weights.
void open_probe_head(PanelContext state, ModelViewState& m, const interpret::HeadRoles& head) {
    const interpret::RolesRun& run = *m.heads.roles.run;
    const int layer = head.head.layer;
    Scenario s = m.model->layer_scenario(run.tokens, layer, lm::layer_input(run.layers[static_cast<size_t>(layer)]), {});
    const std::optional<interpret::Role> role = interpret::strongest_role(head.scores, m.heads.threshold);
    s.name = m.model->family() + " layer " + std::to_string(layer + 1) + " on the head-roles probe (seed " + std::to_string(run.probe.seed) +
             ", L = " + std::to_string(run.probe.repeat_length) + ")";
    const int n = static_cast<int>(run.probe.ids.size());
    std::vector<std::pair<int, int>> outlined;
    for (interpret::Role r : interpret::kRoles)
        if (!role || r == *role)
            for (const auto& cell : role_cells(r, n, run.probe.repeat_length)) outlined.push_back(cell);
    state.requests.push_back(ShowInPipeline{std::move(s), head.head.head, true, std::move(outlined)});
}

}  // namespace

std::optional<interpret::Role> head_role_badge(const ModelViewState& m, stack::HeadId head) {
    if (!m.heads.badges) return std::nullopt;
    const interpret::HeadRoles* h = roles_of(m, head);
    return h ? interpret::strongest_role(h->scores, m.heads.threshold) : std::nullopt;
}

std::string head_roles_line(const ModelViewState& m, stack::HeadId head) {
    const interpret::HeadRoles* h = roles_of(m, head);
    return h ? "\nroles on the probe: " + scores_text(h->scores) : std::string();
}

void draw_role_badge(PanelContext state, ImVec2 corner, interpret::Role role) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const char* text = short_role(role);
    const ImVec2 size = ImGui::CalcTextSize(text);
    const float pad = 2.0f * state.fonts.scale;
    const Rgb colour = category_colour(static_cast<int>(role));
    draw->AddRectFilled(corner, ImVec2(corner.x + size.x + 2 * pad, corner.y + size.y), pack(colour, 230), 3.0f * state.fonts.scale);
    draw->AddText(ImVec2(corner.x + pad, corner.y), text_should_be_dark(colour) ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255), text);
}

void draw_head_roles(PanelContext state, ModelViewState& m) {
    ModelHeadsState& h = m.heads;
    ImGui::TextWrapped(
        "Each head scored on a probe: the tokenizer's BOS when it adds one, a block of random tokens, then the same block again. A "
        "score is the mean weight of one diagonal of the head's map: previous-token A[i, i\xE2\x88\x92" "1], first-token A[i, 0], self "
        "A[i, i], and in the second copy duplicate-token A[i, i\xE2\x88\x92L] (the same token earlier) and induction "
        "A[i, i\xE2\x88\x92L+1] (the token after it).");
    ImGui::SetNextItemWidth(120.0f * state.fonts.scale);
    // The block length as asked, else the last probe's (the model's default: 20, or fewer where it needs).
    int length = h.repeat_length > 0 ? h.repeat_length : h.roles.run ? h.roles.run->probe.repeat_length : interpret::kDefaultRepeatLength;
    if (ImGui::InputInt("block length L", &length)) h.repeat_length = std::clamp(length, interpret::kMinRepeatLength, 4096);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(120.0f * state.fonts.scale);
    ImGui::InputInt("seed", &h.seed);
    ImGui::SameLine();
    const bool run = ImGui::Button(h.roles.run ? "Score again" : "Score the heads");
    record_item(state, "model.roles.score", "");
    if (run) score_head_roles(m);
    ImGui::SetNextItemWidth(160.0f * state.fonts.scale);
    ImGui::SliderFloat("badge threshold", &h.threshold, 0.05f, 1.0f, "%.2f");
    ImGui::SameLine();
    ImGui::Checkbox("badges on the grid", &h.badges);
    if (h.roles_job.running()) {
        if (draw_progress(state, "model.roles.running", h.roles_job.what(), h.roles_job.fraction())) h.roles_job.cancel();
        return;
    }
    if (!h.roles.run) {
        if (!h.roles.why.empty()) {
            ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.35f, 1.0f), "%s", h.roles.why.c_str());
            record_item(state, "model.roles.why", h.roles.why);
        }
        return;
    }
    const interpret::RolesRun& r = *h.roles.run;
    std::string probe;
    for (const std::string& t : r.tokens) probe += (probe.empty() ? "" : " ") + t;
    ImGui::TextDisabled("probe (seed %llu, L = %d): %s", static_cast<unsigned long long>(r.probe.seed), r.probe.repeat_length, probe.c_str());
    record_item(state, "model.roles.probe", probe);
    // The table, sortable by any score; a row picked draws its probe map beside it.
    std::vector<int> order(r.heads.size());
    std::iota(order.begin(), order.end(), 0);
    const float table_width = std::min(ImGui::GetContentRegionAvail().x * 0.55f, 720.0f * state.fonts.scale);
    ImGui::BeginChild("model.roles.table_area", ImVec2(table_width, 0));
    constexpr ImGuiTableFlags kFlags =
        ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
    std::string recorded;
    if (ImGui::BeginTable("model.roles.table", 3 + interpret::kRoleCount, kFlags)) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn("layer", ImGuiTableColumnFlags_DefaultSort);
        ImGui::TableSetupColumn("head");
        for (interpret::Role role : interpret::kRoles) ImGui::TableSetupColumn(interpret::role_name(role), ImGuiTableColumnFlags_PreferSortDescending);
        ImGui::TableSetupColumn("role", ImGuiTableColumnFlags_NoSort);
        ImGui::TableHeadersRow();
        if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsCount > 0) {
            h.sort_column = specs->Specs[0].ColumnIndex <= 1 ? -1 : specs->Specs[0].ColumnIndex - 2;
            h.descending = specs->Specs[0].SortDirection == ImGuiSortDirection_Descending;
        }
        if (h.sort_column >= 0) {
            const interpret::Role role = interpret::kRoles[static_cast<size_t>(h.sort_column)];
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
                const float x = r.heads[static_cast<size_t>(a)].scores[role], y = r.heads[static_cast<size_t>(b)].scores[role];
                return h.descending ? x > y : x < y;
            });
        } else if (h.descending) {
            std::reverse(order.begin(), order.end());
        }
        for (int index : order) {
            const interpret::HeadRoles& head = r.heads[static_cast<size_t>(index)];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            const bool picked = h.picked == head.head;
            const std::string label = std::to_string(head.head.layer + 1) + "##role" + std::to_string(index);
            if (ImGui::Selectable(label.c_str(), picked, ImGuiSelectableFlags_SpanAllColumns)) h.picked = head.head;
            record_item(state, ("model.roles.row." + std::to_string(head.head.layer + 1) + "." + std::to_string(head.head.head + 1)).c_str(), "");
            ImGui::TableNextColumn();
            ImGui::Text("%d", head.head.head + 1);
            std::string row = std::to_string(head.head.layer + 1) + "." + std::to_string(head.head.head + 1);
            for (interpret::Role role : interpret::kRoles) {
                ImGui::TableNextColumn();
                const float v = head.scores[role];
                const bool strong = v >= h.threshold;
                if (strong) ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, pack(category_colour(static_cast<int>(role)), 90));
                ImGui::TextUnformatted(fixed(v, 3).c_str());
                row += " " + fixed(v, 3);
            }
            ImGui::TableNextColumn();
            const std::optional<interpret::Role> strongest = interpret::strongest_role(head.scores, h.threshold);
            ImGui::TextUnformatted(strongest ? interpret::role_name(*strongest) : "");
            recorded += (recorded.empty() ? "" : "\n") + row + (strongest ? std::string(" ") + interpret::role_key(*strongest) : "");
        }
        ImGui::EndTable();
    }
    record_item(state, "model.roles.table", recorded);
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("model.roles.map_area", ImVec2(0, 0));
    if (h.picked) {
        if (const interpret::HeadRoles* head = roles_of(m, *h.picked)) {
            ImGui::Text("Layer %d, head %d on the probe", head->head.layer + 1, head->head.head + 1);
            ImGui::TextDisabled("%s", scores_text(head->scores).c_str());
            if (ImGui::Button("Open in the pipeline on the probe")) open_probe_head(state, m, *head);
            record_item(state, "model.roles.open", "");
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip("This layer with the probe as its input, this head shown, the cells of its strongest role outlined\n"
                                  "(every step, hover arithmetic and in-place edits; the model view's sentence is not changed)");
            ImGui::TextDisabled("Outlined: the cells each score reads; the strongest role's in white.");
            draw_probe_map(state, r, *head, h.threshold);
        }
    } else {
        ImGui::TextDisabled("Pick a row to see that head's map on the probe.");
    }
    ImGui::EndChild();
}

// [SECTION] Logit lens

void draw_logit_lens(PanelContext state, ModelViewState& m) {
    ModelHeadsState& h = m.heads;
    h.lens_shown = true;
    ImGui::TextWrapped("What the model would predict after each layer: the final norm and the unembedding read the stream there, at "
                       "every position. Each cell is its most likely next token and probability; lit where it is the model's own "
                       "prediction at that position (the last layer's). Click a cell for its top 5.");
    if (h.lens_job.running()) {
        if (draw_progress(state, "model.lens.running", h.lens_job.what(), h.lens_job.fraction())) {
            h.lens_job.cancel();
            h.lens = LensOutcome{};  // not read again for this pass until asked
            h.lens.why = "Cancelled.";
            h.lens.revision = m.revision + 1;
        }
    }
    if (!h.lens.lens) {
        if (!h.lens.why.empty()) {
            ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.35f, 1.0f), "%s", h.lens.why.c_str());
            record_item(state, "model.lens.why", h.lens.why);
            if (h.lens.why == "Cancelled." && ImGui::Button("Read the layers again")) h.lens.revision = 0;
        }
        return;
    }
    const interpret::LogitLens& lens = *h.lens.lens;
    if (h.lens.revision != m.revision + 1) ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.3f, 1.0f), "The sentence or the model changed: reading it again\xE2\x80\xA6");
    const int layers = static_cast<int>(lens.layers.size());
    const int positions = layers > 0 ? static_cast<int>(lens.layers.front().size()) : 0;
    if (positions != static_cast<int>(m.pass.tokens.size())) return;
    std::string recorded;
    constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInner | ImGuiTableFlags_SizingFixedFit;
    const float height = h.lens_cell ? ImGui::GetContentRegionAvail().y - 8.0f * ImGui::GetTextLineHeightWithSpacing() : 0.0f;
    if (ImGui::BeginTable("model.lens.table", positions + 1, kFlags, ImVec2(0, std::max(height, 0.0f)))) {
        ImGui::TableSetupScrollFreeze(1, 1);
        ImGui::TableSetupColumn("");
        for (int i = 0; i < positions; ++i) ImGui::TableSetupColumn(label_text(m.pass.tokens[static_cast<size_t>(i)]).c_str());
        ImGui::TableHeadersRow();
        for (int l = 0; l < layers; ++l) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("layer %d", l + 1);
            for (int i = 0; i < positions; ++i) {
                ImGui::TableNextColumn();
                const interpret::LensCell& cell = lens.layers[static_cast<size_t>(l)][static_cast<size_t>(i)];
                const interpret::LensCell& final_cell = lens.layers.back()[static_cast<size_t>(i)];
                if (cell.ids.empty()) continue;
                const bool agrees = !final_cell.ids.empty() && cell.ids.front() == final_cell.ids.front();
                if (agrees) ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, pack(viridis(0.75f), 110));
                const std::string& token = h.lens.labels[static_cast<size_t>(l)][static_cast<size_t>(i)].front();
                const std::string text = label_text(token) + " " + fixed(cell.probabilities.front(), 2) + "##lens" + std::to_string(l) + "_" + std::to_string(i);
                if (ImGui::Selectable(text.c_str(), h.lens_cell == std::make_pair(l, i))) h.lens_cell = std::make_pair(l, i);
                record_item(state, ("model.lens.cell." + std::to_string(l + 1) + "." + std::to_string(i + 1)).c_str(), token);
                if (l + 1 == layers || l == 0) recorded += (recorded.empty() ? "" : " ") + std::to_string(l + 1) + "." + std::to_string(i + 1) + ":" + token;
            }
        }
        ImGui::EndTable();
    }
    record_item(state, "model.lens.table", recorded);
    if (h.lens_cell && h.lens_cell->first < layers && h.lens_cell->second < positions) {
        const auto [l, i] = *h.lens_cell;
        const interpret::LensCell& cell = lens.layers[static_cast<size_t>(l)][static_cast<size_t>(i)];
        ImGui::Text("After layer %d, at \"%s\" (position %d): the top 5", l + 1, m.pass.tokens[static_cast<size_t>(i)].c_str(), i + 1);
        std::string top;
        for (size_t k = 0; k < cell.ids.size(); ++k) {
            const std::string& token = h.lens.labels[static_cast<size_t>(l)][static_cast<size_t>(i)][k];
            ImGui::BulletText("%s  (id %d)  %s", token.c_str(), cell.ids[k], fixed(cell.probabilities[k], 4).c_str());
            top += (top.empty() ? "" : " ") + token;
        }
        record_item(state, "model.lens.top5", top);
    }
}

// [SECTION] Ablation sweep

void draw_ablation_sweep(PanelContext state, ModelViewState& m) {
    ModelHeadsState& h = m.heads;
    ImGui::TextWrapped("Which heads the prediction needs: each head ablated alone (its rows of W_O zeroed), the layers from it "
                       "recomputed, and the change in the log-probability of one token at the last position. Blue: the head "
                       "helped predict it; red: it worked against it. Click a cell to ablate that head for real.");
    std::string predicted = m.pass.next_token_top5.empty() ? std::string("none") : m.pass.next_token_top5.front().token;
    ImGui::TextUnformatted("the token:");
    ImGui::SameLine();
    if (ImGui::RadioButton(("the prediction (" + label_text(predicted) + ")").c_str(), h.target < 0)) h.target = -1;
    for (const TokenProbability& t : m.pass.next_token_top5) {
        if (&t == &m.pass.next_token_top5.front()) continue;
        ImGui::SameLine();
        if (ImGui::RadioButton((label_text(t.token) + "##target" + std::to_string(t.id)).c_str(), h.target == t.id)) h.target = t.id;
    }
    const bool run = ImGui::Button(h.sweep.sweep ? "Sweep again" : "Run the sweep");
    record_item(state, "model.sweep.run", "");
    if (run) run_ablation_sweep(m);
    if (h.sweep_job.running()) {
        if (draw_progress(state, "model.sweep.running", h.sweep_job.what(), h.sweep_job.fraction())) h.sweep_job.cancel();
        return;
    }
    if (!h.sweep.sweep) {
        if (!h.sweep.why.empty()) {
            ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.35f, 1.0f), "%s", h.sweep.why.c_str());
            record_item(state, "model.sweep.why", h.sweep.why);
        }
        return;
    }
    const interpret::AblationSweep& sweep = *h.sweep.sweep;
    if (h.sweep.revision != m.revision + 1)
        ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.3f, 1.0f), "The sentence, an edit or the heads ablated changed since: sweep again to follow.");
    ImGui::Text("log p(%s) = %s at the last position; each head ablated alone changes it by:", h.sweep.target.c_str(),
                fixed(sweep.log_probability, 4).c_str());
    const int layers = static_cast<int>(sweep.delta.rows()), heads = static_cast<int>(sweep.delta.cols());
    float limit = 1e-6f;
    for (int l = 0; l < layers; ++l)
        for (int k = 0; k < heads; ++k)
            if (std::isfinite(sweep.delta(l, k))) limit = std::max(limit, std::abs(sweep.delta(l, k)));
    const float scale = state.fonts.scale;
    const float label_w = ImGui::CalcTextSize("layer 00 ").x;
    const ImVec2 room = ImGui::GetContentRegionAvail();
    const float cell = std::clamp(std::min((room.x - label_w) / static_cast<float>(heads), (room.y - 3.0f * ImGui::GetTextLineHeightWithSpacing()) / static_cast<float>(layers)),
                                  10.0f * scale, 64.0f * scale);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    ImVec2 origin = ImGui::GetCursorScreenPos();
    for (int k = 0; k < heads; ++k) {
        const std::string label = "H" + std::to_string(k + 1);
        if (cell >= ImGui::CalcTextSize(label.c_str()).x + 2.0f)
            draw->AddText(ImVec2(origin.x + label_w + k * cell, origin.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), label.c_str());
    }
    origin.y += ImGui::GetTextLineHeightWithSpacing();
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    std::string strongest;
    float most = -1.0f;
    for (int l = 0; l < layers; ++l) {
        draw->AddText(ImVec2(origin.x, origin.y + l * cell + (cell - ImGui::GetTextLineHeight()) * 0.5f), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                      ("layer " + std::to_string(l + 1)).c_str());
        for (int k = 0; k < heads; ++k) {
            const float v = sweep.delta(l, k);
            const ImVec2 p0(origin.x + label_w + k * cell, origin.y + l * cell);
            draw->AddRectFilled(p0, ImVec2(p0.x + cell - 1, p0.y + cell - 1), std::isfinite(v) ? pack(diverging(v / limit)) : pack(kNonFinite));
            if (m.pass.ablated.heads.count({l, k}) > 0)
                draw->AddLine(p0, ImVec2(p0.x + cell - 1, p0.y + cell - 1), IM_COL32(255, 70, 50, 235), 2.0f * scale);
            const std::string number = fixed(v, 2);
            const ImVec2 size = ImGui::CalcTextSize(number.c_str());
            if (size.x + 4.0f * scale < cell) {  // the value itself, where the cell holds it
                const Rgb ground = std::isfinite(v) ? diverging(v / limit) : kNonFinite;
                draw->AddText(ImVec2(p0.x + (cell - size.x) * 0.5f, p0.y + (cell - size.y) * 0.5f),
                              text_should_be_dark(ground) ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255), number.c_str());
            }
            if (std::isfinite(v) && std::abs(v) > most) {
                most = std::abs(v);
                strongest = std::to_string(l + 1) + "." + std::to_string(k + 1) + " " + fixed(v, 4);
            }
            ImGui::SetCursorScreenPos(p0);
            ImGui::InvisibleButton(("sweep" + std::to_string(l) + "_" + std::to_string(k)).c_str(), ImVec2(cell - 1, cell - 1));
            record_item(state, ("model.sweep.cell." + std::to_string(l + 1) + "." + std::to_string(k + 1)).c_str(), fixed(v, 6));
            if (ImGui::IsItemHovered() && mouse.x >= p0.x)
                ImGui::SetTooltip("layer %d, head %d ablated alone: \xCE\x94 log p = %s\nclick to ablate it for real (the grid and the top 5 follow)",
                                  l + 1, k + 1, fixed(v, 4).c_str());
            if (ImGui::IsItemClicked() && m.pass.ablated.heads.count({l, k}) == 0) m.ablation_toggles.push_back({l, k});
        }
    }
    ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + layers * cell + 4.0f * scale));
    ImGui::TextDisabled("colour: \xCE\x94 log p from %s (blue) to +%s (red)", fixed(-limit, 3).c_str(), fixed(limit, 3).c_str());
    record_item(state, "model.sweep.map", strongest);
}

}  // namespace attn::ui
