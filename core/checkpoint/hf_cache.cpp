#include "checkpoint/hf_cache.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "io/json_read.hpp"
#include "io/messages.hpp"

namespace attn::hf {

namespace fs = std::filesystem;

std::string environment(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::string(value) : std::string();
}

namespace {

// "~/x" → "$HOME/x", as os.path.expanduser does.
std::string expand_home(const std::string& path) {
    if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) return path;
    const std::string home = environment("HOME");
    return home.empty() ? path : home + path.substr(1);
}

// A part of a repository id: letters, digits, "-", "_", "."; starting and ending with a
// letter or digit; no "--" or ".." (the hub's own rule: "--" separates the parts in the
// cache's folder names).
bool valid_part(const std::string& part) {
    if (part.empty() || part.size() > 96) return false;
    for (char c : part)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
    if (!std::isalnum(static_cast<unsigned char>(part.front())) || !std::isalnum(static_cast<unsigned char>(part.back()))) return false;
    return part.find("--") == std::string::npos && part.find("..") == std::string::npos;
}

bool valid_revision(const std::string& revision) {
    if (revision.empty() || revision.size() > 255 || revision.find("..") != std::string::npos || revision.front() == '/') return false;
    for (char c : revision)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/')) return false;
    return true;
}

bool is_commit(const std::string& revision) {
    return revision.size() == 40 && std::all_of(revision.begin(), revision.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string folder_name(const std::string& id) {
    std::string name = "models--";
    for (char c : id) name += c == '/' ? std::string("--") : std::string(1, c);
    return name;
}

// The first line of a small text file (refs/main): empty, with `why` empty, when there is no
// such file; empty with `why` when there is one this cannot read (a FIFO, a symlink loop, a file
// over 4 KB): "the revision was never downloaded" would then send the user the wrong way.
std::string read_ref(const fs::path& path, std::string& why) {
    why.clear();
    std::error_code ec;
    const fs::file_status link = fs::symlink_status(path, ec);
    if (ec || link.type() == fs::file_type::not_found) return {};  // not even a dangling link
    if (link.type() == fs::file_type::symlink && !fs::exists(path, ec) && !ec) return {};  // a link to nothing
    std::vector<std::string> errors;
    const std::optional<std::string> text = read_text_file(path.string(), 4096, "reference", errors);
    if (!text) {
        why = errors.empty() ? path.string() + ": cannot be read" : errors.front();
        return {};
    }
    std::string line = text->substr(0, text->find_first_of("\r\n"));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
    return line;
}

}  // namespace

std::string hub_cache_folder() {
    for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
        if (const std::string value = environment(name); !value.empty()) return expand_home(value);
    std::string home = environment("HF_HOME");
    if (home.empty()) {
        const std::string xdg = environment("XDG_CACHE_HOME");
        home = (xdg.empty() ? std::string("~/.cache") : xdg) + "/huggingface";
    }
    return expand_home(home) + "/hub";
}

std::optional<RepoId> parse_repo_id(const std::string& text) {
    RepoId repo;
    std::string id = text;
    if (const size_t at = text.find('@'); at != std::string::npos) {
        id = text.substr(0, at);
        repo.revision = text.substr(at + 1);
        if (!valid_revision(repo.revision)) return std::nullopt;
    }
    const size_t slash = id.find('/');
    if (slash == std::string::npos) {
        if (!valid_part(id)) return std::nullopt;
    } else if (id.find('/', slash + 1) != std::string::npos || !valid_part(id.substr(0, slash)) || !valid_part(id.substr(slash + 1))) {
        return std::nullopt;
    }
    repo.id = id;
    return repo;
}

CacheLookup find_in_cache(const RepoId& repo, const std::string& cache) {
    CacheLookup lookup;
    const std::string where = repo.id + " is not in the Hugging Face cache (" + cache + ")";
    std::error_code ec;
    const fs::path folder = fs::path(cache) / folder_name(repo.id);
    if (!fs::is_directory(folder, ec)) {
        lookup.why_not = where + ": no folder " + folder_name(repo.id);
        return lookup;
    }
    std::string unreadable;
    std::string commit = read_ref(folder / "refs" / repo.revision, unreadable);
    if (!unreadable.empty()) {
        lookup.why_not = where + ": its reference cannot be read: " + unreadable;
        return lookup;
    }
    if (commit.empty() && is_commit(repo.revision)) commit = repo.revision;  // a commit named itself
    if (commit.empty()) {
        lookup.why_not = where + ": no refs/" + repo.revision + " in " + folder.string() + " (the revision was never downloaded)";
        return lookup;
    }
    if (!is_commit(commit)) {
        lookup.why_not = where + ": refs/" + repo.revision + " holds \"" + printable(commit, 64) + "\", not a commit";
        return lookup;
    }
    const fs::path snapshot = folder / "snapshots" / commit;
    if (!fs::is_directory(snapshot, ec)) {
        lookup.why_not = where + ": refs/" + repo.revision + " names commit " + commit + ", whose snapshot folder is missing";
        return lookup;
    }
    lookup.folder = snapshot.string();
    return lookup;
}

ModelLocation locate_model(const std::string& text, const std::string& cache) {
    ModelLocation where;
    where.folder = text;
    std::error_code ec;
    if (fs::exists(fs::symlink_status(text, ec)) || text.empty()) return where;  // a path: opened (and judged) as it is
    const std::optional<RepoId> repo = parse_repo_id(text);
    if (!repo) {
        where.why_not = "no such folder or file";
        return where;
    }
    const CacheLookup lookup = find_in_cache(*repo, cache);
    if (lookup.folder.empty()) {
        where.why_not = "no such folder or file, and " + lookup.why_not;
        return where;
    }
    where.folder = lookup.folder;
    where.from_cache = repo->id + (repo->revision == "main" ? std::string() : "@" + repo->revision);
    return where;
}

std::string folder_model_type(const std::string& folder) {
    std::vector<std::string> errors;  // a config that cannot be read says why when the model is opened
    if (const auto text = read_text_file(folder + "/config.json", json_limits::kConfigBytes, "config", errors))
        if (const auto config = parse_json(text->data(), text->data() + text->size(), "config.json", errors, json_limits::kConfig))
            if (config->is_object() && config->contains("model_type") && (*config)["model_type"].is_string())
                return (*config)["model_type"].get<std::string>();
    return {};
}

std::vector<CachedModel> cached_models(const std::string& cache) {
    std::vector<CachedModel> models;
    std::error_code ec;
    for (fs::directory_iterator it(cache, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind("models--", 0) != 0) continue;
        std::string id = name.substr(8);
        if (const size_t separator = id.find("--"); separator != std::string::npos) id.replace(separator, 2, "/");
        const std::optional<RepoId> repo = parse_repo_id(id);
        if (!repo) continue;
        const CacheLookup lookup = find_in_cache(*repo, cache);
        if (lookup.folder.empty()) continue;
        CachedModel model{repo->id, lookup.folder, folder_model_type(lookup.folder), 0};
        std::error_code size_ec;
        for (fs::recursive_directory_iterator file(lookup.folder, size_ec), files_end; !size_ec && file != files_end; file.increment(size_ec))
            if (std::error_code e; fs::is_regular_file(file->path(), e))
                if (const std::uintmax_t size = fs::file_size(file->path(), e); !e) model.bytes += size;
        models.push_back(std::move(model));
    }
    std::sort(models.begin(), models.end(), [](const CachedModel& a, const CachedModel& b) { return a.id < b.id; });
    return models;
}

}  // namespace attn::hf
