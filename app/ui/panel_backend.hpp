#pragma once
// The backend section of the side bar (panel_backend.cpp): CPU / GPU / Auto, the state of
// the GPU, the progress of a long run, the sequence-length generator and the zoom region
// of the pooled weights.
#include "ui/context.hpp"

namespace attn::ui {

void draw_backend(Context& state);

}  // namespace attn::ui
