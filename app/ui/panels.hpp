#pragma once
// The panels of the main window, one per file (panel_*.cpp). Each reads the session's
// const trace and pushes edits; none recomputes anything.
#include "ui/app_state.hpp"
#include "ui/heatmap.hpp"

namespace attn::ui {

// frame.cpp: the whole window, one frame (between ImGui::NewFrame and ImGui::Render).
void draw_frame(AppState& state, HeatmapTextures& textures);
// After ImGui::Render: what this frame recorded (hover, heatmap and widget layout) becomes
// what the next frame reads.
void end_frame(AppState& state);

void draw_controls(Context& state);                               // panel_controls.cpp
void draw_tokens(Context& state, TokenEditor& tokens);                               // panel_tokens.cpp
void draw_pipeline(Context& state, PipelineLayout& layout, HeatmapTextures& textures);    // panel_pipeline.cpp
void draw_status(Context& state);                                 // panel_status.cpp

// Records the last item drawn (its rectangle and `text`) under `id` for the layout sidecar
// and the UI tests. Cheap: a few strings per frame.
void record_item(Context& state, const char* id, std::string text);
// Greyed text that wraps at the panel's edge: a hint in the 290 px side bar is never cut off.
void hint_text(const std::string& text);

}  // namespace attn::ui
