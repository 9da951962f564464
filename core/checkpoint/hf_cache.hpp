#pragma once
// The local Hugging Face hub cache, as huggingface_hub lays it out, so that a model Python
// tools downloaded opens here by its name ("openai-community/gpt2"), and the app's own
// downloads can go where they find them:
//
//   <cache>/models--<org>--<name>/refs/<revision>           the commit the revision points to
//   <cache>/models--<org>--<name>/snapshots/<commit>/FILE   each file (a link into blobs/)
//
// <cache> is HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub's
// constants.py). Nothing here goes to the network.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn::hf {

std::string hub_cache_folder();
// An environment variable's value, "" when it is not set.
std::string environment(const char* name);

// "org/name" or "name" as the hub writes repository ids (letters, digits, "-", "_", "."; no
// "--" or ".." inside, at most 96 characters a part), with an optional "@revision": what
// --model and File → Open model read as a model's name when no file or folder has that path.
struct RepoId {
    std::string id;                   // "openai-community/gpt2"
    std::string revision = "main";
};
std::optional<RepoId> parse_repo_id(const std::string& text);

// The snapshot folder of `repo` in the cache, or the reason it is not there, in words a user
// can act on ("openai-community/gpt2 is not in the Hugging Face cache (/root/.cache/…): no
// folder models--openai-community--gpt2").
struct CacheLookup {
    std::string folder;  // empty when not found
    std::string why_not;
};
CacheLookup find_in_cache(const RepoId& repo, const std::string& cache = hub_cache_folder());

// What --model or File → Open model names: an existing path as it is; else a repository id
// found in the cache, its snapshot folder; else the path as given, with why it named nothing
// (the caller's message says the rest).
struct ModelLocation {
    std::string folder;       // the path to open
    std::string from_cache;   // the repository id, when the folder came from the cache
    std::string why_not;      // set when `text` is neither an existing path nor a cached model
};
ModelLocation locate_model(const std::string& text, const std::string& cache = hub_cache_folder());

// The model_type a folder's config.json names ("" when there is none that can be read: the
// opening says why). Read as every file is read: a regular file, bounded, never waiting.
std::string folder_model_type(const std::string& folder);

// Every model in the cache with a snapshot for "main": its id, folder, config.json's
// model_type ("" when unreadable) and the size of its snapshot's files.
struct CachedModel {
    std::string id;
    std::string folder;
    std::string model_type;
    std::uintmax_t bytes = 0;
};
std::vector<CachedModel> cached_models(const std::string& cache = hub_cache_folder());

}  // namespace attn::hf
