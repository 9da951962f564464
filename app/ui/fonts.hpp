#pragma once
#include <imgui.h>

#include "ui/widgets.hpp"

namespace attn::ui {

// Loads DejaVu Sans and DejaVu Sans Mono (assets/fonts, else the system's DejaVu) at
// sizes scaled by the window content scale, with the glyphs the formulas need
// (√ ᵀ × → − ∞ · Σ ₖ …). A missing font falls back to ImGui's built-in one; the app goes on.
// Call before the renderer builds the font atlas. `base_size` is the UI text size in
// pixels at scale 1. `ranges` receives the glyph ranges and must outlive the font atlas.
UiFonts load_fonts(float scale, ImVector<ImWchar>& ranges, float base_size = 16.0f);
// A second, larger set for presenter mode (a projector), built from the same glyph ranges;
// call after load_fonts. When the DejaVu files are missing, returns `normal` unchanged.
UiFonts load_presenter_fonts(const UiFonts& normal, float scale, const ImVector<ImWchar>& ranges, float base_size = 25.0f);

}  // namespace attn::ui
