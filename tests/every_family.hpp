#pragma once
// Every family the app opens, as lm::Models: GPT-2's tiny checkpoint and each Hugging Face
// family's fixture (hf_family_fixtures.hpp), written under the temporary folder with `tag` in
// their names and opened without a tokenizer (ids as they are).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "bad_model_catalogue.hpp"
#include "hf_family_fixtures.hpp"
#include "language_model.hpp"

namespace attn::testing {

inline std::vector<std::pair<std::string, lm::Model>> every_family(const std::string& tag) {
    std::vector<std::pair<std::string, lm::Model>> models;
    models.emplace_back("gpt2", lm::Model(tiny_checkpoint()));
    for (const families::FamilyCheckpoint& c : families::all_family_checkpoints()) {
        if (c.config.value("model_type", "") == "gpt2") continue;
        const std::string folder = (std::filesystem::temp_directory_path() / ("attnlab-test-" + tag + "-" + c.label)).string();
        families::write_family_checkpoint(folder, c);
        hf::OpenedModelLoad load = hf::open_model(folder, false);
        for (const std::string& e : load.errors) INFO(e);
        REQUIRE(load.model);
        models.emplace_back(c.label, lm::Model(std::move(*load.model)));
    }
    return models;
}

}  // namespace attn::testing
