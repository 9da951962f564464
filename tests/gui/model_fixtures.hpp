#pragma once
// The GPT-2 checkpoint the model view's tests open: 3 layers × 2 heads, d 8, 64 positions (the
// articles' sentences fit), its Q and K scaled so that attention is far from uniform.
// `strong_heads`: W_O and the embeddings scaled up, so that one head moves the prediction visibly.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "bad_model_catalogue.hpp"
#include "model/gpt2/checkpoint.hpp"

namespace attn::testing {

// The checkpoint, in memory.
inline gpt2::Checkpoint sharp_gpt2(bool strong_heads = false) {
    gpt2::Config config = tiny_config();
    config.n_layer = 3;
    config.n_positions = 64;
    gpt2::Checkpoint c = gpt2::random_checkpoint(config, 4, tiny_checkpoint().tokenizer);
    for (auto& layer : c.layers) gpt2::set_c_attn(layer, gpt2::c_attn(layer) * 60.0f);  // attention far from uniform
    if (strong_heads) {
        for (auto& layer : c.layers) layer.c_proj_w.edit() *= 40.0f;
        c.wte.edit() *= 20.0f;
    }
    return c;
}

// Written into `folder` (replacing what is there), or `c` instead of it.
inline void write_sharp_gpt2(const std::string& folder, bool strong_heads = false, const gpt2::Checkpoint* c = nullptr) {
    std::filesystem::remove_all(folder);
    std::string error;
    REQUIRE(gpt2::write_checkpoint(folder, c ? *c : sharp_gpt2(strong_heads), gpt2::CheckpointWriteOptions{}, &error));
}

// The same under the system's temporary folder, named `name`; its path.
inline std::string write_model(const std::string& name, bool strong_heads = false) {
    const std::string folder = (std::filesystem::temp_directory_path() / name).string();
    write_sharp_gpt2(folder, strong_heads);
    return folder;
}

}  // namespace attn::testing
