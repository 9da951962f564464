#pragma once
// The panels of the main window, one per file (panel_*.cpp). Each reads the session's
// const trace and pushes edits; none recomputes anything.
#include "ui/heatmap.hpp"
#include "ui/view.hpp"
#include "ui/view_states.hpp"

namespace attn::ui {

void draw_controls(Context& state);                               // panel_controls.cpp
void draw_tokens(MapContext state, TokenEditor& tokens);                               // panel_tokens.cpp
void draw_pipeline(MapContext state, PipelineLayout& layout, HeatmapTextures& textures);    // panel_pipeline.cpp
void draw_status(Context& state);                                 // panel_status.cpp

// The token bar and the pipeline as the window holds them (it places them in the main area).
class TokensView final : public View {
public:
    TokenEditor state;
    void draw(MapContext shared) { draw_tokens(shared, state); }
};
class PipelineView final : public View {
public:
    PipelineLayout state;
    void draw(MapContext shared, HeatmapTextures& textures) { draw_pipeline(shared, state, textures); }
};

// Records the last item drawn (its rectangle and `text`) under `id` for the layout sidecar
// and the UI tests. Cheap: a few strings per frame.
void record_item(PanelContext state, const char* id, std::string text);
// Greyed text that wraps at the panel's edge: a hint in the 290 px side bar is never cut off.
void hint_text(const std::string& text);
// A one-line text box on `text` (at most 2047 bytes; `flags` are ImGuiInputTextFlags): true
// when ImGui's InputText is (changed, or Enter with EnterReturnsTrue).
bool input_line(const char* id, std::string& text, int flags = 0);

}  // namespace attn::ui
