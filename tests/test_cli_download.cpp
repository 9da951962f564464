// attnlab --download, driven in-process against a hub served from memory on 127.0.0.1
// (hub_server.hpp): a tiny GPT-2 checkpoint downloaded into a temporary cache, then opened
// by its name with --model; and the flag's errors.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <unistd.h>

#include "bad_model_catalogue.hpp"
#include "cli_runner.hpp"
#include "hub_server.hpp"
#include "scoped_environment.hpp"

using namespace attn;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using testing::Environment;

constexpr const char* kCommit = "00112233445566778899aabbccddeeff00112233";

// org/tiny-gpt2 on the hub: the files of a tiny GPT-2 checkpoint (the weights as an LFS file).
testing::HubRepo tiny_gpt2(const fs::path& scratch) {
    testing::write_tiny_checkpoint(scratch.string());
    testing::HubRepo repo{"org/tiny-gpt2", kCommit, {"main"}, {}};
    for (const auto& entry : fs::directory_iterator(scratch)) {
        testing::HubFile file;
        file.body = testing::read_file(entry.path().string());
        file.lfs = entry.path().extension() == ".safetensors";
        repo.files[entry.path().filename().string()] = file;
    }
    testing::HubFile old_weights;
    old_weights.body = "not fetched";
    old_weights.lfs = true;
    repo.files["pytorch_model.bin"] = old_weights;
    return repo;
}

}  // namespace

TEST_CASE("option --download fetches a model into the cache, and --model opens it by name", "[cli][download]") {
    const fs::path scratch = fs::temp_directory_path() / ("attnlab-cli-download-" + std::to_string(::getpid()));
    fs::remove_all(scratch);
    testing::HubServer hub;
    hub.add(tiny_gpt2(scratch / "checkpoint"));
    Environment endpoint("HF_ENDPOINT", hub.endpoint()), token("HF_TOKEN", std::nullopt), cache("HF_HUB_CACHE", (scratch / "hub").string());

    const testing::CliResult downloaded = testing::run_cli({"--download", "org/tiny-gpt2"});
    INFO(downloaded.err);
    REQUIRE(downloaded.code == 0);
    CHECK_THAT(downloaded.err, Contains("downloading org/tiny-gpt2 from " + hub.endpoint()) && Contains("model.safetensors: ") &&
                                   Contains("(100%)"));
    CHECK_THAT(downloaded.out, Contains(std::string("of commit ") + kCommit) && Contains("open it with: attnlab --model org/tiny-gpt2"));
    CHECK(fs::is_symlink(scratch / "hub" / "models--org--tiny-gpt2" / "snapshots" / kCommit / "model.safetensors"));
    CHECK_FALSE(fs::exists(scratch / "hub" / "models--org--tiny-gpt2" / "snapshots" / kCommit / "pytorch_model.bin"));

    const testing::CliResult opened = testing::run_cli({"--model", "org/tiny-gpt2", "--text", " the", "--print"});
    INFO(opened.err);
    CHECK(opened.code == 0);
    CHECK_THAT(opened.out, Contains("next token, top 5"));
    fs::remove_all(scratch);
}

TEST_CASE("option --download names what failed and exits 7, a bad name or another flag exits 2", "[cli][download]") {
    testing::HubServer hub;
    const fs::path scratch = fs::temp_directory_path() / ("attnlab-cli-download-errors-" + std::to_string(::getpid()));
    Environment endpoint("HF_ENDPOINT", hub.endpoint()), token("HF_TOKEN", std::nullopt), cache("HF_HUB_CACHE", scratch.string());

    const testing::CliResult missing = testing::run_cli({"--download", "org/nothing"});
    CHECK(missing.code == 7);
    CHECK_THAT(missing.err, Contains("--download org/nothing: " + hub.endpoint() + "/api/models/org/nothing/revision/main: no repository org/nothing"));

    const testing::CliResult bad_name = testing::run_cli({"--download", "org/../x"});
    CHECK(bad_name.code == 2);
    CHECK_THAT(bad_name.err, Contains("--download org/../x: not a repository id"));

    const testing::CliResult combined = testing::run_cli({"--download", "org/tiny", "--print"});
    CHECK(combined.code == 2);
    CHECK_THAT(combined.err, Contains("--download runs alone: give --print in another run"));
    fs::remove_all(scratch);
}
