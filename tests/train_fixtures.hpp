#pragma once
// A small untrained model for the reverse task (d_model 8, 2 heads, 2 layers; its vocabulary
// "a" … "h" and "|"), as a model file holds it: what the command line's --model FILE tests run.
#include <cstdint>
#include <cstring>

#include "train/model_file.hpp"
#include "train/tasks.hpp"

namespace attn::testing {

inline train::ModelFile untrained_model_file(std::uint64_t seed) {
    train::TrainSettings settings;
    settings.model.d_model = 8;
    settings.model.heads = 2;
    settings.model.layers = 2;
    settings = train::fitted(settings);
    train::ModelFile file;
    file.settings = settings;
    file.model = train::init_model(settings.model, train::task_vocabulary(settings.task), seed);
    return file;
}

// Every tensor of a and b holds the same bits (names and shapes too).
inline bool same_bits(const train::ModelParams& a, const train::ModelParams& b) {
    const std::vector<train::ParamView> x = train::parameter_views(a), y = train::parameter_views(b);
    if (x.size() != y.size()) return false;
    for (size_t t = 0; t < x.size(); ++t)
        if (x[t].name != y[t].name || x[t].size() != y[t].size() ||
            std::memcmp(x[t].data, y[t].data, sizeof(float) * static_cast<size_t>(x[t].size())) != 0)
            return false;
    return true;
}

}  // namespace attn::testing
