// The backend section: which engine computes, how far a long run is, long generated
// sequences, and the zoom region that output-only runs recompute at full resolution.
//
// Index
// [SECTION] Engine choice
// [SECTION] Progress
// [SECTION] Sequence length
// [SECTION] Zoom region
#include "ui/panel_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include <imgui.h>

#include "speed.hpp"
#include "ui/classroom.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

constexpr ImU32 kNoticeColor = IM_COL32(255, 170, 90, 255);

// [SECTION] Engine choice

void engine_choice(Context& state) {
    compute::Settings& settings = state.compute.settings;
    const compute::Status& status = state.compute.status;
    ImGui::TextUnformatted("Engine");
    for (compute::Choice c : {compute::Choice::Cpu, compute::Choice::Gpu, compute::Choice::Auto}) {
        ImGui::SameLine();
        const char* label = c == compute::Choice::Cpu ? "CPU" : c == compute::Choice::Gpu ? "GPU" : "Auto";
        if (ImGui::RadioButton(label, settings.choice == c)) settings.choice = c;
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Auto: the CPU in full detail up to %d tokens; above, output-only on the GPU\n"
                          "when there is a hardware one (a software renderer is slower than the CPU)",
                          compute::kFullDetailLimit);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    if (!status.gpu_renderer.empty())
        ImGui::TextWrapped("GL: %s%s", status.gpu_renderer.c_str(), status.gpu_software ? " (software)" : "");
    if (status.gpu == compute::GpuState::Ready) ImGui::TextWrapped("GPU backend ready: %s", status.gpu_kernel.c_str());
    ImGui::PopStyleColor();
    if (!status.notice.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, kNoticeColor);
        ImGui::TextWrapped("%s", status.notice.c_str());
        ImGui::PopStyleColor();
    }
    const char* detail = status.planned_detail == Detail::Full ? "full detail: every n\xC3\x97n matrix"
                                                               : "output-only: weights pooled, no n\xC3\x97n matrix";
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ImGui::TextWrapped("%s, %s", status.planned_gpu ? "GPU" : "CPU", detail);
    ImGui::PopStyleColor();
}

// [SECTION] Progress

void progress(Context& state) {
    const compute::Status& status = state.compute.status;
    if (!status.busy) return;
    if (status.progress >= 0.0f) {
        char overlay[48];
        std::snprintf(overlay, sizeof overlay, "GPU %.0f%%", 100.0 * status.progress);
        ImGui::ProgressBar(status.progress, ImVec2(-1, 0), overlay);
    } else {
        // The CPU worker reports no fraction: a bar that sweeps while it runs.
        const float t = static_cast<float>(ImGui::GetTime());
        ImGui::ProgressBar(0.5f + 0.5f * std::sin(t * 3.0f), ImVec2(-1, 0), status.stale ? "CPU (then again: edited)" : "CPU");
    }
    hint_text("the last result stays on screen until then");
    if (status.zooming) {  // only a zoom can be stopped: an edit's run is what the screen must show
        if (ImGui::Button("Cancel zoom")) {
            state.compute.settings.region = compute::shown_region(state.session.trace);
            ++state.compute.settings.cancel_requests;
            state.compute.region_draft = compute::Region{};
        }
        record_item(state, "backend.cancel_zoom", "Cancel zoom");
    }
}

// [SECTION] Sequence length

// The CPU engine's measured speed, read once (the compute layer's, else measured now) for the
// estimates the panel says before a run or a zoom starts.
double measured_cpu_gflops(Context& state) {
    ComputeState& cs = state.compute;
    if (cs.cpu_gflops <= 0.0) cs.cpu_gflops = cs.status.speeds.cpu_gflops > 0.0 ? cs.status.speeds.cpu_gflops : speed::cpu_gflops();
    return cs.cpu_gflops;
}

// The generated sequence of `length` tokens as "generate" makes it: it keeps the mask, fill,
// scaling, softmax and position encoding on screen; a mask tied to the old tokens (padding
// flags, a painted mask) cannot follow, and `dropped` says which was left out.
Scenario generated_like(const Scenario& current, int length, std::uint64_t seed, std::string* dropped = nullptr) {
    Scenario generated = compute::generated_scenario(length, seed);
    generated.mask = current.mask;
    generated.window = current.window;
    generated.masked_fill = current.masked_fill;
    generated.scale = current.scale;
    generated.softmax = current.softmax;
    if (current.input == InputMode::Embeddings) generated.positional = current.positional;
    if (current.mask == MaskKind::Padding || current.mask == MaskKind::Custom) {
        generated.mask = MaskKind::None;
        if (dropped != nullptr) *dropped = current.mask == MaskKind::Padding ? "padding" : "custom";
    }
    return generated;
}

// How long the run of a generated sequence of n tokens takes, as a range in words. Up to the
// full-detail limit the CPU engine's measured speed says it (milliseconds). Above, the run is
// output-only with pooled weights, whose cost per score (its exp, the pooling pass) no count
// of multiply-adds predicts: the very run "generate" starts is timed once at 2,048 tokens off
// the window's thread, and scaled by n² (attention's share; the rest grows only with n). The
// range allows for the machine's other load: from ¾ to 1½ times the estimate. The timing is a
// run of its own: it starts once the length or the generate button is pointed at, not with
// every window (a classroom laptop's first seconds are the lesson's).
std::string generate_estimate(Context& state, int n) {
    const compute::Status& status = state.compute.status;
    const Scenario& on_screen = state.session.scenario;
    const compute::Settings& settings = state.compute.settings;
    const double flops = speed::attention_flops(n, n, 8, 8, on_screen.mask == MaskKind::Causal && std::isinf(on_screen.masked_fill));
    const double gpu_ms = status.speeds.gpu_hardware && status.speeds.gpu_gflops > 0.0 ? flops / (status.speeds.gpu_gflops * 1e6) : 1e300;
    double ms = 0.0;
    if (n <= compute::kFullDetailLimit) {
        ms = flops / (std::max(1e-3, measured_cpu_gflops(state)) * 1e6);
    } else if (state.screenshot_mode) {
        // A picture is the same picture each time it is taken: no timing, whose number varies.
        return "timed when the window is in use";
    } else if (!state.compute.generate_timing.wanted) {
        return "timed when the length or generate is pointed at";
    } else {
        constexpr int kTimedLength = 2048;
        ComputeState::RunTiming& timing = state.compute.generate_timing;
        const std::string key = std::string(to_string(on_screen.mask)) + "," + std::to_string(on_screen.window) + "," +
                                std::to_string(on_screen.masked_fill) + "," + (on_screen.scale ? "scaled" : "unscaled") + "," +
                                to_string(on_screen.softmax) + "," +
                                (on_screen.input == InputMode::Embeddings ? to_string(on_screen.positional) : "direct");
        if (timing.key != key) {
            // Other settings: timed again, a timing under way for the old ones cancelled and let go.
            timing.key = key;
            timing.ms_per_token2.reset();
            const Scenario sample = generated_like(on_screen, kTimedLength, settings.generate_seed);
            timing.job.start("timing a run of " + std::to_string(kTimedLength) + " tokens", [sample](compute::JobProgress& progress) {
                RunOptions options = compute::output_only_options(sample, compute::Region{});
                options.cancel = progress.cancel_flag();
                const auto start = std::chrono::steady_clock::now();
                run(sample, options);
                const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
                return ms / (static_cast<double>(kTimedLength) * kTimedLength);
            });
        }
        if (std::optional<double> timed = timing.job.take()) timing.ms_per_token2 = *timed;
        if (!timing.ms_per_token2) return "timing its run\xE2\x80\xA6";
        ms = *timing.ms_per_token2 * static_cast<double>(n) * n;
    }
    ms = std::min(ms, gpu_ms);
    const auto said = [](double v) {
        char text[32];
        if (v < 1000.0) std::snprintf(text, sizeof text, "%.0f ms", std::max(1.0, v));
        else if (v < 10000.0) std::snprintf(text, sizeof text, "%.1f s", v / 1000.0);
        else if (v < 120000.0) std::snprintf(text, sizeof text, "%.0f s", v / 1000.0);
        else std::snprintf(text, sizeof text, "%.1f min", v / 60000.0);
        return std::string(text);
    };
    if (ms < 100.0) return "under 0.1 s";
    return "about " + said(ms) + " (" + said(0.75 * ms) + " to " + said(1.5 * ms) + ")";
}

void sequence_length(Context& state) {
    compute::Settings& settings = state.compute.settings;
    // Log steps: 2^4 … 2^16.
    int exponent = std::clamp(static_cast<int>(std::lround(std::log2(std::max(16, settings.generate_length)))), 4, 16);
    const std::string shown = std::to_string(1 << exponent) + " tokens";
    ImGui::SetNextItemWidth(-80.0f * state.fonts.scale);
    if (ImGui::SliderInt("##length", &exponent, 4, 16, shown.c_str(), ImGuiSliderFlags_AlwaysClamp))
        settings.generate_length = 1 << exponent;
    state.compute.generate_timing.wanted |= ImGui::IsItemHovered() || ImGui::IsItemActive();
    ImGui::SameLine();
    // Before anything starts: about how long the run of the generated sequence takes.
    const std::string estimate = generate_estimate(state, settings.generate_length);
    if (ImGui::Button("generate")) {
        std::string dropped;
        Scenario generated = generated_like(state.session.scenario, settings.generate_length, settings.generate_seed, &dropped);
        if (!dropped.empty())
            add_notice(state, "The " + dropped + " mask belongs to the old tokens: the generated sequence has no mask", false);
        state.session.push(edits::ReplaceScenario{std::move(generated)});
        state.views.clear();
        state.view.shown_head = 0;
        settings.region = compute::Region{};
        state.compute.region_draft = compute::Region{};
    }
    record_item(state, "backend.generate", "generate");
    state.compute.generate_timing.wanted |= ImGui::IsItemHovered();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("tokens t1 \xE2\x80\xA6 tN, d_model 64, 8 heads, seeded embeddings;\n"
                          "above %d tokens the weights are shown pooled",
                          compute::kFullDetailLimit);
    hint_text("its run: " + estimate + " at this machine's measured speed");
    record_item(state, "backend.generate_estimate", estimate);
}

// [SECTION] Zoom region

void zoom_region(Context& state) {
    const Trace& t = state.session.trace;
    if (!t.ok || t.detail != Detail::OutputOnly || t.head.empty()) return;
    ComputeState& cs = state.compute;
    compute::Settings& settings = cs.settings;
    compute::Region& draft = cs.region_draft;
    if (draft.whole() || cs.draft_queries != t.n_queries || cs.draft_keys != t.n_keys) {  // a new sequence: its whole range
        draft = compute::Region{0, t.n_queries, 0, t.n_keys};
        cs.draft_queries = t.n_queries;
        cs.draft_keys = t.n_keys;
    }
    ImGui::TextUnformatted("Weights region (zoom)");
    // Counted from 1, both ends shown: queries first … last.
    int first_row = draft.row_begin + 1, last_row = draft.row_end, first_col = draft.col_begin + 1, last_col = draft.col_end;
    ImGui::SetNextItemWidth(-1);
    ImGui::DragIntRange2("##rows", &first_row, &last_row, std::max(1.0f, t.n_queries / 400.0f), 1, t.n_queries, "queries %d",
                         "to %d", ImGuiSliderFlags_AlwaysClamp);
    record_item(state, "backend.region_rows", "queries " + std::to_string(first_row) + " to " + std::to_string(last_row));
    ImGui::SetNextItemWidth(-1);
    ImGui::DragIntRange2("##cols", &first_col, &last_col, std::max(1.0f, t.n_keys / 400.0f), 1, t.n_keys, "keys %d", "to %d",
                         ImGuiSliderFlags_AlwaysClamp);
    record_item(state, "backend.region_cols", "keys " + std::to_string(first_col) + " to " + std::to_string(last_col));
    draft = compute::Region{first_row - 1, std::max(first_row, last_row), first_col - 1, std::max(first_col, last_col)};
    // The estimate, before anything starts: a zoom draws the region's scores again from the
    // row statistics the run kept, or a GPU run's whole sequence again when that is faster
    // (compute.cpp decides by the same speeds).
    speed::Speeds speeds = cs.status.speeds;
    speeds.cpu_gflops = std::max(1e-3, measured_cpu_gflops(state));
    const compute::ZoomPlan zoom = compute::plan_zoom(t, state.session.scenario, speeds, cs.status.gpu != compute::GpuState::Failed,
                                                      draft.row_end - draft.row_begin, draft.col_end - draft.col_begin);
    const bool from_rows = zoom.from_rows;
    const double estimate_ms = zoom.predicted_ms;
    char estimate[96];
    if (estimate_ms < 1000.0) std::snprintf(estimate, sizeof estimate, "about %.0f ms", std::max(1.0, estimate_ms));
    else std::snprintf(estimate, sizeof estimate, "about %.1f s", estimate_ms / 1000.0);
    const bool busy = state.compute.status.busy;
    ImGui::BeginDisabled(busy);
    if (ImGui::Button("zoom")) {
        settings.region = draft;
        state.requests.push_back(ShowView{{}, {}, attn::Column::Softmax});  // the weights are what a zoom redraws
    }
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("draw the weights of this region again; up to 512 tokens a side is full resolution");
    ImGui::SameLine();
    ImGui::BeginDisabled(busy);
    if (ImGui::Button("whole sequence")) {
        settings.region = compute::Region{};
        draft = compute::Region{0, t.n_queries, 0, t.n_keys};
    }
    ImGui::EndDisabled();
    const std::string said = std::string(estimate) + (from_rows ? " (the region only)" : " (the whole run again)");
    hint_text("zoom: " + said);
    record_item(state, "backend.zoom_estimate", said);
    const PooledWeights& pooled = t.head.front().pooled_weights;
    const std::string shown = "shown: queries " + position_span(pooled.row_begin, pooled.row_end) + ", keys " +
                              position_span(pooled.col_begin, pooled.col_end);
    hint_text(shown);
    record_item(state, "backend.region_shown", shown);
}

}  // namespace

void draw_backend(Context& state) {
    ImGui::Separator();
    ImGui::TextUnformatted("Backend");
    engine_choice(state);
    progress(state);
    sequence_length(state);
    zoom_region(state);
}

}  // namespace attn::ui
