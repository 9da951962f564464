// The model view's writing (core/generate):
//   Write control   beside the sentence: Step (one token), Run N, Stop (within one token),
//                   Undo of the last token, and the sampler: greedy or a temperature, top-k,
//                   top-p, seed. Each token is a job off the window's thread: sampled from the
//                   last logits, then run as one new row per layer against the KV caches.
//   The new row     the chips grow by each written token; every map of the grid grows by its
//                   row as it was written (lit) until a pass of the whole text lands, which the
//                   view runs once writing stops, so that the pipeline shows it too.
//   Write tab       the next token's distribution as bars (the model's beside the tempered one,
//                   the top-k and top-p cut drawn across, a click makes a token the next one),
//                   the last step's choice lit, the tokens written, the cache of the layer in
//                   view (K and V exactly as kept, one block per K/V head with the query heads
//                   that read it, the rows a window dropped), and what the caches cost against
//                   multi-head attention at 4k, 32k and 128k tokens.
//
// Index
// [SECTION] The text and the session
// [SECTION] Steps as jobs
// [SECTION] The Write control
// [SECTION] The Write tab
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include <imgui.h>

#include "tensor/reflect.hpp"
#include "ui/colormap.hpp"
#include "ui/panel_model.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

// [SECTION] The text and the session

namespace {

// How many written tokens the pass on screen holds (the rest were written since it ran).
int covered(const ModelViewState& m) {
    const int beyond_sentence = static_cast<int>(m.pass.token_ids.size()) - m.write.sentence_length;
    return std::clamp(beyond_sentence, 0, static_cast<int>(m.write.written.size()));
}

// The layer opened in the pipeline, where its scenario differs from the model's: writing
// runs that layer as edited.
std::optional<std::pair<int, Scenario>> edited_layer(const ModelViewState& m) {
    if (m.layer < 0 || reflect::equal(m.applied, m.layer_base)) return std::nullopt;
    return std::make_pair(m.layer, m.applied);
}

// The cache view's layer, copied while the session is the window's.
void snapshot_cache(ModelViewState& m) {
    ModelWriteState& w = m.write;
    if (!w.session) return;
    const std::vector<generate::LayerCache>& caches = w.session->writing.cache;
    if (caches.empty()) return;
    w.cache_layer = std::clamp(w.cache_layer, 0, static_cast<int>(caches.size()) - 1);
    const generate::LayerCache& c = caches[static_cast<size_t>(w.cache_layer)];
    w.cache.layer = w.cache_layer;
    w.cache.linear = c.is_linear();
    if (c.is_linear()) {  // Gated DeltaNet: each head's state side by side, and the convolution's rows
        w.cache.k.resize(c.key_dim(), static_cast<Eigen::Index>(c.kv_heads()) * c.value_dim());
        for (int h = 0; h < c.kv_heads(); ++h) w.cache.k.middleCols(static_cast<Eigen::Index>(h) * c.value_dim(), c.value_dim()) = c.state(h);
        w.cache.v = c.conv_rows();
        w.cache.numbers = c.linear_numbers();
        w.cache.tokens = c.end_position();
    } else {
        w.cache.k = c.k();
        w.cache.v = c.v();
    }
    w.cache.first_position = c.first_position();
    w.cache.window = c.window();
    w.cache.chunk = c.chunk();
    w.cache.kv_heads = c.kv_heads();
    w.cache.key_dim = c.is_linear() ? c.value_dim() : c.key_dim();  // a linear layer's heads' states meet every d_v columns
    // The steps the cached keys went through, as the layer's scenario has them
    const std::vector<Scenario>& layers = w.session->writing.layers;
    const Scenario* s = w.cache_layer < static_cast<int>(layers.size()) ? &layers[static_cast<size_t>(w.cache_layer)] : nullptr;
    const bool qk_norm = s && s->qk_norm, rope = s && s->positional == PositionalEncoding::Rotary;
    w.cache.keys_as = qk_norm && rope ? "after QK-norm and RoPE, " : qk_norm ? "after QK-norm, " : rope ? "after RoPE, " : "";
}

// The caches filled from the pass on screen (it holds the whole text), from layer `from` on.
void fill_session(ModelViewState& m, int from) {
    ModelWriteState& w = m.write;
    if (!w.session) {
        w.session = std::make_shared<WriteSession>();
        from = 0;
    }
    WriteSession& s = *w.session;
    s.model = m.model;  // the writer reads it: alive while a step runs, whatever replaces it on screen
    s.writer = generate::writer(*m.model);
    s.writer.edited = edited_layer(m);
    std::string why;
    if (!generate::prefill(s.writer, m.pass, m.pass.token_ids, s.writing, &why, from)) {
        w.session.reset();
        w.remaining = 0;
        w.step_asked = false;
        w.forced.reset();
        w.said = "The model cannot write: " + why;
        w.refused_revision = m.revision;
        return;
    }
    if (w.said.rfind("The model cannot write", 0) == 0) w.said.clear();
    w.next_key.clear();
    snapshot_cache(m);
}

}  // namespace

std::vector<int> written_text_ids(const ModelViewState& m) {
    std::vector<int> ids(m.pass.token_ids.begin(), m.pass.token_ids.begin() + std::min<size_t>(m.pass.token_ids.size(), m.write.sentence_length));
    for (const WrittenToken& t : m.write.written) ids.push_back(t.id);
    return ids;
}

std::string written_sentence(const ModelViewState& m) {
    std::vector<int> written;
    for (const WrittenToken& t : m.write.written) written.push_back(t.id);
    return written.empty() || !m.model ? m.computed_sentence : m.computed_sentence + m.model->text_of(written);
}

int written_beyond_pass(const ModelViewState& m) { return static_cast<int>(m.write.written.size()) - covered(m); }

std::string text_token(const ModelViewState& m, int i) {
    if (i < static_cast<int>(m.pass.tokens.size())) return m.pass.tokens[static_cast<size_t>(i)];
    const int k = i - m.write.sentence_length;
    return k >= 0 && k < static_cast<int>(m.write.written.size()) ? m.write.written[static_cast<size_t>(k)].token : "?";
}

std::optional<float> written_weight(const ModelViewState& m, int layer, int head, int i, int j) {
    const int k = i - m.write.sentence_length;
    if (k < 0 || k >= static_cast<int>(m.write.written.size())) return std::nullopt;
    const generate::StepAttention& rows = m.write.written[static_cast<size_t>(k)].rows;
    if (layer >= static_cast<int>(rows.size())) return std::nullopt;
    const generate::DecodedAttention& a = rows[static_cast<size_t>(layer)];
    if (head >= static_cast<int>(a.weights.size())) return std::nullopt;
    const Vector& row = a.weights[static_cast<size_t>(head)];
    const int at = j - a.first_position;
    if (at < 0 || at >= row.cols()) return std::nullopt;  // before a window, or after the query
    return row(at);
}

void forget_written(ModelViewState& m) {
    ModelWriteState& w = m.write;
    w.written.clear();
    w.last.reset();
    w.next_key.clear();
    w.remaining = 0;
    w.step_asked = false;
    w.forced.reset();
    w.refill_from.reset();
    w.said.clear();
    w.cache = {};
    if (w.job.running()) w.discard = true;  // its session read the text before
    w.session.reset();
    w.sentence_length = static_cast<int>(m.pass.token_ids.size());
}

void forget_model_write(ModelViewState& m) {
    m.write.job.cancel();  // the step reads the model that goes: its session keeps it until the step ends
    m.write.discard = false;
    forget_written(m);
    m.write.sentence_length = 0;
}

bool model_write_busy(const ModelViewState& m) { return m.write.job.running(); }
void finish_model_write(ModelViewState& m) { m.write.job.wait(); }

bool model_write_ahead(const ModelViewState& m) { return m.write.job.running() || written_beyond_pass(m) > 0; }

// [SECTION] Steps as jobs

namespace {

// What the next token's distribution is made from: the text's length, the sampler, the pass.
std::string next_key(const ModelViewState& m) {
    const ModelWriteState& w = m.write;
    const size_t length = w.session ? w.session->writing.ids.size() : 0;
    return std::to_string(length) + "/" + std::to_string(w.sampler.temperature) + "/" + std::to_string(w.sampler.top_k) + "/" +
           std::to_string(w.sampler.top_p) + "/" + std::to_string(m.revision);
}

void start_step(ModelViewState& m) {
    ModelWriteState& w = m.write;
    std::shared_ptr<WriteSession> session = std::move(w.session);
    const std::optional<int> forced = w.forced;
    const generate::SamplerSettings sampler = w.sampler;
    const int position = static_cast<int>(session->writing.ids.size());
    w.forced.reset();
    if (w.step_asked) w.step_asked = false;
    else if (!forced && w.remaining > 0) --w.remaining;
    w.job.start("Writing token " + std::to_string(position + 1), [session, forced, sampler, position](compute::JobProgress&) {
        const auto t0 = std::chrono::steady_clock::now();
        WriteStepOutcome out;
        out.session = session;
        generate::Writing& writing = session->writing;
        std::string why;
        if (writing.full()) {
            out.why = "the text fills the model's " + std::to_string(session->writer.max_positions) + " positions: nothing more can be written";
            return out;
        }
        std::optional<generate::Sampled> s = forced ? generate::choose(writing.logits, sampler, *forced, &why)
                                                    : generate::sample(writing.logits, sampler, position, &why);
        if (!s) {
            out.why = why;
            return out;
        }
        if (!generate::step(session->writer, writing, s->chosen, &out.rows, &why)) {
            out.why = why;
            return out;
        }
        out.sampled = std::move(s);
        if (!writing.full()) out.next = generate::preview(writing.logits, sampler, &why);
        out.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return out;
    });
}

void take_step(ModelViewState& m, WriteStepOutcome done) {
    ModelWriteState& w = m.write;
    if (w.discard) {  // the text changed under it
        w.discard = false;
        return;
    }
    w.session = std::move(done.session);
    w.step_ms = done.milliseconds;
    if (done.sampled) {
        WrittenToken t;
        t.id = done.sampled->chosen;
        t.token = m.model->token_text(t.id);
        t.probability = done.sampled->probability[static_cast<size_t>(t.id)];
        t.kept = static_cast<int>(done.sampled->kept.size());
        t.forced = done.sampled->forced;
        t.rows = std::move(done.rows);
        w.written.push_back(std::move(t));
        w.last = std::move(done.sampled);
        w.next = std::move(done.next);
    }
    if (!done.why.empty()) {
        w.said = "Writing stopped: " + done.why;
        w.remaining = 0;
    }
    w.next_key = next_key(m);
    snapshot_cache(m);
}

// The next token's distribution under the sampler, made again when either changed.
void update_next(ModelViewState& m) {
    ModelWriteState& w = m.write;
    if (!w.session || w.session->writing.full()) return;
    const std::string key = next_key(m);
    if (key == w.next_key) return;
    w.next_key = key;
    std::string why;
    w.next = generate::preview(w.session->writing.logits, w.sampler, &why);
    if (!w.next) w.said = "The next token cannot be drawn: " + why;
}

}  // namespace

void update_model_write(ModelViewState& m) {
    ModelWriteState& w = m.write;
    if (!m.model) return;
    w.sampler.temperature = w.greedy ? 0.0f : w.temperature;
    if (std::optional<WriteStepOutcome> done = w.job.take()) take_step(m, std::move(*done));
    if (w.job.running() || !m.pass.ok) return;
    if (w.written.empty()) w.sentence_length = static_cast<int>(m.pass.token_ids.size());
    const int held = covered(m);
    for (int k = 0; k < held; ++k) w.written[static_cast<size_t>(k)].rows.clear();  // the pass's maps hold these rows now
    if (w.undo_asked) {
        w.undo_asked = false;
        w.remaining = 0;
        if (!w.written.empty()) {
            w.written.pop_back();
            w.session.reset();  // filled again from a pass of the shorter text
            w.last.reset();
            w.next_key.clear();
        }
    }
    const std::vector<int> text = written_text_ids(m);
    const bool pass_is_text = m.pass.token_ids == text;
    const bool pass_job = m.reshaping || (m.jobs && m.jobs->busy());
    if (pass_is_text && !pass_job && w.refused_revision != m.revision) {
        if (!w.session) fill_session(m, 0);
        else if (w.refill_from) fill_session(m, *w.refill_from);  // an edit or an ablation: its layer on
        w.refill_from.reset();
    }
    if (w.session && w.run_when_open > 0) {
        w.remaining = w.run_when_open;
        w.run_when_open = 0;
    }
    const bool asked = w.remaining > 0 || w.step_asked || w.forced;
    if (!pass_is_text && !asked && !pass_job) submit_written_text(m, text);  // the pass catches up once writing stops
    if (w.session && asked) {
        start_step(m);
        return;
    }
    if (w.session && w.cache.layer != w.cache_layer) snapshot_cache(m);
    update_next(m);
}

// [SECTION] The Write control

namespace {

using generate::bytes_text;

std::string percent(float p) {
    char text[32];
    std::snprintf(text, sizeof text, p >= 0.1f ? "%.1f%%" : "%.2f%%", static_cast<double>(p) * 100.0);
    return text;
}

}  // namespace

void draw_write_control(PanelContext state, ModelViewState& m) {
    ModelWriteState& w = m.write;
    const float scale = state.fonts.scale;
    const bool running = w.job.running() || w.remaining > 0;
    const bool can = (w.session != nullptr || w.job.running()) && !m.reshaping;
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Write:");
    ImGui::SameLine();
    ImGui::BeginDisabled(!can || running);
    if (ImGui::Button("Step")) {
        w.step_asked = true;
        w.said.clear();
    }
    record_item(state, "model.write.step", "");
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("write one token: drawn from the distribution in the Write tab, then run as one new row through every layer");
    ImGui::SameLine();
    if (ImGui::Button("Run")) {
        w.remaining = std::max(1, w.run_count);
        w.said.clear();
        w.select = true;
    }
    record_item(state, "model.write.run", "");
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70.0f * scale);
    ImGui::InputInt("##model.write.count", &w.run_count, 0, 0);
    w.run_count = std::clamp(w.run_count, 1, 4096);
    record_item(state, "model.write.count", std::to_string(w.run_count));
    ImGui::SameLine();
    ImGui::BeginDisabled(!running);
    if (ImGui::Button("Stop")) w.remaining = 0;  // the token under way ends; no other starts
    record_item(state, "model.write.stop", "");
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(running || w.written.empty() || m.reshaping);
    if (ImGui::Button("Undo")) w.undo_asked = true;
    record_item(state, "model.write.undo", "");
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::Checkbox("Greedy", &w.greedy);
    record_item(state, "model.write.greedy", w.greedy ? "on" : "off");
    if (!w.greedy) {
        // each slider as wide as its widest label, with room to grab it (a fixed width clipped
        // "temperature 1.20" at the window's font)
        auto fit = [](const char* widest) { return ImGui::CalcTextSize(widest).x + 4.0f * ImGui::GetStyle().FramePadding.x; };
        ImGui::SameLine();
        ImGui::SetNextItemWidth(fit("temperature 0.00"));
        ImGui::SliderFloat("##model.write.temperature", &w.temperature, 0.05f, 3.0f, "temperature %.2f");
        record_item(state, "model.write.temperature", std::to_string(w.temperature));
        ImGui::SameLine();
        ImGui::SetNextItemWidth(fit("top-k 100"));
        ImGui::SliderInt("##model.write.top_k", &w.sampler.top_k, 0, 100, w.sampler.top_k == 0 ? "top-k off" : "top-k %d");
        w.sampler.top_k = std::max(0, w.sampler.top_k);
        record_item(state, "model.write.top_k", std::to_string(w.sampler.top_k));
        ImGui::SameLine();
        ImGui::SetNextItemWidth(fit("top-p 0.00"));
        ImGui::SliderFloat("##model.write.top_p", &w.sampler.top_p, 0.01f, 1.0f, "top-p %.2f");
        w.sampler.top_p = std::clamp(w.sampler.top_p, 0.01f, 1.0f);
        record_item(state, "model.write.top_p", std::to_string(w.sampler.top_p));
        ImGui::SameLine();
        ImGui::TextUnformatted("seed");
        ImGui::SameLine();
        int seed = static_cast<int>(w.sampler.seed);
        ImGui::SetNextItemWidth(60.0f * scale);
        if (ImGui::InputInt("##model.write.seed", &seed, 0, 0)) w.sampler.seed = static_cast<std::uint64_t>(std::max(0, seed));
    }
    std::string status;
    if (running) status = "writing token " + std::to_string(written_text_ids(m).size() + 1) + (w.remaining > 0 ? ", " + std::to_string(w.remaining) + " more after it" : "");
    else if (!w.written.empty()) status = std::to_string(w.written.size()) + (w.written.size() == 1 ? " token written" : " tokens written");
    if (w.step_ms > 0 && !w.written.empty()) {
        char ms[48];
        std::snprintf(ms, sizeof ms, ", %.1f ms the last", w.step_ms);
        status += ms;
    }
    if (!status.empty()) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", status.c_str());
    }
    record_item(state, "model.write.status", status);
    if (!w.said.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 170, 90, 255));
        ImGui::TextWrapped("%s", w.said.c_str());
        ImGui::PopStyleColor();
    }
    record_item(state, "model.write.said", w.said);
}

// [SECTION] The Write tab

namespace {

// A distribution as bars, most likely first: the model's p as an outline, the tempered p_T
// filled, the kept tokens in colour and the cut ones grey, the cut drawn across; `lit` the
// chosen token. A click on a bar (when `clickable`) makes that token the next one.
void draw_distribution(PanelContext state, ModelViewState& m, const generate::Sampled& s, int lit, bool clickable, const char* id) {
    const float scale = state.fonts.scale;
    const std::vector<int> shown = generate::ranked(s.tempered, 12);
    float top = 0.0f;
    for (int t : shown) top = std::max({top, s.tempered[static_cast<size_t>(t)], s.probability[static_cast<size_t>(t)]});
    if (top <= 0.0f) top = 1.0f;
    const float label_w = 150.0f * scale, bar_w = std::max(120.0f * scale, ImGui::GetContentRegionAvail().x - label_w - 90.0f * scale);
    const float row = ImGui::GetTextLineHeightWithSpacing();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    std::string record;
    const int kept = static_cast<int>(s.kept.size());
    for (size_t r = 0; r < shown.size(); ++r) {
        const int t = shown[r];
        const float y = origin.y + static_cast<float>(r) * row;
        const bool is_kept = std::find(s.kept.begin(), s.kept.end(), t) != s.kept.end();
        const std::string token = m.model->token_text(t);
        draw->AddText(ImVec2(origin.x, y), t == lit ? IM_COL32(255, 200, 60, 255) : ImGui::GetColorU32(ImGuiCol_Text),
                      (token.size() > 20 ? token.substr(0, 18) + "\xE2\x80\xA6" : token).c_str());
        const float x0 = origin.x + label_w;
        const float after = s.tempered[static_cast<size_t>(t)] / top * bar_w, before = s.probability[static_cast<size_t>(t)] / top * bar_w;
        const ImU32 fill = t == lit ? IM_COL32(255, 200, 60, 255) : is_kept ? pack(viridis(0.55f)) : pack(kMaskedBackground, 200);
        draw->AddRectFilled(ImVec2(x0, y + 2.0f), ImVec2(x0 + after, y + row - 3.0f), fill);
        draw->AddRect(ImVec2(x0, y + 1.0f), ImVec2(x0 + std::max(before, 1.0f), y + row - 2.0f), IM_COL32(230, 230, 230, 200), 0.0f, 0, 1.0f);
        char p[64];
        std::snprintf(p, sizeof p, "%s", percent(s.tempered[static_cast<size_t>(t)]).c_str());
        draw->AddText(ImVec2(x0 + bar_w + 6.0f * scale, y), ImGui::GetColorU32(ImGuiCol_TextDisabled), p);
        ImGui::SetCursorScreenPos(ImVec2(origin.x, y));
        ImGui::InvisibleButton((std::string(id) + ".bar" + std::to_string(r)).c_str(), ImVec2(label_w + bar_w, row));
        record_item(state, (std::string(id) + ".bar" + std::to_string(r + 1)).c_str(), std::to_string(t));
        if (ImGui::IsItemHovered())  // a byte of a character says what it does after the text written so far
            ImGui::SetTooltip("%s (id %d)\np = %s (the model, temperature 1)\np_T = %s after the temperature\n%s%s",
                              (m.write.session ? m.model->token_description(t, m.write.session->writing.ids) : token).c_str(), t,
                              percent(s.probability[static_cast<size_t>(t)]).c_str(), percent(s.tempered[static_cast<size_t>(t)]).c_str(),
                              is_kept ? "kept: the draw may choose it" : "cut: the draw never chooses it",
                              clickable ? "\nclick: write this token next" : "");
        if (clickable && ImGui::IsItemClicked() && !m.write.job.running() && m.write.remaining == 0) m.write.forced = t;
        record += (record.empty() ? "" : " ") + token + "=" + percent(s.tempered[static_cast<size_t>(t)]) + (is_kept ? "" : "(cut)") + (t == lit ? "*" : "");
        // The cut: between the last kept token and the first cut one.
        if (static_cast<int>(r) + 1 == kept && r + 1 < shown.size() && (s.top_k_cut > 0 || s.top_p_cut > 0)) {
            const float cut_y = y + row - 0.5f;
            draw->AddLine(ImVec2(origin.x, cut_y), ImVec2(x0 + bar_w + 80.0f * scale, cut_y), IM_COL32(255, 90, 60, 255), 2.0f * scale);
            std::string why = s.top_k_cut > 0 && s.top_k_cut == kept ? "top-k " + std::to_string(s.top_k_cut) : "top-p";
            if (s.top_p_cut > 0 && s.top_p_cut == kept) why = "top-p " + percent(m.write.sampler.top_p) + " reached";
            draw->AddText(ImVec2(x0 + bar_w - ImGui::CalcTextSize(why.c_str()).x, cut_y - row + 2.0f), IM_COL32(255, 90, 60, 255), why.c_str());
            record += " |cut|";
        }
    }
    ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + static_cast<float>(shown.size()) * row));
    ImGui::Dummy(ImVec2(label_w + bar_w, 1.0f));
    record_item(state, id, record);
}

// K or V of the cache view's layer: rows the positions kept (the ones a window dropped greyed
// above them), columns each K/V head's d numbers, diverging about 0.
void draw_cache_matrix(PanelContext state, const ModelViewState& m, const Matrix& values, const char* name, float width, float height) {
    const ModelWriteState::CacheSnapshot& c = m.write.cache;
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const int left = c.first_position;                        // positions dropped by the window
    const int rows = static_cast<int>(values.rows()) + std::min(left, 4), cols = static_cast<int>(values.cols());
    if (rows == 0 || cols == 0) return;
    const float cell_h = std::min(18.0f * state.fonts.scale, height / static_cast<float>(rows)), cell_w = width / static_cast<float>(cols);
    const float limit = std::max(values.size() > 0 ? values.cwiseAbs().maxCoeff() : 1.0f, 1e-6f);
    const int shown_left = std::min(left, 4);
    for (int r = 0; r < shown_left; ++r) {  // the last rows to leave, greyed
        const float y = origin.y + static_cast<float>(r) * cell_h;
        draw->AddRectFilled(ImVec2(origin.x, y), ImVec2(origin.x + width, y + cell_h - 1.0f), pack(kMaskedHatch, 120));
    }
    for (int r = 0; r < values.rows(); ++r)
        for (int k = 0; k < cols; ++k) {
            const float x = origin.x + static_cast<float>(k) * cell_w, y = origin.y + static_cast<float>(r + shown_left) * cell_h;
            draw->AddRectFilled(ImVec2(x, y), ImVec2(x + cell_w + 0.5f, y + cell_h - (cell_h > 4.0f ? 1.0f : 0.0f)),
                                pack(scale_color(ColorScale::Diverging, values(r, k), limit)));
        }
    const bool channels = std::string(name) == "conv";  // a linear layer's convolution rows: channels, no heads to part
    for (int g = 1; g < c.kv_heads && !channels; ++g) {  // K/V heads apart (a linear layer's states)
        const float x = origin.x + static_cast<float>(g * c.key_dim) * cell_w;
        draw->AddLine(ImVec2(x, origin.y), ImVec2(x, origin.y + static_cast<float>(rows) * cell_h), IM_COL32(0, 0, 0, 255), 2.0f);
    }
    ImGui::InvisibleButton(name, ImVec2(width, static_cast<float>(rows) * cell_h));
    if (ImGui::IsItemHovered()) {
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        const int r = static_cast<int>((mouse.y - origin.y) / cell_h) - shown_left, k = static_cast<int>((mouse.x - origin.x) / cell_w);
        if (r < 0)
            ImGui::SetTooltip(c.chunk > 0 ? "left with its chunk: a position before %d, which no later query of this layer sees"
                                          : "left the window: a position before %d, which no later query of this layer sees",
                              left + 1);
        else if (c.linear && r < values.rows() && k >= 0 && k < cols) {  // Gated DeltaNet: a state's cell, or a kept row's channel
            if (channels)
                ImGui::SetTooltip("the mixed channels of position %d, kept for the convolution: channel %d: %.4f",
                                  c.tokens - static_cast<int>(values.rows()) + r + 1, k + 1, static_cast<double>(values(r, k)));
            else
                ImGui::SetTooltip("head %d's state S: key dimension %d, value dimension %d: %.4f", k / std::max(c.key_dim, 1) + 1, r + 1,
                                  k % std::max(c.key_dim, 1) + 1, static_cast<double>(values(r, k)));
        } else if (r < values.rows() && k >= 0 && k < cols)
            ImGui::SetTooltip("%s of position %d (%s), K/V head %d, dimension %d: %.4f", name, c.first_position + r + 1,
                              text_token(m, c.first_position + r).c_str(), k / std::max(c.key_dim, 1) + 1, k % std::max(c.key_dim, 1) + 1,
                              static_cast<double>(values(r, k)));
    }
}

void draw_cache_view(PanelContext state, ModelViewState& m) {
    ModelWriteState& w = m.write;
    const lm::Model& model = *m.model;
    const int layers = model.shape().layers;
    ImGui::SetNextItemWidth(140.0f * state.fonts.scale);
    int shown = w.cache_layer + 1;
    if (ImGui::SliderInt("##model.write.cache_layer", &shown, 1, layers, "layer %d")) w.cache_layer = shown - 1;
    record_item(state, "model.write.cache_layer", std::to_string(w.cache_layer + 1));
    const ModelWriteState::CacheSnapshot& c = w.cache;
    if (c.layer < 0) {
        ImGui::TextDisabled("The caches are filled once the sentence's pass lands.");
        return;
    }
    ImGui::SameLine();
    if (c.linear) {  // Gated DeltaNet keeps no row per token
        const std::string about = "Gated DeltaNet keeps no K or V row per token: after " + std::to_string(c.tokens) + " tokens it holds each of its " +
                                  std::to_string(c.kv_heads) + " heads' state S (" + std::to_string(c.k.rows()) + " \xC3\x97 " +
                                  std::to_string(c.kv_heads > 0 ? c.k.cols() / c.kv_heads : 0) + ") and its convolution's last " +
                                  std::to_string(c.v.rows()) + " rows: " + std::to_string(c.numbers) + " numbers, the same at any length";
        ImGui::TextWrapped("%s", about.c_str());
        record_item(state, "model.write.cache", about);
        const float width = (ImGui::GetContentRegionAvail().x - 20.0f * state.fonts.scale) * 0.5f;
        const float height = std::max(120.0f * state.fonts.scale, ImGui::GetContentRegionAvail().y * 0.3f);
        ImGui::BeginGroup();
        ImGui::TextUnformatted("each head's state S, side by side (key dims \xC3\x97 value dims)");
        if (c.k.size() != 0) draw_cache_matrix(state, m, c.k, "S", width, height);
        ImGui::EndGroup();
        ImGui::SameLine(0.0f, 20.0f * state.fonts.scale);
        ImGui::BeginGroup();
        ImGui::TextUnformatted("the convolution's last rows (q, k, v channels)");
        if (c.v.size() != 0) draw_cache_matrix(state, m, c.v, "conv", width, height);
        ImGui::EndGroup();
        return;
    }
    const int group = model.shape().heads / std::max(1, c.kv_heads);
    std::string about = std::to_string(c.k.rows()) + " rows kept of " + std::to_string(c.first_position + c.k.rows()) + " tokens; " +
                        std::to_string(c.kv_heads) + (c.kv_heads == 1 ? " K/V head" : " K/V heads") + " of " + std::to_string(c.key_dim);
    if (group > 1) about += ", each read by " + std::to_string(group) + " query heads";
    if (c.window > 0) about += "; a sliding window of " + std::to_string(c.window) + ": older rows leave";
    if (c.chunk > 0) about += "; chunks of " + std::to_string(c.chunk) + ": the token that starts a chunk drops the rows before it";
    if (c.first_position > 0) about += " (" + std::to_string(c.first_position) + " have left)";
    if (const hf::LatentSpec& l = model.opened().spec.latent; l.kv_rank > 0) {
        // latent attention: what is kept here is expanded from what a latent cache would keep
        about += "; every head's k and v expanded from the layer's latent, as transformers keeps them: a latent cache keeps " +
                 std::to_string(l.kv_rank + l.rope_dim) + " numbers a token (the latent and the rotary key) instead of " +
                 std::to_string(model.shape().heads * (l.nope_dim + l.rope_dim + l.v_dim));
    }
    ImGui::TextWrapped("%s", about.c_str());
    record_item(state, "model.write.cache", about);
    std::string heads_text;
    for (int g = 0; g < c.kv_heads; ++g)
        heads_text += (g ? "   " : "") + std::string("K/V head ") + std::to_string(g + 1) + " \xE2\x86\x90 query heads " + std::to_string(g * group + 1) +
                      (group > 1 ? "\xE2\x80\x93" + std::to_string((g + 1) * group) : "");
    ImGui::TextDisabled("%s", heads_text.c_str());
    const float width = (ImGui::GetContentRegionAvail().x - 20.0f * state.fonts.scale) * 0.5f;
    const float height = std::max(120.0f * state.fonts.scale, ImGui::GetContentRegionAvail().y * 0.3f);
    ImGui::BeginGroup();
    ImGui::Text("K (%sas attention reads it)", c.keys_as.c_str());
    draw_cache_matrix(state, m, c.k, "K", width, height);
    ImGui::EndGroup();
    ImGui::SameLine(0.0f, 20.0f * state.fonts.scale);
    ImGui::BeginGroup();
    ImGui::TextUnformatted("V");
    draw_cache_matrix(state, m, c.v, "V", width, height);
    ImGui::EndGroup();
}

// What the caches cost: per layer and for the model, in the checkpoint's dtype, now and at
// 4k, 32k and 128k tokens, beside multi-head attention with the same query heads.
void draw_cache_cost(PanelContext state, ModelViewState& m) {
    const lm::Model& model = *m.model;
    const generate::Writer writer = generate::writer(model);
    const std::vector<generate::LayerCacheShape> shapes = generate::cache_shapes(writer);
    const double element = generate::element_bytes(model);
    const long long now = static_cast<long long>(written_text_ids(m).size());
    const int heads = model.shape().heads;
    ImGui::Text("What the KV cache costs, in the checkpoint's %s (%.0f bytes a number; the app itself keeps float32):",
                element == 2.0 ? "BF16/F16" : "float32", element);
    if (ImGui::BeginTable("model.write.cost", 6, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
        ImGui::TableSetupColumn("");
        for (const char* h : {"per token", "now", "4k tokens", "32k tokens", "128k tokens"}) ImGui::TableSetupColumn(h);
        ImGui::TableHeadersRow();
        std::string record;
        const auto line = [&](const std::string& label, const std::vector<generate::LayerCacheShape>& of, bool multi_head) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(label.c_str());
            ImGui::TableNextColumn();
            const generate::CacheCost one = generate::cache_cost(of, heads, element, 1);
            ImGui::TextUnformatted(bytes_text(multi_head ? one.multi_head_bytes : one.bytes_per_token).c_str());
            record += label + ":" + bytes_text(multi_head ? one.multi_head_bytes : one.bytes_per_token);
            for (long long length : {now, 4096LL, 32768LL, 131072LL}) {
                ImGui::TableNextColumn();
                const generate::CacheCost cost = generate::cache_cost(of, heads, element, length);
                ImGui::TextUnformatted(bytes_text(multi_head ? cost.multi_head_bytes : cost.bytes).c_str());
                record += " " + bytes_text(multi_head ? cost.multi_head_bytes : cost.bytes);
            }
            record += "; ";
        };
        for (size_t l = 0; l < shapes.size(); ++l) {
            const generate::LayerCacheShape& s = shapes[l];
            std::string label = "layer " + std::to_string(l + 1) + ": " +
                                (s.state > 0  ? "Gated DeltaNet, a state of " + std::to_string(s.kv_heads) + "\xC3\x97" + std::to_string(s.key_dim) +
                                                   "\xC3\x97" + std::to_string(s.value_dim) + " and its convolution's rows, whatever the length"
                                 : s.latent > 0 ? "a latent of " + std::to_string(s.latent) + " (this app keeps " + std::to_string(s.kv_heads) +
                                                    " heads' k and v, as transformers does)"
                                              : std::to_string(s.kv_heads) + "\xC3\x97" + std::to_string(s.key_dim));
            if (s.window > 0) label += ", window " + std::to_string(s.window);
            if (s.chunk > 0) label += ", chunks of " + std::to_string(s.chunk);
            if (shapes.size() <= 12 || l == static_cast<size_t>(m.write.cache_layer)) line(label, {s}, false);
        }
        line("the model", shapes, false);
        line("multi-head attention, " + std::to_string(heads) + " heads, no window", shapes, true);
        ImGui::EndTable();
        record_item(state, "model.write.cost", record);
    }
}

}  // namespace

void draw_write_tab(PanelContext state, ModelViewState& m) {
    ModelWriteState& w = m.write;
    ImGui::BeginChild("model.write.tab", ImVec2(0, 0), false);
    const float half = ImGui::GetContentRegionAvail().x * 0.5f;
    ImGui::BeginGroup();
    ImGui::TextUnformatted(w.greedy ? "Next token (greedy: the most likely one; a click writes another):"
                                    : "Next token: p as the outline, p_T after the temperature filled, the cut in red (a click writes that token):");
    ImGui::BeginChild("model.write.next", ImVec2(half - 10.0f, ImGui::GetTextLineHeightWithSpacing() * 13.0f), false);
    if (w.next) draw_distribution(state, m, *w.next, -1, true, "model.write.next");
    else ImGui::TextDisabled("No distribution yet.");
    ImGui::EndChild();
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginGroup();
    if (w.last && !w.written.empty()) {
        const WrittenToken& t = w.written.back();
        char drawn[96];
        if (t.forced) std::snprintf(drawn, sizeof drawn, "chosen by a click");
        else if (w.sampler.greedy() || w.last->draw == 0.0f) std::snprintf(drawn, sizeof drawn, "the most likely");
        else std::snprintf(drawn, sizeof drawn, "drawn with u = %.3f among %d kept", static_cast<double>(w.last->draw), t.kept);
        ImGui::Text("Token %zu: %s (%s), %s", written_text_ids(m).size(), t.token.c_str(), percent(t.probability).c_str(), drawn);
        ImGui::BeginChild("model.write.last", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 13.0f), false);
        draw_distribution(state, m, *w.last, t.id, false, "model.write.last");
        ImGui::EndChild();
    } else {
        ImGui::TextDisabled("Step or Run writes a token: its distribution and choice show here.");
    }
    ImGui::EndGroup();
    std::string written;
    for (const WrittenToken& t : w.written) written += (written.empty() ? "" : " ") + t.token;
    ImGui::TextWrapped("Written: %s", written.empty() ? "nothing yet" : written.c_str());
    record_item(state, "model.write.written", written);
    if (!w.written.empty()) {
        ImGui::SameLine();
        if (ImGui::SmallButton("Make it the sentence")) {
            m.sentence = written_sentence(m);
            forget_written(m);
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("the sentence and the text written after it become the sentence box's, tokenised again (a session keeps the same text)");
    }
    ImGui::Separator();
    if (ImGui::CollapsingHeader("The KV cache of a layer", ImGuiTreeNodeFlags_DefaultOpen)) draw_cache_view(state, m);
    if (ImGui::CollapsingHeader("What the cache costs", ImGuiTreeNodeFlags_DefaultOpen)) draw_cache_cost(state, m);
    ImGui::EndChild();
}

}  // namespace attn::ui
