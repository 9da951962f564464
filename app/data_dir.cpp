#include "data_dir.hpp"

#include <filesystem>
#include <system_error>

namespace attn {

std::string data_dir_for(const std::string& binary_path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    // The binary's real path: a symlink to it (/usr/local/bin/attnlab → /opt/…/bin/attnlab)
    // must still find the files beside the real one.
    fs::path binary = fs::weakly_canonical(binary_path, ec);
    if (ec) binary = fs::path(binary_path);
    const fs::path folder = binary.parent_path();
    const fs::path candidates[] = {folder.parent_path() / "share" / "attnlab",
                                   folder.parent_path().parent_path() / "share" / "attnlab"};
    for (const fs::path& candidate : candidates)
        if (fs::is_directory(candidate, ec)) return candidate.lexically_normal().string();
    return candidates[0].lexically_normal().string();
}

const std::string& data_dir() {
    // /proc/self/exe names the running binary wherever it was started from (PATH, a relative
    // path, a symlink); argv[0] does not.
    static const std::string folder = [] {
        std::error_code ec;
        const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", ec);
        return data_dir_for(ec ? std::string("attnlab") : binary.string());
    }();
    return folder;
}

}  // namespace attn
