#pragma once
// A small untrained model for the reverse task (d_model 8, 2 heads, 2 layers; its vocabulary
// "a" … "h" and "|"), as a model file holds it: what the command line's --model FILE tests run.
#include <cstdint>

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

}  // namespace attn::testing
