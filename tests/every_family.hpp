#pragma once
// Every family the app opens, as lm::Models: GPT-2's tiny checkpoint (with its tokenizer) and
// each other Hugging Face family's fixture (hf_family_fixtures.hpp), written under the
// temporary folder with `tag` and the process in their names (ctest runs each test case as a
// process of its own, side by side: two must not write one folder) and opened without a
// tokenizer (ids as they are).
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "bad_model_catalogue.hpp"
#include "written_gpt2.hpp"
#include "hf_family_fixtures.hpp"
#include "model/language_model.hpp"

namespace attn::testing {

// A GPT-2 checkpoint made in memory, as the app holds it, opened by the family table,
// tokenizer and all (written_gpt2_folder).
inline lm::Model gpt2_model(const gpt2::Checkpoint& checkpoint, const std::string& tag) {
    const std::string folder = written_gpt2_folder(checkpoint, tag);
    lm::ModelLoad load = lm::load_model(folder);
    if (!load.model) throw std::runtime_error(folder + ": " + (load.errors.empty() ? std::string("not opened") : load.errors.front()));
    return std::move(*load.model);
}

inline std::vector<std::pair<std::string, lm::Model>> every_family(const std::string& tag) {
    std::vector<std::pair<std::string, lm::Model>> models;
    models.emplace_back("gpt2", gpt2_model(tiny_checkpoint(), tag));
    for (const families::FamilyCheckpoint& c : families::all_family_checkpoints()) {
        if (c.config.value("model_type", "") == "gpt2") continue;
        const std::string folder =
            (std::filesystem::temp_directory_path() / ("attnlab-test-" + tag + "-" + std::to_string(getpid()) + "-" + c.label)).string();
        families::write_family_checkpoint(folder, c);
        written_folders().paths.push_back(folder);
        hf::OpenedModelLoad load = hf::open_model(folder, false);
        for (const std::string& e : load.errors) INFO(e);
        REQUIRE(load.model);
        models.emplace_back(c.label, lm::Model(std::move(*load.model)));
    }
    return models;
}

}  // namespace attn::testing
