#pragma once
// Downloads a model from the Hugging Face hub into the local cache (hf_cache.hpp), as
// huggingface_hub's hf_hub_download does, so that Python tools and the app share the files:
//
//   GET  {endpoint}/api/models/{org}/{name}/revision/{rev}    the commit ("sha") and the files
//   HEAD {endpoint}/{org}/{name}/resolve/{commit}/{file}      ETag (X-Linked-Etag for LFS files:
//                                                             their SHA-256), size (X-Linked-Size)
//   GET  the same URL, following the LFS redirect             into blobs/<etag>.incomplete
//
//   <cache>/models--<org>--<name>/blobs/<etag>                 each file's bytes, once verified
//   <cache>/models--<org>--<name>/snapshots/<commit>/<file>    → ../../blobs/<etag> (relative link)
//   <cache>/models--<org>--<name>/refs/<revision>              the commit (not for a commit itself)
//
// Only what the app reads is fetched (config.json, the tokenizer's files, *.safetensors and
// their index), never *.bin, *.onnx, *.gguf. A file interrupted (dropped connection, cancel)
// stays in blobs/<etag>.incomplete and the next attempt resumes it with a Range request. An
// LFS file whose SHA-256 differs from its etag is deleted and refused. The snapshot's links
// and refs/<revision> are written only when every file is verified, so find_in_cache never
// finds a half-downloaded model.
//
// download_model runs synchronously: a window calls it on a worker thread, with a progress
// callback (called on that thread) and a cancel flag it may set from any thread.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/hf_cache.hpp"

namespace attn::hf {

// HF_ENDPOINT without a trailing "/", else https://huggingface.co.
std::string hub_endpoint();
// HF_TOKEN, else "" (no Authorization header is sent).
std::string hub_token();

// Whether the app reads a repository file of this name: config.json, generation_config.json,
// tokenizer.json, tokenizer_config.json, special_tokens_map.json, vocab.json, merges.txt,
// vocab.txt, model.safetensors.index.json and *.safetensors, at the repository's top level.
bool app_reads_file(const std::string& rfilename);

struct DownloadProgress {
    std::string file;                // the repository file being fetched, "model.safetensors"
    std::uint64_t file_done = 0;     // its bytes on disk (a resumed part counts)
    std::uint64_t file_total = 0;    // its size; 0 when the hub did not say
    std::uint64_t done = 0;          // every file of the download together, cached ones included
    std::uint64_t total = 0;
};

struct DownloadOptions {
    std::string endpoint = hub_endpoint();
    std::string token = hub_token();
    std::string cache = hub_cache_folder();
    // Which repository files to fetch; empty: app_reads_file (and the repository must hold
    // safetensors weights).
    std::function<bool(const std::string& rfilename)> wanted;
    std::function<void(const DownloadProgress&)> progress;  // on the downloading thread
    const std::atomic<bool>* cancel = nullptr;              // set → stops within a moment
    // A transfer slower than 1 byte/s for this long is given up (the file resumes next time);
    // connecting gives up after the same time.
    long stall_seconds = 30;
};

struct DownloadResult {
    bool ok = false;
    bool cancelled = false;
    std::string error;                  // in words a user can act on, naming the URL or file
    std::string folder;                 // snapshots/<commit>: what locate_model opens
    std::string commit;
    std::vector<std::string> files;     // the repository files in the snapshot
    std::vector<std::string> skipped;   // the repository's other files, not fetched
    std::uint64_t bytes_fetched = 0;    // over the network in this run
};

DownloadResult download_model(const RepoId& repo, const DownloadOptions& options = {});

// The SHA-256 of the bytes as 64 lower-case hex digits: what an LFS file's etag is.
std::string sha256_hex(const void* data, std::size_t size);

}  // namespace attn::hf
