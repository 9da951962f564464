// The Hugging Face hub cache: where it is, a model's name read, its snapshot found, every
// cached model listed; against a cache laid out here as huggingface_hub lays it out.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <sys/stat.h>

#include "bad_model_catalogue.hpp"
#include "model/language_model.hpp"
#include "model/gpt2/checkpoint.hpp"
#include "checkpoint/hf_cache.hpp"
#include "scoped_environment.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

using testing::Environment;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

// <cache>/models--org--tiny: refs/main → kCommit, snapshots/kCommit/ a tiny GPT-2 checkpoint.
std::string make_cache(const std::string& name) {
    const fs::path cache = fs::temp_directory_path() / name;
    fs::remove_all(cache);
    const fs::path repo = cache / "models--org--tiny";
    fs::create_directories(repo / "refs");
    std::ofstream(repo / "refs" / "main") << kCommit << "\n";
    testing::write_tiny_checkpoint((repo / "snapshots" / kCommit).string());
    return cache.string();
}

}  // namespace

TEST_CASE("the hub cache folder is found as huggingface_hub finds it", "[hf-cache]") {
    Environment hub("HF_HUB_CACHE", std::nullopt), legacy("HUGGINGFACE_HUB_CACHE", std::nullopt), home("HF_HOME", std::nullopt),
        xdg("XDG_CACHE_HOME", std::nullopt), user("HOME", "/home/ada");
    CHECK(hf::hub_cache_folder() == "/home/ada/.cache/huggingface/hub");
    {
        Environment x("XDG_CACHE_HOME", "/var/cache/ada");
        CHECK(hf::hub_cache_folder() == "/var/cache/ada/huggingface/hub");
        Environment h("HF_HOME", "~/hf");
        CHECK(hf::hub_cache_folder() == "/home/ada/hf/hub");
        Environment l("HUGGINGFACE_HUB_CACHE", "/old/hub");
        CHECK(hf::hub_cache_folder() == "/old/hub");
        Environment c("HF_HUB_CACHE", "/models");
        CHECK(hf::hub_cache_folder() == "/models");
    }
}

TEST_CASE("a model's name is read as the hub writes repository ids", "[hf-cache]") {
    CHECK(hf::parse_repo_id("openai-community/gpt2")->id == "openai-community/gpt2");
    CHECK(hf::parse_repo_id("gpt2")->id == "gpt2");
    CHECK(hf::parse_repo_id("HuggingFaceTB/SmolLM2-135M")->revision == "main");
    CHECK(hf::parse_repo_id("org/name@v1.0")->revision == "v1.0");
    for (const char* bad : {"", "/gpt2", "org/", "a/b/c", "org--x/name", "org/na..me", "-org/name", "org/name@", "org/name@../x", "my model",
                            "./gpt2"}) {
        INFO(bad);
        CHECK_FALSE(hf::parse_repo_id(bad));
    }
}

TEST_CASE("a cached model is found by its name, and each way it can be missing is said", "[hf-cache]") {
    const std::string cache = make_cache("attnlab-hf-cache");
    const hf::CacheLookup found = hf::find_in_cache(*hf::parse_repo_id("org/tiny"), cache);
    CHECK(found.folder == (fs::path(cache) / "models--org--tiny" / "snapshots" / kCommit).string());
    CHECK(found.why_not.empty());
    CHECK(hf::find_in_cache(*hf::parse_repo_id(std::string("org/tiny@") + kCommit), cache).folder == found.folder);  // a commit by itself

    CHECK_THAT(hf::find_in_cache(*hf::parse_repo_id("org/other"), cache).why_not,
               Catch::Matchers::Contains("org/other is not in the Hugging Face cache") && Catch::Matchers::Contains("no folder models--org--other"));
    CHECK_THAT(hf::find_in_cache(*hf::parse_repo_id("org/tiny@v2"), cache).why_not, Catch::Matchers::Contains("no refs/v2"));
    std::ofstream(fs::path(cache) / "models--org--tiny" / "refs" / "broken") << "not a commit";
    CHECK_THAT(hf::find_in_cache(*hf::parse_repo_id("org/tiny@broken"), cache).why_not, Catch::Matchers::Contains("not a commit"));
    std::ofstream(fs::path(cache) / "models--org--tiny" / "refs" / "gone") << "ffffffffffffffffffffffffffffffffffffffff";
    CHECK_THAT(hf::find_in_cache(*hf::parse_repo_id("org/tiny@gone"), cache).why_not, Catch::Matchers::Contains("snapshot folder is missing"));

    // What --model names: an existing path as it is, else a cached model, else why neither.
    const hf::ModelLocation by_name = hf::locate_model("org/tiny", cache);
    CHECK(by_name.folder == found.folder);
    CHECK(by_name.from_cache == "org/tiny");
    CHECK(lm::load_model(by_name.folder).model.has_value());
    const hf::ModelLocation by_path = hf::locate_model(found.folder, cache);
    CHECK(by_path.folder == found.folder);
    CHECK(by_path.from_cache.empty());
    CHECK_THAT(hf::locate_model("org/absent", cache).why_not, Catch::Matchers::Contains("no such folder or file, and org/absent is not in"));
    CHECK(hf::locate_model("no such/path/at all", cache).why_not == "no such folder or file");

    // Listed with its family and the size of its files.
    const std::vector<hf::CachedModel> models = hf::cached_models(cache);
    REQUIRE(models.size() == 1);
    CHECK(models[0].id == "org/tiny");
    CHECK(models[0].model_type == "gpt2");
    std::uintmax_t bytes = 0;
    for (const auto& f : fs::directory_iterator(found.folder)) bytes += fs::file_size(f.path());
    CHECK(models[0].bytes == bytes);
    fs::remove_all(cache);
}

TEST_CASE("a reference that is there but cannot be read is said, never \"never downloaded\"", "[hf-cache][hostile]") {
    const std::string cache = make_cache("attnlab-hf-cache-refs");
    const fs::path refs = fs::path(cache) / "models--org--tiny" / "refs";
    auto why_not = [&](const std::string& revision) { return hf::find_in_cache(*hf::parse_repo_id("org/tiny@" + revision), cache).why_not; };
    // A FIFO: refused at once (never waited on), named.
    REQUIRE(::mkfifo((refs / "fifo").c_str(), 0644) == 0);
    CHECK_THAT(why_not("fifo"), Catch::Matchers::Contains("its reference cannot be read") && Catch::Matchers::Contains("FIFO"));
    // Over 4 KB: a commit is 40 characters.
    std::ofstream(refs / "long") << std::string(5000, 'a');
    CHECK_THAT(why_not("long"), Catch::Matchers::Contains("5000 bytes; a reference file is at most 4096 bytes"));
    // A symlink loop.
    fs::create_symlink("loop", refs / "loop");
    CHECK_THAT(why_not("loop"), Catch::Matchers::Contains("its reference cannot be read") &&
                                    Catch::Matchers::Contains("too many levels of symbolic links"));
    // A link to nothing is a revision never downloaded, as a missing file is.
    fs::create_symlink("nowhere", refs / "dangling");
    CHECK_THAT(why_not("dangling"), Catch::Matchers::Contains("never downloaded"));
    // A reference's text is shown with its control characters escaped.
    std::ofstream(refs / "escape") << "\x1b[31mred";
    CHECK_THAT(why_not("escape"), Catch::Matchers::Contains("holds \"\\x1B[31mred\", not a commit"));
    fs::remove_all(cache);
}
