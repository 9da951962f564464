#pragma once
// The model view's state (panel_model.cpp): an opened GPT-2 checkpoint, the sentence, its
// forward pass, and the layer and head opened in the pipeline. No GL.
#include <cstdint>
#include <optional>
#include <string>

#include "gpt2/model.hpp"
#include "scenario.hpp"

namespace attn::ui {

struct ModelViewState {
    bool open = false;                        // the model view window is shown
    std::optional<gpt2::Checkpoint> checkpoint;
    std::string sentence;                     // the sentence box
    std::string computed_sentence;            // what `pass` tokenised
    gpt2::ForwardPass pass;                   // every layer's trace for the sentence
    double forward_ms = 0.0;                  // the last full or partial recompute
    // Opened in the pipeline: the session's scenario is layer `layer`'s (-1: none). Edits
    // to it recompute the layers after it; `applied` is the scenario that layer's trace in
    // `pass` was computed from, `seen_revision` the session revision last compared.
    int layer = -1, head = 0;
    std::string layer_name;                   // the opened scenario's name: leaving it detaches
    Scenario applied;
    std::uint64_t seen_revision = ~0ull;
    bool collapse = false;                    // a map was opened: fold the window to the bottom so the pipeline shows
    bool expand = false;                      // unfold it at its first place
};

}  // namespace attn::ui
