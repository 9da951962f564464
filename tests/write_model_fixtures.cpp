// Writes the models the binary tests open: DIR/gpt2 (a tiny GPT-2 checkpoint in the Hugging
// Face layout, the bad-model catalogue's), DIR/model.json (a model file as the app saves
// one, vocabulary a … h and |), DIR/gpt2-truncated (model.safetensors cut 64 bytes short).
#include <filesystem>
#include <iostream>

#include "bad_model_catalogue.hpp"
#include "train/model_file.hpp"
#include "train/tasks.hpp"

using namespace attn;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: write_model_fixtures DIR\n";
        return 2;
    }
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir);
    testing::write_tiny_checkpoint(dir + "/gpt2");
    testing::write_tiny_checkpoint(dir + "/gpt2-truncated");
    std::filesystem::resize_file(dir + "/gpt2-truncated/model.safetensors",
                                 std::filesystem::file_size(dir + "/gpt2-truncated/model.safetensors") - 64);
    // A 2-layer model for the reverse task, untrained: its vocabulary a … h and "|".
    train::TrainSettings settings;
    settings.model.d_model = 8;
    settings.model.heads = 2;
    settings.model.layers = 2;
    settings = train::fitted(settings);
    train::ModelFile file;
    file.settings = settings;
    file.model = train::init_model(settings.model, train::task_vocabulary(settings.task), 5);
    std::string error;
    if (!train::save_model_file(dir + "/model.json", file, &error)) {
        std::cerr << error << "\n";
        return 1;
    }
    return 0;
}
