#pragma once
// The stages of the pipeline, in pipeline order: a lesson's step reveals one, and every
// matrix of the registry belongs to one. Lesson files name them by their words ("qkv").
#include <optional>
#include <string>
#include <vector>

namespace attn {

enum class Stage {
    Tokens, Embeddings, Positional, Projections, Scores, Scaled, Masked, Weights, Output, Concat, Final, Block,
    ScalingPlot,  // softmax sharpness against d_k, with and without √d_k
};
const char* to_string(Stage);
std::optional<Stage> stage_from_string(const std::string&);
const std::vector<Stage>& all_stages();

}  // namespace attn
