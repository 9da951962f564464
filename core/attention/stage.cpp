#include "attention/stage.hpp"

#include <utility>

namespace attn {

namespace {

const std::pair<Stage, const char*> kStageNames[] = {
    {Stage::Tokens, "tokens"},       {Stage::Embeddings, "embeddings"}, {Stage::Positional, "positional"},
    {Stage::Projections, "qkv"},     {Stage::Scores, "scores"},         {Stage::Scaled, "scaled"},
    {Stage::Masked, "masked"},       {Stage::Weights, "weights"},       {Stage::Output, "output"},
    {Stage::Concat, "concat"},       {Stage::Final, "final"},           {Stage::Block, "block"},
    {Stage::ScalingPlot, "scaling_plot"},
};

}  // namespace

const char* to_string(Stage stage) {
    for (auto& [s, name] : kStageNames)
        if (s == stage) return name;
    return "tokens";
}

std::optional<Stage> stage_from_string(const std::string& name) {
    for (auto& [s, n] : kStageNames)
        if (name == n) return s;
    return std::nullopt;
}

const std::vector<Stage>& all_stages() {
    static const std::vector<Stage> stages = [] {
        std::vector<Stage> v;
        for (auto& entry : kStageNames) v.push_back(entry.first);
        return v;
    }();
    return stages;
}

}  // namespace attn
