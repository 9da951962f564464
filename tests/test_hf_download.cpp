// Downloads from the Hugging Face hub, against a hub served from memory on 127.0.0.1
// (hub_server.hpp) into a temporary cache: the layout Python tools read, resuming, the
// checksum, the errors a user sees, cancelling. Nothing here reaches the internet or waits
// on a timeout.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "checkpoint/hf_cache.hpp"
#include "checkpoint/hf_download.hpp"
#include "hub_server.hpp"

using namespace attn;
using testing::HubFile;
using testing::HubRepo;
using testing::HubServer;
namespace fs = std::filesystem;

namespace {

constexpr const char* kCommit = "a1b2c3d4e5f60718293a4b5c6d7e8f9001122334";

// Bytes that differ from offset to offset, so a part appended at the wrong place shows.
std::string weights(std::size_t size) {
    std::string bytes(size, '\0');
    std::uint32_t state = 12345;
    for (char& b : bytes) {
        state = state * 1664525u + 1013904223u;
        b = static_cast<char>(state >> 24);
    }
    return bytes;
}

HubFile git_file(std::string body) {
    HubFile file;
    file.body = std::move(body);
    return file;
}

HubFile lfs_file(std::string body) {
    HubFile file = git_file(std::move(body));
    file.lfs = true;
    return file;
}

constexpr std::size_t kWeightBytes = 200000;

// org/tiny: what a GPT-2 repository holds, the app's files and others it never reads.
HubRepo tiny_repo() {
    HubRepo repo{"org/tiny", kCommit, {"main"}, {}};
    repo.files["config.json"] = git_file("{\"model_type\": \"gpt2\", \"n_layer\": 2}");
    repo.files["vocab.json"] = git_file("{\"a\": 0, \"b\": 1}");
    repo.files["merges.txt"] = git_file("#version: 0.2\na b\n");
    repo.files["model.safetensors"] = lfs_file(weights(kWeightBytes));
    repo.files["pytorch_model.bin"] = lfs_file(weights(1000));
    repo.files["onnx/model.onnx"] = lfs_file(weights(500));
    repo.files["README.md"] = git_file("# tiny\n");
    return repo;
}

// A fresh cache folder for one test, removed when the process ends.
std::string temporary_cache(const std::string& name) {
    struct Written {
        std::vector<fs::path> paths;
        ~Written() {
            std::error_code ec;
            for (const fs::path& path : paths) fs::remove_all(path, ec);
        }
    };
    static Written written;
    const fs::path cache = fs::temp_directory_path() / ("attnlab-download-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(cache);
    written.paths.push_back(cache);
    return cache.string();
}

hf::DownloadOptions options_for(const HubServer& hub, const std::string& cache) {
    hf::DownloadOptions options;
    options.endpoint = hub.endpoint();
    options.token.clear();
    options.cache = cache;
    return options;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

hf::RepoId repo_id(const std::string& text) { return *hf::parse_repo_id(text); }

fs::path repo_folder(const std::string& cache) { return fs::path(cache) / "models--org--tiny"; }

bool snapshots_empty(const std::string& cache) {
    const fs::path snapshots = repo_folder(cache) / "snapshots";
    return !fs::exists(snapshots) || fs::is_empty(snapshots);
}

}  // namespace

TEST_CASE("the endpoint and the token come from HF_ENDPOINT and HF_TOKEN", "[download]") {
    const char* old_endpoint = std::getenv("HF_ENDPOINT");
    const std::string saved = old_endpoint ? old_endpoint : "";
    ::unsetenv("HF_ENDPOINT");
    CHECK(hf::hub_endpoint() == "https://huggingface.co");
    ::setenv("HF_ENDPOINT", "http://mirror.example:8080//", 1);
    CHECK(hf::hub_endpoint() == "http://mirror.example:8080");
    CHECK(hf::DownloadOptions().endpoint == "http://mirror.example:8080");
    if (old_endpoint) ::setenv("HF_ENDPOINT", saved.c_str(), 1);
    else ::unsetenv("HF_ENDPOINT");
    ::setenv("HF_TOKEN", "hf_abc", 1);
    CHECK(hf::hub_token() == "hf_abc");
    ::unsetenv("HF_TOKEN");
    CHECK(hf::hub_token().empty());
}

TEST_CASE("the files the app reads are chosen, never other weights", "[download]") {
    for (const char* name : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                             "vocab.json", "merges.txt", "vocab.txt", "model.safetensors", "model-00001-of-00002.safetensors",
                             "model.safetensors.index.json"})
        CHECK(hf::app_reads_file(name));
    for (const char* name : {"pytorch_model.bin", "model.onnx", "model.gguf", "tf_model.h5", "README.md", "onnx/model.safetensors",
                             "flax_model.msgpack", ".gitattributes"})
        CHECK_FALSE(hf::app_reads_file(name));
}

TEST_CASE("SHA-256 is computed as the etags of LFS files are", "[download]") {
    CHECK(hf::sha256_hex("abc", 3) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(hf::sha256_hex("", 0) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("a full download lands where find_in_cache finds it, laid out as huggingface_hub lays it out", "[download]") {
    HubServer hub;
    hub.add(tiny_repo());
    const std::string cache = temporary_cache("full");
    hf::DownloadOptions options = options_for(hub, cache);
    std::vector<hf::DownloadProgress> reports;
    options.progress = [&](const hf::DownloadProgress& p) { reports.push_back(p); };

    const hf::DownloadResult result = hf::download_model(repo_id("org/tiny"), options);
    INFO(result.error);
    REQUIRE(result.ok);
    CHECK(result.commit == kCommit);
    CHECK(result.files == std::vector<std::string>{"config.json", "merges.txt", "model.safetensors", "vocab.json"});
    CHECK(std::find(result.skipped.begin(), result.skipped.end(), "pytorch_model.bin") != result.skipped.end());
    CHECK(result.bytes_fetched > kWeightBytes);

    const fs::path repo = repo_folder(cache);
    const fs::path snapshot = repo / "snapshots" / kCommit;
    CHECK(result.folder == snapshot.string());
    CHECK(read_file(repo / "refs" / "main") == kCommit);
    const std::string weight_sha = hf::sha256_hex(weights(kWeightBytes).data(), kWeightBytes);
    CHECK(fs::read_symlink(snapshot / "model.safetensors") == fs::path("../../blobs/" + weight_sha));
    CHECK(read_file(snapshot / "model.safetensors") == weights(kWeightBytes));
    CHECK(fs::read_symlink(snapshot / "config.json") == fs::path("../../blobs/" + HubServer::git_id(tiny_repo().files["config.json"].body)));
    CHECK(read_file(snapshot / "config.json") == tiny_repo().files["config.json"].body);
    CHECK_FALSE(fs::exists(snapshot / "pytorch_model.bin"));
    for (const auto& entry : fs::directory_iterator(repo / "blobs")) CHECK(entry.path().extension() != ".incomplete");
    for (const testing::HubRequest& request : hub.requests()) {
        CHECK(request.path.find("pytorch_model") == std::string::npos);
        CHECK(request.header("authorization").empty());  // no token, no header
    }

    // Found by name, as --model and File → Open model find it.
    const hf::CacheLookup lookup = hf::find_in_cache(repo_id("org/tiny"), cache);
    CHECK(lookup.folder == snapshot.string());
    const hf::ModelLocation where = hf::locate_model("org/tiny", cache);
    CHECK(where.folder == snapshot.string());
    CHECK(where.from_cache == "org/tiny");
    REQUIRE(hf::cached_models(cache).size() == 1);
    CHECK(hf::cached_models(cache)[0].model_type == "gpt2");

    // The progress reached every file's size and the total.
    REQUIRE_FALSE(reports.empty());
    const std::uint64_t total = kWeightBytes + tiny_repo().files["config.json"].body.size() + tiny_repo().files["vocab.json"].body.size() +
                                tiny_repo().files["merges.txt"].body.size();
    CHECK(reports.back().done == total);
    CHECK(reports.back().total == total);
    bool weights_finished = false;
    for (const hf::DownloadProgress& p : reports) {
        CHECK(p.done <= p.total);
        if (p.file == "model.safetensors" && p.file_done == kWeightBytes && p.file_total == kWeightBytes) weights_finished = true;
    }
    CHECK(weights_finished);

    // Again: nothing is fetched a second time.
    hub.clear_requests();
    const hf::DownloadResult again = hf::download_model(repo_id("org/tiny"), options);
    CHECK(again.ok);
    CHECK(again.bytes_fetched == 0);
    for (const testing::HubRequest& request : hub.requests()) CHECK(request.path.find("/api/") == 0);
}

TEST_CASE("a file in a subfolder links up to the repository's blobs", "[download]") {
    HubServer hub;
    HubRepo repo = tiny_repo();
    repo.files["nested/deeper/model.safetensors"] = lfs_file(weights(3000));
    hub.add(repo);
    const std::string cache = temporary_cache("subfolder");
    hf::DownloadOptions options = options_for(hub, cache);
    options.wanted = [](const std::string& name) { return name.rfind("nested/", 0) == 0; };
    const hf::DownloadResult result = hf::download_model(repo_id("org/tiny"), options);
    INFO(result.error);
    REQUIRE(result.ok);
    CHECK(result.files == std::vector<std::string>{"nested/deeper/model.safetensors"});
    const fs::path link = fs::path(result.folder) / "nested" / "deeper" / "model.safetensors";
    CHECK(fs::read_symlink(link) == fs::path("../../../../blobs/" + hf::sha256_hex(weights(3000).data(), 3000)));
    CHECK(read_file(link) == weights(3000));
}

TEST_CASE("a revision other than main is written to refs/ under its name", "[download]") {
    HubServer hub;
    HubRepo repo = tiny_repo();
    repo.revisions.push_back("v1.0");
    hub.add(repo);
    const std::string cache = temporary_cache("revision");
    const hf::DownloadResult result = hf::download_model(repo_id("org/tiny@v1.0"), options_for(hub, cache));
    INFO(result.error);
    REQUIRE(result.ok);
    CHECK(read_file(repo_folder(cache) / "refs" / "v1.0") == kCommit);
    CHECK_FALSE(fs::exists(repo_folder(cache) / "refs" / "main"));
    CHECK(hf::find_in_cache(repo_id("org/tiny@v1.0"), cache).folder == result.folder);
}

TEST_CASE("a dropped connection leaves the part, and the next attempt resumes it with a Range", "[download]") {
    HubServer hub;
    hub.add(tiny_repo());
    hub.change("org/tiny", "model.safetensors", [](HubFile& f) { f.drop_after = 50000; });
    const std::string cache = temporary_cache("resume");
    const hf::DownloadOptions options = options_for(hub, cache);

    const hf::DownloadResult first = hf::download_model(repo_id("org/tiny"), options);
    CHECK_FALSE(first.ok);
    CHECK_FALSE(first.cancelled);
    CHECK_THAT(first.error, Catch::Contains("the connection dropped after 50000 of 200000 bytes") && Catch::Contains("run again to resume") &&
                                Catch::Contains("resolve/" + std::string(kCommit) + "/model.safetensors"));
    const std::string weight_sha = hf::sha256_hex(weights(kWeightBytes).data(), kWeightBytes);
    const fs::path partial = repo_folder(cache) / "blobs" / (weight_sha + ".incomplete");
    CHECK(fs::file_size(partial) == 50000);
    CHECK(snapshots_empty(cache));  // never a half model found by name
    CHECK_FALSE(fs::exists(repo_folder(cache) / "refs" / "main"));
    CHECK(hf::find_in_cache(repo_id("org/tiny"), cache).folder.empty());

    hub.clear_requests();
    const hf::DownloadResult second = hf::download_model(repo_id("org/tiny"), options);
    INFO(second.error);
    REQUIRE(second.ok);
    bool resumed = false;
    for (const testing::HubRequest& request : hub.requests())
        if (request.method == "GET" && request.path == "/lfs/" + weight_sha) resumed = request.header("range") == "bytes=50000-";
    CHECK(resumed);
    CHECK(second.bytes_fetched < kWeightBytes);
    CHECK(read_file(fs::path(second.folder) / "model.safetensors") == weights(kWeightBytes));
    CHECK_FALSE(fs::exists(partial));
}

TEST_CASE("a server that ignores the Range starts the file over, and the file is still whole", "[download]") {
    HubServer hub;
    hub.add(tiny_repo());
    hub.change("org/tiny", "model.safetensors", [](HubFile& f) { f.drop_after = 70000; });
    const std::string cache = temporary_cache("ignored-range");
    const hf::DownloadOptions options = options_for(hub, cache);
    REQUIRE_FALSE(hf::download_model(repo_id("org/tiny"), options).ok);

    hub.ignore_range(true);
    hub.clear_requests();
    const hf::DownloadResult second = hf::download_model(repo_id("org/tiny"), options);
    INFO(second.error);
    REQUIRE(second.ok);
    bool asked_range = false;
    for (const testing::HubRequest& request : hub.requests()) asked_range = asked_range || request.header("range") == "bytes=70000-";
    CHECK(asked_range);
    CHECK(second.bytes_fetched >= kWeightBytes);  // the whole file came again
    CHECK(read_file(fs::path(second.folder) / "model.safetensors") == weights(kWeightBytes));
}

TEST_CASE("a file whose SHA-256 is not its etag is refused, and nothing reaches snapshots/", "[download]") {
    HubServer hub;
    HubRepo repo = tiny_repo();
    const std::string claimed = hf::sha256_hex("other bytes", 11);
    repo.files["model.safetensors"].etag = claimed;
    hub.add(repo);
    const std::string cache = temporary_cache("checksum");
    const hf::DownloadResult result = hf::download_model(repo_id("org/tiny"), options_for(hub, cache));
    CHECK_FALSE(result.ok);
    const std::string actual = hf::sha256_hex(weights(kWeightBytes).data(), kWeightBytes);
    CHECK_THAT(result.error, Catch::Contains("model.safetensors") && Catch::Contains("SHA-256 is " + actual) && Catch::Contains(claimed) &&
                                 Catch::Contains("removed"));
    CHECK_FALSE(fs::exists(repo_folder(cache) / "blobs" / (claimed + ".incomplete")));
    CHECK_FALSE(fs::exists(repo_folder(cache) / "blobs" / claimed));
    CHECK(snapshots_empty(cache));
    CHECK(hf::find_in_cache(repo_id("org/tiny"), cache).folder.empty());
}

TEST_CASE("a repository, revision or file that does not exist is named", "[download]") {
    HubServer hub;
    HubRepo repo = tiny_repo();
    repo.files["vocab.json"].missing = true;
    hub.add(repo);
    const std::string cache = temporary_cache("missing");
    const hf::DownloadOptions options = options_for(hub, cache);

    const hf::DownloadResult no_repo = hf::download_model(repo_id("org/nothing"), options);
    CHECK_FALSE(no_repo.ok);
    CHECK_THAT(no_repo.error, Catch::Contains(hub.endpoint() + "/api/models/org/nothing/revision/main") && Catch::Contains("no repository org/nothing"));

    const hf::DownloadResult no_revision = hf::download_model(repo_id("org/tiny@v9"), options);
    CHECK_FALSE(no_revision.ok);
    CHECK_THAT(no_revision.error, Catch::Contains("org/tiny has no revision 'v9'"));

    const hf::DownloadResult no_file = hf::download_model(repo_id("org/tiny"), options);
    CHECK_FALSE(no_file.ok);
    CHECK_THAT(no_file.error, Catch::Contains("/org/tiny/resolve/" + std::string(kCommit) + "/vocab.json") && Catch::Contains("has no file vocab.json"));
    CHECK(snapshots_empty(cache));
}

TEST_CASE("a gated model without a token says to set HF_TOKEN, and with it downloads", "[download]") {
    HubServer hub;
    hub.add(tiny_repo());
    hub.require_token("hf_right");
    const std::string cache = temporary_cache("token");
    hf::DownloadOptions options = options_for(hub, cache);

    const hf::DownloadResult anonymous = hf::download_model(repo_id("org/tiny"), options);
    CHECK_FALSE(anonymous.ok);
    CHECK_THAT(anonymous.error, Catch::Contains("gated or private") && Catch::Contains("no token was sent: set HF_TOKEN") &&
                                    Catch::Contains(hub.endpoint() + "/api/models/org/tiny"));

    options.token = "hf_wrong";
    const hf::DownloadResult refused = hf::download_model(repo_id("org/tiny"), options);
    CHECK_FALSE(refused.ok);
    CHECK_THAT(refused.error, Catch::Contains("gated or private") && Catch::Contains("a token was sent (HF_TOKEN) and the hub refused it"));

    options.token = "hf_right";
    hub.clear_requests();
    const hf::DownloadResult allowed = hf::download_model(repo_id("org/tiny"), options);
    INFO(allowed.error);
    CHECK(allowed.ok);
    for (const testing::HubRequest& request : hub.requests())
        if (request.path.rfind("/lfs/", 0) != 0) CHECK(request.header("authorization") == "Bearer hf_right");
}

TEST_CASE("cancelling from the progress callback keeps the part, and the next attempt resumes it", "[download]") {
    HubServer hub;
    hub.add(tiny_repo());
    hub.change("org/tiny", "model.safetensors", [](HubFile& f) { f.stall_after = 1000; });  // the rest waits for the cancel
    const std::string cache = temporary_cache("cancel");
    hf::DownloadOptions options = options_for(hub, cache);
    std::atomic<bool> cancel{false};
    options.cancel = &cancel;
    options.progress = [&](const hf::DownloadProgress& p) {
        if (p.file == "model.safetensors" && p.file_done >= 1000) cancel = true;
    };
    const hf::DownloadResult result = hf::download_model(repo_id("org/tiny"), options);
    CHECK_FALSE(result.ok);
    CHECK(result.cancelled);
    CHECK_THAT(result.error, Catch::StartsWith("cancelled") && Catch::Contains("model.safetensors") && Catch::Contains("run again to resume"));
    const std::string weight_sha = hf::sha256_hex(weights(kWeightBytes).data(), kWeightBytes);
    CHECK(fs::file_size(repo_folder(cache) / "blobs" / (weight_sha + ".incomplete")) == 1000);
    CHECK(snapshots_empty(cache));

    // A flag set before the start stops before anything is asked.
    hub.clear_requests();
    const hf::DownloadResult early = hf::download_model(repo_id("org/tiny"), options);
    CHECK(early.cancelled);
    CHECK(hub.requests().empty());

    cancel = false;
    options.progress = nullptr;
    hub.clear_requests();
    const hf::DownloadResult resumed = hf::download_model(repo_id("org/tiny"), options);
    INFO(resumed.error);
    REQUIRE(resumed.ok);
    bool ranged = false;
    for (const testing::HubRequest& request : hub.requests()) ranged = ranged || request.header("range") == "bytes=1000-";
    CHECK(ranged);
    CHECK(read_file(fs::path(resumed.folder) / "model.safetensors") == weights(kWeightBytes));
}

TEST_CASE("a repository with only .bin weights is refused before anything is fetched", "[download]") {
    HubServer hub;
    HubRepo repo{"org/old", kCommit, {"main"}, {}};
    repo.files["config.json"] = git_file("{}");
    repo.files["pytorch_model.bin"] = lfs_file(weights(1000));
    hub.add(repo);
    const std::string cache = temporary_cache("bin-only");
    const hf::DownloadResult result = hf::download_model(repo_id("org/old"), options_for(hub, cache));
    CHECK_FALSE(result.ok);
    CHECK_THAT(result.error, Catch::Contains("org/old has no .safetensors weights (only pytorch_model.bin)") && Catch::Contains("nothing was downloaded"));
    for (const testing::HubRequest& request : hub.requests()) CHECK(request.path.rfind("/api/", 0) == 0);
    CHECK_FALSE(fs::exists(fs::path(cache) / "models--org--old"));
}

TEST_CASE("a file name that would leave the snapshot is never fetched", "[download]") {
    HubServer hub;
    HubRepo repo = tiny_repo();
    repo.files["../../../escaped.safetensors"] = lfs_file(weights(100));
    repo.files["/absolute.safetensors"] = lfs_file(weights(100));
    hub.add(repo);
    const std::string cache = temporary_cache("hostile");
    hf::DownloadOptions options = options_for(hub, cache);
    options.wanted = [](const std::string&) { return true; };
    const hf::DownloadResult result = hf::download_model(repo_id("org/tiny"), options);
    INFO(result.error);
    REQUIRE(result.ok);
    CHECK(std::find(result.skipped.begin(), result.skipped.end(), "../../../escaped.safetensors") != result.skipped.end());
    CHECK(std::find(result.files.begin(), result.files.end(), "/absolute.safetensors") == result.files.end());
    CHECK_FALSE(fs::exists(fs::path(cache).parent_path() / "escaped.safetensors"));
    for (const testing::HubRequest& request : hub.requests()) CHECK(request.path.find("escaped") == std::string::npos);
}

TEST_CASE("no server, and an unwritable cache, are said plainly", "[download]") {
    // A port nobody listens on: the connection is refused at once.
    std::string closed_endpoint;
    {
        HubServer gone;
        closed_endpoint = gone.endpoint();
    }
    hf::DownloadOptions options;
    options.endpoint = closed_endpoint;
    options.token.clear();
    options.cache = temporary_cache("no-server");
    const hf::DownloadResult offline = hf::download_model(repo_id("org/tiny"), options);
    CHECK_FALSE(offline.ok);
    CHECK_THAT(offline.error, Catch::Contains(closed_endpoint + "/api/models/org/tiny") && Catch::Contains("cannot connect") &&
                                  Catch::Contains("no network"));

    HubServer hub;
    hub.add(tiny_repo());
    const std::string not_a_folder = temporary_cache("file-as-cache");
    std::ofstream(not_a_folder) << "a file where the cache should be";
    const hf::DownloadResult unwritable = hf::download_model(repo_id("org/tiny"), options_for(hub, not_a_folder));
    CHECK_FALSE(unwritable.ok);
    CHECK_THAT(unwritable.error, Catch::Contains("cannot write the Hugging Face cache at " + not_a_folder) && Catch::Contains("HF_HUB_CACHE"));
    fs::remove(not_a_folder);
}

// [SECTION] A hostile hub: never more bytes than announced, its text never raw

TEST_CASE("weights the hub gives no size for are refused before a byte is written", "[download][hostile]") {
    HubServer hub;
    HubRepo repo = tiny_repo();
    repo.files["model.safetensors"].no_size = true;
    hub.add(repo);
    const std::string cache = temporary_cache("no-size");
    const hf::DownloadResult result = hf::download_model(repo_id("org/tiny"), options_for(hub, cache));
    CHECK_FALSE(result.ok);
    CHECK_THAT(result.error, Catch::Contains("the hub gave no size for model.safetensors") && Catch::Contains("nothing was written"));
    CHECK(result.bytes_fetched == 0);
    CHECK(snapshots_empty(cache));
}

TEST_CASE("a file of unknown size takes the GET's Content-Length, and without one stops at the bound", "[download][hostile]") {
    HubServer hub;
    HubRepo repo = tiny_repo();
    repo.files["merges.txt"].no_size = true;   // HEAD says nothing; GET's Content-Length says 18 bytes
    hub.add(repo);
    const std::string cache = temporary_cache("unsized");
    const hf::DownloadResult sized_by_get = hf::download_model(repo_id("org/tiny"), options_for(hub, cache));
    INFO(sized_by_get.error);
    REQUIRE(sized_by_get.ok);
    CHECK(read_file(fs::path(sized_by_get.folder) / "merges.txt") == "#version: 0.2\na b\n");

    // No size anywhere, and a body without end: before, 3 GiB were written "of 9.1 KiB".
    hub.change("org/tiny", "vocab.json", [](HubFile& f) {
        f.no_size = f.endless = true;
        f.body = std::string(64 << 10, 'v');
    });
    const std::string endless_cache = temporary_cache("endless");
    const hf::DownloadResult endless = hf::download_model(repo_id("org/tiny"), options_for(hub, endless_cache));
    CHECK_FALSE(endless.ok);
    CHECK_THAT(endless.error, Catch::Contains("the server sent more bytes than 134217728 bytes, the most read of a file the hub gives no size for"));
    CHECK(endless.bytes_fetched <= (128u << 20) + kWeightBytes + 1024);
    CHECK(snapshots_empty(endless_cache));
    fs::remove_all(cache);
    fs::remove_all(endless_cache);
}

TEST_CASE("the hub's error text reaches the user escaped, and a server error is not called a missing model", "[download][hostile]") {
    HubServer hub;
    hub.add(tiny_repo());
    hub.fail_every_request(500, "RepoNotFound", "\x1b[31mred\x1b[0m and \x07");
    hf::DownloadOptions options = options_for(hub, temporary_cache("server-error"));
    options.token = "a-token";   // with a token, a RepoNotFound once read as "private or gated"
    const hf::DownloadResult result = hf::download_model(repo_id("org/tiny"), options);
    CHECK_FALSE(result.ok);
    CHECK_THAT(result.error, Catch::Contains("the server failed (HTTP 500 Internal Server Error, \"\\x1B[31mred\\x1B[0m and \\x07\")") &&
                                 Catch::Contains("not a missing or private model"));
    CHECK(result.error.find('\x1b') == std::string::npos);
    CHECK_THAT(result.error, !Catch::Contains("private or gated and"));
}
